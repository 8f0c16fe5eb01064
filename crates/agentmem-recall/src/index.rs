//! The indexer: embeds, in batches, every text of the store that has no vector yet.
//!
//! Its durable state is the store's vectors themselves: a text is done when its key
//! ([`vector_key`]) holds a vector, and each batch is stored as soon as it is embedded. A run
//! cut short (a crash, a dead server) leaves every stored batch in place, and the next run
//! embeds exactly what is still missing: nothing twice, nothing skipped.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use agentmem_core::vector::{encode_vector, MAX_VECTOR_BATCH, MODEL_PROPERTY};
use agentmem_core::{MemoryFilter, ModelIdentity, PropertyChange, Result, StoredVector, VectorKey};
use serde::Serialize;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::cache::{unit, UnitVector};
use crate::recall::Recall;
use crate::similarity::vector_key;

/// Where an indexing run stands, reported after each stored batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct IndexProgress {
    /// Texts embedded and stored so far by this run.
    pub embedded: u64,
    /// Texts this run set out to embed.
    pub pending: u64,
}

/// What an indexing run did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct IndexReport {
    /// Distinct texts in the store that are embedded (memory items, and messages when asked).
    pub texts: u64,
    /// Of them, embedded by this run.
    pub embedded: u64,
}

/// What [`Recall::update_index`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IndexUpdate {
    /// What was indexed.
    pub report: IndexReport,
    /// Whether every text was embedded anew (asked for, or another model's vectors).
    pub anew: bool,
    /// The model the vectors now come from.
    pub model: ModelIdentity,
    /// The model the store's vectors came from before, when it was another.
    pub previous_model: Option<ModelIdentity>,
}

/// How far the vectors lag behind the store's texts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IndexLag {
    /// Distinct texts that are embedded when indexed.
    pub texts: u64,
    /// Of them, texts with no vector yet.
    pub pending: u64,
    /// The model the store's vectors come from (`None` before the first indexing).
    pub model: Option<ModelIdentity>,
}

impl Recall {
    /// The distinct texts the indexer embeds, in a stable order (memory items oldest first,
    /// then messages session by session), with their keys.
    async fn indexed_texts(&self) -> Result<Vec<(VectorKey, String)>> {
        let mut seen = HashSet::new();
        let mut texts = Vec::new();
        let mut add = |text: String| {
            if !text.trim().is_empty() {
                let key = vector_key(&text);
                if seen.insert(key) {
                    texts.push((key, text));
                }
            }
        };
        for item in self.store.list_memories(&MemoryFilter::default()).await? {
            add(item.text);
        }
        if self.options.embed_messages {
            for (_, message) in self.messages_in(None).await? {
                add(message.content);
            }
        }
        Ok(texts)
    }

    /// The texts among `texts` that have no vector.
    async fn missing(&self, texts: Vec<(VectorKey, String)>) -> Result<Vec<(VectorKey, String)>> {
        let keys: Vec<VectorKey> = texts.iter().map(|(k, _)| *k).collect();
        let mut present = HashSet::new();
        for batch in keys.chunks(MAX_VECTOR_BATCH) {
            present.extend(
                self.store
                    .get_vectors(batch)
                    .await?
                    .into_iter()
                    .map(|v| v.key),
            );
        }
        Ok(texts
            .into_iter()
            .filter(|(k, _)| !present.contains(k))
            .collect())
    }

    /// How many of the store's texts have no vector yet (what `doctor` shows).
    pub async fn lag(&self) -> Result<IndexLag> {
        let texts = self.indexed_texts().await?;
        let total = texts.len() as u64;
        let pending = self.missing(texts).await?.len() as u64;
        Ok(IndexLag {
            texts: total,
            pending,
            model: self.stored_model().await?,
        })
    }

