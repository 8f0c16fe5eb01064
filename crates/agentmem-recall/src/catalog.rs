//! The memory items a semantic search ranks, with their vector keys, kept between searches
//! while the store's [`memory_revision`](agentmem_core::MemoryStore::memory_revision) stays
//! the same.
//!
//! At 100,000 items, listing the items and hashing their texts cost a search more than
//! ranking them: a store that keeps a revision (file, SQLite, in memory) is listed once per
//! change of its items instead of once per search. A store without one (`None`), or a
//! [`Recall`](crate::Recall) that keeps nothing between searches (`vector_cache_bytes` 0),
//! is listed by every search.

use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use agentmem_core::{
    AgentMemory, Error, MemoryFilter, MemoryItem, MemoryKind, Result, ScopeFilter, VectorKey,
};
use chrono::{DateTime, Utc};

use crate::codes::Codes;
use crate::similarity::vector_key;

/// Every live memory item of a store, oldest first, with the key of each one's vector.
#[derive(Debug)]
pub(crate) struct MemoryCatalog {
    /// The store's revision read before the listing; `None`: not to be kept.
    revision: Option<u64>,
    pub(crate) items: Vec<MemoryItem>,
    /// `keys[i]` is the vector key of `items[i]`'s text.
    pub(crate) keys: Arc<Vec<VectorKey>>,
    /// Row `i`: the codes of `items[i]`'s vector, filled as searches read the vectors.
    codes: RwLock<Codes>,
    /// `items[i]`'s kind and expiry time, side by side: a filter's scan reads these, not
    /// 100,000 whole items.
    kinds: Vec<MemoryKind>,
    expiry: Vec<Option<DateTime<Utc>>>,
}

impl MemoryCatalog {
    /// The rows of the items `filter` passes at `now`: as `MemoryFilter::matches` (kind,
    /// scope, not expired).
    pub(crate) fn matching<'a>(
        &'a self, filter: &'a MemoryFilter, now: DateTime<Utc>,
    ) -> impl Iterator<Item = usize> + 'a {
        let every_scope = matches!(filter.scope, ScopeFilter::All);
        (0..self.items.len()).filter(move |&i| {
            filter.kind.is_none_or(|kind| self.kinds[i] == kind)
                && self.expiry[i].is_none_or(|at| at > now)
                && (every_scope || filter.scope.matches(&self.items[i].scope))
        })
    }

    /// Whether it is kept between searches (so worth filling its codes).
    pub(crate) fn is_kept(&self) -> bool {
        self.revision.is_some()
    }

    /// The codes, to scan.
    pub(crate) fn codes(&self) -> RwLockReadGuard<'_, Codes> {
        // Codes are set a row at a time, each row whole: a panic cannot leave one half-set
        // that is then read as set (its scale is written last).
        self.codes.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// The codes, to fill rows.
    pub(crate) fn codes_mut(&self) -> RwLockWriteGuard<'_, Codes> {
        self.codes.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Lists `store`'s items and hashes their texts (off the async threads: 100,000 texts
    /// take tens of milliseconds); their vectors have `dims` dimensions.
    async fn list(store: &dyn AgentMemory, revision: Option<u64>, dims: usize) -> Result<Self> {
        let items = store.list_memories(&MemoryFilter::default()).await?;
        let (items, keys) = tokio::task::spawn_blocking(move || {
            let keys: Vec<VectorKey> = items.iter().map(|item| vector_key(&item.text)).collect();
            (items, keys)
        })
        .await
        .map_err(|e| Error::backend(format!("hashing the memory items failed: {e}")))?;
        Ok(MemoryCatalog {
            revision,
            codes: RwLock::new(Codes::new(items.len(), dims)),
            kinds: items.iter().map(|item| item.kind).collect(),
            expiry: items.iter().map(|item| item.expires_at).collect(),
            items,
            keys: Arc::new(keys),
        })
    }
}

/// The catalog a [`Recall`](crate::Recall) and its clones share.
#[derive(Debug, Default)]
pub(crate) struct CatalogSlot {
    kept: tokio::sync::Mutex<Option<Arc<MemoryCatalog>>>,
}

impl CatalogSlot {
    /// The catalog of `store`'s items (vectors of `dims` dimensions): the kept one while the
    /// store's revision is unchanged, else listed anew (and kept, with `keep`, when the store
    /// has a revision).
    pub(crate) async fn get(
        &self, store: &dyn AgentMemory, keep: bool, dims: usize,
    ) -> Result<Arc<MemoryCatalog>> {
        if !keep {
            return Ok(Arc::new(MemoryCatalog::list(store, None, dims).await?));
        }
        // Held while listing: concurrent searches wait for one listing, not make their own.
        let mut kept = self.kept.lock().await;
        // Read before the listing: a write in between is in the listing and changes the
        // revision, so the next search lists again. Read after, it could label a listing
        // older than the write with the newer revision, and keep it.
        let revision = store.memory_revision().await?;
        if let (Some(now), Some(catalog)) = (revision, kept.as_ref()) {
            if catalog.revision == Some(now) {
                return Ok(Arc::clone(catalog));
            }
        }
        let catalog = Arc::new(MemoryCatalog::list(store, revision, dims).await?);
        *kept = revision.map(|_| Arc::clone(&catalog));
        Ok(catalog)
    }

    /// Forgets the kept catalog (its codes come from a model the store no longer holds).
    pub(crate) async fn clear(&self) {
        *self.kept.lock().await = None;
    }
}
