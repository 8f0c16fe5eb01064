//! The graph's log replayed into a cached [`GraphState`]: bringing the cache up to date with
//! what other processes appended (only the new lines when the file is the same one), repairing
//! what a crash or an edit left, appending a write, and compacting the log. Every function
//! here that changes a file runs on a blocking thread with the graph's in-process mutex and
//! exclusive file lock held (see `locking.rs`).

use std::fs::File;

use agentmem_core::{Error, ErrorKind, GraphState, Result};

use super::record::{encode_log, parse_record, refuse_newer, Record};
use crate::config::Durability;
use crate::fsutil::{
    create_dirs, list_dir, open_append_with_id, stat, sync_dir, write_atomic, FileId, TMP_PREFIX,
};
use crate::layout::{GraphPaths, Layout};
use crate::log::{append_line, read_tail, BadLine, Scan, Tail};
use crate::repair::{Aside, Findings};

/// Compaction is considered once the log holds more records than this...
const COMPACT_MIN_RECORDS: u64 = 1_000;
/// ... and more than this many records a live entity or relation; it is done when the log is
/// more than [`COMPACT_MIN_SHRINK`] times what its rewrite would be.
const COMPACT_RECORDS_PER_ITEM: u64 = 4;
/// See [`COMPACT_RECORDS_PER_ITEM`].
const COMPACT_MIN_SHRINK: u64 = 2;

/// The cached replay of the graph's log. Guarded by its in-process mutex.
#[derive(Debug, Default)]
pub(crate) struct GraphSlot {
    /// The graph's lock file, kept open between operations.
    pub(crate) lock_file: Option<File>,
    /// The log as opened, and its identity: a rewrite (compaction, repair) by any process
    /// replaces the file by a rename, and the open handle keeps the old inode from being
    /// reused, so a changed identity always tells a rewrite.
    file: Option<(File, FileId)>,
    /// Bytes of the log read (whole lines).
    len: u64,
    /// Lines of the log read (the header included).
    lines: u64,
    /// The line count below which compaction is not considered again, after a look found the
    /// log mostly live (0: none yet).
    next_check: u64,
    /// The graph as the log's records leave it.
    pub(crate) state: GraphState,
}

impl GraphSlot {
    /// Forgets everything read: the next sync reads the log afresh.
    pub(crate) fn reset(&mut self) {
        self.file = None;
        self.len = 0;
        self.lines = 0;
        self.next_check = 0;
        self.state = GraphState::default();
    }

    /// Whether the cache holds the log `meta` describes as it is: the same file, of the
    /// length read. Nothing is half-read then, since the cache only ever takes whole lines.
    fn holds(&self, meta: &std::fs::Metadata) -> bool {
        self.same_file(meta) && meta.len() == self.len
    }

    /// Whether `meta` is the log this cache read, at least as long as what was read of it.
    fn same_file(&self, meta: &std::fs::Metadata) -> bool {
        let id = FileId::of(meta);
        self.file.as_ref().is_some_and(|(_, fid)| *fid == id) && meta.len() >= self.len
    }
}

/// Operations on the graph's log.
pub(crate) struct GraphCtx<'a> {
    pub(crate) layout: &'a Layout,
    pub(crate) paths: GraphPaths,
    pub(crate) durability: Durability,
}

