//! One session's files, for one operation at a time: the state this process caches between
//! operations ([`SessionSlot`]) and the context an operation runs in ([`SessionCtx`]). Every
//! function below runs on a blocking thread with the session's file lock held (see
//! `locking.rs`); the jobs are split by file:
//!
//! - `sync`: brings the cache up to date with the disk and repairs what a crash left;
//! - `read`: parses the log and loads messages (a whole log or a last-N window);
//! - `write`: appends, rewrites, saves and rewinds the log and its `MEMORY.md` view;
//! - `lifecycle`: the session's labels and expiry (its `lifecycle.json` sidecar);
//! - `archives`: compaction and the archives it writes;
//! - `fork`: a copy of a session built beside it and renamed into place.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use agentmem_core::{now, Error, Message, Result, SessionId, SessionInfo};
use agentmem_formats::swarms::render_block;
use chrono::{DateTime, SubsecRound, Utc};

use crate::commit::GroupCommit;
use crate::config::Durability;
use crate::fsutil::{io_error, sync_dir, FileId};
use crate::layout::{SessionPaths, TRASH_PREFIX};
use crate::lease::Lease;
use crate::lifecycle::{CachedLifecycle, Lifecycle};
use crate::log::SessionHeader;

mod archives;
mod fork;
mod lifecycle;
mod read;
mod sync;
mod write;

pub(crate) use fork::fork;

/// What this process knows about one session; kept between operations so an append costs a
/// handful of system calls. Guarded by the session's in-process mutex.
#[derive(Debug, Default)]
pub(crate) struct SessionSlot {
    /// The open lock file (locked while an operation runs, and while `lease` lasts).
    pub(crate) lock_file: Option<File>,
    /// Set while this process keeps the file lock between operations (see `lease.rs`): then
    /// no other process has touched the files since `open` was last brought up to date.
    pub(crate) lease: Option<Lease>,
    /// The group commit of durable appends (see `commit.rs`).
    pub(crate) group: Arc<GroupCommit>,
    /// The session's paths, made once (they are joined and formatted strings).
    pub(crate) paths: Option<Arc<SessionPaths>>,
    /// The session's open files and summary, when it exists and has been read.
    pub(crate) open: Option<OpenSession>,
    /// Its labels and expiry as last read from `lifecycle.json` (`None`: not read yet).
    pub(crate) lifecycle: Option<CachedLifecycle>,
}

impl SessionSlot {
    /// The session's labels and expiry as last synced (none when not read).
    pub(crate) fn lifecycle(&self) -> Lifecycle {
        self.lifecycle
            .as_ref()
            .map(|c| c.data.clone())
            .unwrap_or_default()
    }

    /// Whether the cached expiry has passed.
    pub(crate) fn expired_now(&self) -> bool {
        self.lifecycle
            .as_ref()
            .is_some_and(|c| c.data.expires_at.is_some() && c.data.is_expired_at(now()))
    }

    /// Forgets everything cached about the files (the next operation reads them afresh).
    pub(crate) fn forget(&mut self) {
        self.open = None;
        self.lifecycle = None;
    }

    /// The summary of the session after a sync that found it.
    pub(crate) fn info(&self, id: &SessionId) -> Option<SessionInfo> {
        let o = self.open.as_ref()?;
        let lifecycle = self.lifecycle();
        Some(SessionInfo {
            id: id.clone(),
            message_count: o.count,
            created_at: o.header.created_at,
            updated_at: o.updated_at(),
            labels: lifecycle.labels,
            expires_at: lifecycle.expires_at,
        })
    }
}

/// The open files of an existing session and what this process last saw of them.
#[derive(Debug)]
pub(crate) struct OpenSession {
    log: Arc<File>,
    log_id: FileId,
    log_len: u64,
    /// Physical lines in the log, the header included (for error messages).
    lines: u64,
    md: Option<(File, FileId)>,
    md_len: u64,
    pub(crate) header: SessionHeader,
    pub(crate) count: u64,
    /// The `MEMORY.md` block of the last message with non-blank content.
    last_block: Option<String>,
    last_timestamp: Option<DateTime<Utc>>,
    mtime: Option<DateTime<Utc>>,
}

