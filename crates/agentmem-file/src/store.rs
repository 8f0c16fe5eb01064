//! [`FileStore`]: the [`AgentMemory`](agentmem_core::AgentMemory) implementation over the
//! files of one root folder. Its operations run through `locking.rs` on `session/`,
//! `memories.rs` and `catalog.rs`; checkpoints, the knowledge graph and the embedding vectors
//! are implemented in `checkpoints/`, `graph/` and `vectors/`.

use agentmem_core::backend::BackendInfo;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentmem_core::layer;
use agentmem_core::support::{
    fork_target_exists, memory_retention_cutoff, rank_messages, retention_cutoff, search_terms,
    select_memories,
};
use agentmem_core::Layered;
use agentmem_core::{
    async_trait, now, Archive, ArchiveId, ArchiveInfo, Capabilities, Error, MemoryFilter,
    MemoryHit, MemoryId, MemoryItem, MemoryStore, Message, MessageHit, MessageId, MessageQuery,
    Metadata, PropertyChange, PurgeReport, Result, RetentionPolicy, Rewind, Session, SessionId,
    SessionInfo, SessionPage, SessionPatch, SessionQuery, SessionStore,
};

use crate::catalog::Delete;
use crate::checkpoints::ThreadSlots;
use crate::config::{Durability, FileConfig};
use crate::fsutil::ignores_case;
use crate::graph::GraphSlot;
use crate::layout::Layout;
use crate::lease::LeaseThread;
use crate::locking::blocking;
use crate::memories::MemorySlot;
use crate::repair::{RepairLog, RepairReport};
use crate::root::{prepare_root, read_property, set_property, PropertyCache, SCHEMA_VERSION};
use crate::session::{not_found, SessionSlot, Synced};
use crate::vectors::VectorSlot;

/// The file backend. Durable with `fsync` durability (the default); `capabilities` says
/// otherwise for a store opened without it.
pub(crate) const INFO: BackendInfo = BackendInfo::new("file")
    .schemes(&["file"])
    .db_system("agentmem.file")
    .capabilities(
        Capabilities::new()
            .durable(true)
            .cross_process(true)
            .atomic_compaction(true)
            .checkpoints(true)
            .graph(true)
            .vectors(true),
    );

/// The backend's name, in errors and spans.
pub(crate) const BACKEND: &str = INFO.name;

/// The file backend: agents' memory in a folder, readable by Swarms.
///
/// Each session is a folder `agents/<id>/` with `session.jsonl` (the structured log, the
/// source of truth), `MEMORY.md` (the same messages in the Swarms format, kept in step) and
/// `archive/` (compacted-away transcripts). Memory items live in `memories.jsonl`. Appends
/// write only new bytes; rewrites go through a temporary file and a rename; every operation
/// on a session holds an exclusive advisory lock on it, so several processes can share a root
///; damage left by a crash is repaired on first access and reported. See the crate
/// README for the whole design.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use agentmem_core::{AgentMemory, MemoryStore, SessionStore, AgentMemoryExt, Message, SessionId};
/// use agentmem_file::{FileConfig, FileStore};
///
/// let dir = tempfile::tempdir()?;
/// let store = FileStore::connect_with(FileConfig::new(dir.path())).await?;
/// let id: SessionId = "ResearchAgent".parse()?;
/// store.append_one(&id, Message::user("Compare BigQuery and AlloyDB")).await?;
/// let md = std::fs::read_to_string(store.memory_md_path(&id))?;
/// assert!(md.starts_with("# Agent Memory\n\n**Conversation:** ResearchAgent\n"));
/// assert!(md.contains("### User — "));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct FileStore {
    pub(crate) inner: Arc<Inner>,
}

