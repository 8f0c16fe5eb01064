//! Reads of a store's keys over a raw connection, shared by the test binaries (through
//! `common`) and the crate's own unit tests (`src/lib.rs` includes this file under
//! `cfg(test)`): so it uses nothing but the `redis` crate.

use redis::aio::ConnectionLike;

/// The keys matching `pattern` (Redis `KEYS`; on a cluster, from every master).
pub async fn keys<C: ConnectionLike + Send>(raw: &mut C, pattern: &str) -> Vec<String> {
    redis::cmd("KEYS")
        .arg(pattern)
        .query_async(raw)
        .await
        .unwrap()
}

/// The counters of the message search index under key root `root` (the prefix, in braces
/// on a cluster): the documents (current messages) and their words (index terms).
pub async fn index_counters<C: ConnectionLike + Send>(raw: &mut C, root: &str) -> (i64, i64) {
    redis::cmd("HMGET")
        .arg(format!("{root}:stats"))
        .arg("docs")
        .arg("words")
        .query_async(raw)
        .await
        .unwrap()
}
