//! [`RedisStore`]: the connection, its timeouts and retry rule, and the [`AgentMemory`]
//! operations: each builds a script invocation (or a pipeline), runs it, and reads the reply
//! with the helpers of `sessions.rs` and `memories.rs`.

use agentmem_core::backend::BackendInfo;
use std::fmt;
use std::future::Future;
use std::time::Duration;

use agentmem_core::layer;
use agentmem_core::lifecycle::MAX_TAGS;
use agentmem_core::support::{
    archive_id_base, archive_not_found, fork_target_exists, memory_retention_cutoff,
    memory_search_limit, message_not_found, micros, parse_micros, retention_cutoff, search_terms,
};
use agentmem_core::Layered;
use agentmem_core::{
    async_trait, now, Archive, ArchiveId, ArchiveInfo, Error, MemoryFilter, MemoryHit, MemoryId,
    MemoryItem, MemoryStore, Message, MessageHit, MessageId, MessageQuery, Metadata,
    PropertyChange, PurgeReport, Result, RetentionPolicy, Rewind, Session, SessionId, SessionInfo,
    SessionPage, SessionPatch, SessionQuery, SessionStore,
};
use redis::aio::ConnectionManager;
use redis::{FromRedisValue, Pipeline, RedisResult, Script, ScriptInvocation};

use crate::config::{
    validate_prefix, RedisConfig, DEFAULT_CONNECT_TIMEOUT, DEFAULT_RESPONSE_TIMEOUT,
};
use crate::conn::{self, Conn, CLUSTER_RETRIES, CONNECT_RETRIES};
use crate::error::{encode_json, from_redis};
use crate::keys::Keys;
use crate::memories::{
    items_from, list_items, memory_hits, micros_up, parse_item, purge_items, put_item, rebase,
    search_items, MAX_REBASES,
};
use crate::schema::{self, Limits, MIGRATIONS, SCHEMA_VERSION};
use crate::scripts::Scripts;
use crate::search::index_entry;
use crate::sessions::{
    archive_from, archive_infos, compacted, id_prefix, info_from, info_from_value, message_hits,
    parse_messages, session_from, session_infos, window, write_messages, InfoRow, LoadReply,
    LOAD_FIELDS, PURGE_BATCH,
};
use crate::INFO;

/// An [`AgentMemory`](agentmem_core::AgentMemory) on Redis (backend name `redis`).
///
/// Cheap to clone: clones share one multiplexed, reconnecting connection
/// (`redis::aio::ConnectionManager`, or on a Redis Cluster redis-rs' `ClusterConnection`,
/// which follows the slot map). While the server is down every operation fails
/// promptly with [`ErrorKind::Unavailable`](agentmem_core::ErrorKind::Unavailable); once it
/// is back, the same store works again without being reopened.
///
/// Its constructors ([`connect`](Self::connect), [`connect_with`](Self::connect_with),
/// [`from_client`](Self::from_client)) return it wearing the standard layer stack,
/// [`Layered<RedisStore>`](agentmem_core::Layered): validation, the `agentmem.op` span and
/// error labels. The layered store dereferences to this one, so [`prefix`](Self::prefix)
/// works on it too.
///
/// ```no_run
/// use agentmem_core::{AgentMemory, MemoryStore, SessionStore, AgentMemoryExt, Message, SessionId};
/// use agentmem_redis::RedisStore;
///
/// # async fn demo() -> agentmem_core::Result<()> {
/// let store = RedisStore::connect("redis://127.0.0.1:6379/?prefix=my_app").await?;
/// let session: SessionId = "ResearchAgent".parse()?;
/// store.append_one(&session, Message::user("Compare BigQuery and AlloyDB")).await?;
/// let last = store.last_messages(&session, 20).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisStore {
    pub(crate) conn: Conn,
    pub(crate) keys: Keys,
    pub(crate) scripts: std::sync::Arc<Scripts>,
    /// The longest any one operation may take, whatever the server does.
    deadline: Duration,
    /// `host:port` of the server (of each seed node, comma-separated, for a cluster), for
    /// `Debug` (never the password).
    server: String,
}

