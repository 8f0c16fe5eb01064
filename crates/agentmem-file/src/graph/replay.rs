//! The graph's log replayed into a cached [`GraphState`]: bringing the cache up to date with
//! what other processes appended (only the new lines when the file is the same one), repairing
//! what a crash or an edit left, appending a write, and compacting the log. Every function
//! here that changes a file runs on a blocking thread with the graph's in-process mutex and
//! exclusive file lock held (see `locking.rs`).

use std::fs::File;

use agentmem_core::{GraphState, Result};

use super::record::{encode_log, Record, GRAPH_KIND};
use crate::config::Durability;
use crate::cursor::{clean_temp_files, read_records, sync_log, Damage, LogCache, LogCursor};
use crate::fsutil::{create_dirs, stat, sync_dir};
use crate::layout::{Layout, LogPaths};
use crate::repair::Findings;

/// Compaction is considered once the log holds more records than this...
const COMPACT_MIN_RECORDS: u64 = 1_000;
/// ... and more than this many records a live entity or relation; it is done when the log is
/// more than [`COMPACT_MIN_SHRINK`] times what its rewrite would be.
const COMPACT_RECORDS_PER_ITEM: u64 = 4;
/// See [`COMPACT_RECORDS_PER_ITEM`].
const COMPACT_MIN_SHRINK: u64 = 2;

/// What left a temporary file in `graph/`, as findings say.
const INTERRUPTED: &str = "an interrupted graph rewrite";

/// The cached replay of the graph's log. Guarded by its in-process mutex.
#[derive(Debug, Default)]
pub(crate) struct GraphSlot {
    /// The graph's lock file, kept open between operations.
    pub(crate) lock_file: Option<File>,
    /// How far the log was read.
    cursor: LogCursor,
    /// The line count below which compaction is not considered again, after a look found the
    /// log mostly live (0: none yet).
    next_check: u64,
    /// The graph as the log's records leave it.
    pub(crate) state: GraphState,
}

impl LogCache for GraphSlot {
    type Record = Record;

    fn cursor(&mut self) -> &mut LogCursor {
        &mut self.cursor
    }

    fn reset(&mut self) {
        self.cursor = LogCursor::default();
        self.next_check = 0;
        self.state = GraphState::default();
    }

    fn apply(&mut self, record: Record) {
        record.apply(&mut self.state);
    }
}

/// Operations on the graph's log.
pub(crate) struct GraphCtx<'a> {
    pub(crate) layout: &'a Layout,
    pub(crate) paths: LogPaths,
    pub(crate) durability: Durability,
}

impl GraphCtx<'_> {
    /// Whether the cache holds the log as it is now (one `stat`, no lock): then a read can be
    /// answered from it. An append is acknowledged only once written, so a log of the length
    /// read holds no acknowledged write the cache lacks. With no log, the graph is empty (a
    /// log comes into being whole, by a rename): the cache is emptied and holds it.
    pub(crate) fn is_current(&self, slot: &mut GraphSlot) -> Result<bool> {
        match stat(&self.paths.log)? {
            Some(meta) => Ok(slot.cursor.holds(&meta)),
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
        let reopened = |f: &mut Findings| clean_temp_files(&self.paths.dir, INTERRUPTED, f);
        sync_log(slot, &self.paths.log, f, reopened, |slot, f| {
            // Damage is set aside from a whole read only, so the rewrite starts from every
            // record.
            let keep_bad = slot.cursor.len == 0;
            read_records(
                slot,
                &self.paths.log,
                &GRAPH_KIND,
                keep_bad,
                f,
                |slot, damage, f| self.quarantine(slot, damage, f),
            )
        })
    }

    /// Reads the whole log afresh, not trusting the cache, as a first use would, and finds
    /// what is damaged: a torn last line, lines that do not parse, temporary files left by
    /// interrupted rewrites. When fixing, the cache `slot` is read afresh and the damage
    /// repaired as [`sync`](Self::sync) does; otherwise a scratch cache reads the log and
    /// nothing on disk changes. A log of a newer version is `Unsupported`, left alone.
    pub(crate) fn check(&self, slot: &mut GraphSlot, f: &mut Findings) -> Result<()> {
        if stat(&self.paths.log)?.is_none() {
            // The first write of a log interrupted before its rename leaves a temporary file
            // and no log (which `sync` would not look past).
            slot.reset();
            return clean_temp_files(&self.paths.dir, INTERRUPTED, f);
        }
        if f.fix {
            slot.reset();
            self.sync(slot, f)
        } else {
            self.sync(&mut GraphSlot::default(), f)
        }
    }

    /// Sets the complete lines of the whole log that do not parse (and a first line cut off)
    /// aside, byte for byte, in `graph/quarantine/`, then rewrites the log from its readable
    /// records (a torn tail goes with them: it was never acknowledged).
    fn quarantine(
        &self,
        slot: &mut GraphSlot,
        damage: Damage<Record>,
        f: &mut Findings,
    ) -> Result<()> {
        damage.keep_readable(slot, &self.paths.dir, &self.paths.log, f)?;
        // Only checking: the log stays as it is (the cache, a scratch one, holds the rest).
        if !f.fix {
            return Ok(());
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
        let line = record.line()?;
        if !slot.cursor.is_open() {
            let mut bytes = Record::header().line()?;
            bytes.extend_from_slice(&line);
            return self.replace(slot, &bytes, 2);
        }
        slot.cursor.append(&self.paths.log, &line, self.durability)
    }

    /// Rewrites the log as the graph alone when it holds many more records than live entities
    /// and relations, and its rewrite would be much smaller. The look costs a pass over the
    /// graph, so after a look that keeps the log it waits until the log has doubled: its cost
    /// stays a constant share of the writes.
    fn maybe_compact(&self, slot: &mut GraphSlot) -> Result<()> {
        let records = slot.cursor.lines.saturating_sub(1);
        let (entities, relations) = slot.state.len();
        let live = (entities + relations) as u64;
        if records <= COMPACT_MIN_RECORDS
            || records <= COMPACT_RECORDS_PER_ITEM * live
            || slot.cursor.lines < slot.next_check
        {
            return Ok(());
        }
        let bytes = encode_log(&slot.state)?;
        if bytes.len() as u64 * COMPACT_MIN_SHRINK > slot.cursor.len {
            slot.next_check = slot.cursor.lines * 2;
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
        let paths = &self.paths;
        slot.cursor.replace(&paths.dir, &paths.log, bytes, lines)?;
        slot.next_check = 0;
        Ok(())
    }
}