impl GraphCtx<'_> {
    /// Whether the cache holds the log as it is now (one `stat`, no lock): then a read can be
    /// answered from it. An append is acknowledged only once written, so a log of the length
    /// read holds no acknowledged write the cache lacks. With no log, the graph is empty (a
    /// log comes into being whole, by a rename): the cache is emptied and holds it.
    pub(crate) fn is_current(&self, slot: &mut GraphSlot) -> Result<bool> {
        match stat(&self.paths.log)? {
            Some(meta) => Ok(slot.holds(&meta)),
            None => {
                slot.reset();
                Ok(true)
            }
        }
    }

    /// Creates the graph's folder when missing, its entry synced, so that the log written in
    /// it survives a crash of the machine.
    pub(crate) fn ensure_dir(&self) -> Result<()> {
        if stat(&self.paths.dir)?.is_some() {
            return Ok(());
        }
        create_dirs(&self.paths.dir)?;
        sync_dir(&self.layout.root)
    }

    /// Brings the cache up to date with the log, truncating a torn last line and setting
    /// complete lines that do not parse aside (see [`quarantine`](Self::quarantine)).
    pub(crate) fn sync(&self, slot: &mut GraphSlot, f: &mut Findings) -> Result<()> {
        let result = self.sync_inner(slot, f);
        if result.is_err() {
            slot.reset();
        }
        result
    }

    fn sync_inner(&self, slot: &mut GraphSlot, f: &mut Findings) -> Result<()> {
        let Some(meta) = stat(&self.paths.log)? else {
            slot.reset();
            return Ok(());
        };
        if slot.holds(&meta) {
            return Ok(());
        }
        if !slot.same_file(&meta) {
            self.reopen(slot, f)?;
        }
        match self.read_new(slot, f) {
            // A whole appended line that does not parse: read the log afresh, which sets it
            // aside.
            Err(e) if e.kind() == ErrorKind::CorruptData && slot.len > 0 => {
                self.reopen(slot, f)?;
                self.read_new(slot, f)
            }
            read => read,
        }
    }

    /// Forgets the cache and opens the log anew (another process rewrote it, or this cache is
    /// not to be trusted), removing temporary files left by interrupted rewrites (the lock is
    /// held, so no rewrite is under way).
    fn reopen(&self, slot: &mut GraphSlot, f: &mut Findings) -> Result<()> {
        slot.reset();
        slot.file = Some(open_append_with_id(&self.paths.log)?);
        let Some(entries) = list_dir(&self.paths.dir)? else {
            return Ok(());
        };
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(TMP_PREFIX) {
                f.temp_file(None, entry.path(), "an interrupted graph rewrite");
            }
        }
        Ok(())
    }

    /// Reads the records after the `slot.len` bytes already read (all of them when none were).
    fn read_new(&self, slot: &mut GraphSlot, f: &mut Findings) -> Result<()> {
        let Some((file, _)) = slot.file.as_ref() else {
            return Err(Error::backend("graph log not open"));
        };
        // Damage is set aside from a whole read only, so the rewrite starts from every record.
        let keep_bad = slot.len == 0;
        let tail = read_tail(
            file,
            &self.paths.log,
            (&mut slot.len, &mut slot.lines),
            keep_bad,
            refuse_newer,
            parse_record,
            f,
        )?;
        match tail {
            Tail::Damaged { bytes, scan } => self.quarantine(slot, &bytes, scan, f),
            Tail::Read(records) => {
                for record in records {
                    record.apply(&mut slot.state);
                }
                Ok(())
            }
        }
    }

    /// Sets the complete lines of the whole log `bytes` that do not parse (and a first line
    /// cut off) aside, byte for byte, in `graph/quarantine/`, then rewrites the log from its
    /// readable records (a torn tail goes with them: it was never acknowledged).
    fn quarantine(
        &self,
        slot: &mut GraphSlot,
        bytes: &[u8],
        scan: Scan<Record>,
        f: &mut Findings,
    ) -> Result<()> {
        let mut bad = scan.bad;
        if let Some(torn) = scan.torn.filter(|t| t.line == 1) {
            // The whole log is one piece without a newline.
            bad.push(BadLine {
                line: 1,
                reason: torn.reason,
                bytes: 0..bytes.len(),
            });
        }
        let (kept, problem) = BadLine::set_aside(bytes, &bad);
        let problem = format!("{problem}; the log keeps its readable records");
        let path = &self.paths.log;
        f.quarantine(None, &self.paths.dir, path, Aside::Lines(&kept), problem)?;
        for record in scan.records {
            record.apply(&mut slot.state);
        }
        self.rewrite(slot)
    }

    /// Writes `record` (whose change the cached state already holds) at the end of the log,
    /// creating the log (with its header, by a rename) when there is none; fsynced under fsync
    /// durability. Then compacts the log when it holds much more than the graph. On failure
    /// the log is cut back and the cache forgotten.
    pub(crate) fn commit(&self, slot: &mut GraphSlot, record: &Record) -> Result<()> {
        if let Err(e) = self.append(slot, record) {
            slot.reset();
            return Err(e);
        }
        // The record is written and acknowledged; a failed compaction only leaves the log
        // longer, so it is logged rather than reported as a failure of this write.
        if let Err(e) = self.maybe_compact(slot) {
            tracing::warn!(error = %e, "cannot compact the graph log; will retry on a later write");
            slot.reset();
        }
        Ok(())
    }

    fn append(&self, slot: &mut GraphSlot, record: &Record) -> Result<()> {
        let path = &self.paths.log;
        let line = record.line()?;
        let Some((file, _)) = slot.file.as_mut() else {
            let mut bytes = Record::header().line()?;
            bytes.extend_from_slice(&line);
            return self.replace(slot, &bytes, 2);
        };
        append_line(file, path, slot.len, &line, self.durability)?;
        slot.len += line.len() as u64;
        slot.lines += 1;
        Ok(())
    }

    /// Rewrites the log as the graph alone when it holds many more records than live entities
    /// and relations, and its rewrite would be much smaller. The look costs a pass over the
    /// graph, so after a look that keeps the log it waits until the log has doubled: its cost
    /// stays a constant share of the writes.
    fn maybe_compact(&self, slot: &mut GraphSlot) -> Result<()> {
        let records = slot.lines.saturating_sub(1);
        let (entities, relations) = slot.state.len();
        let live = (entities + relations) as u64;
        if records <= COMPACT_MIN_RECORDS
            || records <= COMPACT_RECORDS_PER_ITEM * live
            || slot.lines < slot.next_check
        {
            return Ok(());
        }
        let bytes = encode_log(&slot.state)?;
        if bytes.len() as u64 * COMPACT_MIN_SHRINK > slot.len {
            slot.next_check = slot.lines * 2;
            return Ok(());
        }
        let lines = 1 + live;
        tracing::debug!(records, live, "compacting the graph log");
        self.replace(slot, &bytes, lines)
    }

    /// Rewrites the log as the cached graph (after lines were set aside).
    fn rewrite(&self, slot: &mut GraphSlot) -> Result<()> {
        let bytes = encode_log(&slot.state)?;
        let (entities, relations) = slot.state.len();
        self.replace(slot, &bytes, 1 + (entities + relations) as u64)
    }

    /// Replaces the log, whole, by `bytes` (`lines` lines, the cached graph's): a temporary
    /// file, fsync, rename, fsync of the folder. Other handles and processes see another
    /// file at the next `stat` and read it afresh.
    fn replace(&self, slot: &mut GraphSlot, bytes: &[u8], lines: u64) -> Result<()> {
        let path = &self.paths.log;
        write_atomic(&self.paths.dir, path, bytes)?;
        slot.file = Some(open_append_with_id(path)?);
        slot.len = bytes.len() as u64;
        slot.lines = lines;
        slot.next_check = 0;
        Ok(())
    }
}
