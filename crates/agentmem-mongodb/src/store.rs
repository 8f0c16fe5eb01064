//! [`MongoStore`]: construction and the [`AgentMemory`] operations, built on the session
//! (`sessions.rs`), rewrite (`rewrite.rs`), memory and search modules and the transactions of
//! `transaction.rs`.

use agentmem_core::backend::BackendInfo;
use std::fmt;
use std::time::Duration;

use agentmem_core::backend::BackendConfig;
use agentmem_core::layer::open_layered;
use agentmem_core::support::{
    archive_not_found, memory_retention_cutoff, memory_search_limit, micros, retention_cutoff,
    search_terms,
};
use agentmem_core::Layered;
use agentmem_core::{
    async_trait, now, Archive, ArchiveId, ArchiveInfo, Capabilities, Error, MemoryFilter,
    MemoryHit, MemoryId, MemoryItem, MemoryStore, Message, MessageHit, MessageId, MessageQuery,
    Metadata, PropertyChange, PurgeReport, Result, RetentionPolicy, Rewind, Session, SessionId,
    SessionInfo, SessionPage, SessionPatch, SessionQuery, SessionStore,
};
use mongodb::bson::{doc, Document};
use mongodb::{Client, Collection, Database};

use crate::codec::{
    all_docs, check_size, memory_from, message_from, metadata_to_bson, without_terms,
};
use crate::config::{validate_database_name, MongoConfig, DEFAULT_SERVER_SELECTION_TIMEOUT};
use crate::error::{from_driver, server_code, ResultExt, BACKEND, DUPLICATE_KEY, INFO};
use crate::memories::memory_filter;
use crate::retry::{retry, Step};
use crate::rewrite::archive_info;
use crate::schema::{
    self, ServerFeatures, ARCHIVED, CHECKPOINTS, CHECKPOINT_BLOBS, GRAPH_ENTITIES, GRAPH_RELATIONS,
    HEADS, MEMORIES, MESSAGES, META, SESSIONS, VECTORS,
};
use crate::search::{memory_hits, message_hits};
use crate::sessions::{
    encode_all, encode_archived, expired, len_i64, live_filter, placed, session_doc, session_infos,
};
use crate::transaction::{in_transaction, TxError};

/// Agent memory in a MongoDB database (backend `"mongodb"`).
///
/// See the [crate docs](crate) for the data model, how appends are ordered, and what
/// compaction guarantees with and without transactions.
///
/// The constructors ([`connect`](Self::connect), [`connect_with`](Self::connect_with),
/// [`from_client`](Self::from_client), [`from_client_with`](Self::from_client_with)) return
/// the store wearing agentmem's standard [layers](agentmem_core::layer) (validation, spans,
/// error labels), as a [`Layered<MongoStore>`](Layered); it dereferences to the
/// `MongoStore`, so [`features`](Self::features), [`client`](Self::client) and the other
/// methods here are called on it directly.
///
/// ```no_run
/// # async fn demo() -> agentmem_core::Result<()> {
/// use agentmem_core::{AgentMemory, MemoryStore, SessionStore, AgentMemoryExt, Message, SessionId};
/// use agentmem_mongodb::MongoStore;
///
/// let store = MongoStore::connect("mongodb://127.0.0.1:27017/agentmem?directConnection=true").await?;
/// let session: SessionId = "ResearchAgent".parse()?;
/// store.append_one(&session, Message::user("Compare BigQuery and AlloyDB")).await?;
/// let last = store.last_messages(&session, 20).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct MongoStore {
    client: Client,
    db: Database,
    features: ServerFeatures,
    /// See [`MongoStore::retry_budget`].
    retry_budget: Duration,
}

impl fmt::Debug for MongoStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the URL: it may hold a password.
        f.debug_struct("MongoStore")
            .field("database", &self.db.name())
            .field("features", &self.features)
            .finish()
    }
}

