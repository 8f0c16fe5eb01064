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
//! [`CheckpointStore`]: agentmem_core::CheckpointStore
//! [`GraphStore`]: agentmem_core::GraphStore
#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, clippy::unwrap_used)]

// Source layout, one job a file. `store.rs` holds `FileStore` and its `SessionStore` and
// `MemoryStore` impls, which run their work through `locking.rs` (a session's fair in-process
// queue, its `flock`, leases) on the per-session code of `session/` (sync and repair, read,
// write, lifecycle sidecar, archives, fork) or on `memories.rs` (the memory log). `catalog.rs`
// does what spans many sessions (listing, first-pass filters, conditional deletion); `root.rs`
// opens a root (schema file, leftovers). Formats: `log.rs` (jsonl lines), `lifecycle.rs`
// (sidecar), `layout.rs` (paths); mechanics: `commit.rs` (group commit of durable appends),
// `lease.rs`, `tail.rs` (reading a log backwards), `repair.rs` (findings), `fsutil.rs`.
// `checkpoints/` keeps graph checkpoints, one log a thread (its records, replay and repair,
// locking, and the `CheckpointStore` impl). `graph/` keeps the knowledge graph, one log a
// store (its records, replay, repair and compaction, locking, and the `GraphStore` impl).
// `vectors/` keeps embedding vectors, one binary log a store (its records, replay and repair;
// the `VectorStore` impl in its `mod.rs`). `replayed.rs` holds what the graph's and the
// vectors' logs share: the cached replay, locking and catch-up, appends, compaction, checks.
mod catalog;
mod checkpoints;
mod commit;
mod config;
mod cursor;
mod fsutil;
mod graph;
mod layout;
mod lease;
mod lifecycle;
mod locking;
mod log;
mod memories;
mod repair;
mod replayed;
mod root;
mod session;
mod store;
mod tail;
mod vectors;

pub use config::{Durability, FileConfig};
pub use repair::{RepairKind, RepairReport};
pub use root::SCHEMA_VERSION;
pub use store::FileStore;
