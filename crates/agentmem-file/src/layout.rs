//! Where everything lives under the root folder.
//!
//! ```text
//! <root>/agentmem.json                      schema version and store properties
//! <root>/agentmem.lock                      lock of the store properties
//! <root>/memories.jsonl                     memory items (append log)
//! <root>/memories.lock                      lock of the memory log
//! <root>/locks/<session id>.lock            lock of one session
//! <root>/agents/<session id>/session.jsonl  the session's structured log (source of truth)
//! <root>/agents/<session id>/MEMORY.md      Swarms view of it
//! <root>/agents/<session id>/lifecycle.json labels and expiry (only when set)
//! <root>/agents/<session id>/archive/history_<ts>.jsonl|.md
//! <root>/agents/<session id>/archive/.replace-history_<ts>.jsonl  an archive being replaced
//! <root>/agents/<session id>/quarantine/    unreadable lines and files of the session, set aside
//! <root>/quarantine/                        the same of memories.jsonl and agentmem.json
//! <root>/agents/.trash-<random>             a session being deleted
//! <root>/agents/.fork-<random>-<target id>  a fork being built, renamed into place
//! <root>/threads/<key>/checkpoints.jsonl     one checkpoint thread's log (see `checkpoints/`)
//! <root>/threads/<key>/checkpoints.lock     lock of that thread
//! <root>/threads/<key>/quarantine/          unreadable lines of the thread's log, set aside
//! <root>/graph/graph.jsonl                  the knowledge graph's log (see `graph/`)
//! <root>/graph/graph.lock                   lock of the graph
//! <root>/graph/quarantine/                  unreadable lines of the graph's log, set aside
//! <root>/vectors/vectors.log                embedding vectors, a binary log (see `vectors/`)
//! <root>/vectors/vectors.lock               lock of the vectors
//! <root>/vectors/quarantine/                unreadable records of the vector log, set aside
//! ```
//!
//! A thread's `<key>` is the hex SHA-256 of its id ([`thread_key`]): thread ids are any UTF-8
//! up to 512 bytes (`/`, `..`, NUL-free but otherwise anything), so they cannot be file names;
//! the log's header keeps the exact id.
//!
//! Session lock files live outside the session folder: deleting a session renames its folder
//! away, and a lock inside it would let a process holding the old lock and one creating the
//! session anew both believe they own it.

use std::path::{Path, PathBuf};

use agentmem_core::{SessionId, ThreadId};
use sha2::{Digest, Sha256};

/// File name of the session log.
pub(crate) const SESSION_LOG: &str = "session.jsonl";
/// File name of the Swarms view.
pub(crate) const MEMORY_MD: &str = "MEMORY.md";
/// Prefix of session folders being deleted.
pub(crate) const TRASH_PREFIX: &str = ".trash-";
/// Prefix of session folders being built by a fork: `.fork-<random>-<target id>`.
pub(crate) const FORK_PREFIX: &str = ".fork-";
/// Prefix, in a session's `archive/` folder, of the new log of an archive being replaced
/// (`.replace-<stem>.jsonl`): while it exists the archive's `.md` may already be the new view,
/// so a repair finishes the replacement from it (see `SessionCtx::replace_archive`).
pub(crate) const REPLACE_PREFIX: &str = ".replace-";
/// Folder, in a session's folder (for its files) or the root (for the memory log and the
/// schema file), of what was set aside because it cannot be read (see `Findings::quarantine`).
pub(crate) const QUARANTINE_DIR: &str = "quarantine";
/// File name of a checkpoint thread's log, in its folder.
pub(crate) const THREAD_LOG: &str = "checkpoints.jsonl";
/// File name of a checkpoint thread's lock, in its folder (which is never removed, so the
/// lock file every process opens stays the same file).
pub(crate) const THREAD_LOCK: &str = "checkpoints.lock";

/// Folder of the knowledge graph, in the root.
pub(crate) const GRAPH_DIR: &str = "graph";
/// File name of the graph's log, in its folder.
pub(crate) const GRAPH_LOG: &str = "graph.jsonl";
/// File name of the graph's lock, in its folder (never removed, so every process locks the
/// same file).
pub(crate) const GRAPH_LOCK: &str = "graph.lock";

/// Folder of the embedding vectors, in the root.
pub(crate) const VECTOR_DIR: &str = "vectors";
/// File name of the vector log, in its folder.
pub(crate) const VECTOR_LOG: &str = "vectors.log";
/// File name of the vectors' lock, in its folder (never removed, so every process locks the
/// same file).
pub(crate) const VECTOR_LOCK: &str = "vectors.lock";

