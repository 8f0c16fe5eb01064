// The crate documentation is the README (also shown on GitHub and crates.io). Its links point
// to docs.rs there; the definitions below come first, so rustdoc links to (and checks) the items.
//! [`AgentMemory`]: crate::AgentMemory
//! [`AgentMemoryExt`]: crate::AgentMemoryExt
//! [`SessionStore`]: crate::SessionStore
//! [`MemoryStore`]: crate::MemoryStore
//! [`InMemoryStore`]: crate::InMemoryStore
//! [`Message`]: crate::Message
//! [`Role`]: crate::Role
//! [`Session`]: crate::Session
//! [`SessionInfo`]: crate::SessionInfo
//! [`Archive`]: crate::Archive
//! [`ArchiveInfo`]: crate::ArchiveInfo
//! [`MemoryItem`]: crate::MemoryItem
//! [`MemoryKind`]: crate::MemoryKind
//! [`SessionId`]: crate::SessionId
//! [`AgentName`]: crate::AgentName
//! [`Error`]: crate::Error
//! [`ErrorKind`]: crate::ErrorKind
//! [`Result`]: crate::Result
//! [`history`]: crate::history
//! [`search`]: crate::search
//! [`layer`]: crate::layer
//! [`layer::layered`]: crate::layer::layered
//! [`layer::open_layered`]: crate::layer::open_layered
//! [`Layered`]: crate::Layered
//! [`backend`]: crate::backend
//! [`Operation`]: crate::Operation
//! [`redact_url`]: crate::redact_url
//! [`validate_name`]: crate::validate_name
#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, clippy::unwrap_used)]

pub mod backend;
pub mod checkpoint;
mod context;
mod embed;
mod error;
mod ext;
pub mod graph;
pub mod history;
mod in_memory;
pub mod layer;
pub mod lifecycle;
mod model;
mod name;
// Public only for the `name_enum!` macro's expansion in other crates.
#[doc(hidden)]
pub mod name_enum;
mod operation;
mod property;
mod redact;
mod rfc3339;
mod scope;
pub mod search;
mod setters;
mod store;
mod store_options;
pub mod support;
pub mod transport;
pub mod vector;

pub use checkpoint::{
    ChannelBlob, Checkpoint, CheckpointKey, CheckpointPrune, CheckpointQuery, CheckpointTuple,
    PendingWrite, ThreadInfo, TypedBytes,
};
pub use context::ContextStore;
pub use embed::Embedder;
pub use error::{one_line, BoxError, Error, ErrorKind, Result};
pub use ext::AgentMemoryExt;
pub use graph::{
    AddedObservations, Entity, GraphQuery, GraphState, KnowledgeGraph, ObservationAddition,
    ObservationDeletion, Relation,
};
pub use in_memory::InMemoryStore;
pub use lifecycle::{Rewind, SessionLabels, SessionPage, SessionPatch, SessionQuery};
pub use model::{
    new_id, now, Archive, ArchiveInfo, MemoryItem, MemoryKind, Message, Metadata, Role, Session,
    SessionInfo, MAX_METADATA_DEPTH,
};
pub use name::{
    validate_name, AgentName, ArchiveId, CheckpointId, CheckpointNs, MemoryId, MessageId,
    SessionId, ThreadId, MAX_NAME_BYTES, MAX_THREAD_KEY_BYTES,
};
pub use operation::Operation;
pub use property::{
    check_property_name, check_property_value, PropertyChange, MAX_PROPERTY_NAME_BYTES,
    MAX_PROPERTY_VALUE_BYTES,
};
pub use redact::{password_is_ambiguous, redact_secrets_in, redact_url, SECRET_OPTIONS};
pub use scope::{MemoryScope, ScopeFilter};
pub use store::{
    AgentMemory, Capabilities, CheckpointStore, GraphStore, MemoryFilter, MemoryHit, MemoryStore,
    MessageHit, MessageQuery, PurgeReport, RetentionPolicy, SessionStore, VectorStore,
};
pub use store_options::{
    check_options_unique, parse_duration, EmbedderChoice, EmbeddingOptions, KeyLocation,
    StoreOptions,
};
pub use vector::{ModelIdentity, StoredVector, VectorKey};

/// A store wearing the standard layer stack (see [`layer`]): what every backend's
/// constructors return. Dereferences to the raw store `S`.
pub type Layered<S> = layer::Traced<layer::Validated<S>>;

/// Re-exported so backends and users implement [`AgentMemory`] with the same macro version.
pub use async_trait::async_trait;
