//! The agentmem conformance suite against a real Redis (`REDIS_URL`, default
//! `redis://127.0.0.1:6379`), each test under a key prefix of its own whose keys are deleted
//! when the test drops its store.

use agentmem_redis::RedisStore;
use agentmem_testkit::{ServerNamespace, TestStore};

async fn store() -> Option<TestStore> {
    let namespace = ServerNamespace::redis("conf");
    match RedisStore::connect(namespace.url()).await {
        Ok(store) => Some(
            TestStore::new(store)
                .with_namespace(namespace.into_guard())
                .into_dyn(),
        ),
        Err(e) => agentmem_testkit::service_unavailable("redis", namespace.url(), &e),
    }
}

agentmem_testkit::conformance_tests!(store);
