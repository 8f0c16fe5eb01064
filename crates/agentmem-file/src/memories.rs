//! Memory items: `memories.jsonl`, an append log of upserts and deletions, replayed into a
//! cache and rewritten compacted (through a temporary file) when it holds much more than the
//! live items. Every function here runs on a blocking thread with the memory log's file lock
//! held (see `locking.rs`).

use std::collections::HashMap;
use std::fs::File;

use agentmem_core::search::{rank_terms, DocumentTerms};
use agentmem_core::support::{memory_is_purged, memory_search_limit, search_terms};
use agentmem_core::{now, MemoryFilter, MemoryHit, MemoryId, MemoryItem, Result};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::config::Durability;
use crate::cursor::{read_records, sync_log, Damage, LogCache, LogCursor};
use crate::layout::Layout;
use crate::log::{push_line, HeadedLog, HeadedRecord};
use crate::repair::Findings;

/// The memory log: the header this build writes (the newest version it reads), and what its
/// messages call it. Version 2: items carry a scope and an expiry time. A version-1 reader
/// would take scoped items for global ones, so a version-1 log is rewritten as version 2
/// before its first new record.
const MEMORY_KIND: HeadedLog = HeadedLog {
    kind: "memory",
    name: "memory log",
    format: "agentmem.memories",
    version: 2,
};

/// One line of `memories.jsonl`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum Record {
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
    /// How far the log was read.
    cursor: LogCursor,
    /// The version in the open log's header.
    version: u32,
    /// Live items in first-stored order (replacement keeps the place).
    items: Vec<MemoryItem>,
    /// Each item's search terms (same order as `items`), counted by the first search that
    /// needed them and forgotten when the item is replaced: a search tokenizes and stems only
    /// the items new since the last one. Memory: 40 bytes an item, and for an item searched
    /// the bytes of its distinct terms and 8 bytes a distinct term (see [`DocumentTerms`]).
    terms: Vec<Option<DocumentTerms>>,
    by_id: HashMap<MemoryId, usize>,
    /// Changes whenever `items` may have changed: a record applied, the cache forgotten (see
    /// `MemoryStore::memory_revision`). Never goes back, not even on a reset.
    revision: u64,
}

impl MemorySlot {
    /// The live items, in first-stored order.
    pub(crate) fn items(&self) -> &[MemoryItem] {
        &self.items
    }

    pub(crate) fn get(&self, id: &str) -> Option<&MemoryItem> {
        self.by_id.get(id).map(|&i| &self.items[i])
    }

    /// A number that changes whenever the live items may have changed (compare it only with
    /// earlier ones of this slot).
    pub(crate) fn revision(&self) -> u64 {
        self.revision
    }

    /// The live items that `filter` passes (kind, scope, not expired) and that match `query`,
    /// best first: exactly what `support::rank_memories` over [`items`](Self::items) answers,
    /// from the cached terms (counting those of the items not searched yet).
    pub(crate) fn search(&mut self, query: &str, filter: &MemoryFilter) -> Vec<MemoryHit> {
        let limit = memory_search_limit(filter);
        if search_terms(query, limit).is_none() {
            return Vec::new();
        }
        let at = now();
        let mut candidates = Vec::new();
        let mut docs = Vec::new();
        for (item, terms) in self.items.iter().zip(self.terms.iter_mut()) {
            if filter.matches(item, at) {
                candidates.push(item);
                docs.push(&*terms.get_or_insert_with(|| DocumentTerms::of(&item.text)));
            }
        }
        rank_terms(query, docs, limit)
            .into_iter()
            .map(|(index, score)| MemoryHit {
                item: candidates[index].clone(),
                score,
            })
            .collect()
    }
}

impl LogCache for MemorySlot {
    type Record = Record;

    fn cursor(&mut self) -> &mut LogCursor {
        &mut self.cursor
    }

    fn reset(&mut self) {
        self.cursor = LogCursor::default();
        self.version = 0;
        if !self.items.is_empty() {
            self.revision += 1;
        }
        self.items.clear();
        self.terms.clear();
        self.by_id.clear();
    }

