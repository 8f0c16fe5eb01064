//! [`SqliteMemory`]: the [`AgentMemory`] implementation.

use std::fmt;
use std::sync::Arc;

use agentmem_core::trace::Op;
use agentmem_core::Error;
use agentmem_core::{
    async_trait, AgentMemory, Archive, ArchiveId, ArchiveInfo, Capabilities, MemoryFilter,
    MemoryHit, MemoryItem, Message, MessageHit, MessageQuery, Metadata, PurgeReport, Result,
    RetentionPolicy, Session, SessionId, SessionInfo,
};
use rusqlite::Connection;

use crate::config::{Location, SqliteConfig};
use crate::error::BACKEND;
use crate::pool::Pool;
use crate::{archives, memories, retention, schema, search, sessions};

/// Agent memory in a SQLite database (backend `sqlite`).
///
/// A file database is safe for many tasks and many processes at once: WAL mode, a busy
/// timeout, and one short `IMMEDIATE` transaction per write. Cloning is cheap and shares the
/// connections.
///
/// ```
/// use agentmem_core::{AgentMemory, AgentMemoryExt, Message, SessionId};
/// use agentmem_sqlite::SqliteMemory;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let store = SqliteMemory::connect("sqlite::memory:").await?;
/// let session: SessionId = "ResearchAgent".parse()?;
/// store.append_one(&session, Message::user("Compare BigQuery and AlloyDB")).await?;
/// assert_eq!(store.messages(&session).await?.len(), 1);
/// # Ok::<(), agentmem_core::Error>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct SqliteMemory {
    pool: Arc<Pool>,
    /// Whether the database is a file other processes can open (not `:memory:`).
    shared_file: bool,
}

impl fmt::Debug for SqliteMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteMemory")
            .field("db", &self.pool.db())
            .finish_non_exhaustive()
    }
}

impl SqliteMemory {
    /// Opens the database a `sqlite:` URL names (see [`SqliteConfig`] for the forms and
    /// options), creating and migrating it as needed.
    ///
    /// Errors: `InvalidInput` for a bad URL, `CorruptData` (naming the file) for a file that is
    /// not a SQLite database, `Unsupported` for a database from a newer agentmem (left
    /// untouched), `Unavailable` when the file cannot be opened or stays locked.
    pub async fn connect(url: &str) -> Result<Self> {
        Self::open(url.parse()?).await
    }

    /// Opens the database `config` describes, creating and migrating it as needed.
    pub async fn open(config: SqliteConfig) -> Result<Self> {
        Op::new("sqlite", "open", None)
            .run(async move {
                let shared_file = matches!(config.location, Location::File(_));
                let pool = tokio::task::spawn_blocking(move || Pool::open_blocking(&config))
                    .await
                    .map_err(|e| {
                        Error::backend("opening the SQLite database panicked")
                            .with_source(e)
                            .with_operation("open")
                            .with_backend(BACKEND)
                    })??;
                Ok(SqliteMemory {
                    pool: Arc::new(pool),
                    shared_file,
                })
            })
            .await
    }

    /// Uses a connection the caller opened, migrating its database (this blocks the calling
    /// thread for the few statements that takes).
    ///
    /// The store turns on foreign keys (its deletes cascade through them); the journal mode,
    /// busy timeout and `synchronous` stay as the caller set them. All work goes through this
    /// one connection.
    pub fn from_connection(connection: Connection) -> Result<Self> {
        let shared_file = connection.path().is_some_and(|p| !p.is_empty());
        let pool = Pool::from_connection_blocking(connection)
            .map_err(|e| e.with_operation("open").with_backend(BACKEND))?;
        Ok(SqliteMemory {
            pool: Arc::new(pool),
            shared_file,
        })
    }

    /// The database as named in messages: its path, or `:memory:`.
    pub fn database(&self) -> &str {
        self.pool.db()
    }
}

/// Checks messages before they reach the database, so a bad one fails the whole batch.
fn validate_all(messages: &[Message]) -> Result<()> {
    messages.iter().try_for_each(Message::validate)
}

fn tag(operation: &'static str) -> impl Fn(Error) -> Error {
    move |e| e.with_operation(operation).with_backend(BACKEND)
}

