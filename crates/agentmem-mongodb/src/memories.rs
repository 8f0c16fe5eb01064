//! Memory items: one document each in `memories`, `_id` = item id, with `scope` (the scope's
//! stored form, `""` for the global scope), `expires` (when set) and `kind_key` (kind and key,
//! when keyed) under a unique index on (`scope`, `kind_key`), so that a keyed item replaces
//! the earlier one of its scope and kind.

use agentmem_core::support::micros;
use agentmem_core::{now, MemoryFilter, MemoryId, MemoryItem};
use mongodb::bson::{doc, Bson, Document};

use crate::codec::{kind_key, memory_doc};
use crate::store::MongoStore;
use crate::transaction::TxError;

/// The filter document for a [`MemoryFilter`]: [`memory_selection`] and [`unexpired`].
pub(crate) fn memory_filter(filter: &MemoryFilter, at: i64) -> Document {
    let mut d = memory_selection(filter);
    d.extend(unexpired(at));
    d
}

/// The filter document for a [`MemoryFilter`]'s kind and scopes (`scope` in the stored forms
/// it selects; a document without `scope`, which reads as global, where the global scope is
/// selected). Plain field conditions only, which every server combines with `$text`.
pub(crate) fn memory_selection(filter: &MemoryFilter) -> Document {
    let mut d = doc! {};
    if let Some(kind) = filter.kind {
        d.insert("kind", kind.as_str());
    }
    if let Some(forms) = filter.scope.stored_forms() {
        let mut selected: Vec<Bson> = Vec::with_capacity(forms.len() + 1);
        if forms.iter().any(String::is_empty) {
            // Matches a missing field too (written before schema version 2).
            selected.push(Bson::Null);
        }
        selected.extend(forms.into_iter().map(Bson::String));
        d.insert("scope", doc! {"$in": selected});
    }
    d
}

/// The filter document for items not expired at `at` (microseconds): any of
/// [`unexpired_alternatives`].
pub(crate) fn unexpired(at: i64) -> Document {
    doc! {"$or": unexpired_alternatives(at).to_vec()}
}

/// The two disjoint ways an item is not expired at `at` (microseconds): no `expires` (`null`
/// matches an absent field), or a later one.
pub(crate) fn unexpired_alternatives(at: i64) -> [Document; 2] {
    [doc! {"expires": Bson::Null}, doc! {"expires": {"$gt": at}}]
}

impl MongoStore {
    pub(crate) async fn try_put_memory(
        &self, item: &MemoryItem,
    ) -> std::result::Result<MemoryItem, TxError> {
        let mut stored = item.clone();
        if let Some(kk) = kind_key(item.kind, item.key.as_deref()) {
            let scope = item.scope.stored_form();
            // An expired item holding the key is gone: deleted first, so that this item does
            // not take over its id and creation time.
            self.memories()
                .delete_many(
                    doc! {"scope": &scope, "kind_key": &kk, "expires": {"$lte": micros(now())}},
                )
                .await?;
            let existing = self
                .memories()
                .find_one(doc! {"scope": &scope, "kind_key": &kk})
                .projection(doc! {"_id": 1, "created": 1})
                .await?;
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
