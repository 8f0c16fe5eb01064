//! File writes with errors that name the path and keep the I/O error as source. Folders come
//! from [`agentmem_formats::create_private_dir`], error kinds from [`Error::io`].

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use agentmem_core::{Error, Result};
use agentmem_formats::{create_private_dir, sync_parent_folder};
use tempfile::NamedTempFile;

/// An I/O error on `path` as an agentmem error of the matching kind: "cannot `verb` `path`".
pub fn io_error(path: &Path, verb: &str, e: std::io::Error) -> Error {
    Error::io(format!("cannot {verb} {}", path.display()), e)
}

/// A file written whole: bytes go to a buffered temporary file in the same folder (created,
/// readable by its owner only, when missing), which [`commit`](Self::commit) syncs and renames
/// to the path, so a reader (or a crash) never sees half a file. The file is readable by its
/// owner only.
pub struct AtomicFile {
    path: PathBuf,
    tmp: BufWriter<NamedTempFile>,
}

impl AtomicFile {
    /// Starts writing `path`.
    pub fn create(path: &Path) -> Result<Self> {
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        create_private_dir(dir)?;
        let tmp = NamedTempFile::new_in(dir)
            .map_err(|e| io_error(dir, "create a temporary file in", e))?;
        Ok(AtomicFile {
            path: path.to_path_buf(),
            tmp: BufWriter::new(tmp),
        })
    }

    /// Flushes and syncs what was written, then puts it in place.
    pub fn commit(self) -> Result<()> {
        let path = self.path;
        let tmp = self
            .tmp
            .into_inner()
            .map_err(|e| io_error(&path, "write", e.into_error()))?;
        tmp.as_file()
            .sync_all()
            .map_err(|e| io_error(&path, "write", e))?;
        tmp.persist(&path)
            .map_err(|e| io_error(&path, "write", e.error))?;
        sync_parent_folder(&path).map_err(|e| io_error(&path, "sync the folder of", e))
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.tmp.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.tmp.flush()
    }
}

/// Writes `bytes` to `path` whole ([`AtomicFile`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = AtomicFile::create(path)?;
    file.write_all(bytes)
        .map_err(|e| io_error(path, "write", e))?;
    file.commit()
}
