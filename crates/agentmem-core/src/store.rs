//! The [`AgentMemory`] trait every backend implements, and the types its methods take.

use crate::property::PropertyChange;
use crate::MemoryId;
use std::fmt::Debug;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::backend::BackendInfo;
use crate::checkpoint::{
    ChannelBlob, Checkpoint, CheckpointKey, CheckpointPrune, CheckpointQuery, CheckpointTuple,
    PendingWrite, ThreadInfo,
};
use crate::error::Result;
use crate::graph::{
    AddedObservations, Entity, GraphQuery, KnowledgeGraph, ObservationAddition,
    ObservationDeletion, Relation,
};
use crate::lifecycle::{Rewind, SessionPage, SessionPatch, SessionQuery};
use crate::model::{
    Archive, ArchiveInfo, MemoryItem, MemoryKind, Message, Metadata, Session, SessionInfo,
};
use crate::name::ArchiveId;
use crate::name::MessageId;
use crate::name::SessionId;
use crate::name::{CheckpointId, CheckpointNs, ThreadId};
use crate::scope::{MemoryScope, ScopeFilter};
use crate::vector::{StoredVector, VectorKey};
use chrono::{DateTime, Utc};

/// What a backend can do beyond the contract every backend meets.
///
/// Every backend implements every method of [`AgentMemory`]; these flags say how strong
/// its guarantees are, so callers (and the conformance suite) can choose accordingly. A
/// backend declares them once, in its [`BackendInfo`], built with the `const` methods here.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Capabilities {
    /// An acknowledged write survives a crash of the process (and, where the backend allows,
    /// of the machine).
    pub durable: bool,
    /// Several processes may write one store at once without losing or garbling anything.
    pub cross_process: bool,
    /// `compact` is all-or-nothing even if the process dies midway.
    pub atomic_compaction: bool,
    /// Search uses an index kept by the backend (rather than scanning in the client).
    pub indexed_search: bool,
    /// The server deletes expired sessions (and, where noted, memory items) by itself:
    /// Redis `EXPIRE`, a MongoDB TTL index. Elsewhere expiry is enforced on read and swept by
    /// `purge`.
    pub native_expiry: bool,
    /// The store keeps checkpoints ([`CheckpointStore`]); without it every checkpoint
    /// operation is refused with `Unsupported` by the store itself.
    pub checkpoints: bool,
    /// The store keeps a knowledge graph ([`GraphStore`]); without it every graph operation is
    /// refused with `Unsupported` by the store itself.
    pub graph: bool,
    /// The store keeps embedding vectors ([`VectorStore`]) for semantic search; without it
    /// every vector operation is refused with `Unsupported` by the store itself.
    pub vectors: bool,
}

/// The `const` builder of [`Capabilities`]: `new` (no capability), `all` (every one) and a
/// setter named after each field. The list must name every field, or `new` does not compile.
macro_rules! capabilities_builder {
    ($($flag:ident),* $(,)?) => {
        impl Capabilities {
            /// No capability: the start of a `const` builder.
            ///
            /// ```
            /// use agentmem_core::Capabilities;
            /// const LOCAL: Capabilities = Capabilities::new().durable(true).atomic_compaction(true);
            /// assert!(LOCAL.durable && LOCAL.atomic_compaction && !LOCAL.cross_process);
            /// ```
            pub const fn new() -> Self {
                Capabilities { $($flag: false),* }
            }

            /// Every capability: the start of a `const` builder for a store that lacks few.
            ///
            /// ```
            /// use agentmem_core::Capabilities;
            /// const SQL: Capabilities = Capabilities::all().native_expiry(false);
            /// assert!(SQL.durable && SQL.indexed_search && !SQL.native_expiry);
            /// ```
            pub const fn all() -> Self {
                Capabilities { $($flag: true),* }
            }

            $(
                #[doc = concat!("Sets [`", stringify!($flag), "`](Self::", stringify!($flag), ").")]
                pub const fn $flag(mut self, yes: bool) -> Self {
                    self.$flag = yes;
                    self
                }
            )*
        }
    };
}

capabilities_builder!(
    durable,
    cross_process,
    atomic_compaction,
    indexed_search,
    native_expiry,
    checkpoints,
    graph,
    vectors,
);

