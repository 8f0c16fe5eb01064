//! A few connections to one database, used from blocking threads.
//!
//! rusqlite is synchronous, so every database call runs under `spawn_blocking`, never on an
//! async worker thread. Connections wait in `idle`; a semaphore with one permit per connection
//! makes callers queue (asynchronously) until one is free. Writes in this process also take
//! the single `writer` permit first, so they queue here in order instead of spinning in
//! SQLite's busy handler; the busy timeout then only arbitrates between processes.
//!
//! A lease holds its connection and permits inside the blocking task, so a caller that stops
//! waiting (a dropped future) never returns a connection that is still in use.

use std::sync::{Arc, Mutex, PoisonError};

use agentmem_core::{Error, Result};
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::config::{Location, SqliteConfig};
use crate::error::{Failure, SqlResult};
use crate::schema;

/// Connections to one database.
pub(crate) struct Pool {
    idle: Mutex<Vec<Connection>>,
    slots: Arc<Semaphore>,
    writer: Arc<Semaphore>,
    /// The database as named in messages: its path, or `:memory:`.
    db: Arc<str>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("db", &self.db)
            .field("idle", &self.slots.available_permits())
            .finish()
    }
}

impl Pool {
    /// Opens `config`'s database on a blocking thread (see [`open_blocking`](Self::open_blocking)).
    pub(crate) async fn open(config: SqliteConfig) -> Result<Pool> {
        unblock(move || Pool::open_blocking(&config)).await
    }

    /// Wraps a connection opened by the caller, migrating its database on a blocking thread.
    pub(crate) async fn from_connection(conn: Connection) -> Result<Pool> {
        unblock(move || Pool::from_connection_blocking(conn)).await
    }

    /// Opens `config`'s database: checks and migrates it on the first connection, then opens
    /// the rest. Blocking.
    fn open_blocking(config: &SqliteConfig) -> Result<Pool> {
        let db: Arc<str> = Arc::from(config.location.to_string());
        let mut first = open_connection(config, &db)?;
        prepare_waiting(&mut first, config, &db).map_err(|f| match (f, &config.location) {
            // Readying writes (WAL files, migrations): say so when the file is not writable.
            (Failure::Sql(e), Location::File(path)) => crate::files::open_failure(e, path, &db),
            (f, _) => f.into_error(&db),
        })?;
        let mut connections = vec![first];
        for _ in 1..config.effective_pool_size() {
            let conn = open_connection(config, &db)?;
            configure(&conn, Some(config)).map_err(|f| f.into_error(&db))?;
            connections.push(conn);
        }
        Ok(Pool::new(connections, db))
    }

    /// Wraps a connection opened by the caller, migrating its database. Blocking.
    fn from_connection_blocking(mut conn: Connection) -> Result<Pool> {
        let db: Arc<str> = Arc::from(match conn.path() {
            Some(path) if !path.is_empty() => path.to_string(),
            _ => ":memory:".to_string(),
        });
        prepare(&mut conn, None, &db).map_err(|f| f.into_error(&db))?;
        Ok(Pool::new(vec![conn], db))
    }

    fn new(connections: Vec<Connection>, db: Arc<str>) -> Pool {
        Pool {
            slots: Arc::new(Semaphore::new(connections.len())),
            idle: Mutex::new(connections),
            writer: Arc::new(Semaphore::new(1)),
            db,
        }
    }

    /// The database as named in messages: its path, or `:memory:`.
    pub(crate) fn db(&self) -> &str {
        &self.db
    }

