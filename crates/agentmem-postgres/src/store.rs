//! [`PostgresStore`]: construction, the connection pool, and the [`AgentMemory`] operations
//! (each runs its statements through `run!`; `sessions.rs`, `archives.rs`, `memories.rs` and
//! `search.rs` read their rows back). Checkpoints are in `checkpoints.rs`, the knowledge graph
//! in `graph.rs`, embedding vectors in `vectors.rs`.

use agentmem_core::backend::BackendInfo;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use agentmem_core::layer::open_layered;
use agentmem_core::support::{
    archive_id_base, archive_not_found, fork_target_exists, free_archive_id,
    memory_retention_cutoff, memory_search_limit, message_not_found, retention_cutoff,
};
use agentmem_core::Layered;
use agentmem_core::{
    now, Archive, ArchiveId, ArchiveInfo, Error, ErrorKind, MemoryFilter, MemoryHit, MemoryId,
    MemoryItem, MemoryStore, Message, MessageHit, MessageId, MessageQuery, Metadata,
    PropertyChange, PurgeReport, Result, RetentionPolicy, Rewind, Session, SessionId, SessionInfo,
    SessionPage, SessionPatch, SessionQuery, SessionStore,
};
use async_trait::async_trait;
use chrono::{DateTime, Datelike, Utc};
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};
use tokio_postgres::types::{Json, ToSql, Type};

use crate::archives::{archive_from, archive_info};
use crate::codec::{count, get, MessageColumns};
use crate::config::{
    quote_schema, validate_schema, PostgresConfig, PreparedStatements, DEFAULT_CONNECT_TIMEOUT,
};
use crate::error::INFO;
use crate::lifecycle::{delete_session_in, lock_live_session, session_not_found, written_session};
use crate::memories::{memory_from_row, PUT_RETRIES};
use crate::retention::PURGE_RETRIES;
use crate::schema;
use crate::search::{memory_hit, message_hit, tsquery_terms};
use crate::sessions::{labels_from, session_from, session_info};
use crate::sql::{Sql, SLOTS};
use crate::statements::{behind_pooler, Exec, Stmt};
use crate::tls::Connector;

/// How many times a read is repeated on a fresh connection after its connection failed
/// (for example after the server terminated it). Writes are never repeated.
pub(crate) const READ_RETRIES: u32 = 2;

/// How long the pool waits for a connection it is recycling to be checked.
const RECYCLE_TIMEOUT: Duration = Duration::from_secs(5);

/// Agent memory in PostgreSQL: sessions, archives and memory items in one schema.
///
/// Cheap to clone (the pool and statements are shared). See the crate documentation for the
/// design, and [`PostgresConfig`] for the URL options.
///
/// The constructors ([`connect`](Self::connect), [`connect_with`](Self::connect_with),
/// [`from_client`](Self::from_client)) return it wearing the standard
/// [layers](agentmem_core::layer) (validation, spans, error labels) as a
/// [`Layered<PostgresStore>`](Layered), which dereferences to this type for
/// [`schema`](Self::schema), [`pool`](Self::pool) and [`drop_schema`](Self::drop_schema).
#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    schema: Arc<str>,
    prepared: bool,
    pub(crate) sql: Arc<Sql>,
}

impl PostgresStore {
    /// Connects with a `postgres://` URL (see [`PostgresConfig`] for the options), creating or
    /// migrating the schema. The store wears the standard [layers](agentmem_core::layer).
    ///
    /// Fails with `InvalidInput` for a malformed URL, `Unavailable` when the server cannot be
    /// reached, and `Unsupported` when the schema was written by a newer agentmem.
    pub async fn connect(url: &str) -> Result<Layered<Self>> {
        Self::connect_with(url.parse()?).await
    }

    /// Connects with parsed settings, creating or migrating the schema.
    ///
    /// Reads the TLS certificate files the settings name first (`InvalidInput` when one is
    /// missing or unreadable). A server whose certificate is refused, or that does not
    /// accept TLS when the `sslmode` requires it, is `Unavailable`, with the reason.
    pub async fn connect_with(config: PostgresConfig) -> Result<Layered<Self>> {
        open_layered(&INFO, async move {
            let pool = build_pool(&config)?;
            Self::open(pool, config.schema(), config.prepared_statements()).await
        })
        .await
    }