/// How message search is scoped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageQuery {
    /// Search only this session (all sessions when `None`).
    pub session: Option<SessionId>,
    /// At most this many hits.
    pub limit: usize,
}

impl Default for MessageQuery {
    fn default() -> Self {
        MessageQuery {
            session: None,
            limit: 10,
        }
    }
}

/// Which memory items to list or search. Expired items are never listed or found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryFilter {
    /// Only items of this kind (all kinds when `None`).
    pub kind: Option<MemoryKind>,
    /// Only items of these scopes (all scopes by default).
    pub scope: ScopeFilter,
    /// At most this many items (all when `None`; searches default to 10).
    pub limit: Option<usize>,
}

impl MemoryFilter {
    /// Items of one kind.
    pub fn kind(kind: MemoryKind) -> Self {
        MemoryFilter {
            kind: Some(kind),
            ..MemoryFilter::default()
        }
    }

    crate::setters! {
        /// Items visible from `scope` (see [`MemoryScope::sees`]): what an agent there reads.
        pub fn visible_from(scope: MemoryScope) { self.scope = ScopeFilter::VisibleFrom(scope) }

        /// Sets the scope filter.
        pub fn with_scope(scope: ScopeFilter) { self.scope = scope }
    }

    /// Whether `item` passes the kind and scope filters and has not expired at `now`.
    pub fn matches(&self, item: &MemoryItem, now: DateTime<Utc>) -> bool {
        self.kind.is_none_or(|kind| item.kind == kind)
            && self.scope.matches(&item.scope)
            && !item.is_expired_at(now)
    }
    /// Sets the limit.
    pub fn with_limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }
}

/// A message found by search, with the session it is in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageHit {
    /// The session holding the message.
    pub session: SessionId,
    /// The message.
    pub message: Message,
    /// Relevance: higher is better; comparable only within one result list.
    pub score: f64,
}

/// A memory item found by search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryHit {
    /// The item.
    pub item: MemoryItem,
    /// Relevance: higher is better; comparable only within one result list.
    pub score: f64,
}

/// What to delete when purging. Every limit set applies. A purge also deletes every
/// expired memory item, whatever the policy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetentionPolicy {
    /// Delete sessions (with their archives) not written for longer than this.
    pub max_age: Option<Duration>,
    /// Keep only this many sessions, the most recently written ones.
    pub max_sessions: Option<usize>,
    /// Delete memory items not updated for longer than this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_memory_age: Option<Duration>,
}

/// What a purge deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurgeReport {
    /// Sessions deleted, with their archives.
    pub sessions_deleted: u64,
    /// Memory items deleted: expired, or older than the policy's `max_memory_age`.
    #[serde(default)]
    pub memories_deleted: u64,
}

