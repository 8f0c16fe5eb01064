//! File reads and writes with errors that name the path and keep the I/O error as source.

use std::io::Write;
use std::path::Path;

use agentmem_core::{Error, ErrorKind, Result};

/// An I/O error on `path` as an agentmem error of the matching kind: "`verb` `path`".
pub fn io_error(path: &Path, verb: &str, e: std::io::Error) -> Error {
    use std::io::ErrorKind as Io;
    let kind = match e.kind() {
        Io::NotFound => ErrorKind::NotFound,
        Io::PermissionDenied | Io::StorageFull | Io::ReadOnlyFilesystem => ErrorKind::Unavailable,
        Io::InvalidData | Io::UnexpectedEof => ErrorKind::CorruptData,
        Io::InvalidInput => ErrorKind::InvalidInput,
        _ => ErrorKind::Backend,
    };
    Error::new(kind, format!("cannot {verb} {}", path.display())).with_source(e)
}

/// Creates `dir` and its parents, readable by their owner only (exports hold agent memory,
/// which agentmem keeps private, D).
pub fn create_dir_all(dir: &Path) -> Result<()> {
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
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
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
