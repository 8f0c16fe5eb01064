//! [`InMemoryStore`]: the in-process reference implementation of [`AgentMemory`].
//!
//! Nothing is written anywhere: the store lives as long as the value. It is what the
//! conformance suite (`agentmem-testkit`) is checked against first, what examples and tests
//! use when they need a store without a server, and the model other backends are read
//! against: each method does exactly what the contract of [`AgentMemory`] says, with the
//! shared algorithms of [`crate::history`] and [`crate::search`].

use crate::property::PropertyChange;
use crate::MemoryId;
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::backend::BackendInfo;
use crate::checkpoint::{
    newest_first, ChannelBlob, Checkpoint, CheckpointKey, CheckpointPrune, CheckpointQuery,
    CheckpointTuple, PendingWrite, ThreadCheckpoints, ThreadInfo,
};
use crate::error::{Error, Result};
use crate::graph::{
    AddedObservations, Entity, GraphQuery, GraphState, KnowledgeGraph, ObservationAddition,
    ObservationDeletion, Relation,
};
use crate::history::tail_start;
use crate::layer::layered;
use crate::lifecycle::{Rewind, SessionLabels, SessionPage, SessionPatch, SessionQuery};
use crate::model::{
    now, Archive, ArchiveInfo, MemoryItem, Message, Metadata, Session, SessionInfo,
};
use crate::name::{ArchiveId, CheckpointId, CheckpointNs, MessageId, SessionId, ThreadId};
use crate::store::{
    Capabilities, CheckpointStore, GraphStore, MemoryFilter, MemoryHit, MemoryStore, MessageHit,
    MessageQuery, PurgeReport, RetentionPolicy, SessionStore, VectorStore,
};
use crate::support::{
    memory_is_purged, memory_retention_cutoff, rank_memories, rank_messages, retention_cutoff,
    select_memories,
};
use crate::vector::{StoredVector, VectorKey, VectorMap};
use crate::Layered;

/// The in-memory backend: nothing survives the process (not durable, one process); a
/// compaction is one step under the lock, so there is no state a crash could tear.
static IN_MEMORY: BackendInfo = BackendInfo::new("in-memory")
    .db_system("agentmem.in_memory")
    .capabilities(
        Capabilities::new()
            .atomic_compaction(true)
            .checkpoints(true)
            .graph(true)
            .vectors(true),
    );

/// The schema version [`InMemoryStore`] reports (it has no stored schema to migrate).
const SCHEMA_VERSION: u32 = 1;

/// An [`AgentMemory`](crate::AgentMemory) held in the process's memory, safe to share between tasks.
///
/// Every operation takes one short lock and never awaits while holding it, so each call is
/// atomic with respect to every other: appends keep their acknowledged order, and a
/// compaction racing with appends sees each append either before or after it.
///
/// ```
/// use agentmem_core::{AgentMemory, MemoryStore, SessionStore, AgentMemoryExt, InMemoryStore, Message, SessionId};
///
/// # tokio::runtime::Builder::new_current_thread().build().expect("runtime").block_on(async {
/// let store = InMemoryStore::new();
/// let id: SessionId = "demo".parse()?;
/// store.append(&id, &[Message::user("hello"), Message::assistant("hi")]).await?;
/// let archive = store.compact(&id, &[Message::system("[summary] greeted")]).await?;
/// assert_eq!(archive.message_count, 2);
/// assert_eq!(store.messages(&id).await?.len(), 1);
/// # Ok::<(), agentmem_core::Error>(())
/// # }).expect("example runs");
/// ```
#[derive(Debug, Default)]
pub struct InMemoryStore {
    state: Mutex<State>,
}

/// Everything the store holds.
#[derive(Debug, Default)]
struct State {
    /// Sessions by id; a `BTreeMap` so listing is ordered by id for free.
    sessions: BTreeMap<SessionId, StoredSession>,
    /// Memory items in insertion order (listing sorts them by creation time).
    memories: Vec<MemoryItem>,
    /// Bumped by every change of `memories` (see `MemoryStore::memory_revision`).
    memory_revision: u64,
    /// Store properties by name.
    properties: BTreeMap<String, String>,
    /// Checkpoint threads by id.
    threads: BTreeMap<ThreadId, ThreadCheckpoints>,
    /// The knowledge graph.
    graph: GraphState,
    /// Embedding vectors.
    vectors: VectorMap,
}

/// One session with its archives.
#[derive(Debug)]
struct StoredSession {
    messages: Vec<Message>,
    metadata: Metadata,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    /// Archives in the order they were made (oldest first).
    archives: Vec<Archive>,
    labels: SessionLabels,
    expires_at: Option<DateTime<Utc>>,
}