/// Sessions of messages and their archives: the half of a store that keeps conversations.
///
/// Object-safe; used through [`AgentMemory`] (a store with both halves) as
/// `Arc<dyn AgentMemory>`. Every backend passes the same conformance suite
/// (`agentmem-testkit`), which is the executable form of the contract written here.
///
/// Contract shared by all methods (of this trait and of [`MemoryStore`]):
/// - Names were validated when the [`SessionId`] was built, so backends may use them as keys.
/// - Messages in a session keep the order in which their appends were acknowledged;
///   a batch is appended contiguously and all-or-nothing.
/// - Failures are typed by [`ErrorKind`](crate::ErrorKind); nothing acknowledged is lost.
#[async_trait]
pub trait SessionStore: Debug + Send + Sync + 'static {
    /// The backend this store belongs to: its name (`file`, `sqlite`, `redis`, `postgres`,
    /// `mongodb`, `in-memory`; it prints as and compares equal to its name), schemes, system
    /// name and the capabilities it declares.
    fn backend(&self) -> &'static BackendInfo;

    /// What this store guarantees beyond the common contract: its backend's declared
    /// capabilities, unless how the store was opened changes them.
    fn capabilities(&self) -> Capabilities {
        self.backend().capabilities
    }

    /// The schema version of the stored data, after forward migrations on open.
    async fn schema_version(&self) -> Result<u32>;

    /// Makes the stored session `id` exactly `history` with metadata `meta`, in one atomic
    /// step. Creates the session when missing; an empty `history` leaves an empty session.
    async fn save_session(
        &self, id: &SessionId, history: &[Message], meta: &Metadata,
    ) -> Result<()>;

    /// Appends `messages` to the end of the session without rewriting it, creating the session
    /// when missing. Appending nothing does nothing (and creates nothing).
    async fn append(&self, session: &SessionId, messages: &[Message]) -> Result<()>;

    /// Loads a session, or only its last `limit` messages; `None` when it does not exist.
    /// Under a limit, a tool result whose call falls outside the window is left out with it
    /// (see [`crate::history::tail_start`]), so fewer than `limit` messages may come back.
    async fn load(&self, session: &SessionId, limit: Option<usize>) -> Result<Option<Session>>;

    /// Every session, ordered by id (expired ones left out).
    async fn list_sessions(&self) -> Result<Vec<SessionInfo>>;

    /// Deletes a session with its archives; `false` when it did not exist.
    async fn delete_session(&self, session: &SessionId) -> Result<bool>;

    /// Moves the session's current messages into a new archive and replaces them with
    /// `replacement`, in one atomic step: afterwards a reader sees either the old state or
    /// the new one, never a mix, and appends racing with it are never lost (they land either
    /// in the archive or after the replacement). `NotFound` when the session does not exist.
    ///
    /// ```
    /// use agentmem_core::{AgentMemory, MemoryStore, SessionStore, AgentMemoryExt, ErrorKind, InMemoryStore, Message, SessionId};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let store = InMemoryStore::new();
    /// let id: SessionId = "demo".parse()?;
    /// let old = vec![Message::user("hi"), Message::assistant("hello")];
    /// store.append(&id, &old).await?;
    /// let summary = Message::system("[summary] the user greeted");
    /// let info = store.compact(&id, std::slice::from_ref(&summary)).await?;
    /// assert_eq!(info.message_count, 2);
    /// // The session now holds only the replacement; the archive holds the old messages.
    /// assert_eq!(store.messages(&id).await?, vec![summary]);
    /// assert_eq!(store.load_archive(&id, &info.id).await?.messages, old);
    /// assert_eq!(store.list_archives(&id).await?, vec![info]);
    /// let missing: SessionId = "missing".parse()?;
    /// let err = store.compact(&missing, &[]).await.unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::NotFound);
    /// # Ok::<(), agentmem_core::Error>(())
    /// # }).unwrap();
    /// ```
    async fn compact(&self, session: &SessionId, replacement: &[Message]) -> Result<ArchiveInfo>;

    /// The session's archives, oldest first; empty when it has none or does not exist.
    async fn list_archives(&self, session: &SessionId) -> Result<Vec<ArchiveInfo>>;

    /// One archive with its messages; `NotFound` when it does not exist.
    async fn load_archive(&self, session: &SessionId, archive: &ArchiveId) -> Result<Archive>;

    /// Messages containing any word of `query`, best first, across sessions or in one. Words
    /// match by their Porter stem ([`crate::search::stem`]): "adopting" finds "adoption".
    ///
    /// ```
    /// use agentmem_core::{AgentMemory, MemoryStore, SessionStore, InMemoryStore, Message, MessageQuery, SessionId};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let store = InMemoryStore::new();
    /// let (alice, bob): (SessionId, SessionId) = ("alice".parse()?, "bob".parse()?);
    /// store.append(&alice, &[Message::user("BigQuery pricing?"), Message::user("lunch")]).await?;
    /// store.append(&bob, &[Message::user("bigquery vs AlloyDB")]).await?;
    /// // Any word matches, case-insensitively, in every session by default.
    /// let hits = store.search_messages("BIGQUERY", &MessageQuery::default()).await?;
    /// assert_eq!(hits.len(), 2);
    /// // Or in one session, at most `limit` hits.
    /// let scope = MessageQuery { session: Some(bob.clone()), limit: 5 };
    /// let hits = store.search_messages("bigquery lunch", &scope).await?;
    /// assert_eq!(hits.len(), 1);
    /// assert_eq!(hits[0].session, bob);
    /// assert_eq!(hits[0].message.content, "bigquery vs AlloyDB");
    /// # Ok::<(), agentmem_core::Error>(())
    /// # }).unwrap();
    /// ```
    async fn search_messages(&self, query: &str, scope: &MessageQuery) -> Result<Vec<MessageHit>>;

    /// Deletes what `policy` says has expired.
    ///
    /// ```
    /// use std::time::Duration;
    /// use agentmem_core::{AgentMemory, MemoryStore, SessionStore, AgentMemoryExt, InMemoryStore, Message, RetentionPolicy};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let store = InMemoryStore::new();
    /// for name in ["old", "new"] {
    ///     store.append_one(&name.parse()?, Message::user(name)).await?;
    /// }
    /// // Keep only the most recently written session.
    /// let policy = RetentionPolicy { max_sessions: Some(1), ..Default::default() };
    /// assert_eq!(store.purge(&policy).await?.sessions_deleted, 1);
    /// assert_eq!(store.list_sessions().await?[0].id.as_str(), "new");
    /// // Delete sessions idle for over a day: "new" was written just now.
    /// let day = Duration::from_secs(86_400);
    /// let policy = RetentionPolicy { max_age: Some(day), ..Default::default() };
    /// assert_eq!(store.purge(&policy).await?.sessions_deleted, 0);
    /// # Ok::<(), agentmem_core::Error>(())
    /// # }).unwrap();
    /// ```
    async fn purge(&self, policy: &RetentionPolicy) -> Result<PurgeReport>;

    /// Copies `source`'s messages up to and including `at` (all of them when `None`), its
    /// metadata and its labels into the new session `target`, in one atomic step; `source` is
    /// unchanged. The copy keeps the messages' ids and timestamps; archives and expiry are not
    /// copied. `Conflict` when `target` exists; `NotFound` when `source` does not, or `at` is
    /// not one of its current messages.
    ///
    /// ```
    /// use agentmem_core::{AgentMemoryExt, InMemoryStore, Message, SessionId, SessionStore};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let store = InMemoryStore::new();
    /// let (main, what_if): (SessionId, SessionId) = ("main".parse()?, "what-if".parse()?);
    /// let question = Message::user("Kyoto or Osaka?");
    /// store.append(&main, &[question.clone(), Message::assistant("Kyoto")]).await?;
    /// let info = store.fork(&main, &what_if, Some(&question.id)).await?;
    /// assert_eq!(info.message_count, 1);
    /// assert_eq!(store.messages(&what_if).await?, vec![question]);
    /// assert_eq!(store.messages(&main).await?.len(), 2);
    /// # Ok::<(), agentmem_core::Error>(())
    /// # }).unwrap();
    /// ```
    async fn fork(
        &self, source: &SessionId, target: &SessionId, at: Option<&MessageId>,
    ) -> Result<SessionInfo>;

    /// Removes messages from the end of the session, in one atomic step, and returns them,
    /// oldest first. [`Rewind::Last`] removes at most the messages there are. `NotFound` when
    /// the session does not exist, or [`Rewind::After`] names none of its current messages.
    ///
    /// ```
    /// use agentmem_core::{AgentMemoryExt, InMemoryStore, Message, Rewind, SessionId, SessionStore};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let store = InMemoryStore::new();
    /// let id: SessionId = "chat".parse()?;
    /// let asked = Message::user("What is 2+2?");
    /// store.append(&id, &[asked.clone(), Message::assistant("5"), Message::user("wrong")]).await?;
    /// let removed = store.rewind(&id, &Rewind::After(asked.id.clone())).await?;
    /// assert_eq!(removed.len(), 2);
    /// assert_eq!(store.messages(&id).await?, vec![asked]);
    /// # Ok::<(), agentmem_core::Error>(())
    /// # }).unwrap();
    /// ```
    async fn rewind(&self, session: &SessionId, to: &Rewind) -> Result<Vec<Message>>;

    /// Changes the session's labels and expiry as `patch` says, in one atomic step, and
    /// returns its summary afterwards. Expiry set in the past makes the session gone at once.
    /// `NotFound` when the session does not exist (or has expired).
    ///
    /// An expired session is gone for every reader: `load` gives `None`, listings and searches
    /// leave it out, `fork`, `rewind`, `compact` and `update_session` say `NotFound`, and a
    /// write to its id starts a new, empty session. Writes keep a session's expiry (it is not
    /// sliding); `purge` deletes expired sessions. Where [`Capabilities::native_expiry`] is
    /// set, the server deletes them by itself as well.
    ///
    /// ```
    /// use agentmem_core::{AgentMemoryExt, InMemoryStore, Message, SessionId, SessionPatch, SessionQuery, SessionStore};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let store = InMemoryStore::new();
    /// let id: SessionId = "trip".parse()?;
    /// store.append_one(&id, Message::user("plan a trip")).await?;
    /// let patch = SessionPatch::default().owner("ada").tag("project", "kyoto");
    /// let info = store.update_session(&id, &patch).await?;
    /// assert_eq!(info.labels.owner.as_deref(), Some("ada"));
    /// let page = store.find_sessions(&SessionQuery::default().tag("project", "kyoto")).await?;
    /// assert_eq!(page.sessions, vec![info]);
    /// # Ok::<(), agentmem_core::Error>(())
    /// # }).unwrap();
    /// ```
    async fn update_session(
        &self, session: &SessionId, patch: &SessionPatch,
    ) -> Result<SessionInfo>;

    /// One page of the sessions matching `query` (owner, tags, last-update range), ordered by
    /// id, read without loading the sessions' messages. Expired sessions are never listed.
    async fn find_sessions(&self, query: &SessionQuery) -> Result<SessionPage>;

    /// Replaces the messages of one archive, in one atomic step, keeping its id, place and
    /// creation time; returns its summary afterwards. For rewriting what is stored (the
    /// encryption layer's `rekey` re-encrypts archives with it), not for editing history.
    /// `NotFound` when the session or the archive does not exist.
    async fn replace_archive(
        &self, session: &SessionId, archive: &ArchiveId, messages: &[Message],
    ) -> Result<ArchiveInfo>;

    /// The store property `name` (see [`set_store_property`](Self::set_store_property)), or
    /// `None` when it was never set. `InvalidInput` for a name
    /// [`check_property_name`](crate::check_property_name) refuses.
    async fn store_property(&self, name: &str) -> Result<Option<String>>;

    /// Sets the store property `name` to `value` if, and only if, it is now `expected`
    /// (`None`: not set), in one atomic step, also against other processes; returns whether
    /// it was set. So `expected: None` inserts only when absent: of two racing inserts,
    /// exactly one returns `true`. `InvalidInput` for a name or value
    /// [`check_property_name`](crate::check_property_name) or
    /// [`check_property_value`](crate::check_property_value) refuses.
    ///
    /// Store properties are a few short values a store keeps about itself, not about any
    /// session: the encryption layer records there that, and under which key, the store is
    /// encrypted. They are not listed, exported or purged, and live as long as the store.
    ///
    /// ```
    /// use agentmem_core::{InMemoryStore, PropertyChange, SessionStore};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let store = InMemoryStore::new();
    /// assert_eq!(store.store_property("app.owner").await?, None);
    /// assert!(store.set_store_property(&PropertyChange::insert("app.owner", "ada")).await?);
    /// // Already set: an insert-if-absent does nothing.
    /// assert!(!store.set_store_property(&PropertyChange::insert("app.owner", "bob")).await?);
    /// let change = PropertyChange::replace("app.owner", Some("ada"), "bob");
    /// assert!(store.set_store_property(&change).await?);
    /// assert_eq!(store.store_property("app.owner").await?.as_deref(), Some("bob"));
    /// # Ok::<(), agentmem_core::Error>(())
    /// # }).unwrap();
    /// ```
    async fn set_store_property(&self, change: &PropertyChange<'_>) -> Result<bool>;
}

