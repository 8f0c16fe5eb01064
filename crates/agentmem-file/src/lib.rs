// The crate documentation is the README (also shown on GitHub and crates.io). Its links point
// to docs.rs there; the definitions below come first, so rustdoc links to (and checks) the items.
//! [`AgentMemory`]: agentmem_core::AgentMemory
//! [`FileStore`]: crate::FileStore
//! [`FileStore::connect`]: crate::FileStore::connect
//! [`FileStore::connect_with`]: crate::FileStore::connect_with
//! [`Layered`]: agentmem_core::Layered
//! [`Registry`]: agentmem_core::backend::Registry
//! [`FileStore::repairs`]: crate::FileStore::repairs
//! [`FileStore::check`]: crate::FileStore::check
//! [`FileConfig`]: crate::FileConfig
//! [`Durability::Fsync`]: crate::Durability::Fsync
//! [`Durability::Buffered`]: crate::Durability::Buffered
//! [`RepairReport`]: crate::RepairReport
#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod commit;
mod config;
mod fsutil;
mod layout;
mod lease;
mod lifecycle;
mod log;
mod memories;
mod repair;
mod session;
mod store;
mod tail;

pub use config::{Durability, FileConfig};
pub use repair::{RepairKind, RepairReport};
pub use store::{FileStore, SCHEMA_VERSION};