impl StoredSession {
    fn new(at: DateTime<Utc>) -> Self {
        StoredSession {
            messages: Vec::new(),
            metadata: Metadata::new(),
            created_at: at,
            updated_at: at,
            archives: Vec::new(),
            labels: SessionLabels::default(),
            expires_at: None,
        }
    }

    fn is_expired_at(&self, at: DateTime<Utc>) -> bool {
        self.expires_at.is_some_and(|expires| expires <= at)
    }

    /// Records a write at `at`, never moving `updated_at` backwards (the wall clock may).
    fn touch(&mut self, at: DateTime<Utc>) {
        self.updated_at = self.updated_at.max(at);
    }

    fn info(&self, id: &SessionId) -> SessionInfo {
        SessionInfo {
            id: id.clone(),
            message_count: self.messages.len() as u64,
            created_at: self.created_at,
            updated_at: self.updated_at,
            labels: self.labels.clone(),
            expires_at: self.expires_at,
        }
    }

    /// A new archive id for a compaction at `at`: `history_%Y-%m-%d_%H-%M-%S`, with `_2`,
    /// `_3`, … when that id is already taken (several compactions in one second).
    fn next_archive_id(&self, at: DateTime<Utc>) -> Result<ArchiveId> {
        ArchiveId::new(crate::support::free_archive_id(at, |candidate| {
            self.archives
                .iter()
                .any(|a| a.info.id.as_str() == candidate)
        }))
    }
}

impl InMemoryStore {
    /// An empty store, wearing the standard [layers](crate::layer).
    pub fn new() -> Layered<InMemoryStore> {
        layered(InMemoryStore::default())
    }

    /// Locks the state. A panic while the lock was held cannot have left it half-changed
    /// (every method validates first and then mutates without anything that can panic), so a
    /// poisoned lock is recovered rather than turned into an error on every later call.
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Changes a session (created when missing or expired) under the lock and marks it
    /// written now.
    fn write_session(&self, session: &SessionId, change: impl FnOnce(&mut StoredSession)) {
        let at = now();
        let mut state = self.state();
        let stored = state
            .sessions
            .entry(session.clone())
            .or_insert_with(|| StoredSession::new(at));
        if stored.is_expired_at(at) {
            *stored = StoredSession::new(at);
        }
        change(stored);
        stored.touch(at);
    }
}

impl State {
    /// Every session that has not expired at `at`, in id order.
    fn live_sessions(
        &self, at: DateTime<Utc>,
    ) -> impl Iterator<Item = (&SessionId, &StoredSession)> {
        self.sessions
            .iter()
            .filter(move |(_, s)| !s.is_expired_at(at))
    }

    /// The session, unless it is missing or has expired at `at`.
    fn live(&self, session: &SessionId, at: DateTime<Utc>) -> Option<&StoredSession> {
        self.sessions.get(session).filter(|s| !s.is_expired_at(at))
    }

    /// [`live`](Self::live), to change.
    fn live_mut(&mut self, session: &SessionId, at: DateTime<Utc>) -> Result<&mut StoredSession> {
        self.sessions
            .get_mut(session)
            .filter(|s| !s.is_expired_at(at))
            .ok_or_else(|| not_found_session(session))
    }
}

fn not_found_session(session: &SessionId) -> Error {
    Error::not_found(format!("session `{session}` does not exist"))
}