/// Memory items (facts, insights, …) and the context built from them: the half of a store that
/// keeps what an agent learned.
///
/// Object-safe; used through [`AgentMemory`] (a store with both halves).
#[async_trait]
pub trait MemoryStore: Debug + Send + Sync + 'static {
    /// The stored context relevant to `query`: the best-matching memory items, or the
    /// most recent ones without a query, one per line as `- text`. Empty when nothing is stored.
    ///
    /// ```
    /// use agentmem_core::{AgentMemory, MemoryStore, SessionStore, AgentMemoryExt, InMemoryStore, MemoryKind};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let store = InMemoryStore::new();
    /// assert_eq!(store.get_context(None).await?, "");
    /// store.store_memory(MemoryKind::Fact, "The user's name is Ada").await?;
    /// store.store_memory(MemoryKind::Fact, "The project uses PostgreSQL").await?;
    /// store.store_memory(MemoryKind::Insight, "Ada prefers short answers").await?;
    /// // With a query: the items matching it, best first.
    /// let context = store.get_context(Some("postgresql")).await?;
    /// assert_eq!(context, "- The project uses PostgreSQL");
    /// // Without one: the most recent items, one per line.
    /// assert_eq!(store.get_context(None).await?.lines().count(), 3);
    /// # Ok::<(), agentmem_core::Error>(())
    /// # }).unwrap();
    /// ```
    async fn get_context(&self, query: Option<&str>) -> Result<String> {
        crate::support::memory_context(self, query).await
    }

    /// Stores a memory item. An item with the same id is replaced; so is one with the same
    /// scope, kind and key, keeping its id and creation time (unless it has expired: then it
    /// is replaced by `item` as given). Returns the item as stored.
    async fn put_memory(&self, item: &MemoryItem) -> Result<MemoryItem>;

    /// One memory item by id (`None` when it has expired).
    async fn get_memory(&self, id: &MemoryId) -> Result<Option<MemoryItem>>;

    /// Memory items matching `filter`, oldest first (the newest `limit` when limited).
    async fn list_memories(&self, filter: &MemoryFilter) -> Result<Vec<MemoryItem>>;

    /// Memory items containing any word of `query`, best first (at most `filter.limit`,
    /// default 10). Words are letters and digits, matched case-insensitively.
    async fn search_memories(&self, query: &str, filter: &MemoryFilter) -> Result<Vec<MemoryHit>>;

    /// Deletes a memory item; `false` when there was none with this id (an expired item still
    /// held may count either way).
    async fn delete_memory(&self, id: &MemoryId) -> Result<bool>;

    /// A number that changes whenever the memory items change (a put, a delete, a purge, an
    /// import; through this handle or any other writer), or `None` when the backend cannot
    /// tell cheaply. Compare it only with earlier values from the same handle: while it is
    /// unchanged, `list_memories` returns the same items (except those whose expiry time has
    /// passed since). A reader that keeps what it derived from the items, such as a search
    /// catalog, reads them again only when it changes.
    ///
    /// ```
    /// use agentmem_core::{InMemoryStore, MemoryItem, MemoryKind, MemoryStore};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let store = InMemoryStore::new();
    /// let before = store.memory_revision().await?;
    /// assert_eq!(store.memory_revision().await?, before, "nothing changed");
    /// store.put_memory(&MemoryItem::new(MemoryKind::Fact, "Ada likes tea")).await?;
    /// assert_ne!(store.memory_revision().await?, before);
    /// # Ok::<(), agentmem_core::Error>(())
    /// # }).unwrap();
    /// ```
    async fn memory_revision(&self) -> Result<Option<u64>> {
        Ok(None)
    }
}

