//! The vector log replayed into a cached [`VectorMap`]: bringing the cache up to date with what
//! other processes appended (only the new records when the file is the same one), repairing
//! what a crash or an edit left, appending a write, and compacting the log. Every function here
//! that changes a file runs on a blocking thread with the vectors' in-process mutex and
//! exclusive file lock held (see `mod.rs`).

use std::fs::File;

use agentmem_core::vector::VectorMap;
use agentmem_core::{Error, Result};

use super::record::{self, check_header, encode_log, encoded_len, BadHeader, End, Record};
use crate::config::Durability;
use crate::cursor::{clean_temp_files, LogCursor};
use crate::fsutil::{create_dirs, io_error, read_range, stat, sync_dir};
use crate::layout::{Layout, LogPaths};
use crate::repair::{Aside, Findings, RepairKind};

/// Compaction is considered once the log holds more records than this...
const COMPACT_MIN_RECORDS: u64 = 1_000;
/// ... and more than this many records a live vector; it is done when the log is more than
/// [`COMPACT_MIN_SHRINK`] times what its rewrite would be.
const COMPACT_RECORDS_PER_ITEM: u64 = 2;
/// See [`COMPACT_RECORDS_PER_ITEM`].
const COMPACT_MIN_SHRINK: u64 = 2;

/// What left a temporary file in `vectors/`, as findings say.
const INTERRUPTED: &str = "an interrupted vector log rewrite";

/// The cached replay of the vector log. Guarded by its in-process mutex.
#[derive(Debug, Default)]
pub(crate) struct VectorSlot {
    /// The lock file, kept open between operations.
    pub(crate) lock_file: Option<File>,
    /// How far the log was read (`lines`: the header and the records).
    cursor: LogCursor,
    /// The record count below which compaction is not considered again, after a look found
    /// the log mostly live (0: none yet).
    next_check: u64,
    /// The vectors as the log's records leave them.
    pub(crate) map: VectorMap,
}

impl VectorSlot {
    /// Forgets everything read: the next sync reads the log afresh.
    pub(crate) fn reset(&mut self) {
        self.cursor = LogCursor::default();
        self.next_check = 0;
        self.map = VectorMap::default();
    }
}

/// Operations on the vector log.
pub(crate) struct VectorCtx<'a> {
    pub(crate) layout: &'a Layout,
    pub(crate) paths: LogPaths,
    pub(crate) durability: Durability,
}

