//! Recall by meaning on every backend compiled in, with the real local model
//! (all-MiniLM-L6-v2): the recall cases of `agentmem_testkit::recall` (paraphrases a keyword
//! search misses, scope before ranking, model mismatch, indexer crash and resume, the
//! unembedded tail), each on a fresh store, plain and, with feature `encryption`, through
//! `EncryptLayer`. Also `open_recall` from a store URL.
//!
//! The model is read from `AGENTMEM_MODEL_DIR` or the default folder
//! (`bash crates/agentmem-embed/install-model.sh` installs it). Without it the tests skip with
//! a notice, unless `AGENTMEM_REQUIRE_MODEL` is set (CI sets it), when they fail. Server
//! backends skip only when `AGENTMEM_REQUIRE_SERVICES` is unset.
#![cfg(feature = "embed-local")]
use std::sync::{Arc, OnceLock};

use agentmem::embed::LocalEmbedder;
use agentmem::recall::SearchMode;
use agentmem::{AgentMemory, Embedder, MemoryFilter, MemoryItem, MemoryKind, MemoryStore};
use agentmem_testkit::recall::{run_recall_case, RECALL_CASES};
use agentmem_testkit::TestStore;

mod common;

/// The local model, loaded once per test binary; `None` (after a notice) when it is not
/// installed and not required.
fn model() -> Option<Arc<dyn Embedder>> {
    static MODEL: OnceLock<Option<Arc<dyn Embedder>>> = OnceLock::new();
    MODEL
        .get_or_init(|| match LocalEmbedder::from_env() {
            Ok(model) => Some(Arc::new(model) as Arc<dyn Embedder>),
            Err(e) if std::env::var_os("AGENTMEM_REQUIRE_MODEL").is_some() => {
                panic!("AGENTMEM_REQUIRE_MODEL is set and the local model is missing: {e}")
            }
            Err(e) => {
                eprintln!("skipping: the local model is not installed ({e})");
                None
            }
        })
        .clone()
}

/// A fresh store of `backend`; `None` when its server is unavailable and not required.
async fn fresh(backend: &'static str) -> Option<TestStore> {
    common::fresh(backend, "rc", "").await
}

/// Every recall case on fresh stores of `backend`, each store as `wrap` makes it.
async fn run_cases(backend: &'static str, wrap: fn(TestStore) -> TestStore) {
    let Some(embedder) = model() else { return };
    for name in RECALL_CASES {
        let Some(store) = fresh(backend).await else {
            return;
        };
        let store = wrap(store);
        eprintln!("{backend}: {name}");
        run_recall_case(name, store.arc(), Arc::clone(&embedder)).await;
    }
}

macro_rules! recall_on {
    ($($test:ident: $feature:literal;)*) => {$(
        #[cfg(feature = $feature)]
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $test() {
            run_cases($feature, |store| store).await;
            #[cfg(feature = "encryption")]
            run_cases($feature, encrypted).await;
        }
    )*};
}

recall_on! {
    recall_on_file: "file";
    recall_on_sqlite: "sqlite";
    recall_on_redis: "redis";
    recall_on_postgres: "postgres";
    recall_on_mongodb: "mongodb";
}

#[cfg(feature = "encryption")]
fn encrypted(store: TestStore) -> TestStore {
    use agentmem::crypt::{EncryptLayer, MasterKey};
    use agentmem::AgentMemoryExt as _;
    let key = MasterKey::generate().expect("a random key");
    store.map(|raw| Arc::new(raw.with_layer(EncryptLayer::new(&key))))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recall_on_the_in_memory_store() {
    let Some(embedder) = model() else { return };
    for name in RECALL_CASES {
        let store: Arc<dyn AgentMemory> = Arc::new(agentmem::InMemoryStore::new());
        run_recall_case(name, store, Arc::clone(&embedder)).await;
    }
}

/// `open_recall` builds the embedder a URL names and finds by meaning what it indexed; a URL
/// without an embedder is refused, naming the option.
#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_recall_from_a_url() {
    if model().is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("temporary folder");
    let plain = format!("sqlite://{}", dir.path().join("a.db").display());
    let err = agentmem::open_recall(&plain)
        .await
        .expect_err("no embedder");
    assert!(err.to_string().contains("embedder=local"), "{err}");

    let recall = agentmem::open_recall(&format!("{plain}?embedder=local"))
        .await
        .expect("opens");
    let item = MemoryItem::new(MemoryKind::Fact, agentmem_testkit::recall::ADOPTION);
    recall.store().put_memory(&item).await.expect("put");
    recall
        .store()
        .put_memory(&MemoryItem::new(MemoryKind::Fact, "The train was late"))
        .await
        .expect("put");
    assert_eq!(recall.index(&mut |_| {}).await.expect("index").embedded, 2);
    let hits = recall
        .search_memories(
            agentmem_testkit::recall::ADOPTION_QUERY,
            &MemoryFilter::default(),
            SearchMode::Hybrid,
        )
        .await
        .expect("search");
    assert_eq!(hits[0].item.id, item.id);
}