#[async_trait]
impl SessionStore for InMemoryStore {
    fn backend(&self) -> &'static BackendInfo {
        &IN_MEMORY
    }

    async fn schema_version(&self) -> Result<u32> {
        Ok(SCHEMA_VERSION)
    }

    async fn save_session(
        &self, id: &SessionId, history: &[Message], meta: &Metadata,
    ) -> Result<()> {
        self.write_session(id, |stored| {
            stored.messages = history.to_vec();
            stored.metadata = meta.clone();
        });
        Ok(())
    }

    async fn append(&self, session: &SessionId, messages: &[Message]) -> Result<()> {
        self.write_session(session, |stored| {
            stored.messages.extend_from_slice(messages)
        });
        Ok(())
    }

    async fn load(&self, session: &SessionId, limit: Option<usize>) -> Result<Option<Session>> {
        let state = self.state();
        let Some(stored) = state.live(session, now()) else {
            return Ok(None);
        };
        let start = limit.map_or(0, |n| tail_start(&stored.messages, n));
        Ok(Some(Session {
            id: session.clone(),
            messages: stored.messages[start..].to_vec(),
            metadata: stored.metadata.clone(),
            created_at: stored.created_at,
            updated_at: stored.updated_at,
            total_messages: stored.messages.len() as u64,
            labels: stored.labels.clone(),
            expires_at: stored.expires_at,
        }))
    }

    async fn list_sessions(&self) -> Result<Vec<SessionInfo>> {
        let state = self.state();
        Ok(state
            .live_sessions(now())
            .map(|(id, stored)| stored.info(id))
            .collect())
    }

    async fn delete_session(&self, session: &SessionId) -> Result<bool> {
        Ok(self.state().sessions.remove(session).is_some())
    }

    async fn compact(&self, session: &SessionId, replacement: &[Message]) -> Result<ArchiveInfo> {
        let at = now();
        let mut state = self.state();
        let stored = state.live_mut(session, at)?;
        let info = ArchiveInfo {
            id: stored.next_archive_id(at)?,
            session: session.clone(),
            created_at: at,
            message_count: stored.messages.len() as u64,
        };
        let archived = std::mem::replace(&mut stored.messages, replacement.to_vec());
        stored.archives.push(Archive {
            info: info.clone(),
            messages: archived,
        });
        stored.touch(at);
        Ok(info)
    }

    async fn list_archives(&self, session: &SessionId) -> Result<Vec<ArchiveInfo>> {
        let state = self.state();
        Ok(state
            .live(session, now())
            .map(|s| s.archives.iter().map(|a| a.info.clone()).collect())
            .unwrap_or_default())
    }

    async fn load_archive(&self, session: &SessionId, archive: &ArchiveId) -> Result<Archive> {
        let state = self.state();
        state
            .live(session, now())
            .and_then(|s| s.archives.iter().find(|a| &a.info.id == archive))
            .cloned()
            .ok_or_else(|| crate::support::archive_not_found(session, archive))
    }

    async fn search_messages(&self, query: &str, scope: &MessageQuery) -> Result<Vec<MessageHit>> {
        let state = self.state();
        let candidates = state
            .live_sessions(now())
            .filter(|(id, _)| scope.session.as_ref().is_none_or(|s| s == *id))
            .flat_map(|(id, stored)| stored.messages.iter().map(move |m| (id, m)));
        Ok(rank_messages(query, candidates, scope.limit))
    }

    async fn purge(&self, policy: &RetentionPolicy) -> Result<PurgeReport> {
        let at = now();
        let mut state = self.state();
        let before = state.sessions.len();
        state.sessions.retain(|_, s| !s.is_expired_at(at));
        if let Some(cutoff) = retention_cutoff(policy, at) {
            state.sessions.retain(|_, s| s.updated_at >= cutoff);
        }
        if let Some(max_sessions) = policy.max_sessions {
            if state.sessions.len() > max_sessions {
                let mut by_recency: Vec<(DateTime<Utc>, SessionId)> = state
                    .sessions
                    .iter()
                    .map(|(id, s)| (s.updated_at, id.clone()))
                    .collect();
                // Newest first; equal times fall back to the id so the choice is stable.
                by_recency.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
                for (_, id) in by_recency.into_iter().skip(max_sessions) {
                    state.sessions.remove(&id);
                }
            }
        }
        let cutoff = memory_retention_cutoff(policy, at);
        let memories_before = state.memories.len();
        state
            .memories
            .retain(|item| !memory_is_purged(item, cutoff, at));
        if state.memories.len() != memories_before {
            state.memory_revision += 1;
        }
        Ok(PurgeReport {
            sessions_deleted: (before - state.sessions.len()) as u64,
            memories_deleted: (memories_before - state.memories.len()) as u64,
        })
    }

    async fn fork(
        &self, source: &SessionId, target: &SessionId, at: Option<&MessageId>,
    ) -> Result<SessionInfo> {
        let now = now();
        let mut state = self.state();
        if state.live(target, now).is_some() {
            return Err(crate::support::fork_target_exists(target));
        }
        let from = state
            .live(source, now)
            .ok_or_else(|| not_found_session(source))?;
        let end = crate::support::fork_end(&from.messages, source, at)?;
        let mut copy = StoredSession::new(now);
        copy.messages = from.messages[..end].to_vec();
        copy.metadata = from.metadata.clone();
        copy.labels = from.labels.clone();
        let info = copy.info(target);
        state.sessions.insert(target.clone(), copy);
        Ok(info)
    }

    async fn rewind(&self, session: &SessionId, to: &Rewind) -> Result<Vec<Message>> {
        let at = now();
        let mut state = self.state();
        let stored = state.live_mut(session, at)?;
        let keep = crate::support::rewind_keep(&stored.messages, session, to)?;
        let removed = stored.messages.split_off(keep);
        if !removed.is_empty() {
            stored.touch(at);
        }
        Ok(removed)
    }

    async fn update_session(
        &self, session: &SessionId, patch: &SessionPatch,
    ) -> Result<SessionInfo> {
        let at = now();
        let mut state = self.state();
        let stored = state.live_mut(session, at)?;
        patch.apply(&mut stored.labels, &mut stored.expires_at)?;
        Ok(stored.info(session))
    }

    async fn replace_archive(
        &self, session: &SessionId, archive: &ArchiveId, messages: &[Message],
    ) -> Result<ArchiveInfo> {
        let mut state = self.state();
        let stored = state.live_mut(session, now())?;
        let found = stored
            .archives
            .iter_mut()
            .find(|a| &a.info.id == archive)
            .ok_or_else(|| crate::support::archive_not_found(session, archive))?;
        found.messages = messages.to_vec();
        found.info.message_count = messages.len() as u64;
        Ok(found.info.clone())
    }

    async fn find_sessions(&self, query: &SessionQuery) -> Result<SessionPage> {
        let state = self.state();
        let matching = state
            .live_sessions(now())
            .map(|(id, stored)| stored.info(id))
            .filter(|info| query.matches(info))
            .take(query.limit.saturating_add(1))
            .collect();
        Ok(query.page(matching))
    }

    async fn store_property(&self, name: &str) -> Result<Option<String>> {
        Ok(self.state().properties.get(name).cloned())
    }

    async fn set_store_property(&self, change: &PropertyChange<'_>) -> Result<bool> {
        let (name, expected, value) = (change.name, change.expected, change.value);
        let mut state = self.state();
        if state.properties.get(name).map(String::as_str) != expected {
            return Ok(false);
        }
        state.properties.insert(name.to_owned(), value.to_owned());
        Ok(true)
    }
}

