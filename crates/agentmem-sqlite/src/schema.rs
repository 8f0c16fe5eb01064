//! The schema, its version record and forward migrations.
//!
//! Every table is prefixed `agentmem_`, so the store can share a database file with an
//! application's own tables. The version lives in `agentmem_schema` (one row). Opening a
//! database reads the version first and refuses one newer than this build, before anything
//! (even the journal mode) is written; older ones are migrated forward in one `IMMEDIATE`
//! transaction, so concurrent processes opening the same file migrate it exactly once.

use agentmem_core::Error;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use crate::error::{corrupt, SqlResult};

/// The schema version this build writes and understands.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// Migration `i` takes the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    // 1: sessions, messages (live and archived, in one table), archives, memory items.
    r#"
    CREATE TABLE agentmem_schema (
        singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
        version INTEGER NOT NULL,
        migrated_at INTEGER NOT NULL
    );
    CREATE TABLE agentmem_sessions (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        metadata TEXT NOT NULL DEFAULT '{}',
        message_count INTEGER NOT NULL DEFAULT 0,
        next_seq INTEGER NOT NULL DEFAULT 1,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
    );
    CREATE INDEX agentmem_sessions_updated ON agentmem_sessions (updated_at);
    CREATE TABLE agentmem_archives (
        id INTEGER PRIMARY KEY,
        session_id INTEGER NOT NULL REFERENCES agentmem_sessions (id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        message_count INTEGER NOT NULL,
        UNIQUE (session_id, name)
    );
    CREATE TABLE agentmem_messages (
        id INTEGER PRIMARY KEY,
        session_id INTEGER NOT NULL REFERENCES agentmem_sessions (id) ON DELETE CASCADE,
        archive_id INTEGER REFERENCES agentmem_archives (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        message_id TEXT NOT NULL,
        role TEXT NOT NULL,
        content TEXT NOT NULL,
        timestamp INTEGER NOT NULL,
        tool_call_id TEXT,
        tool_name TEXT,
        metadata TEXT,
        UNIQUE (session_id, seq)
    );
    CREATE INDEX agentmem_messages_live ON agentmem_messages (session_id, seq)
        WHERE archive_id IS NULL;
    CREATE INDEX agentmem_messages_archived ON agentmem_messages (archive_id, seq)
        WHERE archive_id IS NOT NULL;
    CREATE TABLE agentmem_memories (
        id INTEGER PRIMARY KEY,
        item_id TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL,
        key TEXT,
        text TEXT NOT NULL,
        metadata TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        UNIQUE (kind, key)
    );
    CREATE INDEX agentmem_memories_created ON agentmem_memories (created_at, id);
    "#,
    // 2: full-text indexes over message content and memory text, kept in step by triggers,
    // built from the rows already stored.
    r#"
    CREATE VIRTUAL TABLE agentmem_messages_fts USING fts5 (
        content, content = 'agentmem_messages', content_rowid = 'id',
        tokenize = 'unicode61 remove_diacritics 0'
    );
    CREATE TRIGGER agentmem_messages_fts_insert AFTER INSERT ON agentmem_messages BEGIN
        INSERT INTO agentmem_messages_fts (rowid, content) VALUES (new.id, new.content);
    END;
    CREATE TRIGGER agentmem_messages_fts_delete AFTER DELETE ON agentmem_messages BEGIN
        INSERT INTO agentmem_messages_fts (agentmem_messages_fts, rowid, content)
            VALUES ('delete', old.id, old.content);
    END;
    CREATE TRIGGER agentmem_messages_fts_update AFTER UPDATE OF content ON agentmem_messages BEGIN
        INSERT INTO agentmem_messages_fts (agentmem_messages_fts, rowid, content)
            VALUES ('delete', old.id, old.content);
        INSERT INTO agentmem_messages_fts (rowid, content) VALUES (new.id, new.content);
    END;
    INSERT INTO agentmem_messages_fts (agentmem_messages_fts) VALUES ('rebuild');

    CREATE VIRTUAL TABLE agentmem_memories_fts USING fts5 (
        text, content = 'agentmem_memories', content_rowid = 'id',
        tokenize = 'unicode61 remove_diacritics 0'
    );
    CREATE TRIGGER agentmem_memories_fts_insert AFTER INSERT ON agentmem_memories BEGIN
        INSERT INTO agentmem_memories_fts (rowid, text) VALUES (new.id, new.text);
    END;
    CREATE TRIGGER agentmem_memories_fts_delete AFTER DELETE ON agentmem_memories BEGIN
        INSERT INTO agentmem_memories_fts (agentmem_memories_fts, rowid, text)
            VALUES ('delete', old.id, old.text);
    END;
    CREATE TRIGGER agentmem_memories_fts_update AFTER UPDATE OF text ON agentmem_memories BEGIN
        INSERT INTO agentmem_memories_fts (agentmem_memories_fts, rowid, text)
            VALUES ('delete', old.id, old.text);
        INSERT INTO agentmem_memories_fts (rowid, text) VALUES (new.id, new.text);
    END;
    INSERT INTO agentmem_memories_fts (agentmem_memories_fts) VALUES ('rebuild');
    "#,
];

/// The stored schema version: 0 for a database without agentmem tables.
///
/// This is the first read on a new connection, so a file that is not a SQLite database
/// fails here (as `NOTADB`), before anything is written.
pub(crate) fn read_version(conn: &Connection) -> SqlResult<u32> {
    let has_table: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'agentmem_schema')",
        [],
        |row| row.get(0),
    )?;
    if !has_table {
        return Ok(0);
    }
    let version: Option<i64> = conn
        .query_row(
            "SELECT version FROM agentmem_schema WHERE singleton = 1",
            [],
            |row| row.get(0),
        )
        .optional()?;
    match version {
        Some(v) if v >= 1 => u32::try_from(v).map_err(|_| corrupt(format!("schema version {v}"))),
        Some(v) => Err(corrupt(format!("schema version {v}"))),
        None => Err(corrupt(
            "schema version: the agentmem_schema table is empty",
        )),
    }
}

