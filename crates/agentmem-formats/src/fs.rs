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

/// What `pick` keeps of the entries of the folder `dir`, sorted; `NotFound` with the message
/// `none` when it keeps nothing. Other errors name the folder.
pub(crate) fn find_in_dir<T: Ord>(
    dir: &Path, mut pick: impl FnMut(&std::fs::DirEntry) -> Option<T>,
    none: impl FnOnce() -> String,
) -> Result<Vec<T>> {
    let entries = std::fs::read_dir(dir).map_err(|e| io_error(dir, "list", e))?;
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| io_error(dir, "list", e))?;
        found.extend(pick(&entry));
    }
    if found.is_empty() {
        return Err(Error::not_found(none()));
    }
    found.sort();
    Ok(found)
}

/// Creates `dir` and its parents, readable by their owner only (exports hold agent memory,
/// which agentmem keeps private). Errors name the folder and keep the I/O error as source.
///
/// ```
/// let tmp = tempfile::tempdir()?;
/// let dir = tmp.path().join("exports").join("2026");
/// agentmem_formats::create_private_dir(&dir)?;
/// assert!(dir.is_dir());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn create_dir_all(dir: &Path) -> Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .map_err(|e| io_error(dir, "create the folder", e))
}

/// Syncs the folder holding `path`, so a file created or renamed into it survives a crash (a
/// no-op off Unix, where folders cannot be opened for syncing).
pub fn sync_parent_folder(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        let folder = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        std::fs::File::open(folder)?.sync_all()?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
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

/// The file and stream functions of a text format whose files hold one `$doc` (named `$what`
/// in their documentation), those listed of `read`, `import`, `write` and `export`, with their
/// documentation, written around the `to_string`, `parse` and `Result` in scope where it is
/// used.
macro_rules! text_io {
    ($doc:ty, $what:literal: $($function:ident),+) => {
        $($crate::fs::text_io!(@$function $doc, $what);)+
    };
    (@read $doc:ty, $what:literal) => {
        /// [`parse`]s everything `reader` yields (UTF-8 text).
        pub fn read<R: std::io::Read>(reader: R, source: &str) -> Result<$doc> {
            parse(&$crate::fs::read_text(reader, source)?, source)
        }
    };
    (@import $doc:ty, $what:literal) => {
        /// [`parse`]s the file at `path`.
        pub fn import(path: impl AsRef<std::path::Path>) -> Result<$doc> {
            let path = path.as_ref();
            parse(
                &$crate::fs::read_to_string(path)?,
                &path.display().to_string(),
            )
        }
    };
    (@write $doc:ty, $what:literal) => {
        #[doc = concat!("Writes the ", $what, " ([`to_string`]) to `writer`.")]
        pub fn write<W: std::io::Write>(writer: W, doc: &$doc) -> Result<()> {
            $crate::fs::write_all(writer, to_string(doc)?.as_bytes())
        }
    };
    (@export $doc:ty, $what:literal) => {
        #[doc = concat!(
            "Writes the ", $what, " ([`to_string`]) to the file `path`, whole (through a \
             temporary file and a rename) and readable by its owner only."
        )]
        pub fn export(doc: &$doc, path: impl AsRef<std::path::Path>) -> Result<()> {
            $crate::fs::write_atomic(path.as_ref(), to_string(doc)?.as_bytes())
        }
    };
}
pub(crate) use text_io;