/// The fixed paths of one root.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    pub(crate) root: PathBuf,
    pub(crate) agents: PathBuf,
    pub(crate) locks: PathBuf,
    pub(crate) schema: PathBuf,
    pub(crate) properties_lock: PathBuf,
    pub(crate) memories: PathBuf,
    pub(crate) memories_lock: PathBuf,
    /// The folder of checkpoint threads, one folder each.
    pub(crate) threads: PathBuf,
}

impl Layout {
    pub(crate) fn new(root: &Path) -> Self {
        Layout {
            root: root.to_path_buf(),
            agents: root.join("agents"),
            locks: root.join("locks"),
            schema: root.join("agentmem.json"),
            properties_lock: root.join("agentmem.lock"),
            memories: root.join("memories.jsonl"),
            memories_lock: root.join("memories.lock"),
            threads: root.join("threads"),
        }
    }

    /// The paths of one session. A validated [`SessionId`] has no separator, no `..` and no
    /// leading `.`, so the joined paths stay inside the root.
    pub(crate) fn session(&self, id: &SessionId) -> SessionPaths {
        let dir = self.agents.join(id.as_str());
        SessionPaths {
            log: dir.join(SESSION_LOG),
            md: dir.join(MEMORY_MD),
            lifecycle: dir.join(crate::lifecycle::LIFECYCLE_FILE),
            archive: dir.join("archive"),
            lock: self.locks.join(format!("{}.lock", id.as_str())),
            dir,
        }
    }
}

/// The paths of one session.
#[derive(Debug, Clone)]
pub(crate) struct SessionPaths {
    pub(crate) dir: PathBuf,
    pub(crate) log: PathBuf,
    pub(crate) md: PathBuf,
    /// The sidecar of labels and expiry (see `lifecycle.rs`).
    pub(crate) lifecycle: PathBuf,
    pub(crate) archive: PathBuf,
    pub(crate) lock: PathBuf,
}

impl Layout {
    /// The paths of the checkpoint thread whose [`thread_key`] is `key`.
    pub(crate) fn thread(&self, key: &str) -> LogPaths {
        LogPaths::new(self.threads.join(key), THREAD_LOG, THREAD_LOCK)
    }

    /// The paths of the knowledge graph (one a store).
    pub(crate) fn graph(&self) -> LogPaths {
        LogPaths::new(self.root.join(GRAPH_DIR), GRAPH_LOG, GRAPH_LOCK)
    }

    /// The paths of the embedding vectors (one log a store).
    pub(crate) fn vectors(&self) -> LogPaths {
        LogPaths::new(self.root.join(VECTOR_DIR), VECTOR_LOG, VECTOR_LOCK)
    }
}

/// The paths of a log kept in a folder of its own with its lock (a checkpoint thread, the
/// knowledge graph, the vectors).
#[derive(Debug, Clone)]
pub(crate) struct LogPaths {
    pub(crate) dir: PathBuf,
    pub(crate) log: PathBuf,
    pub(crate) lock: PathBuf,
}

impl LogPaths {
    /// The log named `log` and the lock named `lock` in `dir`.
    fn new(dir: PathBuf, log: &str, lock: &str) -> Self {
        LogPaths {
            log: dir.join(log),
            lock: dir.join(lock),
            dir,
        }
    }
}

/// The name of a checkpoint thread's folder: the lowercase hex SHA-256 of its id (64
/// characters). Distinct ids never share a folder (a collision would take breaking SHA-256;
/// the log's header holds the exact id, checked on every read all the same).
pub(crate) fn thread_key(thread: &ThreadId) -> String {
    let digest = Sha256::digest(thread.as_str().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `name` (an entry of `threads/`) is a thread folder's name as [`thread_key`] makes
/// them; anything else there (temporary files, files put there by hand) is not a thread.
pub(crate) fn is_thread_key(name: &str) -> bool {
    name.len() == 64 && name.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The name of a folder in which a fork into `target` is built (see [`FORK_PREFIX`]).
pub(crate) fn fork_folder_name(target: &SessionId) -> String {
    format!(
        "{FORK_PREFIX}{}-{}",
        agentmem_core::new_id(),
        target.as_str()
    )
}

/// The target of the fork folder named `name`, when it is one.
pub(crate) fn fork_folder_target(name: &str) -> Option<SessionId> {
    let rest = name.strip_prefix(FORK_PREFIX)?;
    let (random, target) = rest.split_once('-')?;
    if random.is_empty() || !random.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    SessionId::new(target).ok()
}
