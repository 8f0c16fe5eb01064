//! Memory items: `memories.jsonl`, an append log of upserts and deletions, replayed into a
//! cache and rewritten compacted (through a temporary file) when it holds much more than the
//! live items. Every function here runs on a blocking thread with the memory log's file lock
//! held (see `store.rs`).

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;

use agentmem_core::{now, Error, MemoryId, MemoryItem, Result};
use serde::{Deserialize, Serialize};

use crate::config::Durability;
use crate::fsutil::{io_error, open_append_with_id, stat, write_atomic, FileId};
use crate::layout::Layout;
use crate::log::{push_line, scan_lines};
use crate::repair::Findings;

const MEMORY_FORMAT: &str = "agentmem.memories";
const MEMORY_VERSION: u32 = 1;

/// One line of `memories.jsonl`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
enum Record {
    /// The first line.
    Header { format: String, version: u32 },
    /// The item as stored (ids and creation times already resolved): upsert by id.
    Put { item: MemoryItem },
    /// Removal by id.
    Delete { id: MemoryId },
}

/// The cached replay of the memory log. Guarded by the log's in-process mutex.
#[derive(Debug, Default)]
pub(crate) struct MemorySlot {
    pub(crate) lock_file: Option<File>,
    file: Option<(File, FileId)>,
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
        self.len = 0;
        self.lines = 0;
        self.items.clear();
        self.by_id.clear();
    }

    fn apply(&mut self, record: Record) {
        match record {
            Record::Header { .. } => {}
            Record::Put { item } => match self.by_id.get(&item.id) {
                Some(&i) => self.items[i] = item,
                None => {
                    self.by_id.insert(item.id.clone(), self.items.len());
                    self.items.push(item);
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
    /// file is the same one), truncating a torn last line.
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
        let Some((file, _)) = slot.file.as_ref() else {
            return Err(Error::backend("memory log not open"));
        };
        let end = file
            .metadata()
            .map_err(|e| io_error(path, "cannot stat", e))?
            .len();
        let start = slot.len;
        let mut bytes = vec![
            0u8;
            usize::try_from(end - start)
                .map_err(|_| Error::backend("memory log too large"))?
        ];
        file.read_exact_at(&mut bytes, start)
            .map_err(|e| io_error(path, "cannot read", e))?;
        let scan = scan_lines(&bytes, slot.lines + 1, path, false, parse_record)?;
        let valid = start + scan.valid_len as u64;
        if let Some(torn) = &scan.torn {
            f.torn_tail(None, path, file, torn, valid)?;
        }
        slot.len = valid;
        slot.lines += scan.lines;
        for record in scan.records {
            slot.apply(record);
        }
        Ok(())
    }

    fn append(&self, slot: &mut MemorySlot, record: Record) -> Result<()> {
        let path = &self.layout.memories;
        if slot.file.is_none() {
            // A new log: the header with the first record.
            self.write_whole(slot, std::slice::from_ref(&record))?;
            slot.apply(record);
            return Ok(());
        }
        let Some((file, _)) = slot.file.as_mut() else {
            return Err(Error::backend("memory log not open"));
        };
        let mut line = Vec::new();
        push_line(&mut line, &record)?;
        let start = slot.len;
        let written = file.write_all(&line).and_then(|()| {
            if self.durability == Durability::Fsync {
                file.sync_data()
            } else {
                Ok(())
            }
        });
        if let Err(e) = written {
            let _ = file.set_len(start);
            slot.reset();
            return Err(io_error(path, "cannot append to", e));
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
        let puts: Vec<Record> = slot
            .items
            .iter()
            .map(|item| Record::Put { item: item.clone() })
            .collect();
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
        slot.len = bytes.len() as u64;
        slot.lines = 1 + records.len() as u64;
        Ok(())
    }

    /// Stores `item` (see `MemoryStore::put_memory`): an item with the same id, else one with
    /// the same kind and key, is replaced, keeping its id and creation time.
    pub(crate) fn put(
        &self,
        slot: &mut MemorySlot,
        item: &MemoryItem,
        f: &mut Findings,
    ) -> Result<MemoryItem> {
        self.sync(slot, f)?;
        let mut stored = item.clone();
        let existing = slot.get(&item.id).cloned().or_else(|| {
            item.key.as_ref().and_then(|key| {
                slot.items
                    .iter()
                    .find(|i| i.kind == item.kind && i.key.as_ref() == Some(key))
                    .cloned()
            })
        });
        if let Some(old) = existing {
            stored.id = old.id;
            stored.created_at = old.created_at;
            stored.updated_at = now().max(stored.created_at);
        }
        // Keys are unique per kind: an item replaced by id may take a key another item holds.
        let shadowed: Vec<MemoryId> = match &stored.key {
            Some(key) => slot
                .items
                .iter()
                .filter(|i| {
                    i.id != stored.id && i.kind == stored.kind && i.key.as_ref() == Some(key)
                })
                .map(|i| i.id.clone())
                .collect(),
            None => Vec::new(),
        };
        for id in shadowed {
            self.append(slot, Record::Delete { id })?;
        }
        self.append(
            slot,
            Record::Put {
                item: stored.clone(),
            },
        )?;
        Ok(stored)
    }

    /// Deletes an item; `false` when it did not exist.
    pub(crate) fn delete(
        &self,
        slot: &mut MemorySlot,
        id: &MemoryId,
        f: &mut Findings,
    ) -> Result<bool> {
        self.sync(slot, f)?;
        if slot.get(id).is_none() {
            return Ok(false);
        }
        self.append(slot, Record::Delete { id: id.clone() })?;
        Ok(true)
    }
}
