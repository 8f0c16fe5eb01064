// The crate documentation is the README (also shown on GitHub and crates.io). Its links point
// to docs.rs there; the definitions below come first, so rustdoc links to (and checks) the items.
//! [`AgentMemory`]: agentmem_core::AgentMemory
//! [`MongoStore`]: crate::MongoStore
//! [`MongoStore::connect_with`]: crate::MongoStore::connect_with
//! [`MongoStore::from_client`]: crate::MongoStore::from_client
//! [`MongoStore::features`]: crate::MongoStore::features
//! [`MongoStore::from_client_with`]: crate::MongoStore::from_client_with
//! [`Layered`]: agentmem_core::Layered
//! [`Registry`]: agentmem_core::backend::Registry
//! [`MongoConfig`]: crate::MongoConfig
//! [`ServerFeatures`]: crate::ServerFeatures
//! [`SCHEMA_VERSION`]: crate::SCHEMA_VERSION
#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, clippy::unwrap_used)]

mod checkpoint_blobs;
mod checkpoint_codec;
mod checkpoints;
mod codec;
mod config;
mod error;
mod graph;
mod graph_codec;
mod lifecycle;
mod memories;
mod retry;
mod rewrite;
mod schema;
mod search;
mod sessions;
mod store;
mod transaction;
mod vectors;

pub use config::{
    validate_database_name, MongoConfig, DEFAULT_CONNECT_TIMEOUT, DEFAULT_DATABASE,
    DEFAULT_MAX_POOL_SIZE, DEFAULT_SERVER_SELECTION_TIMEOUT,
};
pub use schema::{ServerFeatures, SCHEMA_VERSION};
pub use store::MongoStore;

/// The driver crate, re-exported so callers of [`MongoStore::from_client`] use the same version.
pub use mongodb;
