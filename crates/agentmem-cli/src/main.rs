//! The `agentmem` command: see `agentmem --help` and the crate README.
#![forbid(unsafe_code)]
#![warn(missing_docs, clippy::unwrap_used)]

fn main() -> std::process::ExitCode {
    agentmem_cli::main_with_args(std::env::args_os())
}
