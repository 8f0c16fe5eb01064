//! [`SqliteStore`]: the [`AgentMemory`] implementation.

use agentmem_core::backend::BackendInfo;
use std::fmt;
use std::sync::Arc;

use agentmem_core::layer;
use agentmem_core::Layered;
use agentmem_core::{
    async_trait, Archive, ArchiveId, ArchiveInfo, Capabilities, MemoryFilter, MemoryHit, MemoryId,
    MemoryItem, MemoryStore, Message, MessageHit, MessageId, MessageQuery, Metadata,
    PropertyChange, PurgeReport, Result, RetentionPolicy, Rewind, Session, SessionId, SessionInfo,
    SessionPage, SessionPatch, SessionQuery, SessionStore,
};
use rusqlite::Connection;

use crate::config::{Location, SqliteConfig};
use crate::error::{SqlResult, INFO};
use crate::pool::Pool;
use crate::{archives, lifecycle, memories, properties, retention, schema, search, sessions};

/// Agent memory in a SQLite database (backend `sqlite`).
///
/// A file database is safe for many tasks and many processes at once: WAL mode, a busy
/// timeout, and one short `IMMEDIATE` transaction per write. Cloning is cheap and shares the
/// connections.
///
/// The constructors return the store wearing agentmem's standard layers
/// ([`Layered<SqliteStore>`](Layered): validation, spans, error labels), which dereferences
/// to this type for SQLite-specific methods such as [`database`](Self::database).
///
/// ```
/// use agentmem_core::{AgentMemory, MemoryStore, SessionStore, AgentMemoryExt, Message, SessionId};
/// use agentmem_sqlite::SqliteStore;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let store = SqliteStore::connect("sqlite::memory:").await?;
/// let session: SessionId = "ResearchAgent".parse()?;
/// store.append_one(&session, Message::user("Compare BigQuery and AlloyDB")).await?;
/// assert_eq!(store.messages(&session).await?.len(), 1);
/// # Ok::<(), agentmem_core::Error>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct SqliteStore {
    pool: Arc<Pool>,
    /// Whether the database is a file other processes can open (not `:memory:`).
    shared_file: bool,
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore")
            .field("db", &self.pool.db())
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens the database a `sqlite:` URL names (see [`SqliteConfig`] for the forms and
    /// options), creating and migrating it as needed.
    ///
    /// Errors: `InvalidInput` for a bad URL, `CorruptData` (naming the file) for a file that is
    /// not a SQLite database, `Unsupported` for a database from a newer agentmem (left
    /// untouched), `Unavailable` when the file cannot be opened or stays locked.
    pub async fn connect(url: &str) -> Result<Layered<Self>> {
        Self::connect_with(url.parse()?).await
    }

    /// Opens the database `config` describes, creating and migrating it as needed (on a
    /// blocking thread).
    pub async fn connect_with(config: SqliteConfig) -> Result<Layered<Self>> {
        layer::open_layered(&INFO, async move {
            let shared_file = matches!(config.location, Location::File(_));
            let pool = Pool::open(config).await?;
            Ok(SqliteStore::new(pool, shared_file))
        })
        .await
    }

    /// Uses a connection the caller opened, migrating its database (on a blocking thread).
    ///
    /// The store turns on foreign keys (its deletes cascade through them); the journal mode,
    /// busy timeout and `synchronous` stay as the caller set them. All work goes through this
    /// one connection.
    ///
    /// ```
    /// use agentmem_core::{AgentMemory, MemoryStore, SessionStore, AgentMemoryExt, Message, SessionId};
    /// use agentmem_sqlite::SqliteStore;
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let connection = rusqlite::Connection::open_in_memory().unwrap();
    /// let store = SqliteStore::from_client(connection).await?;
    /// let session: SessionId = "ResearchAgent".parse()?;
    /// store.append_one(&session, Message::user("hello")).await?;
    /// assert_eq!(store.database(), ":memory:");
    /// # Ok::<(), agentmem_core::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn from_client(connection: Connection) -> Result<Layered<Self>> {
        // Opening work (the migration) runs here too, so it is traced and labelled as an open.
        layer::open_layered(&INFO, async move {
            let shared_file = connection.path().is_some_and(|p| !p.is_empty());
            let pool = Pool::from_connection(connection).await?;
            Ok(SqliteStore::new(pool, shared_file))
        })
        .await
    }

    /// The raw store over `pool`; the constructors above wrap it in the standard layers.
    fn new(pool: Pool, shared_file: bool) -> Self {
        SqliteStore {
            pool: Arc::new(pool),
            shared_file,
        }
    }

    /// The database as named in messages: its path, or `:memory:`.
    pub fn database(&self) -> &str {
        self.pool.db()
    }

    /// The connections, for the data kinds implemented in their own modules.
    pub(crate) fn pool(&self) -> &Arc<Pool> {
        &self.pool
    }

    /// Runs the write `op` on a copy of `items` (moved to the connection's blocking thread):
    /// what the trait methods taking a slice of one kind do.
    pub(crate) async fn write_slice<I, T>(
        &self, items: &[I], op: fn(&mut Connection, &[I]) -> SqlResult<T>,
    ) -> Result<T>
    where
        I: Clone + Send + 'static,
        T: Send + 'static,
    {
        let items = items.to_vec();
        self.pool.write(move |conn| op(conn, &items)).await
    }
}

