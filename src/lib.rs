//! # agentmem
//!
//! Durable, compactable, workspace-scoped memory for AI agents, on pluggable backends.
//!
//! This facade re-exports the core ([`AgentMemory`], [`Message`], [`Error`], …), the
//! conversation engine ([`conversation`]), agent memory configuration ([`memory`]), workspace
//! scoping ([`workspace`]) and each backend compiled in by cargo feature, and opens any of
//! them from a URL with [`open`].
//!
//! | feature | backend | URL |
//! |---|---|---|
//! | `file` (default) | [`file::FileMemory`] | `file:///path/to/home` |
//! | `sqlite` | `sqlite::SqliteMemory` | `sqlite://path.db`, `sqlite::memory:` |
//! | `redis` | `redis::RedisMemory` | `redis://host:6379/?prefix=…` |
//! | `postgres` | `postgres::PostgresMemory` | `postgres://user@host/db?schema=…` |
//! | `mongodb` | `mongodb::MongoMemory` | `mongodb://host:27017/db` |
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod open;

pub mod memory;

pub use agentmem_core::{
    async_trait, format, history, name, now, search, AgentMemory, AgentMemoryExt, AgentName,
    Archive, ArchiveId, ArchiveInfo, Capabilities, Error, ErrorKind, InMemory, MemoryFilter,
    MemoryHit, MemoryItem, MemoryKind, Message, MessageHit, MessageQuery, Metadata, PurgeReport,
    Result, RetentionPolicy, Role, Session, SessionId, SessionInfo,
};
pub use open::{open, Backend};

/// The core crate, for backend authors.
pub use agentmem_core as core;

/// The Swarms-style conversation engine: preload, write-through, compaction, auto-compression.
pub use agentmem_conversation as conversation;

/// Workspace identity and workspace-scoped session ids (git root commit with feature `git`).
pub use agentmem_workspace as workspace;

/// The file backend (feature `file`).
#[cfg(feature = "file")]
#[cfg_attr(docsrs, doc(cfg(feature = "file")))]
pub use agentmem_file as file;

/// The SQLite backend (feature `sqlite`).
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub use agentmem_sqlite as sqlite;

/// The Redis backend (feature `redis`).
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use agentmem_redis as redis;

/// The PostgreSQL backend (feature `postgres`).
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use agentmem_postgres as postgres;

/// The MongoDB backend (feature `mongodb`).
#[cfg(feature = "mongodb")]
#[cfg_attr(docsrs, doc(cfg(feature = "mongodb")))]
pub use agentmem_mongodb as mongodb;
