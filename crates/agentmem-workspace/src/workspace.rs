//! The workspace identity of a folder.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use agentmem_core::{Error, Result};
use sha2::{Digest, Sha256};

use crate::env::global_sessions_requested;

/// Which workspace a folder belongs to; displayed as `git:<sha>`, `dir:<path>` or `global`.
///
/// Two folders with equal ids share workspace-scoped sessions. The [`Display`](fmt::Display)
/// form is what [`session_id`](crate::session_id) hashes, and it parses back with [`FromStr`].
///
/// ```
/// use agentmem_workspace::WorkspaceId;
/// let id: WorkspaceId = "dir:/home/me/app".parse().unwrap();
/// assert_eq!(id.to_string(), "dir:/home/me/app");
/// assert_eq!("global".parse::<WorkspaceId>().unwrap(), WorkspaceId::Global);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum WorkspaceId {
    /// A git repository, by the full lowercase hex id of its root commit (see
    /// [`root_commit`](crate::git::root_commit)).
    Git(String),
    /// A folder outside any repository (or in one without commits), by its real path: absolute,
    /// symbolic links resolved. A path that is not valid Unicode is shown (and hashed) with
    /// U+FFFD in place of the invalid bytes.
    Dir(PathBuf),
    /// No workspace: scoping is off or nothing could be resolved.
    Global,
}

impl WorkspaceId {
    /// Whether this is [`WorkspaceId::Global`].
    pub fn is_global(&self) -> bool {
        matches!(self, WorkspaceId::Global)
    }

    /// The workspace as the workspace part of a memory scope
    /// ([`MemoryScope`](agentmem_core::MemoryScope), whose parts are names without `:` or
    /// `/`): `git-` + the root commit, `dir-` + the first 16 hex digits of the sha256 of the
    /// path; `None` for [`WorkspaceId::Global`] (no workspace part).
    ///
    /// ```
    /// use agentmem_workspace::WorkspaceId;
    /// let repo = WorkspaceId::Git("0123abcd".repeat(5));
    /// assert_eq!(repo.scope_name().unwrap(), format!("git-{}", "0123abcd".repeat(5)));
    /// let dir: WorkspaceId = "dir:/home/me/app".parse().unwrap();
    /// assert!(dir.scope_name().unwrap().starts_with("dir-"));
    /// assert_eq!(WorkspaceId::Global.scope_name(), None);
    /// ```
    pub fn scope_name(&self) -> Option<String> {
        match self {
            WorkspaceId::Git(sha) => Some(format!("git-{sha}")),
            WorkspaceId::Dir(path) => {
                let digest = Sha256::digest(path.to_string_lossy().as_bytes());
                let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
                Some(format!("dir-{hex}"))
            }
            WorkspaceId::Global => None,
        }
    }
}

impl fmt::Display for WorkspaceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkspaceId::Git(sha) => write!(f, "git:{sha}"),
            WorkspaceId::Dir(path) => write!(f, "dir:{}", path.to_string_lossy()),
            WorkspaceId::Global => f.write_str("global"),
        }
    }
}

impl FromStr for WorkspaceId {
    type Err = Error;

    /// Parses the displayed form: `git:<40 or 64 hex digits>`, `dir:<absolute path>` or `global`.
    fn from_str(s: &str) -> Result<Self> {
        if s == "global" {
            return Ok(WorkspaceId::Global);
        }
        if let Some(sha) = s.strip_prefix("git:") {
            let hex = sha
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
            if hex && (sha.len() == 40 || sha.len() == 64) {
                return Ok(WorkspaceId::Git(sha.to_string()));
            }
        } else if let Some(path) = s.strip_prefix("dir:") {
            if Path::new(path).is_absolute() {
                return Ok(WorkspaceId::Dir(PathBuf::from(path)));
            }
        }
        Err(Error::invalid_input(format!(
            "invalid workspace id {s:?}: expected git:<lowercase hex commit id>, dir:<absolute path> or global"
        )))
    }
}

/// The workspace of `path`, honouring [`GLOBAL_SESSIONS_ENV`](crate::GLOBAL_SESSIONS_ENV):
/// `global` when it is set to `1`/`true`/`yes`, else [`resolve_workspace`].
///
/// ```
/// use agentmem_workspace::{global_sessions_requested, resolve_workspace};
/// use agentmem_workspace::{session_id, workspace_id};
/// let dir = tempfile::tempdir()?;
/// let workspace = workspace_id(dir.path());
/// if global_sessions_requested() {
///     assert!(workspace.is_global()); // AGENTMEM_GLOBAL_SESSIONS=1: scoping is off
/// } else {
///     assert_eq!(workspace, resolve_workspace(dir.path()));
/// }
/// // The agent's history in this workspace:
/// let session = session_id(&workspace, Some("assistant"));
/// assert!(session.as_str().starts_with("history_"));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn workspace_id(path: &Path) -> WorkspaceId {
    workspace_id_with(path, global_sessions_requested())
}

/// [`workspace_id`] with the global switch given rather than read from the environment
/// (the environment is process-wide; this keeps callers and tests independent of it).
pub fn workspace_id_with(path: &Path, global: bool) -> WorkspaceId {
    if global {
        WorkspaceId::Global
    } else {
        resolve_workspace(path)
    }
}

/// The workspace of the current directory, honouring the global switch; `global` when the
/// current directory cannot be read (it was deleted, for example).
pub fn current_workspace_id() -> WorkspaceId {
    if global_sessions_requested() {
        return WorkspaceId::Global;
    }
    match std::env::current_dir() {
        Ok(dir) => resolve_workspace(&dir),
        Err(_) => WorkspaceId::Global,
    }
}

/// The workspace of `path`, ignoring the global switch:
///
/// 1. with feature `git`, inside a repository whose `HEAD` has commits: `git:<root commit>`
///    (the same for every clone and linked worktree; see [`crate::git`] for shallow, empty and
///    bare repositories);
/// 2. inside a repository without commits: `dir:` + the real path of its work tree root (of
///    the git folder for a bare one), so every subfolder agrees until the first commit;
/// 3. otherwise `dir:` + the real path of `path`;
/// 4. `global` when `path` does not resolve (it does not exist, or cannot be read).
///
/// A repository git cannot read (corrupt, or missing objects) is treated as no repository,
/// as PraisonAI does when `git rev-list` fails.
///
/// ```
/// use agentmem_workspace::{resolve_workspace, WorkspaceId};
/// let dir = tempfile::tempdir()?;
/// let sub = dir.path().join("src");
/// std::fs::create_dir(&sub)?;
/// assert_eq!(resolve_workspace(&dir.path().join("missing")), WorkspaceId::Global);
/// // A repository without commits: every subfolder resolves to its work tree root.
/// git2::Repository::init(dir.path())?;
/// let root = WorkspaceId::Dir(dir.path().canonicalize()?);
/// assert_eq!(resolve_workspace(dir.path()), root);
/// #[cfg(feature = "git")] // without it, repositories are not recognised
/// assert_eq!(resolve_workspace(&sub), root);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn resolve_workspace(path: &Path) -> WorkspaceId {
    #[cfg(feature = "git")]
    if let Some(id) = crate::git::repository_workspace(path) {
        return id;
    }
    match std::fs::canonicalize(path) {
        Ok(real) => WorkspaceId::Dir(real),
        Err(_) => WorkspaceId::Global,
    }
}