/// Checkpoints of graph runs (see [`checkpoint`](crate::checkpoint)): LangGraph's checkpointer
/// model as a data kind of the store. Threads are not sessions: their ids are any UTF-8 (see
/// [`ThreadId`]), and what the application hands over is stored byte for byte.
///
/// A store without [`Capabilities::checkpoints`] refuses every method with `Unsupported`.
///
/// ```
/// use agentmem_core::{CheckpointKey, CheckpointStore, Checkpoint, InMemoryStore, TypedBytes};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = InMemoryStore::new();
/// let key = CheckpointKey {
///     thread: "user:42/chat".parse()?,
///     ns: Default::default(),
///     id: "1ef0".parse()?,
/// };
/// let checkpoint = Checkpoint::new(key.clone(), TypedBytes::new("json", b"{}".to_vec()));
/// store.put_checkpoint(&checkpoint, &[]).await?;
/// let latest = store.get_checkpoint(&key.thread, &key.ns, None).await?.expect("stored");
/// assert_eq!(latest.checkpoint.key, key);
/// # Ok::<(), agentmem_core::Error>(())
/// # }).unwrap();
/// ```
#[async_trait]
pub trait CheckpointStore: Debug + Send + Sync + 'static {
    /// Stores `checkpoint` and `blobs` (the values of the channels whose version changed) in one
    /// atomic write. A checkpoint already at its key is replaced (its pending writes stay); a
    /// blob already at its (thread, namespace, channel, version) is replaced.
    async fn put_checkpoint(&self, checkpoint: &Checkpoint, blobs: &[ChannelBlob]) -> Result<()>;

    /// Stores the pending writes a task made after checkpoint `at`, all or none, whether or not
    /// that checkpoint is stored yet (LangGraph writes them from background threads, in any
    /// order with the checkpoint's own put): they are returned with it once it is. A write
    /// whose (task id, index) is stored already is skipped, unless its index is negative (a
    /// special write), which replaces it. They go with their checkpoint (`delete_thread`,
    /// `delete_run_checkpoints`); a prune keeping the latest checkpoint keeps only its writes.
    async fn put_writes(&self, at: &CheckpointKey, writes: &[PendingWrite]) -> Result<()>;

    /// The checkpoint `id` of `thread` in `ns`, or without an id the newest (greatest id), with
    /// its blobs and pending writes; `None` when there is none.
    async fn get_checkpoint(
        &self, thread: &ThreadId, ns: &CheckpointNs, id: Option<&CheckpointId>,
    ) -> Result<Option<CheckpointTuple>>;

    /// The checkpoints `query` selects, newest (greatest id) first, then by thread and
    /// namespace; the filters are applied before the limit.
    async fn list_checkpoints(&self, query: &CheckpointQuery) -> Result<Vec<CheckpointTuple>>;

    /// Every thread holding a checkpoint, by id.
    async fn list_threads(&self) -> Result<Vec<ThreadInfo>>;

    /// Deletes a thread: its checkpoints in every namespace, their writes and blobs. `false`
    /// when it held nothing.
    async fn delete_thread(&self, thread: &ThreadId) -> Result<bool>;

    /// Deletes the checkpoints whose metadata `run_id` is one of `run_ids`, in every thread,
    /// with their pending writes; returns how many checkpoints went.
    async fn delete_run_checkpoints(&self, run_ids: &[String]) -> Result<u64>;

    /// Copies every checkpoint of `source` (all namespaces, with their blobs and pending
    /// writes, ids and parents kept) to the new thread `target`; returns how many. `NotFound`
    /// when `source` holds no checkpoint, `Conflict` when `target` holds one. Writes the target
    /// held ahead of a checkpoint (none of its own) are replaced, so that no copied checkpoint
    /// shows writes it was not given.
    async fn copy_thread(&self, source: &ThreadId, target: &ThreadId) -> Result<u64>;

    /// Prunes each of `threads` as `keep` says; returns how many checkpoints went. Threads
    /// that hold nothing are passed over.
    async fn prune_checkpoints(&self, threads: &[ThreadId], keep: CheckpointPrune) -> Result<u64>;
}

