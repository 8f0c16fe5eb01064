//! The whole conformance suite on the file backend, each test in a temporary folder that is
//! removed when the test drops its store.

mod common;

use agentmem_testkit::TestStore;

/// A buffered store ([`common::open`]) in a temporary folder the store keeps.
async fn store() -> Option<TestStore> {
    let dir = tempfile::tempdir().expect("create a temp folder");
    let store = common::open(dir.path()).await;
    Some(TestStore::new(store).keep(dir).into_dyn())
}

agentmem_testkit::conformance_tests!(store);
