//! The whole conformance suite against `agentmem_core::InMemoryStore`, the reference backend.

use agentmem_core::{InMemoryStore, MemoryItem, MemoryKind, MemoryStore};
use agentmem_testkit::cases::{self, Area};
use agentmem_testkit::TestStore;

/// A fresh store per test: an `InMemoryStore` is its own namespace, so there is nothing to remove.
async fn store() -> Option<TestStore> {
    Some(TestStore::new(InMemoryStore::new()).into_dyn())
}

agentmem_testkit::conformance_tests!(store);

/// Any selection of the registry runs as one test: here every search case.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_search_cases_from_the_registry() {
    assert_eq!(Area::Search.cases().count(), 13);
    cases::run_cases(Area::Search.cases(), store).await;
}

/// A failing case makes `run_cases` fail, naming the case: here the store is not empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[should_panic(expected = "get_context_of_empty_store_is_empty")]
async fn run_cases_names_the_cases_that_fail() {
    async fn not_empty() -> Option<TestStore> {
        let store = InMemoryStore::new();
        let item = MemoryItem::new(MemoryKind::Fact, "left over from another test");
        store.put_memory(&item).await.expect("put a memory item");
        Some(TestStore::new(store).into_dyn())
    }
    let case = cases::find("get_context_of_empty_store_is_empty").expect("registered");
    cases::run_cases([case], not_empty).await;
}
