//! [`PostgresMemory`]: construction, the connection pool, and the [`AgentMemory`] impl.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use agentmem_core::layer::{open_layered, Layered};
use agentmem_core::{
    AgentMemory, Archive, ArchiveId, ArchiveInfo, Capabilities, Error, MemoryFilter, MemoryHit,
    MemoryItem, Message, MessageHit, MessageQuery, Metadata, PurgeReport, Result, RetentionPolicy,
    Session, SessionId, SessionInfo,
};
use async_trait::async_trait;
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};
use tokio_postgres::NoTls;

use crate::config::{quote_schema, validate_schema, PostgresConfig, DEFAULT_CONNECT_TIMEOUT};
use crate::error::BACKEND;
use crate::schema;
use crate::sql::Sql;

/// How many times a read is repeated on a fresh connection after its connection failed
/// (for example after the server terminated it). Writes are never repeated.
pub(crate) const READ_RETRIES: u32 = 2;

/// How long the pool waits for a connection it is recycling to be checked.
const RECYCLE_TIMEOUT: Duration = Duration::from_secs(5);

/// Agent memory in PostgreSQL: sessions, archives and memory items in one schema.
///
/// Cheap to clone (the pool and statements are shared). See the crate documentation for the
/// design, and [`PostgresConfig`] for the URL options.
///
/// The constructors ([`connect`](Self::connect), [`connect_with`](Self::connect_with),
/// [`from_client`](Self::from_client)) return it wearing the standard
/// [layers](agentmem_core::layer) (validation, spans, error labels) as a
/// [`Layered<PostgresMemory>`](Layered), which dereferences to this type for
/// [`schema`](Self::schema), [`pool`](Self::pool) and [`drop_schema`](Self::drop_schema).
#[derive(Clone)]
pub struct PostgresMemory {
    pool: Pool,
    schema: Arc<str>,
    pub(crate) sql: Arc<Sql>,
}

impl PostgresMemory {
    /// Connects with a `postgres://` URL (see [`PostgresConfig`] for the options), creating or
    /// migrating the schema. The store wears the standard [layers](agentmem_core::layer).
    ///
    /// Fails with `InvalidInput` for a malformed URL, `Unavailable` when the server cannot be
    /// reached, and `Unsupported` when the schema was written by a newer agentmem.
    pub async fn connect(url: &str) -> Result<Layered<Self>> {
        Self::connect_with(url.parse()?).await
    }

    /// Connects with parsed settings, creating or migrating the schema.
    pub async fn connect_with(config: PostgresConfig) -> Result<Layered<Self>> {
        open_layered(BACKEND, async move {
            let pool = build_pool(&config)?;
            Self::open(pool, config.schema()).await
        })
        .await
    }

    /// Uses an existing pool, keeping the tables in `schema` (created or migrated now).
    ///
    /// Several stores may share one pool with different schemas. Give the pool a wait
    /// timeout, or operations wait forever for a connection when the server is gone.
    pub async fn from_client(pool: Pool, schema: &str) -> Result<Layered<Self>> {
        // Migrating is opening work: it runs in the `open` span, like `connect_with`.
        open_layered(BACKEND, Self::open(pool, schema)).await
    }

    /// The raw store on `pool`, in `schema`, created or migrated now.
    async fn open(pool: Pool, schema: &str) -> Result<Self> {
        validate_schema(schema)?;
        schema::migrate(&pool, schema).await?;
        Ok(PostgresMemory {
            pool,
            schema: Arc::from(schema),
            sql: Arc::new(Sql::new(&quote_schema(schema))),
        })
    }

    /// The schema holding this store's tables.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The connection pool.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Drops this store's schema with everything in it: every session, archive and memory
    /// item, irrecoverably. Meant for removing a tenant or a test namespace.
    ///
    /// Not an [`AgentMemory`] operation, so no layer traces or labels it; its errors say
    /// "PostgreSQL" in their message.
    pub async fn drop_schema(&self) -> Result<()> {
        let sql = format!(
            "DROP SCHEMA IF EXISTS {} CASCADE",
            quote_schema(&self.schema)
        );
        run!(self, 0, |client| client.batch_execute(&sql))
    }

    /// A pooled connection; `Unavailable` when none can be had in time.
    pub(crate) async fn client(&self) -> Result<Object> {
        self.pool.get().await.map_err(crate::error::pool)
    }
}

