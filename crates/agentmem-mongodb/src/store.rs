//! [`MongoMemory`]: construction and the [`AgentMemory`] implementation, which delegates to
//! the session, memory and search modules.

use std::fmt;
use std::time::{Duration, Instant};

use agentmem_core::backend::BackendConfig;
use agentmem_core::layer::{open_layered, Layered};
use agentmem_core::{
    async_trait, AgentMemory, Archive, ArchiveId, ArchiveInfo, Capabilities, Error, MemoryFilter,
    MemoryHit, MemoryItem, Message, MessageHit, MessageQuery, Metadata, PurgeReport, Result,
    RetentionPolicy, Session, SessionId, SessionInfo,
};
use mongodb::bson::Document;
use mongodb::{Client, ClientSession, Collection, Database};

use crate::config::{validate_database_name, MongoConfig, DEFAULT_SERVER_SELECTION_TIMEOUT};
use crate::error::{is_transient, is_unreachable, server_code, ResultExt, BACKEND, DUPLICATE_KEY};
use crate::schema::{self, ServerFeatures, ARCHIVED, HEADS, MEMORIES, MESSAGES, SESSIONS};

/// Agent memory in a MongoDB database (backend `"mongodb"`).
///
/// See the [crate docs](crate) for the data model, how appends are ordered, and what
/// compaction guarantees with and without transactions.
///
/// The constructors ([`connect`](Self::connect), [`connect_with`](Self::connect_with),
/// [`from_client`](Self::from_client), [`from_client_with`](Self::from_client_with)) return
/// the store wearing agentmem's standard [layers](agentmem_core::layer) (validation, spans,
/// error labels), as a [`Layered<MongoMemory>`](Layered); it dereferences to the
/// `MongoMemory`, so [`features`](Self::features), [`client`](Self::client) and the other
/// methods here are called on it directly.
///
/// ```no_run
/// # async fn demo() -> agentmem_core::Result<()> {
/// use agentmem_core::{AgentMemory, AgentMemoryExt, Message, SessionId};
/// use agentmem_mongodb::MongoMemory;
///
/// let store = MongoMemory::connect("mongodb://127.0.0.1:27017/agentmem?directConnection=true").await?;
/// let session: SessionId = "ResearchAgent".parse()?;
/// store.append_one(&session, Message::user("Compare BigQuery and AlloyDB")).await?;
/// let last = store.last_messages(&session, 20).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct MongoMemory {
    client: Client,
    db: Database,
    features: ServerFeatures,
    /// See [`MongoMemory::retry_budget`].
    retry_budget: Duration,
}

impl fmt::Debug for MongoMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the URL: it may hold a password.
        f.debug_struct("MongoMemory")
            .field("database", &self.db.name())
            .field("features", &self.features)
            .finish()
    }
}

impl MongoMemory {
    /// Connects to the server and database a `mongodb://` URL names (see [`MongoConfig`]).
    ///
    /// Fails with `InvalidInput` for a malformed URL, `Unavailable` when no server answers
    /// within the server selection timeout (5 s unless the URL sets
    /// `serverSelectionTimeoutMS`), and `Unsupported` for a database of a newer schema.
    pub async fn connect(url: &str) -> Result<Layered<Self>> {
        Self::connect_with(MongoConfig::new(url)?).await
    }

    /// Connects with a parsed [`MongoConfig`].
    pub async fn connect_with(config: MongoConfig) -> Result<Layered<Self>> {
        open_layered(BACKEND, async move {
            let options = config.client_options().await?;
            let budget = options
                .server_selection_timeout
                .unwrap_or(DEFAULT_SERVER_SELECTION_TIMEOUT);
            let client = Client::with_options(options).map_err(|e| {
                Error::invalid_input(format!(
                    "cannot use MongoDB URL {}: {e}",
                    config.redacted_url()
                ))
            })?;
            Self::open(client, config.database(), ServerFeatures::ALL, budget).await
        })
        .await
    }

    /// Uses an existing driver client (sharing its connection pool) and the named database.
    ///
    /// The driver does not expose the client's server selection timeout, so transactions
    /// that cannot reach the server are retried for at most
    /// [`DEFAULT_SERVER_SELECTION_TIMEOUT`](crate::DEFAULT_SERVER_SELECTION_TIMEOUT).
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// use agentmem_mongodb::MongoMemory;
    /// use mongodb::{options::ClientOptions, Client};
    ///
    /// let mut options = ClientOptions::parse("mongodb://127.0.0.1:27017/?directConnection=true").await?;
    /// options.app_name = Some("research-agent".into());
    /// options.max_pool_size = Some(20);
    /// let client = Client::with_options(options)?;
    /// // The application keeps using `client`; the store shares its connection pool.
    /// let store = MongoMemory::from_client(client.clone(), "agentmem").await?;
    /// assert_eq!(store.database_name(), "agentmem");
    /// # Ok(()) }
    /// ```
    pub async fn from_client(client: Client, database: &str) -> Result<Layered<Self>> {
        Self::from_client_with(client, database, ServerFeatures::ALL).await
    }