/// Refuses a database written by a newer agentmem (which this build could damage).
pub(crate) fn check_not_newer(version: u32, db: &str) -> SqlResult<()> {
    if version > SCHEMA_VERSION {
        return Err(Error::unsupported(format!(
            "database `{db}` has agentmem schema version {version}, but this build knows versions up to {SCHEMA_VERSION}; upgrade agentmem to open it (the database was not modified)"
        ))
        .into());
    }
    Ok(())
}

/// Migrates the database forward to [`SCHEMA_VERSION`], returning the version it had.
pub(crate) fn migrate(conn: &mut Connection, db: &str) -> SqlResult<u32> {
    migrate_to(conn, db, SCHEMA_VERSION)
}

/// Migrates forward to `target` in one transaction. The version is read again inside the
/// write lock: another process may have migrated meanwhile.
fn migrate_to(conn: &mut Connection, db: &str, target: u32) -> SqlResult<u32> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let from = read_version(&tx)?;
    check_not_newer(from, db)?;
    if from >= target {
        return Ok(from);
    }
    for (index, sql) in MIGRATIONS
        .iter()
        .enumerate()
        .take(target as usize)
        .skip(from as usize)
    {
        tracing::debug!(db, to = index + 1, "applying agentmem sqlite migration");
        tx.execute_batch(sql)?;
    }
    tx.execute(
        "INSERT INTO agentmem_schema (singleton, version, migrated_at) VALUES (1, ?1, ?2)
         ON CONFLICT (singleton) DO UPDATE SET version = excluded.version, migrated_at = excluded.migrated_at",
        (i64::from(target), agentmem_core::now().timestamp_micros()),
    )?;
    tx.commit()?;
    tracing::info!(db, from, to = target, "migrated agentmem sqlite schema");
    Ok(from)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn empty_database_migrates_to_current() {
        let mut conn = Connection::open_in_memory().unwrap();
        assert_eq!(read_version(&conn).unwrap(), 0);
        assert_eq!(migrate(&mut conn, "m").unwrap(), 0);
        assert_eq!(read_version(&conn).unwrap(), SCHEMA_VERSION);
        // A second open finds nothing to do.
        assert_eq!(migrate(&mut conn, "m").unwrap(), SCHEMA_VERSION);
    }

    #[test]
    fn version_1_data_is_indexed_by_migration_2() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate_to(&mut conn, "m", 1).unwrap();
        assert_eq!(read_version(&conn).unwrap(), 1);
        conn.execute_batch(
            "INSERT INTO agentmem_sessions (name, created_at, updated_at) VALUES ('s', 0, 0);
             INSERT INTO agentmem_messages (session_id, seq, message_id, role, content, timestamp)
                 VALUES (1, 1, 'm1', 'user', 'kubernetes latency', 0);
             INSERT INTO agentmem_memories (item_id, kind, text, created_at, updated_at)
                 VALUES ('i1', 'fact', 'likes kubernetes', 0, 0);",
        )
        .unwrap();
        assert_eq!(migrate(&mut conn, "m").unwrap(), 1);
        assert_eq!(read_version(&conn).unwrap(), SCHEMA_VERSION);
        let hits: i64 = conn
            .query_row(
                "SELECT count(*) FROM agentmem_messages_fts WHERE agentmem_messages_fts MATCH '\"latency\"'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(hits, 1);
        let hits: i64 = conn
            .query_row(
                "SELECT count(*) FROM agentmem_memories_fts WHERE agentmem_memories_fts MATCH '\"kubernetes\"'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(hits, 1);
    }

    #[test]
    fn newer_version_is_refused_without_changes() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn, "m").unwrap();
        conn.execute(
            "UPDATE agentmem_schema SET version = ?1",
            [i64::from(SCHEMA_VERSION) + 1],
        )
        .unwrap();
        let err = migrate(&mut conn, "m.db").unwrap_err().into_error("m.db");
        assert_eq!(err.kind(), agentmem_core::ErrorKind::Unsupported);
        assert!(err.to_string().contains("m.db"), "{err}");
        assert_eq!(read_version(&conn).unwrap(), SCHEMA_VERSION + 1);
    }

    #[test]
    fn missing_or_bad_version_row_is_corrupt() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn, "m").unwrap();
        conn.execute("UPDATE agentmem_schema SET version = 0", [])
            .unwrap();
        let err = read_version(&conn).unwrap_err().into_error("m");
        assert_eq!(err.kind(), agentmem_core::ErrorKind::CorruptData);
        conn.execute("DELETE FROM agentmem_schema", []).unwrap();
        let err = read_version(&conn).unwrap_err().into_error("m");
        assert_eq!(err.kind(), agentmem_core::ErrorKind::CorruptData);
    }
}
