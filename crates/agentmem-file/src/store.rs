//! [`FileStore`]: the [`AgentMemory`] implementation over the files of one root folder.

use agentmem_core::backend::BackendInfo;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use agentmem_core::layer;
use agentmem_core::support::{
    fork_target_exists, memory_retention_cutoff, rank_memories, rank_messages, retention_cutoff,
    search_terms, select_memories,
};
use agentmem_core::Layered;
use agentmem_core::{
    async_trait, now, Archive, ArchiveId, ArchiveInfo, Capabilities, Error, MemoryFilter,
    MemoryHit, MemoryId, MemoryItem, MemoryStore, Message, MessageHit, MessageId, MessageQuery,
    Metadata, PurgeReport, Result, RetentionPolicy, Rewind, Session, SessionId, SessionInfo,
    SessionLabels, SessionPage, SessionPatch, SessionQuery, SessionStore,
};
use serde::{Deserialize, Serialize};

use crate::commit::Ticket;
use crate::config::{Durability, FileConfig};
use crate::fsutil::{
    create_dirs, ignores_case, io_error, list_dir, open_lock_file, stat, write_atomic,
    FileLockGuard,
};
use crate::layout::{fork_folder_target, Layout, FORK_PREFIX, TRASH_PREFIX};
use crate::lease::{Lease, LeaseThread};
use crate::memories::{MemoryCtx, MemorySlot};
use crate::repair::{Findings, RepairKind, RepairLog, RepairReport};
use crate::session::{not_found, remove_session_dir, SessionCtx, SessionSlot, Synced};

/// The schema version of the files this build writes.
pub const SCHEMA_VERSION: u32 = 1;
const SCHEMA_FORMAT: &str = "agentmem-file";
/// The file backend. Durable with `fsync` durability (the default); `capabilities` says
/// otherwise for a store opened without it.
pub(crate) const INFO: BackendInfo = BackendInfo::new("file")
    .schemes(&["file"])
    .db_system("agentmem.file")
    .capabilities(
        Capabilities::new()
            .durable(true)
            .cross_process(true)
            .atomic_compaction(true),
    );

/// The backend name: what `SessionStore::backend` reports and errors are labelled with.
pub(crate) const BACKEND: &str = INFO.name;
/// Session slots kept before unused ones are dropped. Each holds up to three open files, so
/// this bounds the descriptors a store keeps (well under the usual limit of 1,024).
const MAX_IDLE_SLOTS: usize = 128;

/// `<root>/agentmem.json`.
#[derive(Debug, Serialize, Deserialize)]
struct SchemaFile {
    format: String,
    schema_version: u32,
}

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
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    layout: Layout,
    durability: Durability,
    /// Whether the file system of `agents/` ignores case in names (see `ignores_case`).
    ignores_case: bool,
    sessions: std::sync::Mutex<HashMap<SessionId, Arc<tokio::sync::Mutex<SessionSlot>>>>,
    memories: Arc<tokio::sync::Mutex<MemorySlot>>,
    repairs: RepairLog,
    /// Ends idle leases (see `lease.rs`).
    leases: LeaseThread,
}

impl Inner {
    /// Where session `id` lives, for one operation.
    fn session_ctx<'a>(&self, id: &'a SessionId, slot: &mut SessionSlot) -> SessionCtx<'a> {
        let paths = slot
            .paths
            .get_or_insert_with(|| Arc::new(self.layout.session(id)))
            .clone();
        SessionCtx {
            id,
            paths,
            durability: self.durability,
            ignores_case: self.ignores_case,
        }
    }

    /// Ends the leases idle for [`LEASE_IDLE`](crate::lease::LEASE_IDLE); says whether any
    /// lease is left. A session in use keeps its lease: its operation notes itself on it.
    fn end_idle_leases(&self) -> bool {
        let slots: Vec<_> = self
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect();
        let now = Instant::now();
        let mut left = false;
        for slot in slots {
            let Ok(mut slot) = slot.try_lock() else {
                left = true;
                continue;
            };
            match slot.lease {
                Some(lease) if lease.is_idle(now) => end_lease(&mut slot),
                Some(_) => left = true,
                None => {}
            }
        }
        left
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.leases.store_dropped();
    }
}