    /// Embeds every text that has no vector, a batch at a time (the embedder's batch size),
    /// storing each batch before the next; `progress` hears after each. Records the model in
    /// a store that has none; `Conflict` when the store's vectors come from another model.
    pub async fn index(
        &self, progress: &mut (dyn FnMut(IndexProgress) + Send),
    ) -> Result<IndexReport> {
        self.check_model(true).await?;
        let texts = self.indexed_texts().await?;
        let total = texts.len() as u64;
        let missing = self.missing(texts).await?;
        let pending = missing.len() as u64;
        let mut embedded = 0u64;
        for batch in missing.chunks(self.embedder.batch_size().clamp(1, MAX_VECTOR_BATCH)) {
            let strings: Vec<String> = batch.iter().map(|(_, t)| t.clone()).collect();
            let vectors = self.embed(&strings).await?;
            let stored: Vec<StoredVector> = batch
                .iter()
                .zip(&vectors)
                .map(|((key, _), v)| StoredVector {
                    key: *key,
                    data: encode_vector(v),
                })
                .collect();
            self.store.put_vectors(&stored).await?;
            let units: Vec<(VectorKey, UnitVector)> = batch
                .iter()
                .zip(&vectors)
                .map(|((key, _), v)| (*key, unit(v)))
                .collect();
            self.cache.insert_many(units.iter().map(|(k, v)| (k, v)));
            embedded += batch.len() as u64;
            progress(IndexProgress { embedded, pending });
        }
        Ok(IndexReport {
            texts: total,
            embedded,
        })
    }

    /// Re-embeds the whole store with this embedder's model: deletes every vector, records
    /// the model (replacing another), then indexes. A run cut short is resumed by
    /// [`index`](Self::index) or another `reindex`.
    pub async fn reindex(
        &self, progress: &mut (dyn FnMut(IndexProgress) + Send),
    ) -> Result<IndexReport> {
        // Vectors go first: a crash before the model is recorded leaves no vector labelled
        // with the wrong model.
        self.learn_dimensions().await?;
        self.store.clear_vectors().await?;
        self.cache.clear();
        let ours = self.embedder.model().to_property();
        loop {
            let current = self.store.store_property(MODEL_PROPERTY).await?;
            if current.as_deref() == Some(ours.as_str()) {
                break;
            }
            let change = PropertyChange::replace(MODEL_PROPERTY, current.as_deref(), &ours);
            if self.store.set_store_property(&change).await? {
                break;
            }
        }
        self.index(progress).await
    }

    /// Brings the vectors up to date as `agentmem reindex` does: [`reindex`](Self::reindex)
    /// with `anew` or when the store's vectors come from another model than this embedder's,
    /// else [`index`](Self::index).
    pub async fn update_index(
        &self, anew: bool, progress: &mut (dyn FnMut(IndexProgress) + Send),
    ) -> Result<IndexUpdate> {
        let model = self.model().await?;
        let previous_model = self.stored_model().await?.filter(|m| *m != model);
        let anew = anew || previous_model.is_some();
        let report = if anew {
            self.reindex(progress).await?
        } else {
            self.index(progress).await?
        };
        Ok(IndexUpdate {
            report,
            anew,
            model,
            previous_model,
        })
    }

    /// Runs [`index`](Self::index) in the background: at once, then whenever
    /// [`IndexerHandle::nudge`] is called, and at least every `every`. Errors are logged
    /// (`tracing`) and retried on the next round. Stops when the handle is stopped or dropped.
    pub fn spawn_indexer(&self, every: Duration) -> IndexerHandle {
        let recall = self.clone();
        let nudge = Arc::new(Notify::new());
        let wake = Arc::clone(&nudge);
        let task = tokio::spawn(async move {
            loop {
                match recall.index(&mut |_| {}).await {
                    Ok(report) if report.embedded > 0 => {
                        tracing::debug!(embedded = report.embedded, "indexer embedded texts");
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "indexer round failed; retrying"),
                }
                tokio::select! {
                    _ = wake.notified() => {}
                    _ = tokio::time::sleep(every) => {}
                }
            }
        });
        IndexerHandle { nudge, task }
    }
}

/// A background indexer ([`Recall::spawn_indexer`]); dropping it stops the indexer.
#[derive(Debug)]
pub struct IndexerHandle {
    nudge: Arc<Notify>,
    task: JoinHandle<()>,
}

impl IndexerHandle {
    /// Asks for a round now (after writes); rounds already asked for are merged.
    pub fn nudge(&self) {
        self.nudge.notify_one();
    }

    /// Stops the indexer (a batch being embedded is abandoned; what was stored stays).
    pub fn stop(self) {
        self.task.abort();
    }
}

impl Drop for IndexerHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}
