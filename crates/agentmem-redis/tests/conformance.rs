//! The agentmem conformance suite against a real Redis (`REDIS_URL`, default
//! `redis://127.0.0.1:6379`), each test under a key prefix of its own whose keys are deleted
//! when the test drops its store.

use agentmem_testkit::{ServerNamespace, TestStore};

mod common;

async fn store() -> Option<TestStore> {
    common::conformance_store(ServerNamespace::redis("conf"), "redis").await
}

agentmem_testkit::conformance_tests!(store);