impl RedisStore {
    /// Connects to the server named by `url` (see [`RedisConfig`] for the form and options),
    /// checks or creates the schema under the prefix, and migrates it forward if needed.
    /// The store wears the standard [layers](agentmem_core::layer).
    ///
    /// A `redis+cluster://` or `rediss+cluster://` URL connects to a Redis Cluster through
    /// its seed nodes; the store's keys are then hash-tagged (`{prefix}:…`) into one slot.
    ///
    /// Fails with [`ErrorKind::Unavailable`](agentmem_core::ErrorKind::Unavailable) when the
    /// server cannot be reached or its TLS certificate is refused,
    /// [`ErrorKind::InvalidInput`](agentmem_core::ErrorKind::InvalidInput) for a malformed URL
    /// or an unusable `tls_ca`, `tls_cert` or `tls_key` file, and
    /// [`ErrorKind::Unsupported`](agentmem_core::ErrorKind::Unsupported) for a TLS URL without
    /// the `tls` feature or data of a newer schema.
    pub async fn connect(url: &str) -> Result<Layered<Self>> {
        Self::connect_with(url.parse()?).await
    }

    /// Connects with a parsed configuration (see [`connect`](Self::connect)).
    pub async fn connect_with(config: RedisConfig) -> Result<Layered<Self>> {
        layer::open_layered(&INFO, async move {
            let (connect, response) = (config.connect_timeout(), config.response_timeout());
            if config.is_cluster() {
                let deadline = conn::deadline(connect, response, CLUSTER_RETRIES);
                let cluster = tokio::time::timeout(deadline, conn::cluster_connection(&config))
                    .await
                    .map_err(|_| timed_out(deadline))??;
                let server = config.nodes().join(",");
                let keys = Keys::new(config.prefix(), true);
                Self::open(Conn::Cluster(cluster), keys, server, deadline).await
            } else {
                let client = conn::single_client(&config).await?;
                Self::open_single(client, config.prefix(), connect, response).await
            }
        })
        .await
    }

    /// Uses an existing redis-rs client (for settings [`RedisConfig`] does not cover) with
    /// the default timeouts, keeping every key under `prefix` (validated like the URL's).
    /// Connects and checks the schema as [`connect`](Self::connect) does.
    ///
    /// ```no_run
    /// use agentmem_core::{AgentMemoryExt, Message, SessionId};
    /// use agentmem_redis::RedisStore;
    ///
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// // A Unix socket, which a `redis://` URL cannot name.
    /// let client = redis::Client::open("redis+unix:///run/redis/redis.sock")?;
    /// let store = RedisStore::from_client(client, "my_app").await?;
    /// let session: SessionId = "ResearchAgent".parse()?;
    /// store.append_one(&session, Message::user("Compare BigQuery and AlloyDB")).await?;
    /// # Ok(()) }
    /// ```
    pub async fn from_client(client: redis::Client, prefix: &str) -> Result<Layered<Self>> {
        // Connecting is part of this constructor too, so it runs in the `open` span as
        // `connect_with` does (`open_layered` wraps the store with `layer::layered`).
        layer::open_layered(&INFO, async move {
            validate_prefix(prefix)?;
            Self::open_single(
                client,
                prefix,
                DEFAULT_CONNECT_TIMEOUT,
                DEFAULT_RESPONSE_TIMEOUT,
            )
            .await
        })
        .await
    }

