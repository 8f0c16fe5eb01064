//! The memory catalog: semantic search lists a store's items once per change of its
//! `memory_revision` (every search, without one), and every search sees the items as they
//! are: new, replaced, deleted and expired ones alike.
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use agentmem_core::layer::LayeredStore;
use agentmem_core::{
    async_trait, AgentMemory, Embedder, InMemoryStore, MemoryFilter, MemoryItem, MemoryKind,
    MemoryScope, MemoryStore, Result,
};
use agentmem_recall::{Recall, RecallOptions, SearchMode};
use agentmem_testkit::recall::ConceptEmbedder;

/// Counts `list_memories` calls; with `hide_revision`, a store that keeps no revision.
#[derive(Debug, Default)]
struct Listings {
    inner: InMemoryStore,
    lists: AtomicUsize,
    hide_revision: AtomicBool,
}

#[async_trait]
impl LayeredStore for Listings {
    type Inner = InMemoryStore;

    fn inner(&self) -> &InMemoryStore {
        &self.inner
    }

    async fn list_memories(&self, filter: &MemoryFilter) -> Result<Vec<MemoryItem>> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        self.inner.list_memories(filter).await
    }

    async fn memory_revision(&self) -> Result<Option<u64>> {
        if self.hide_revision.load(Ordering::SeqCst) {
            return Ok(None);
        }
        self.inner.memory_revision().await
    }
}

impl Listings {
    fn lists(&self) -> usize {
        self.lists.swap(0, Ordering::SeqCst)
    }

    async fn put(&self, item: &MemoryItem) -> MemoryItem {
        MemoryStore::put_memory(self, item).await.unwrap()
    }
}

const FACTS: [&str; 3] = [
    "Mel likes green tea in the morning",
    "The kitchen tap leaks again",
    "Jon plays the guitar on Fridays",
];

async fn filled() -> Arc<Listings> {
    let store = Arc::new(Listings::default());
    for fact in FACTS {
        store.put(&MemoryItem::new(MemoryKind::Fact, fact)).await;
    }
    store
}

fn recall(store: &Arc<Listings>, options: RecallOptions) -> Recall {
    let store: Arc<dyn AgentMemory> = store.clone();
    let embedder: Arc<dyn Embedder> = Arc::new(ConceptEmbedder::default());
    Recall::new(store, embedder, options)
}

/// The texts a semantic search within `filter` finds, best first.
async fn found(recall: &Recall, query: &str, filter: &MemoryFilter) -> Vec<String> {
    recall
        .search_memories(query, filter, SearchMode::Semantic)
        .await
        .unwrap()
        .into_iter()
        .map(|hit| hit.item.text)
        .collect()
}

/// Indexes what is new, then forgets the listings the indexer made.
async fn index(recall: &Recall, store: &Listings) {
    recall.index(&mut |_| {}).await.unwrap();
    store.lists();
}

#[tokio::test]
async fn searches_list_the_items_once_per_change() {
    let store = filled().await;
    let recall = recall(&store, RecallOptions::default());
    index(&recall, &store).await;
    let all = MemoryFilter::default();

    let first = found(&recall, "adopting a child", &all).await;
    assert_eq!(first.len(), FACTS.len());
    assert_eq!(
        found(&recall.clone(), "morning drink", &all).await[0],
        FACTS[0]
    );
    assert_eq!(
        store.lists(),
        1,
        "listed once for two searches (clones share it)"
    );

    let adoption = store
        .put(&MemoryItem::new(
            MemoryKind::Fact,
            "Caroline wants to adopt a child",
        ))
        .await;
    index(&recall, &store).await;
    assert_eq!(
        found(&recall, "adopting a child", &all).await[0],
        adoption.text,
        "a new item is found"
    );
    assert_eq!(store.lists(), 1, "the put changed the revision");

    assert!(MemoryStore::delete_memory(&*store, &adoption.id)
        .await
        .unwrap());
    let after = found(&recall, "adopting a child", &all).await;
    assert!(!after.contains(&adoption.text), "a deleted item is gone");
    assert_eq!(after, first);
    found(&recall, "adopting a child", &all).await;
    assert_eq!(store.lists(), 1, "listed again after the delete, once");
}

#[tokio::test]
async fn scope_and_kind_apply_to_the_kept_items() {
    let store = filled().await;
    let ada = MemoryScope::agent("ada");
    let hers = store
        .put(&MemoryItem::new(MemoryKind::Insight, "Ada drinks green tea").in_scope(ada.clone()))
        .await;
    let recall = recall(&store, RecallOptions::default());
    index(&recall, &store).await;
    let kind = MemoryFilter::kind(MemoryKind::Insight);
    assert_eq!(
        found(&recall, "morning drink", &kind).await,
        std::slice::from_ref(&hers.text)
    );
    let exactly = MemoryFilter::default().with_scope(agentmem_core::ScopeFilter::Exactly(ada));
    assert_eq!(found(&recall, "morning drink", &exactly).await, [hers.text]);
    assert_eq!(
        found(&recall, "morning drink", &MemoryFilter::default())
            .await
            .len(),
        FACTS.len() + 1
    );
    assert_eq!(store.lists(), 1, "one listing serves every filter");
}

