//! Shared test setup: one driver client per server URL for the whole test process, and a
//! fresh database per test, dropped when the test's store is dropped.
//!
//! The test servers are slow with many concurrent clients, so tests share one `Client`.
//! A client's background tasks (server monitors, pool workers) live on the runtime that
//! created it, and every `#[tokio::test]` has its own runtime that ends with the test, so the
//! shared clients are created on a process-wide runtime of their own.
#![allow(dead_code, clippy::unwrap_used)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use agentmem_core::{
    async_trait, AgentMemory, Archive, ArchiveId, ArchiveInfo, Capabilities, ErrorKind, Layered,
    MemoryFilter, MemoryHit, MemoryItem, Message, MessageHit, MessageQuery, Metadata, PurgeReport,
    Result, RetentionPolicy, Session, SessionId, SessionInfo,
};
use agentmem_mongodb::mongodb::Client;
use agentmem_mongodb::{MongoConfig, MongoMemory, ServerFeatures};

/// The server with transactions and no text indexes (SecantusDB in CI).
pub const DEFAULT_URL: &str = "mongodb://127.0.0.1:27017/?directConnection=true";
/// The server with `$text` (nx-27017 in CI).
pub const DEFAULT_TEXT_URL: &str = "mongodb://127.0.0.1:27018/?directConnection=true";

pub fn url() -> String {
    agentmem_testkit::env_url("MONGODB_URL", DEFAULT_URL)
}

pub fn text_url() -> String {
    agentmem_testkit::env_url("MONGODB_TEXT_URL", DEFAULT_TEXT_URL)
}

fn driver_runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("mongo-test-driver")
            .enable_all()
            .build()
            .expect("test driver runtime")
    })
}

/// The process-wide client for `url`, with a modest pool.
pub async fn shared_client(url: &str) -> Result<Client> {
    static CLIENTS: OnceLock<Mutex<HashMap<String, Client>>> = OnceLock::new();
    let clients = CLIENTS.get_or_init(Default::default);
    if let Some(client) = clients.lock().unwrap().get(url) {
        return Ok(client.clone());
    }
    let mut options = MongoConfig::new(url)?.client_options().await?;
    options.max_pool_size = Some(8);
    let client = {
        let _guard = driver_runtime().enter();
        Client::with_options(options).map_err(|e| agentmem_core::Error::backend(e.to_string()))?
    };
    Ok(clients
        .lock()
        .unwrap()
        .entry(url.to_string())
        .or_insert(client)
        .clone())
}

/// A fresh store in a database of its own on the server at `url`, or `None` (skipped) when
/// the server is unreachable and services are not required.
pub async fn fresh_store(url: &str) -> Option<TestStore> {
    open_store(url, ServerFeatures::ALL).await.map(TestStore)
}

async fn open_store(url: &str, allowed: ServerFeatures) -> Option<Layered<MongoMemory>> {
    let client = match shared_client(url).await {
        Ok(c) => c,
        Err(e) => return agentmem_testkit::service_unavailable("mongodb", url, &e),
    };
    let db = agentmem_testkit::unique_namespace("am");
    match MongoMemory::from_client_with(client, &db, allowed).await {
        Ok(store) => Some(store),
        Err(e) if e.kind() == ErrorKind::Unavailable => {
            agentmem_testkit::service_unavailable("mongodb", url, &e)
        }
        Err(e) => panic!("opening a MongoDB store failed: {e}"),
    }
}

/// The conformance factory on `MONGODB_URL`.
pub async fn conformance_store() -> Option<Arc<dyn AgentMemory>> {
    fresh_store(&url())
        .await
        .map(|s| Arc::new(s) as Arc<dyn AgentMemory>)
}

/// The conformance factory on `MONGODB_URL` with transactions turned off, so compaction and
/// `save_session` take the epoch-switch path of servers without transactions.
pub async fn no_transaction_store() -> Option<Arc<dyn AgentMemory>> {
    let mut allowed = ServerFeatures::ALL;
    allowed.transactions = false;
    let store = open_store(&url(), allowed).await?;
    Some(Arc::new(TestStore(store)))
}

/// The conformance factory on `MONGODB_TEXT_URL`.
pub async fn text_conformance_store() -> Option<Arc<dyn AgentMemory>> {
    fresh_store(&text_url())
        .await
        .map(|s| Arc::new(s) as Arc<dyn AgentMemory>)
}

/// A (layered) [`MongoMemory`] that drops its database when dropped (in the background, on
/// the driver runtime: best effort, as the process may end first).
#[derive(Debug)]
pub struct TestStore(pub Layered<MongoMemory>);

impl std::ops::Deref for TestStore {
    type Target = Layered<MongoMemory>;
    fn deref(&self) -> &Layered<MongoMemory> {
        &self.0
    }
}

impl Drop for TestStore {
    fn drop(&mut self) {
        let store = self.0.clone();
        driver_runtime().spawn(async move {
            let _ = store.drop_database().await;
        });
    }
}

#[async_trait]
impl AgentMemory for TestStore {
    fn backend(&self) -> &'static str {
        self.0.backend()
    }
    fn capabilities(&self) -> Capabilities {
        self.0.capabilities()
    }
    async fn schema_version(&self) -> Result<u32> {
        self.0.schema_version().await
    }
    async fn get_context(&self, query: Option<&str>) -> Result<String> {
        self.0.get_context(query).await
    }
    async fn save_session(&self, s: &SessionId, h: &[Message], m: &Metadata) -> Result<()> {
        self.0.save_session(s, h, m).await
    }
    async fn append(&self, s: &SessionId, m: &[Message]) -> Result<()> {
        self.0.append(s, m).await
    }
    async fn load(&self, s: &SessionId, limit: Option<usize>) -> Result<Option<Session>> {
        self.0.load(s, limit).await
    }
    async fn list_sessions(&self) -> Result<Vec<SessionInfo>> {
        self.0.list_sessions().await
    }
    async fn delete_session(&self, s: &SessionId) -> Result<bool> {
        self.0.delete_session(s).await
    }
    async fn compact(&self, s: &SessionId, r: &[Message]) -> Result<ArchiveInfo> {
        self.0.compact(s, r).await
    }
    async fn list_archives(&self, s: &SessionId) -> Result<Vec<ArchiveInfo>> {
        self.0.list_archives(s).await
    }
    async fn load_archive(&self, s: &SessionId, a: &ArchiveId) -> Result<Archive> {
        self.0.load_archive(s, a).await
    }
    async fn put_memory(&self, item: &MemoryItem) -> Result<MemoryItem> {
        self.0.put_memory(item).await
    }
    async fn get_memory(&self, id: &str) -> Result<Option<MemoryItem>> {
        self.0.get_memory(id).await
    }
    async fn list_memories(&self, f: &MemoryFilter) -> Result<Vec<MemoryItem>> {
        self.0.list_memories(f).await
    }
    async fn search_memories(&self, q: &str, f: &MemoryFilter) -> Result<Vec<MemoryHit>> {
        self.0.search_memories(q, f).await
    }
    async fn delete_memory(&self, id: &str) -> Result<bool> {
        self.0.delete_memory(id).await
    }
    async fn search_messages(&self, q: &str, s: &MessageQuery) -> Result<Vec<MessageHit>> {
        self.0.search_messages(q, s).await
    }
    async fn purge(&self, p: &RetentionPolicy) -> Result<PurgeReport> {
        self.0.purge(p).await
    }
}
