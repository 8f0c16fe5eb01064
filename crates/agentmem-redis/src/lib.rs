//! Redis backend for agentmem: [`RedisMemory`], backend name `redis`.
//!
//! ```no_run
//! use agentmem_core::{AgentMemory, AgentMemoryExt, Message, SessionId};
//! use agentmem_redis::RedisMemory;
//!
//! # async fn demo() -> agentmem_core::Result<()> {
//! let store = RedisMemory::connect("redis://127.0.0.1:6379/0?prefix=my_app").await?;
//! let id: SessionId = "ResearchAgent".parse()?;
//! store.append_one(&id, Message::user("What is the p99 latency of GCP?")).await?;
//! let hits = store.search_messages("latency", &Default::default()).await?;
//! # Ok(()) }
//! ```
//!
//! # Data layout, and why
//!
//! Every key starts with the store's prefix (`?prefix=`, default `agentmem`), and is built
//! only from it and validated names (see [`agentmem_core::name`]); nothing is ever found by
//! `KEYS` or `SCAN`. The full key table is in the crate README.
//!
//! - **Messages are a list per session** (`{prefix}:s:{session}:msgs`), one JSON document per
//!   message, stored byte for byte as `serde_json` writes [`agentmem_core::Message`]. A list
//!   appends in O(1) (`RPUSH`), reads the last N without touching the rest
//!   (`LRANGE -N -1`, O(N)), counts in O(1) (`LLEN`), and compaction turns it into an archive
//!   with one O(1) `RENAME`. A stream would also append and read the tail cheaply, but it
//!   adds an entry id and a field map per message, cannot be renamed into an archive more
//!   cheaply than a list, and its ids are no use here: agentmem's messages carry their own.
//! - **Every write that touches several keys is one Lua script** (`src/lua/`): append (one
//!   message or a batch, one round trip either way, all-or-nothing), save_session, compact,
//!   delete, purge, put_memory. Redis runs scripts one at a time, so each is atomic, and an
//!   append racing with a compaction lands wholly before it (in the archive) or after it.
//!   Reads of several keys are one `MULTI`/`EXEC` or one read-only script.
//! - **Search keeps its own inverted index in Redis** (stock Redis has no RediSearch). The
//!   client tokenizes each message with agentmem-core's tokenizer; the append script adds,
//!   for every distinct word `w`, a posting `position:frequency:length,` to the string
//!   `{prefix}:s:{session}:t:{w}` (APPEND), the word to the session's term set, and the
//!   session to `{prefix}:ix:{w}`. Search runs Okapi BM25 in a script, with agentmem-core's
//!   constants and formula (scores are equal to [`agentmem_core::search::rank`]'s), and
//!   returns only the best `limit` messages. **Cost per append:** one `APPEND` of a few
//!   bytes and one `SADD` per distinct word of the message, one `SADD` of all its words, and
//!   ten fixed commands (list, session meta, counters), all inside the one script; a batch
//!   pays the per-word commands once per distinct word of the whole batch. Memory: about
//!   10 bytes per (message, distinct word).
//!   Compaction, save_session, delete and purge drop the session's postings in the same
//!   script that drops its messages, so a search never returns a message that is gone.
//!   Postings are append-only strings because messages only ever leave a session all at
//!   once.
//! - **Memory items** live in one hash (`{prefix}:mem:items`, id → JSON), because their ids
//!   are free text and must not become key names; indexes map (kind, key) to id, kind to ids,
//!   and words to ids, the same way as for messages.
//! - **Retention** (C9) reads `{prefix}:sessions`, a sorted set of session ids by last write,
//!   so purging by age or count finds its victims in O(log n). Redis' own key expiry is not
//!   used: an expired session would leave its entries in the search index and the counters
//!   behind, silently wrong, and the policy is given per purge rather than per write.
//! - **Schema version** in `{prefix}:schema`; see [`SCHEMA_VERSION`].
//!
//! Scripts build the keys they touch, so the store needs a standalone Redis (or one shard),
//! not Redis Cluster.
//!
//! # Failures
//!
//! Connection refused, reset or timed out → [`ErrorKind::Unavailable`](agentmem_core::ErrorKind::Unavailable),
//! promptly (see [`RedisConfig`] for the timeouts); the store reconnects by itself when the
//! server is back. Stored JSON that does not parse → `CorruptData`. Anything else → `Backend`.
#![forbid(unsafe_code)]

mod config;
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
pub use store::RedisMemory;
