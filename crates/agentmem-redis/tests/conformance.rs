//! The agentmem conformance suite against a real Redis (`REDIS_URL`, default
//! `redis://127.0.0.1:6379`), each test under a key prefix of its own whose keys are deleted
//! when the test drops its store.

use agentmem_redis::RedisStore;
use agentmem_testkit::{ServerNamespace, TestStore};

async fn store() -> Option<TestStore> {
    let namespace = ServerNamespace::redis("conf");
    let opened = RedisStore::connect(namespace.url()).await;
    namespace.test_store("redis", opened)
}

agentmem_testkit::conformance_tests!(store);
