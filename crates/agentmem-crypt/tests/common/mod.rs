//! What the crypt crate's tests share: stores as trait objects, session, thread and checkpoint
//! ids, keys and the encryption layer over a raw store, and the checkpoint chain the
//! checkpoint tests fill a store with.
#![allow(
    dead_code,
    reason = "shared by several test binaries, each using part of it"
)]

use std::sync::Arc;

use agentmem_core::{
    AgentMemory, AgentMemoryExt, ChannelBlob, Checkpoint, CheckpointKey, CheckpointQuery,
    CheckpointStore, CheckpointTuple, ErrorKind, Metadata, PendingWrite, Result, SessionId,
    ThreadId, TypedBytes,
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

/// The thread of the checkpoint chain [`Values::fill_chain`] puts.
pub const CHAT: &str = "user:42/chat ü*";

/// How one test file makes the opaque parts of the checkpoints it stores: canary bytes to
/// look for in the store, or JSON. The files differ here on purpose; the keys, parents,
/// channel versions and run of the checkpoints are shared.
pub struct Values {
    /// The body of the checkpoint with this id.
    pub body: fn(&str) -> TypedBytes,
    /// The metadata entry a checkpoint carries beside its `run_id`, from the checkpoint.
    pub metadata: fn(&Checkpoint) -> (&'static str, serde_json::Value),
    /// A channel value, from its text.
    pub blob: fn(&str) -> TypedBytes,
    /// A pending write's value, from its text.
    pub write: fn(&str) -> TypedBytes,
}

impl Values {
    /// A checkpoint of run `run-1` at `key` with `parent` and `versions` (see
    /// [`checkpoint_with`]).
    pub fn checkpoint(
        &self, key: CheckpointKey, parent: Option<&str>, versions: &[(&str, &str)],
    ) -> Checkpoint {
        let body = (self.body)(key.id.as_str());
        let mut c = checkpoint_with(key, body, parent, versions);
        let (name, value) = (self.metadata)(&c);
        c.metadata = Metadata::from_iter([
            ("run_id".to_owned(), serde_json::json!("run-1")),
            (name.to_owned(), value),
        ]);
        c
    }

    /// The value of `channel` at `version`, or its emptying (`None`).
    pub fn blob(&self, channel: &str, version: &str, value: Option<&str>) -> ChannelBlob {
        ChannelBlob {
            channel: channel.into(),
            version: version.into(),
            value: value.map(self.blob),
        }
    }

    /// A pending write of `task` to `channel`.
    pub fn write(&self, task: &str, idx: i64, channel: &str, value: &str) -> PendingWrite {
        PendingWrite {
            task_id: task.into(),
            idx,
            channel: channel.into(),
            value: (self.write)(value),
            task_path: format!("~{task}"),
        }
    }

    /// Puts the chain every checkpoint test starts from, without pending writes (each file
    /// puts its own): in [`CHAT`], checkpoint 1 (a value and an emptied channel) and its child
    /// 2 in the root namespace and checkpoint 1 in the subgraph namespace `node:a|b`; in
    /// thread `other`, checkpoint 3 with no channels.
    pub async fn fill_chain<S: CheckpointStore + ?Sized>(&self, store: &S) -> Result<()> {
        store
            .put_checkpoint(
                &self.checkpoint(
                    at(CHAT, "", "1"),
                    None,
                    &[("messages", "1"), ("empty", "1")],
                ),
                &[
                    self.blob("messages", "1", Some("[1]")),
                    self.blob("empty", "1", None),
                ],
            )
            .await?;
        store
            .put_checkpoint(
                &self.checkpoint(
                    at(CHAT, "", "2"),
                    Some("1"),
                    &[("messages", "2"), ("empty", "1")],
                ),
                &[self.blob("messages", "2", Some("[1,2]"))],
            )
            .await?;
        store
            .put_checkpoint(
                &self.checkpoint(at(CHAT, "node:a|b", "1"), None, &[("inner", "1")]),
                &[self.blob("inner", "1", Some("\"inner\""))],
            )
            .await?;
        store
            .put_checkpoint(&self.checkpoint(at("other", "", "3"), None, &[]), &[])
            .await
    }
}

/// The content of the first message of session `id` in `store`.
pub async fn first_message<S: AgentMemory + ?Sized>(store: &S, id: &SessionId) -> String {
    let messages = store.messages(id).await.expect("load the session");
    messages[0].content.clone()
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

/// A fresh store without a marker (core's in-memory one) holding the checkpoints and channel
/// values of `raw` as they are stored, pending writes left out: sealed records alone, as in a
/// store encrypted before markers.
pub async fn unmarked_copy(raw: &Store) -> Store {
    let unmarked = self::raw();
    for tuple in everything(&**raw).await {
        unmarked
            .put_checkpoint(&tuple.checkpoint, &tuple.blobs)
            .await
            .expect("raw put");
    }
    unmarked
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