    /// Uses an existing pool, keeping the tables in `schema` (created or migrated now).
    ///
    /// Several stores may share one pool with different schemas. Give the pool a wait
    /// timeout, or operations wait forever for a connection when the server is gone.
    /// Statements are prepared unless a pooler is detected
    /// ([`PreparedStatements::Auto`]); see [`from_client_with`](Self::from_client_with).
    pub async fn from_client(pool: Pool, schema: &str) -> Result<Layered<Self>> {
        Self::from_client_with(pool, schema, PreparedStatements::Auto).await
    }

    /// Like [`from_client`](Self::from_client), preparing statements as `prepared` says
    /// (`Off` behind a pooler in transaction mode that is not detected).
    pub async fn from_client_with(
        pool: Pool, schema: &str, prepared: PreparedStatements,
    ) -> Result<Layered<Self>> {
        // Migrating is opening work: it runs in the `open` span, like `connect_with`.
        open_layered(&INFO, Self::open(pool, schema, prepared)).await
    }

    /// The raw store on `pool`, in `schema`, created or migrated now.
    async fn open(pool: Pool, schema: &str, prepared: PreparedStatements) -> Result<Self> {
        validate_schema(schema)?;
        let prepared = match prepared {
            PreparedStatements::On => true,
            PreparedStatements::Off => false,
            PreparedStatements::Auto => {
                let client = pool.get().await.map_err(crate::error::pool)?;
                let pooled = behind_pooler(&client).await.map_err(crate::error::pg)?;
                if pooled {
                    tracing::info!(
                        "agentmem-postgres: connected through a pooler (the cancel key is not \
                         the server process's); statements are sent unnamed"
                    );
                }
                !pooled
            }
        };
        schema::migrate(&pool, schema).await?;
        Ok(PostgresStore {
            pool,
            schema: Arc::from(schema),
            prepared,
            sql: Arc::new(Sql::new(&quote_schema(schema), prepared)),
        })
    }

    /// The schema holding this store's tables.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The connection pool.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Whether statements are prepared once per connection and reused (`true`), or sent
    /// unnamed every time (`false`: `prepared_statements=off`, or a pooler was detected).
    pub fn prepares_statements(&self) -> bool {
        self.prepared
    }

    /// Drops this store's schema with everything in it: every session, archive and memory
    /// item, irrecoverably. Meant for removing a tenant or a test namespace.
    ///
    /// Not an [`AgentMemory`](agentmem_core::AgentMemory) operation, so no layer traces or labels it; its errors say
    /// "PostgreSQL" in their message.
    pub async fn drop_schema(&self) -> Result<()> {
        let sql = format!(
            "DROP SCHEMA IF EXISTS {} CASCADE",
            quote_schema(&self.schema)
        );
        run!(self, 0, |client| client.batch_execute(&sql))
    }

    /// A pooled connection; `Unavailable` when none can be had in time.
    pub(crate) async fn client(&self) -> Result<Object> {
        self.pool.get().await.map_err(crate::error::pool)
    }
}

/// The connection pool `config` describes (no connection is made yet).
fn build_pool(config: &PostgresConfig) -> Result<Pool> {
    let connect_timeout = config
        .pg_config()
        .get_connect_timeout()
        .copied()
        .unwrap_or(DEFAULT_CONNECT_TIMEOUT);
    // Fast recycling checks `is_closed()` only; a connection that failed is discarded by
    // `discard`, so a dead one is not handed out twice, and reads retry once more.
    let mut pg = config.pg_config().clone();
    pg.ssl_mode(config.ssl_mode().driver_mode());
    let manager = Manager::from_connect(
        pg,
        Connector::new(config)?,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(config.pool_size())
        .runtime(Runtime::Tokio1)
        .wait_timeout(Some(config.pool_timeout()))
        .create_timeout(Some(connect_timeout))
        .recycle_timeout(Some(RECYCLE_TIMEOUT))
        .build()
        .map_err(|e| {
            Error::backend(format!("cannot build the connection pool: {e}")).with_source(e)
        })
}

/// Pins a future's output to a driver result, so `?` inside `async` blocks given to `run!`
/// knows its error type.
pub(crate) fn pg_future<T, F>(future: F) -> F
where
    F: Future<Output = std::result::Result<T, tokio_postgres::Error>>,
{
    future
}

/// The statement of `(all, in_scopes)` for `scopes` with its parameters: `all` with
/// `params` when there are no scopes (every scope), else `in_scopes` with `params` then the
/// scopes.
fn scoped<'p>(
    (all, in_scopes): (&'p Stmt, &'p Stmt), params: &[&'p (dyn ToSql + Sync)],
    scopes: &'p Option<Vec<String>>,
) -> (&'p Stmt, Vec<&'p (dyn ToSql + Sync)>) {
    match scopes {
        None => (all, params.to_vec()),
        Some(scopes) => (in_scopes, [params, &[scopes]].concat()),
    }
}

pub(crate) fn discard(client: Object) {
    drop(Object::take(client));
}

impl fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let status = self.pool.status();
        f.debug_struct("PostgresStore")
            .field("schema", &self.schema)
            .field("prepares_statements", &self.prepared)
            .field("pool_size", &status.size)
            .field("pool_max_size", &status.max_size)
            .finish()
    }
}

