//! Conveniences over [`AgentMemory`], implemented once for every store.

use async_trait::async_trait;

use crate::checkpoint::CheckpointQuery;
use crate::error::Result;
use crate::layer::Layer;
use crate::model::{MemoryItem, MemoryKind, Message};
use crate::name::{CheckpointId, SessionId, ThreadId};
use crate::store::AgentMemory;

/// Conveniences for every [`AgentMemory`], including `dyn AgentMemory`.
///
/// A blanket implementation, so a wrapper store cannot override (and silently change) them.
///
/// ```
/// use std::sync::Arc;
/// use agentmem_core::{AgentMemory, MemoryStore, SessionStore, AgentMemoryExt, InMemoryStore, MemoryKind, Message, SessionId};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store: Arc<dyn AgentMemory> = Arc::new(InMemoryStore::new());
/// let id: SessionId = "demo".parse()?;
/// // A missing session reads as empty, not as an error.
/// assert!(!store.session_exists(&id).await?);
/// assert!(store.messages(&id).await?.is_empty());
/// store.append_one(&id, Message::user("hi")).await?;
/// store.append_one(&id, Message::assistant("hello")).await?;
/// assert!(store.session_exists(&id).await?);
/// assert_eq!(store.session_ids().await?, [id.clone()]);
/// assert_eq!(store.last_messages(&id, 1).await?[0].content, "hello");
/// let fact = store.store_memory(MemoryKind::Fact, "The user prefers metric units").await?;
/// assert_eq!(store.get_memory(&fact.id).await?, Some(fact));
/// # Ok::<(), agentmem_core::Error>(())
/// # }).unwrap();
/// ```
#[async_trait]
pub trait AgentMemoryExt: AgentMemory {
    /// Appends one message.
    async fn append_one(&self, session: &SessionId, message: Message) -> Result<()> {
        self.append(session, std::slice::from_ref(&message)).await
    }

    /// All messages of a session; empty when it does not exist.
    async fn messages(&self, session: &SessionId) -> Result<Vec<Message>> {
        Ok(self
            .load(session, None)
            .await?
            .map(|s| s.messages)
            .unwrap_or_default())
    }

    /// The last `n` messages of a session (never an orphaned tool result); empty when missing.
    async fn last_messages(&self, session: &SessionId, n: usize) -> Result<Vec<Message>> {
        Ok(self
            .load(session, Some(n))
            .await?
            .map(|s| s.messages)
            .unwrap_or_default())
    }

    /// Whether the session exists.
    async fn session_exists(&self, session: &SessionId) -> Result<bool> {
        Ok(self.load(session, Some(0)).await?.is_some())
    }

    /// The ids of every session, sorted (what [`list_sessions`](crate::SessionStore::list_sessions)
    /// lists, without the rest of each summary).
    async fn session_ids(&self) -> Result<Vec<SessionId>> {
        Ok(sorted(
            self.list_sessions().await?.into_iter().map(|info| info.id),
        ))
    }

    /// Every thread holding a checkpoint, sorted by byte order (a database's collation may sort
    /// otherwise); none when the store keeps no checkpoints (its
    /// [`capabilities`](crate::SessionStore::capabilities) say so).
    async fn thread_ids(&self) -> Result<Vec<ThreadId>> {
        if !self.capabilities().checkpoints {
            return Ok(Vec::new());
        }
        Ok(sorted(
            self.list_threads()
                .await?
                .into_iter()
                .map(|info| info.thread),
        ))
    }

    /// Stores `text` as a new memory item of `kind` and returns it as stored.
    async fn store_memory(&self, kind: MemoryKind, text: &str) -> Result<MemoryItem> {
        self.put_memory(&MemoryItem::new(kind, text)).await
    }

    /// Forks thread `source` at checkpoint `at` into the new thread `target`: the checkpoints
    /// of every namespace whose id is at most `at`, with their channel values and pending
    /// writes (ids, parents and metadata kept); returns how many. Without `at` it copies the
    /// whole thread ([`copy_thread`](crate::CheckpointStore::copy_thread), one step). With
    /// `at`, the checkpoints are written one by one, oldest first. `NotFound` when `source`
    /// holds no checkpoint `at`, `Conflict` when `target` holds a checkpoint.
    ///
    /// ```
    /// use agentmem_core::{AgentMemoryExt, Checkpoint, CheckpointKey, CheckpointStore, InMemoryStore, TypedBytes};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let store = InMemoryStore::new();
    /// for id in ["c1", "c2", "c3"] {
    ///     let key = CheckpointKey { thread: "run".parse()?, ns: Default::default(), id: id.parse()? };
    ///     store.put_checkpoint(&Checkpoint::new(key, TypedBytes::new("json", b"{}".to_vec())), &[]).await?;
    /// }
    /// let copied = store.fork_thread(&"run".parse()?, &"what-if".parse()?, Some(&"c2".parse()?)).await?;
    /// assert_eq!(copied, 2);
    /// # Ok::<(), agentmem_core::Error>(())
    /// # }).unwrap();
    /// ```
    async fn fork_thread(
        &self, source: &ThreadId, target: &ThreadId, at: Option<&CheckpointId>,
    ) -> Result<u64> {
        let Some(at) = at else {
            return self.copy_thread(source, target).await;
        };
        let held = self
            .list_checkpoints(&CheckpointQuery {
                limit: Some(1),
                ..CheckpointQuery::thread(target.clone())
            })
            .await?;
        if !held.is_empty() {
            return Err(crate::checkpoint::thread_exists(target));
        }
        let mut tuples: Vec<_> = self
            .list_checkpoints(&CheckpointQuery::thread(source.clone()))
            .await?
            .into_iter()
            .filter(|t| t.checkpoint.key.id <= *at)
            .collect();
        if !tuples.iter().any(|t| t.checkpoint.key.id == *at) {
            return Err(crate::Error::not_found(format!(
                "thread {:?} holds no checkpoint {:?}",
                source.as_str(),
                at.as_str()
            )));
        }
        tuples.reverse();
        for tuple in &tuples {
            let mut checkpoint = tuple.checkpoint.clone();
            checkpoint.key.thread = target.clone();
            self.put_checkpoint(&checkpoint, &tuple.blobs).await?;
            if !tuple.writes.is_empty() {
                self.put_writes(&checkpoint.key, &tuple.writes).await?;
            }
        }
        Ok(tuples.len() as u64)
    }

    /// Wraps this store in `layer` (see [`crate::layer`]).
    fn with_layer<L: Layer<Self>>(self, layer: L) -> L::Store
    where
        Self: Sized,
    {
        layer.layer(self)
    }
}

impl<T: AgentMemory + ?Sized> AgentMemoryExt for T {}

/// `ids` in byte order, each once (a database's collation may order them otherwise).
fn sorted<T: Ord>(ids: impl Iterator<Item = T>) -> Vec<T> {
    let mut ids: Vec<T> = ids.collect();
    ids.sort();
    ids.dedup();
    ids
}
