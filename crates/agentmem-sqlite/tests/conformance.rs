//! The shared conformance suite (C1), on a fresh temporary database file per test.
#![allow(missing_docs)]

use std::sync::Arc;

use agentmem_core::{
    async_trait, AgentMemory, Archive, ArchiveId, ArchiveInfo, Capabilities, Layered, MemoryFilter,
    MemoryHit, MemoryItem, Message, MessageHit, MessageQuery, Metadata, PurgeReport, Result,
    RetentionPolicy, Session, SessionId, SessionInfo,
};
use agentmem_sqlite::SqliteMemory;

/// A store on a database file in a temporary folder that is deleted with the store.
#[derive(Debug)]
struct TempStore {
    store: Layered<SqliteMemory>,
    _dir: tempfile::TempDir,
}

async fn store() -> Option<Arc<dyn AgentMemory>> {
    let dir = tempfile::tempdir().expect("create a temporary folder");
    // synchronous=normal: commits still survive a process crash; skipping the per-commit
    // fsync keeps the suite fast on CI without changing any behaviour under test.
    let url = format!(
        "sqlite://{}/memory.db?synchronous=normal",
        dir.path().display()
    );
    let store = SqliteMemory::connect(&url)
        .await
        .expect("open a fresh SQLite database");
    Some(Arc::new(TempStore { store, _dir: dir }))
}

agentmem_testkit::conformance_tests!(store);

/// Plain delegation, so the temporary folder lives exactly as long as the store.
#[async_trait]
impl AgentMemory for TempStore {
    fn backend(&self) -> &'static str {
        self.store.backend()
    }
    fn capabilities(&self) -> Capabilities {
        self.store.capabilities()
    }
    async fn schema_version(&self) -> Result<u32> {
        self.store.schema_version().await
    }
    async fn get_context(&self, query: Option<&str>) -> Result<String> {
        self.store.get_context(query).await
    }
    async fn save_session(&self, s: &SessionId, h: &[Message], m: &Metadata) -> Result<()> {
        self.store.save_session(s, h, m).await
    }
    async fn append(&self, s: &SessionId, messages: &[Message]) -> Result<()> {
        self.store.append(s, messages).await
    }
    async fn load(&self, s: &SessionId, limit: Option<usize>) -> Result<Option<Session>> {
        self.store.load(s, limit).await
    }
    async fn list_sessions(&self) -> Result<Vec<SessionInfo>> {
        self.store.list_sessions().await
    }
    async fn delete_session(&self, s: &SessionId) -> Result<bool> {
        self.store.delete_session(s).await
    }
    async fn compact(&self, s: &SessionId, replacement: &[Message]) -> Result<ArchiveInfo> {
        self.store.compact(s, replacement).await
    }
    async fn list_archives(&self, s: &SessionId) -> Result<Vec<ArchiveInfo>> {
        self.store.list_archives(s).await
    }
    async fn load_archive(&self, s: &SessionId, a: &ArchiveId) -> Result<Archive> {
        self.store.load_archive(s, a).await
    }
    async fn put_memory(&self, item: &MemoryItem) -> Result<MemoryItem> {
        self.store.put_memory(item).await
    }
    async fn get_memory(&self, id: &str) -> Result<Option<MemoryItem>> {
        self.store.get_memory(id).await
    }
    async fn list_memories(&self, f: &MemoryFilter) -> Result<Vec<MemoryItem>> {
        self.store.list_memories(f).await
    }
    async fn search_memories(&self, q: &str, f: &MemoryFilter) -> Result<Vec<MemoryHit>> {
        self.store.search_memories(q, f).await
    }
    async fn delete_memory(&self, id: &str) -> Result<bool> {
        self.store.delete_memory(id).await
    }
    async fn search_messages(&self, q: &str, scope: &MessageQuery) -> Result<Vec<MessageHit>> {
        self.store.search_messages(q, scope).await
    }
    async fn purge(&self, policy: &RetentionPolicy) -> Result<PurgeReport> {
        self.store.purge(policy).await
    }
}
