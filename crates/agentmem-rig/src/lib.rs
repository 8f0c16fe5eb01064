#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, clippy::unwrap_used)]

pub mod convert;
#[cfg(feature = "recall")]
mod index;
mod memory;

pub use convert::{from_rig, to_rig, RIG_METADATA_KEY};
#[cfg(feature = "recall")]
pub use index::AgentmemIndex;
pub use memory::{agentmem_error, AgentmemConversationMemory};

/// The rig crate this adapter is built against, re-exported so users name the same version.
pub use rig_core;

#[cfg(feature = "testing")]
pub mod cases;
