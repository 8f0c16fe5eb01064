// The crate documentation is the README (also shown on GitHub and crates.io). Its links point
// to docs.rs there; the definitions below come first, so rustdoc links to (and checks) the items.
//! [`AgentMemory`]: agentmem_core::AgentMemory
//! [`PostgresStore`]: crate::PostgresStore
//! [`PostgresStore::connect`]: crate::PostgresStore::connect
//! [`PostgresStore::connect_with`]: crate::PostgresStore::connect_with
//! [`PostgresStore::from_client`]: crate::PostgresStore::from_client
//! [`drop_schema`]: crate::PostgresStore::drop_schema
//! [`PostgresConfig`]: crate::PostgresConfig
//! [`SCHEMA_VERSION`]: crate::SCHEMA_VERSION
#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, clippy::unwrap_used)]

/// Runs `$body` (a future returning `Result<_, tokio_postgres::Error>`) with a pooled
/// connection bound to `$client`, retrying up to `$retries` times on a fresh connection when
/// the connection (not the statement) failed. A connection that failed is removed from the
/// pool rather than handed out again. Evaluates to `agentmem_core::Result<_>`.
///
/// Only reads pass `$retries > 0`: a write whose connection died may or may not have
/// committed, so it is reported as `Unavailable` instead of being repeated.
macro_rules! run {
    ($self:expr, $retries:expr, |$client:ident| $body:expr) => {{
        let retries: u32 = $retries;
        let mut attempt = 0u32;
        loop {
            #[allow(unused_mut, reason = "only some bodies take the client mutably")]
            let mut $client = $self.client().await?;
            let result = $crate::store::pg_future($body).await;
            match result {
                Ok(value) => break Ok(value),
                Err(e) => {
                    let broken = $crate::error::is_connection_failure(&e);
                    if broken {
                        $crate::store::discard($client);
                        if attempt < retries {
                            attempt += 1;
                            tracing::debug!(error = %e, "agentmem-postgres: retrying a read on a fresh connection");
                            continue;
                        }
                    }
                    break Err($crate::error::pg(e));
                }
            }
        }
    }};
}

mod archives;
mod checkpoint_rows;
mod checkpoints;
mod codec;
pub mod config;
mod error;
mod graph;
mod lifecycle;
mod memories;
mod retention;
pub mod schema;
mod search;
mod sessions;
mod sql;
mod statements;
mod store;
mod tls;
mod vectors;

pub use config::{PostgresConfig, PreparedStatements, SslMode};
pub use schema::SCHEMA_VERSION;
pub use store::PostgresStore;

/// Re-exported so callers can build a pool for [`PostgresStore::from_client`] with the same
/// versions this crate uses.
pub use deadpool_postgres;
pub use tokio_postgres;