/// What the clones of one store share.
#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) layout: Layout,
    pub(crate) durability: Durability,
    /// Whether the file system of `agents/` ignores case in names (see `ignores_case`).
    pub(crate) ignores_case: bool,
    /// One slot a session, each behind its in-process mutex (see `locking.rs`).
    pub(crate) sessions: std::sync::Mutex<HashMap<SessionId, Arc<tokio::sync::Mutex<SessionSlot>>>>,
    /// The memory log's slot, behind its in-process mutex.
    pub(crate) memories: Arc<tokio::sync::Mutex<MemorySlot>>,
    /// One slot a checkpoint thread, each behind its in-process mutex (see `checkpoints/`).
    pub(crate) threads: ThreadSlots,
    /// The knowledge graph's slot, behind its in-process mutex (see `graph/`).
    pub(crate) graph: Arc<tokio::sync::Mutex<GraphSlot>>,
    /// The embedding vectors' slot, behind its in-process mutex (see `vectors/`).
    pub(crate) vectors: Arc<tokio::sync::Mutex<VectorSlot>>,
    /// Every repair made, for [`FileStore::repairs`].
    pub(crate) repairs: RepairLog,
    /// Ends idle leases (see `lease.rs`).
    pub(crate) leases: LeaseThread,
    /// The store properties as last read (see `root.rs`).
    pub(crate) properties: PropertyCache,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.leases.store_dropped();
    }
}

impl FileStore {
    /// Opens (creating when missing) the store at `config.root`: the folders (mode 0700), the
    /// schema file, and the removal of session folders a crash left half-deleted. The store
    /// wears the standard [layers](agentmem_core::layer) (validation, spans, error labels).
    pub async fn connect_with(config: FileConfig) -> Result<Layered<FileStore>> {
        layer::open_layered(&INFO, Self::open_raw(config)).await
    }

    /// Opens the store a `file://` URL names (see [`FileConfig`] for the syntax); this is what
    /// `agentmem::open("file://…")` calls. Then as [`FileStore::connect_with`].
    pub async fn connect(url: &str) -> Result<Layered<FileStore>> {
        let config: FileConfig = url.parse()?;
        Self::connect_with(config).await
    }

    /// The raw store, without layers.
    async fn open_raw(config: FileConfig) -> Result<FileStore> {
        let layout = Layout::new(&config.root);
        let prepared = layout.clone();
        let (findings, ignores_case) = blocking(move || {
            let findings = prepare_root(&prepared)?;
            Ok::<_, Error>((findings, ignores_case(&prepared.agents)?))
        })
        .await??;
        let inner = Inner {
            layout,
            durability: config.durability,
            ignores_case,
            sessions: std::sync::Mutex::new(HashMap::new()),
            memories: Arc::new(tokio::sync::Mutex::new(MemorySlot::default())),
            threads: ThreadSlots::default(),
            graph: Arc::default(),
            vectors: Arc::default(),
            repairs: RepairLog::default(),
            leases: LeaseThread::default(),
            properties: PropertyCache::default(),
        };
        inner.repairs.extend(&findings);
        Ok(FileStore {
            inner: Arc::new(inner),
        })
    }

    /// The default root folder: `$AGENTMEM_HOME`, else `$HOME/.agentmem`.
    pub fn default_home() -> Result<PathBuf> {
        FileConfig::default_home()
    }

    /// The root folder.
    pub fn root(&self) -> &Path {
        &self.inner.layout.root
    }

    /// The durability of appends.
    pub fn durability(&self) -> Durability {
        self.inner.durability
    }

    /// Where the session's Swarms-format `MEMORY.md` is (whether or not it exists yet).
    pub fn memory_md_path(&self, session: &SessionId) -> PathBuf {
        self.inner.layout.session(session).md
    }

    /// The folder of the session's archives (`history_<ts>.md` and `.jsonl`).
    pub fn archive_dir(&self, session: &SessionId) -> PathBuf {
        self.inner.layout.session(session).archive
    }