    /// Connects to one server and checks the schema: the raw store, without layers.
    async fn open_single(
        client: redis::Client, prefix: &str, connect_timeout: Duration, response_timeout: Duration,
    ) -> Result<Self> {
        let server = client.get_connection_info().addr().to_string();
        let manager_config = conn::manager_config(connect_timeout, response_timeout);
        // Covers every attempt and backoff the manager makes, plus one reply, plus slack:
        // an operation never waits longer than this, even if the server stops answering.
        let deadline = conn::deadline(connect_timeout, response_timeout, CONNECT_RETRIES);
        let manager = tokio::time::timeout(
            deadline,
            ConnectionManager::new_with_config(client, manager_config),
        )
        .await
        .map_err(|_| timed_out(deadline))?
        .map_err(from_redis)?;
        let keys = Keys::new(prefix, false);
        Self::open(Conn::Single(manager), keys, server, deadline).await
    }

    /// Checks or creates the schema over an open connection: the raw store, without layers.
    async fn open(conn: Conn, keys: Keys, server: String, deadline: Duration) -> Result<Self> {
        // Each exchange is bounded, not the whole: a migration may take long.
        let limits = Limits::new(deadline);
        schema::ensure(&conn, &keys, SCHEMA_VERSION, MIGRATIONS, limits).await?;
        Ok(RedisStore {
            conn,
            keys,
            scripts: std::sync::Arc::new(Scripts::new()),
            deadline,
            server,
        })
    }

    /// Whether the store is on a Redis Cluster (its keys then start with `{prefix}`).
    pub fn is_cluster(&self) -> bool {
        matches!(self.conn, Conn::Cluster(_))
    }

    /// The key prefix of this store.
    pub fn prefix(&self) -> &str {
        self.keys.prefix()
    }

    /// Runs one Redis exchange under the deadline, mapping errors.
    ///
    /// A refused connection means nothing was sent, so it is retried once even for writes:
    /// the failed attempt has already made the manager reconnect, and the server may be back
    /// (the first call after a restart otherwise reports the stale refusal). Any other
    /// failure is returned as it is: a write whose reply was lost may or may not have been
    /// applied, and only the caller can decide whether repeating it is right.
    pub(crate) async fn run<T, F, Fut>(&self, f: F) -> Result<T>
    where
        F: Fn(Conn) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        let mut retried = false;
        loop {
            match tokio::time::timeout(self.deadline, f(self.conn.clone())).await {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(e)) if e.is_connection_refusal() && !retried => retried = true,
                Ok(Err(e)) => return Err(from_redis(e)),
                Err(_) => return Err(timed_out(self.deadline)),
            }
        }
    }

    /// Runs one script invocation (see [`run`](Self::run)).
    pub(crate) async fn invoke<T: FromRedisValue>(&self, inv: &ScriptInvocation<'_>) -> Result<T> {
        self.run(|mut c: Conn| async move { inv.invoke_async(&mut c).await })
            .await
    }

    /// Runs one pipeline (see [`run`](Self::run)).
    async fn query<T: FromRedisValue>(&self, pipe: &Pipeline) -> Result<T> {
        self.run(|mut c: Conn| async move { pipe.query_async(&mut c).await })
            .await
    }

    /// Runs a delete script (`delete.lua`, `delete_memory.lua`) on the session or memory item
    /// `id`: whether it was there (the script answers 1).
    async fn delete_by_id(&self, script: &Script, id: &str) -> Result<bool> {
        let mut inv = self.keys.invoke(script);
        inv.arg(id);
        let deleted: i64 = self.invoke(&inv).await?;
        Ok(deleted == 1)
    }
}

/// Every row of a listing script's reply converted (the first that fails fails the listing),
/// sorted by `key`: the scripts list in the server's hash order.
pub(crate) fn sorted_rows<R, T, K: Ord + ?Sized>(
    rows: Vec<R>, convert: impl FnMut(R) -> Result<T>, key: impl Fn(&T) -> &K,
) -> Result<Vec<T>> {
    let mut out = rows.into_iter().map(convert).collect::<Result<Vec<_>>>()?;
    out.sort_by(|a, b| key(a).cmp(key(b)));
    Ok(out)
}

