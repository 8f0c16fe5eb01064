//! [`PostgresMemory`]: construction, the connection pool, and the [`AgentMemory`] impl.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use agentmem_core::trace::Op;
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
#[derive(Clone)]
pub struct PostgresMemory {
    pool: Pool,
    schema: Arc<str>,
    pub(crate) sql: Arc<Sql>,
}

impl PostgresMemory {
    /// Connects with a `postgres://` URL (see [`PostgresConfig`] for the options), creating or
    /// migrating the schema.
    ///
    /// Fails with `InvalidInput` for a malformed URL, `Unavailable` when the server cannot be
    /// reached, and `Unsupported` when the schema was written by a newer agentmem.
    pub async fn connect(url: &str) -> Result<Self> {
        Self::connect_with(url.parse()?).await
    }

    /// Connects with parsed settings, creating or migrating the schema.
    pub async fn connect_with(config: PostgresConfig) -> Result<Self> {
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
        let pool = Pool::builder(manager)
            .max_size(config.pool_size())
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(config.pool_timeout()))
            .create_timeout(Some(connect_timeout))
            .recycle_timeout(Some(RECYCLE_TIMEOUT))
            .build()
            .map_err(|e| {
                Error::backend(format!("cannot build the connection pool: {e}"))
                    .with_source(e)
                    .with_operation("open")
                    .with_backend(BACKEND)
            })?;
        Self::from_pool(pool, config.schema()).await
    }

    /// Uses an existing pool, keeping the tables in `schema` (created or migrated now).
    ///
    /// Several stores may share one pool with different schemas. Give the pool a wait
    /// timeout, or operations wait forever for a connection when the server is gone.
    pub async fn from_pool(pool: Pool, schema: &str) -> Result<Self> {
        Op::new("postgres", "open", None)
            .run(async move {
                validate_schema(schema)?;
                schema::migrate(&pool, schema).await?;
                Ok(PostgresMemory {
                    pool,
                    schema: Arc::from(schema),
                    sql: Arc::new(Sql::new(&quote_schema(schema))),
                })
            })
            .await
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
    pub async fn drop_schema(&self) -> Result<()> {
        const OP: &str = "drop_schema";
        let sql = format!(
            "DROP SCHEMA IF EXISTS {} CASCADE",
            quote_schema(&self.schema)
        );
        run!(self, OP, 0, |client| client.batch_execute(&sql))
    }

    /// A pooled connection; `Unavailable` when none can be had in time.
    pub(crate) async fn client(&self, operation: &'static str) -> Result<Object> {
        self.pool
            .get()
            .await
            .map_err(|e| crate::error::pool(operation, e))
    }
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
        Op::new("postgres", "schema_version", None)
            .run(async move { schema::version(&self.pool, &self.schema).await })
            .await
    }

    async fn save_session(
        &self,
        session: &SessionId,
        history: &[Message],
        metadata: &Metadata,
    ) -> Result<()> {
        Op::new("postgres", "save_session", Some(session))
            .messages(history.len())
            .run(async move { self.save_session_impl(session, history, metadata).await })
            .await
    }

    async fn append(&self, session: &SessionId, messages: &[Message]) -> Result<()> {
        Op::new("postgres", "append", Some(session))
            .messages(messages.len())
            .run(async move { self.append_impl(session, messages).await })
            .await
    }

    async fn load(&self, session: &SessionId, limit: Option<usize>) -> Result<Option<Session>> {
        Op::new("postgres", "load", Some(session))
            .run_counted(
                async move { self.load_impl(session, limit).await },
                |s: &Option<Session>| s.as_ref().map_or(0, |s| s.messages.len()),
            )
            .await
    }

    async fn list_sessions(&self) -> Result<Vec<SessionInfo>> {
        Op::new("postgres", "list_sessions", None)
            .run(async move { self.list_sessions_impl().await })
            .await
    }

    async fn delete_session(&self, session: &SessionId) -> Result<bool> {
        Op::new("postgres", "delete_session", Some(session))
            .run(async move { self.delete_session_impl(session).await })
            .await
    }

    async fn compact(&self, session: &SessionId, replacement: &[Message]) -> Result<ArchiveInfo> {
        Op::new("postgres", "compact", Some(session))
            .messages(replacement.len())
            .run(async move { self.compact_impl(session, replacement).await })
            .await
    }

    async fn list_archives(&self, session: &SessionId) -> Result<Vec<ArchiveInfo>> {
        Op::new("postgres", "list_archives", Some(session))
            .run(async move { self.list_archives_impl(session).await })
            .await
    }

    async fn load_archive(&self, session: &SessionId, archive: &ArchiveId) -> Result<Archive> {
        Op::new("postgres", "load_archive", Some(session))
            .run_counted(
                async move { self.load_archive_impl(session, archive).await },
                |a: &Archive| a.messages.len(),
            )
            .await
    }

    async fn put_memory(&self, item: &MemoryItem) -> Result<MemoryItem> {
        Op::new("postgres", "put_memory", None)
            .run(async move { self.put_memory_impl(item).await })
            .await
    }

    async fn get_memory(&self, id: &str) -> Result<Option<MemoryItem>> {
        Op::new("postgres", "get_memory", None)
            .run(async move { self.get_memory_impl(id).await })
            .await
    }

    async fn list_memories(&self, filter: &MemoryFilter) -> Result<Vec<MemoryItem>> {
        Op::new("postgres", "list_memories", None)
            .run(async move { self.list_memories_impl(filter).await })
            .await
    }

    async fn search_memories(&self, query: &str, filter: &MemoryFilter) -> Result<Vec<MemoryHit>> {
        Op::new("postgres", "search_memories", None)
            .run(async move { self.search_memories_impl(query, filter).await })
            .await
    }

    async fn delete_memory(&self, id: &str) -> Result<bool> {
        Op::new("postgres", "delete_memory", None)
            .run(async move { self.delete_memory_impl(id).await })
            .await
    }

    async fn search_messages(&self, query: &str, scope: &MessageQuery) -> Result<Vec<MessageHit>> {
        Op::new("postgres", "search_messages", scope.session.as_ref())
            .run_counted(
                async move { self.search_messages_impl(query, scope).await },
                Vec::len,
            )
            .await
    }

    async fn purge(&self, policy: &RetentionPolicy) -> Result<PurgeReport> {
        Op::new("postgres", "purge", None)
            .run(async move { self.purge_impl(policy).await })
            .await
    }
}
