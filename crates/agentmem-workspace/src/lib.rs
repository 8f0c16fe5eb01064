//! Workspace identity and workspace-scoped session ids for agentmem (B5, C6).
//!
//! An agent that keeps history without an explicit session id gets one per *workspace*, so the
//! same agent name in two projects never shares a history:
//!
//! | where | [`WorkspaceId`] | shown as |
//! |---|---|---|
//! | inside a git repository with commits (feature `git`) | [`WorkspaceId::Git`] | `git:<root commit sha>` |
//! | anywhere else whose real path resolves | [`WorkspaceId::Dir`] | `dir:<real path>` |
//! | neither, or `AGENTMEM_GLOBAL_SESSIONS` is `1`/`true`/`yes` (any case) | [`WorkspaceId::Global`] | `global` |
//!
//! The session id is `history_` + the first 8 hex digits of sha256(`<workspace>:<agent>`), the
//! scheme PraisonAI uses, so both tools agree on ids for the same repository and agent name.
//!
//! ```
//! use agentmem_workspace::{session_id, WorkspaceId};
//! let id = session_id(&WorkspaceId::Global, Some("assistant"));
//! assert_eq!(id.as_str(), "history_9d7d79a1");
//! ```
//!
//! # Which commit is "the root"
//!
//! A repository's identity is its root commit, the last line `git rev-list --max-parents=0 HEAD`
//! prints: every clone and every linked worktree of a repository shares it, wherever it is
//! checked out. [`root_commit`] reproduces git's walk order exactly (see [`git`] for the
//! edge cases: several roots, shallow clones, empty and bare repositories).
//!
//! Without the `git` feature, repositories are not recognised and every folder is
//! `dir:<real path>` (or `global`).
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod env;
#[cfg(feature = "git")]
#[cfg_attr(docsrs, doc(cfg(feature = "git")))]
pub mod git;
mod session;
mod workspace;

pub use env::{global_sessions_requested, is_truthy, GLOBAL_SESSIONS_ENV};
#[cfg(feature = "git")]
pub use git::root_commit;
pub use session::{session_id, session_id_for_key, DEFAULT_AGENT_NAME};
pub use workspace::{
    current_workspace_id, resolve_workspace, workspace_id, workspace_id_with, WorkspaceId,
};