/// A session as `sync` left it: its state, and its messages when the sync read them all
/// anyway.
struct Current<'s> {
    open: &'s OpenSession,
    loaded: Option<Vec<Message>>,
}

impl OpenSession {
    /// The state of the open `log` (whose metadata is `meta`), of which the first `log_len`
    /// bytes, `lines` lines, hold `header` and `messages`.
    fn new(
        log: File, meta: &std::fs::Metadata, log_len: u64, lines: u64, header: SessionHeader,
        messages: &[Message],
    ) -> Self {
        let mut open = OpenSession {
            log: Arc::new(log),
            log_id: FileId::of(meta),
            log_len,
            lines,
            md: None,
            md_len: 0,
            header,
            count: messages.len() as u64,
            last_block: None,
            last_timestamp: None,
            mtime: to_utc(meta.modified()),
        };
        note_messages(&mut open, messages);
        open
    }

    /// When the session was last written: the latest of its last rewrite, its last message's
    /// time and the log's modification time. The message time keeps the order of writes
    /// exact (file times are only as fine as the kernel's clock tick); the file time covers
    /// messages appended with old timestamps.
    pub(crate) fn updated_at(&self) -> DateTime<Utc> {
        let mut t = self.header.updated_at.max(self.header.created_at);
        if let Some(ts) = self.last_timestamp {
            t = t.max(ts);
        }
        if let Some(m) = self.mtime {
            t = t.max(m);
        }
        t
    }
}

/// The outcome of [`SessionCtx::sync`].
pub(crate) enum Synced {
    /// The session does not exist.
    Missing,
    /// The cached state is current; messages were not read.
    Current,
    /// The whole log was read; here are its messages.
    Loaded(Vec<Message>),
}

/// One session's identity and paths, for the duration of one operation.
pub(crate) struct SessionCtx<'a> {
    pub(crate) id: &'a SessionId,
    pub(crate) paths: Arc<SessionPaths>,
    pub(crate) durability: Durability,
    /// Whether the file system ignores case in names: then a session's folder may be another
    /// session's whose name differs only in case, which `sync` refuses.
    pub(crate) ignores_case: bool,
}

impl SessionCtx<'_> {
    /// The session, as a finding names it.
    fn id(&self) -> Option<&SessionId> {
        Some(self.id)
    }
}

/// A file time as a model time (microseconds, like every agentmem time).
fn to_utc(t: std::io::Result<std::time::SystemTime>) -> Option<DateTime<Utc>> {
    t.ok().map(|t| DateTime::<Utc>::from(t).trunc_subsecs(6))
}

/// The error for an operation on a session that does not exist (or has expired).
pub(crate) fn not_found(id: &SessionId) -> Error {
    Error::not_found(format!("session `{id}` does not exist"))
}

/// Removes a session's folder: renamed into the trash of its parent first (and the parent
/// synced), so a crash never leaves half a session; the next open empties the trash.
pub(crate) fn remove_session_dir(dir: &Path) -> Result<()> {
    let Some(agents) = dir.parent() else {
        return Err(Error::backend(format!("{} has no parent", dir.display())));
    };
    let trash = agents.join(format!("{TRASH_PREFIX}{}", agentmem_core::new_id()));
    std::fs::rename(dir, &trash).map_err(|e| io_error(dir, "cannot move to the trash", e))?;
    sync_dir(agents)?;
    std::fs::remove_dir_all(&trash).map_err(|e| io_error(&trash, "cannot remove", e))
}

/// Updates the cached last block and time with newly seen `messages`.
fn note_messages(o: &mut OpenSession, messages: &[Message]) {
    for m in messages {
        if let Some(block) = render_block(m) {
            o.last_block = Some(block);
        }
        o.last_timestamp = Some(m.timestamp);
    }
}
