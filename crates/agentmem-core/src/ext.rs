//! Conveniences over [`AgentMemory`], implemented once for every store.

use async_trait::async_trait;

use crate::error::Result;
use crate::layer::Layer;
use crate::model::{MemoryItem, MemoryKind, Message};
use crate::name::SessionId;
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
        let mut ids: Vec<SessionId> = self
            .list_sessions()
            .await?
            .into_iter()
            .map(|info| info.id)
            .collect();
        ids.sort();
        Ok(ids)
    }

    /// Stores `text` as a new memory item of `kind` and returns it as stored.
    async fn store_memory(&self, kind: MemoryKind, text: &str) -> Result<MemoryItem> {
        self.put_memory(&MemoryItem::new(kind, text)).await
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
