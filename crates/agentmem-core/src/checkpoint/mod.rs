//! Checkpoints: the state of a graph run, step by step (LangGraph's checkpointer model), a data
//! kind of its own beside sessions and memory items.
//!
//! A *thread* ([`ThreadId`]) holds checkpoints in *namespaces* ([`CheckpointNs`]: `""` for the
//! root graph, one per subgraph). A [`Checkpoint`] is identified by (thread, namespace, id);
//! ids order checkpoints, and a checkpoint names its parent. What the application hands over
//! stays opaque and is stored byte for byte ([`TypedBytes`]: a type tag and bytes): the
//! checkpoint body, each channel value ([`ChannelBlob`], keyed by (thread, namespace, channel,
//! version) and written only when its version changes, so a long thread does not copy its
//! history into every checkpoint) and each pending write ([`PendingWrite`], keyed by (thread,
//! namespace, checkpoint id, task id, index)). What is queryable is kept in the clear:
//! the keys, the parent, the channel versions and the metadata (a JSON object filtered by
//! equality on top-level keys; `run_id` across threads).
//!
//! The rules every store follows are written once here, for the in-memory store and backends
//! that evaluate in the client: [`CheckpointQuery::matches`], [`sort_writes`],
//! [`merge_write`], [`newest_first`], and [`ThreadCheckpoints`], one thread as plain data with
//! every operation on it.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::{check_metadata_depth, check_stored_text, Metadata};
use crate::name::{CheckpointId, CheckpointNs, ThreadId};

mod thread;

pub use thread::{missing_thread, newest_first, thread_exists, ThreadCheckpoints};

/// An opaque value as the application's serializer made it: a type tag (LangGraph's `"msgpack"`,
/// `"json"`, `"bytes"`, `"null"`, …) and its bytes, stored and returned byte for byte. In JSON
/// (exports) the bytes are standard base64.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TypedBytes {
    /// What the bytes are, for the serializer that reads them back.
    #[serde(rename = "type")]
    pub type_tag: String,
    /// The serialized value.
    #[serde(with = "base64_bytes")]
    pub bytes: Vec<u8>,
}

impl TypedBytes {
    /// A value of type `type_tag`.
    pub fn new(type_tag: impl Into<String>, bytes: impl Into<Vec<u8>>) -> Self {
        TypedBytes {
            type_tag: type_tag.into(),
            bytes: bytes.into(),
        }
    }
}

mod base64_bytes {
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine as _;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        STANDARD.decode(text).map_err(serde::de::Error::custom)
    }
}

/// Where a checkpoint is: its thread, namespace and id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CheckpointKey {
    /// The thread.
    pub thread: ThreadId,
    /// The namespace within the thread (`""` for the root graph).
    #[serde(default)]
    pub ns: CheckpointNs,
    /// The checkpoint's id.
    pub id: CheckpointId,
}

/// One checkpoint: its place, its parent, its opaque body and what is queryable about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Its thread, namespace and id.
    #[serde(flatten)]
    pub key: CheckpointKey,
    /// The checkpoint it follows in the same thread and namespace, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<CheckpointId>,
    /// The checkpoint as the application serialized it, without its channel values (those are
    /// [`ChannelBlob`]s).
    pub body: TypedBytes,
    /// The version of each channel the checkpoint reads: with the thread and namespace, the
    /// keys of the [`ChannelBlob`]s that hold its channel values.
    #[serde(default)]
    pub channel_versions: BTreeMap<String, String>,
    /// Queryable metadata (LangGraph's `source`, `step`, `parents`, `run_id` and the
    /// application's own keys), kept in the clear.
    #[serde(default)]
    pub metadata: Metadata,
    /// When the checkpoint was written.
    pub created_at: DateTime<Utc>,
}

impl Checkpoint {
    /// A checkpoint at `key` with `body`, written now, without parent, channels or metadata.
    pub fn new(key: CheckpointKey, body: TypedBytes) -> Self {
        Checkpoint {
            key,
            parent: None,
            body,
            channel_versions: BTreeMap::new(),
            metadata: Metadata::new(),
            created_at: crate::now(),
        }
    }

    /// The run that wrote the checkpoint: its metadata's `run_id`, when a string.
    pub fn run_id(&self) -> Option<&str> {
        self.metadata.get("run_id").and_then(|v| v.as_str())
    }
}

/// The value of one channel at one version, keyed by (thread, namespace, channel, version).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelBlob {
    /// The channel.
    pub channel: String,
    /// Its version, as [`Checkpoint::channel_versions`] names it.
    pub version: String,
    /// The value; `None` when the channel was emptied at this version.
    pub value: Option<TypedBytes>,
}

