//! Memory items (upsert by id and by (kind, key), listing, ranked search): what the scripts
//! are given and how their replies are read back. The operations themselves are the
//! `AgentMemory` methods in `store.rs`.

use agentmem_core::support::{keep_last, micros, parse_micros};
use agentmem_core::{Error, MemoryHit, MemoryItem, Result};
use chrono::{DateTime, Utc};
use redis::{Script, ScriptInvocation};

use crate::error::{corrupt_json, encode_json};
use crate::keys::Keys;
use crate::search::parse_score;

/// How often `put_memory` re-targets its item (see `put_memory.lua`) before giving up.
/// Each retry means another writer changed the same item in between; one is the normal case.
pub(crate) const MAX_REBASES: usize = 8;

pub(crate) fn parse_item(bytes: &[u8]) -> Result<MemoryItem> {
    serde_json::from_slice(bytes).map_err(|e| corrupt_json("memory item", e))
}

/// An invocation of `put_memory.lua` storing `item`, whose text has the index entry `index`.
pub(crate) fn put_item<'s>(
    script: &'s Script,
    keys: &Keys,
    item: &MemoryItem,
    index: &str,
) -> Result<ScriptInvocation<'s>> {
    let json = serde_json::to_string(item).map_err(|e| encode_json("a memory item", e))?;
    let mut inv = script.prepare_invoke();
    inv.arg(keys.prefix())
        .arg(item.id.as_str())
        .arg(item.kind.as_str())
        .arg(item.key.as_deref().unwrap_or(""))
        .arg(micros(item.created_at))
        .arg(json)
        .arg(index);
    Ok(inv)
}

/// Reads `put_memory.lua`'s reply: `None` when the item was stored, else the id and creation
/// time of the existing item it replaces, which it must take before trying again.
pub(crate) fn rebase(reply: &[String]) -> Result<Option<(String, DateTime<Utc>)>> {
    match reply {
        [ok] if ok == "ok" => Ok(None),
        [rebase, id, created] if rebase == "rebase" => Ok(Some((
            id.clone(),
            parse_micros(created, "memory creation time")?,
        ))),
        other => Err(Error::corrupt(format!(
            "unexpected reply {other:?} from the put_memory script"
        ))),
    }
}

/// The items `list_memories.lua` returns (id, insertion order, JSON): oldest first, only the
/// newest `limit` when limited.
pub(crate) fn items_from(
    rows: Vec<(String, f64, Option<Vec<u8>>)>,
    limit: Option<usize>,
) -> Result<Vec<MemoryItem>> {
    let mut items = rows
        .into_iter()
        .map(|(id, seq, raw)| {
            let raw = raw.ok_or_else(|| {
                Error::corrupt(format!("memory item {id:?} is indexed but missing"))
            })?;
            Ok((parse_item(&raw)?, seq))
        })
        .collect::<Result<Vec<_>>>()?;
    // Oldest first; items created in the same microsecond keep their insertion order.
    items.sort_by(|a, b| {
        a.0.created_at
            .cmp(&b.0.created_at)
            .then(a.1.total_cmp(&b.1))
    });
    let mut items: Vec<MemoryItem> = items.into_iter().map(|(item, _)| item).collect();
    keep_last(&mut items, limit);
    Ok(items)
}

/// The hits `search_memories.lua` returns (item JSON, score), best first.
pub(crate) fn memory_hits(rows: Vec<(Option<Vec<u8>>, String)>) -> Result<Vec<MemoryHit>> {
    rows.into_iter()
        .map(|(raw, score)| {
            let raw =
                raw.ok_or_else(|| Error::corrupt("search index points to a missing memory item"))?;
            Ok(MemoryHit {
                item: parse_item(&raw)?,
                score: parse_score(&score)?,
            })
        })
        .collect()
}