impl VectorCtx<'_> {
    /// Whether the cache holds the log as it is now (one `stat`, no lock): then a read can be
    /// answered from it. With no log there are no vectors (a log comes into being whole, by a
    /// rename): the cache is emptied and holds that.
    pub(crate) fn is_current(&self, slot: &mut VectorSlot) -> Result<bool> {
        match stat(&self.paths.log)? {
            Some(meta) => Ok(slot.cursor.holds(&meta)),
            None => {
                slot.reset();
                Ok(true)
            }
        }
    }

    /// Creates the folder when missing, its entry synced.
    pub(crate) fn ensure_dir(&self) -> Result<()> {
        if stat(&self.paths.dir)?.is_some() {
            return Ok(());
        }
        create_dirs(&self.paths.dir)?;
        sync_dir(&self.layout.root)
    }

    /// Brings the cache up to date with the log: a missing log empties it, another file (a
    /// rewrite) is read afresh, otherwise only what others appended is read. Damage is
    /// repaired (when `f.fix`) as it is found. On failure the cache is forgotten.
    pub(crate) fn sync(&self, slot: &mut VectorSlot, f: &mut Findings) -> Result<()> {
        let result = (|| {
            let Some(meta) = stat(&self.paths.log)? else {
                slot.reset();
                return Ok(());
            };
            if slot.cursor.holds(&meta) {
                return Ok(());
            }
            if !slot.cursor.same_file(&meta) {
                slot.reset();
                slot.cursor.open(&self.paths.log)?;
                clean_temp_files(&self.paths.dir, INTERRUPTED, f)?;
            }
            self.read_new(slot, f)
        })();
        if result.is_err() {
            slot.reset();
        }
        result
    }

    /// Reads the whole log afresh, not trusting the cache, and finds what is damaged. When
    /// fixing, the cache is read afresh and the damage repaired as [`sync`](Self::sync) does;
    /// otherwise a scratch cache reads the log and nothing on disk changes.
    pub(crate) fn check(&self, slot: &mut VectorSlot, f: &mut Findings) -> Result<()> {
        if stat(&self.paths.log)?.is_none() {
            // A first write interrupted before its rename leaves a temporary file and no log.
            slot.reset();
            return clean_temp_files(&self.paths.dir, INTERRUPTED, f);
        }
        if f.fix {
            slot.reset();
            self.sync(slot, f)
        } else {
            self.sync(&mut VectorSlot::default(), f)
        }
    }

    /// Reads the records after those the cache read, replaying them. A torn end is cut away;
    /// a record that cannot be read is set aside with everything after it (their lengths
    /// cannot be trusted) in `vectors/quarantine/`, and the log cut back to the records
    /// before it; a log that does not start with a vector log's header is set aside whole.
    fn read_new(&self, slot: &mut VectorSlot, f: &mut Findings) -> Result<()> {
        let path = &self.paths.log;
        let Some(file) = slot.cursor.file() else {
            return Err(Error::backend("the vector log is not open"));
        };
        let end = file
            .metadata()
            .map_err(|e| io_error(path, "cannot stat", e))?
            .len();
        let start = slot.cursor.len;
        let bytes = read_range(file, path, start, end)?;
        let mut offset = 0;
        if start == 0 {
            match check_header(&bytes) {
                Ok(()) => offset = record::HEADER_LEN,
                Err(BadHeader::Newer(version)) => {
                    return Err(Error::unsupported(format!(
                        "{} has version {version}; this agentmem understands up to {}: \
                         upgrade agentmem",
                        path.display(),
                        record::VERSION
                    )))
                }
                Err(BadHeader::Unreadable(why)) => {
                    let problem = format!("{why}; the store goes on without its vectors");
                    f.quarantine(None, &self.paths.dir, path, Aside::WholeFile, problem)?;
                    slot.reset();
                    return Ok(());
                }
            }
        }
        let scan = record::scan(&bytes[offset..], slot.cursor.lines.max(1));
        let count = scan.records.len() as u64;
        for r in scan.records {
            r.apply(&mut slot.map);
        }
        let good = offset + scan.valid_len;
        let valid = start + good as u64;
        match scan.end {
            End::Clean => {}
            End::Torn { record, reason } => {
                let detail =
                    format!("record {record}: {reason}; truncated to the last whole record");
                f.add(RepairKind::TornTail, None, path.clone(), detail);
                self.truncate(file, valid, f)?;
            }
            End::Damaged { record, reason } => {
                let problem = format!(
                    "record {record}: {reason}; the log keeps the {} records before it",
                    slot.cursor.lines.saturating_sub(1) + count
                );
                let aside = Aside::Lines(&bytes[good..]);
                f.quarantine(None, &self.paths.dir, path, aside, problem)?;
                self.truncate(file, valid, f)?;
            }
        }
        slot.cursor.len = valid;
        slot.cursor.lines += count + u64::from(start == 0);
        Ok(())
    }

    /// Cuts the log back to its first `len` bytes, when fixing.
    fn truncate(&self, file: &File, len: u64, f: &Findings) -> Result<()> {
        if !f.fix {
            return Ok(());
        }
        file.set_len(len)
            .and_then(|()| file.sync_all())
            .map_err(|e| io_error(&self.paths.log, "cannot truncate", e))
    }

    /// Writes `records` (whose change the cached map already holds) at the end of the log in
    /// one append, creating the log (with its header, by a rename) when there is none; fsynced
    /// under fsync durability. Then compacts the log when it holds much more than the vectors.
    /// On failure the log is cut back and the cache forgotten.
    pub(crate) fn commit(&self, slot: &mut VectorSlot, records: &[Record]) -> Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        let mut bytes = Vec::new();
        for r in records {
            r.push(&mut bytes);
        }
        let n = records.len() as u64;
        let written = if slot.cursor.is_open() {
            slot.cursor
                .append(&self.paths.log, &bytes, self.durability)
                .map(|()| slot.cursor.lines += n - 1)
        } else {
            let mut whole = record::header();
            whole.extend_from_slice(&bytes);
            self.replace(slot, &whole, 1 + n)
        };
        if let Err(e) = written {
            slot.reset();
            return Err(e);
        }
        // The records are written and acknowledged; a failed compaction only leaves the log
        // longer, so it is logged rather than reported as a failure of this write.
        if let Err(e) = self.maybe_compact(slot) {
            tracing::warn!(error = %e, "cannot compact the vector log; will retry on a later write");
            slot.reset();
        }
        Ok(())
    }

    /// Rewrites the log as the vectors alone when it holds many more records than live
    /// vectors and its rewrite would be much smaller; after a look that keeps the log, waits
    /// until the log has doubled, so the looks cost a constant share of the writes.
    fn maybe_compact(&self, slot: &mut VectorSlot) -> Result<()> {
        let records = slot.cursor.lines.saturating_sub(1);
        let live = slot.map.len() as u64;
        if records <= COMPACT_MIN_RECORDS
            || records <= COMPACT_RECORDS_PER_ITEM * live
            || slot.cursor.lines < slot.next_check
        {
            return Ok(());
        }
        if encoded_len(&slot.map) as u64 * COMPACT_MIN_SHRINK > slot.cursor.len {
            slot.next_check = slot.cursor.lines * 2;
            return Ok(());
        }
        tracing::debug!(records, live, "compacting the vector log");
        self.rewrite(slot)
    }

    /// Rewrites the log as the cached vectors (compaction, or after a clear).
    pub(crate) fn rewrite(&self, slot: &mut VectorSlot) -> Result<()> {
        let bytes = encode_log(&slot.map);
        let lines = 1 + slot.map.len() as u64;
        self.replace(slot, &bytes, lines)
    }

    /// Replaces the log, whole, by `bytes` (`lines` header and records): a temporary file,
    /// fsync, rename, fsync of the folder. Other handles and processes see another file at
    /// their next `stat` and read it afresh.
    fn replace(&self, slot: &mut VectorSlot, bytes: &[u8], lines: u64) -> Result<()> {
        let paths = &self.paths;
        slot.cursor.replace(&paths.dir, &paths.log, bytes, lines)?;
        slot.next_check = 0;
        Ok(())
    }
}
