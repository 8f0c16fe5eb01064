//! Memory items: `memories.jsonl`, an append log of upserts and deletions, replayed into a
//! cache and rewritten compacted (through a temporary file) when it holds much more than the
//! live items. Every function here runs on a blocking thread with the memory log's file lock
//! held (see `locking.rs`).

use std::collections::HashMap;
use std::fs::File;

use agentmem_core::support::memory_is_purged;
use agentmem_core::{now, Error, ErrorKind, MemoryId, MemoryItem, Result};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::config::Durability;
use crate::fsutil::{open_append_with_id, stat, write_atomic, FileId};
use crate::layout::Layout;
use crate::log::{append_line, push_line, read_tail, BadLine, Scan, Tail};
use crate::repair::{Aside, Findings};

const MEMORY_FORMAT: &str = "agentmem.memories";
/// 2: items carry a scope and an expiry time. A version-1 reader would take scoped items for
/// global ones, so a version-1 log is rewritten as version 2 before its first new record.
const MEMORY_VERSION: u32 = 2;

/// One line of `memories.jsonl`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
enum Record {
    /// The first line.
    Header { format: String, version: u32 },
    /// The item as stored (ids and creation times already resolved): upsert by id.
    Put { item: Box<MemoryItem> },
    /// Removal by id.
    Delete { id: MemoryId },
}

/// The cached replay of the memory log. Guarded by the log's in-process mutex.
#[derive(Debug, Default)]
pub(crate) struct MemorySlot {
    pub(crate) lock_file: Option<File>,
    file: Option<(File, FileId)>,
    /// The version in the open log's header.
    version: u32,
    len: u64,
    lines: u64,
    /// Live items in first-stored order (replacement keeps the place).
    items: Vec<MemoryItem>,
    by_id: HashMap<MemoryId, usize>,
}

impl MemorySlot {
    /// The live items, in first-stored order.
    pub(crate) fn items(&self) -> &[MemoryItem] {
        &self.items
    }

    pub(crate) fn get(&self, id: &str) -> Option<&MemoryItem> {
        self.by_id.get(id).map(|&i| &self.items[i])
    }

    fn reset(&mut self) {
        self.file = None;
        self.version = 0;
        self.len = 0;
        self.lines = 0;
        self.items.clear();
        self.by_id.clear();
    }

    fn apply(&mut self, record: Record) {
        match record {
            Record::Header { version, .. } => self.version = version,
            Record::Put { item } => match self.by_id.get(&item.id) {
                Some(&i) => self.items[i] = *item,
                None => {
                    self.by_id.insert(item.id.clone(), self.items.len());
                    self.items.push(*item);
                }
            },
            Record::Delete { id } => {
                if let Some(i) = self.by_id.remove(&id) {
                    self.items.remove(i);
                    for index in self.by_id.values_mut() {
                        if *index > i {
                            *index -= 1;
                        }
                    }
                }
            }
        }
    }
}

/// Operations on the memory log.
pub(crate) struct MemoryCtx<'a> {
    pub(crate) layout: &'a Layout,
    pub(crate) durability: Durability,
}

/// A put of every live item, to rewrite the log with.
fn live_records(slot: &MemorySlot) -> Vec<Record> {
    slot.items
        .iter()
        .map(|item| Record::Put {
            item: Box::new(item.clone()),
        })
        .collect()
}

/// `Unsupported` when the log `bytes` start with the header of a newer version: its lines are
/// not unreadable, only unknown to this build, so none of them is set aside.
fn refuse_newer(bytes: &[u8], path: &std::path::Path) -> Result<()> {
    crate::log::refuse_newer_header(bytes, path, MEMORY_VERSION)
}

