//! Shared test setup of the Redis test binaries (`conformance`, `redis`, `cluster`, `tls`).
#![allow(
    dead_code,
    reason = "shared by several test binaries, each using part of it"
)]

use std::sync::Arc;

use agentmem_core::{
    AgentMemory, ArchiveInfo, Layered, Message, PendingWrite, SessionId, SessionStore, TypedBytes,
};
use agentmem_redis::{RedisConfig, RedisStore};
use agentmem_testkit::{NamespaceGuard, ServerNamespace, TestStore};
use redis::aio::MultiplexedConnection;

mod raw;
#[allow(
    unused_imports,
    reason = "shared by several test binaries, each using part of it"
)]
pub use raw::{index_counters, keys};

/// A store for the conformance suite on `namespace`'s server, or `None` (the test skips)
/// when that server (`server`, as the skip note names it) does not answer.
pub async fn conformance_store(namespace: ServerNamespace, server: &str) -> Option<TestStore> {
    let opened = RedisStore::connect(namespace.url()).await;
    namespace.test_store(server, opened)
}

/// The single Redis server's URL (`REDIS_URL`).
pub fn single_url() -> String {
    agentmem_testkit::env_url("REDIS_URL", "redis://127.0.0.1:6379")
}

/// The config of a store on `url` under a fresh prefix (`tag` and a unique suffix), and the
/// guard that deletes the prefix's keys when the test ends (passed or failed).
pub fn config_under_fresh_prefix(url: &str, tag: &str) -> (RedisConfig, NamespaceGuard) {
    let prefix = agentmem_testkit::unique_namespace(tag);
    let guard = NamespaceGuard::new().redis_store_prefix(url, &prefix);
    let config = RedisConfig::new(url).unwrap().with_prefix(&prefix).unwrap();
    (config, guard)
}

/// A store on `url` under a fresh prefix (see [`config_under_fresh_prefix`]) and the guard
/// that deletes the prefix's keys, or `None` (the test skips) when the server does not answer.
pub async fn store_under_fresh_prefix(
    url: &str, tag: &str,
) -> Option<(Layered<RedisStore>, NamespaceGuard)> {
    let (config, guard) = config_under_fresh_prefix(url, tag);
    match RedisStore::connect_with(config).await {
        Ok(store) => Some((store, guard)),
        Err(e) => agentmem_testkit::service_unavailable("redis", url, &e),
    }
}

/// `n` handles, each with a connection of its own, on one fresh prefix (`tag` and a unique
/// suffix) of the server at `url`, and the guard that deletes the prefix's keys; `None` (the
/// test skips) when the server does not answer.
pub async fn stores_under_fresh_prefix(
    url: &str, tag: &str, n: usize,
) -> Option<(Vec<Arc<Layered<RedisStore>>>, NamespaceGuard)> {
    let (config, guard) = config_under_fresh_prefix(url, tag);
    let mut stores = Vec::new();
    for _ in 0..n {
        match RedisStore::connect_with(config.clone()).await {
            Ok(store) => stores.push(Arc::new(store)),
            Err(e) => return agentmem_testkit::service_unavailable("redis", url, &e),
        }
    }
    Some((stores, guard))
}

/// A store on `url` under a fresh prefix (see [`config_under_fresh_prefix`]) and a raw
/// connection to the same server, or `None` (the test skips) when the server does not answer.
pub async fn store_and_raw(
    url: &str, tag: &str,
) -> Option<(Layered<RedisStore>, MultiplexedConnection, NamespaceGuard)> {
    let (store, guard) = store_under_fresh_prefix(url, tag).await?;
    let raw = redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    Some((store, raw, guard))
}

/// A small deterministic pseudo-random sequence (a linear congruential generator).
pub struct Lcg(pub u64);

impl Lcg {
    /// The next number, below `n`.
    pub fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) % n as u64) as usize
    }

    /// One of `items`.
    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.next(items.len())]
    }
}

/// The raw line memory item `id` holds in the memory meta hash under key root `root` (the
/// prefix, in braces on a cluster), as a migration wrote it.
pub async fn memory_meta(
    raw: &mut impl redis::aio::ConnectionLike, root: &str, id: &str,
) -> String {
    redis::cmd("HGET")
        .arg(format!("{root}:mem:meta"))
        .arg(id)
        .query_async(raw)
        .await
        .unwrap()
}

/// Asserts that `store` reports the current schema version (after a migration, or on a
/// fresh prefix).
pub async fn assert_current_schema(store: &impl SessionStore) {
    assert_eq!(
        store.schema_version().await.unwrap(),
        agentmem_redis::SCHEMA_VERSION
    );
}

/// Appends `messages` to session `id` of `store`, then compacts them into the one system
/// message `summary`: the archive the compaction made.
pub async fn compacted(
    store: &dyn AgentMemory, id: &SessionId, messages: &[Message], summary: &str,
) -> ArchiveInfo {
    store.append(id, messages).await.unwrap();
    store
        .compact(id, &[Message::system(summary)])
        .await
        .unwrap()
}

/// A pending write of task `t` (index 0) to channel `x`: the one write a test needs when its
/// content does not matter.
pub fn plain_write() -> PendingWrite {
    PendingWrite {
        task_id: "t".into(),
        idx: 0,
        channel: "x".into(),
        value: TypedBytes::new("json", b"1".to_vec()),
        task_path: String::new(),
    }
}