    /// Every repair this store made since it was opened (torn tails truncated, `MEMORY.md`
    /// regenerated, orphan archives removed, …), oldest first.
    ///
    /// Damage is repaired when a session is first used, not when the store opens:
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use std::io::Write;
    /// use agentmem_core::{AgentMemoryExt, Message, SessionId};
    /// use agentmem_file::{FileConfig, FileStore, RepairKind};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let id: SessionId = "ResearchAgent".parse()?;
    /// let store = FileStore::connect_with(FileConfig::new(dir.path())).await?;
    /// store.append_one(&id, Message::user("Hello")).await?;
    /// // A crash in the middle of an append leaves half a line at the end of the log.
    /// let log = store.memory_md_path(&id).with_file_name("session.jsonl");
    /// std::fs::OpenOptions::new().append(true).open(&log)?.write_all(b"{\"role\":\"us")?;
    ///
    /// let store = FileStore::connect_with(FileConfig::new(dir.path())).await?; // the next process
    /// assert!(store.repairs().is_empty()); // nothing repaired yet
    /// assert_eq!(store.messages(&id).await?.len(), 1); // first use: the torn line is cut away
    /// assert_eq!(store.repairs()[0].kind, RepairKind::TornTail);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn repairs(&self) -> Vec<RepairReport> {
        self.inner.repairs.all()
    }

    /// Checks one session's files from scratch (not trusting what this process cached) and
    /// returns what is damaged, reading every file of the session whole (archives included).
    /// With `repair`, damage is repaired as on first access (and also recorded in
    /// [`FileStore::repairs`]): what cannot be read is set aside in `quarantine/`, never
    /// deleted. Without, nothing is changed on disk: an unreadable archive or `lifecycle.json`
    /// is a finding, and a complete line of `session.jsonl` that does not parse a `CorruptData`
    /// error naming the file and line.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use std::io::Write;
    /// use agentmem_core::{AgentMemoryExt, Message, SessionId};
    /// use agentmem_file::{FileConfig, FileStore, RepairKind};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let store = FileStore::connect_with(FileConfig::new(dir.path())).await?;
    /// let id: SessionId = "ResearchAgent".parse()?;
    /// store.append_one(&id, Message::user("Hello")).await?;
    /// // A crash in the middle of an append leaves half a line at the end of the log.
    /// let log = store.memory_md_path(&id).with_file_name("session.jsonl");
    /// std::fs::OpenOptions::new().append(true).open(&log)?.write_all(b"{\"role\":\"us")?;
    ///
    /// let found = store.check(&id, false).await?; // reports, changes nothing
    /// assert_eq!((found[0].kind, found[0].repaired), (RepairKind::TornTail, false));
    /// assert!(store.check(&id, true).await?[0].repaired); // repairs
    /// assert!(store.check(&id, false).await?.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn check(&self, session: &SessionId, repair: bool) -> Result<Vec<RepairReport>> {
        let (_, findings) = self
            .with_locked_slot(
                self.lock_slot(session).await,
                session,
                repair,
                move |ctx, slot, f| {
                    f.deep = true;
                    if f.fix {
                        slot.open = None;
                        ctx.sync(slot, f).map(|_| ())
                    } else {
                        let mut scratch = SessionSlot::default();
                        ctx.sync(&mut scratch, f).map(|_| ())
                    }
                },
            )
            .await
            // `check` is not an `AgentMemory` method, so no layer labels its errors: say here
            // which backend they come from (no `Operation` names a check).
            .map_err(|e| e.with_backend(BACKEND))?;
        Ok(findings.list)
    }
}

