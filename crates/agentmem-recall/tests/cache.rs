//! The vector cache: searches read each vector from the store once, the results are those of
//! an uncached search, and vectors read while another model is being recorded are not kept.
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use agentmem_core::layer::LayeredStore;
use agentmem_core::vector::MODEL_PROPERTY;
use agentmem_core::{
    async_trait, AgentMemory, Embedder, ErrorKind, InMemoryStore, MemoryFilter, MemoryItem,
    MemoryKind, MemoryStore, PropertyChange, Result, SessionStore, StoredVector, VectorKey,
    VectorStore,
};
use agentmem_recall::{Recall, RecallOptions, SearchMode};
use agentmem_testkit::recall::ConceptEmbedder;

/// Counts the vectors read from the inner store; with `switch_model_on_read`, records another
/// model in the store as the vectors are read (another process starting a reindex).
#[derive(Debug, Default)]
struct Watched {
    inner: InMemoryStore,
    vectors_read: AtomicUsize,
    switch_model_on_read: AtomicBool,
}

#[async_trait]
impl LayeredStore for Watched {
    type Inner = InMemoryStore;

    fn inner(&self) -> &InMemoryStore {
        &self.inner
    }

    async fn get_vectors(&self, keys: &[VectorKey]) -> Result<Vec<StoredVector>> {
        let found = self.inner.get_vectors(keys).await?;
        self.vectors_read.fetch_add(found.len(), Ordering::SeqCst);
        if self.switch_model_on_read.load(Ordering::SeqCst) {
            let current = self.inner.store_property(MODEL_PROPERTY).await?;
            let mut other = ConceptEmbedder::default().model().clone();
            other.id = "another-model".into();
            let other = other.to_property();
            let change = PropertyChange::replace(MODEL_PROPERTY, current.as_deref(), &other);
            self.inner.set_store_property(&change).await?;
        }
        Ok(found)
    }
}

const FACTS: [&str; 4] = [
    "Caroline wants to adopt a child",
    "Mel likes green tea in the morning",
    "The kitchen tap leaks again",
    "Jon plays the guitar on Fridays",
];

async fn filled(watched: Arc<Watched>) -> Arc<Watched> {
    for fact in FACTS {
        MemoryStore::put_memory(&*watched, &MemoryItem::new(MemoryKind::Fact, fact))
            .await
            .unwrap();
    }
    watched
}

fn recall(store: &Arc<Watched>, cache_bytes: usize) -> Recall {
    let store: Arc<dyn AgentMemory> = store.clone();
    let embedder: Arc<dyn Embedder> = Arc::new(ConceptEmbedder::default());
    let options = RecallOptions::default().with_vector_cache_bytes(cache_bytes);
    Recall::new(store, embedder, options)
}

async fn texts(recall: &Recall, query: &str) -> Vec<(String, Option<f32>)> {
    recall
        .search_memories(query, &MemoryFilter::default(), SearchMode::Semantic)
        .await
        .unwrap()
        .into_iter()
        .map(|hit| (hit.item.text, hit.similarity))
        .collect()
}

#[tokio::test]
async fn searches_read_each_vector_from_the_store_once() {
    let store = filled(Arc::new(Watched::default())).await;
    // Indexed by another `Recall` (another process): nothing of it is cached here.
    recall(&store, 0).index(&mut |_| {}).await.unwrap();
    let reads = || store.vectors_read.load(Ordering::SeqCst);
    let before = reads();

    let cached = recall(&store, 1 << 20);
    let first = texts(&cached, "who is adopting a kid?").await;
    assert_eq!(
        reads() - before,
        FACTS.len(),
        "the first search reads every vector"
    );
    let again = texts(&cached.clone(), "who is adopting a kid?").await;
    assert_eq!(reads() - before, FACTS.len(), "clones share the cache");
    assert_eq!(first, again);
    assert_eq!(first[0].0, FACTS[0]);

    let uncached = recall(&store, 0);
    let plain = texts(&uncached, "who is adopting a kid?").await;
    assert_eq!(
        reads() - before,
        2 * FACTS.len(),
        "no cache: read each time"
    );
    assert_eq!(plain, first, "the cache changes no result");
}

#[tokio::test]
async fn the_indexer_fills_the_cache_it_shares() {
    let store = filled(Arc::new(Watched::default())).await;
    let cached = recall(&store, 1 << 20);
    cached.index(&mut |_| {}).await.unwrap();
    let after_index = store.vectors_read.load(Ordering::SeqCst);
    let found = texts(&cached, "morning drink").await;
    assert_eq!(found[0].0, FACTS[1]);
    assert_eq!(
        store.vectors_read.load(Ordering::SeqCst),
        after_index,
        "what the indexer embedded is searched from memory"
    );
}

#[tokio::test]
async fn vectors_read_while_another_model_is_recorded_are_not_kept() {
    let store = filled(Arc::new(Watched::default())).await;
    let cached = recall(&store, 1 << 20);
    recall(&store, 0).index(&mut |_| {}).await.unwrap();
    store.switch_model_on_read.store(true, Ordering::SeqCst);
    let reads = || store.vectors_read.load(Ordering::SeqCst);
    let before = reads();
    // The model was ours when checked, so this search ranks with what it read, once.
    let first = texts(&cached, "who is adopting a kid?").await;
    assert_eq!(first[0].0, FACTS[0]);
    let err = cached
        .search_memories("tea", &MemoryFilter::default(), SearchMode::Semantic)
        .await
        .expect_err("the store's vectors now come from another model");
    assert_eq!(err.kind(), ErrorKind::Conflict);

    // Our model again: the vectors are read anew, nothing was kept from the switch.
    store.switch_model_on_read.store(false, Ordering::SeqCst);
    let ours = ConceptEmbedder::default().model().to_property();
    let current = store.inner.store_property(MODEL_PROPERTY).await.unwrap();
    let change = PropertyChange::replace(MODEL_PROPERTY, current.as_deref(), &ours);
    assert!(store.inner.set_store_property(&change).await.unwrap());
    assert_eq!(texts(&cached, "who is adopting a kid?").await, first);
    assert_eq!(reads() - before, 2 * FACTS.len());
    // Now they are kept.
    texts(&cached, "who is adopting a kid?").await;
    assert_eq!(reads() - before, 2 * FACTS.len());
}
