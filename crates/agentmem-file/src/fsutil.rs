//! Small file-system helpers: private modes, atomic rewrites, identity of files, error context.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

use agentmem_core::{Error, ErrorKind};

/// Mode of every file the backend creates: only the owner reads and writes.
pub(crate) const FILE_MODE: u32 = 0o600;
/// Mode of every folder the backend creates.
pub(crate) const DIR_MODE: u32 = 0o700;
/// Prefix of temporary files; session ids cannot start with `.`, so it never collides.
pub(crate) const TMP_PREFIX: &str = ".tmp-";

/// An `Error` for an I/O failure on `path`, keeping the kind mapping of `agentmem_core`
/// (missing → not found, full disk → unavailable, …) and the source.
pub(crate) fn io_error(path: &Path, what: &str, e: io::Error) -> Error {
    Error::io(format!("{what} {}", path.display()), e)
}

/// Identity of a file: it changes when the file is replaced by a rename.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileId {
    dev: u64,
    ino: u64,
}

impl FileId {
    pub(crate) fn of(meta: &std::fs::Metadata) -> Self {
        FileId {
            dev: meta.dev(),
            ino: meta.ino(),
        }
    }
}

/// `stat`, with a missing file as `None`.
pub(crate) fn stat(path: &Path) -> Result<Option<std::fs::Metadata>, Error> {
    match std::fs::metadata(path) {
        Ok(m) => Ok(Some(m)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error(path, "cannot read the metadata of", e)),
    }
}

/// The entries of folder `dir`, with a missing folder as `None`.
pub(crate) fn list_dir(dir: &Path) -> Result<Option<std::fs::ReadDir>, Error> {
    match std::fs::read_dir(dir) {
        Ok(entries) => Ok(Some(entries)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error(dir, "cannot list", e)),
    }
}

/// Creates `path` and missing parents with mode 0700 (existing folders are left as they are).
/// Whether the file system of `dir` ignores case in names (as macOS's and Windows's do by
/// default, and ext4 or tmpfs folders with casefolding): a probe file created in lower case is
/// also found in upper case. The probe is removed again.
pub(crate) fn ignores_case(dir: &Path) -> Result<bool, Error> {
    let name = format!("{TMP_PREFIX}case-probe-{}", agentmem_core::new_id());
    let probe = dir.join(&name);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .map_err(|e| io_error(&probe, "cannot create", e))?;
    let found = std::fs::symlink_metadata(dir.join(name.to_uppercase())).is_ok();
    let _ = std::fs::remove_file(&probe);
    Ok(found)
}

pub(crate) fn create_dirs(path: &Path) -> Result<(), Error> {
    DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(path)
        .map_err(|e| io_error(path, "cannot create the folder", e))
}

/// Opens an existing `path` as [`open_append`] does, with the identity of the file opened.
pub(crate) fn open_append_with_id(path: &Path) -> Result<(File, FileId), Error> {
    let (file, meta) = open_append_with_meta(path)?;
    Ok((file, FileId::of(&meta)))
}

/// Opens an existing `path` as [`open_append`] does, with the metadata of the file opened.
pub(crate) fn open_append_with_meta(path: &Path) -> Result<(File, std::fs::Metadata), Error> {
    let file = open_append(path)?;
    let meta = file
        .metadata()
        .map_err(|e| io_error(path, "cannot stat", e))?;
    Ok((file, meta))
}

/// Bytes `start..end` of `file` (at `path`).
pub(crate) fn read_range(file: &File, path: &Path, start: u64, end: u64) -> Result<Vec<u8>, Error> {
    let len = usize::try_from(end.saturating_sub(start))
        .map_err(|_| Error::backend(format!("{} is too large to read", path.display())))?;
    let mut buf = vec![0u8; len];
    file.read_exact_at(&mut buf, start)
        .map_err(|e| io_error(path, "cannot read", e))?;
    Ok(buf)
}

/// Opens an existing `path` for appending (and reading). Never creates it: files come into
/// being whole, by [`write_atomic`], so a log that vanished is not silently recreated empty.
pub(crate) fn open_append(path: &Path) -> Result<File, Error> {
    OpenOptions::new()
        .read(true)
        .append(true)
        .open(path)
        .map_err(|e| io_error(path, "cannot open", e))
}

/// Removes the file `path`; a missing file is not an error.
pub(crate) fn remove_if_exists(path: &Path) -> Result<(), Error> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_error(path, "cannot remove", e)),
    }
}