#[async_trait]
impl MemoryStore for InMemoryStore {
    async fn put_memory(&self, item: &MemoryItem) -> Result<MemoryItem> {
        let mut state = self.state();
        state.memory_revision += 1;
        let at = now();
        let holds_key = |m: &MemoryItem| item.shares_key_with(m);
        // An expired item with the key is gone: the new item does not take it over.
        state
            .memories
            .retain(|m| !(m.is_expired_at(at) && holds_key(m)));
        // An item with the same scope, kind and key is the one being replaced (keeping its id
        // and creation time); otherwise one with the same id; otherwise this is a new item.
        let same_key = state.memories.iter().position(holds_key);
        let target = same_key.or_else(|| state.memories.iter().position(|m| m.id == item.id));
        match target {
            Some(index) => {
                let existing = &mut state.memories[index];
                let stored = MemoryItem {
                    id: existing.id.clone(),
                    created_at: existing.created_at,
                    ..item.clone()
                };
                *existing = stored.clone();
                Ok(stored)
            }
            None => {
                state.memories.push(item.clone());
                Ok(item.clone())
            }
        }
    }

    async fn get_memory(&self, id: &MemoryId) -> Result<Option<MemoryItem>> {
        let at = now();
        Ok(self
            .state()
            .memories
            .iter()
            .find(|m| &m.id == id && !m.is_expired_at(at))
            .cloned())
    }

    async fn list_memories(&self, filter: &MemoryFilter) -> Result<Vec<MemoryItem>> {
        Ok(select_memories(&self.state().memories, filter))
    }

    async fn search_memories(&self, query: &str, filter: &MemoryFilter) -> Result<Vec<MemoryHit>> {
        Ok(rank_memories(query, &self.state().memories, filter))
    }

    async fn delete_memory(&self, id: &MemoryId) -> Result<bool> {
        let mut state = self.state();
        let before = state.memories.len();
        state.memories.retain(|m| &m.id != id);
        let deleted = state.memories.len() != before;
        if deleted {
            state.memory_revision += 1;
        }
        Ok(deleted)
    }

    async fn memory_revision(&self) -> Result<Option<u64>> {
        Ok(Some(self.state().memory_revision))
    }
}

#[async_trait]
impl CheckpointStore for InMemoryStore {
    async fn put_checkpoint(&self, checkpoint: &Checkpoint, blobs: &[ChannelBlob]) -> Result<()> {
        let mut state = self.state();
        let thread = state
            .threads
            .entry(checkpoint.key.thread.clone())
            .or_default();
        thread.put(checkpoint, blobs);
        Ok(())
    }

    async fn put_writes(&self, at: &CheckpointKey, writes: &[PendingWrite]) -> Result<()> {
        let mut state = self.state();
        let thread = state.threads.entry(at.thread.clone()).or_default();
        thread.put_writes(at, writes);
        Ok(())
    }

