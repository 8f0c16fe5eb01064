//! MongoDB backend for agentmem: [`MongoMemory`] implements
//! [`AgentMemory`](agentmem_core::AgentMemory) on one MongoDB database (backend `"mongodb"`).
//!
//! ```no_run
//! # async fn demo() -> agentmem_core::Result<()> {
//! use agentmem_mongodb::MongoMemory;
//! let store = MongoMemory::connect("mongodb://127.0.0.1:27017/agentmem?directConnection=true").await?;
//! # Ok(()) }
//! ```
//!
//! # Data model
//!
//! One database per store (from the URL path, default `agentmem`), with collections:
//!
//! | collection | one document per | key |
//! |---|---|---|
//! | `meta` | the schema version (`{_id: "schema", version}`) | `_id` |
//! | `sessions` | session, written by appends: `epoch`, `next`, `created`, `updated` | `_id` = session id |
//! | `heads` | session epoch, written by saves and compactions: `low`, `metadata`, `archives` | `_id` = epoch |
//! | `messages` | current message | unique `(session, epoch, seq)` |
//! | `archived_messages` | archived message | unique `(session, epoch, archive, pos)` |
//! | `memories` | memory item | `_id` = item id; unique sparse `kind_key` |
//!
//! Timestamps are `i64` microseconds (BSON dates keep only milliseconds). Metadata is stored
//! as one JSON string, so caller keys such as `$where` or `a.b` are never field names the
//! server could read as operators or paths, and every value round-trips exactly.
//!
//! # Ordering and round trips
//!
//! An append is two round trips:
//! 1. `findAndModify` on the session document with `$inc: {next: n}` reserves `n`
//!    consecutive positions; the server applies it atomically, so concurrent writers, in any
//!    number of processes, get disjoint ranges in the order they reached the server (the
//!    first write to a new session also inserts its document: two more round trips, once);
//! 2. one `insert` of the `n` messages at those positions (`insert_many`).
//!
//! The issue asked for one round trip "or an equivalent"; this is the equivalent, because
//! MongoDB has no single write that both allocates a per-session sequence number and inserts
//! another document under it. The alternatives were worse: pushing messages into an array in
//! the session document is one round trip but caps a session at 16 MB and rewrites a growing
//! document; ordering by `ObjectId` or time is one round trip but not exact across processes.
//! Batches pay the same two round trips however large. Last-N loads read the range
//! `seq >= next - n` on the `(session, epoch, seq)` index (falling back to
//! `sort({seq: -1}).limit(n)` on the same index when gaps leave it short), then
//! [`trim_orphans`](agentmem_core::history::trim_orphans); the session's total is a count on
//! that index.
//!
//! The price: between the two steps of an append, a reader may already see a later append
//! that overtook it; the earlier one then appears before it once written. Final order is
//! always reservation order, and nothing acknowledged is lost. On servers with transactions
//! a batch of more than one message is inserted in a transaction (all-or-nothing, one more
//! round trip for the commit); without transactions a batch whose insert fails midway may be
//! partly present.
//!
//! # Compaction, `save_session` and transactions
//!
//! Support for multi-document transactions is detected once, on open, from `hello` (a replica
//! set or a sharded cluster; SecantusDB reports one). See [`ServerFeatures`].
//!
//! - **With transactions** (`atomic_compaction` is true): compaction reads the current
//!   messages from the transaction's snapshot, archives exactly those, deletes exactly those,
//!   inserts the replacement at positions *below* the epoch's `low`, and records the archive in
//!   the epoch's head document, all in one transaction. It writes no document that appends
//!   write (appends touch only `sessions` and new message keys), so appends never wait for it
//!   and it never blocks them; an append that raced with it lands after the replacement,
//!   never inside the archive. Readers see the old state or the new one, and no append is
//!   lost. Two compactions of one session conflict on the head, and one retries.
//!   `save_session` works the same way.
//! - **Without transactions** (a standalone server, nx-27017): compaction and `save_session`
//!   write the new messages under a fresh `epoch`, invisible to readers, then switch the
//!   session to it with one conditional single-document update (atomic on every server), then
//!   delete the old epoch's messages. Readers never see a mix (a load re-reads the epoch
//!   afterwards and retries if it changed) and a crash leaves only invisible garbage. Compaction's switch applies only if no append reserved a position
//!   meanwhile (else it undoes and retries), and it waits up to two seconds for appends that
//!   reserved but have not written yet, so racing appends are archived rather than lost —
//!   unless such an append never completes. `save_session` replaces the whole session, so an
//!   append racing with it on such a server may be dropped.
//!
//! # Search
//!
//! Text indexes are tried once on open; a server that refuses them (error 67) gets the
//! client-side BM25 fallback. See the `search` module docs for both paths;
//! `indexed_search` in the capabilities says which is in use.
//!
//! # Schema and retention
//!
//! The schema version lives in `meta`; opening a database migrates it forward step by step
//! and refuses (`Unsupported`) a version newer than [`SCHEMA_VERSION`]. Retention runs as
//! purge queries on the `updated` index: a TTL index cannot expire a session, whose documents
//! would all need their expiry moved on every append.
//!
//! # Errors
//!
//! Server selection timeouts and connection failures are `Unavailable` (after 5 s unless the
//! URL sets `serverSelectionTimeoutMS`), duplicate keys (11000) `Conflict`, malformed stored
//! documents `CorruptData`, anything else `Backend`; the driver error is kept as the source.
#![forbid(unsafe_code)]

mod codec;
mod config;
mod error;
mod memories;
mod rewrite;
mod schema;
mod search;
mod sessions;
mod store;

pub use config::{
    validate_database_name, MongoConfig, DEFAULT_CONNECT_TIMEOUT, DEFAULT_DATABASE,
    DEFAULT_MAX_POOL_SIZE, DEFAULT_SERVER_SELECTION_TIMEOUT,
};
pub use schema::{ServerFeatures, SCHEMA_VERSION};
pub use store::MongoMemory;

/// The driver crate, re-exported so callers of [`MongoMemory::from_client`] use the same version.
pub use mongodb;
