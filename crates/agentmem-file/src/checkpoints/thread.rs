//! One checkpoint thread's log: reading it into a cached [`ThreadCheckpoints`] (only what
//! others appended since, when the file is the same one), repairing what a crash or an edit
//! left, appending a write, rewriting the log whole. Every function here runs on a blocking
//! thread with the thread's in-process mutex and file lock held (see `locking.rs`).

use std::fs::File;

use agentmem_core::checkpoint::ThreadCheckpoints;
use agentmem_core::{Error, Result, ThreadId};

use super::record::{encode_log, header_line, Record, RecordRef, THREAD_KIND};
use crate::config::Durability;
use crate::cursor::{clean_temp_files, read_records, sync_log, Damage, LogCache, LogCursor};
use crate::fsutil::{create_dirs, io_error, remove_if_exists, stat, sync_dir};
use crate::layout::{thread_key, Layout, LogPaths};
use crate::repair::{Aside, Findings};

/// The cached replay of one thread's log. Guarded by the thread's in-process mutex.
#[derive(Debug, Default)]
pub(crate) struct ThreadSlot {
    /// The thread's lock file, kept open between operations.
    pub(crate) lock_file: Option<File>,
    /// How far the log was read.
    cursor: LogCursor,
    /// The thread, from the log's header.
    thread: Option<ThreadId>,
    /// The thread's checkpoints (and pending writes, with or without their checkpoint) as the
    /// log's records leave them.
    pub(crate) state: ThreadCheckpoints,
}

impl ThreadSlot {
    /// Forgets everything read: the next sync reads the log afresh.
    pub(crate) fn reset(&mut self) {
        self.cursor = LogCursor::default();
        self.thread = None;
        self.state = ThreadCheckpoints::default();
    }

    /// The thread's exact id, when its log exists.
    pub(crate) fn thread(&self) -> Option<&ThreadId> {
        self.thread.as_ref()
    }

    /// Takes the thread's file lock (blocking), opening the lock file when needed.
    pub(crate) fn lock(&mut self, paths: &LogPaths) -> Result<()> {
        let file = match self.lock_file.take() {
            Some(file) => file,
            None => crate::fsutil::open_lock_file(&paths.lock)?,
        };
        file.lock()
            .map_err(|e| io_error(&paths.lock, "cannot lock", e))?;
        self.lock_file = Some(file);
        Ok(())
    }

    /// Releases the file lock taken by [`lock`](Self::lock).
    pub(crate) fn unlock(&mut self) {
        if let Some(file) = &self.lock_file {
            // If unlocking fails the lock is released when the file is closed: close it.
            if let Err(e) = file.unlock() {
                tracing::warn!(error = %e, "cannot release a file lock");
                self.lock_file = None;
            }
        }
    }
}

impl LogCache for ThreadSlot {
    type Record = Record;

    fn cursor(&mut self) -> &mut LogCursor {
        &mut self.cursor
    }

    fn reset(&mut self) {
        ThreadSlot::reset(self);
    }

    fn apply(&mut self, record: Record) {
        match record {
            Record::Header { thread, .. } => self.thread = Some(thread),
            Record::Put { checkpoint, blobs } => self.state.put(&checkpoint, &blobs),
            // Kept whether or not its checkpoint is stored (yet): they show once it is.
            Record::Writes { at, writes } => self.state.put_writes(&at, &writes),
            Record::State { state } => self.state = *state,
        }
    }
}

/// Operations on one thread's log.
pub(crate) struct ThreadCtx<'a> {
    pub(crate) layout: &'a Layout,
    pub(crate) paths: LogPaths,
    /// The thread's folder name ([`thread_key`]).
    pub(crate) key: &'a str,
    pub(crate) durability: Durability,
}