#[async_trait]
impl SessionStore for PostgresStore {
    fn backend(&self) -> &'static BackendInfo {
        &INFO
    }

    async fn schema_version(&self) -> Result<u32> {
        schema::version(&self.pool, &self.schema).await
    }

    /// Unnamed statements (typed by hand): rare, so not worth a prepared statement on
    /// every connection, and they work behind a pooler.
    async fn store_property(&self, name: &str) -> Result<Option<String>> {
        let sql = format!(
            "SELECT value FROM {}.properties WHERE name = $1",
            quote_schema(&self.schema)
        );
        let row = run!(self, READ_RETRIES, |client| client
            .query_typed_opt(&sql, &[(&name, Type::TEXT)]))?;
        row.map(|row| row.try_get(0).map_err(crate::error::pg))
            .transpose()
    }

    /// One statement, so one atomic step: an insert that does nothing on a conflict, or an
    /// update of the row holding `expected`.
    async fn set_store_property(&self, change: &PropertyChange<'_>) -> Result<bool> {
        let (name, expected, value) = (change.name, change.expected, change.value);
        let s = quote_schema(&self.schema);
        let changed = match expected {
            None => {
                let sql = format!(
                    "INSERT INTO {s}.properties (name, value) VALUES ($1, $2)
                     ON CONFLICT (name) DO NOTHING"
                );
                run!(self, 0, |client| client.execute_typed(
                    &sql,
                    &[(&name, Type::TEXT), (&value, Type::TEXT)]
                ))?
            }
            Some(expected) => {
                let sql =
                    format!("UPDATE {s}.properties SET value = $2 WHERE name = $1 AND value = $3");
                run!(self, 0, |client| client.execute_typed(
                    &sql,
                    &[
                        (&name, Type::TEXT),
                        (&value, Type::TEXT),
                        (&expected, Type::TEXT)
                    ]
                ))?
            }
        };
        Ok(changed == 1)
    }

    async fn save_session(
        &self, session: &SessionId, history: &[Message], metadata: &Metadata,
    ) -> Result<()> {
        let columns = MessageColumns::new(history, now())?;
        let id = session.as_str();
        let meta = Json(metadata);
        let mut params = columns.params(&id);
        params.push(&meta);
        // First take the session row's lock while writing the new messages after the old ones
        // (an expired session is deleted first); only then delete the old ones, in a statement
        // whose snapshot is taken after the lock, so an append that committed just before is
        // deleted too rather than left behind.
        let sessions = &self.sql.sessions;
        self.write_fresh(
            session,
            &sessions.save,
            &params,
            Some(&sessions.delete_before_first),
        )
        .await
    }

    async fn append(&self, session: &SessionId, messages: &[Message]) -> Result<()> {
        let columns = MessageColumns::new(messages, now())?;
        let id = session.as_str();
        let params = columns.params(&id);
        // One statement, unless the session has expired: then it writes nothing, and the
        // session is deleted and started afresh in one transaction.
        let written: i64 = run!(self, 0, |client| async {
            client
                .query_one_st(&self.sql.sessions.append, &params)
                .await?
                .try_get(0)
        })?;
        if written == 1 {
            return Ok(());
        }
        self.write_fresh(session, &self.sql.sessions.append, &params, None)
            .await
    }

    async fn load(&self, session: &SessionId, limit: Option<usize>) -> Result<Option<Session>> {
        let id = session.as_str();
        // NULL means no LIMIT.
        let window = limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX));
        let at = now();
        let rows = run!(self, READ_RETRIES, |client| async {
            client
                .query_st(self.sql.sessions.load_window(limit), &[&id, &window, &at])
                .await
        })?;
        session_from(session, &rows, limit)
    }

    async fn list_sessions(&self) -> Result<Vec<SessionInfo>> {
        let at = now();
        let rows = run!(self, READ_RETRIES, |client| async {
            client
                .query_st(&self.sql.sessions.list_sessions, &[&at])
                .await
        })?;
        rows.iter().map(session_info).collect()
    }

    async fn delete_session(&self, session: &SessionId) -> Result<bool> {
        let id = session.as_str();
        run!(self, 0, |client| async {
            let tx = client.transaction().await?;
            if !delete_session_in(&self.sql, &tx, id, None).await? {
                return Ok(false);
            }
            tx.commit().await?;
            Ok(true)
        })
    }

    async fn compact(&self, session: &SessionId, replacement: &[Message]) -> Result<ArchiveInfo> {
        let columns = MessageColumns::new(replacement, now())?;
        let at = columns.at;
        let id = session.as_str();
        let params = columns.params(&id);
        let base = archive_id_base(at);
        let outcome = run!(self, 0, |client| async {
            // The session row's lock orders this against appends: one that got the lock
            // first is archived, one that waits lands after the replacement.
            let lock = &self.sql.sessions.lock_session;
            let Some((tx, _)) = lock_live_session(&mut client, lock, id, at).await? else {
                return Ok(None);
            };
            let taken: Vec<String> = tx
                .column_st(&self.sql.archives.archive_ids_like, &[&id, &base])
                .await?;
            let archive = free_archive_id(at, |candidate| taken.iter().any(|t| t == candidate));
            let archived: i64 = tx
                .query_one_st(&self.sql.archives.archive_messages, &[&id, &archive, &at])
                .await?
                .try_get(0)?;
            tx.execute_st(&self.sql.archives.replace, &params).await?;
            tx.commit().await?;
            Ok(Some((archive, archived)))
        })?;
        let Some((archive, archived)) = outcome else {
            return Err(session_not_found(session));
        };
        Ok(ArchiveInfo {
            id: ArchiveId::new(archive)?,
            session: session.clone(),
            created_at: at,
            message_count: count(archived)?,
        })
    }

    async fn replace_archive(
        &self, session: &SessionId, archive: &ArchiveId, messages: &[Message],
    ) -> Result<ArchiveInfo> {
        let columns = MessageColumns::archived(messages, now())?;
        let at = columns.at;
        let (id, name) = (session.as_str(), archive.as_str());
        let created = run!(self, 0, |client| async {
            // A key-share lock on the session row keeps it (and so its archives) from being
            // deleted until this commits; appends and compactions go on meanwhile.
            let pin = &self.sql.archives.pin_session;
            let Some((tx, _)) = lock_live_session(&mut client, pin, id, at).await? else {
                return Ok(None);
            };
            // Locks the archive's row: a second rewrite of the same archive waits here, and
            // its later statements then see (and replace) what this one wrote.
            let Some(row) = tx
                .query_opt_st(
                    &self.sql.archives.recount_archive,
                    &[&id, &name, &columns.n],
                )
                .await?
            else {
                return Ok(None);
            };
            let created: DateTime<Utc> = row.try_get(0)?;
            // The new messages take the old ones' positions (from the first one on).
            let first: Option<i64> = tx
                .query_one_st(&self.sql.archives.clear_archive, &[&id, &name])
                .await?
                .try_get(0)?;
            let first = first.unwrap_or(0);
            tx.execute_st(
                &self.sql.archives.fill_archive,
                &columns.archived_params(&id, &name, &first),
            )
            .await?;
            tx.commit().await?;
            Ok(Some(created))
        })?;
        let Some(created_at) = created else {
            return Err(archive_not_found(session, archive));
        };
        Ok(ArchiveInfo {
            id: archive.clone(),
            session: session.clone(),
            created_at,
            message_count: messages.len() as u64,
        })
    }

    async fn list_archives(&self, session: &SessionId) -> Result<Vec<ArchiveInfo>> {
        let id = session.as_str();
        let at = now();
        let rows = run!(self, READ_RETRIES, |client| async {
            client
                .query_st(&self.sql.archives.list_archives, &[&id, &at])
                .await
        })?;
        rows.iter().map(|row| archive_info(session, row)).collect()
    }

    async fn load_archive(&self, session: &SessionId, archive: &ArchiveId) -> Result<Archive> {
        let (id, name) = (session.as_str(), archive.as_str());
        let at = now();
        let rows = run!(self, READ_RETRIES, |client| async {
            client
                .query_st(&self.sql.archives.load_archive, &[&id, &name, &at])
                .await
        })?;
        archive_from(session, archive, &rows)
    }

    async fn search_messages(&self, query: &str, scope: &MessageQuery) -> Result<Vec<MessageHit>> {
        let terms = tsquery_terms(query);
        if terms.is_empty() || scope.limit == 0 {
            return Ok(Vec::new());
        }
        let limit = i64::try_from(scope.limit).unwrap_or(i64::MAX);
        let session = scope.session.as_ref().map(SessionId::as_str);
        let at = now();
        let search = &self.sql.search;
        let many = terms.len() > SLOTS;
        let rows = run!(self, READ_RETRIES, |client| async {
            match session {
                Some(session) => {
                    let st = if many {
                        &search.in_session_many
                    } else {
                        &search.in_session
                    };
                    client.query_st(st, &[&terms, &limit, &session, &at]).await
                }
                None => {
                    let st = if many {
                        &search.messages_many
                    } else {
                        &search.messages
                    };
                    client.query_st(st, &[&terms, &limit, &at]).await
                }
            }
        })?;
        rows.iter().map(message_hit).collect()
    }

    async fn purge(&self, policy: &RetentionPolicy) -> Result<PurgeReport> {
        // Ages and expiry are measured on the client's clock, the one `updated_at` was written
        // with. An age reaching before year 1 expires nothing (and such a cutoff could not
        // even be bound: PostgreSQL timestamps end in 4714 BC).
        let at = now();
        let cutoff = retention_cutoff(policy, at).filter(|cutoff| cutoff.year() >= 1);
        let memory_cutoff = memory_retention_cutoff(policy, at).filter(|cutoff| cutoff.year() >= 1);
        let keep = policy
            .max_sessions
            .map(|n| i64::try_from(n).unwrap_or(i64::MAX));
        // Two purges running at once may lock the same sessions in opposite orders; the
        // loser of the resulting deadlock is rolled back whole and simply runs again.
        let mut attempt = 0;
        let (sessions, memories) = loop {
            match self.purge_once(cutoff, keep, at, memory_cutoff).await {
                Err(e) if e.kind() == ErrorKind::Conflict && attempt < PURGE_RETRIES => {
                    attempt += 1
                }
                other => break other?,
            }
        };
        Ok(PurgeReport {
            sessions_deleted: sessions as u64,
            memories_deleted: memories,
        })
    }

    async fn fork(
        &self, source: &SessionId, target: &SessionId, at: Option<&MessageId>,
    ) -> Result<SessionInfo> {
        let time = now();
        let (src, tgt) = (source.as_str(), target.as_str());
        let row = run!(self, 0, |client| async {
            let tx = client.transaction().await?;
            // An expired target is gone: a fork may take its id.
            delete_session_in(&self.sql, &tx, tgt, Some(time)).await?;
            // The shared lock keeps the source's messages as they are until commit; the
            // statements after it see every write made before it.
            if !tx
                .exists_st(&self.sql.lifecycle.lock_session_shared, &[&src, &time])
                .await?
            {
                // An existing target is reported first, as the reference store does.
                let taken = tx
                    .exists_st(&self.sql.sessions.live_session, &[&tgt, &time])
                    .await?;
                return Ok(Err(if taken {
                    fork_target_exists(target)
                } else {
                    session_not_found(source)
                }));
            }
            let end: Option<i64> = match at {
                None => None,
                Some(message) => {
                    let seq: Option<i64> = tx
                        .query_one_st(&self.sql.lifecycle.message_seq, &[&src, &message.as_str()])
                        .await?
                        .try_get(0)?;
                    match seq {
                        Some(seq) => Some(seq),
                        None => return Ok(Err(message_not_found(source, message))),
                    }
                }
            };
            let Some(row) = tx
                .query_opt_st(&self.sql.lifecycle.fork_copy, &[&src, &tgt, &end, &time])
                .await?
            else {
                return Ok(Err(fork_target_exists(target)));
            };
            tx.commit().await?;
            Ok(Ok(row))
        })??;
        let labels = labels_from(get(&row, 3)?, get(&row, 4)?, get(&row, 5)?, get(&row, 6)?)?;
        written_session(target, &row, labels, None)
    }

    async fn rewind(&self, session: &SessionId, to: &Rewind) -> Result<Vec<Message>> {
        self.rewind_session(session, to).await
    }

    async fn update_session(
        &self, session: &SessionId, patch: &SessionPatch,
    ) -> Result<SessionInfo> {
        self.update_labels(session, patch).await
    }

    async fn find_sessions(&self, query: &SessionQuery) -> Result<SessionPage> {
        self.find(query).await
    }
}

