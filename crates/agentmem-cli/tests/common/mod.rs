//! Helpers shared by the tests that drive the built `agentmem` binary.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;

/// The built binary, with none of the environment that could point it at a real store.
pub fn agentmem() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentmem"));
    cmd.env_remove("AGENTMEM_STORE")
        .env_remove("AGENTMEM_HOME")
        .env_remove("AGENTMEM_GLOBAL_SESSIONS")
        .env_remove("RUST_LOG");
    cmd
}

/// The binary working on the file store in `dir` (buffered: these tests do not test fsync).
pub fn on(dir: &Path) -> Command {
    let mut cmd = agentmem();
    cmd.arg("--store").arg(file_url(dir));
    cmd
}

/// The URL of a file store in `dir`.
pub fn file_url(dir: &Path) -> String {
    format!("file://{}?durability=buffered", dir.display())
}

/// A file under `tests/fixtures`.
pub fn fixture(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(relative)
}

/// Runs `cmd`, expects success, returns standard output.
pub fn ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "command failed ({:?}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs `cmd`, expects exit code `code` and exactly one line on standard error, which is
/// returned.
pub fn fails(cmd: &mut Command, code: i32) -> String {
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(code), "stderr: {stderr}");
    assert_eq!(
        stderr.lines().count(),
        1,
        "one line expected, got: {stderr:?}"
    );
    assert!(stderr.starts_with("agentmem: "), "{stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains("Error {"),
        "{stderr}"
    );
    stderr
}

/// Runs `cmd` with `--json` and parses standard output.
pub fn json(cmd: &mut Command) -> serde_json::Value {
    serde_json::from_str(&ok(cmd.arg("--json"))).unwrap()
}