    /// Like [`from_client`](Self::from_client), using only the server features `allowed`
    /// lets through: a feature the server has is turned off when `allowed` lacks it, and one
    /// the server lacks is never turned on. For example transactions, to use the
    /// epoch-switch compaction on a server whose transactions are unreliable, or text
    /// indexes, to rank with the client-side BM25.
    ///
    /// The features are fixed when the store is opened (its layers wrap it then), so this is
    /// the one constructor that restricts them; to connect by URL as well, build the client
    /// from [`MongoConfig::client_options`]:
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// use agentmem_mongodb::mongodb::Client;
    /// use agentmem_mongodb::{MongoConfig, MongoMemory, ServerFeatures};
    ///
    /// let config = MongoConfig::new("mongodb://127.0.0.1:27017/agentmem?directConnection=true")?;
    /// let client = Client::with_options(config.client_options().await?)?;
    /// let mut allowed = ServerFeatures::ALL;
    /// allowed.transactions = false;
    /// let store = MongoMemory::from_client_with(client, "agentmem", allowed).await?;
    /// assert!(!store.features().transactions);
    /// # Ok(()) }
    /// ```
    pub async fn from_client_with(
        client: Client,
        database: &str,
        allowed: ServerFeatures,
    ) -> Result<Layered<Self>> {
        open_layered(
            BACKEND,
            Self::open(client, database, allowed, DEFAULT_SERVER_SELECTION_TIMEOUT),
        )
        .await
    }

    /// Opens the raw store: checks the database name, lays out the schema and detects what
    /// the server supports, keeping only the features in `allowed`.
    async fn open(
        client: Client,
        database: &str,
        allowed: ServerFeatures,
        retry_budget: Duration,
    ) -> Result<Self> {
        validate_database_name(database)?;
        let db = client.database(database);
        let (_, detected) = schema::open(&client, &db).await?;
        let features = detected.only(allowed);
        tracing::debug!(database, ?features, "opened MongoDB agent memory");
        Ok(MongoMemory {
            client,
            db,
            features,
            retry_budget,
        })
    }

    /// The database this store uses.
    pub fn database_name(&self) -> &str {
        self.db.name()
    }

    /// What the server supports, as detected when the store was opened, less what
    /// [`from_client_with`](Self::from_client_with) turned off.
    pub fn features(&self) -> ServerFeatures {
        self.features
    }

    /// The driver client, to share its pool with other code.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Drops the whole database: every session, archive and memory item of this store.
    pub async fn drop_database(&self) -> Result<()> {
        // Labelled here: not an `AgentMemory` operation, so no layer labels its errors.
        self.db
            .drop()
            .await
            .mapped()
            .map_err(|e| e.with_backend(BACKEND))
    }

    pub(crate) fn sessions(&self) -> Collection<Document> {
        self.db.collection(SESSIONS)
    }

    pub(crate) fn heads(&self) -> Collection<Document> {
        self.db.collection(HEADS)
    }

    pub(crate) fn messages(&self) -> Collection<Document> {
        self.db.collection(MESSAGES)
    }

    pub(crate) fn archived(&self) -> Collection<Document> {
        self.db.collection(ARCHIVED)
    }

    pub(crate) fn memories(&self) -> Collection<Document> {
        self.db.collection(MEMORIES)
    }

    pub(crate) async fn start_transaction(&self) -> Result<ClientSession> {
        let mut session = self.client.start_session().await.mapped()?;
        session.start_transaction().await.mapped()?;
        Ok(session)
    }

    /// Commits, retrying while the outcome is unknown (as the driver documents), but only a
    /// few times and, when the server cannot be reached, only within the transaction's
    /// [`retry_budget`](Self::retry_budget) measured from `started`.
    pub(crate) async fn commit(
        &self,
        session: &mut ClientSession,
        started: Instant,
    ) -> std::result::Result<(), mongodb::error::Error> {
        let mut tries = 0;
        loop {
            match session.commit_transaction().await {
                Err(e)
                    if e.contains_label(mongodb::error::UNKNOWN_TRANSACTION_COMMIT_RESULT)
                        && tries < MAX_COMMIT_RETRIES
                        && (!is_unreachable(&e) || started.elapsed() < self.retry_budget()) =>
                {
                    tries += 1;
                }
                other => return other,
            }
        }
    }

    /// How long a transaction keeps being retried after the server could not be reached:
    /// the client's server selection timeout, the time one attempt already waits for a server.
    pub(crate) fn retry_budget(&self) -> Duration {
        self.retry_budget
    }

    /// Whether a transaction that failed with `failure` on try number `attempt` (from 0),
    /// first started at `started`, is run again.
    ///
    /// Write conflicts and duplicate head keys (two transactions creating the same head) are
    /// races with other writers and retried up to [`MAX_RETRIES`] times, each quickly. An
    /// unreachable server is different: the driver labels those failures
    /// `TransientTransactionError` too, but each further try waits out server selection
    /// again, so a dead server would hold the caller for [`MAX_RETRIES`] timeouts. They get
    /// at most [`MAX_UNREACHABLE_RETRIES`] more tries, and none once the retry budget is
    /// spent, so the caller hears `Unavailable` within about two selection timeouts.
    pub(crate) fn retry_transaction(
        &self,
        failure: &mongodb::error::Error,
        attempt: u32,
        started: Instant,
    ) -> bool {
        if is_unreachable(failure) {
            return attempt < MAX_UNREACHABLE_RETRIES && started.elapsed() < self.retry_budget();
        }
        let raced = is_transient(failure) || server_code(failure) == Some(DUPLICATE_KEY);
        raced && attempt < MAX_RETRIES
    }

