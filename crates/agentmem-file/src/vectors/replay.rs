//! The vector log replayed into a cached [`VectorMap`] (the shared machinery is in
//! `replayed.rs`): bringing the cache up to date with what other processes appended (only the
//! new records when the file is the same one) and repairing what a crash or an edit left.
//! Every function here that changes a file runs on a blocking thread with the vectors'
//! in-process mutex and exclusive file lock held.

use std::fs::File;
use std::sync::Arc;

use agentmem_core::vector::VectorMap;
use agentmem_core::{Error, Result};

use super::record::{self, check_header, encode_log, encoded_len, BadHeader, End, Record};
use crate::fsutil::{io_error, read_range, stat};
use crate::layout::{Layout, LogPaths};
use crate::repair::{Aside, Findings, RepairKind};
use crate::replayed::{LogCtx, LogKind, Slot};
use crate::store::Inner;

/// The vector log, `vectors/vectors.log`, as a [`LogKind`].
#[derive(Debug)]
pub(crate) enum VectorLog {}

/// The cached replay of the vector log. Guarded by its in-process mutex.
pub(crate) type VectorSlot = Slot<VectorLog>;

/// Operations on the vector log.
pub(crate) type VectorCtx<'a> = LogCtx<'a, VectorLog>;

impl LogKind for VectorLog {
    type State = VectorMap;
    type Record = Record;
    const NAME: &'static str = "vector log";
    const INTERRUPTED: &'static str = "an interrupted vector log rewrite";
    const COMPACT_RECORDS_PER_ITEM: u64 = 2;

    fn slot(inner: &Inner) -> &Arc<tokio::sync::Mutex<VectorSlot>> {
        &inner.vectors
    }

    fn paths(layout: &Layout) -> LogPaths {
        layout.vectors()
    }

    fn live(map: &VectorMap) -> u64 {
        map.len() as u64
    }

    fn header() -> Result<Vec<u8>> {
        Ok(record::header())
    }

    fn push(record: &Record, out: &mut Vec<u8>) -> Result<()> {
        record.push(out);
        Ok(())
    }

    fn encode_log(map: &VectorMap) -> Result<Vec<u8>> {
        Ok(encode_log(map))
    }

    fn encoded_len(map: &VectorMap) -> Result<u64> {
        Ok(encoded_len(map) as u64)
    }

    /// A missing log empties the cache, another file (a rewrite) is read afresh, otherwise
    /// only what others appended is read (see [`read_new`]).
    fn sync(ctx: &VectorCtx<'_>, slot: &mut VectorSlot, f: &mut Findings) -> Result<()> {
        let result = (|| {
            let Some(meta) = stat(&ctx.paths.log)? else {
                slot.reset();
                return Ok(());
            };
            if slot.cursor.holds(&meta) {
                return Ok(());
            }
            if !slot.cursor.same_file(&meta) {
                slot.reset();
                slot.cursor.open(&ctx.paths.log)?;
                ctx.clean_temp_files(f)?;
            }
            read_new(ctx, slot, f)
        })();
        if result.is_err() {
            slot.reset();
        }
        result
    }
}

/// Reads the records after those the cache read, replaying them. A torn end is cut away;
/// a record that cannot be read is set aside with everything after it (their lengths
/// cannot be trusted) in `vectors/quarantine/`, and the log cut back to the records
/// before it; a log that does not start with a vector log's header is set aside whole.
fn read_new(ctx: &VectorCtx<'_>, slot: &mut VectorSlot, f: &mut Findings) -> Result<()> {
    let path = &ctx.paths.log;
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
                f.quarantine(None, &ctx.paths.dir, path, Aside::WholeFile, problem)?;
                slot.reset();
                return Ok(());
            }
        }
    }
    let scan = record::scan(&bytes[offset..], slot.cursor.lines.max(1));
    let count = scan.records.len() as u64;
    for r in scan.records {
        r.apply(&mut slot.state);
    }
    let good = offset + scan.valid_len;
    let valid = start + good as u64;
    match scan.end {
        End::Clean => {}
        End::Torn { record, reason } => {
            let detail = format!("record {record}: {reason}; truncated to the last whole record");
            f.add(RepairKind::TornTail, None, path.clone(), detail);
            truncate(ctx, file, valid, f)?;
        }
        End::Damaged { record, reason } => {
            let problem = format!(
                "record {record}: {reason}; the log keeps the {} records before it",
                slot.cursor.lines.saturating_sub(1) + count
            );
            let aside = Aside::Lines(&bytes[good..]);
            f.quarantine(None, &ctx.paths.dir, path, aside, problem)?;
            truncate(ctx, file, valid, f)?;
        }
    }
    slot.cursor.len = valid;
    slot.cursor.lines += count + u64::from(start == 0);
    Ok(())
}

/// Cuts the log back to its first `len` bytes, when fixing.
fn truncate(ctx: &VectorCtx<'_>, file: &File, len: u64, f: &Findings) -> Result<()> {
    if !f.fix {
        return Ok(());
    }
    file.set_len(len)
        .and_then(|()| file.sync_all())
        .map_err(|e| io_error(&ctx.paths.log, "cannot truncate", e))
}