/// Opens (creating with mode 0600) a lock file.
pub(crate) fn open_lock_file(path: &Path) -> Result<File, Error> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(FILE_MODE)
        .open(path)
        .map_err(|e| io_error(path, "cannot open the lock file", e))
}

/// fsyncs a folder, so that a rename or a new entry in it survives a crash of the machine.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), Error> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_error(dir, "cannot fsync the folder", e))?;
    #[cfg(test)]
    tests::SYNCED_DIRS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(dir.to_path_buf());
    Ok(())
}

/// Replaces `target` (in folder `dir`) with `bytes` atomically: a temporary file in the same
/// folder, fsync, rename, fsync of the folder. A crash leaves the old file or the new one,
/// never a mix; a leftover temporary file is removed by the next repair.
pub(crate) fn write_atomic(dir: &Path, target: &Path, bytes: &[u8]) -> Result<(), Error> {
    let tmp = dir.join(format!("{TMP_PREFIX}{}", agentmem_core::new_id()));
    let result = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(FILE_MODE)
            .open(&tmp)
            .map_err(|e| io_error(&tmp, "cannot create", e))?;
        f.write_all(bytes)
            .map_err(|e| io_error(&tmp, "cannot write", e))?;
        f.sync_all()
            .map_err(|e| io_error(&tmp, "cannot fsync", e))?;
        drop(f);
        std::fs::rename(&tmp, target)
            .map_err(|e| io_error(target, "cannot rename a new version into", e))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result?;
    sync_dir(dir)
}

/// An error for data that cannot be read back, naming the file and line.
pub(crate) fn corrupt_line(path: &Path, line: u64, why: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::CorruptData,
        format!("{} line {line}: {why}", path.display()),
    )
}

/// Holds an exclusive `flock` on a lock file until dropped.
pub(crate) struct FileLockGuard<'a> {
    file: &'a File,
}

impl<'a> FileLockGuard<'a> {
    /// Blocks until the exclusive lock on `file` is held. Call from a blocking thread.
    pub(crate) fn exclusive(file: &'a File, path: &Path) -> Result<Self, Error> {
        file.lock().map_err(|e| io_error(path, "cannot lock", e))?;
        Ok(FileLockGuard { file })
    }
}

impl Drop for FileLockGuard<'_> {
    fn drop(&mut self) {
        // If unlocking fails the lock is released anyway when the file is closed; the slot
        // keeps the handle, so report it rather than ignore it silently.
        if let Err(e) = self.file.unlock() {
            tracing::warn!(error = %e, "cannot release a file lock");
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::path::PathBuf;
    use std::sync::Mutex;

    use agentmem_core::{AgentMemoryExt, Message, SessionId};

    use super::ignores_case;
    use crate::FileStore;

    /// Every folder `sync_dir` synced in this test process: no test can see a crash, so
    /// durability tests check that the sync that makes an entry survive one was made.
    pub(crate) static SYNCED_DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

    fn synced(dir: &std::path::Path) -> usize {
        let log = SYNCED_DIRS.lock().unwrap_or_else(|e| e.into_inner());
        log.iter().filter(|d| d.as_path() == dir).count()
    }

    /// A new session's folder entry in `agents/` is synced before the session is
    /// acknowledged (its files' own fsyncs do not cover the entry naming their folder).
    #[tokio::test]
    async fn a_new_session_folder_is_synced_into_agents() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = FileStore::connect(&format!("file://{}", dir.path().display()))
            .await
            .expect("open");
        let agents = dir.path().join("agents");
        let before = synced(&agents);
        let id = SessionId::new("new_one").expect("id");
        for (text, why) in [
            ("hello", "agents/ synced once for the new folder"),
            ("again", "not again for an existing session"),
        ] {
            store
                .append_one(&id, Message::user(text))
                .await
                .expect("append");
            assert_eq!(synced(&agents), before + 1, "{why}");
        }
    }

    /// This machine's file systems keep case apart (the probe leaves nothing behind); the
    /// other answer is `a_folder_spelled_with_other_case_is_a_twin`'s case.
    #[test]
    fn the_case_probe_answers_and_cleans_up() {
        let dir = tempfile::tempdir().expect("temp dir");
        assert!(!ignores_case(dir.path()).expect("probe"));
        assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 0);
    }
}
