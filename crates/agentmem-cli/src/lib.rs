//! The `agentmem` command-line tool: inspect and repair agent memory on any store,
//! export and import it (agentmem's own lossless formats, Swarms agent folders, PraisonAI
//! session files), and migrate it between backends.
//!
//! The binary is a thin wrapper over [`main_with_args`]. What it does to stores is library code
//! a program can call itself: migration, session sync, export and import are the
//! `agentmem-transfer` crate, the file formats (parsers and writers) the `agentmem-formats`
//! crate.
//!
//! Errors are printed as one line, `agentmem: <kind>: <what and where>`, and mapped to exit
//! codes by [`exit_code`].
#![forbid(unsafe_code)]
#![warn(missing_docs, clippy::unwrap_used)]

pub mod cli;
mod commands;
mod fsio;
mod output;

use std::ffi::OsString;
use std::process::ExitCode;

use agentmem_core::{Error, ErrorKind};
use clap::Parser;

use crate::cli::Cli;
use crate::output::Output;

/// The exit code for an error of `kind`: 2 invalid input (as for usage errors), 3 not found,
/// 4 corrupt data, 5 unavailable, 6 conflict, 7 unsupported, 1 anything else.
pub fn exit_code(kind: ErrorKind) -> u8 {
    match kind {
        ErrorKind::InvalidInput => 2,
        ErrorKind::NotFound => 3,
        ErrorKind::CorruptData => 4,
        ErrorKind::Unavailable => 5,
        ErrorKind::Conflict => 6,
        ErrorKind::Unsupported => 7,
        _ => 1,
    }
}

pub use agentmem_core::one_line;

/// Runs the command line `args` (the program name first) and returns the exit code.
pub fn main_with_args<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => return clap_exit(e),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("agentmem: cannot start the async runtime: {}", one_line(&e));
            return ExitCode::from(1);
        }
    };
    let mut out = Output::stdout(cli.json);
    let result = runtime.block_on(commands::run(cli, &mut out));
    let flushed = out.finish();
    match result.and(flushed) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => report(&e),
    }
}

fn report(e: &Error) -> ExitCode {
    eprintln!("agentmem: {}", one_line(e));
    ExitCode::from(exit_code(e.kind()))
}

/// Help and version go to standard output as clap prints them; usage errors become one line
/// on standard error and exit code 2.
fn clap_exit(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind as K;
    match e.kind() {
        K::DisplayHelp | K::DisplayVersion => {
            let _ = e.print();
            ExitCode::SUCCESS
        }
        K::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            ExitCode::from(2)
        }
        _ => {
            let text = e.to_string();
            let mut lines = text.lines().skip_while(|l| l.trim().is_empty());
            let first = lines.next().unwrap_or("invalid command line");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            // "the following required arguments were not provided:" lists them on the
            // indented lines below: keep them on the one line.
            let listed: Vec<&str> = lines
                .take_while(|l| l.starts_with(' '))
                .map(str::trim)
                .collect();
            let first = if listed.is_empty() {
                first.to_string()
            } else {
                format!("{first} {}", listed.join(", "))
            };
            eprintln!("agentmem: {first} (see agentmem --help)");
            ExitCode::from(2)
        }
    }
}
