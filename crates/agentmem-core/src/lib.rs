// The crate documentation is the README (also shown on GitHub and crates.io). Its links point
// to docs.rs there; the definitions below come first, so rustdoc links to (and checks) the items.
//! [`AgentMemory`]: crate::AgentMemory
//! [`AgentMemoryExt`]: crate::AgentMemoryExt
//! [`InMemory`]: crate::InMemory
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
//! [`name`]: crate::name
//! [`history`]: crate::history
//! [`search`]: crate::search
//! [`layer`]: crate::layer
//! [`layer::layered`]: crate::layer::layered
//! [`layer::open_layered`]: crate::layer::open_layered
//! [`Layered`]: crate::Layered
//! [`backend`]: crate::backend
//! [`Operation`]: crate::Operation
//! [`redact_url`]: crate::redact_url
#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

pub mod backend;
pub mod error;
pub mod ext;
pub mod history;
pub mod in_memory;
pub mod layer;
pub mod model;
pub mod name;
mod operation;
pub mod redact;
pub mod search;
pub mod store;

pub use error::{Error, ErrorKind, Result};
pub use ext::AgentMemoryExt;
pub use in_memory::InMemory;
pub use layer::Layered;
pub use model::{
    now, Archive, ArchiveId, ArchiveInfo, MemoryItem, MemoryKind, Message, Metadata, Role, Session,
    SessionInfo,
};
pub use name::{AgentName, SessionId};
pub use operation::Operation;
pub use redact::redact_url;
pub use store::{
    AgentMemory, Capabilities, MemoryFilter, MemoryHit, MessageHit, MessageQuery, PurgeReport,
    RetentionPolicy,
};

/// Re-exported so backends and users implement [`AgentMemory`] with the same macro version.
pub use async_trait::async_trait;