/// A write a task made after a checkpoint, kept until the next checkpoint of the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingWrite {
    /// The task that wrote it.
    pub task_id: String,
    /// Its index within the task's writes; negative for LangGraph's special writes (error,
    /// interrupt, resume, …), which replace an earlier write at the same index.
    pub idx: i64,
    /// The channel written.
    pub channel: String,
    /// The value written.
    pub value: TypedBytes,
    /// The path of the task in the graph (for ordering; `""` when not given).
    #[serde(default)]
    pub task_path: String,
}

/// A checkpoint with what a reader needs to rebuild the state: the channel values its
/// versions name (those stored), and the pending writes made after it, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckpointTuple {
    /// The checkpoint.
    pub checkpoint: Checkpoint,
    /// The stored blobs among (channel, version) of `checkpoint.channel_versions`, by channel.
    pub blobs: Vec<ChannelBlob>,
    /// Its pending writes, sorted by [`sort_writes`].
    pub writes: Vec<PendingWrite>,
}

/// Which checkpoints [`list_checkpoints`](crate::CheckpointStore::list_checkpoints) returns:
/// newest (greatest id) first, the filters applied in the store before `limit`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CheckpointQuery {
    /// Only this thread's (every thread's when `None`).
    pub thread: Option<ThreadId>,
    /// Only this namespace's (every namespace's when `None`; `Some("")` is the root only).
    pub ns: Option<CheckpointNs>,
    /// Only the checkpoint with this id.
    pub id: Option<CheckpointId>,
    /// Only checkpoints with a smaller id.
    pub before: Option<CheckpointId>,
    /// Only checkpoints whose metadata holds each of these top-level keys with an equal JSON
    /// value (`42` is not `"42"`).
    pub metadata: Metadata,
    /// At most this many.
    pub limit: Option<usize>,
}

impl CheckpointQuery {
    /// Every checkpoint of `thread`.
    pub fn thread(thread: ThreadId) -> Self {
        CheckpointQuery {
            thread: Some(thread),
            ..CheckpointQuery::default()
        }
    }

    /// Whether `checkpoint` passes every filter (all but `limit`).
    pub fn matches(&self, checkpoint: &Checkpoint) -> bool {
        let key = &checkpoint.key;
        self.thread.as_ref().is_none_or(|t| *t == key.thread)
            && self.ns.as_ref().is_none_or(|ns| *ns == key.ns)
            && self.id.as_ref().is_none_or(|id| *id == key.id)
            && self.before.as_ref().is_none_or(|before| key.id < *before)
            && self
                .metadata
                .iter()
                .all(|(k, v)| checkpoint.metadata.get(k) == Some(v))
    }
}

/// What [`prune_checkpoints`](crate::CheckpointStore::prune_checkpoints) keeps of each thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CheckpointPrune {
    /// The newest checkpoint of each namespace, with its pending writes and the channel values
    /// it reads; every other checkpoint goes.
    KeepLatest,
    /// Nothing: every checkpoint, write and channel value of the thread goes.
    DeleteAll,
}

/// A thread as [`list_threads`](crate::CheckpointStore::list_threads) shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadInfo {
    /// The thread.
    pub thread: ThreadId,
    /// How many checkpoints it holds, over all namespaces.
    pub checkpoints: u64,
    /// When its newest checkpoint was written.
    pub updated_at: DateTime<Utc>,
}

/// Sorts pending writes as readers get them: by task path, task id, then index.
pub fn sort_writes(writes: &mut [PendingWrite]) {
    writes
        .sort_by(|a, b| (&a.task_path, &a.task_id, a.idx).cmp(&(&b.task_path, &b.task_id, b.idx)));
}

/// Whether `new` is stored over an existing write with its (task id, index): only a special
/// write (negative index) replaces; an ordinary one is written once (a retried task writes
/// the same again).
pub fn write_replaces(new: &PendingWrite) -> bool {
    new.idx < 0
}

/// Puts `new` into `stored` (the writes of one checkpoint) by the rule of [`write_replaces`].
pub fn merge_write(stored: &mut Vec<PendingWrite>, new: &PendingWrite) {
    match stored
        .iter_mut()
        .find(|w| w.task_id == new.task_id && w.idx == new.idx)
    {
        Some(old) if write_replaces(new) => *old = new.clone(),
        Some(_) => {}
        None => stored.push(new.clone()),
    }
}

/// The longest channel name, channel version, task id or type tag accepted, in bytes.
pub const MAX_CHECKPOINT_TEXT_BYTES: usize = 1024;

/// The longest task path accepted, in bytes (nested subgraphs make long paths).
pub const MAX_TASK_PATH_BYTES: usize = 4 * MAX_CHECKPOINT_TEXT_BYTES;

fn check_typed(what: &str, value: &TypedBytes) -> Result<()> {
    check_stored_text(
        &format!("the type tag of {what}"),
        &value.type_tag,
        MAX_CHECKPOINT_TEXT_BYTES,
    )
}

