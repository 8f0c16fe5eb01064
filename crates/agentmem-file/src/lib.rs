// The crate documentation is the README (also shown on GitHub and crates.io). Its links point
// to docs.rs there; the definitions below come first, so rustdoc links to (and checks) the items.
//! [`AgentMemory`]: agentmem_core::AgentMemory
//! [`FileMemory`]: crate::FileMemory
//! [`FileMemory::connect`]: crate::FileMemory::connect
//! [`FileMemory::connect_with`]: crate::FileMemory::connect_with
//! [`Layered`]: agentmem_core::Layered
//! [`Registry`]: agentmem_core::backend::Registry
//! [`FileMemory::repairs`]: crate::FileMemory::repairs
//! [`FileMemory::check`]: crate::FileMemory::check
//! [`FileConfig`]: crate::FileConfig
//! [`Durability::Fsync`]: crate::Durability::Fsync
//! [`Durability::Buffered`]: crate::Durability::Buffered
//! [`RepairReport`]: crate::RepairReport
#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod config;
mod fsutil;
mod layout;
mod log;
mod memories;
mod repair;
mod session;
mod store;
mod tail;

pub use config::{Durability, FileConfig};
pub use repair::{RepairKind, RepairReport};
pub use store::{FileMemory, SCHEMA_VERSION};
