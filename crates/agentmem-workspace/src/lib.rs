// The crate documentation is the README (also shown on GitHub and crates.io). Its links point
// to docs.rs there; the definitions below come first, so rustdoc links to (and checks) the items.
//! [`WorkspaceId`]: crate::WorkspaceId
//! [`WorkspaceId::Git`]: crate::WorkspaceId::Git
//! [`WorkspaceId::Dir`]: crate::WorkspaceId::Dir
//! [`WorkspaceId::Global`]: crate::WorkspaceId::Global
//! [`root_commit`]: crate::git::root_commit
#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, clippy::unwrap_used)]
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