/// The connection pool `config` describes (no connection is made yet).
fn build_pool(config: &PostgresConfig) -> Result<Pool> {
    let connect_timeout = config
        .pg_config()
        .get_connect_timeout()
        .copied()
        .unwrap_or(DEFAULT_CONNECT_TIMEOUT);
    // Fast recycling checks `is_closed()` only; a connection that failed is discarded by
    // `discard`, so a dead one is not handed out twice, and reads retry once more.
    let manager = Manager::from_config(
        config.pg_config().clone(),
        NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(config.pool_size())
        .runtime(Runtime::Tokio1)
        .wait_timeout(Some(config.pool_timeout()))
        .create_timeout(Some(connect_timeout))
        .recycle_timeout(Some(RECYCLE_TIMEOUT))
        .build()
        .map_err(|e| {
            Error::backend(format!("cannot build the connection pool: {e}")).with_source(e)
        })
}

/// Pins a future's output to a driver result, so `?` inside `async` blocks given to `run!`
/// knows its error type.
pub(crate) fn pg_future<T, F>(future: F) -> F
where
    F: Future<Output = std::result::Result<T, tokio_postgres::Error>>,
{
    future
}

/// Removes a connection that failed from the pool, so it is closed instead of reused.
pub(crate) fn discard(client: Object) {
    drop(Object::take(client));
}

impl fmt::Debug for PostgresMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let status = self.pool.status();
        f.debug_struct("PostgresMemory")
            .field("schema", &self.schema)
            .field("pool_size", &status.size)
            .field("pool_max_size", &status.max_size)
            .finish()
    }
}

#[async_trait]
impl AgentMemory for PostgresMemory {
    fn backend(&self) -> &'static str {
        BACKEND
    }

    fn capabilities(&self) -> Capabilities {
        let mut c = Capabilities::default();
        c.durable = true;
        c.cross_process = true;
        c.atomic_compaction = true;
        c.indexed_search = true;
        c.native_expiry = false;
        c
    }

    async fn schema_version(&self) -> Result<u32> {
        schema::version(&self.pool, &self.schema).await
    }

    async fn save_session(
        &self,
        session: &SessionId,
        history: &[Message],
        metadata: &Metadata,
    ) -> Result<()> {
        self.save_session_impl(session, history, metadata).await
    }

    async fn append(&self, session: &SessionId, messages: &[Message]) -> Result<()> {
        self.append_impl(session, messages).await
    }

    async fn load(&self, session: &SessionId, limit: Option<usize>) -> Result<Option<Session>> {
        self.load_impl(session, limit).await
    }

    async fn list_sessions(&self) -> Result<Vec<SessionInfo>> {
        self.list_sessions_impl().await
    }

    async fn delete_session(&self, session: &SessionId) -> Result<bool> {
        self.delete_session_impl(session).await
    }

    async fn compact(&self, session: &SessionId, replacement: &[Message]) -> Result<ArchiveInfo> {
        self.compact_impl(session, replacement).await
    }

    async fn list_archives(&self, session: &SessionId) -> Result<Vec<ArchiveInfo>> {
        self.list_archives_impl(session).await
    }

    async fn load_archive(&self, session: &SessionId, archive: &ArchiveId) -> Result<Archive> {
        self.load_archive_impl(session, archive).await
    }

    async fn put_memory(&self, item: &MemoryItem) -> Result<MemoryItem> {
        self.put_memory_impl(item).await
    }

    async fn get_memory(&self, id: &str) -> Result<Option<MemoryItem>> {
        self.get_memory_impl(id).await
    }

    async fn list_memories(&self, filter: &MemoryFilter) -> Result<Vec<MemoryItem>> {
        self.list_memories_impl(filter).await
    }

    async fn search_memories(&self, query: &str, filter: &MemoryFilter) -> Result<Vec<MemoryHit>> {
        self.search_memories_impl(query, filter).await
    }

    async fn delete_memory(&self, id: &str) -> Result<bool> {
        self.delete_memory_impl(id).await
    }

    async fn search_messages(&self, query: &str, scope: &MessageQuery) -> Result<Vec<MessageHit>> {
        self.search_messages_impl(query, scope).await
    }

    async fn purge(&self, policy: &RetentionPolicy) -> Result<PurgeReport> {
        self.purge_impl(policy).await
    }
}