impl MongoStore {
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
        open_layered(&INFO, async move {
            let options = config.client_options().await?;
            let budget = options
                .server_selection_timeout
                .unwrap_or(DEFAULT_SERVER_SELECTION_TIMEOUT);
            let client = Client::with_options(options).map_err(|e| {
                Error::invalid_input(format!(
                    "cannot use MongoDB URL {}: {}",
                    config.redacted_url(),
                    config.redact_secrets_in(&e.to_string())
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
    /// use agentmem_mongodb::MongoStore;
    /// use mongodb::{options::ClientOptions, Client};
    ///
    /// let mut options = ClientOptions::parse("mongodb://127.0.0.1:27017/?directConnection=true").await?;
    /// options.app_name = Some("research-agent".into());
    /// options.max_pool_size = Some(20);
    /// let client = Client::with_options(options)?;
    /// // The application keeps using `client`; the store shares its connection pool.
    /// let store = MongoStore::from_client(client.clone(), "agentmem").await?;
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
    /// use agentmem_mongodb::{MongoConfig, MongoStore, ServerFeatures};
    ///
    /// let config = MongoConfig::new("mongodb://127.0.0.1:27017/agentmem?directConnection=true")?;
    /// let client = Client::with_options(config.client_options().await?)?;
    /// let mut allowed = ServerFeatures::ALL;
    /// allowed.transactions = false;
    /// let store = MongoStore::from_client_with(client, "agentmem", allowed).await?;
    /// assert!(!store.features().transactions);
    /// # Ok(()) }
    /// ```
    pub async fn from_client_with(
        client: Client, database: &str, allowed: ServerFeatures,
    ) -> Result<Layered<Self>> {
        open_layered(
            &INFO,
            Self::open(client, database, allowed, DEFAULT_SERVER_SELECTION_TIMEOUT),
        )
        .await
    }

    /// Opens the raw store: checks the database name, lays out the schema and detects what
    /// the server supports, keeping only the features in `allowed`.
    async fn open(
        client: Client, database: &str, allowed: ServerFeatures, retry_budget: Duration,
    ) -> Result<Self> {
        validate_database_name(database)?;
        let db = client.database(database);
        let (_, detected) = schema::open(&client, &db).await?;
        let features = detected.only(allowed);
        tracing::debug!(database, ?features, "opened MongoDB agent memory");
        Ok(MongoStore {
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

    /// How long a transaction keeps being retried after the server could not be reached:
    /// the client's server selection timeout, the time one attempt already waits for a server.
    pub(crate) fn retry_budget(&self) -> Duration {
        self.retry_budget
    }

    /// The store's database, for commands the driver has no method for.
    pub(crate) fn database(&self) -> &Database {
        &self.db
    }
}

/// One method per collection of the store, each the collection of that name (`schema.rs`).
macro_rules! collections {
    ($($method:ident: $name:ident),* $(,)?) => {
        impl MongoStore {
            $(
                pub(crate) fn $method(&self) -> Collection<Document> {
                    self.db.collection($name)
                }
            )*
        }
    };
}

collections! {
    sessions: SESSIONS,
    heads: HEADS,
    messages: MESSAGES,
    archived: ARCHIVED,
    memories: MEMORIES,
    checkpoints: CHECKPOINTS,
    checkpoint_blobs: CHECKPOINT_BLOBS,
    graph_entities: GRAPH_ENTITIES,
    graph_relations: GRAPH_RELATIONS,
    vectors: VECTORS,
    meta: META,
}

#[async_trait]
impl SessionStore for MongoStore {
    fn backend(&self) -> &'static BackendInfo {
        &INFO
    }

    fn capabilities(&self) -> Capabilities {
        // Every document of an expiring session carries `expires_at` under a TTL index, so a
        // server that keeps TTL indexes deletes expired sessions by itself.
        INFO.capabilities
            .atomic_compaction(self.features.transactions)
            .indexed_search(self.features.text_search)
            .native_expiry(self.features.ttl)
    }

    async fn schema_version(&self) -> Result<u32> {
        schema::stored_version(&self.db).await
    }

    async fn store_property(&self, name: &str) -> Result<Option<String>> {
        let found = self
            .meta()
            .find_one(doc! {"_id": property_id(name)})
            .await
            .mapped()?;
        match found.as_ref().map(|d| d.get_str("value")) {
            None => Ok(None),
            Some(Ok(value)) => Ok(Some(value.to_owned())),
            Some(Err(_)) => Err(agentmem_core::Error::corrupt(format!(
                "the document of store property `{name}` holds no string `value`"
            ))),
        }
    }

    /// One insert (the unique `_id` refuses a second one) or one conditional update: each is
    /// atomic on one document, with or without transactions.
    async fn set_store_property(&self, change: &PropertyChange<'_>) -> Result<bool> {
        let (name, expected, value) = (change.name, change.expected, change.value);
        let meta = self.meta();
        let id = property_id(name);
        match expected {
            None => match meta.insert_one(doc! {"_id": &id, "value": value}).await {
                Ok(_) => Ok(true),
                Err(e) if server_code(&e) == Some(DUPLICATE_KEY) => Ok(false),
                Err(e) => Err(from_driver(e)),
            },
            Some(expected) => {
                let filter = doc! {"_id": &id, "value": expected};
                let done = meta
                    .update_one(filter, doc! {"$set": {"value": value}})
                    .await
                    .mapped()?;
                Ok(done.matched_count == 1)
            }
        }
    }

    async fn save_session(
        &self, session: &SessionId, history: &[Message], metadata: &Metadata,
    ) -> Result<()> {
        let fields = encode_all(history)?;
        let meta = metadata_to_bson(metadata)?;
        // The metadata lives in the head document: refuse it before anything is written.
        check_size("the session metadata", &doc! {"metadata": &meta})?;
        let t = micros(now());
        if self.features.transactions {
            // The session document exists (with its epoch) before the transaction, which then
            // writes only the head and the messages.
            let (_, epoch, expires) = self.reserve(session, 0).await?;
            in_transaction!(self, |s| {
                self.save_in_transaction(s, session, (epoch, expires), &fields, &meta)
                    .await
            })?;
            self.touch(session, t).await?;
            if expires.is_some() {
                self.settle_expiry(session, Some(expires)).await?;
            }
            Ok(())
        } else {
            self.save_by_epoch_flip(session, &fields, &meta, t).await
        }
    }

    async fn append(&self, session: &SessionId, messages: &[Message]) -> Result<()> {
        // Encode (and check sizes) before reserving, so bad input leaves no gap. (The validate
        // layer has checked the messages and never passes an empty append.)
        let fields = encode_all(messages)?;
        let (first, epoch, expires) = self.reserve(session, len_i64(fields.len())?).await?;
        let docs = placed(session, epoch, first, &fields, expires);
        let inserted = if docs.len() > 1 && self.features.transactions {
            // All-or-nothing for batches. The transaction touches only these new keys, so it
            // conflicts with no other writer.
            in_transaction!(self, |s| {
                self.messages()
                    .insert_many(docs.clone())
                    .session(&mut *s)
                    .await
                    .map(|_| ())
                    .map_err(TxError::from)
            })
        } else {
            self.messages().insert_many(docs).await.map(|_| ()).mapped()
        };
        inserted?;
        // Only for expiring sessions (one more round trip): a concurrent `update_session` may
        // have changed the expiry these messages carry.
        if expires.is_some() {
            self.settle_expiry(session, Some(expires)).await?;
        }
        Ok(())
    }

    async fn load(&self, session: &SessionId, limit: Option<usize>) -> Result<Option<Session>> {
        retry(|_| async move {
            let Some(sd) = self.live_session_doc(session).await? else {
                return Ok(Step::Done(None));
            };
            let epoch = sd.epoch;
            let loaded = self.load_epoch(session, limit, sd).await?;
            // Without transactions, a save or compaction switches epochs and then deletes the
            // old one, possibly while it is being read here: re-check, so that a reader never
            // returns a half-deleted epoch (but returns what it read once the tries are spent).
            if self.features.transactions {
                return Ok(Step::Done(Some(loaded)));
            }
            Ok(match self.session_doc(session).await? {
                Some(again) if again.epoch == epoch => Step::Done(Some(loaded)),
                _ => Step::RetryNow(Ok(Some(loaded))),
            })
        })
        .await
    }

    async fn list_sessions(&self) -> Result<Vec<SessionInfo>> {
        let live = live_filter(micros(now()));
        let docs = all_docs(self.sessions().find(live).sort(doc! {"_id": 1})).await?;
        // One aggregation counts the messages of every session's current epoch (epochs are
        // unique across sessions, so matching them is enough).
        let current: Vec<String> = docs
            .iter()
            .map(|d| session_doc(d).map(|sd| sd.epoch.to_hex()))
            .collect::<Result<_>>()?;
        let counted = all_docs(self.messages().aggregate(vec![
            doc! {"$match": {"epoch": {"$in": current}}},
            doc! {"$group": {"_id": "$session", "n": {"$sum": 1}}},
        ]))
        .await?;
        session_infos(&docs, &counted)
    }

    async fn delete_session(&self, session: &SessionId) -> Result<bool> {
        // The session document goes first, so the session is gone at once; the rest is then
        // deleted by epoch, which never touches a new session of the same id that an append
        // may create meanwhile (it gets a new epoch).
        let Some(d) = self
            .sessions()
            .find_one_and_delete(doc! {"_id": session.as_str()})
            .await
            .mapped()?
        else {
            return Ok(false);
        };
        self.remove_data(session, &d).await?;
        Ok(true)
    }

    async fn compact(&self, session: &SessionId, replacement: &[Message]) -> Result<ArchiveInfo> {
        let fields = encode_all(replacement)?;
        if self.features.transactions {
            let (info, expires) = in_transaction!(self, |s| {
                self.compact_in_transaction(s, session, &fields).await
            })?;
            self.touch(session, micros(info.created_at)).await?;
            if expires.is_some() {
                self.settle_expiry(session, Some(expires)).await?;
            }
            Ok(info)
        } else {
            self.compact_by_epoch_flip(session, &fields).await
        }
    }

    async fn list_archives(&self, session: &SessionId) -> Result<Vec<ArchiveInfo>> {
        let Some(h) = self.current_head(session).await? else {
            return Ok(Vec::new());
        };
        h.archives
            .iter()
            .map(|a| archive_info(session, a))
            .collect()
    }

    async fn load_archive(&self, session: &SessionId, archive: &ArchiveId) -> Result<Archive> {
        retry(|_| async move {
            let h = self
                .current_head(session)
                .await?
                .ok_or_else(|| archive_not_found(session, archive))?;
            let entry = h
                .archives
                .iter()
                .find(|a| a.id == archive.as_str())
                .ok_or_else(|| archive_not_found(session, archive))?;
            let archived = self.archived();
            let find = archived
                .find(doc! {"session": session.as_str(), "epoch": entry.epoch.to_hex(), "archive": archive.as_str()})
                .sort(doc! {"pos": 1});
            let messages: Vec<Message> = all_docs(find)
                .await?
                .iter()
                .map(message_from)
                .collect::<Result<_>>()?;
            if messages.len() as i64 == entry.count {
                return Ok(Step::Done(Archive {
                    info: archive_info(session, entry)?,
                    messages,
                }));
            }
            let short = Error::corrupt(format!(
                "archive `{archive}` lists {} messages but {} are stored",
                entry.count,
                messages.len()
            ));
            // A `replace_archive` may have switched the archive to new messages and deleted
            // the ones being read: read again when the entry changed.
            let changed = match self.current_head(session).await? {
                Some(again) => !again
                    .archives
                    .iter()
                    .any(|a| a.id == entry.id && a.epoch == entry.epoch),
                None => true,
            };
            if changed {
                Ok(Step::RetryNow(Err(short)))
            } else {
                Err(short)
            }
        })
        .await
    }

    async fn replace_archive(
        &self, session: &SessionId, archive: &ArchiveId, messages: &[Message],
    ) -> Result<ArchiveInfo> {
        let fields = encode_archived(messages)?;
        if !self.features.transactions {
            return self
                .replace_archive_by_epoch_flip(session, archive, &fields)
                .await;
        }
        let (info, expires) = in_transaction!(self, |s| {
            self.replace_archive_in_transaction(s, session, archive, &fields)
                .await
        })?;
        if expires.is_some() {
            self.settle_expiry(session, Some(expires)).await?;
        }
        Ok(info)
    }

    async fn search_messages(&self, query: &str, scope: &MessageQuery) -> Result<Vec<MessageHit>> {
        let Some(terms) = search_terms(query, scope.limit) else {
            return Ok(Vec::new());
        };
        // Only the current epoch of each session is visible; search within those.
        let epochs = self.current_epochs(scope.session.as_ref()).await?;
        if epochs.is_empty() {
            return Ok(Vec::new());
        }
        let corpus = self.message_corpus(scope.session.as_ref());
        let hits = self.scored(&corpus, query, &terms, scope.limit).await?;
        message_hits(hits, &epochs, scope.limit)
    }

    async fn purge(&self, policy: &RetentionPolicy) -> Result<PurgeReport> {
        let at = now();
        let mut report = PurgeReport {
            sessions_deleted: self.sweep_expired().await?,
            ..Default::default()
        };
        if policy.max_age.is_some() || policy.max_sessions.is_some() {
            // Newest first, so `max_sessions` keeps the head of the list.
            let sessions = self.sessions();
            let newest_first = sessions
                .find(doc! {})
                .projection(doc! {"_id": 1, "updated": 1})
                .sort(doc! {"updated": -1, "_id": 1});
            let docs = all_docs(newest_first).await?;
            let cutoff = retention_cutoff(policy, at).map(micros);
            for id in expired(&docs, policy, cutoff)? {
                if self.delete_session(&id).await? {
                    report.sessions_deleted += 1;
                }
            }
        }
        // Memory items: every expired one and, with `max_memory_age`, every one not updated
        // since the cutoff, in one delete.
        let mut doomed = vec![doc! {"expires": {"$lte": micros(at)}}];
        if let Some(cutoff) = memory_retention_cutoff(policy, at) {
            doomed.push(doc! {"updated": {"$lt": micros(cutoff)}});
        }
        let deleted = self
            .memories()
            .delete_many(doc! {"$or": doomed})
            .await
            .mapped()?;
        report.memories_deleted = deleted.deleted_count;
        Ok(report)
    }

    async fn fork(
        &self, source: &SessionId, target: &SessionId, at: Option<&MessageId>,
    ) -> Result<SessionInfo> {
        self.fork_session(source, target, at).await
    }

    async fn rewind(&self, session: &SessionId, to: &Rewind) -> Result<Vec<Message>> {
        self.rewind_session(session, to).await
    }

    async fn update_session(
        &self, session: &SessionId, patch: &SessionPatch,
    ) -> Result<SessionInfo> {
        self.patch_session(session, patch).await
    }

    async fn find_sessions(&self, query: &SessionQuery) -> Result<SessionPage> {
        self.query_sessions(query).await
    }
}

#[async_trait]
impl MemoryStore for MongoStore {
    async fn put_memory(&self, item: &MemoryItem) -> Result<MemoryItem> {
        retry(|_| async move {
            match self.try_put_memory(item).await {
                Ok(stored) => Ok(Step::Done(stored)),
                // Two writers inserting the same scope, kind and key at once: the loser retries
                // and then replaces the winner's item.
                Err(TxError::Driver(e)) if server_code(&e) == Some(DUPLICATE_KEY) => {
                    Ok(Step::Retry(Err(from_driver(e))))
                }
                Err(TxError::Driver(e)) => Err(from_driver(e)),
                Err(TxError::Other(e)) => Err(e),
            }
        })
        .await
    }

    async fn get_memory(&self, id: &MemoryId) -> Result<Option<MemoryItem>> {
        let found = self
            .memories()
            .find_one(doc! {"_id": id.as_str()})
            .projection(without_terms())
            .await
            .mapped()?;
        let item = found.map(|d| memory_from(&d)).transpose()?;
        // An expired item is gone, though it is stored until a put of its key or a purge.
        let at = now();
        Ok(item.filter(|item| !item.is_expired_at(at)))
    }

    async fn list_memories(&self, filter: &MemoryFilter) -> Result<Vec<MemoryItem>> {
        if filter.limit == Some(0) {
            return Ok(Vec::new());
        }
        let memories = self.memories();
        // The scope and expiry are selected by the query, so the limit counts only listed items.
        let query = memories
            .find(memory_filter(filter, micros(now())))
            .projection(without_terms());
        let docs = match filter.limit {
            None => all_docs(query.sort(doc! {"created": 1, "_id": 1})).await?,
            Some(n) => {
                let newest = query
                    .sort(doc! {"created": -1, "_id": -1})
                    .limit(i64::try_from(n).unwrap_or(i64::MAX));
                let mut docs = all_docs(newest).await?;
                docs.reverse();
                docs
            }
        };
        docs.iter().map(memory_from).collect()
    }

    async fn search_memories(&self, query: &str, filter: &MemoryFilter) -> Result<Vec<MemoryHit>> {
        let limit = memory_search_limit(filter);
        let Some(terms) = search_terms(query, limit) else {
            return Ok(Vec::new());
        };
        let corpus = self.memory_corpus(filter);
        memory_hits(self.scored(&corpus, query, &terms, limit).await?, limit)
    }

    async fn delete_memory(&self, id: &MemoryId) -> Result<bool> {
        let result = self
            .memories()
            .delete_one(doc! {"_id": id.as_str()})
            .await
            .mapped()?;
        Ok(result.deleted_count > 0)
    }
}

/// Connects by URL: registering this config (`Registry::with::<MongoConfig>()`) makes
/// `mongodb://` and `mongodb+srv://` (resolved through DNS SRV and TXT records) URLs open a
/// [`MongoStore`].
#[async_trait]
impl BackendConfig for MongoConfig {
    type Store = MongoStore;
    const INFO: &'static BackendInfo = &INFO;

    async fn connect(self) -> Result<Layered<MongoStore>> {
        MongoStore::connect_with(self).await
    }
}

/// The `_id`, in `meta`, of store property `name`: prefixed, so no property is the schema
/// version document.
fn property_id(name: &str) -> String {
    format!("property:{name}")
}