#[async_trait]
impl SessionStore for SqliteStore {
    fn backend(&self) -> &'static BackendInfo {
        &INFO
    }

    fn capabilities(&self) -> Capabilities {
        INFO.capabilities
            .durable(self.shared_file)
            .cross_process(self.shared_file)
    }

    async fn schema_version(&self) -> Result<u32> {
        self.pool.read(|conn| schema::read_version(conn)).await
    }

    async fn store_property(&self, name: &str) -> Result<Option<String>> {
        let name = name.to_owned();
        self.pool
            .read(move |conn| properties::get(conn, &name))
            .await
    }

    async fn set_store_property(&self, change: &PropertyChange<'_>) -> Result<bool> {
        let (name, value) = (change.name.to_owned(), change.value.to_owned());
        let expected = change.expected.map(str::to_owned);
        self.pool
            .write(move |conn| {
                properties::set(
                    conn,
                    &PropertyChange::replace(&name, expected.as_deref(), &value),
                )
            })
            .await
    }

    async fn save_session(
        &self, session: &SessionId, history: &[Message], metadata: &Metadata,
    ) -> Result<()> {
        let (name, history, metadata) = (session.to_string(), history.to_vec(), metadata.clone());
        self.pool
            .write(move |conn| sessions::save(conn, &name, &history, &metadata))
            .await
    }

    async fn append(&self, session: &SessionId, messages: &[Message]) -> Result<()> {
        let (name, messages) = (session.to_string(), messages.to_vec());
        self.pool
            .write(move |conn| sessions::append(conn, &name, &messages))
            .await
    }

    async fn load(&self, session: &SessionId, limit: Option<usize>) -> Result<Option<Session>> {
        let session = session.clone();
        self.pool
            .read(move |conn| sessions::load(conn, &session, limit))
            .await
    }

    async fn list_sessions(&self) -> Result<Vec<SessionInfo>> {
        self.pool.read(sessions::list).await
    }

    async fn delete_session(&self, session: &SessionId) -> Result<bool> {
        let name = session.to_string();
        self.pool
            .write(move |conn| sessions::delete(conn, &name))
            .await
    }

    async fn compact(&self, session: &SessionId, replacement: &[Message]) -> Result<ArchiveInfo> {
        let (session, replacement) = (session.clone(), replacement.to_vec());
        self.pool
            .write(move |conn| archives::compact(conn, &session, &replacement))
            .await
    }

    async fn list_archives(&self, session: &SessionId) -> Result<Vec<ArchiveInfo>> {
        let session = session.clone();
        self.pool
            .read(move |conn| archives::list(conn, &session))
            .await
    }

    async fn load_archive(&self, session: &SessionId, archive: &ArchiveId) -> Result<Archive> {
        let (session, archive) = (session.clone(), archive.clone());
        self.pool
            .read(move |conn| archives::load(conn, &session, &archive))
            .await
    }

    async fn search_messages(&self, query: &str, scope: &MessageQuery) -> Result<Vec<MessageHit>> {
        let (query, scope) = (query.to_string(), scope.clone());
        self.pool
            .read(move |conn| search::messages(conn, &query, &scope))
            .await
    }

    async fn purge(&self, policy: &RetentionPolicy) -> Result<PurgeReport> {
        let policy = *policy;
        self.pool
            .write(move |conn| retention::purge(conn, &policy))
            .await
    }

    async fn replace_archive(
        &self, session: &SessionId, archive: &ArchiveId, messages: &[Message],
    ) -> Result<ArchiveInfo> {
        let (session, archive, messages) = (session.clone(), archive.clone(), messages.to_vec());
        self.pool
            .write(move |conn| archives::replace(conn, &session, &archive, &messages))
            .await
    }

    async fn fork(
        &self, source: &SessionId, target: &SessionId, at: Option<&MessageId>,
    ) -> Result<SessionInfo> {
        let (source, target, at) = (source.clone(), target.clone(), at.cloned());
        self.pool
            .write(move |conn| lifecycle::fork(conn, &source, &target, at.as_ref()))
            .await
    }

    async fn rewind(&self, session: &SessionId, to: &Rewind) -> Result<Vec<Message>> {
        let (session, to) = (session.clone(), to.clone());
        self.pool
            .write(move |conn| lifecycle::rewind(conn, &session, &to))
            .await
    }

    async fn update_session(
        &self, session: &SessionId, patch: &SessionPatch,
    ) -> Result<SessionInfo> {
        let (session, patch) = (session.clone(), patch.clone());
        self.pool
            .write(move |conn| lifecycle::update(conn, &session, &patch))
            .await
    }

    async fn find_sessions(&self, query: &SessionQuery) -> Result<SessionPage> {
        let query = query.clone();
        self.pool
            .read(move |conn| lifecycle::find(conn, &query))
            .await
    }
}