fn parse_record(line: u64, bytes: &[u8]) -> std::result::Result<Record, String> {
    let record: Record =
        serde_json::from_slice(bytes).map_err(|e| format!("not a memory record: {e}"))?;
    match (&record, line) {
        (Record::Header { format, version }, 1) => {
            if format != MEMORY_FORMAT {
                return Err(format!("not a memory log (format {format:?})"));
            }
            if *version > MEMORY_VERSION {
                return Err(format!(
                    "memory log version {version} is newer than this agentmem understands"
                ));
            }
        }
        (Record::Header { .. }, _) => return Err("a header in the middle of the log".into()),
        (_, 1) => return Err("the log does not start with a header".into()),
        _ => {}
    }
    Ok(record)
}

impl MemoryCtx<'_> {
    /// Brings the cache up to date with the file (reading only what others appended when the
    /// file is the same one), truncating a torn last line. Complete lines that do not parse
    /// are set aside in the root's `quarantine/` and the log rewritten from its readable
    /// records (see [`quarantine`](Self::quarantine)).
    pub(crate) fn sync(&self, slot: &mut MemorySlot, f: &mut Findings) -> Result<()> {
        let result = self.sync_inner(slot, f);
        if result.is_err() {
            slot.reset();
        }
        result
    }

    fn sync_inner(&self, slot: &mut MemorySlot, f: &mut Findings) -> Result<()> {
        let path = &self.layout.memories;
        let Some(meta) = stat(path)? else {
            slot.reset();
            return Ok(());
        };
        let id = FileId::of(&meta);
        let same = slot.file.as_ref().is_some_and(|(_, fid)| *fid == id);
        if same && meta.len() == slot.len {
            return Ok(());
        }
        if !same || meta.len() < slot.len {
            slot.reset();
            slot.file = Some(open_append_with_id(path)?);
        }
        match self.read_new(slot, f) {
            // A whole appended line that does not parse: read the log afresh, which sets it
            // aside.
            Err(e) if e.kind() == ErrorKind::CorruptData && slot.len > 0 => {
                slot.reset();
                slot.file = Some(open_append_with_id(path)?);
                self.read_new(slot, f)
            }
            read => read,
        }
    }

    /// Reads the records after the `slot.len` bytes already read (all of them when none were).
    fn read_new(&self, slot: &mut MemorySlot, f: &mut Findings) -> Result<()> {
        let path = &self.layout.memories;
        let Some((file, _)) = slot.file.as_ref() else {
            return Err(Error::backend("memory log not open"));
        };
        let keep_bad = slot.len == 0;
        let tail = read_tail(
            file,
            path,
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
                    slot.apply(record);
                }
                Ok(())
            }
        }
    }

    /// Sets the complete lines of the whole log `bytes` that do not parse (and a first line
    /// cut off) aside, byte for byte, in the root's `quarantine/`, then rewrites the log as a
    /// header and the live items of its readable records (a torn tail goes with them: it was
    /// never acknowledged). A deletion among the set-aside lines no longer applies, so its
    /// item is kept: nothing acknowledged is lost.
    fn quarantine(
        &self,
        slot: &mut MemorySlot,
        bytes: &[u8],
        scan: Scan<Record>,
        f: &mut Findings,
    ) -> Result<()> {
        let path = &self.layout.memories;
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
        let root = &self.layout.root;
        f.quarantine(None, root, path, Aside::Lines(&kept), problem)?;
        for record in scan.records {
            slot.apply(record);
        }
        self.write_whole(slot, &live_records(slot))
    }

    fn append(&self, slot: &mut MemorySlot, record: Record) -> Result<()> {
        let path = &self.layout.memories;
        if slot.file.is_none() || slot.version < MEMORY_VERSION {
            // A new log, or one an older reader could misread: the header with the live items
            // and the record, in one rename.
            let mut records = live_records(slot);
            records.push(record);
            self.write_whole(slot, &records)?;
            if let Some(record) = records.pop() {
                slot.apply(record);
            }
            return Ok(());
        }
        let Some((file, _)) = slot.file.as_mut() else {
            return Err(Error::backend("memory log not open"));
        };
        let mut line = Vec::new();
        push_line(&mut line, &record)?;
        if let Err(e) = append_line(file, path, slot.len, &line, self.durability) {
            slot.reset();
            return Err(e);
        }
        slot.len += line.len() as u64;
        slot.lines += 1;
        slot.apply(record);
        // The record is written and acknowledged; a failed compaction only leaves the log
        // longer, so it is logged rather than reported as a failure of this write.
        if let Err(e) = self.maybe_compact(slot) {
            tracing::warn!(error = %e, "cannot compact the memory log; will retry on a later write");
            slot.reset();
        }
        Ok(())
    }

    /// Rewrites the log as header + live items when it holds many dead records.
    fn maybe_compact(&self, slot: &mut MemorySlot) -> Result<()> {
        let live = slot.items.len() as u64;
        if slot.lines <= 2 * live + 64 {
            return Ok(());
        }
        let puts = live_records(slot);
        self.write_whole(slot, &puts)
    }

    /// Replaces the log, whole, by a rename, with a header and `records`, and opens the new
    /// file. The cached items are left as they are.
    fn write_whole(&self, slot: &mut MemorySlot, records: &[Record]) -> Result<()> {
        let path = &self.layout.memories;
        let mut bytes = Vec::new();
        push_line(
            &mut bytes,
            &Record::Header {
                format: MEMORY_FORMAT.into(),
                version: MEMORY_VERSION,
            },
        )?;
        for record in records {
            push_line(&mut bytes, record)?;
        }
        write_atomic(&self.layout.root, path, &bytes)?;
        slot.file = Some(open_append_with_id(path)?);
        slot.version = MEMORY_VERSION;
        slot.len = bytes.len() as u64;
        slot.lines = 1 + records.len() as u64;
        Ok(())
    }

    /// Stores `item` (see `MemoryStore::put_memory`): a live item with the same id, else one
    /// with the same scope, kind and key, is replaced, keeping its id and creation time.
    pub(crate) fn put(&self, slot: &mut MemorySlot, item: &MemoryItem) -> Result<MemoryItem> {
        let at = now();
        let mut stored = item.clone();
        // An expired item is gone: nothing takes over its id or creation time.
        let existing = slot
            .get(&item.id)
            .filter(|i| !i.is_expired_at(at))
            .or_else(|| {
                slot.items
                    .iter()
                    .find(|i| item.shares_key_with(i) && !i.is_expired_at(at))
            })
            .cloned();
        if let Some(old) = existing {
            stored.id = old.id;
            stored.created_at = old.created_at;
            stored.updated_at = at.max(stored.created_at);
        }
        // Keys are unique per scope and kind: an item replaced by id may take a key another
        // (live or expired) item holds.
        self.delete_where(slot, |i| i.id != stored.id && stored.shares_key_with(i))?;
        self.append(
            slot,
            Record::Put {
                item: Box::new(stored.clone()),
            },
        )?;
        Ok(stored)
    }

    /// Deletes the items a purge at `now` with the memory cutoff `cutoff` deletes (see
    /// `support::memory_is_purged`), returning how many.
    pub(crate) fn purge(
        &self,
        slot: &mut MemorySlot,
        cutoff: Option<DateTime<Utc>>,
    ) -> Result<u64> {
        let at = now();
        self.delete_where(slot, |i| memory_is_purged(i, cutoff, at))
    }

    /// Deletes every item `doomed` picks (one delete record each), returning how many.
    fn delete_where(
        &self,
        slot: &mut MemorySlot,
        doomed: impl Fn(&MemoryItem) -> bool,
    ) -> Result<u64> {
        let ids: Vec<MemoryId> = slot
            .items
            .iter()
            .filter(|i| doomed(i))
            .map(|i| i.id.clone())
            .collect();
        for id in &ids {
            self.append(slot, Record::Delete { id: id.clone() })?;
        }
        Ok(ids.len() as u64)
    }

    /// Deletes an item; `false` when it did not exist.
    pub(crate) fn delete(&self, slot: &mut MemorySlot, id: &MemoryId) -> Result<bool> {
        if slot.get(id).is_none() {
            return Ok(false);
        }
        self.append(slot, Record::Delete { id: id.clone() })?;
        Ok(true)
    }
}
