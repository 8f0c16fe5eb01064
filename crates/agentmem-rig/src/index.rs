//! [`AgentmemIndex`]: rig's `VectorStoreIndex` over a store's memory items, ranked by
//! agentmem's recall (keyword and meaning fused, by default), so a rig agent's dynamic context
//! (`AgentBuilder::dynamic_context`) comes from its long-term memory.

use agentmem_core::{MemoryFilter, MemoryKind};
use agentmem_recall::{MemoryRecall, Recall, SearchMode};
use rig_core::vector_store::request::{Filter, FilterError, VectorSearchRequest};
use rig_core::vector_store::{
    VectorSearchIdResult, VectorSearchResult, VectorStoreError, VectorStoreIndex,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// rig's vector index over the memory items of an agentmem store.
///
/// - A search ranks the items [`with_filter`](Self::with_filter) selects (kind, scope,
///   expiry), narrowed by the request's filter, before ranking (never top-k-then-filter), in
///   the [`SearchMode`] given (hybrid by default), and returns at most `samples` of them.
/// - Documents are [`MemoryItem`](agentmem_core::MemoryItem)s as JSON (`id`, `kind`, `text`,
///   `scope`, `key`, `tags`, …), ids their memory ids, scores the mode's score: the fused
///   score (hybrid), the cosine similarity (semantic) or the keyword score (keyword); a
///   request's threshold drops hits scoring below it.
/// - Request filters: `eq("kind", "fact")` and `and` of such; other filters are a
///   `FilterError` (scope is the index's own, set with [`with_filter`](Self::with_filter)).
///
/// Items are embedded by the recall's indexer ([`Recall::index`], or
/// [`Recall::spawn_indexer`] behind the writes); items not embedded yet are found by keyword.
///
/// ```
/// use std::sync::Arc;
/// use agentmem_core::{InMemoryStore, MemoryFilter, MemoryItem, MemoryKind, MemoryScope, MemoryStore};
/// use agentmem_recall::{Recall, RecallOptions};
/// use agentmem_rig::AgentmemIndex;
/// use rig_core::vector_store::{VectorSearchRequest, VectorStoreIndex};
/// # use agentmem_core::{async_trait, Embedder, ModelIdentity, Result};
/// # #[derive(Debug)]
/// # struct Topics(ModelIdentity);
/// # #[async_trait]
/// # impl Embedder for Topics {
/// #     fn model(&self) -> &ModelIdentity { &self.0 }
/// #     async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
/// #         Ok(texts.iter().map(|t| vec![t.contains("tea") as u8 as f32, 0.1]).collect())
/// #     }
/// # }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let store = Arc::new(InMemoryStore::new());
/// store.put_memory(&MemoryItem::new(MemoryKind::Fact, "Mel drinks green tea")).await?;
/// // In an application: `agentmem::open_recall("sqlite://agent.db?embedder=local")`.
/// # let embedder = Arc::new(Topics(ModelIdentity { id: "topics".into(), dimensions: 2, normalized: false }));
/// let recall = Recall::new(store, embedder, RecallOptions::default());
/// recall.index(&mut |_| {}).await?;
/// let index = AgentmemIndex::new(recall)
///     .with_filter(MemoryFilter::default().visible_from(MemoryScope::global()));
/// let request = VectorSearchRequest::builder().query("tea").samples(3).build();
/// let hits = index.top_n::<serde_json::Value>(request).await?;
/// assert_eq!(hits[0].document["text"], "Mel drinks green tea");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct AgentmemIndex {
    recall: Recall,
    filter: MemoryFilter,
    mode: SearchMode,
}

impl AgentmemIndex {
    /// An index over every memory item of `recall`'s store, ranked in hybrid mode.
    pub fn new(recall: Recall) -> Self {
        AgentmemIndex {
            recall,
            filter: MemoryFilter::default(),
            mode: SearchMode::Hybrid,
        }
    }

    agentmem_core::setters! {
        /// Ranks only the items `filter` selects (its kind and scope; its limit is replaced by
        /// each request's `samples`).
        pub fn with_filter(filter: MemoryFilter) { self.filter = filter }

        /// Ranks in `mode` instead of hybrid.
        pub fn with_mode(mode: SearchMode) { self.mode = mode }
    }

    /// The items a request finds, best first.
    async fn search(
        &self, request: &VectorSearchRequest<Filter<Value>>,
    ) -> Result<Vec<MemoryRecall>, VectorStoreError> {
        let mut filter = self.filter.clone();
        if let Some(narrowing) = request.filter() {
            narrow(narrowing, &mut filter)?;
        }
        filter.limit = Some(usize::try_from(request.samples()).unwrap_or(usize::MAX));
        let hits = self
            .recall
            .search_memories(request.query(), &filter, self.mode)
            .await
            .map_err(VectorStoreError::datastore)?;
        let threshold = request.threshold();
        Ok(hits
            .into_iter()
            .filter(|hit| threshold.is_none_or(|t| hit.score >= t))
            .collect())
    }
}

/// Narrows `into` by a rig filter: `eq("kind", name)`, and `and` of those.
fn narrow(filter: &Filter<Value>, into: &mut MemoryFilter) -> Result<(), FilterError> {
    match filter {
        Filter::Eq(key, value) if key == "kind" => {
            let name = value.as_str().ok_or_else(|| FilterError::Expected {
                expected: "a memory kind name".into(),
                got: value.to_string(),
            })?;
            let kind: MemoryKind = name
                .parse()
                .map_err(|e: agentmem_core::Error| FilterError::TypeError(e.to_string()))?;
            if into.kind.is_some_and(|k| k != kind) {
                return Err(FilterError::Must(
                    "kind".into(),
                    "name one kind: an item has only one".into(),
                ));
            }
            into.kind = Some(kind);
            Ok(())
        }
        Filter::And(left, right) => {
            narrow(left, into)?;
            narrow(right, into)
        }
        other => Err(FilterError::TypeError(format!(
            "{other:?}: agentmem filters memory items by `eq(\"kind\", …)` and `and` of those; \
             set the scope with `AgentmemIndex::with_filter`"
        ))),
    }
}

impl VectorStoreIndex for AgentmemIndex {
    type Filter = Filter<Value>;

    async fn top_n<T: DeserializeOwned + Send>(
        &self, req: VectorSearchRequest<Self::Filter>,
    ) -> Result<Vec<VectorSearchResult<T>>, VectorStoreError> {
        let hits = self.search(&req).await?;
        let documents: Result<Vec<_>, serde_json::Error> = hits
            .into_iter()
            .map(|hit| {
                Ok(VectorSearchResult {
                    score: hit.score,
                    id: hit.item.id.to_string(),
                    document: serde_json::from_value(serde_json::to_value(&hit.item)?)?,
                })
            })
            .collect();
        Ok(documents?)
    }

    async fn top_n_ids(
        &self, req: VectorSearchRequest<Self::Filter>,
    ) -> Result<Vec<VectorSearchIdResult>, VectorStoreError> {
        Ok(self
            .search(&req)
            .await?
            .into_iter()
            .map(|hit| VectorSearchIdResult {
                score: hit.score,
                id: hit.item.id.to_string(),
            })
            .collect())
    }
}
