// The crate documentation is the README (also shown on GitHub and crates.io). Its links point
// to docs.rs there; the definitions below come first, so rustdoc links to (and checks) the items.
//! [`AgentMemory`]: agentmem_core::AgentMemory
//! [`RedisStore`]: crate::RedisStore
//! [`RedisStore::connect_with`]: crate::RedisStore::connect_with
//! [`RedisStore::from_client`]: crate::RedisStore::from_client
//! [`RedisConfig`]: crate::RedisConfig
//! [`Layered`]: agentmem_core::Layered
//! [`Operation`]: agentmem_core::Operation
//! [`BackendConfig`]: agentmem_core::backend::BackendConfig
//! [`SCHEMA_VERSION`]: crate::SCHEMA_VERSION
#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod config;
mod conn;
mod error;
mod keys;
mod memories;
mod schema;
mod scripts;
mod search;
mod sessions;
mod store;

pub use config::{
    validate_prefix, RedisConfig, DEFAULT_CONNECT_TIMEOUT, DEFAULT_PREFIX,
    DEFAULT_RESPONSE_TIMEOUT, MAX_PREFIX_BYTES,
};
pub use schema::SCHEMA_VERSION;
pub use store::RedisStore;

/// The backend name: what `SessionStore::backend` reports and errors are labelled with.
pub(crate) const BACKEND: &str = "redis";
