//! The rig adapter's behaviour suite (`agentmem_rig::cases`) on every backend compiled in,
//! opened through `agentmem::open(url)`, with a second connection standing in for a second
//! process. Server backends read `REDIS_URL`, `DATABASE_URL` and `MONGODB_URL` and skip only
//! when `AGENTMEM_REQUIRE_SERVICES` is unset.
#![cfg(feature = "rig")]
#![allow(missing_docs)]

use std::sync::Arc;

use agentmem::AgentMemory;
#[allow(unused_imports)]
use agentmem_testkit::{env_url, service_unavailable, unique_namespace};

async fn open(service: &str, url: &str) -> Option<Arc<dyn AgentMemory>> {
    match agentmem::open(url).await {
        Ok(store) => Some(store),
        Err(e) => service_unavailable(service, url, &e),
    }
}

/// Opens `url` twice and runs the suite on the two connections.
async fn suite(service: &str, url: String) {
    let Some(store) = open(service, &url).await else {
        return;
    };
    let reopened = open(service, &url)
        .await
        .expect("a second connection to a server that answered the first");
    agentmem_rig::cases::all(store.clone(), reopened).await;
    agentmem_testkit::empty_store(store.as_ref())
        .await
        .expect("remove the test's data");
}

#[allow(dead_code)]
fn with_query(base: &str, key: &str, value: &str) -> String {
    let mut url = url::Url::parse(base).expect("a valid server URL");
    url.query_pairs_mut().append_pair(key, value);
    url.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_store() {
    let store: Arc<dyn AgentMemory> = Arc::new(agentmem::InMemory::new());
    agentmem_rig::cases::all(store.clone(), store).await;
}

#[cfg(feature = "file")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_backend() {
    let dir = tempfile::tempdir().expect("temporary folder");
    suite(
        "file",
        format!("file://{}?durability=buffered", dir.path().display()),
    )
    .await;
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_backend() {
    let dir = tempfile::tempdir().expect("temporary folder");
    suite(
        "sqlite",
        format!("sqlite://{}", dir.path().join("rig.db").display()),
    )
    .await;
}

#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_backend() {
    let base = env_url("REDIS_URL", "redis://127.0.0.1:6379");
    suite(
        "redis",
        with_query(&base, "prefix", &unique_namespace("rig")),
    )
    .await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_backend() {
    let base = env_url("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test");
    suite(
        "postgres",
        with_query(&base, "schema", &unique_namespace("rig")),
    )
    .await;
}

#[cfg(feature = "mongodb")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mongodb_backend() {
    let base = env_url(
        "MONGODB_URL",
        "mongodb://127.0.0.1:27017/?directConnection=true",
    );
    let mut url = url::Url::parse(&base).expect("a valid MongoDB URL");
    url.set_path(&format!("/{}", unique_namespace("rig")));
    suite("mongodb", url.to_string()).await;
}