/// The status code a fork, rewind or update script puts first in its reply.
fn status(reply: &[redis::Value]) -> Result<i64> {
    match reply.first() {
        Some(redis::Value::Int(code)) => Ok(*code),
        _ => Err(Error::corrupt("unexpected reply from a session script")),
    }
}

/// The session summary a fork or update script puts second in its reply.
fn row(reply: Vec<redis::Value>) -> Result<redis::Value> {
    reply
        .into_iter()
        .nth(1)
        .ok_or_else(|| Error::corrupt("a session script's reply lacks the summary"))
}

fn not_found(session: &SessionId) -> Error {
    Error::not_found(format!("session `{session}` does not exist"))
}

/// The error of an exchange that outlasted `deadline`.
pub(crate) fn timed_out(deadline: Duration) -> Error {
    Error::unavailable(format!("Redis did not answer within {deadline:?}"))
}

impl fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStore")
            .field("server", &self.server)
            .field("prefix", &self.keys.prefix())
            .field("cluster", &self.is_cluster())
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl SessionStore for RedisStore {
    fn backend(&self) -> &'static BackendInfo {
        &INFO
    }

    async fn schema_version(&self) -> Result<u32> {
        // Re-checked rather than cached: a server restarted without persistence (or a
        // FLUSHDB) leaves an empty prefix, which is a new store of the current version.
        let limits = Limits::new(self.deadline);
        schema::ensure(&self.conn, &self.keys, SCHEMA_VERSION, MIGRATIONS, limits).await
    }

    async fn store_property(&self, name: &str) -> Result<Option<String>> {
        let key = self.keys.properties();
        self.run(|mut c: Conn| {
            let key = key.clone();
            async move {
                redis::cmd("HGET")
                    .arg(key)
                    .arg(name)
                    .query_async(&mut c)
                    .await
            }
        })
        .await
    }

    async fn set_store_property(&self, change: &PropertyChange<'_>) -> Result<bool> {
        let (name, expected, value) = (change.name, change.expected, change.value);
        let mut inv = self.keys.invoke(&self.scripts.set_property);
        inv.arg(name).arg(value);
        match expected {
            Some(expected) => inv.arg("1").arg(expected),
            None => inv.arg("0").arg(""),
        };
        let set: i64 = self.invoke(&inv).await?;
        Ok(set == 1)
    }

    async fn save_session(
        &self, session: &SessionId, history: &[Message], metadata: &Metadata,
    ) -> Result<()> {
        let metadata =
            serde_json::to_string(metadata).map_err(|e| encode_json("session metadata", e))?;
        let script = &self.scripts.save;
        let inv = write_messages(script, &self.keys, session, now(), &[&metadata], history)?;
        let _: i64 = self.invoke(&inv).await?;
        Ok(())
    }

    async fn append(&self, session: &SessionId, messages: &[Message]) -> Result<()> {
        let script = &self.scripts.append;
        let inv = write_messages(script, &self.keys, session, now(), &[], messages)?;
        let _len: i64 = self.invoke(&inv).await?;
        Ok(())
    }

    async fn load(&self, session: &SessionId, limit: Option<usize>) -> Result<Option<Session>> {
        let msgs = self.keys.messages(session);
        let (start, stop) = window(limit);
        let mut pipe = redis::pipe();
        // MULTI/EXEC: the count and the window come from the same state.
        pipe.atomic()
            .cmd("HMGET")
            .arg(self.keys.meta(session))
            .arg(&LOAD_FIELDS[..])
            .cmd("LLEN")
            .arg(&msgs)
            .cmd("LRANGE")
            .arg(&msgs)
            .arg(start)
            .arg(stop);
        let reply: LoadReply = self.query(&pipe).await?;
        session_from(session, reply, now())
    }

    async fn list_sessions(&self) -> Result<Vec<SessionInfo>> {
        let mut inv = self.keys.invoke(&self.scripts.list_sessions);
        inv.arg(micros(now()));
        session_infos(self.invoke(&inv).await?)
    }

    async fn delete_session(&self, session: &SessionId) -> Result<bool> {
        self.delete_by_id(&self.scripts.delete, session.as_str())
            .await
    }

    async fn compact(&self, session: &SessionId, replacement: &[Message]) -> Result<ArchiveInfo> {
        let at = now();
        let base = archive_id_base(at);
        let script = &self.scripts.compact;
        let inv = write_messages(script, &self.keys, session, at, &[&base], replacement)?;
        compacted(session, at, self.invoke(&inv).await?)
    }

    async fn list_archives(&self, session: &SessionId) -> Result<Vec<ArchiveInfo>> {
        let mut inv = self.keys.invoke(&self.scripts.list_archives);
        inv.arg(session.as_str()).arg(micros(now()));
        archive_infos(session, self.invoke(&inv).await?)
    }

    async fn load_archive(&self, session: &SessionId, archive: &ArchiveId) -> Result<Archive> {
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("HGET")
            .arg(self.keys.meta(session))
            .arg("expires")
            .cmd("HGET")
            .arg(self.keys.archive_info(session))
            .arg(archive.as_str())
            .cmd("LRANGE")
            .arg(self.keys.archive(session, archive))
            .arg(0)
            .arg(-1);
        let (expires, created, raw): (Option<String>, Option<String>, Vec<Vec<u8>>) =
            self.query(&pipe).await?;
        // An expired session has no archives (its keys outlive the expiry by < 1 ms).
        let expired = match expires {
            Some(e) => agentmem_core::support::parse_micros(&e, "expiry time")? <= now(),
            None => false,
        };
        let created = if expired { None } else { created };
        archive_from(session, archive, (created, raw))
    }

    async fn replace_archive(
        &self, session: &SessionId, archive: &ArchiveId, messages: &[Message],
    ) -> Result<ArchiveInfo> {
        let mut inv = self.keys.invoke(&self.scripts.replace_archive);
        inv.arg(session.as_str())
            .arg(micros(now()))
            .arg(archive.as_str());
        for message in messages {
            let json = serde_json::to_string(message).map_err(|e| encode_json("a message", e))?;
            inv.arg(json);
        }
        let reply: Vec<redis::Value> = self.invoke(&inv).await?;
        match status(&reply)? {
            0 => Err(not_found(session)),
            1 => Err(archive_not_found(session, archive)),
            _ => {
                let (_, created, count): (i64, String, u64) =
                    redis::from_redis_value(redis::Value::Array(reply)).map_err(|e| {
                        Error::corrupt(format!("unreadable replace_archive reply: {e}"))
                    })?;
                Ok(ArchiveInfo {
                    id: archive.clone(),
                    session: session.clone(),
                    created_at: parse_micros(&created, "archive creation time")?,
                    message_count: count,
                })
            }
        }
    }

    async fn search_messages(&self, query: &str, scope: &MessageQuery) -> Result<Vec<MessageHit>> {
        let Some(terms) = search_terms(query, scope.limit) else {
            return Ok(Vec::new());
        };
        let at = now();
        let mut inv = self.keys.invoke(&self.scripts.search_messages);
        inv.arg(scope.session.as_ref().map_or("", SessionId::as_str))
            .arg(scope.limit.min(u32::MAX as usize))
            .arg(micros(at))
            .arg(terms);
        message_hits(self.invoke(&inv).await?)
    }

    async fn purge(&self, policy: &RetentionPolicy) -> Result<PurgeReport> {
        let at = now();
        let mut report = PurgeReport::default();
        // Expired sessions are deleted whatever the policy (the script takes them first).
        let cutoff = retention_cutoff(policy, at)
            .map(|t| micros(t).to_string())
            .unwrap_or_default();
        let max = policy
            .max_sessions
            .map(|n| n.to_string())
            .unwrap_or_default();
        loop {
            let mut inv = self.keys.invoke(&self.scripts.purge);
            inv.arg(&cutoff).arg(&max).arg(PURGE_BATCH).arg(micros(at));
            let deleted: u64 = self.invoke(&inv).await?;
            if deleted == 0 {
                break;
            }
            report.sessions_deleted += deleted;
        }
        // Memory items: every expired one, and those older than `max_memory_age`.
        let memory_cutoff = memory_retention_cutoff(policy, at);
        loop {
            let inv = purge_items(&self.scripts.purge_memories, &self.keys, at, memory_cutoff);
            let deleted: u64 = self.invoke(&inv).await?;
            if deleted == 0 {
                return Ok(report);
            }
            report.memories_deleted += deleted;
        }
    }

    async fn fork(
        &self, source: &SessionId, target: &SessionId, at: Option<&MessageId>,
    ) -> Result<SessionInfo> {
        let mut inv = self.keys.invoke(&self.scripts.fork);
        inv.arg(source.as_str())
            .arg(target.as_str())
            .arg(micros(now()))
            .arg(at.map(id_prefix).transpose()?.unwrap_or_default());
        let reply: Vec<redis::Value> = self.invoke(&inv).await?;
        match status(&reply)? {
            0 => Err(fork_target_exists(target)),
            1 => Err(not_found(source)),
            2 => match at {
                Some(at) => Err(message_not_found(source, at)),
                None => Err(Error::corrupt("fork reply out of place")),
            },
            _ => info_from_value(row(reply)?),
        }
    }

    async fn rewind(&self, session: &SessionId, to: &Rewind) -> Result<Vec<Message>> {
        let mut inv = self.keys.invoke(&self.scripts.rewind);
        inv.arg(session.as_str()).arg(micros(now()));
        match to {
            Rewind::Last(n) => inv.arg("n").arg(*n),
            Rewind::After(id) => inv.arg("a").arg(id_prefix(id)?),
            other => {
                return Err(Error::unsupported(format!(
                    "rewind {other:?} is not supported by the redis backend"
                )))
            }
        };
        let reply: Vec<redis::Value> = self.invoke(&inv).await?;
        match status(&reply)? {
            0 => Err(not_found(session)),
            1 => match to {
                Rewind::After(id) => Err(message_not_found(session, id)),
                _ => Err(Error::corrupt("rewind reply out of place")),
            },
            _ => {
                let raw: Vec<Vec<u8>> = reply
                    .into_iter()
                    .skip(1)
                    .map(redis::from_redis_value)
                    .collect::<std::result::Result<_, _>>()
                    .map_err(|e| Error::corrupt(format!("unreadable rewind reply: {e}")))?;
                parse_messages(raw)
            }
        }
    }

    async fn update_session(
        &self, session: &SessionId, patch: &SessionPatch,
    ) -> Result<SessionInfo> {
        patch.validate()?;
        let mut inv = self.keys.invoke(&self.scripts.update);
        inv.arg(session.as_str()).arg(micros(now()));
        for field in [&patch.title, &patch.owner] {
            match field {
                None => inv.arg("k").arg(""),
                Some(None) => inv.arg("r").arg(""),
                Some(Some(value)) => inv.arg("s").arg(value.as_str()),
            };
        }
        match patch.expires_at {
            None => inv.arg("k").arg(""),
            Some(None) => inv.arg("r").arg(""),
            Some(Some(at)) => inv.arg("s").arg(micros_up(at)),
        };
        inv.arg(MAX_TAGS).arg(patch.tags.len());
        for (key, value) in &patch.tags {
            match value {
                Some(value) => inv.arg(key.as_str()).arg("s").arg(value.as_str()),
                None => inv.arg(key.as_str()).arg("r").arg(""),
            };
        }
        let reply: Vec<redis::Value> = self.invoke(&inv).await?;
        match status(&reply)? {
            0 => Err(not_found(session)),
            2 => {
                let n: u64 = reply
                    .into_iter()
                    .nth(1)
                    .map(redis::from_redis_value)
                    .transpose()
                    .ok()
                    .flatten()
                    .unwrap_or_default();
                Err(Error::invalid_input(format!(
                    "a session may carry at most {MAX_TAGS} tags, not {n}"
                )))
            }
            _ => info_from_value(row(reply)?),
        }
    }

    async fn find_sessions(&self, query: &SessionQuery) -> Result<SessionPage> {
        query.validate()?;
        let mut inv = self.keys.invoke(&self.scripts.find_sessions);
        inv.arg(micros(now()))
            .arg(query.limit.saturating_add(1))
            .arg(query.after.as_ref().map_or("", SessionId::as_str))
            .arg(
                query
                    .updated_since
                    .map(|t| micros_up(t).to_string())
                    .unwrap_or_default(),
            )
            .arg(
                query
                    .updated_before
                    .map(|t| micros_up(t).to_string())
                    .unwrap_or_default(),
            );
        match &query.owner {
            Some(owner) => inv.arg("s").arg(owner.as_str()),
            None => inv.arg("").arg(""),
        };
        inv.arg(query.tags.len());
        for (key, value) in &query.tags {
            inv.arg(key.as_str()).arg(value.as_str());
        }
        let rows: Vec<InfoRow> = self.invoke(&inv).await?;
        let sessions = rows
            .into_iter()
            .map(info_from)
            .collect::<Result<Vec<_>>>()?;
        Ok(query.page(sessions))
    }
}

