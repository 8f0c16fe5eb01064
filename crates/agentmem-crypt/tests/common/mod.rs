//! What the crypt crate's tests share: stores as trait objects, session, thread and checkpoint
//! ids, keys and the encryption layer over a raw store.
#![allow(
    dead_code,
    reason = "shared by several test binaries, each using part of it"
)]

use std::sync::Arc;

use agentmem_core::{
    AgentMemory, AgentMemoryExt, Checkpoint, CheckpointKey, CheckpointQuery, CheckpointStore,
    CheckpointTuple, ErrorKind, Result, SessionId, ThreadId, TypedBytes,
};
use agentmem_crypt::{CryptoError, EncryptLayer, MasterKey};
use agentmem_file::{Durability, FileConfig, FileStore};

/// A raw store, as the tests hold it.
pub type Store = Arc<dyn AgentMemory>;

pub fn sid(name: &str) -> SessionId {
    name.parse().expect("a valid session id")
}

pub fn thread(name: &str) -> ThreadId {
    name.parse().expect("a valid thread id")
}

/// The checkpoint `id` of `thread_name` in namespace `ns`.
pub fn at(thread_name: &str, ns: &str, id: &str) -> CheckpointKey {
    CheckpointKey {
        thread: thread(thread_name),
        ns: ns.parse().expect("a valid namespace"),
        id: id.parse().expect("a valid checkpoint id"),
    }
}

/// A fresh raw store: core's in-memory store.
pub fn raw() -> Store {
    Arc::new(agentmem_core::InMemoryStore::new())
}

/// A fresh raw store (core's in-memory one), a new key, and the store wearing the encryption
/// layer with that key.
pub fn keyed() -> (Store, MasterKey, impl AgentMemory) {
    let raw = raw();
    let key = key();
    let store = with_key(&raw, &key);
    (raw, key, store)
}

/// A new random key.
pub fn key() -> MasterKey {
    MasterKey::generate().expect("a random key")
}

/// `raw` wearing the encryption layer with `key`.
pub fn with_key(raw: &Store, key: &MasterKey) -> impl AgentMemory {
    raw.clone().with_layer(EncryptLayer::new(key))
}

/// Why the layer refused, when it was a [`CryptoError`](agentmem_crypt::CryptoError).
pub fn crypto_error(err: &agentmem_core::Error) -> Option<&agentmem_crypt::CryptoError> {
    std::error::Error::source(err).and_then(|s| s.downcast_ref())
}

/// A checkpoint at `key` with `body`, `parent` and `versions`, and a fixed time (so that stores
/// compared with each other hold equal checkpoints); metadata is left to the caller.
pub fn checkpoint_with(
    key: CheckpointKey, body: TypedBytes, parent: Option<&str>, versions: &[(&str, &str)],
) -> Checkpoint {
    let mut c = Checkpoint::new(key, body);
    c.created_at =
        serde_json::from_value(serde_json::json!("2026-01-02T03:04:05.678901Z")).expect("a time");
    c.parent = parent.map(|p| p.parse().expect("a valid parent id"));
    c.channel_versions = versions
        .iter()
        .map(|(c, v)| ((*c).to_owned(), (*v).to_owned()))
        .collect();
    c
}

/// Asserts that `result` is the refusal of a store marked encrypted with `key` to a program
/// without a key, naming how to give one.
pub fn assert_no_key<T: std::fmt::Debug>(result: Result<T>, key: &MasterKey, what: &str) {
    let err = result.expect_err(what);
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{what}: {err}");
    assert_eq!(
        crypto_error(&err),
        Some(&CryptoError::NoKey { found: key.id() }),
        "{what}: {err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("encrypted") && text.contains("AGENTMEM_ENCRYPTION_KEY"),
        "{what}: {text}"
    );
    assert!(
        !text.contains(&key.to_base64()),
        "{what}: the key is never printed"
    );
}

/// Asserts that `result` is the refusal of a key other than the one the data was sealed with.
pub fn assert_wrong_key<T: std::fmt::Debug>(result: Result<T>, what: &str) {
    let err = result.expect_err(what);
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{what}: {err}");
    assert!(
        matches!(crypto_error(&err), Some(CryptoError::WrongKey { .. })),
        "{what}: {err}"
    );
    assert!(
        err.to_string().contains("wrong encryption key"),
        "{what}: {err}"
    );
}

/// Everything a reader sees of the checkpoints of a store.
pub async fn everything<S: CheckpointStore + ?Sized>(store: &S) -> Vec<CheckpointTuple> {
    store
        .list_checkpoints(&CheckpointQuery::default())
        .await
        .expect("list every checkpoint")
}

/// Every opaque value of `tuples`.
pub fn values(tuples: &[CheckpointTuple]) -> Vec<&TypedBytes> {
    let mut out = Vec::new();
    for t in tuples {
        out.push(&t.checkpoint.body);
        out.extend(t.blobs.iter().filter_map(|b| b.value.as_ref()));
        out.extend(t.writes.iter().map(|w| &w.value));
    }
    out
}

/// A file store with `durability` in a fresh folder, and the folder (removed when dropped).
pub async fn file_store(durability: Durability) -> (Store, Option<tempfile::TempDir>) {
    let dir = tempfile::tempdir().expect("a temp folder");
    let config = FileConfig::new(dir.path()).with_durability(durability);
    let files = FileStore::connect_with(config)
        .await
        .expect("open the file store");
    (Arc::new(files), Some(dir))
}

/// Core's in-memory store, and no folder: the shape of [`file_store`]'s answer.
pub async fn in_memory() -> (Store, Option<tempfile::TempDir>) {
    (raw(), None)
}

/// Core's in-memory store, and a file store with `durability` in a fresh folder (kept while
/// the guard lives).
pub async fn stores(durability: Durability) -> Vec<(Store, Option<tempfile::TempDir>)> {
    vec![in_memory().await, file_store(durability).await]
}