#[async_trait]
impl MemoryStore for SqliteStore {
    async fn put_memory(&self, item: &MemoryItem) -> Result<MemoryItem> {
        let item = item.clone();
        self.pool
            .write(move |conn| memories::put(conn, &item))
            .await
    }

    async fn get_memory(&self, id: &MemoryId) -> Result<Option<MemoryItem>> {
        let id = id.to_string();
        self.pool.read(move |conn| memories::get(conn, &id)).await
    }

    async fn list_memories(&self, filter: &MemoryFilter) -> Result<Vec<MemoryItem>> {
        let filter = filter.clone();
        self.pool
            .read(move |conn| memories::list(conn, &filter))
            .await
    }

    async fn search_memories(&self, query: &str, filter: &MemoryFilter) -> Result<Vec<MemoryHit>> {
        let (query, filter) = (query.to_string(), filter.clone());
        self.pool
            .read(move |conn| search::memories(conn, &query, &filter))
            .await
    }

    async fn delete_memory(&self, id: &MemoryId) -> Result<bool> {
        let id = id.to_string();
        self.pool
            .write(move |conn| memories::delete(conn, &id))
            .await
    }

    /// The counter of migration 10, which triggers on the memory items table bump: it sees
    /// every writer of the file, this process or another, and raw SQL too.
    async fn memory_revision(&self) -> Result<Option<u64>> {
        self.pool
            .read(|conn| memories::revision(conn).map(Some))
            .await
    }
}

// `CheckpointStore` is implemented in `crate::checkpoints`, `GraphStore` in `crate::graph`.