#[tokio::test]
async fn an_item_that_expires_between_searches_is_not_found() {
    let store = filled().await;
    let soon = agentmem_core::now() + chrono::Duration::seconds(3);
    let brief = store
        .put(
            &MemoryItem::new(MemoryKind::ShortTerm, "Caroline wants to adopt a child")
                .expiring_at(soon),
        )
        .await;
    let recall = recall(&store, RecallOptions::default());
    index(&recall, &store).await;
    let all = MemoryFilter::default();
    assert_eq!(
        found(&recall, "adopting a child", &all).await[0],
        brief.text
    );
    tokio::time::sleep(std::time::Duration::from_millis(3_500)).await;
    let after = found(&recall, "adopting a child", &all).await;
    assert!(!after.contains(&brief.text), "expired: {after:?}");
    assert_eq!(store.lists(), 1, "expiry needs no new listing");
}

#[tokio::test]
async fn without_a_revision_or_a_cache_every_search_lists() {
    let store = filled().await;
    let kept = recall(&store, RecallOptions::default());
    index(&kept, &store).await;
    let all = MemoryFilter::default();
    let expected = found(&kept, "morning drink", &all).await;
    store.lists();

    store.hide_revision.store(true, Ordering::SeqCst);
    for _ in 0..2 {
        assert_eq!(found(&kept, "morning drink", &all).await, expected);
    }
    assert_eq!(
        store.lists(),
        2,
        "a store without a revision is listed each time"
    );

    store.hide_revision.store(false, Ordering::SeqCst);
    let uncached = recall(&store, RecallOptions::default().with_vector_cache_bytes(0));
    for _ in 0..2 {
        assert_eq!(found(&uncached, "morning drink", &all).await, expected);
    }
    assert_eq!(
        store.lists(),
        2,
        "a Recall that keeps nothing lists each time"
    );
}

/// A model of 48 dimensions that spreads texts at random, the same every run: what the
/// coded scan's bound is tested against.
#[derive(Debug)]
struct Scattered(agentmem_core::ModelIdentity);

#[async_trait]
impl Embedder for Scattered {
    fn model(&self) -> &agentmem_core::ModelIdentity {
        &self.0
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        Ok(texts
            .iter()
            .map(|text| {
                let mut state = text.bytes().fold(0xcbf29ce484222325u64, |h, b| {
                    (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
                });
                (0..self.0.dimensions)
                    .map(|_| {
                        state = state
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        // Mostly small, now and then large: the scale of a row varies.
                        let x = (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
                        x * x * x * 8.0
                    })
                    .collect()
            })
            .collect())
    }
}

#[tokio::test]
async fn a_coded_scan_ranks_as_an_exact_scan() {
    let store = Arc::new(Listings::default());
    for i in 0..1_500 {
        let kind = if i % 3 == 0 {
            MemoryKind::Insight
        } else {
            MemoryKind::Fact
        };
        store
            .put(&MemoryItem::new(
                kind,
                format!("note {i} of the scattered set"),
            ))
            .await;
    }
    let model = agentmem_core::ModelIdentity {
        id: "scattered".into(),
        dimensions: 48,
        normalized: false,
    };
    let embedder: Arc<dyn Embedder> = Arc::new(Scattered(model));
    let dyn_store: Arc<dyn AgentMemory> = store.clone();
    let coded = Recall::new(
        dyn_store.clone(),
        embedder.clone(),
        RecallOptions::default(),
    );
    let exact = Recall::new(
        dyn_store,
        embedder,
        RecallOptions::default().with_vector_cache_bytes(0),
    );
    coded.index(&mut |_| {}).await.unwrap();
    let hits = |recall: &Recall, query: String, filter: MemoryFilter| {
        let recall = recall.clone();
        async move {
            recall
                .search_memories(&query, &filter, SearchMode::Semantic)
                .await
                .unwrap()
                .into_iter()
                .map(|hit| (hit.item.text, hit.similarity, hit.semantic_rank))
                .collect::<Vec<_>>()
        }
    };
    for q in 0..25 {
        let query = format!("question {q}");
        for filter in [
            MemoryFilter::default().with_limit(40),
            MemoryFilter::kind(MemoryKind::Insight).with_limit(7),
            MemoryFilter::default().with_limit(1),
        ] {
            let from_codes = hits(&coded, query.clone(), filter.clone()).await;
            assert_eq!(from_codes.len(), filter.limit.unwrap());
            assert_eq!(
                from_codes,
                hits(&exact, query.clone(), filter).await,
                "{query}"
            );
        }
    }
}
