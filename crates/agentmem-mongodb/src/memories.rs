//! Memory items: one document each in `memories`, `_id` = item id, with `kind_key` (kind and
//! key) under a unique sparse index so that a keyed item replaces the earlier one.

use agentmem_core::{MemoryFilter, MemoryItem, Result};
use futures_util::TryStreamExt;
use mongodb::bson::{doc, Document};

use crate::codec::{kind_key, memory_doc, memory_from};
use crate::error::{from_driver, server_code, ResultExt, DUPLICATE_KEY};
use crate::store::{backoff, MongoMemory, TxError, MAX_RETRIES};

/// The filter document for a [`MemoryFilter`]'s kind.
pub(crate) fn kind_filter(filter: &MemoryFilter) -> Document {
    match filter.kind {
        Some(kind) => doc! {"kind": kind.as_str()},
        None => doc! {},
    }
}

impl MongoMemory {
    pub(crate) async fn put_memory_impl(&self, item: &MemoryItem) -> Result<MemoryItem> {
        let mut attempt = 0;
        loop {
            match self.try_put_memory(item).await {
                Ok(stored) => return Ok(stored),
                // Two writers inserting the same kind and key at once: the loser retries and
                // then replaces the winner's item.
                Err(TxError::Driver(e))
                    if server_code(&e) == Some(DUPLICATE_KEY) && attempt < MAX_RETRIES =>
                {
                    backoff(attempt).await;
                    attempt += 1;
                }
                Err(TxError::Driver(e)) => return Err(from_driver(e)),
                Err(TxError::Other(e)) => return Err(e),
            }
        }
    }

    async fn try_put_memory(&self, item: &MemoryItem) -> std::result::Result<MemoryItem, TxError> {
        let mut stored = item.clone();
        if let Some(kk) = kind_key(item.kind, item.key.as_deref()) {
            let existing = self.memories().find_one(doc! {"kind_key": &kk}).await?;
            if let Some(existing) = existing {
                // The keyed item keeps its id and creation time and takes everything else.
                if let (Ok(id), Ok(created)) =
                    (existing.get_str("_id"), existing.get_i64("created"))
                {
                    stored.id = id.to_string();
                    stored.created_at =
                        chrono::DateTime::from_timestamp_micros(created).unwrap_or(item.created_at);
                }
            }
        }
        let d = memory_doc(&stored)?;
        self.memories()
            .replace_one(doc! {"_id": &stored.id}, d)
            .upsert(true)
            .await?;
        if stored.id != item.id {
            // The caller's id named another item: it is replaced too, by this one.
            self.memories().delete_one(doc! {"_id": &item.id}).await?;
        }
        Ok(stored)
    }

    pub(crate) async fn get_memory_impl(&self, id: &str) -> Result<Option<MemoryItem>> {
        let found = self.memories().find_one(doc! {"_id": id}).await.mapped()?;
        found.map(|d| memory_from(&d)).transpose()
    }

    pub(crate) async fn list_memories_impl(
        &self,
        filter: &MemoryFilter,
    ) -> Result<Vec<MemoryItem>> {
        if filter.limit == Some(0) {
            return Ok(Vec::new());
        }
        let coll = self.memories();
        let query = coll.find(kind_filter(filter));
        let docs: Vec<Document> = match filter.limit {
            None => query
                .sort(doc! {"created": 1, "_id": 1})
                .await
                .mapped()?
                .try_collect()
                .await
                .mapped()?,
            Some(n) => {
                let mut docs: Vec<Document> = query
                    .sort(doc! {"created": -1, "_id": -1})
                    .limit(i64::try_from(n).unwrap_or(i64::MAX))
                    .await
                    .mapped()?
                    .try_collect()
                    .await
                    .mapped()?;
                docs.reverse();
                docs
            }
        };
        docs.iter().map(memory_from).collect()
    }

    pub(crate) async fn delete_memory_impl(&self, id: &str) -> Result<bool> {
        let result = self
            .memories()
            .delete_one(doc! {"_id": id})
            .await
            .mapped()?;
        Ok(result.deleted_count > 0)
    }
}
