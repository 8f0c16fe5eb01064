//! The agent's side of the [`ContextStore`] protocol: the store a protocol-only agent shows
//! as its [`store`](crate::Agent::store).

use std::sync::Arc;

use agentmem_core::backend::BackendInfo;
use agentmem_core::{
    async_trait, Archive, ArchiveId, ArchiveInfo, ContextStore, Error, MemoryFilter, MemoryHit,
    MemoryId, MemoryItem, MemoryStore, Message, MessageHit, MessageId, MessageQuery, Metadata,
    Operation, PurgeReport, Result, RetentionPolicy, Rewind, Session, SessionId, SessionInfo,
    SessionPage, SessionPatch, SessionQuery, SessionStore,
};

/// The [`backend`](SessionStore::backend) of a protocol-only agent's store.
static PROTOCOL: BackendInfo = BackendInfo::new("context_store");

/// Its name, which errors are labelled with.
pub(crate) const PROTOCOL_BACKEND: &str = PROTOCOL.name;

/// A [`ContextStore`] seen as an [`AgentMemory`]: `get_context` and `save_session` go to it,
/// every other method is refused (`Unsupported`), naming itself and the protocol.
#[derive(Debug)]
pub(crate) struct ProtocolOnly(pub(crate) Arc<dyn ContextStore>);

fn refused(operation: Operation) -> Error {
    Error::unsupported(format!(
        "{operation} is not part of the ContextStore protocol (get_context, save_session) \
         that this agent's store implements; it needs a full store (AgentMemory, Agent::new)"
    ))
    .with_operation(operation)
    .with_backend(PROTOCOL_BACKEND)
}

#[async_trait]
impl SessionStore for ProtocolOnly {
    fn backend(&self) -> &'static BackendInfo {
        &PROTOCOL
    }
    async fn schema_version(&self) -> Result<u32> {
        Err(refused(Operation::SchemaVersion))
    }
    async fn save_session(&self, s: &SessionId, h: &[Message], m: &Metadata) -> Result<()> {
        ContextStore::save_session(&*self.0, s, h, m).await
    }
    async fn append(&self, _: &SessionId, _: &[Message]) -> Result<()> {
        Err(refused(Operation::Append))
    }
    async fn load(&self, _: &SessionId, _: Option<usize>) -> Result<Option<Session>> {
        Err(refused(Operation::Load))
    }
    async fn list_sessions(&self) -> Result<Vec<SessionInfo>> {
        Err(refused(Operation::ListSessions))
    }
    async fn delete_session(&self, _: &SessionId) -> Result<bool> {
        Err(refused(Operation::DeleteSession))
    }
    async fn compact(&self, _: &SessionId, _: &[Message]) -> Result<ArchiveInfo> {
        Err(refused(Operation::Compact))
    }
    async fn list_archives(&self, _: &SessionId) -> Result<Vec<ArchiveInfo>> {
        Err(refused(Operation::ListArchives))
    }
    async fn load_archive(&self, _: &SessionId, _: &ArchiveId) -> Result<Archive> {
        Err(refused(Operation::LoadArchive))
    }
    async fn search_messages(&self, _: &str, _: &MessageQuery) -> Result<Vec<MessageHit>> {
        Err(refused(Operation::SearchMessages))
    }
    async fn purge(&self, _: &RetentionPolicy) -> Result<PurgeReport> {
        Err(refused(Operation::Purge))
    }
    async fn fork(
        &self,
        _: &SessionId,
        _: &SessionId,
        _: Option<&MessageId>,
    ) -> Result<SessionInfo> {
        Err(refused(Operation::Fork))
    }
    async fn rewind(&self, _: &SessionId, _: &Rewind) -> Result<Vec<Message>> {
        Err(refused(Operation::Rewind))
    }
    async fn update_session(&self, _: &SessionId, _: &SessionPatch) -> Result<SessionInfo> {
        Err(refused(Operation::UpdateSession))
    }
    async fn find_sessions(&self, _: &SessionQuery) -> Result<SessionPage> {
        Err(refused(Operation::FindSessions))
    }
    async fn replace_archive(
        &self,
        _: &SessionId,
        _: &ArchiveId,
        _: &[Message],
    ) -> Result<ArchiveInfo> {
        Err(refused(Operation::ReplaceArchive))
    }
}

#[async_trait]
impl MemoryStore for ProtocolOnly {
    async fn get_context(&self, query: Option<&str>) -> Result<String> {
        ContextStore::get_context(&*self.0, query).await
    }
    async fn put_memory(&self, _: &MemoryItem) -> Result<MemoryItem> {
        Err(refused(Operation::PutMemory))
    }
    async fn get_memory(&self, _: &MemoryId) -> Result<Option<MemoryItem>> {
        Err(refused(Operation::GetMemory))
    }
    async fn list_memories(&self, _: &MemoryFilter) -> Result<Vec<MemoryItem>> {
        Err(refused(Operation::ListMemories))
    }
    async fn search_memories(&self, _: &str, _: &MemoryFilter) -> Result<Vec<MemoryHit>> {
        Err(refused(Operation::SearchMemories))
    }
    async fn delete_memory(&self, _: &MemoryId) -> Result<bool> {
        Err(refused(Operation::DeleteMemory))
    }
}