fn check_channel_version(channel: &str, version: &str) -> Result<()> {
    check_stored_text("a channel name", channel, MAX_CHECKPOINT_TEXT_BYTES)?;
    check_stored_text(
        &format!("the version of channel {channel:?}"),
        version,
        MAX_CHECKPOINT_TEXT_BYTES,
    )
}

impl Checkpoint {
    /// Checks that the checkpoint can be stored and read back: text fields within bounds and
    /// without NUL, metadata no deeper than [`MAX_METADATA_DEPTH`](crate::MAX_METADATA_DEPTH).
    pub fn validate(&self) -> Result<()> {
        check_typed("a checkpoint body", &self.body)?;
        for (channel, version) in &self.channel_versions {
            check_channel_version(channel, version)?;
        }
        check_metadata_depth("checkpoint metadata", &self.metadata)
    }
}

impl ChannelBlob {
    /// Checks that the blob can be stored: see [`Checkpoint::validate`].
    pub fn validate(&self) -> Result<()> {
        check_channel_version(&self.channel, &self.version)?;
        match &self.value {
            Some(value) => check_typed("a channel value", value),
            None => Ok(()),
        }
    }
}

impl PendingWrite {
    /// Checks that the write can be stored: see [`Checkpoint::validate`].
    pub fn validate(&self) -> Result<()> {
        check_stored_text("a task id", &self.task_id, MAX_CHECKPOINT_TEXT_BYTES)?;
        check_stored_text("a task path", &self.task_path, MAX_TASK_PATH_BYTES)?;
        check_stored_text("a channel name", &self.channel, MAX_CHECKPOINT_TEXT_BYTES)?;
        check_typed("a pending write", &self.value)
    }
}

impl CheckpointQuery {
    /// Checks the metadata filter's depth (see [`Checkpoint::validate`]).
    pub fn validate(&self) -> Result<()> {
        check_metadata_depth("a checkpoint metadata filter", &self.metadata)
    }
}

/// Implements [`CheckpointStore`](crate::CheckpointStore) for a store type that keeps no
/// checkpoints: every method refused with `Unsupported`, naming the store's backend. Such a
/// store leaves [`Capabilities::checkpoints`](crate::Capabilities::checkpoints) off.
///
/// ```
/// # use agentmem_core::*;
/// #[derive(Debug)]
/// struct Sessions;
/// agentmem_core::refuse_checkpoints!(Sessions, "sessions-only");
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let err = Sessions.list_threads().await.unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::Unsupported);
/// # });
/// ```
#[macro_export]
macro_rules! refuse_checkpoints {
    ($store:ty, $name:expr) => {
        #[$crate::async_trait]
        impl $crate::CheckpointStore for $store {
            async fn put_checkpoint(
                &self, _: &$crate::Checkpoint, _: &[$crate::ChannelBlob],
            ) -> $crate::Result<()> {
                Err($crate::checkpoint::unsupported($name))
            }

            async fn put_writes(
                &self, _: &$crate::CheckpointKey, _: &[$crate::PendingWrite],
            ) -> $crate::Result<()> {
                Err($crate::checkpoint::unsupported($name))
            }

            async fn get_checkpoint(
                &self, _: &$crate::ThreadId, _: &$crate::CheckpointNs,
                _: Option<&$crate::CheckpointId>,
            ) -> $crate::Result<Option<$crate::CheckpointTuple>> {
                Err($crate::checkpoint::unsupported($name))
            }

            async fn list_checkpoints(
                &self, _: &$crate::CheckpointQuery,
            ) -> $crate::Result<Vec<$crate::CheckpointTuple>> {
                Err($crate::checkpoint::unsupported($name))
            }

            async fn list_threads(&self) -> $crate::Result<Vec<$crate::ThreadInfo>> {
                Err($crate::checkpoint::unsupported($name))
            }

            async fn delete_thread(&self, _: &$crate::ThreadId) -> $crate::Result<bool> {
                Err($crate::checkpoint::unsupported($name))
            }

            async fn delete_run_checkpoints(&self, _: &[String]) -> $crate::Result<u64> {
                Err($crate::checkpoint::unsupported($name))
            }

            async fn copy_thread(
                &self, _: &$crate::ThreadId, _: &$crate::ThreadId,
            ) -> $crate::Result<u64> {
                Err($crate::checkpoint::unsupported($name))
            }

            async fn prune_checkpoints(
                &self, _: &[$crate::ThreadId], _: $crate::CheckpointPrune,
            ) -> $crate::Result<u64> {
                Err($crate::checkpoint::unsupported($name))
            }
        }
    };
}

/// The error of a store that keeps no checkpoints (see [`refuse_checkpoints!`]).
pub fn unsupported(backend: &str) -> Error {
    Error::unsupported(format!("the {backend} store keeps no checkpoints"))
}
