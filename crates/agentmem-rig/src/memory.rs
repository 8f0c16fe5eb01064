//! [`AgentmemConversationMemory`]: rig's `ConversationMemory` over an agentmem store.

use std::fmt;
use std::sync::Arc;

use agentmem_core::{AgentMemory, Error, SessionId, SessionStore};
use rig_core::completion::Message as RigMessage;
use rig_core::id::ConversationId;
use rig_core::memory::{ConversationMemory, MemoryError};
use rig_core::wasm_compat::WasmBoxedFuture;

use crate::convert::{from_rig, to_rig};

/// rig conversation memory kept in any agentmem store: each rig conversation is one agentmem
/// session, named by its conversation id.
///
/// - `load` returns the session's messages (the last [`history_limit`](Self::history_limit)
///   when one is set, never starting with a tool result whose call was cut off), converted
///   back to rig messages exactly as they were appended.
/// - `append` is one agentmem `append` of the whole turn: all of it is stored, contiguously,
///   or none of it.
/// - `clear` deletes the session with its archives (see [`Self::clear_keeps_archives`]).
///
/// Conversation ids go through agentmem's name validation (1-128 bytes of letters, digits,
/// `-`, `_`, `.`; see [`SessionId`]); an unsafe id fails with a [`MemoryError::Backend`]
/// holding an [`Error`] of kind `InvalidInput`, and nothing is written.
#[derive(Clone)]
pub struct AgentmemConversationMemory {
    store: Arc<dyn AgentMemory>,
    history_limit: Option<usize>,
    keep_archives: bool,
}

impl AgentmemConversationMemory {
    /// Conversation memory in `store`, loading whole histories.
    pub fn new(store: Arc<dyn AgentMemory>) -> Self {
        AgentmemConversationMemory {
            store,
            history_limit: None,
            keep_archives: false,
        }
    }

    /// Loads only the last `limit` messages of a conversation (`None`: all of them). A tool
    /// result whose call falls outside the window is left out with it, so fewer may come back.
    pub fn with_history_limit(mut self, limit: impl Into<Option<usize>>) -> Self {
        self.history_limit = limit.into();
        self
    }

    /// Makes `clear` empty the conversation but keep its archives (compacted transcripts),
    /// instead of deleting them too.
    pub fn clear_keeps_archives(mut self) -> Self {
        self.keep_archives = true;
        self
    }

    /// The history limit `load` applies.
    pub fn history_limit(&self) -> Option<usize> {
        self.history_limit
    }

    /// The agentmem store behind this memory.
    pub fn store(&self) -> &Arc<dyn AgentMemory> {
        &self.store
    }

    /// The agentmem session a rig conversation is kept in.
    pub fn session_id(conversation: &ConversationId) -> Result<SessionId, MemoryError> {
        SessionId::new(conversation.as_str()).map_err(MemoryError::backend)
    }

    async fn load_messages(
        &self, conversation: &ConversationId,
    ) -> Result<Vec<RigMessage>, MemoryError> {
        let session = Self::session_id(conversation)?;
        let stored = self
            .store
            .load(&session, self.history_limit)
            .await
            .map_err(MemoryError::backend)?;
        Ok(stored
            .map(|session| session.messages.iter().map(to_rig).collect())
            .unwrap_or_default())
    }

    async fn append_messages(
        &self, conversation: &ConversationId, messages: Vec<RigMessage>,
    ) -> Result<(), MemoryError> {
        let session = Self::session_id(conversation)?;
        let stored: Vec<_> = messages.iter().map(from_rig).collect();
        self.store
            .append(&session, &stored)
            .await
            .map_err(MemoryError::backend)
    }

    async fn clear_conversation(&self, conversation: &ConversationId) -> Result<(), MemoryError> {
        let session = Self::session_id(conversation)?;
        let result = if self.keep_archives {
            match self.store.load(&session, Some(0)).await {
                Ok(Some(existing)) => {
                    self.store
                        .save_session(&session, &[], &existing.metadata)
                        .await
                }
                Ok(None) => Ok(()),
                Err(error) => Err(error),
            }
        } else {
            self.store.delete_session(&session).await.map(|_| ())
        };
        result.map_err(MemoryError::backend)
    }
}

impl fmt::Debug for AgentmemConversationMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentmemConversationMemory")
            .field("backend", &self.store.backend())
            .field("history_limit", &self.history_limit)
            .field("keep_archives", &self.keep_archives)
            .finish()
    }
}

impl ConversationMemory for AgentmemConversationMemory {
    fn load<'a>(
        &'a self, conversation_id: &'a ConversationId,
    ) -> WasmBoxedFuture<'a, Result<Vec<RigMessage>, MemoryError>> {
        Box::pin(self.load_messages(conversation_id))
    }

    fn append<'a>(
        &'a self, conversation_id: &'a ConversationId, messages: Vec<RigMessage>,
    ) -> WasmBoxedFuture<'a, Result<(), MemoryError>> {
        Box::pin(self.append_messages(conversation_id, messages))
    }

    fn clear<'a>(
        &'a self, conversation_id: &'a ConversationId,
    ) -> WasmBoxedFuture<'a, Result<(), MemoryError>> {
        Box::pin(self.clear_conversation(conversation_id))
    }
}

/// The agentmem [`Error`] behind a rig [`MemoryError`], when there is one: its
/// [`kind`](Error::kind) tells an unsafe conversation id (`InvalidInput`) from a dead server
/// (`Unavailable`).
pub fn agentmem_error(error: &MemoryError) -> Option<&Error> {
    match error {
        MemoryError::Backend(source) => source.downcast_ref::<Error>(),
        _ => None,
    }
}
