//! Creating a missing database file (and its folders) private to its owner.
//!
//! Left to itself SQLite creates a database with mode 0644 (less the umask) and gives its
//! `-wal` and `-shm` files the database's mode, so every local user could read the stored
//! conversations. Creating the missing file ourselves, empty and 0600, before SQLite opens it
//! makes all three private; SQLite treats an empty file as an empty database. An existing
//! file, and existing folders, keep the modes their owner chose.

use std::io;
use std::path::Path;

use agentmem_core::{Error, ErrorKind, Result};

/// Creates the missing folders of `path` (0700) and, when `path` does not exist, an empty
/// database file at `path` (0600). `db` names the database in messages.
///
/// Another process creating the same file at the same moment is fine: `create_new` lets
/// exactly one of us create it, and the other finds it there.
pub(crate) fn create_private(path: &Path, db: &str) -> Result<()> {
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(folder) = folder {
        create_folders(folder).map_err(|e| {
            io_error(
                e,
                format!(
                    "cannot create the folder `{}` of database `{db}`",
                    folder.display()
                ),
                None,
            )
        })?;
    }
    match create_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        // A read-only folder refuses to create even a file that exists (on some systems before
        // it checks existence): an existing database is then for SQLite to open read-only.
        Err(_) if path.exists() => Ok(()),
        Err(e) => Err(io_error(
            e,
            format!("cannot create database `{db}`"),
            Some(folder.unwrap_or(Path::new("."))),
        )),
    }
}

#[cfg(unix)]
fn create_folders(folder: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    // `recursive` succeeds on folders that exist and sets 0700 only on those it creates.
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(folder)
}

#[cfg(not(unix))]
fn create_folders(folder: &Path) -> io::Result<()> {
    std::fs::create_dir_all(folder)
}

#[cfg(unix)]
fn create_file(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map(drop)
}

#[cfg(not(unix))]
fn create_file(path: &Path) -> io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map(drop)
}

/// The agentmem error for `e`; a permission problem is `Unavailable` and says where: in
/// `folder` when given, else in the path the message already names.
fn io_error(e: io::Error, message: String, folder: Option<&Path>) -> Error {
    match unwritable(e.kind(), folder) {
        Some(why) => Error::new(ErrorKind::Unavailable, format!("{message}: {why}")).with_source(e),
        None => Error::io(message, e),
    }
}

/// Why writing failed, in words, when it is a permission problem.
fn unwritable(kind: io::ErrorKind, folder: Option<&Path>) -> Option<String> {
    let place = match folder {
        Some(folder) => format!("the folder `{}`", folder.display()),
        None => "it".to_string(),
    };
    match kind {
        io::ErrorKind::ReadOnlyFilesystem => Some(format!("{place} is on a read-only file system")),
        io::ErrorKind::PermissionDenied => Some(format!("{place} is not writable by this user")),
        _ => None,
    }
}

/// The error for SQLite failing to open (or ready) database `path`: when the cause is that the
/// file cannot be written, says so, as SQLite's own "unable to open database file" does not;
/// anything else (or a writable file: then it is not clear what failed) maps as usual.
pub(crate) fn open_failure(e: rusqlite::Error, path: &Path, db: &str) -> Error {
    match explain(&e, path) {
        Some(why) => Error::new(
            ErrorKind::Unavailable,
            format!("cannot open database `{db}` for writing: {why}"),
        )
        .with_source(e),
        None => crate::error::map_sqlite(e, db),
    }
}

fn explain(e: &rusqlite::Error, path: &Path) -> Option<String> {
    use rusqlite::ErrorCode;
    let code = e.sqlite_error_code()?;
    if !matches!(
        code,
        ErrorCode::CannotOpen | ErrorCode::ReadOnly | ErrorCode::PermissionDenied
    ) {
        return None;
    }
    // Opening for writing without creating or truncating changes nothing, and meets the same
    // refusal (read-only mount, missing permission) that SQLite met.
    let probe = std::fs::OpenOptions::new().write(true).open(path).err()?;
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty());
    match probe.kind() {
        io::ErrorKind::ReadOnlyFilesystem => {
            unwritable(probe.kind(), Some(folder.unwrap_or(Path::new("."))))
        }
        kind => unwritable(kind, None),
    }
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn creates_a_private_file_and_folders_and_leaves_existing_ones_alone() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let db = dir.path().join("a/b/memory.db");
        create_private(&db, "memory.db").unwrap();
        assert_eq!(mode(&db), 0o600);
        assert_eq!(mode(&dir.path().join("a")), 0o700);
        assert_eq!(mode(&dir.path().join("a/b")), 0o700);
        assert_eq!(std::fs::metadata(&db).unwrap().len(), 0);

        // A second call (or another process) finds the file: nothing changes.
        std::fs::write(&db, b"kept").unwrap();
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o640)).unwrap();
        create_private(&db, "memory.db").unwrap();
        assert_eq!(mode(&db), 0o640, "an existing file keeps its owner's mode");
        assert_eq!(std::fs::read(&db).unwrap(), b"kept");
        assert_eq!(mode(dir.path()), 0o755, "an existing folder keeps its mode");
    }

    #[test]
    fn permission_errors_are_unavailable_and_name_the_folder() {
        let e = io_error(
            io::Error::from(io::ErrorKind::ReadOnlyFilesystem),
            "cannot create database `/ro/x.db`".into(),
            Some(Path::new("/ro")),
        );
        assert_eq!(e.kind(), ErrorKind::Unavailable);
        let text = e.to_string();
        assert!(
            text.contains("`/ro`") && text.contains("read-only"),
            "{text}"
        );
        assert!(std::error::Error::source(&e).is_some());
    }
}
