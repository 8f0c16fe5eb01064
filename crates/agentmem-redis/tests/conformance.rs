//! The agentmem conformance suite against a real Redis (`REDIS_URL`, default
//! `redis://127.0.0.1:6379`), each test under a key prefix of its own, deleted afterwards.

use std::sync::Arc;

use agentmem_core::{
    async_trait, AgentMemory, Archive, ArchiveId, ArchiveInfo, Capabilities, Layered, MemoryFilter,
    MemoryHit, MemoryItem, Message, MessageHit, MessageQuery, Metadata, PurgeReport, Result,
    RetentionPolicy, Session, SessionId, SessionInfo,
};
use agentmem_redis::{RedisConfig, RedisMemory};

async fn store() -> Option<Arc<dyn AgentMemory>> {
    let url = agentmem_testkit::env_url("REDIS_URL", "redis://127.0.0.1:6379");
    let prefix = agentmem_testkit::unique_namespace("conf");
    let config = match RedisConfig::new(&url) {
        Ok(config) => config
            .with_prefix(&prefix)
            .expect("unique namespaces are valid prefixes"),
        Err(e) => panic!("REDIS_URL is not a valid Redis URL: {e}"),
    };
    match RedisMemory::connect_with(config).await {
        Ok(inner) => Some(Arc::new(Scoped { inner, url })),
        Err(e) => agentmem_testkit::service_unavailable("redis", &url, &e),
    }
}

agentmem_testkit::conformance_tests!(store);

/// The store under test, delegating every method; when the test drops it, it deletes the
/// keys under its prefix so runs do not pile up keys in the shared server.
#[derive(Debug)]
struct Scoped {
    inner: Layered<RedisMemory>,
    url: String,
}

impl Drop for Scoped {
    fn drop(&mut self) {
        // Best effort, blocking: the runtime may be shutting down. The prefix is a unique
        // namespace of letters, digits and `_`, so it is safe as a KEYS pattern.
        let Ok(client) = redis::Client::open(self.url.as_str()) else {
            return;
        };
        let Ok(mut conn) = client.get_connection_with_timeout(std::time::Duration::from_secs(2))
        else {
            return;
        };
        let keys: Vec<String> = match redis::cmd("KEYS")
            .arg(format!("{}:*", self.inner.prefix()))
            .query(&mut conn)
        {
            Ok(keys) => keys,
            Err(_) => return,
        };
        if !keys.is_empty() {
            let _: redis::RedisResult<()> = redis::cmd("UNLINK").arg(keys).query(&mut conn);
        }
    }
}

#[async_trait]
impl AgentMemory for Scoped {
    fn backend(&self) -> &'static str {
        self.inner.backend()
    }
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }
    async fn schema_version(&self) -> Result<u32> {
        self.inner.schema_version().await
    }
    async fn get_context(&self, query: Option<&str>) -> Result<String> {
        self.inner.get_context(query).await
    }
    async fn save_session(&self, s: &SessionId, h: &[Message], m: &Metadata) -> Result<()> {
        self.inner.save_session(s, h, m).await
    }
    async fn append(&self, s: &SessionId, messages: &[Message]) -> Result<()> {
        self.inner.append(s, messages).await
    }
    async fn load(&self, s: &SessionId, limit: Option<usize>) -> Result<Option<Session>> {
        self.inner.load(s, limit).await
    }
    async fn list_sessions(&self) -> Result<Vec<SessionInfo>> {
        self.inner.list_sessions().await
    }
    async fn delete_session(&self, s: &SessionId) -> Result<bool> {
        self.inner.delete_session(s).await
    }
    async fn compact(&self, s: &SessionId, replacement: &[Message]) -> Result<ArchiveInfo> {
        self.inner.compact(s, replacement).await
    }
    async fn list_archives(&self, s: &SessionId) -> Result<Vec<ArchiveInfo>> {
        self.inner.list_archives(s).await
    }
    async fn load_archive(&self, s: &SessionId, a: &ArchiveId) -> Result<Archive> {
        self.inner.load_archive(s, a).await
    }
    async fn put_memory(&self, item: &MemoryItem) -> Result<MemoryItem> {
        self.inner.put_memory(item).await
    }
    async fn get_memory(&self, id: &str) -> Result<Option<MemoryItem>> {
        self.inner.get_memory(id).await
    }
    async fn list_memories(&self, f: &MemoryFilter) -> Result<Vec<MemoryItem>> {
        self.inner.list_memories(f).await
    }
    async fn search_memories(&self, q: &str, f: &MemoryFilter) -> Result<Vec<MemoryHit>> {
        self.inner.search_memories(q, f).await
    }
    async fn delete_memory(&self, id: &str) -> Result<bool> {
        self.inner.delete_memory(id).await
    }
    async fn search_messages(&self, q: &str, scope: &MessageQuery) -> Result<Vec<MessageHit>> {
        self.inner.search_messages(q, scope).await
    }
    async fn purge(&self, policy: &RetentionPolicy) -> Result<PurgeReport> {
        self.inner.purge(policy).await
    }
}