#[async_trait]
impl SessionStore for FileStore {
    fn backend(&self) -> &'static BackendInfo {
        &INFO
    }

    fn capabilities(&self) -> Capabilities {
        INFO.capabilities
            .durable(self.inner.durability == Durability::Fsync)
    }

    async fn schema_version(&self) -> Result<u32> {
        Ok(SCHEMA_VERSION)
    }

    async fn store_property(&self, name: &str) -> Result<Option<String>> {
        if let Some(found) = self.inner.properties.get(&self.inner.layout, name) {
            return Ok(found);
        }
        let (inner, name) = (self.inner.clone(), name.to_owned());
        blocking(move || read_property(&inner.layout, &inner.properties, &name)).await?
    }

    async fn set_store_property(&self, change: &PropertyChange<'_>) -> Result<bool> {
        let layout = self.inner.layout.clone();
        let (name, value) = (change.name.to_owned(), change.value.to_owned());
        let expected = change.expected.map(str::to_owned);
        blocking(move || {
            set_property(
                &layout,
                &PropertyChange::replace(&name, expected.as_deref(), &value),
            )
        })
        .await?
    }

    async fn save_session(
        &self, session: &SessionId, history: &[Message], metadata: &Metadata,
    ) -> Result<()> {
        let history = history.to_vec();
        let metadata = metadata.clone();
        self.session_op(session, move |ctx, slot, f| {
            ctx.save(slot, &history, metadata, f)
        })
        .await
    }

    async fn append(&self, session: &SessionId, messages: &[Message]) -> Result<()> {
        // Write on this thread once the slot is ours, if no file lock has to be waited for.
        let mut guard = self.lock_slot(session).await;
        let ticket = match self.append_inline(session, &mut guard, messages) {
            Some(done) => {
                drop(guard);
                done?
            }
            None => {
                let messages = messages.to_vec();
                self.with_locked_slot(guard, session, true, move |ctx, slot, f| {
                    ctx.append(slot, &messages, f)
                })
                .await?
                .0
            }
        };
        match ticket {
            // Durable: wait for the line to reach the disk, without the locks (group commit).
            Some(ticket) => ticket.wait().await,
            None => Ok(()),
        }
    }

    async fn load(&self, session: &SessionId, limit: Option<usize>) -> Result<Option<Session>> {
        let id = session.clone();
        self.session_op(session, move |ctx, slot, f| {
            let Some((messages, total, o)) = ctx.load_window(slot, limit, f)? else {
                return Ok(None);
            };
            let (metadata, created_at, updated_at) = (
                o.header.metadata.clone(),
                o.header.created_at,
                o.updated_at(),
            );
            let lifecycle = slot.lifecycle();
            Ok(Some(Session {
                labels: lifecycle.labels,
                expires_at: lifecycle.expires_at,
                id,
                messages,
                metadata,
                created_at,
                updated_at,
                total_messages: total,
            }))
        })
        .await
    }

    async fn list_sessions(&self) -> Result<Vec<SessionInfo>> {
        let mut infos = Vec::new();
        for id in self.session_ids().await? {
            if let Some(info) = self.session_info(&id).await? {
                infos.push(info);
            }
        }
        Ok(infos)
    }

    async fn delete_session(&self, session: &SessionId) -> Result<bool> {
        self.delete_one(session, Delete::Always).await
    }

    async fn compact(&self, session: &SessionId, replacement: &[Message]) -> Result<ArchiveInfo> {
        let replacement = replacement.to_vec();
        self.session_op(session, move |ctx, slot, f| {
            ctx.compact(slot, &replacement, f)
        })
        .await
    }

    async fn list_archives(&self, session: &SessionId) -> Result<Vec<ArchiveInfo>> {
        self.session_op(session, |ctx, slot, f| ctx.list_archives(slot, f))
            .await
    }

    async fn load_archive(&self, session: &SessionId, archive: &ArchiveId) -> Result<Archive> {
        let archive = archive.clone();
        self.session_op(session, move |ctx, slot, f| {
            ctx.load_archive(slot, &archive, f)
        })
        .await
    }

    async fn replace_archive(
        &self, session: &SessionId, archive: &ArchiveId, messages: &[Message],
    ) -> Result<ArchiveInfo> {
        let archive = archive.clone();
        let messages = messages.to_vec();
        self.session_op(session, move |ctx, slot, f| {
            ctx.replace_archive(slot, &archive, &messages, f)
        })
        .await
    }

    async fn search_messages(&self, query: &str, scope: &MessageQuery) -> Result<Vec<MessageHit>> {
        if search_terms(query, scope.limit).is_none() {
            return Ok(Vec::new());
        }
        let all = self.all_messages(scope).await?;
        let candidates = all.iter().map(|(session, message)| (session, message));
        Ok(rank_messages(query, candidates, scope.limit))
    }

    async fn purge(&self, policy: &RetentionPolicy) -> Result<PurgeReport> {
        let mut report = PurgeReport::default();
        // Expired sessions, whatever the policy (a first pass on the sidecars, then a check
        // under each session's lock).
        let expired = self.expired_sessions().await?;
        for id in expired {
            if self.delete_one(&id, Delete::Expired).await? {
                report.sessions_deleted += 1;
            }
        }
        let mut sessions = self.list_sessions().await?;
        let cutoff = retention_cutoff(policy, now());
        // Newest first, so `max_sessions` keeps the head.
        sessions.sort_by(|a, b| {
            b.updated_at
                .cmp(&a.updated_at)
                .then_with(|| a.id.cmp(&b.id))
        });
        for (rank, info) in sessions.iter().enumerate() {
            let too_many = policy.max_sessions.is_some_and(|max| rank >= max);
            let too_old = cutoff.is_some_and(|c| info.updated_at < c);
            let deleted = match cutoff {
                _ if too_many => self.delete_one(&info.id, Delete::Always).await?,
                Some(cutoff) if too_old => {
                    self.delete_one(&info.id, Delete::OlderThan(cutoff)).await?
                }
                _ => false,
            };
            if deleted {
                report.sessions_deleted += 1;
            }
        }
        let memory_cutoff = memory_retention_cutoff(policy, now());
        report.memories_deleted = self
            .memory_op(move |ctx, slot| ctx.purge(slot, memory_cutoff))
            .await?;
        Ok(report)
    }

    async fn fork(
        &self, source: &SessionId, target: &SessionId, at: Option<&MessageId>,
    ) -> Result<SessionInfo> {
        if source == target {
            // It exists (a conflict) or it does not (nothing to fork).
            return self
                .session_op(source, |ctx, slot, f| match ctx.sync(slot, f)? {
                    Synced::Missing => Err(not_found(ctx.id)),
                    _ => Err(fork_target_exists(ctx.id)),
                })
                .await;
        }
        let at = at.cloned();
        self.with_two_sessions(source, target, move |s, s_slot, t, t_slot, f| {
            crate::session::fork(s, s_slot, t, t_slot, at.as_ref(), f)
        })
        .await
    }

    async fn rewind(&self, session: &SessionId, to: &Rewind) -> Result<Vec<Message>> {
        let to = to.clone();
        self.session_op(session, move |ctx, slot, f| ctx.rewind(slot, &to, f))
            .await
    }

    async fn update_session(
        &self, session: &SessionId, patch: &SessionPatch,
    ) -> Result<SessionInfo> {
        patch.validate()?;
        let patch = patch.clone();
        self.session_op(session, move |ctx, slot, f| ctx.update(slot, &patch, f))
            .await
    }

    async fn find_sessions(&self, query: &SessionQuery) -> Result<SessionPage> {
        query.validate()?;
        let mut matching = Vec::new();
        for id in self.candidates(query).await? {
            // Under the session's lock: its labels, expiry and summary as they are now.
            let Some(info) = self.session_info(&id).await? else {
                continue;
            };
            if query.matches(&info) {
                matching.push(info);
                if matching.len() > query.limit {
                    break;
                }
            }
        }
        Ok(query.page(matching))
    }
}

