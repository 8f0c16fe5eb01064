//! One checkpoint thread's log: reading it into a cached [`ThreadCheckpoints`] (only what
//! others appended since, when the file is the same one), repairing what a crash or an edit
//! left, appending a write, rewriting the log whole. Every function here runs on a blocking
//! thread with the thread's in-process mutex and file lock held (see `locking.rs`).

use std::fs::File;

use agentmem_core::checkpoint::ThreadCheckpoints;
use agentmem_core::{Error, ErrorKind, Result, ThreadId};

use super::record::{encode_log, header_line, parse_record, refuse_newer, Record, RecordRef};
use crate::config::Durability;
use crate::fsutil::{
    create_dirs, io_error, list_dir, open_append_with_id, remove_if_exists, stat, sync_dir,
    write_atomic, FileId, TMP_PREFIX,
};
use crate::layout::{thread_key, Layout, ThreadPaths};
use crate::log::{append_line, read_tail, BadLine, Scan, Tail};
use crate::repair::{Aside, Findings};

/// The cached replay of one thread's log. Guarded by the thread's in-process mutex.
#[derive(Debug, Default)]
pub(crate) struct ThreadSlot {
    /// The thread's lock file, kept open between operations.
    pub(crate) lock_file: Option<File>,
    /// The log as opened, and its identity: a rewrite by any process replaces the file, and
    /// the open handle keeps the old inode from being reused, so a changed identity always
    /// tells a rewrite.
    file: Option<(File, FileId)>,
    /// Bytes of the log read (whole lines).
    len: u64,
    /// Lines of the log read.
    lines: u64,
    /// The thread, from the log's header.
    thread: Option<ThreadId>,
    /// The thread's checkpoints (and pending writes, with or without their checkpoint) as the
    /// log's records leave them.
    pub(crate) state: ThreadCheckpoints,
}

impl ThreadSlot {
    /// Forgets everything read: the next sync reads the log afresh.
    pub(crate) fn reset(&mut self) {
        self.file = None;
        self.len = 0;
        self.lines = 0;
        self.thread = None;
        self.state = ThreadCheckpoints::default();
    }

    /// The thread's exact id, when its log exists.
    pub(crate) fn thread(&self) -> Option<&ThreadId> {
        self.thread.as_ref()
    }

    /// Takes the thread's file lock (blocking), opening the lock file when needed.
    pub(crate) fn lock(&mut self, paths: &ThreadPaths) -> Result<()> {
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
    pub(crate) paths: ThreadPaths,
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
        &self,
        slot: &mut ThreadSlot,
        expected: Option<&ThreadId>,
        f: &mut Findings,
    ) -> Result<()> {
        let result = self.sync_inner(slot, expected, f);
        if result.is_err() {
            slot.reset();
        }
        result
    }

    fn sync_inner(
        &self,
        slot: &mut ThreadSlot,
        expected: Option<&ThreadId>,
        f: &mut Findings,
    ) -> Result<()> {
        let path = &self.paths.log;
        let Some(meta) = stat(path)? else {
            slot.reset();
            return Ok(());
        };
        let id = FileId::of(&meta);
        let same = slot.file.as_ref().is_some_and(|(_, fid)| *fid == id);
        if same && meta.len() == slot.len {
            return self.check_thread(slot, expected);
        }
        if !same || meta.len() < slot.len {
            slot.reset();
            slot.file = Some(open_append_with_id(path)?);
            self.clean_folder(f)?;
        }
        match self.read_new(slot, expected, f) {
            // A whole appended line that does not parse: read the log afresh, which sets it
            // aside.
            Err(e) if e.kind() == ErrorKind::CorruptData && slot.len > 0 => {
                slot.reset();
                slot.file = Some(open_append_with_id(path)?);
                self.read_new(slot, expected, f)?;
            }
            read => read?,
        }
        self.check_thread(slot, expected)
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

    /// Removes temporary files left in the thread's folder by interrupted rewrites (with the
    /// thread's lock held, so no rewrite is under way).
    fn clean_folder(&self, f: &mut Findings) -> Result<()> {
        let Some(entries) = list_dir(&self.paths.dir)? else {
            return Ok(());
        };
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(TMP_PREFIX) {
                f.temp_file(None, entry.path(), "an interrupted checkpoint rewrite");
            }
        }
        Ok(())
    }