/// Ends the session's lease, releasing the file lock it kept.
fn end_lease(slot: &mut SessionSlot) {
    if slot.lease.take().is_some() {
        release_lock(slot);
    }
}

/// Releases the session's file lock (held by the caller).
fn release_lock(slot: &mut SessionSlot) {
    if let Some(file) = &slot.lock_file {
        // If unlocking fails the lock is released when the file is closed: close it.
        if let Err(e) = file.unlock() {
            tracing::warn!(error = %e, "cannot release a file lock");
            slot.lock_file = None;
        }
    }
}

/// When [`FileStore::delete_one`] deletes, checked under the session's lock.
#[derive(Debug, Clone, Copy)]
enum Delete {
    /// In any case (`delete_session`, `max_sessions`).
    Always,
    /// When the session was last written before this time (`max_age`).
    OlderThan(chrono::DateTime<chrono::Utc>),
    /// When its expiry has passed.
    Expired,
}

/// Whether `labels` carry the owner and every tag `query` asks for (matched literally).
fn labels_match(query: &SessionQuery, labels: &SessionLabels) -> bool {
    query
        .owner
        .as_ref()
        .is_none_or(|owner| labels.owner.as_ref() == Some(owner))
        && query
            .tags
            .iter()
            .all(|(key, value)| labels.tags.get(key) == Some(value))
}

