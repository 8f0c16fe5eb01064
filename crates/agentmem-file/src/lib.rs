//! The file backend of agentmem: the embedded default (B10, A2, A3).
//!
//! One root folder (default `$AGENTMEM_HOME`, else `$HOME/.agentmem`) holds every agent's
//! memory as `agents/<session>/MEMORY.md` in the exact format Swarms writes and preloads,
//! beside a structured log `session.jsonl` that makes loading lossless, with compacted
//! transcripts in `archive/history_<timestamp>.md`. Appends write only the new bytes and are
//! fsynced by default; rewrites go through a temporary file and a rename; advisory locks let
//! several processes share one root (C2); a torn record left by a crash is detected, reported
//! and repaired on first access (C3). Files are created 0600, folders 0700.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use agentmem_core::{AgentMemory, AgentMemoryExt, Message, SessionId};
//! use agentmem_file::FileMemory;
//!
//! let dir = tempfile::tempdir()?;
//! let url = format!("file://{}?durability=buffered", dir.path().display());
//! let store = FileMemory::connect(&url).await?;
//! let id: SessionId = "demo".parse()?;
//! store.append_one(&id, Message::user("hello")).await?;
//! drop(store);
//! let reopened = FileMemory::connect(&url).await?;
//! assert_eq!(reopened.messages(&id).await?[0].content, "hello");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
#![forbid(unsafe_code)]

mod config;
mod fsutil;
mod layout;
mod log;
mod memories;
mod repair;
mod session;
mod store;

pub use config::{Durability, FileConfig};
pub use repair::{RepairKind, RepairReport};
pub use store::{FileMemory, SCHEMA_VERSION};
