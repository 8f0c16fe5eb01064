// The crate documentation is the README (also shown on GitHub and crates.io). Its links point
// to docs.rs there; the definitions below come first, so rustdoc links to (and checks) the items.
//! [`AgentMemory`]: agentmem_core::AgentMemory
//! [`SqliteStore`]: crate::SqliteStore
//! [`SqliteStore::connect`]: crate::SqliteStore::connect
//! [`SqliteStore::connect_with`]: crate::SqliteStore::connect_with
//! [`SqliteStore::from_client`]: crate::SqliteStore::from_client
//! [`Layered`]: agentmem_core::Layered
//! [`SqliteConfig`]: crate::SqliteConfig
#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, clippy::unwrap_used)]

mod archives;
mod checkpoints;
pub mod config;
mod error;
mod files;
mod graph;
mod lifecycle;
mod memories;
mod pool;
mod properties;
mod retention;
mod rows;
mod schema;
mod search;
mod sessions;
mod store;
#[cfg(test)]
mod testing;
mod tx;
mod vectors;

pub use config::{Location, SqliteConfig, Synchronous};
pub use schema::SCHEMA_VERSION;
pub use search::match_expression;
pub use store::SqliteStore;