#[async_trait]
impl MemoryStore for FileStore {
    async fn put_memory(&self, item: &MemoryItem) -> Result<MemoryItem> {
        let item = item.clone();
        self.memory_op(move |ctx, slot| ctx.put(slot, &item)).await
    }

    async fn get_memory(&self, id: &MemoryId) -> Result<Option<MemoryItem>> {
        let id = id.to_string();
        self.memory_op(move |_, slot| {
            let at = now();
            Ok(slot.get(&id).filter(|i| !i.is_expired_at(at)).cloned())
        })
        .await
    }

    async fn list_memories(&self, filter: &MemoryFilter) -> Result<Vec<MemoryItem>> {
        let filter = filter.clone();
        // Oldest first; equal times keep first-stored order.
        self.memory_op(move |_, slot| Ok(select_memories(slot.items(), &filter)))
            .await
    }

    async fn search_memories(&self, query: &str, filter: &MemoryFilter) -> Result<Vec<MemoryHit>> {
        let query = query.to_string();
        let filter = filter.clone();
        self.memory_op(move |_, slot| Ok(slot.search(&query, &filter)))
            .await
    }

    async fn delete_memory(&self, id: &MemoryId) -> Result<bool> {
        let id = id.clone();
        self.memory_op(move |ctx, slot| ctx.delete(slot, &id)).await
    }

    async fn memory_revision(&self) -> Result<Option<u64>> {
        // Under the log's lock, caught up with what other processes wrote, as a listing is.
        self.memory_op(|_, slot| Ok(Some(slot.revision()))).await
    }
}