    /// Runs read-only work `f` on a connection.
    pub(crate) async fn read<T, F>(self: &Arc<Self>, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> SqlResult<T> + Send + 'static,
    {
        self.run(false, f).await
    }

    /// Runs work `f` that writes, after this process's earlier writes.
    pub(crate) async fn write<T, F>(self: &Arc<Self>, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> SqlResult<T> + Send + 'static,
    {
        self.run(true, f).await
    }

    async fn run<T, F>(self: &Arc<Self>, write: bool, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> SqlResult<T> + Send + 'static,
    {
        // The semaphores are never closed; an error here would be a bug, reported as such.
        let closed = |_| Error::backend("the SQLite connection pool was closed");
        let writer = match write {
            true => Some(
                Arc::clone(&self.writer)
                    .acquire_owned()
                    .await
                    .map_err(closed)?,
            ),
            false => None,
        };
        let slot = Arc::clone(&self.slots)
            .acquire_owned()
            .await
            .map_err(closed)?;
        let pool = Arc::clone(self);
        unblock(move || {
            let mut lease = Lease::take(pool, slot, writer);
            let result = lease.connection().and_then(f);
            result.map_err(|failure| failure.into_error(&lease.pool.db))
        })
        .await
    }
}

/// Runs blocking work `f` on tokio's blocking threads, never on an async worker thread.
async fn unblock<T, F>(f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
{
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|join| {
        Err(Error::backend("a SQLite task panicked or was cancelled").with_source(join))
    })
}

/// A connection taken from the pool, put back when dropped (before its permits are released).
struct Lease {
    pool: Arc<Pool>,
    connection: Option<Connection>,
    _slot: OwnedSemaphorePermit,
    _writer: Option<OwnedSemaphorePermit>,
}

impl Lease {
    fn take(
        pool: Arc<Pool>, slot: OwnedSemaphorePermit, writer: Option<OwnedSemaphorePermit>,
    ) -> Lease {
        let connection = pool
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        Lease {
            pool,
            connection,
            _slot: slot,
            _writer: writer,
        }
    }

    fn connection(&mut self) -> SqlResult<&mut Connection> {
        // One permit per connection, so a permit holder always finds one idle.
        let conn = self.connection.as_mut().ok_or_else(|| {
            Failure::Agent(Error::backend(
                "no idle SQLite connection despite a free slot",
            ))
        })?;
        // Every operation ends its transaction; should one have been left open (a failed
        // rollback), end it here rather than fail every later `BEGIN` on this connection.
        if !conn.is_autocommit() {
            tracing::warn!("rolling back a transaction left open on a pooled SQLite connection");
            conn.execute_batch("ROLLBACK")?;
        }
        Ok(conn)
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(conn) = self.connection.take() {
            self.pool
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(conn);
        }
    }
}

/// Opens one connection (creating the file and its folders when allowed), without touching
/// the database's contents.
fn open_connection(config: &SqliteConfig, db: &str) -> Result<Connection> {
    let conn = match &config.location {
        Location::Memory => Connection::open_in_memory(),
        Location::File(path) => {
            let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
            if config.create {
                // Created here, 0600, rather than by SQLite (0644), so that the database and
                // its `-wal`/`-shm`, which SQLite gives the database's mode, stay private.
                crate::files::create_private(path, db)?;
                flags |= OpenFlags::SQLITE_OPEN_CREATE;
            } else if !path.exists() {
                return Err(Error::not_found(format!(
                    "database file `{db}` does not exist (and the URL says create=false)"
                )));
            }
            return Connection::open_with_flags(path, flags)
                .map_err(|e| crate::files::open_failure(e, path, db));
        }
    };
    conn.map_err(|e| crate::error::map_sqlite(e, db))
}

/// Per-connection settings that change nothing in the file. `None` for a caller's connection,
/// whose busy timeout and `synchronous` are the caller's choice.
fn configure(conn: &Connection, config: Option<&SqliteConfig>) -> SqlResult<()> {
    // The schema's cascading deletes rely on foreign keys, which SQLite leaves off by default.
    conn.pragma_update(None, "foreign_keys", true)?;
    // Without the query planner stability guarantee, SQLite plans `LIMIT ?` with the bound
    // value and so parses and plans a cached statement again every time a limit is bound:
    // most of the work of a small load. Plans then no longer depend on bound values.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    conn.set_prepared_statement_cache_capacity(32);
    if let Some(config) = config {
        conn.busy_timeout(config.busy_timeout)?;
        conn.pragma_update(None, "synchronous", config.synchronous.as_str())?;
    }
    Ok(())
}

/// [`prepare`], retried while another process holds the database, up to the busy timeout.
///
/// SQLite does not always wait in its busy handler while a database is being readied: a
/// switch to WAL mode, or a reader meeting another process's switch or migration, can fail
/// with `SQLITE_BUSY` at once. Agents started together on one new file must all open it, so
/// opening waits as writes do.
fn prepare_waiting(conn: &mut Connection, config: &SqliteConfig, db: &str) -> SqlResult<()> {
    let deadline = std::time::Instant::now() + config.busy_timeout;
    let mut pause = std::time::Duration::from_millis(5);
    loop {
        match prepare(conn, Some(config), db) {
            Err(Failure::Sql(e)) if is_busy(&e) && std::time::Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(100));
            }
            other => return other,
        }
    }
}

/// Whether `e` says another connection holds the database.
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// Readies the first connection: reads the schema version (refusing a newer one or a file
/// that is not a database, before writing anything), switches to WAL, then migrates.
fn prepare(conn: &mut Connection, config: Option<&SqliteConfig>, db: &str) -> SqlResult<()> {
    if let Some(config) = config {
        // The busy timeout first: another process may hold the lock while migrating.
        conn.busy_timeout(config.busy_timeout)?;
    }
    let version = schema::read_version(conn)?;
    schema::check_not_newer(version, db)?;
    configure(conn, config)?;
    if config.is_some_and(|c| matches!(c.location, Location::File(_))) {
        // WAL lets readers run beside the one writer, and commits cost one append to the log.
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!(
                db,
                mode,
                "SQLite refused WAL mode; concurrent readers will block"
            );
        }
    }
    schema::migrate(conn, db)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::StatementStatus;

    /// How many times a cached `LIMIT ?` statement was prepared again over three loads with
    /// different limits.
    fn reprepares(conn: &Connection) -> i32 {
        conn.execute_batch(
            "CREATE TABLE t (x INTEGER PRIMARY KEY); INSERT INTO t VALUES (1), (2);",
        )
        .unwrap();
        for limit in [1i64, 2, 3] {
            let mut st = conn
                .prepare_cached("SELECT x FROM t ORDER BY x DESC LIMIT ?1")
                .unwrap();
            let n = st.query_map([limit], |_| Ok(())).unwrap().count();
            assert_eq!(n, usize::try_from(limit.min(2)).unwrap());
        }
        let st = conn
            .prepare_cached("SELECT x FROM t ORDER BY x DESC LIMIT ?1")
            .unwrap();
        st.get_status(StatementStatus::RePrepare)
    }

    #[test]
    fn binding_a_new_limit_does_not_prepare_a_cached_statement_again() {
        // SQLite's default: every new limit makes the statement parse and plan again.
        assert!(reprepares(&Connection::open_in_memory().unwrap()) > 0);
        let conn = Connection::open_in_memory().unwrap();
        configure(&conn, None).unwrap();
        assert_eq!(reprepares(&conn), 0);
    }
}
