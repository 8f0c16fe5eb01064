//! Caches of the append-only logs that a rewrite replaces whole by a rename (the memory log,
//! a checkpoint thread's log, the graph's log, and, through [`LogCursor`] alone, the binary
//! vector log): how far a cache has read its log, bringing it
//! up to date with what others appended (only the new lines when the file is the same one),
//! setting damaged lines aside, appending, and replacing the log. Every function here runs on
//! a blocking thread with the log's file lock held.

use std::fs::File;
use std::path::Path;

use agentmem_core::{Error, ErrorKind, Result};

use crate::config::Durability;
use crate::fsutil::{list_dir, open_append_with_id, stat, write_atomic, FileId, TMP_PREFIX};
use crate::log::{append_line, read_tail, HeadedLog, HeadedRecord, Tail};
use crate::repair::{Aside, Findings};

/// How far a cache has read its log.
#[derive(Debug, Default)]
pub(crate) struct LogCursor {
    /// The log as opened, and its identity: a rewrite by any process replaces the file by a
    /// rename, and the open handle keeps the old inode from being reused, so a changed
    /// identity always tells a rewrite.
    file: Option<(File, FileId)>,
    /// Bytes of the log read (whole lines).
    pub(crate) len: u64,
    /// Lines of the log read (the header included).
    pub(crate) lines: u64,
}

impl LogCursor {
    /// Whether a log is open (else there was none when last looked at).
    pub(crate) fn is_open(&self) -> bool {
        self.file.is_some()
    }

    /// Whether the cursor holds the log `meta` describes as it is: the same file, of the
    /// length read. Nothing is half-read then, since a cursor only ever takes whole lines.
    pub(crate) fn holds(&self, meta: &std::fs::Metadata) -> bool {
        self.same_file(meta) && meta.len() == self.len
    }

    /// Whether `meta` is the log this cursor read, at least as long as what was read of it.
    pub(crate) fn same_file(&self, meta: &std::fs::Metadata) -> bool {
        let id = FileId::of(meta);
        self.file.as_ref().is_some_and(|(_, fid)| *fid == id) && meta.len() >= self.len
    }

    /// The log as opened, when one is.
    pub(crate) fn file(&self) -> Option<&File> {
        self.file.as_ref().map(|(file, _)| file)
    }

    /// Opens the log at `path` anew, nothing of it read.
    pub(crate) fn open(&mut self, path: &Path) -> Result<()> {
        *self = LogCursor {
            file: Some(open_append_with_id(path)?),
            len: 0,
            lines: 0,
        };
        Ok(())
    }

    /// Writes `line` at the end of the open log at `path` (see [`append_line`]) and moves
    /// past it.
    pub(crate) fn append(
        &mut self, path: &Path, line: &[u8], durability: Durability,
    ) -> Result<()> {
        let Some((file, _)) = self.file.as_mut() else {
            return Err(Error::backend(format!("{} is not open", path.display())));
        };
        append_line(file, path, self.len, line, durability)?;
        self.len += line.len() as u64;
        self.lines += 1;
        Ok(())
    }

    /// Replaces the log at `path`, whole, by `bytes` (`lines` lines) through a temporary file
    /// in `dir` and a rename (see [`write_atomic`]), and takes the new file as read. Other
    /// handles and processes see another file at their next `stat` and read it afresh.
    pub(crate) fn replace(
        &mut self, dir: &Path, path: &Path, bytes: &[u8], lines: u64,
    ) -> Result<()> {
        write_atomic(dir, path, bytes)?;
        self.file = Some(open_append_with_id(path)?);
        self.len = bytes.len() as u64;
        self.lines = lines;
        Ok(())
    }
}

/// The cached replay of a log: its cursor and what its records leave.
pub(crate) trait LogCache {
    /// One line of the log.
    type Record: HeadedRecord;
    /// How far the cache has read the log.
    fn cursor(&mut self) -> &mut LogCursor;
    /// Forgets everything read (the cursor too): the next sync reads the log afresh.
    fn reset(&mut self);
    /// Replays `record` on the cache.
    fn apply(&mut self, record: Self::Record);

    /// Runs `op` on the cache, forgetting the cache when it fails: after a failed step the
    /// cache may no longer say what the log holds.
    fn reset_on_error<T>(&mut self, op: impl FnOnce(&mut Self) -> Result<T>) -> Result<T>
    where
        Self: Sized,
    {
        let result = op(self);
        if result.is_err() {
            self.reset();
        }
        result
    }
}

