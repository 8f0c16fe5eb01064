//! Recall by meaning for agentmem stores: semantic and hybrid search over memory items and
//! messages, and the indexer that embeds them behind the writes.
//!
//! - [`Recall`] pairs a store with an [`Embedder`](agentmem_core::Embedder). It searches in
//!   three [`SearchMode`]s: `keyword` (the store's own BM25), `semantic` (cosine similarity of
//!   stored vectors) and `hybrid` (both, fused by weighted reciprocal rank, [`Fusion`]).
//! - Vectors are stored in the store ([`VectorStore`](agentmem_core::VectorStore)) under the
//!   SHA-256 of the embedded text ([`vector_key`]), so a text repeated by forks, copies or
//!   migrations is embedded once, and a changed text simply has no vector yet.
//! - Scope comes first: the candidates are what the store lists for the filter (kind, scope,
//!   expiry; session), and only they are ranked, never top-k-then-filter.
//! - Fast at 100,000 items and still exact: the memory items and their vectors' keys are
//!   kept between searches while the store's
//!   [`memory_revision`](agentmem_core::MemoryStore::memory_revision) is unchanged, each
//!   vector is also kept as one byte a dimension, and a search scans those bytes, then scores
//!   exactly only the candidates that the bytes' error bound leaves in reach of the top.
//! - Appends never wait for a model: [`Recall::index`] embeds, in batches, whatever has no
//!   vector (resumable: after a crash it embeds what is still missing, nothing twice), and
//!   [`Recall::spawn_indexer`] runs it behind the writes, in rounds
//!   ([`Recall::index_changes`]) that read only what was written since the last. Search
//!   covers the not-yet-embedded tail by keyword.
//! - The store records the model its vectors come from; a search or indexing with another
//!   model is a `Conflict` until [`Recall::reindex`].
//!
//! ```
//! use std::sync::Arc;
//! use agentmem_core::{async_trait, AgentMemory, Embedder, InMemoryStore, MemoryFilter,
//!     MemoryItem, MemoryKind, MemoryStore, ModelIdentity, Result};
//! use agentmem_recall::{Recall, RecallOptions, SearchMode};
//!
//! /// A toy model: one dimension per topic word.
//! #[derive(Debug)]
//! struct Topics(ModelIdentity);
//! #[async_trait]
//! impl Embedder for Topics {
//!     fn model(&self) -> &ModelIdentity { &self.0 }
//!     async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
//!         Ok(texts.iter().map(|t| {
//!             let t = t.to_lowercase();
//!             vec![(t.contains("adopt") || t.contains("child")) as u8 as f32,
//!                  (t.contains("tea") || t.contains("drink")) as u8 as f32, 0.1]
//!         }).collect())
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let store: Arc<dyn AgentMemory> = Arc::new(InMemoryStore::new());
//! store.put_memory(&MemoryItem::new(MemoryKind::Fact, "Caroline wants to adopt a child")).await?;
//! store.put_memory(&MemoryItem::new(MemoryKind::Fact, "Mel likes green tea")).await?;
//! let model = ModelIdentity { id: "topics".into(), dimensions: 3, normalized: false };
//! let recall = Recall::new(store, Arc::new(Topics(model)), RecallOptions::default());
//! recall.index(&mut |_| {}).await?;
//! let hits = recall
//!     .search_memories("who is adopting?", &MemoryFilter::default(), SearchMode::Semantic)
//!     .await?;
//! assert!(hits[0].item.text.contains("adopt"));
//! # Ok::<(), agentmem_core::Error>(())
//! # }).unwrap();
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs, clippy::unwrap_used)]

mod cache;
mod catalog;
mod codes;
mod fusion;
mod index;
mod recall;
mod similarity;

pub use cache::DEFAULT_VECTOR_CACHE_BYTES;
pub use fusion::{Fusion, SearchMode};
pub use index::{
    IndexLag, IndexProgress, IndexReport, IndexUpdate, IndexerHandle, ROUND_GAP, WHOLE_ROUND_EVERY,
};
pub use recall::{MemoryRecall, MessageRecall, Recall, RecallOptions};
pub use similarity::{cosine, vector_key};