#[async_trait]
impl MemoryStore for PostgresStore {
    async fn put_memory(&self, item: &MemoryItem) -> Result<MemoryItem> {
        let mut attempt = 0;
        loop {
            match self.put_once(item, now()).await {
                Ok((id, created_at)) => {
                    return Ok(MemoryItem {
                        id: MemoryId::new(id).map_err(|e| {
                            Error::corrupt(format!("stored memory id is invalid: {e}"))
                        })?,
                        created_at,
                        ..item.clone()
                    })
                }
                // Another writer inserted the same scope, kind and key between our update
                // and insert; the update now finds its row.
                Err(e) if e.kind() == ErrorKind::Conflict && attempt < PUT_RETRIES => {
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    async fn get_memory(&self, id: &MemoryId) -> Result<Option<MemoryItem>> {
        let at = now();
        let row = run!(self, READ_RETRIES, |client| async {
            client
                .query_opt_st(&self.sql.memories.get, &[&id.as_str(), &at])
                .await
        })?;
        row.map(|row| memory_from_row(&row)).transpose()
    }

    async fn list_memories(&self, filter: &MemoryFilter) -> Result<Vec<MemoryItem>> {
        let kind = filter.kind.map(|k| k.as_str());
        // NULL means no LIMIT.
        let limit = filter.limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX));
        let at = now();
        let scopes = filter.scope.stored_forms();
        let memories = &self.sql.memories;
        let (st, params) = scoped(
            (&memories.list, &memories.list_in_scopes),
            &[&kind, &limit, &at],
            &scopes,
        );
        let rows = run!(self, READ_RETRIES, |client| async {
            client.query_st(st, &params).await
        })?;
        // Fetched newest first so a limit keeps the newest; returned oldest first.
        let mut items = rows
            .iter()
            .map(memory_from_row)
            .collect::<Result<Vec<_>>>()?;
        items.reverse();
        Ok(items)
    }

    async fn search_memories(&self, query: &str, filter: &MemoryFilter) -> Result<Vec<MemoryHit>> {
        let limit = memory_search_limit(filter);
        let terms = tsquery_terms(query);
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let kind = filter.kind.map(|k| k.as_str());
        let at = now();
        let scopes = filter.scope.stored_forms();
        let memories = &self.sql.memories;
        let statements = if terms.len() > SLOTS {
            (&memories.search_many, &memories.search_in_scopes_many)
        } else {
            (&memories.search, &memories.search_in_scopes)
        };
        let (st, params) = scoped(statements, &[&terms, &kind, &limit, &at], &scopes);
        let rows = run!(self, READ_RETRIES, |client| async {
            client.query_st(st, &params).await
        })?;
        rows.iter().map(memory_hit).collect()
    }

    async fn delete_memory(&self, id: &MemoryId) -> Result<bool> {
        let deleted = run!(self, 0, |client| async {
            client
                .execute_st(&self.sql.memories.delete, &[&id.as_str()])
                .await
        })?;
        Ok(deleted > 0)
    }
}
