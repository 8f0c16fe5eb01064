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
#![warn(missing_docs, clippy::unwrap_used)]

use agentmem_core::backend::BackendInfo;
use agentmem_core::Capabilities;
mod checkpoint_codec;
mod checkpoints;
mod config;
mod conn;
mod error;
mod graph;
mod keys;
mod memories;
mod reindex;
mod schema;
mod scripts;
mod search;
mod sessions;
mod store;
mod vectors;

/// Reads of raw keys, shared with the integration tests' `common`.
#[cfg(test)]
#[path = "../tests/common/raw.rs"]
mod test_raw;

pub use config::{
    validate_prefix, RedisConfig, DEFAULT_CONNECT_TIMEOUT, DEFAULT_PREFIX,
    DEFAULT_RESPONSE_TIMEOUT, MAX_PREFIX_BYTES,
};
pub use schema::SCHEMA_VERSION;
pub use store::RedisStore;

/// The Redis backend: every capability but durability guarantees, which are the server's
/// persistence configuration, not the store's. Not `durable`: an acknowledged write is in the
/// server's memory, and whether it survives a server crash depends on persistence settings
/// (AOF with `appendfsync always`) this store does not control. `native_expiry`: every key of an expiring session but its terms sets carries its
/// expiry (`PEXPIREAT`); what that leaves (terms sets, store-wide keys) is cleared by the
/// next writes and purges, or lazily by reads (see the README).
pub(crate) const INFO: BackendInfo = BackendInfo::new("redis")
    .schemes(&["redis", "rediss", "redis+cluster", "rediss+cluster"])
    .db_system("redis")
    .remote()
    .capabilities(Capabilities::all().durable(false));

/// The backend name: what `SessionStore::backend` reports and errors are labelled with.
pub(crate) const BACKEND: &str = INFO.name;