impl ThreadCtx<'_> {
    /// Whether the thread's log exists (a `stat`). A log comes into being whole and goes by an
    /// unlink, so a missing log is a thread holding nothing at that instant.
    pub(crate) fn log_exists(&self) -> Result<bool> {
        Ok(stat(&self.paths.log)?.is_some())
    }

    /// Creates the thread's folder (and `threads/`) when missing, their entries synced, so
    /// that the log written in it survives a crash of the machine.
    pub(crate) fn ensure_dir(&self) -> Result<()> {
        if stat(&self.paths.dir)?.is_some() {
            return Ok(());
        }
        let new_threads = stat(&self.layout.threads)?.is_none();
        create_dirs(&self.paths.dir)?;
        sync_dir(&self.layout.threads)?;
        if new_threads {
            sync_dir(&self.layout.root)?;
        }
        Ok(())
    }

    /// Brings the cache up to date with the log (reading only what others appended when the
    /// file is the same one), truncating a torn last line and setting complete lines that do
    /// not parse aside (see [`quarantine`](Self::quarantine)). `expected` is the thread the
    /// caller asks for, when it knows it.
    pub(crate) fn sync(
        &self, slot: &mut ThreadSlot, expected: Option<&ThreadId>, f: &mut Findings,
    ) -> Result<()> {
        let path = &self.paths.log;
        let reopened = |f: &mut Findings| {
            clean_temp_files(&self.paths.dir, "an interrupted checkpoint rewrite", f)
        };
        slot.reset_on_error(|slot| {
            sync_log(slot, path, f, reopened, |slot, f| {
                read_records(slot, path, &THREAD_KIND, true, f, |slot, damage, f| {
                    self.quarantine(slot, damage, expected, f)
                })
            })
            .and_then(|()| self.check_thread(slot, expected))
        })
    }

    /// `CorruptData` when the log holds another thread than the one asked for, or than its
    /// folder's name says (a log moved by hand): never answer for the wrong thread.
    fn check_thread(&self, slot: &ThreadSlot, expected: Option<&ThreadId>) -> Result<()> {
        let Some(thread) = &slot.thread else {
            return Ok(());
        };
        if expected.is_some_and(|e| e != thread) || thread_key(thread) != self.key {
            return Err(Error::corrupt(format!(
                "{} holds checkpoint thread {:?}, which does not belong in this folder",
                self.paths.log.display(),
                thread.as_str()
            )));
        }
        Ok(())
    }

    /// Sets the complete lines of the log read (from where the cache had read on) that do not
    /// parse, and a first line cut off, aside byte for byte in the thread's `quarantine/`,
    /// then rewrites the log from its readable records (a torn tail goes with them: it was
    /// never acknowledged). When not even the thread can be told (no readable header, no
    /// readable record naming it, no caller asking for it), the whole log is set aside
    /// instead.
    fn quarantine(
        &self, slot: &mut ThreadSlot, damage: Damage<Record>, expected: Option<&ThreadId>,
        f: &mut Findings,
    ) -> Result<()> {
        let (dir, path) = (&self.paths.dir, &self.paths.log);
        let thread = slot
            .thread
            .clone()
            .or_else(|| expected.cloned())
            .or_else(|| self.named_in(&damage.records));
        let Some(thread) = thread else {
            let problem = format!("{}; no readable line names the thread", damage.problem);
            f.quarantine(None, dir, path, Aside::WholeFile, problem)?;
            slot.reset();
            return Ok(());
        };
        damage.keep_readable(slot, dir, path, f)?;
        slot.thread = Some(thread.clone());
        let state = std::mem::take(&mut slot.state);
        self.replace(slot, &thread, state)
    }

    /// The thread of this folder as one of `records` names it.
    fn named_in(&self, records: &[Record]) -> Option<ThreadId> {
        records
            .iter()
            .filter_map(|record| match record {
                Record::Header { thread, .. } => Some(thread.clone()),
                Record::Put { checkpoint, .. } => Some(checkpoint.key.thread.clone()),
                Record::Writes { at, .. } => Some(at.thread.clone()),
                Record::State { state } => state
                    .tuples()
                    .first()
                    .map(|t| t.checkpoint.key.thread.clone()),
            })
            .find(|thread| thread_key(thread) == self.key)
    }

    /// Writes `record` of `thread` (whose state in `slot` already includes it) at the end of the
    /// log, creating the log (with its header, by a rename) when there is none; fsynced under
    /// fsync durability. On failure the log is cut back and the cache forgotten.
    pub(crate) fn append(
        &self, slot: &mut ThreadSlot, thread: &ThreadId, record: &RecordRef<'_>,
    ) -> Result<()> {
        slot.reset_on_error(|slot| {
            let line = record.line()?;
            if !slot.cursor.is_open() {
                let mut bytes = header_line(thread)?;
                bytes.extend_from_slice(&line);
                slot.cursor
                    .replace(&self.paths.dir, &self.paths.log, &bytes, 2)?;
                slot.thread = Some(thread.clone());
                return Ok(());
            }
            slot.cursor.append(&self.paths.log, &line, self.durability)
        })
    }

    /// Makes `state` the thread's: the log rewritten whole (header and one state record, by a
    /// rename), or removed when `state` holds nothing at all (no checkpoint and no pending
    /// write: writes made ahead of their checkpoint are kept). On failure the cache is
    /// forgotten (the log is the old one or the new one).
    pub(crate) fn replace(
        &self, slot: &mut ThreadSlot, thread: &ThreadId, state: ThreadCheckpoints,
    ) -> Result<()> {
        slot.reset_on_error(|slot| {
            let path = &self.paths.log;
            if state.holds_nothing() {
                slot.reset();
                remove_if_exists(path)?;
                if self.durability == Durability::Fsync {
                    sync_dir(&self.paths.dir)?;
                }
                return Ok(());
            }
            let bytes = encode_log(thread, &state)?;
            slot.cursor.replace(&self.paths.dir, path, &bytes, 2)?;
            slot.thread = Some(thread.clone());
            slot.state = state;
            Ok(())
        })
    }
}