    async fn get_checkpoint(
        &self, thread: &ThreadId, ns: &CheckpointNs, id: Option<&CheckpointId>,
    ) -> Result<Option<CheckpointTuple>> {
        Ok(self.state().threads.get(thread).and_then(|t| t.get(ns, id)))
    }

    async fn list_checkpoints(&self, query: &CheckpointQuery) -> Result<Vec<CheckpointTuple>> {
        let state = self.state();
        let mut found: Vec<CheckpointTuple> = match &query.thread {
            Some(id) => state
                .threads
                .get(id)
                .map(|t| t.select(query))
                .unwrap_or_default(),
            None => state
                .threads
                .values()
                .flat_map(|t| t.select(query))
                .collect(),
        };
        newest_first(&mut found, query.limit);
        Ok(found)
    }

    async fn list_threads(&self) -> Result<Vec<ThreadInfo>> {
        Ok(self
            .state()
            .threads
            .iter()
            .filter_map(|(id, thread)| {
                Some(ThreadInfo {
                    thread: id.clone(),
                    checkpoints: thread.len(),
                    updated_at: thread.updated_at()?,
                })
            })
            .collect())
    }

    async fn delete_thread(&self, thread: &ThreadId) -> Result<bool> {
        let removed = self.state().threads.remove(thread);
        Ok(removed.is_some_and(|t| !t.is_empty()))
    }

    async fn delete_run_checkpoints(&self, run_ids: &[String]) -> Result<u64> {
        let mut state = self.state();
        let deleted = state
            .threads
            .values_mut()
            .map(|t| t.delete_runs(run_ids))
            .sum();
        // A thread left with nothing at all goes; one holding writes ahead of their
        // checkpoint stays.
        state.threads.retain(|_, t| !t.holds_nothing());
        Ok(deleted)
    }

    async fn copy_thread(&self, source: &ThreadId, target: &ThreadId) -> Result<u64> {
        let mut state = self.state();
        let copy = match state.threads.get(source) {
            Some(thread) if !thread.is_empty() => thread.copied_to(target),
            _ => return Err(crate::checkpoint::missing_thread(source)),
        };
        if state.threads.get(target).is_some_and(|t| !t.is_empty()) {
            return Err(crate::checkpoint::thread_exists(target));
        }
        let copied = copy.len();
        state.threads.insert(target.clone(), copy);
        Ok(copied)
    }

    async fn prune_checkpoints(&self, threads: &[ThreadId], keep: CheckpointPrune) -> Result<u64> {
        let mut state = self.state();
        let mut pruned = 0;
        for id in threads {
            if let Some(thread) = state.threads.get_mut(id) {
                pruned += thread.prune(keep);
                if thread.is_empty() {
                    state.threads.remove(id);
                }
            }
        }
        Ok(pruned)
    }
}

#[async_trait]
impl GraphStore for InMemoryStore {
    async fn create_entities(&self, entities: &[Entity]) -> Result<Vec<Entity>> {
        Ok(self.state().graph.create_entities(entities))
    }

    async fn create_relations(&self, relations: &[Relation]) -> Result<Vec<Relation>> {
        Ok(self.state().graph.create_relations(relations))
    }

    async fn add_observations(
        &self, additions: &[ObservationAddition],
    ) -> Result<Vec<AddedObservations>> {
        self.state().graph.add_observations(additions)
    }

    async fn delete_entities(&self, names: &[String]) -> Result<u64> {
        Ok(self.state().graph.delete_entities(names))
    }

    async fn delete_observations(&self, deletions: &[ObservationDeletion]) -> Result<u64> {
        Ok(self.state().graph.delete_observations(deletions))
    }

    async fn delete_relations(&self, relations: &[Relation]) -> Result<u64> {
        Ok(self.state().graph.delete_relations(relations))
    }

    async fn read_graph(&self, query: &GraphQuery) -> Result<KnowledgeGraph> {
        Ok(self.state().graph.read(query))
    }
}

#[async_trait]
impl VectorStore for InMemoryStore {
    async fn put_vectors(&self, vectors: &[StoredVector]) -> Result<()> {
        self.state().vectors.put(vectors);
        Ok(())
    }

    async fn get_vectors(&self, keys: &[VectorKey]) -> Result<Vec<StoredVector>> {
        Ok(self.state().vectors.get(keys))
    }

    async fn delete_vectors(&self, keys: &[VectorKey]) -> Result<u64> {
        Ok(self.state().vectors.delete(keys))
    }

    async fn clear_vectors(&self) -> Result<u64> {
        Ok(self.state().vectors.clear())
    }
}