    /// Reads the records after the `slot.len` bytes already read (all of them when none were).
    fn read_new(
        &self,
        slot: &mut ThreadSlot,
        expected: Option<&ThreadId>,
        f: &mut Findings,
    ) -> Result<()> {
        let path = &self.paths.log;
        let Some((file, _)) = slot.file.as_ref() else {
            return Err(Error::backend("checkpoint log not open"));
        };
        let tail = read_tail(
            file,
            path,
            (&mut slot.len, &mut slot.lines),
            true,
            refuse_newer,
            parse_record,
            f,
        )?;
        match tail {
            Tail::Damaged { bytes, scan } => self.quarantine(slot, &bytes, scan, expected, f),
            Tail::Read(records) => {
                for record in records {
                    slot.apply(record);
                }
                Ok(())
            }
        }
    }

    /// Sets the complete lines of `bytes` (the log from `slot.len` on) that do not parse, and
    /// a first line cut off, aside byte for byte in the thread's `quarantine/`, then rewrites
    /// the log from its readable records (a torn tail goes with them: it was never
    /// acknowledged). When not even the thread can be told (no readable header, no readable
    /// record naming it, no caller asking for it), the whole log is set aside instead.
    fn quarantine(
        &self,
        slot: &mut ThreadSlot,
        bytes: &[u8],
        scan: Scan<Record>,
        expected: Option<&ThreadId>,
        f: &mut Findings,
    ) -> Result<()> {
        let path = &self.paths.log;
        let mut bad = scan.bad;
        if let Some(torn) = scan.torn.filter(|t| t.line == 1) {
            bad.push(BadLine {
                line: 1,
                reason: torn.reason,
                bytes: 0..bytes.len(),
            });
        }
        let (kept, problem) = BadLine::set_aside(bytes, &bad);
        let thread = slot
            .thread
            .clone()
            .or_else(|| expected.cloned())
            .or_else(|| self.named_in(&scan.records));
        let Some(thread) = thread else {
            let problem = format!("{problem}; no readable line names the thread");
            f.quarantine(None, &self.paths.dir, path, Aside::WholeFile, problem)?;
            slot.reset();
            return Ok(());
        };
        let problem = format!("{problem}; the log keeps its readable records");
        f.quarantine(None, &self.paths.dir, path, Aside::Lines(&kept), problem)?;
        for record in scan.records {
            slot.apply(record);
        }
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
        &self,
        slot: &mut ThreadSlot,
        thread: &ThreadId,
        record: &RecordRef<'_>,
    ) -> Result<()> {
        let result = self.append_inner(slot, thread, record);
        if result.is_err() {
            slot.reset();
        }
        result
    }

    fn append_inner(
        &self,
        slot: &mut ThreadSlot,
        thread: &ThreadId,
        record: &RecordRef<'_>,
    ) -> Result<()> {
        let path = &self.paths.log;
        let line = record.line()?;
        let Some((file, _)) = slot.file.as_mut() else {
            let mut bytes = header_line(thread)?;
            bytes.extend_from_slice(&line);
            write_atomic(&self.paths.dir, path, &bytes)?;
            slot.file = Some(open_append_with_id(path)?);
            slot.len = bytes.len() as u64;
            slot.lines = 2;
            slot.thread = Some(thread.clone());
            return Ok(());
        };
        append_line(file, path, slot.len, &line, self.durability)?;
        slot.len += line.len() as u64;
        slot.lines += 1;
        Ok(())
    }

    /// Makes `state` the thread's: the log rewritten whole (header and one state record, by a
    /// rename), or removed when `state` holds nothing at all (no checkpoint and no pending
    /// write: writes made ahead of their checkpoint are kept). On failure the cache is
    /// forgotten (the log is the old one or the new one).
    pub(crate) fn replace(
        &self,
        slot: &mut ThreadSlot,
        thread: &ThreadId,
        state: ThreadCheckpoints,
    ) -> Result<()> {
        let result = self.replace_inner(slot, thread, state);
        if result.is_err() {
            slot.reset();
        }
        result
    }

    fn replace_inner(
        &self,
        slot: &mut ThreadSlot,
        thread: &ThreadId,
        state: ThreadCheckpoints,
    ) -> Result<()> {
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
        write_atomic(&self.paths.dir, path, &bytes)?;
        slot.file = Some(open_append_with_id(path)?);
        slot.len = bytes.len() as u64;
        slot.lines = 2;
        slot.thread = Some(thread.clone());
        slot.state = state;
        Ok(())
    }
}
