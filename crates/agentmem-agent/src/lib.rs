// The crate documentation is the README (also shown on GitHub and crates.io). Its links point
// to docs.rs there; the definitions below come first, so rustdoc links to (and checks) the items.
//! [`agentmem-workspace`]: agentmem_workspace
//! [`Agent`]: crate::Agent
//! [`Agent::new`]: crate::Agent::new
//! [`Agent::from_config`]: crate::Agent::from_config
//! [`Agent::store_memory`]: crate::Agent::store_memory
//! [`Agent::with_context_store`]: crate::Agent::with_context_store
//! [`AgentConfig`]: crate::AgentConfig
//! [`AgentConfig::preset`]: crate::AgentConfig::preset
//! [`StoreSpec`]: crate::StoreSpec
//! [`agentmem_home`]: crate::agentmem_home
//! [`auto_memory`]: crate::auto_memory
//! [`learning`]: crate::learning
//! [`AgentMemory`]: agentmem_core::AgentMemory
//! [`ContextStore`]: agentmem_core::ContextStore
//! [`Registry`]: agentmem_core::backend::Registry
#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, clippy::unwrap_used)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod agent;
pub mod auto_memory;
mod backend;
mod config;
mod context;
mod home;
pub mod learning;
mod protocol;
mod text;

pub use agent::{Agent, TurnReport};
pub use backend::Backend;
pub use config::{AgentConfig, StoreSpec, DEFAULT_HISTORY_LIMIT, DEFAULT_SHORT_TERM_TTL};
pub use context::TurnContext;
pub use home::{agentmem_home, HOME_ENV};