fn join_error(e: tokio::task::JoinError) -> Error {
    Error::backend("a blocking file task failed").with_source(e)
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
        let (findings, ignores_case) = tokio::task::spawn_blocking(move || {
            let findings = prepare_root(&prepared)?;
            Ok::<_, Error>((findings, ignores_case(&prepared.agents)?))
        })
        .await
        .map_err(join_error)??;
        let inner = Inner {
            layout,
            durability: config.durability,
            ignores_case,
            sessions: std::sync::Mutex::new(HashMap::new()),
            memories: Arc::new(tokio::sync::Mutex::new(MemorySlot::default())),
            repairs: RepairLog::default(),
            leases: LeaseThread::default(),
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
    /// returns what is damaged. With `repair`, damage is repaired as on first access (and also
    /// recorded in [`FileStore::repairs`]); without, nothing is changed on disk. A damaged
    /// line in the middle of a log cannot be repaired safely: it is a `CorruptData` error.
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

    /// The session's slot, its in-process mutex held (queued fairly behind this process's
    /// other operations on it).
    async fn lock_slot(&self, session: &SessionId) -> tokio::sync::OwnedMutexGuard<SessionSlot> {
        self.slot(session).lock_owned().await
    }

    fn slot(&self, session: &SessionId) -> Arc<tokio::sync::Mutex<SessionSlot>> {
        let mut map = self
            .inner
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(slot) = map.get(session) {
            return slot.clone();
        }
        if map.len() >= MAX_IDLE_SLOTS {
            // Drop slots nobody is using, closing their files; a slot in use is shared
            // (count > 1) and stays, so one session never has two in-process mutexes.
            map.retain(|_, slot| Arc::strong_count(slot) > 1);
        }
        let slot = Arc::new(tokio::sync::Mutex::new(SessionSlot::default()));
        map.insert(session.clone(), slot.clone());
        slot
    }

    /// Runs `op` on a blocking thread with the session's in-process mutex (`guard`: the fair
    /// queue of this process's tasks) and its exclusive file lock (other processes) held. The
    /// lock is taken unless a lease kept it, and afterwards kept as a lease or released.
    async fn with_locked_slot<T, F>(
        &self,
        mut guard: tokio::sync::OwnedMutexGuard<SessionSlot>,
        session: &SessionId,
        fix: bool,
        op: F,
    ) -> Result<(T, Findings)>
    where
        T: Send + 'static,
        F: FnOnce(&SessionCtx<'_>, &mut SessionSlot, &mut Findings) -> Result<T> + Send + 'static,
    {
        let inner = self.inner.clone();
        let id = session.clone();
        let (result, findings, leased) = tokio::task::spawn_blocking(move || {
            let ctx = inner.session_ctx(&id, &mut guard);
            let mut findings = Findings::new(fix);
            let result = Self::locked(&ctx, &mut guard, |slot| op(&ctx, slot, &mut findings));
            inner.repairs.extend(&findings);
            let leased = Self::after_op(&inner, &mut guard, result.is_ok());
            (result, findings, leased)
        })
        .await
        .map_err(join_error)?;
        if leased {
            self.lease_started();
        }
        result.map(|value| (value, findings))
    }

    /// Runs `op` with the session's file lock held: kept by a lease, or taken here (blocking).
    fn locked<T>(
        ctx: &SessionCtx<'_>,
        slot: &mut SessionSlot,
        op: impl FnOnce(&mut SessionSlot) -> Result<T>,
    ) -> Result<T> {
        if slot.group.take_stale() {
            // A durable append's fsync failed: trust nothing cached.
            slot.open = None;
        }
        if slot.lease.is_none() {
            let lock = match slot.lock_file.take() {
                Some(file) => file,
                None => open_lock_file(&ctx.paths.lock)?,
            };
            lock.lock()
                .map_err(|e| io_error(&ctx.paths.lock, "cannot lock", e))?;
            slot.lock_file = Some(lock);
        }
        op(slot)
    }

    /// After an operation on a session whose lock is held: keeps the lock as a lease when the
    /// operation succeeded, appends are buffered and the lease is not too old; else releases
    /// it. Says whether a new lease began.
    fn after_op(inner: &Arc<Inner>, slot: &mut SessionSlot, ok: bool) -> bool {
        let now = Instant::now();
        let keep = ok
            && inner.durability == Durability::Buffered
            && slot.open.is_some()
            && slot.lease.is_none_or(|lease| lease.is_fresh(now));
        if !keep {
            slot.lease = None;
            release_lock(slot);
            return false;
        }
        match &mut slot.lease {
            Some(lease) => {
                lease.touch(now);
                false
            }
            None => {
                slot.lease = Some(Lease::new(now));
                true
            }
        }
    }

    /// Makes sure the lease thread runs, since a lease began; without one, ends the leases.
    fn lease_started(&self) {
        let weak = Arc::downgrade(&self.inner);
        if !self
            .inner
            .leases
            .lease_started(weak, Inner::end_idle_leases)
        {
            // No thread to end idle leases: end them now rather than hold locks for good.
            for slot in self
                .inner
                .sessions
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .values()
            {
                if let Ok(mut slot) = slot.try_lock() {
                    end_lease(&mut slot);
                }
            }
        }
    }

    /// The append on the calling thread (which holds the session's in-process mutex), when
    /// this process holds the session's state: then the write is two small writes to open
    /// files, cheaper than a hop to the blocking pool. A buffered store needs its lease (no
    /// lock to take, nothing to check); a durable one takes the file lock without waiting and
    /// checks that no other process changed the files, then leaves the fsync to the caller
    /// (off this thread). `None` when this does not apply: the caller takes the blocking path,
    /// which also waits for the lock and reads what others wrote.
    fn append_inline(
        &self,
        session: &SessionId,
        slot: &mut SessionSlot,
        messages: &[Message],
    ) -> Option<Result<Option<Ticket>>> {
        slot.open.as_ref()?;
        if slot.expired_now() {
            // A write to an expired session starts a new one: the blocking path does that.
            return None;
        }
        let ctx = self.inner.session_ctx(session, slot);
        let result = match self.inner.durability {
            Durability::Buffered => {
                let now = Instant::now();
                let lease = slot.lease.as_mut()?;
                if !lease.is_fresh(now) {
                    return None;
                }
                lease.touch(now);
                let result = ctx.append_existing(slot, messages);
                if result.is_err() {
                    slot.open = None;
                    end_lease(slot);
                }
                result
            }
            Durability::Fsync => {
                if slot.lease.is_some() || slot.group.is_stale() {
                    return None;
                }
                slot.lock_file.as_ref()?.try_lock().ok()?;
                let result = match ctx.unchanged(slot) {
                    Ok(true) => ctx.append_existing(slot, messages),
                    Ok(false) => {
                        release_lock(slot);
                        return None;
                    }
                    Err(e) => Err(e),
                };
                if result.is_err() {
                    slot.open = None;
                }
                release_lock(slot);
                result
            }
        };
        Some(result)
    }

    async fn session_op<T, F>(&self, session: &SessionId, op: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&SessionCtx<'_>, &mut SessionSlot, &mut Findings) -> Result<T> + Send + 'static,
    {
        self.with_locked_slot(self.lock_slot(session).await, session, true, op)
            .await
            .map(|(value, _)| value)
    }

    /// Runs `op` on the memory log with its in-process mutex and exclusive file lock held.
    async fn memory_op<T, F>(&self, op: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&MemoryCtx<'_>, &mut MemorySlot, &mut Findings) -> Result<T> + Send + 'static,
    {
        let mut guard = self.inner.memories.clone().lock_owned().await;
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let ctx = MemoryCtx {
                layout: &inner.layout,
                durability: inner.durability,
            };
            let lock_path = &inner.layout.memories_lock;
            let lock = match guard.lock_file.take() {
                Some(file) => file,
                None => open_lock_file(lock_path)?,
            };
            let mut findings = Findings::new(true);
            let result = {
                let _held = FileLockGuard::exclusive(&lock, lock_path)?;
                op(&ctx, &mut guard, &mut findings)
            };
            guard.lock_file = Some(lock);
            inner.repairs.extend(&findings);
            result
        })
        .await
        .map_err(join_error)?
    }

    /// The ids of the session folders, sorted.
    async fn session_ids(&self) -> Result<Vec<SessionId>> {
        let agents = self.inner.layout.agents.clone();
        tokio::task::spawn_blocking(move || {
            let mut ids = Vec::new();
            let Some(entries) = list_dir(&agents)? else {
                return Ok(ids);
            };
            for entry in entries {
                let entry = entry.map_err(|e| io_error(&agents, "cannot list", e))?;
                let name = entry.file_name();
                let Some(name) = name.to_str() else { continue };
                if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                    continue;
                }
                match SessionId::new(name) {
                    Ok(id) => ids.push(id),
                    // Trash, forks being built and foreign folders are not sessions.
                    Err(_) if name.starts_with(TRASH_PREFIX) || name.starts_with(FORK_PREFIX) => {}
                    Err(e) => tracing::debug!(folder = name, error = %e, "skipping a folder that is not a session"),
                }
            }
            ids.sort();
            Ok(ids)
        })
        .await
        .map_err(join_error)?
    }

    /// The summary of one session, `None` when it does not exist.
    async fn session_info(&self, id: &SessionId) -> Result<Option<SessionInfo>> {
        let session = id.clone();
        self.session_op(id, move |ctx, slot, f| {
            if let Synced::Missing = ctx.sync(slot, f)? {
                return Ok(None);
            }
            Ok(slot.info(&session))
        })
        .await
    }

    /// Deletes one session's folder when `when` still holds under its lock: renamed into the
    /// trash first, so a crash never leaves half a session (the next open finishes removing
    /// the trash).
    async fn delete_one(&self, id: &SessionId, when: Delete) -> Result<bool> {
        self.session_op(id, move |ctx, slot, f| {
            // Purge re-checks under the lock: a session written (or given a new expiry)
            // meanwhile is kept.
            match when {
                Delete::Always => {}
                Delete::OlderThan(cutoff) => match ctx.sync(slot, f)? {
                    Synced::Missing => return Ok(false),
                    _ => {
                        if slot.open.as_ref().is_some_and(|o| o.updated_at() >= cutoff) {
                            return Ok(false);
                        }
                    }
                },
                Delete::Expired => {
                    ctx.sync(slot, f)?;
                    if !slot.expired_now() {
                        return Ok(false);
                    }
                }
            }
            slot.forget();
            let dir = &ctx.paths.dir;
            if stat(dir)?.is_none() {
                return Ok(false);
            }
            // A folder with neither file (left by a crash right after its creation) held no
            // session: it is removed all the same, but reported as not existing.
            let existed = stat(&ctx.paths.log)?.is_some() || stat(&ctx.paths.md)?.is_some();
            remove_session_dir(dir)?;
            Ok(existed)
        })
        .await
    }

    /// The ids of the sessions whose sidecar (read without their locks: it is replaced
    /// atomically) lets them match `query`'s labels and the cursor, and has not expired.
    /// Only a first pass: the caller checks again under each session's lock.
    async fn candidates(&self, query: &SessionQuery) -> Result<Vec<SessionId>> {
        let ids = self.session_ids().await?;
        let layout = self.inner.layout.clone();
        let query = query.clone();
        tokio::task::spawn_blocking(move || {
            let at = now();
            let mut out = Vec::new();
            for id in ids {
                if query.after.as_ref().is_some_and(|after| id <= *after) {
                    continue;
                }
                let paths = layout.session(&id);
                // A sidecar that cannot be read is decided under the lock (with its error).
                if let Ok(cached) = crate::lifecycle::read(&paths.lifecycle) {
                    let data = cached.data;
                    if data.is_expired_at(at) || !labels_match(&query, &data.labels) {
                        continue;
                    }
                }
                out.push(id);
            }
            Ok(out)
        })
        .await
        .map_err(join_error)?
    }

    /// The ids of the sessions whose sidecar (read without their locks) says they expired.
    async fn expired_sessions(&self) -> Result<Vec<SessionId>> {
        let ids = self.session_ids().await?;
        let layout = self.inner.layout.clone();
        tokio::task::spawn_blocking(move || {
            let at = now();
            Ok(ids
                .into_iter()
                .filter(|id| {
                    crate::lifecycle::read(&layout.session(id).lifecycle)
                        .is_ok_and(|c| c.data.is_expired_at(at))
                })
                .collect())
        })
        .await
        .map_err(join_error)?
    }

    /// Runs `op` with the locks of two distinct sessions held: their in-process mutexes and
    /// then their file locks, each pair taken in id order, so that two operations on the same
    /// two sessions (in this process or another) never wait for each other in a cycle. A
    /// lease this process kept on either is ended first, for the same reason.
    async fn with_two_sessions<T, F>(&self, a: &SessionId, b: &SessionId, op: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(
                &SessionCtx<'_>,
                &mut SessionSlot,
                &SessionCtx<'_>,
                &mut SessionSlot,
                &mut Findings,
            ) -> Result<T>
            + Send
            + 'static,
    {
        let a_first = a < b;
        let (first, second) = if a_first { (a, b) } else { (b, a) };
        let mut first_guard = self.lock_slot(first).await;
        let mut second_guard = self.lock_slot(second).await;
        let inner = self.inner.clone();
        let (first, second) = (first.clone(), second.clone());
        let (result, leased) = tokio::task::spawn_blocking(move || {
            let first_ctx = inner.session_ctx(&first, &mut first_guard);
            let second_ctx = inner.session_ctx(&second, &mut second_guard);
            end_lease(&mut first_guard);
            end_lease(&mut second_guard);
            let mut findings = Findings::new(true);
            let result = Self::locked(&first_ctx, &mut first_guard, |first_slot| {
                Self::locked(&second_ctx, &mut second_guard, |second_slot| {
                    let f = &mut findings;
                    if a_first {
                        op(&first_ctx, first_slot, &second_ctx, second_slot, f)
                    } else {
                        op(&second_ctx, second_slot, &first_ctx, first_slot, f)
                    }
                })
            });
            inner.repairs.extend(&findings);
            let ok = result.is_ok();
            let leased = Self::after_op(&inner, &mut second_guard, ok);
            let leased = Self::after_op(&inner, &mut first_guard, ok) || leased;
            (result, leased)
        })
        .await
        .map_err(join_error)?;
        if leased {
            self.lease_started();
        }
        result
    }

    async fn all_messages(&self, scope: &MessageQuery) -> Result<Vec<(SessionId, Message)>> {
        let ids = match &scope.session {
            Some(id) => vec![id.clone()],
            None => self.session_ids().await?,
        };
        let mut all = Vec::new();
        for id in ids {
            let messages = self
                .session_op(&id, |ctx, slot, f| {
                    Ok(ctx.load(slot, f)?.map(|(m, _)| m).unwrap_or_default())
                })
                .await?;
            all.extend(messages.into_iter().map(|m| (id.clone(), m)));
        }
        Ok(all)
    }
}

/// Creates the folders and schema file, checks the schema, empties the trash.
fn prepare_root(layout: &Layout) -> Result<Findings> {
    create_dirs(&layout.root)?;
    create_dirs(&layout.agents)?;
    create_dirs(&layout.locks)?;
    match std::fs::read(&layout.schema) {
        Ok(bytes) => {
            let schema: SchemaFile = serde_json::from_slice(&bytes).map_err(|e| {
                Error::corrupt(format!(
                    "{} is not an agentmem schema file",
                    layout.schema.display()
                ))
                .with_source(e)
            })?;
            if schema.format != SCHEMA_FORMAT {
                return Err(Error::corrupt(format!(
                    "{} belongs to {:?}, not to the agentmem file backend",
                    layout.schema.display(),
                    schema.format
                )));
            }
            if schema.schema_version > SCHEMA_VERSION {
                return Err(Error::unsupported(format!(
                    "{} has schema version {}; this agentmem understands up to {SCHEMA_VERSION}: upgrade agentmem",
                    layout.root.display(),
                    schema.schema_version
                )));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let schema = SchemaFile {
                format: SCHEMA_FORMAT.into(),
                schema_version: SCHEMA_VERSION,
            };
            let mut bytes = serde_json::to_vec_pretty(&schema)
                .map_err(|e| Error::backend("cannot serialize the schema file").with_source(e))?;
            bytes.push(b'\n');
            write_atomic(&layout.root, &layout.schema, &bytes)?;
        }
        Err(e) => return Err(io_error(&layout.schema, "cannot read", e)),
    }
    let mut findings = Findings::new(true);
    if let Ok(entries) = std::fs::read_dir(&layout.agents) {
        for entry in entries.flatten() {
            if entry
                .file_name()
                .to_string_lossy()
                .starts_with(TRASH_PREFIX)
            {
                findings.add(
                    RepairKind::Trash,
                    None,
                    entry.path(),
                    "a session folder whose deletion was interrupted",
                );
                // Another process may be removing it at the same time: errors are expected.
                let _ = std::fs::remove_dir_all(entry.path());
            } else if let Some(target) = fork_folder_target(&entry.file_name().to_string_lossy()) {
                remove_unfinished_fork(layout, &target, &entry.path(), &mut findings);
            }
        }
    }
    Ok(findings)
}

/// Removes the folder of a fork into `target` that a crash left unfinished. A fork holds the
/// target's lock while its folder exists, so the folder is removed only when that lock is
/// free (else a fork is running, or a lease is kept: the next open removes it).
fn remove_unfinished_fork(layout: &Layout, target: &SessionId, dir: &Path, f: &mut Findings) {
    let lock_path = layout.session(target).lock;
    let Ok(lock) = open_lock_file(&lock_path) else {
        return;
    };
    if lock.try_lock().is_ok() {
        f.add(
            RepairKind::TempFile,
            Some(target),
            dir.to_path_buf(),
            "left by an interrupted fork; removed",
        );
        let _ = std::fs::remove_dir_all(dir);
        let _ = lock.unlock();
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

    async fn save_session(
        &self,
        session: &SessionId,
        history: &[Message],
        metadata: &Metadata,
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
        &self,
        session: &SessionId,
        archive: &ArchiveId,
        messages: &[Message],
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
            .memory_op(move |ctx, slot, f| ctx.purge(slot, memory_cutoff, f))
            .await?;
        Ok(report)
    }

    async fn fork(
        &self,
        source: &SessionId,
        target: &SessionId,
        at: Option<&MessageId>,
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
        &self,
        session: &SessionId,
        patch: &SessionPatch,
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
        self.memory_op(move |ctx, slot, f| ctx.put(slot, &item, f))
            .await
    }

    async fn get_memory(&self, id: &MemoryId) -> Result<Option<MemoryItem>> {
        let id = id.to_string();
        self.memory_op(move |ctx, slot, f| {
            ctx.sync(slot, f)?;
            let at = now();
            Ok(slot.get(&id).filter(|i| !i.is_expired_at(at)).cloned())
        })
        .await
    }

    async fn list_memories(&self, filter: &MemoryFilter) -> Result<Vec<MemoryItem>> {
        let filter = filter.clone();
        self.memory_op(move |ctx, slot, f| {
            ctx.sync(slot, f)?;
            // Oldest first; equal times keep first-stored order.
            Ok(select_memories(slot.items(), &filter))
        })
        .await
    }

    async fn search_memories(&self, query: &str, filter: &MemoryFilter) -> Result<Vec<MemoryHit>> {
        let query = query.to_string();
        let filter = filter.clone();
        self.memory_op(move |ctx, slot, f| {
            ctx.sync(slot, f)?;
            Ok(rank_memories(&query, slot.items(), &filter))
        })
        .await
    }

    async fn delete_memory(&self, id: &MemoryId) -> Result<bool> {
        let id = id.clone();
        self.memory_op(move |ctx, slot, f| ctx.delete(slot, &id, f))
            .await
    }
}
