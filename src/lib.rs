// The crate documentation is the README (also shown on GitHub and crates.io). Its links lead to
// files of the repository and to docs.rs there; the definitions below come first, so rustdoc
// links to (and checks) the items, and to GitHub for files that are not part of the docs.
//! [`agentmem::open`]: crate::open
//! [`AgentMemory`]: crate::AgentMemory
//! [`agentmem::conversation`]: crate::conversation
//! [`agentmem::agent`]: crate::agent
//! [`agentmem::registry`]: crate::registry
//! [`agentmem-conversation`]: crate::conversation
//! [`agentmem-workspace`]: crate::workspace
//! [`crates/agentmem-core`]: https://docs.rs/agentmem-core
//! [`agentmem-testkit`]: https://github.com/agentmem/agentmem/tree/main/crates/agentmem-testkit
//! [`crates/agentmem-reliability`]: https://github.com/agentmem/agentmem/tree/main/crates/agentmem-reliability
//! [`.ci/run`]: https://github.com/agentmem/agentmem/blob/main/.ci/run
//! [BENCHMARKS.md]: https://github.com/agentmem/agentmem/blob/main/BENCHMARKS.md
//! [ARCHITECTURE.md]: https://github.com/agentmem/agentmem/blob/main/ARCHITECTURE.md
// With every backend compiled in (docs.rs, CI's doc build) the backend links lead to, and
// rustdoc checks, the re-exported items; with fewer, they keep the README's docs.rs links.
#![cfg_attr(
    all(
        feature = "file",
        feature = "sqlite",
        feature = "redis",
        feature = "postgres",
        feature = "mongodb"
    ),
    doc = "[`FileStore`]: crate::file::FileStore\n\
           [`agentmem-file`]: crate::file\n\
           [`SqliteStore`]: crate::sqlite::SqliteStore\n\
           [`agentmem-sqlite`]: crate::sqlite\n\
           [`RedisStore`]: crate::redis::RedisStore\n\
           [`agentmem-redis`]: crate::redis\n\
           [`PostgresStore`]: crate::postgres::PostgresStore\n\
           [`agentmem-postgres`]: crate::postgres\n\
           [`MongoStore`]: crate::mongodb::MongoStore\n\
           [`agentmem-mongodb`]: crate::mongodb"
)]
#![cfg_attr(feature = "rig", doc = "[`crates/agentmem-rig`]: crate::rig")]
#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, clippy::unwrap_used)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod open;
#[cfg(feature = "recall")]
mod open_recall;

// The facade re-exports what a user of the library names; a backend author depends on
// `agentmem-core` itself (as sqlx drivers depend on sqlx-core), so each item has one path here.
pub use agentmem_agent::Backend;
pub use agentmem_core::backend::{BackendConfig, BackendInfo, Registry};
pub use agentmem_core::{
    async_trait, checkpoint, graph, history, layer, lifecycle, now, search, AddedObservations,
    AgentMemory, AgentMemoryExt, AgentName, Archive, ArchiveId, ArchiveInfo, Capabilities,
    ChannelBlob, Checkpoint, CheckpointId, CheckpointKey, CheckpointNs, CheckpointPrune,
    CheckpointQuery, CheckpointStore, CheckpointTuple, ContextStore, Embedder, EmbedderChoice,
    EmbeddingOptions, Entity, Error, ErrorKind, GraphQuery, GraphStore, InMemoryStore,
    KnowledgeGraph, Layered, MemoryFilter, MemoryHit, MemoryId, MemoryItem, MemoryKind,
    MemoryScope, MemoryStore, Message, MessageHit, MessageId, MessageQuery, Metadata,
    ObservationAddition, ObservationDeletion, Operation, PendingWrite, PurgeReport, Relation,
    Result, RetentionPolicy, Rewind, Role, ScopeFilter, Session, SessionId, SessionInfo,
    SessionLabels, SessionPage, SessionPatch, SessionQuery, SessionStore, StoreOptions,
    StoredVector, ThreadId, ThreadInfo, TypedBytes, VectorKey, VectorStore, MAX_METADATA_DEPTH,
};
pub use agentmem_core::{vector, ModelIdentity};
/// The embedders ([`agentmem-embed`](agentmem_embed)): the local model and the HTTP client.
#[cfg(any(feature = "embed-local", feature = "embed-http"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "embed-local", feature = "embed-http"))))]
pub use agentmem_embed as embed;
/// Recall by meaning ([`agentmem-recall`](agentmem_recall)): hybrid search and the indexer.
#[cfg(feature = "recall")]
#[cfg_attr(docsrs, doc(cfg(feature = "recall")))]
pub use agentmem_recall as recall;
#[cfg(feature = "encryption")]
#[cfg_attr(docsrs, doc(cfg(feature = "encryption")))]
pub use open::{configured_key, key_from_file, open_with_key, open_with_key_file};
pub use open::{open, open_unguarded, registry, url_names_key};
#[cfg(feature = "recall")]
#[cfg_attr(docsrs, doc(cfg(feature = "recall")))]
pub use open_recall::{embedder, embedding_options, no_embedder, open_recall, recall_for};

/// The Swarms-style conversation engine: preload, write-through, compaction, auto-compression.
pub use agentmem_conversation as conversation;

/// File formats, both directions: Swarms agent folders (`MEMORY.md`), PraisonAI session JSON,
/// agentmem's own JSON lines, JSON and YAML exports.
pub use agentmem_formats as formats;

/// Moving memory between stores in code: migration with progress, session sync, export, import.
pub use agentmem_transfer as transfer;

/// The PraisonAI-style agent memory layer: history injection, auto-save, auto-memory, learning.
pub use agentmem_agent as agent;

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

/// rig's `ConversationMemory` over any agentmem store (feature `rig`).
#[cfg(feature = "rig")]
#[cfg_attr(docsrs, doc(cfg(feature = "rig")))]
pub use agentmem_rig as rig;

/// Encryption at rest: a layer any store can wear, and key rotation (feature `encryption`).
#[cfg(feature = "encryption")]
#[cfg_attr(docsrs, doc(cfg(feature = "encryption")))]
pub use agentmem_crypt as crypt;