#[async_trait]
impl MemoryStore for RedisStore {
    async fn put_memory(&self, item: &MemoryItem) -> Result<MemoryItem> {
        let index = index_entry(&item.text).to_string();
        let mut stored = item.clone();
        for _ in 0..MAX_REBASES {
            let inv = put_item(&self.scripts.put_memory, &self.keys, &stored, &index, now())?;
            let reply: Vec<String> = self.invoke(&inv).await?;
            let Some((id, created_at)) = rebase(&reply)? else {
                return Ok(stored);
            };
            // Replacing an existing item: keep its id and creation time.
            stored.id =
                MemoryId::new(id).map_err(|e| Error::corrupt(format!("stored memory id: {e}")))?;
            stored.created_at = created_at;
        }
        Err(Error::conflict(format!(
            "memory item {:?} kept changing under concurrent writers; try again",
            item.id
        )))
    }

    async fn get_memory(&self, id: &MemoryId) -> Result<Option<MemoryItem>> {
        let mut cmd = redis::cmd("HGET");
        cmd.arg(self.keys.memory_items()).arg(id.as_str());
        let raw: Option<Vec<u8>> = self
            .run(|mut c: Conn| {
                let cmd = &cmd;
                async move { cmd.query_async(&mut c).await }
            })
            .await?;
        // An expired item stays stored until a purge or a put with its key deletes it.
        let at = now();
        Ok(raw
            .map(|bytes| parse_item(&bytes))
            .transpose()?
            .filter(|item| !item.is_expired_at(at)))
    }

    async fn list_memories(&self, filter: &MemoryFilter) -> Result<Vec<MemoryItem>> {
        let inv = list_items(&self.scripts.list_memories, &self.keys, filter, now());
        items_from(self.invoke(&inv).await?, filter.limit)
    }

    async fn search_memories(&self, query: &str, filter: &MemoryFilter) -> Result<Vec<MemoryHit>> {
        let limit = memory_search_limit(filter);
        let Some(terms) = search_terms(query, limit) else {
            return Ok(Vec::new());
        };
        let script = &self.scripts.search_memories;
        let inv = search_items(script, &self.keys, filter, limit, now(), terms);
        memory_hits(self.invoke(&inv).await?)
    }

    async fn delete_memory(&self, id: &MemoryId) -> Result<bool> {
        self.delete_by_id(&self.scripts.delete_memory, id.as_str())
            .await
    }
}
