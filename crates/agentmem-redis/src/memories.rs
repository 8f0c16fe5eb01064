//! Memory items (upsert by id and by (scope, kind, key), listing and ranked search within
//! scopes, expiry, purging): what the scripts are given and how their replies are read back.
//! The operations themselves are the `AgentMemory` methods in `store.rs`.

use agentmem_core::support::{keep_last, micros, parse_micros};
use agentmem_core::{Error, MemoryFilter, MemoryHit, MemoryItem, MemoryKind, Result};
use chrono::{DateTime, Utc};
use redis::{Script, ScriptInvocation};

use crate::error::{corrupt_json, encode_json};
use crate::keys::Keys;
use crate::search::parse_score;

/// How often `put_memory` re-targets its item (see `put_memory.lua`) before giving up.
/// Each retry means another writer changed the same item in between; one is the normal case.
pub(crate) const MAX_REBASES: usize = 8;

/// How many memory items one `purge_memories.lua` call deletes at most.
pub(crate) const PURGE_MEMORY_BATCH: usize = 128;

pub(crate) fn parse_item(bytes: &[u8]) -> Result<MemoryItem> {
    serde_json::from_slice(bytes).map_err(|e| corrupt_json("memory item", e))
}

/// A time in microseconds, rounded up. Stored expiry times and the purge's cutoff are rounded
/// up so the scripts' comparisons with whole microseconds agree exactly with agentmem-core's:
/// for an integer `n`, `t <= n` exactly when `up(t) <= n`, and `n < t` exactly when `n < up(t)`
/// (`now` and stored update times are whole microseconds: `agentmem_core::now` gives them).
pub(crate) fn micros_up(at: DateTime<Utc>) -> i64 {
    let floor = micros(at);
    if at.timestamp_subsec_nanos().is_multiple_of(1_000) {
        floor
    } else {
        floor.saturating_add(1)
    }
}

/// An invocation of `put_memory.lua` storing `item` at `now`, whose text has the index entry
/// `index`.
pub(crate) fn put_item<'s>(
    script: &'s Script, keys: &Keys, item: &MemoryItem, index: &str, now: DateTime<Utc>,
) -> Result<ScriptInvocation<'s>> {
    let json = serde_json::to_string(item).map_err(|e| encode_json("a memory item", e))?;
    let mut inv = keys.invoke(script);
    inv.arg(item.id.as_str())
        .arg(item.kind.as_str())
        .arg(item.scope.stored_form())
        .arg(item.key.as_deref().unwrap_or(""))
        .arg(micros(item.created_at))
        .arg(micros(item.updated_at))
        .arg(
            item.expires_at
                .map(|at| micros_up(at).to_string())
                .unwrap_or_default(),
        )
        .arg(micros(now))
        .arg(json)
        .arg(index);
    Ok(inv)
}

/// Adds the scope selection of `filter` as the scripts read it (`read_scopes` in
/// `memory.lua`): `''` for every scope, else the count of stored forms and the forms.
fn scope_args(inv: &mut ScriptInvocation<'_>, filter: &MemoryFilter) {
    match filter.scope.stored_forms() {
        None => {
            inv.arg("");
        }
        Some(forms) => {
            inv.arg(forms.len()).arg(forms);
        }
    }
}

/// An invocation of `list_memories.lua` for the items `filter` selects at `now` (its limit
/// is applied by [`items_from`]).
pub(crate) fn list_items<'s>(
    script: &'s Script, keys: &Keys, filter: &MemoryFilter, now: DateTime<Utc>,
) -> ScriptInvocation<'s> {
    let mut inv = keys.invoke(script);
    inv.arg(filter.kind.map_or("", MemoryKind::as_str))
        .arg(micros(now));
    scope_args(&mut inv, filter);
    inv
}

/// An invocation of `search_memories.lua`: the best `limit` items `filter` selects at `now`
/// for the query terms `terms` (stemmed, see `search_terms`).
pub(crate) fn search_items<'s>(
    script: &'s Script, keys: &Keys, filter: &MemoryFilter, limit: usize, now: DateTime<Utc>,
    terms: Vec<String>,
) -> ScriptInvocation<'s> {
    let kinds: Vec<&str> = match filter.kind {
        Some(kind) => vec![kind.as_str()],
        None => MemoryKind::ALL.iter().map(|k| k.as_str()).collect(),
    };
    let mut inv = keys.invoke(script);
    inv.arg(kinds.join(" "))
        .arg(limit.min(u32::MAX as usize))
        .arg(micros(now));
    scope_args(&mut inv, filter);
    inv.arg(terms);
    inv
}

/// An invocation of `purge_memories.lua` deleting one batch of the items expired at `now`
/// or, with a `cutoff`, last updated before it.
pub(crate) fn purge_items<'s>(
    script: &'s Script, keys: &Keys, now: DateTime<Utc>, cutoff: Option<DateTime<Utc>>,
) -> ScriptInvocation<'s> {
    let mut inv = keys.invoke(script);
    inv.arg(micros(now))
        .arg(cutoff.map(|t| micros_up(t).to_string()).unwrap_or_default())
        .arg(PURGE_MEMORY_BATCH);
    inv
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

/// The items `list_memories.lua` returns (id, insertion order, JSON), already filtered by
/// kind, scope and expiry: oldest first, only the newest `limit` when limited.
pub(crate) fn items_from(
    rows: Vec<(String, f64, Option<Vec<u8>>)>, limit: Option<usize>,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_up_to_the_microsecond() {
        let whole = DateTime::from_timestamp(1_700_000_000, 123_456_000).expect("a time");
        assert_eq!(micros_up(whole), micros(whole));
        let finer = DateTime::from_timestamp(1_700_000_000, 123_456_001).expect("a time");
        assert_eq!(micros_up(finer), micros(whole) + 1);
        let before_1970 = DateTime::from_timestamp(-2, 999_999_999).expect("a time");
        assert_eq!(micros_up(before_1970), -1_000_000);
        for t in [whole, finer, before_1970] {
            let now = DateTime::from_timestamp_micros(micros_up(t)).expect("a time");
            let earlier = DateTime::from_timestamp_micros(micros_up(t) - 1).expect("a time");
            assert!(t <= now && t > earlier, "{t}");
        }
    }
}
