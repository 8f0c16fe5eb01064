//! PostgreSQL backend for agentmem: [`PostgresMemory`] implements
//! [`AgentMemory`](agentmem_core::AgentMemory) on tokio-postgres with a deadpool connection
//! pool.
//!
//! - Each store lives in its own schema (`?schema=NAME`, default `agentmem`), so tenants and
//!   tests never see each other's data; tables are created and migrated forward on open (C8).
//! - An append is one statement and one round trip, however many messages it carries; the
//!   session row's lock orders concurrent writers exactly (C2, C10).
//! - Reading the last N messages is an index range scan on `(session_id, seq)`.
//! - Compaction and `save_session` are single transactions (A6).
//! - Search is ranked full-text search on a GIN-indexed `tsvector` with `ts_rank` (A10).
//! - Connections are plain TCP or Unix sockets without TLS (`NoTls`).
//!
//! ```no_run
//! use agentmem_core::{AgentMemoryExt, Message, SessionId};
//! use agentmem_postgres::PostgresMemory;
//!
//! # async fn demo() -> agentmem_core::Result<()> {
//! let store = PostgresMemory::connect("postgres://postgres@127.0.0.1:5432/test?schema=demo").await?;
//! let session: SessionId = "ResearchAgent".parse()?;
//! store.append_one(&session, Message::user("Compare BigQuery and AlloyDB")).await?;
//! let last = store.last_messages(&session, 20).await?;
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]

/// Runs `$body` (a future returning `Result<_, tokio_postgres::Error>`) with a pooled
/// connection bound to `$client`, retrying up to `$retries` times on a fresh connection when
/// the connection (not the statement) failed. A connection that failed is removed from the
/// pool rather than handed out again. Evaluates to `agentmem_core::Result<_>`.
///
/// Only reads pass `$retries > 0`: a write whose connection died may or may not have
/// committed, so it is reported as `Unavailable` instead of being repeated.
macro_rules! run {
    ($self:expr, $op:expr, $retries:expr, |$client:ident| $body:expr) => {{
        let retries: u32 = $retries;
        let mut attempt = 0u32;
        loop {
            #[allow(unused_mut)]
            let mut $client = $self.client($op).await?;
            let result = $crate::store::pg_future($body).await;
            match result {
                Ok(value) => break Ok(value),
                Err(e) => {
                    let broken = $crate::error::is_connection_failure(&e);
                    if broken {
                        $crate::store::discard($client);
                        if attempt < retries {
                            attempt += 1;
                            tracing::debug!(operation = $op, error = %e, "agentmem-postgres: retrying a read on a fresh connection");
                            continue;
                        }
                    }
                    break Err($crate::error::pg($op, e));
                }
            }
        }
    }};
}

mod archives;
mod codec;
pub mod config;
mod error;
mod memories;
mod retention;
pub mod schema;
mod search;
mod sessions;
mod sql;
mod store;

pub use config::PostgresConfig;
pub use schema::SCHEMA_VERSION;
pub use store::PostgresMemory;

/// Re-exported so callers can build a pool for [`PostgresMemory::from_pool`] with the same
/// versions this crate uses.
pub use deadpool_postgres;
pub use tokio_postgres;
