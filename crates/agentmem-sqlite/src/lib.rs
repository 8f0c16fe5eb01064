//! SQLite backend for agentmem (`sqlite`): an embedded database, no server needed.
//!
//! [`SqliteMemory`] implements [`agentmem_core::AgentMemory`] on one SQLite file (or an
//! in-memory database) through rusqlite with the bundled SQLite:
//!
//! - every call runs on a blocking thread, over a small pool of connections;
//! - WAL mode, a busy timeout, and one short `IMMEDIATE` transaction per write, with
//!   per-session sequence numbers, so several processes appending to one session lose nothing
//!   and keep each process's order (C2);
//! - a versioned schema migrated forward on open; a database from a newer agentmem is refused
//!   untouched (C8);
//! - ranked message and memory search with FTS5 and `bm25()`, kept in step by triggers;
//! - retention in one `DELETE` per limit (C9).
//!
//! ```
//! use agentmem_core::{AgentMemory, AgentMemoryExt, Message, SessionId};
//! use agentmem_sqlite::SqliteMemory;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let dir = tempfile::tempdir().unwrap();
//! let url = format!("sqlite://{}/memory.db?synchronous=normal", dir.path().display());
//! let store = SqliteMemory::connect(&url).await?;
//! let session: SessionId = "ResearchAgent".parse()?;
//! store.append_one(&session, Message::user("What is GCP latency like?")).await?;
//! let hits = store.search_messages("latency", &Default::default()).await?;
//! assert_eq!(hits.len(), 1);
//! # Ok::<(), agentmem_core::Error>(())
//! # }).unwrap();
//! ```
#![forbid(unsafe_code)]

mod archives;
pub mod config;
mod error;
mod files;
mod memories;
mod pool;
mod retention;
mod rows;
mod schema;
mod search;
mod sessions;
mod store;

pub use config::{Location, SqliteConfig, Synchronous};
pub use schema::SCHEMA_VERSION;
pub use search::match_expression;
pub use store::SqliteMemory;
