//! Conveniences over [`AgentMemory`], implemented once for every store.

use async_trait::async_trait;

use crate::error::Result;
use crate::model::{MemoryItem, MemoryKind, Message};
use crate::name::SessionId;
use crate::store::AgentMemory;

/// Conveniences for every [`AgentMemory`], including `dyn AgentMemory`.
///
/// A blanket implementation, so a wrapper store cannot override (and silently change) them.
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

    /// Stores `text` as a new memory item of `kind` (B7) and returns it as stored.
    async fn store_memory(&self, kind: MemoryKind, text: &str) -> Result<MemoryItem> {
        self.put_memory(&MemoryItem::new(kind, text)).await
    }
}

impl<T: AgentMemory + ?Sized> AgentMemoryExt for T {}
