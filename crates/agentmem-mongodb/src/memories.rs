//! Memory items: one document each in `memories`, `_id` = item id, with `kind_key` (kind and
//! key) under a unique sparse index so that a keyed item replaces the earlier one.

use agentmem_core::{MemoryFilter, MemoryId, MemoryItem};
use mongodb::bson::{doc, Document};

use crate::codec::{kind_key, memory_doc};
use crate::store::MongoStore;
use crate::transaction::TxError;

/// The filter document for a [`MemoryFilter`]'s kind.
pub(crate) fn kind_filter(filter: &MemoryFilter) -> Document {
    match filter.kind {
        Some(kind) => doc! {"kind": kind.as_str()},
        None => doc! {},
    }
}

impl MongoStore {
    pub(crate) async fn try_put_memory(
        &self,
        item: &MemoryItem,
    ) -> std::result::Result<MemoryItem, TxError> {
        let mut stored = item.clone();
        if let Some(kk) = kind_key(item.kind, item.key.as_deref()) {
            let existing = self.memories().find_one(doc! {"kind_key": &kk}).await?;
            if let Some(existing) = existing {
                // The keyed item keeps its id and creation time and takes everything else.
                if let (Ok(id), Ok(created)) =
                    (existing.get_str("_id"), existing.get_i64("created"))
                {
                    stored.id = MemoryId::new(id).map_err(|e| {
                        agentmem_core::Error::corrupt(format!("stored memory id: {e}"))
                    })?;
                    stored.created_at =
                        chrono::DateTime::from_timestamp_micros(created).unwrap_or(item.created_at);
                }
            }
        }
        let d = memory_doc(&stored)?;
        self.memories()
            .replace_one(doc! {"_id": stored.id.as_str()}, d)
            .upsert(true)
            .await?;
        if stored.id != item.id {
            // The caller's id named another item: it is replaced too, by this one.
            self.memories()
                .delete_one(doc! {"_id": item.id.as_str()})
                .await?;
        }
        Ok(stored)
    }
}
