//! Helpers shared by the tests that drive the built `agentmem` binary.
#![allow(
    dead_code,
    reason = "helpers shared by several test binaries, each using some"
)]

use std::borrow::BorrowMut;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

/// The built binary, with none of the environment that could point it at a real store.
pub fn agentmem() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentmem"));
    cmd.env_remove("AGENTMEM_STORE")
        .env_remove("AGENTMEM_HOME")
        .env_remove("AGENTMEM_GLOBAL_SESSIONS")
        .env_remove("AGENTMEM_ENCRYPTION_KEY")
        .env_remove("RUST_LOG");
    cmd
}

/// The binary working on the file store in `dir` (buffered: these tests do not test fsync).
pub fn on(dir: &Path) -> Command {
    let mut cmd = agentmem();
    cmd.arg("--store").arg(file_url(dir));
    cmd
}

/// The binary importing `input`, written in `format`, into the file store in `dir` (more
/// arguments may be added).
pub fn import(dir: &Path, input: impl AsRef<OsStr>, format: &str) -> Command {
    let mut cmd = on(dir);
    cmd.arg("import").arg(input).args(["--format", format]);
    cmd
}

/// Exports `what` (a session id, or `--all`) from the file store in `dir` in `format` to
/// `file` (a file or folder), then imports that into the file store of a fresh folder, which it
/// returns.
pub fn export_into_fresh(dir: &Path, what: &str, format: &str, file: &Path) -> tempfile::TempDir {
    ok(on(dir)
        .args(["export", what, "--format", format, "-o"])
        .arg(file));
    let fresh = tempfile::tempdir().unwrap();
    ok(import(fresh.path(), file, format));
    fresh
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
pub fn ok(mut cmd: impl BorrowMut<Command>) -> String {
    let out = cmd.borrow_mut().output().unwrap();
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
pub fn fails(mut cmd: impl BorrowMut<Command>, code: i32) -> String {
    let cmd = cmd.borrow_mut();
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(code), "{cmd:?}: stderr: {stderr}");
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
pub fn json(mut cmd: impl BorrowMut<Command>) -> Value {
    serde_json::from_str(&ok(cmd.borrow_mut().arg("--json"))).unwrap()
}

/// The elements of the JSON array `value` (the rows a `--json` listing prints).
pub fn rows(value: &Value) -> &[Value] {
    value.as_array().expect("a JSON array")
}

/// The string field `field` of each row of the JSON array `value`, in order.
pub fn column<'a>(value: &'a Value, field: &str) -> Vec<&'a str> {
    rows(value)
        .iter()
        .map(|row| {
            row[field]
                .as_str()
                .unwrap_or_else(|| panic!("`{field}` is not a string in {row}"))
        })
        .collect()
}