    fn apply(&mut self, record: Record) {
        match record {
            Record::Header { version, .. } => self.version = version,
            Record::Put { item } => {
                self.revision += 1;
                match self.by_id.get(&item.id) {
                    Some(&i) => {
                        self.items[i] = *item;
                        self.terms[i] = None;
                    }
                    None => {
                        self.by_id.insert(item.id.clone(), self.items.len());
                        self.items.push(*item);
                        self.terms.push(None);
                    }
                }
            }
            Record::Delete { id } => {
                if let Some(i) = self.by_id.remove(&id) {
                    self.revision += 1;
                    self.items.remove(i);
                    self.terms.remove(i);
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

impl HeadedRecord for Record {
    fn header(&self) -> Option<(&str, u32)> {
        match self {
            Record::Header { format, version } => Some((format, *version)),
            _ => None,
        }
    }
}

impl MemoryCtx<'_> {
    /// Brings the cache up to date with the file (reading only what others appended when the
    /// file is the same one), truncating a torn last line. Complete lines that do not parse
    /// are set aside in the root's `quarantine/` and the log rewritten from its readable
    /// records (see [`quarantine`](Self::quarantine)).
    pub(crate) fn sync(&self, slot: &mut MemorySlot, f: &mut Findings) -> Result<()> {
        let path = &self.layout.memories;
        sync_log(
            slot,
            path,
            f,
            |_| Ok(()),
            |slot, f| {
                let keep_bad = slot.cursor.len == 0;
                read_records(slot, path, &MEMORY_KIND, keep_bad, f, |slot, damage, f| {
                    self.quarantine(slot, damage, f)
                })
            },
        )
    }

    /// Sets the complete lines of the whole log that do not parse (and a first line cut off)
    /// aside, byte for byte, in the root's `quarantine/`, then rewrites the log as a header and
    /// the live items of its readable records (a torn tail goes with them: it was never
    /// acknowledged). A deletion among the set-aside lines no longer applies, so its item is
    /// kept: nothing acknowledged is lost.
    fn quarantine(
        &self, slot: &mut MemorySlot, damage: Damage<Record>, f: &mut Findings,
    ) -> Result<()> {
        damage.keep_readable(slot, &self.layout.root, &self.layout.memories, f)?;
        self.write_whole(slot, &live_records(slot))
    }

    fn append(&self, slot: &mut MemorySlot, record: Record) -> Result<()> {
        let path = &self.layout.memories;
        if !slot.cursor.is_open() || slot.version < MEMORY_KIND.version {
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
        let mut line = Vec::new();
        push_line(&mut line, &record)?;
        if let Err(e) = slot.cursor.append(path, &line, self.durability) {
            slot.reset();
            return Err(e);
        }
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
        if slot.cursor.lines <= 2 * live + 64 {
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
                format: MEMORY_KIND.format.into(),
                version: MEMORY_KIND.version,
            },
        )?;
        for record in records {
            push_line(&mut bytes, record)?;
        }
        let lines = 1 + records.len() as u64;
        slot.cursor
            .replace(&self.layout.root, path, &bytes, lines)?;
        slot.version = MEMORY_KIND.version;
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
        // (live or expired) item holds. An item without a key takes none, so its put does not
        // scan the items (at 100,000 items, comparing every id made each put cost 1 ms).
        if stored.key.is_some() {
            self.delete_where(slot, |i| stored.shares_key_with(i) && i.id != stored.id)?;
        }
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
        &self, slot: &mut MemorySlot, cutoff: Option<DateTime<Utc>>,
    ) -> Result<u64> {
        let at = now();
        self.delete_where(slot, |i| memory_is_purged(i, cutoff, at))
    }

    /// Deletes every item `doomed` picks (one delete record each), returning how many.
    fn delete_where(
        &self, slot: &mut MemorySlot, doomed: impl Fn(&MemoryItem) -> bool,
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
