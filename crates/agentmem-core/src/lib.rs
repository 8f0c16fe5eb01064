//! Core of agentmem: the data model, the [`AgentMemory`] trait every backend implements,
//! the one [`Error`] type, name validation, and shared algorithms (history windows, ranking,
//! the Swarms `MEMORY.md` format).
//!
//! Backends live in their own crates (`agentmem-file`, `agentmem-sqlite`, …) and are chosen
//! through the `agentmem` facade's cargo features. A new backend implements [`AgentMemory`]
//! and runs the `agentmem-testkit` conformance suite.
//!
//! ```
//! use std::sync::Arc;
//! use agentmem_core::{AgentMemory, AgentMemoryExt, InMemory, Message, SessionId};
//!
//! # tokio_test_block_on(async {
//! let store: Arc<dyn AgentMemory> = Arc::new(InMemory::new());
//! let session: SessionId = "ResearchAgent".parse()?;
//! store.append_one(&session, Message::user("Compare BigQuery and AlloyDB")).await?;
//! assert_eq!(store.messages(&session).await?.len(), 1);
//! # Ok::<(), agentmem_core::Error>(())
//! # });
//! # fn tokio_test_block_on<F: std::future::Future>(f: F) -> F::Output {
//! #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
//! # }
//! ```
#![forbid(unsafe_code)]

pub mod error;
pub mod ext;
pub mod format;
pub mod history;
pub mod in_memory;
pub mod model;
pub mod name;
pub mod redact;
pub mod search;
pub mod store;
pub mod trace;

pub use error::{Error, ErrorKind, Result};
pub use ext::AgentMemoryExt;
pub use in_memory::InMemory;
pub use model::{
    now, Archive, ArchiveId, ArchiveInfo, MemoryItem, MemoryKind, Message, Metadata, Role, Session,
    SessionInfo,
};
pub use name::{AgentName, SessionId};
pub use redact::redact_url;
pub use store::{
    AgentMemory, Capabilities, MemoryFilter, MemoryHit, MessageHit, MessageQuery, PurgeReport,
    RetentionPolicy,
};

/// Re-exported so backends and users implement [`AgentMemory`] with the same macro version.
pub use async_trait::async_trait;