    /// Aborts a transaction whose body failed with `failure`. When the server cannot be
    /// reached the abort is left to the driver, which aborts a dropped session's transaction
    /// in the background: awaiting it here would wait out server selection once more.
    pub(crate) async fn abandon(
        session: &mut ClientSession,
        failure: Option<&mongodb::error::Error>,
    ) {
        if failure.is_some_and(is_unreachable) {
            return;
        }
        // The transaction's outcome is already decided (it failed); a failed abort only
        // leaves it to the server's transaction timeout.
        let _ = session.abort_transaction().await;
    }
}

/// A failure inside a transaction body: a driver error (which may be transient, so the whole
/// transaction is retried) or an agentmem error (returned as it is).
pub(crate) enum TxError {
    Driver(mongodb::error::Error),
    Other(Error),
}

impl From<mongodb::error::Error> for TxError {
    fn from(e: mongodb::error::Error) -> Self {
        TxError::Driver(e)
    }
}

impl From<Error> for TxError {
    fn from(e: Error) -> Self {
        TxError::Other(e)
    }
}

/// How many times an operation that lost a race with a transaction is retried.
pub(crate) const MAX_RETRIES: u32 = 30;

/// How many more times a transaction is run after the server could not be reached (see
/// [`MongoMemory::retry_transaction`]): one retry rides out a dropped connection.
pub(crate) const MAX_UNREACHABLE_RETRIES: u32 = 1;

/// How many times a commit whose outcome is unknown is sent again.
pub(crate) const MAX_COMMIT_RETRIES: u32 = 3;

/// Waits before retry number `attempt`: exponential from 2 ms, capped at 200 ms, with jitter
/// so that writers that collided do not collide again in lockstep.
pub(crate) async fn backoff(attempt: u32) {
    let base = (2u64 << attempt.min(7)).min(200);
    let jitter = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::from(d.subsec_nanos()) % (base + 1))
        .unwrap_or(0);
    tokio::time::sleep(Duration::from_millis(base / 2 + jitter / 2)).await;
}

/// Runs `$body` (an expression using the `ClientSession` bound to `$s`) in a transaction,
/// retrying the whole transaction as [`MongoMemory::retry_transaction`] decides (write
/// conflicts with concurrent writers; briefly, an unreachable server), and maps driver errors.
macro_rules! in_transaction {
    ($store:expr, |$s:ident| $body:expr) => {{
        let started = std::time::Instant::now();
        let mut attempt = 0u32;
        loop {
            let mut session = $store.start_transaction().await?;
            let outcome: std::result::Result<_, $crate::store::TxError> = {
                let $s = &mut session;
                $body
            };
            let failure = match outcome {
                Ok(value) => match $store.commit(&mut session, started).await {
                    Ok(()) => break Ok(value),
                    Err(e) => e,
                },
                Err($crate::store::TxError::Driver(e)) => {
                    $crate::store::MongoMemory::abandon(&mut session, Some(&e)).await;
                    e
                }
                Err($crate::store::TxError::Other(e)) => {
                    $crate::store::MongoMemory::abandon(&mut session, None).await;
                    break Err(e);
                }
            };
            if $store.retry_transaction(&failure, attempt, started) {
                $crate::store::backoff(attempt).await;
                attempt += 1;
                continue;
            }
            break Err($crate::error::from_driver(failure));
        }
    }};
}
pub(crate) use in_transaction;

#[async_trait]
impl AgentMemory for MongoMemory {
    fn backend(&self) -> &'static str {
        BACKEND
    }

    fn capabilities(&self) -> Capabilities {
        let mut caps = Capabilities::default();
        caps.durable = true;
        caps.cross_process = true;
        caps.atomic_compaction = self.features.transactions;
        caps.indexed_search = self.features.text_search;
        // A session spans many documents whose expiry would all have to move with its last
        // write, so retention runs as purge queries rather than a TTL index.
        caps.native_expiry = false;
        caps
    }

    async fn schema_version(&self) -> Result<u32> {
        schema::stored_version(&self.db).await
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

/// Connects by URL: registering this config (`Registry::with::<MongoConfig>()`) makes
/// `mongodb://` (and `mongodb+srv://`, refused with `Unsupported` in this build) URLs open a
/// [`MongoMemory`].
#[async_trait]
impl BackendConfig for MongoConfig {
    type Store = MongoMemory;
    const BACKEND: &'static str = BACKEND;
    const SCHEMES: &'static [&'static str] = &["mongodb", "mongodb+srv"];

    async fn connect(self) -> Result<Layered<MongoMemory>> {
        MongoMemory::connect_with(self).await
    }
}
