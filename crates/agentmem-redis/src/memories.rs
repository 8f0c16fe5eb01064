//! Memory items: upsert by id and by (kind, key), listing, ranked search.

use agentmem_core::{Error, MemoryFilter, MemoryHit, MemoryItem, Result};
use redis::aio::ConnectionManager;

use crate::error::{corrupt_json, encode_json};
use crate::search::{index_entry, parse_score, query_terms};
use crate::sessions::{micros, parse_micros};
use crate::store::RedisMemory;

/// How many hits a memory search returns when the filter sets no limit.
const DEFAULT_SEARCH_LIMIT: usize = 10;

/// How often `put_memory` re-targets its item (see `put_memory.lua`) before giving up.
/// Each retry means another writer changed the same item in between; one is the normal case.
const MAX_REBASES: usize = 8;

fn parse_item(bytes: &[u8]) -> Result<MemoryItem> {
    serde_json::from_slice(bytes).map_err(|e| corrupt_json("memory item", e))
}

impl RedisMemory {
    pub(crate) async fn put_memory_impl(&self, item: &MemoryItem) -> Result<MemoryItem> {
        let index = index_entry(&item.text).to_string();
        let mut stored = item.clone();
        for _ in 0..MAX_REBASES {
            let json =
                serde_json::to_string(&stored).map_err(|e| encode_json("a memory item", e))?;
            let mut inv = self.scripts.put_memory.prepare_invoke();
            inv.arg(self.keys.prefix())
                .arg(&stored.id)
                .arg(stored.kind.as_str())
                .arg(stored.key.as_deref().unwrap_or(""))
                .arg(micros(stored.created_at))
                .arg(json)
                .arg(&index);
            let reply: Vec<String> = self
                .run(|mut c: ConnectionManager| {
                    let inv = &inv;
                    async move { inv.invoke_async(&mut c).await }
                })
                .await?;
            match reply.as_slice() {
                [ok] if ok == "ok" => return Ok(stored),
                [rebase, id, created] if rebase == "rebase" => {
                    // Replacing an existing item: keep its id and creation time.
                    stored.id = id.clone();
                    stored.created_at = parse_micros(created, "memory creation time")?;
                }
                other => {
                    return Err(Error::corrupt(format!(
                        "unexpected reply {other:?} from the put_memory script"
                    )))
                }
            }
        }
        Err(Error::conflict(format!(
            "memory item {:?} kept changing under concurrent writers; try again",
            item.id
        )))
    }

    pub(crate) async fn get_memory_impl(&self, id: &str) -> Result<Option<MemoryItem>> {
        let key = self.keys.memory_items();
        let raw: Option<Vec<u8>> = self
            .run(|mut c: ConnectionManager| {
                let key = &key;
                async move {
                    redis::cmd("HGET")
                        .arg(key)
                        .arg(id)
                        .query_async(&mut c)
                        .await
                }
            })
            .await?;
        raw.map(|bytes| parse_item(&bytes)).transpose()
    }

    pub(crate) async fn list_memories_impl(
        &self,
        filter: &MemoryFilter,
    ) -> Result<Vec<MemoryItem>> {
        let mut inv = self.scripts.list_memories.prepare_invoke();
        inv.arg(self.keys.prefix())
            .arg(filter.kind.map_or("", |k| k.as_str()));
        let rows: Vec<(String, f64, Option<Vec<u8>>)> = self
            .run(|mut c: ConnectionManager| {
                let inv = &inv;
                async move { inv.invoke_async(&mut c).await }
            })
            .await?;
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
        if let Some(limit) = filter.limit {
            items.drain(..items.len().saturating_sub(limit));
        }
        Ok(items)
    }

    pub(crate) async fn search_memories_impl(
        &self,
        query: &str,
        filter: &MemoryFilter,
    ) -> Result<Vec<MemoryHit>> {
        let terms = query_terms(query);
        let limit = filter.limit.unwrap_or(DEFAULT_SEARCH_LIMIT);
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let mut inv = self.scripts.search_memories.prepare_invoke();
        inv.arg(self.keys.prefix())
            .arg(filter.kind.map_or("", |k| k.as_str()))
            .arg(limit.min(u32::MAX as usize));
        for term in &terms {
            inv.arg(term);
        }
        let rows: Vec<(Option<Vec<u8>>, String)> = self
            .run(|mut c: ConnectionManager| {
                let inv = &inv;
                async move { inv.invoke_async(&mut c).await }
            })
            .await?;
        rows.into_iter()
            .map(|(raw, score)| {
                let raw = raw.ok_or_else(|| {
                    Error::corrupt("search index points to a missing memory item")
                })?;
                Ok(MemoryHit {
                    item: parse_item(&raw)?,
                    score: parse_score(&score).ok_or_else(|| {
                        Error::corrupt(format!("search score {score:?} is not a number"))
                    })?,
                })
            })
            .collect()
    }

    pub(crate) async fn delete_memory_impl(&self, id: &str) -> Result<bool> {
        let mut inv = self.scripts.delete_memory.prepare_invoke();
        inv.arg(self.keys.prefix()).arg(id);
        let deleted: i64 = self
            .run(|mut c: ConnectionManager| {
                let inv = &inv;
                async move { inv.invoke_async(&mut c).await }
            })
            .await?;
        Ok(deleted == 1)
    }
}
