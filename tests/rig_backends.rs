//! The rig adapter's behaviour suite (`agentmem_rig::cases`) on every backend compiled in,
//! opened through `agentmem::open(url)`, with a second connection standing in for a second
//! process. Server backends read `REDIS_URL`, `DATABASE_URL` and `MONGODB_URL` and skip only
//! when `AGENTMEM_REQUIRE_SERVICES` is unset.
#![cfg(feature = "rig")]
use std::sync::Arc;

use agentmem::AgentMemory;
mod common;

/// Opens `url` twice and runs the suite on the two connections.
async fn suite(service: &str, url: &str) {
    let Some(store) = common::open(service, url).await else {
        return;
    };
    let reopened = common::open(service, url)
        .await
        .expect("a second connection to a server that answered the first");
    agentmem_rig::cases::all(store.clone(), reopened).await;
    agentmem_testkit::empty_store(store.as_ref())
        .await
        .expect("remove the test's data");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_store() {
    let store: Arc<dyn AgentMemory> = Arc::new(agentmem::InMemoryStore::new());
    agentmem_rig::cases::all(store.clone(), store).await;
}

#[cfg(feature = "file")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_backend() {
    let dir = tempfile::tempdir().expect("temporary folder");
    suite(
        "file",
        &format!("file://{}?durability=buffered", dir.path().display()),
    )
    .await;
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_backend() {
    let dir = tempfile::tempdir().expect("temporary folder");
    suite(
        "sqlite",
        &format!("sqlite://{}", dir.path().join("rig.db").display()),
    )
    .await;
}

#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_backend() {
    let namespace = common::ServerNamespace::redis("rig");
    suite("redis", namespace.url()).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_backend() {
    let namespace = common::ServerNamespace::postgres("rig");
    suite("postgres", namespace.url()).await;
}

#[cfg(feature = "mongodb")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mongodb_backend() {
    let namespace = common::ServerNamespace::mongodb("rig");
    suite("mongodb", namespace.url()).await;
}