#[async_trait]
impl AgentMemory for SqliteMemory {
    fn backend(&self) -> &'static str {
        BACKEND
    }

    fn capabilities(&self) -> Capabilities {
        let mut caps = Capabilities::default();
        caps.durable = self.shared_file;
        caps.cross_process = self.shared_file;
        caps.atomic_compaction = true;
        caps.indexed_search = true;
        caps.native_expiry = false;
        caps
    }

    async fn schema_version(&self) -> Result<u32> {
        Op::new("sqlite", "schema_version", None)
            .run(async move {
                self.pool
                    .read("schema_version", |conn| schema::read_version(conn))
                    .await
            })
            .await
    }

    async fn save_session(
        &self,
        session: &SessionId,
        history: &[Message],
        metadata: &Metadata,
    ) -> Result<()> {
        Op::new("sqlite", "save_session", Some(session))
            .messages(history.len())
            .run(async move {
                validate_all(history).map_err(tag("save_session"))?;
                let (name, history, metadata) =
                    (session.to_string(), history.to_vec(), metadata.clone());
                self.pool
                    .write("save_session", move |conn| {
                        sessions::save(conn, &name, &history, &metadata)
                    })
                    .await
            })
            .await
    }

    async fn append(&self, session: &SessionId, messages: &[Message]) -> Result<()> {
        Op::new("sqlite", "append", Some(session))
            .messages(messages.len())
            .run(async move {
                if messages.is_empty() {
                    return Ok(());
                }
                validate_all(messages).map_err(tag("append"))?;
                let (name, messages) = (session.to_string(), messages.to_vec());
                self.pool
                    .write("append", move |conn| {
                        sessions::append(conn, &name, &messages)
                    })
                    .await
            })
            .await
    }

    async fn load(&self, session: &SessionId, limit: Option<usize>) -> Result<Option<Session>> {
        Op::new("sqlite", "load", Some(session))
            .run_counted(
                async move {
                    let session = session.clone();
                    self.pool
                        .read("load", move |conn| sessions::load(conn, &session, limit))
                        .await
                },
                |s: &Option<Session>| s.as_ref().map_or(0, |s| s.messages.len()),
            )
            .await
    }

    async fn list_sessions(&self) -> Result<Vec<SessionInfo>> {
        Op::new("sqlite", "list_sessions", None)
            .run(async move { self.pool.read("list_sessions", sessions::list).await })
            .await
    }

    async fn delete_session(&self, session: &SessionId) -> Result<bool> {
        Op::new("sqlite", "delete_session", Some(session))
            .run(async move {
                let name = session.to_string();
                self.pool
                    .write("delete_session", move |conn| sessions::delete(conn, &name))
                    .await
            })
            .await
    }

    async fn compact(&self, session: &SessionId, replacement: &[Message]) -> Result<ArchiveInfo> {
        Op::new("sqlite", "compact", Some(session))
            .messages(replacement.len())
            .run(async move {
                validate_all(replacement).map_err(tag("compact"))?;
                let (session, replacement) = (session.clone(), replacement.to_vec());
                self.pool
                    .write("compact", move |conn| {
                        archives::compact(conn, &session, &replacement)
                    })
                    .await
            })
            .await
    }

    async fn list_archives(&self, session: &SessionId) -> Result<Vec<ArchiveInfo>> {
        Op::new("sqlite", "list_archives", Some(session))
            .run(async move {
                let session = session.clone();
                self.pool
                    .read("list_archives", move |conn| archives::list(conn, &session))
                    .await
            })
            .await
    }

    async fn load_archive(&self, session: &SessionId, archive: &ArchiveId) -> Result<Archive> {
        Op::new("sqlite", "load_archive", Some(session))
            .run_counted(
                async move {
                    let (session, archive) = (session.clone(), archive.clone());
                    self.pool
                        .read("load_archive", move |conn| {
                            archives::load(conn, &session, &archive)
                        })
                        .await
                },
                |a: &Archive| a.messages.len(),
            )
            .await
    }

    async fn put_memory(&self, item: &MemoryItem) -> Result<MemoryItem> {
        Op::new("sqlite", "put_memory", None)
            .run(async move {
                item.validate().map_err(tag("put_memory"))?;
                let item = item.clone();
                self.pool
                    .write("put_memory", move |conn| memories::put(conn, &item))
                    .await
            })
            .await
    }

    async fn get_memory(&self, id: &str) -> Result<Option<MemoryItem>> {
        Op::new("sqlite", "get_memory", None)
            .run(async move {
                let id = id.to_string();
                self.pool
                    .read("get_memory", move |conn| memories::get(conn, &id))
                    .await
            })
            .await
    }

    async fn list_memories(&self, filter: &MemoryFilter) -> Result<Vec<MemoryItem>> {
        Op::new("sqlite", "list_memories", None)
            .run(async move {
                let filter = filter.clone();
                self.pool
                    .read("list_memories", move |conn| memories::list(conn, &filter))
                    .await
            })
            .await
    }

    async fn search_memories(&self, query: &str, filter: &MemoryFilter) -> Result<Vec<MemoryHit>> {
        Op::new("sqlite", "search_memories", None)
            .run(async move {
                let (query, filter) = (query.to_string(), filter.clone());
                self.pool
                    .read("search_memories", move |conn| {
                        search::memories(conn, &query, &filter)
                    })
                    .await
            })
            .await
    }

    async fn delete_memory(&self, id: &str) -> Result<bool> {
        Op::new("sqlite", "delete_memory", None)
            .run(async move {
                let id = id.to_string();
                self.pool
                    .write("delete_memory", move |conn| memories::delete(conn, &id))
                    .await
            })
            .await
    }

    async fn search_messages(&self, query: &str, scope: &MessageQuery) -> Result<Vec<MessageHit>> {
        Op::new("sqlite", "search_messages", scope.session.as_ref())
            .run_counted(
                async move {
                    let (query, scope) = (query.to_string(), scope.clone());
                    self.pool
                        .read("search_messages", move |conn| {
                            search::messages(conn, &query, &scope)
                        })
                        .await
                },
                Vec::len,
            )
            .await
    }

    async fn purge(&self, policy: &RetentionPolicy) -> Result<PurgeReport> {
        Op::new("sqlite", "purge", None)
            .run(async move {
                let policy = *policy;
                self.pool
                    .write("purge", move |conn| retention::purge(conn, &policy))
                    .await
            })
            .await
    }
}