/// The knowledge graph (see [`graph`](crate::graph)): entities, relations and observations,
/// the MCP reference memory server's model, one graph per store. Every method is atomic:
/// concurrent callers, in any process, never lose an acknowledged change, and concurrent creates
/// of one name leave exactly one entity.
///
/// A store without [`Capabilities::graph`] refuses every method with `Unsupported`.
///
/// ```
/// use agentmem_core::{Entity, GraphQuery, GraphStore, InMemoryStore, Relation};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = InMemoryStore::new();
/// store.create_entities(&[Entity::new("Alice", "person").with_observations(["likes tea"])]).await?;
/// store.create_relations(&[Relation::new("Alice", "Acme", "works_at")]).await?;
/// let found = store.read_graph(&GraphQuery::Search("TEA".into())).await?;
/// assert_eq!(found.entities[0].name, "Alice");
/// assert_eq!(found.relations.len(), 1);
/// # Ok::<(), agentmem_core::Error>(())
/// # }).unwrap();
/// ```
#[async_trait]
pub trait GraphStore: Debug + Send + Sync + 'static {
    /// Creates the entities whose names are new (the first of equal names wins; an entity's
    /// repeated observations are kept once); returns those created, as stored.
    async fn create_entities(&self, entities: &[Entity]) -> Result<Vec<Entity>>;

    /// Creates the relations that are new (not equal in from, to and type to a stored one or
    /// an earlier one of `relations`); returns those created.
    async fn create_relations(&self, relations: &[Relation]) -> Result<Vec<Relation>>;

    /// Appends to each named entity the observations it does not hold yet, in order; returns
    /// what each gained. When an entity does not exist the call fails with `NotFound`
    /// ([`entity_not_found`](crate::graph::entity_not_found)) and applies nothing.
    async fn add_observations(
        &self, additions: &[ObservationAddition],
    ) -> Result<Vec<AddedObservations>>;

    /// Deletes the named entities and every relation naming one of `names` (as from or to);
    /// returns how many entities went.
    async fn delete_entities(&self, names: &[String]) -> Result<u64>;

    /// Deletes observations from entities; missing entities and observations are passed over.
    /// Returns how many observations went.
    async fn delete_observations(&self, deletions: &[ObservationDeletion]) -> Result<u64>;

    /// Deletes the relations equal to one of `relations`; returns how many went.
    async fn delete_relations(&self, relations: &[Relation]) -> Result<u64>;

    /// The part of the graph `query` selects: entities in creation order with their
    /// observations in order, then the relations touching them in creation order.
    async fn read_graph(&self, query: &GraphQuery) -> Result<KnowledgeGraph>;
}