/// Brings the cache `slot` up to date with the log at `path`: a missing log empties it, the
/// log as read leaves it as it is, another file (a rewrite) is opened and read afresh after
/// `reopened` (which removes what interrupted rewrites left), and otherwise `read_new` reads
/// what others appended. A whole appended line that does not parse makes the log be read
/// afresh, which sets it aside. On failure the cache is forgotten.
pub(crate) fn sync_log<S: LogCache>(
    slot: &mut S, path: &Path, f: &mut Findings,
    mut reopened: impl FnMut(&mut Findings) -> Result<()>,
    mut read_new: impl FnMut(&mut S, &mut Findings) -> Result<()>,
) -> Result<()> {
    let mut reopen = |slot: &mut S, f: &mut Findings| {
        slot.reset();
        slot.cursor().open(path)?;
        reopened(f)
    };
    slot.reset_on_error(|slot| {
        let Some(meta) = stat(path)? else {
            slot.reset();
            return Ok(());
        };
        if slot.cursor().holds(&meta) {
            return Ok(());
        }
        if !slot.cursor().same_file(&meta) {
            reopen(slot, f)?;
        }
        match read_new(slot, f) {
            Err(e) if e.kind() == ErrorKind::CorruptData && slot.cursor().len > 0 => {
                reopen(slot, f)?;
                read_new(slot, f)
            }
            read => read,
        }
    })
}

/// Removes the temporary files interrupted rewrites left in `dir` (`what`: "an interrupted
/// graph rewrite"), with the log's lock held, so that no rewrite is under way.
pub(crate) fn clean_temp_files(dir: &Path, what: &str, f: &mut Findings) -> Result<()> {
    let Some(entries) = list_dir(dir)? else {
        return Ok(());
    };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with(TMP_PREFIX) {
            f.temp_file(None, entry.path(), what);
        }
    }
    Ok(())
}

/// What a read of a whole log found damaged: the lines that do not parse (and a first line
/// cut off), as they are set aside, what is wrong with them, and the records read.
pub(crate) struct Damage<R> {
    pub(crate) kept: Vec<u8>,
    pub(crate) problem: String,
    pub(crate) records: Vec<R>,
}

impl<R> Damage<R> {
    /// Sets the damaged lines of the log at `path` aside in `dir`'s `quarantine/` and replays
    /// the readable records on `slot`; the caller then rewrites the log from the cache (a torn
    /// tail goes with the damage: it was never acknowledged).
    pub(crate) fn keep_readable<S: LogCache<Record = R>>(
        self, slot: &mut S, dir: &Path, path: &Path, f: &mut Findings,
    ) -> Result<()> {
        let problem = format!("{}; the log keeps its readable records", self.problem);
        f.quarantine(None, dir, path, Aside::Lines(&self.kept), problem)?;
        for record in self.records {
            slot.apply(record);
        }
        Ok(())
    }
}

/// Reads the records of the log at `path` (of kind `log`) after those `slot` read (all of
/// them when it read none), replaying them on it; `keep_bad` as in
/// [`scan_lines`](crate::log::scan_lines). Complete lines that do not parse, or a first line
/// cut off, go to `damaged` instead, to set aside.
pub(crate) fn read_records<S: LogCache>(
    slot: &mut S, path: &Path, log: &HeadedLog, keep_bad: bool, f: &mut Findings,
    damaged: impl FnOnce(&mut S, Damage<S::Record>, &mut Findings) -> Result<()>,
) -> Result<()> {
    let cursor = slot.cursor();
    let Some((file, _)) = cursor.file.as_ref() else {
        return Err(Error::backend(format!("{} log not open", log.kind)));
    };
    let tail = read_tail(
        file,
        path,
        (&mut cursor.len, &mut cursor.lines),
        keep_bad,
        |bytes, path| log.refuse_newer(bytes, path),
        |line, bytes| log.parse(line, bytes),
        f,
    )?;
    match tail {
        Tail::Damaged { bytes, scan } => {
            let (kept, problem, records) = scan.set_aside(&bytes);
            let damage = Damage {
                kept,
                problem,
                records,
            };
            damaged(slot, damage, f)
        }
        Tail::Read(records) => {
            for record in records {
                slot.apply(record);
            }
            Ok(())
        }
    }
}
