//! File reads and writes with errors that name the path and keep the I/O error as source.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use agentmem_core::{Error, Operation, Result};

/// An I/O error on `path` as an agentmem error: "cannot `verb` `path`", of the kind core gives
/// that I/O error.
pub(crate) fn io_error(path: &Path, verb: &str, e: std::io::Error) -> Error {
    let kind = Error::from(std::io::Error::from(e.kind())).kind();
    Error::new(kind, format!("cannot {verb} {}", path.display())).with_source(e)
}

/// The whole file as UTF-8 text.
pub(crate) fn read_to_string(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| io_error(path, "read", e))?;
    String::from_utf8(bytes)
        .map_err(|e| Error::corrupt(format!("{} is not UTF-8 text", path.display())).with_source(e))
}

/// Everything `reader` yields, as UTF-8 text; `source` names it in errors.
pub(crate) fn read_text<R: Read>(mut reader: R, source: &str) -> Result<String> {
    let mut bytes = Vec::new();
    reader
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(Path::new(source), "read", e))?;
    String::from_utf8(bytes)
        .map_err(|e| Error::corrupt(format!("{source} is not UTF-8 text")).with_source(e))
}

/// Creates `dir` and its parents, readable by their owner only (exports hold agent memory,
/// which agentmem keeps private).
pub(crate) fn create_dir_all(dir: &Path) -> Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .map_err(|e| io_error(dir, "create the folder", e))
}

/// Writes `bytes` to `path` through a temporary file in the same folder and a rename, so a
/// reader (or a crash) never sees half a file. The file is readable by its owner only.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    create_dir_all(&dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(&dir)
        .map_err(|e| io_error(&dir, "create a temporary file in", e))?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| io_error(tmp.path(), "write", e))?;
    tmp.persist(path)
        .map_err(|e| io_error(path, "write", e.error))?;
    Ok(())
}

/// Writes `bytes` to `writer` and flushes it.
pub(crate) fn write_all<W: Write>(mut writer: W, bytes: &[u8]) -> Result<()> {
    writer
        .write_all(bytes)
        .and_then(|()| writer.flush())
        .map_err(export_error)
}

/// An I/O error of a caller's writer, labelled as an export.
pub(crate) fn export_error(e: std::io::Error) -> Error {
    Error::from(e).with_operation(Operation::Export)
}