/// Embedding vectors (see [`vector`](crate::vector)): opaque bytes under a key derived from
/// the embedded text, which the recall engine ranks by similarity. Every method is atomic per
/// call; putting a key that exists replaces its vector.
///
/// A store without [`Capabilities::vectors`] refuses every method with `Unsupported`.
///
/// ```
/// use agentmem_core::{InMemoryStore, StoredVector, VectorKey, VectorStore};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = InMemoryStore::new();
/// store.put_vectors(&[StoredVector::new(VectorKey([1; 32]), &[0.6, 0.8])]).await?;
/// let found = store.get_vectors(&[VectorKey([1; 32]), VectorKey([2; 32])]).await?;
/// assert_eq!(found.len(), 1);
/// assert_eq!(store.clear_vectors().await?, 1);
/// # Ok::<(), agentmem_core::Error>(())
/// # }).unwrap();
/// ```
#[async_trait]
pub trait VectorStore: Debug + Send + Sync + 'static {
    /// Stores each vector under its key, replacing what the key held. When `vectors` repeats
    /// a key, the last one wins.
    async fn put_vectors(&self, vectors: &[StoredVector]) -> Result<()>;

    /// The stored vectors among `keys`, each once, in no particular order; keys without a
    /// vector are passed over.
    async fn get_vectors(&self, keys: &[VectorKey]) -> Result<Vec<StoredVector>>;

    /// Deletes the vectors of `keys`; returns how many went.
    async fn delete_vectors(&self, keys: &[VectorKey]) -> Result<u64>;

    /// Deletes every vector of the store (re-embedding with another model starts here);
    /// returns how many went.
    async fn clear_vectors(&self) -> Result<u64>;
}

/// A store of agent memory: [`SessionStore`] (sessions and archives), [`MemoryStore`]
/// (memory items), [`CheckpointStore`] (graph checkpoints), [`GraphStore`] (the knowledge
/// graph) and [`VectorStore`] (embedding vectors) together. Implemented for every type with
/// the five; used as `Arc<dyn AgentMemory>`, with conveniences in
/// [`AgentMemoryExt`](crate::AgentMemoryExt).
///
/// Calling a method on a concrete store needs its trait in scope (`SessionStore`,
/// `MemoryStore`, `CheckpointStore`, `GraphStore` or `VectorStore`); through
/// `dyn AgentMemory` or a generic `S: AgentMemory` every part is reachable with this trait
/// alone.
pub trait AgentMemory:
    SessionStore + MemoryStore + CheckpointStore + GraphStore + VectorStore
{
}

impl<T: SessionStore + MemoryStore + CheckpointStore + GraphStore + VectorStore + ?Sized>
    AgentMemory for T
{
}
