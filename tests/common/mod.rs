//! What the facade's backend tests share: opening a store through `agentmem::open_unguarded`
//! (the store as it is, so a test can layer encryption over it), skipping only when
//! `AGENTMEM_REQUIRE_SERVICES` is unset. A server test opens the URL of an
//! `agentmem_testkit::ServerNamespace` (a fresh key prefix, schema or database on the server
//! at `REDIS_URL`, `DATABASE_URL` or `MONGODB_URL`), which removes the namespace when the test
//! drops it.
// Each test binary uses the helpers of the backends compiled in.
#![allow(
    dead_code,
    reason = "shared by several test binaries, each using part of it"
)]

use std::sync::Arc;

use agentmem::AgentMemory;
/// Re-exported so a test names its server namespaces without an import of its own, which
/// would be unused when no server backend is compiled in.
#[allow(
    unused_imports,
    reason = "used only by the tests of some backend features"
)]
pub use agentmem_testkit::ServerNamespace;
use agentmem_testkit::{service_unavailable, TestStore};

/// Opens `url` as it is (`agentmem::open_unguarded`: without the layer that refuses an
/// encrypted store, which would refuse every record under a test's own `EncryptLayer`);
/// `None` (after reporting the skip) when the server is unavailable and services are not
/// required.
pub async fn open(service: &str, url: &str) -> Option<Arc<dyn AgentMemory>> {
    match agentmem::open_unguarded(url).await {
        Ok(store) => Some(store),
        Err(e) => service_unavailable(service, url, &e),
    }
}

/// Opens the store of `namespace` as [`open`] does, with the guard that removes the namespace
/// when the returned store is dropped.
pub async fn open_fresh(service: &str, namespace: ServerNamespace) -> Option<TestStore> {
    let store = open(service, namespace.url()).await?;
    Some(TestStore::from_arc(store).with_namespace(namespace.into_guard()))
}

/// The local backends compiled in, each with a URL for a fresh store under `dir`.
#[cfg_attr(
    not(any(feature = "file", feature = "sqlite")),
    allow(unused_variables, reason = "no local backend compiled in")
)]
pub fn local_urls(dir: &std::path::Path) -> Vec<(&'static str, String)> {
    vec![
        #[cfg(feature = "file")]
        ("file", format!("file://{}", dir.join("files").display())),
        #[cfg(feature = "sqlite")]
        (
            "sqlite",
            format!("sqlite://{}", dir.join("agent.db").display()),
        ),
    ]
}

/// The server backends compiled in, each with a fresh namespace named after `prefix`.
#[cfg_attr(
    not(any(feature = "redis", feature = "postgres", feature = "mongodb")),
    allow(unused_variables, reason = "no server backend compiled in")
)]
pub fn server_namespaces(prefix: &str) -> Vec<(&'static str, ServerNamespace)> {
    vec![
        #[cfg(feature = "redis")]
        ("redis", ServerNamespace::redis(prefix)),
        #[cfg(feature = "postgres")]
        ("postgres", ServerNamespace::postgres(prefix)),
        #[cfg(feature = "mongodb")]
        ("mongodb", ServerNamespace::mongodb(prefix)),
    ]
}

/// A fresh store of `backend` (`file`, `sqlite`, `redis`, `postgres`, `mongodb`): a new
/// folder (the file URL ending in `file_options`, such as `?durability=buffered`), or a new
/// namespace named after `prefix` on the server; `None` when the server is unavailable and
/// services are not required.
#[cfg_attr(
    not(any(feature = "redis", feature = "postgres", feature = "mongodb")),
    allow(unused_variables, reason = "no server backend compiled in")
)]
pub async fn fresh(backend: &'static str, prefix: &str, file_options: &str) -> Option<TestStore> {
    let dir = tempfile::tempdir().expect("temporary folder");
    let url = match backend {
        "file" => format!("file://{}{file_options}", dir.path().display()),
        "sqlite" => format!("sqlite://{}", dir.path().join("agent.db").display()),
        #[cfg(feature = "redis")]
        "redis" => return open_fresh(backend, ServerNamespace::redis(prefix)).await,
        #[cfg(feature = "postgres")]
        "postgres" => return open_fresh(backend, ServerNamespace::postgres(prefix)).await,
        #[cfg(feature = "mongodb")]
        "mongodb" => return open_fresh(backend, ServerNamespace::mongodb(prefix)).await,
        other => panic!("no backend {other} compiled in"),
    };
    let store = open(backend, &url).await.expect("a local store");
    Some(TestStore::from_arc(store).keep(dir))
}
