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

/// An external-content full-text index (FTS5) over one text column of a table, keyed by
/// the table's `id`.
struct FtsIndex {
    table: &'static str,
    fts: &'static str,
    column: &'static str,
}

/// The index of message content, searched by `search_messages`.
const MESSAGES_FTS: FtsIndex = FtsIndex {
    table: "agentmem_messages",
    fts: "agentmem_messages_fts",
    column: "content",
};

/// The index of memory item text, searched by `search_memories`.
const MEMORIES_FTS: FtsIndex = FtsIndex {
    table: "agentmem_memories",
    fts: "agentmem_memories_fts",
    column: "text",
};

/// The tokenizer of schema 2 to 8: words as `agentmem_core::search::words` splits them.
const WORDS: &str = "unicode61 remove_diacritics 0";
/// The tokenizer from schema 9: those words' Porter stems, as `agentmem_core::search::stem`
/// computes them (it follows FTS5's `porter`, so both sides index the same terms).
const TERMS: &str = "porter unicode61 remove_diacritics 0";

impl FtsIndex {
    /// The index with `tokenizer`, its triggers, and its rebuild from the rows already stored.
    fn create(&self, tokenizer: &str) -> String {
        let FtsIndex { table, fts, column } = self;
        format!(
            r#"
    CREATE VIRTUAL TABLE {fts} USING fts5 (
        {column}, content = '{table}', content_rowid = 'id',
        tokenize = '{tokenizer}'
    );{triggers}
    INSERT INTO {fts} ({fts}) VALUES ('rebuild');
"#,
            triggers = self.triggers()
        )
    }

    /// Drops the index and its triggers (the table it indexes is untouched).
    fn drop(&self) -> String {
        let fts = self.fts;
        format!(
            "DROP TRIGGER {fts}_insert; DROP TRIGGER {fts}_delete; DROP TRIGGER {fts}_update;
             DROP TABLE {fts};"
        )
    }

    /// The triggers `<fts>_insert`, `<fts>_delete` and `<fts>_update`, which keep the index in
    /// step with its table.
    fn triggers(&self) -> String {
        let FtsIndex { table, fts, column } = self;
        format!(
            r#"
    CREATE TRIGGER {fts}_insert AFTER INSERT ON {table} BEGIN
        INSERT INTO {fts} (rowid, {column}) VALUES (new.id, new.{column});
    END;
    CREATE TRIGGER {fts}_delete AFTER DELETE ON {table} BEGIN
        INSERT INTO {fts} ({fts}, rowid, {column})
            VALUES ('delete', old.id, old.{column});
    END;
    CREATE TRIGGER {fts}_update AFTER UPDATE OF {column} ON {table} BEGIN
        INSERT INTO {fts} ({fts}, rowid, {column})
            VALUES ('delete', old.id, old.{column});
        INSERT INTO {fts} (rowid, {column}) VALUES (new.id, new.{column});
    END;
"#
        )
    }
}

/// One step of a migration.
enum Step {
    /// Statements run as they are.
    Sql(&'static str),
    /// [`FtsIndex::create`] with a tokenizer.
    CreateFts(FtsIndex, &'static str),
    /// [`FtsIndex::drop`].
    DropFts(FtsIndex),
    /// [`FtsIndex::triggers`] alone, for a table made again.
    FtsTriggers(FtsIndex),
}

impl Step {
    fn run(&self, conn: &Connection) -> rusqlite::Result<()> {
        match self {
            Step::Sql(sql) => conn.execute_batch(sql),
            Step::CreateFts(index, tokenizer) => conn.execute_batch(&index.create(tokenizer)),
            Step::DropFts(index) => conn.execute_batch(&index.drop()),
            Step::FtsTriggers(index) => conn.execute_batch(&index.triggers()),
        }
    }
}

/// Migration `i` takes the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&[Step]] = &[
    // 1: sessions, messages (live and archived, in one table), archives, memory items.
    &[Step::Sql(
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
    )],
    // 2: full-text indexes over message content and memory text, kept in step by triggers,
    // built from the rows already stored.
    &[
        Step::CreateFts(MESSAGES_FTS, WORDS),
        Step::CreateFts(MEMORIES_FTS, WORDS),
    ],
    // 3: memory item scopes and expiry. A key becomes unique per (scope, kind) instead of per
    // kind; SQLite cannot change a table constraint, so the table is rebuilt: the rows are
    // copied with their `id`s (the full-text index's rowids stay valid, so it needs no
    // rebuild), existing items become global (`scope = ''`) and never expire. The old
    // table's indexes and full-text triggers go with it (dropping it fires no trigger), and
    // are made again on the new one.
    &[
        Step::Sql(
            r#"
    CREATE TABLE agentmem_memories_v3 (
        id INTEGER PRIMARY KEY,
        item_id TEXT NOT NULL UNIQUE,
        scope TEXT NOT NULL DEFAULT '',
        kind TEXT NOT NULL,
        key TEXT,
        text TEXT NOT NULL,
        metadata TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        expires_at INTEGER,
        UNIQUE (scope, kind, key)
    );
    INSERT INTO agentmem_memories_v3
        (id, item_id, kind, key, text, metadata, created_at, updated_at)
        SELECT id, item_id, kind, key, text, metadata, created_at, updated_at
        FROM agentmem_memories;
    DROP TABLE agentmem_memories;
    ALTER TABLE agentmem_memories_v3 RENAME TO agentmem_memories;
    CREATE INDEX agentmem_memories_created ON agentmem_memories (created_at, id);
    CREATE INDEX agentmem_memories_scope ON agentmem_memories (scope, created_at, id);
    CREATE INDEX agentmem_memories_expires ON agentmem_memories (expires_at)
        WHERE expires_at IS NOT NULL;
"#,
        ),
        Step::FtsTriggers(MEMORIES_FTS),
    ],
    // 4: session labels and expiry. Title, owner and expiry are columns of the session row
    // (existing sessions get none of them and never expire); tags are rows of their own,
    // indexed by (key, value) for lookups, and go with their session by cascade.
    &[Step::Sql(
        r#"
    ALTER TABLE agentmem_sessions ADD COLUMN title TEXT;
    ALTER TABLE agentmem_sessions ADD COLUMN owner TEXT;
    ALTER TABLE agentmem_sessions ADD COLUMN expires_at INTEGER;
    CREATE INDEX agentmem_sessions_owner ON agentmem_sessions (owner, name)
        WHERE owner IS NOT NULL;
    CREATE INDEX agentmem_sessions_expires ON agentmem_sessions (expires_at)
        WHERE expires_at IS NOT NULL;
    CREATE TABLE agentmem_session_tags (
        session_id INTEGER NOT NULL REFERENCES agentmem_sessions (id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (session_id, key)
    ) WITHOUT ROWID;
    CREATE INDEX agentmem_session_tags_lookup ON agentmem_session_tags (key, value, session_id);
    "#,
    )],
    // 5: store properties (the encryption layer's marker among them).
    &[Step::Sql(
        r#"
    CREATE TABLE agentmem_properties (
        name TEXT PRIMARY KEY,
        value TEXT NOT NULL
    ) WITHOUT ROWID;
    "#,
    )],
    // 6: checkpoints (LangGraph's checkpointer model), their channel values and pending
    // writes. Keys are TEXT compared with the default BINARY collation: byte order, as the
    // model orders ids and threads. Pending writes are keyed by their checkpoint's natural key
    // with no foreign key: LangGraph may write them before the checkpoint itself is put.
    // Tables with bodies keep their row ids (rather than WITHOUT ROWID), as SQLite advises for
    // rows that may be large.
    &[Step::Sql(
        r#"
    CREATE TABLE agentmem_checkpoints (
        thread TEXT NOT NULL,
        ns TEXT NOT NULL,
        checkpoint_id TEXT NOT NULL,
        parent_id TEXT,
        body_type TEXT NOT NULL,
        body BLOB NOT NULL,
        channel_versions TEXT NOT NULL,
        metadata TEXT NOT NULL,
        run_id BLOB,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (thread, ns, checkpoint_id)
    );
    CREATE INDEX agentmem_checkpoints_thread_newest
        ON agentmem_checkpoints (thread, checkpoint_id DESC, ns);
    CREATE INDEX agentmem_checkpoints_newest
        ON agentmem_checkpoints (checkpoint_id DESC, thread, ns);
    CREATE INDEX agentmem_checkpoints_run ON agentmem_checkpoints (run_id)
        WHERE run_id IS NOT NULL;
    CREATE TABLE agentmem_checkpoint_blobs (
        thread TEXT NOT NULL,
        ns TEXT NOT NULL,
        channel TEXT NOT NULL,
        version TEXT NOT NULL,
        value_type TEXT,
        value BLOB,
        PRIMARY KEY (thread, ns, channel, version)
    );
    CREATE TABLE agentmem_checkpoint_writes (
        thread TEXT NOT NULL,
        ns TEXT NOT NULL,
        checkpoint_id TEXT NOT NULL,
        task_id TEXT NOT NULL,
        idx INTEGER NOT NULL,
        channel TEXT NOT NULL,
        value_type TEXT NOT NULL,
        value BLOB NOT NULL,
        task_path TEXT NOT NULL,
        PRIMARY KEY (thread, ns, checkpoint_id, task_id, idx)
    );
    "#,
    )],
    // 7: the knowledge graph. Row ids give the order (creation for entities and relations,
    // addition for observations): SQLite gives a new row a larger id than every row in the
    // table, so a deleted and re-created entity, relation or observation goes to the end.
    // Relation ends are names, not entity ids: a relation may name entities that do not exist.
    // The unique (from_name, to_name, relation_type) index serves lookups by `from_name`.
    &[Step::Sql(
        r#"
    CREATE TABLE agentmem_graph_entities (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        entity_type TEXT NOT NULL
    );
    CREATE TABLE agentmem_graph_observations (
        id INTEGER PRIMARY KEY,
        entity_id INTEGER NOT NULL REFERENCES agentmem_graph_entities (id) ON DELETE CASCADE,
        content TEXT NOT NULL,
        UNIQUE (entity_id, content)
    );
    CREATE TABLE agentmem_graph_relations (
        id INTEGER PRIMARY KEY,
        from_name TEXT NOT NULL,
        to_name TEXT NOT NULL,
        relation_type TEXT NOT NULL,
        UNIQUE (from_name, to_name, relation_type)
    );
    CREATE INDEX agentmem_graph_relations_to ON agentmem_graph_relations (to_name);
    "#,
    )],
    // 8: embedding vectors, opaque bytes under their 32-byte key. The key is the whole row's
    // identity and every access is by key, so the table is clustered on it (no rowid).
    &[Step::Sql(
        r#"
    CREATE TABLE agentmem_vectors (
        key BLOB PRIMARY KEY,
        data BLOB NOT NULL
    ) WITHOUT ROWID;
    "#,
    )],
    // 9: the full-text indexes hold Porter stems, so "adopting" finds "adoption"; both are
    // made again and rebuilt from the rows (the tables themselves are untouched).
    &[
        Step::DropFts(MESSAGES_FTS),
        Step::CreateFts(MESSAGES_FTS, TERMS),
        Step::DropFts(MEMORIES_FTS),
        Step::CreateFts(MEMORIES_FTS, TERMS),
    ],
    // 10: the memory revision (`MemoryStore::memory_revision`): a one-row counter that
    // triggers on the memory items table bump with every row inserted, updated or deleted, so
    // it follows every writer of the file (other processes, raw SQL) without their help. It
    // starts at 0 whatever the table already holds: readers compare it only with values they
    // read after this migration. Triggers fire per row, so a purge bumps it once per item.
    &[Step::Sql(
        r#"
    CREATE TABLE agentmem_memory_revision (
        singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
        revision INTEGER NOT NULL
    );
    INSERT INTO agentmem_memory_revision (singleton, revision) VALUES (1, 0);
    CREATE TRIGGER agentmem_memory_revision_insert AFTER INSERT ON agentmem_memories BEGIN
        UPDATE agentmem_memory_revision SET revision = revision + 1 WHERE singleton = 1;
    END;
    CREATE TRIGGER agentmem_memory_revision_update AFTER UPDATE ON agentmem_memories BEGIN
        UPDATE agentmem_memory_revision SET revision = revision + 1 WHERE singleton = 1;
    END;
    CREATE TRIGGER agentmem_memory_revision_delete AFTER DELETE ON agentmem_memories BEGIN
        UPDATE agentmem_memory_revision SET revision = revision + 1 WHERE singleton = 1;
    END;
"#,
    )],
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
    for (index, steps) in MIGRATIONS
        .iter()
        .enumerate()
        .take(target as usize)
        .skip(from as usize)
    {
        tracing::debug!(db, to = index + 1, "applying agentmem sqlite migration");
        for step in *steps {
            step.run(&tx)?;
        }
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
mod tests {
    use super::*;
    use crate::testing::{check_fts, count, fts_hits, migrated, rows, rows_in};

    /// An in-memory database at schema `version`, with foreign keys on as the store opens it
    /// (dropping a table with foreign keys on deletes its rows first).
    fn at_version(version: u32) -> Connection {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "foreign_keys", true).unwrap();
        migrate_to(&mut conn, "m", version).unwrap();
        assert_eq!(read_version(&conn).unwrap(), version);
        conn
    }

    /// A database at schema `version` holding what `setup` inserts, then migrated to the
    /// current schema (from `version`, as `migrate` reports).
    fn migrated_from(version: u32, setup: &str) -> Connection {
        let mut conn = at_version(version);
        conn.execute_batch(setup).unwrap();
        assert_eq!(migrate(&mut conn, "m").unwrap(), version);
        assert_eq!(read_version(&conn).unwrap(), SCHEMA_VERSION);
        conn
    }

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
        let conn = migrated_from(
            1,
            "INSERT INTO agentmem_sessions (name, created_at, updated_at) VALUES ('s', 0, 0);
             INSERT INTO agentmem_messages (session_id, seq, message_id, role, content, timestamp)
                 VALUES (1, 1, 'm1', 'user', 'kubernetes latency', 0);
             INSERT INTO agentmem_memories (item_id, kind, text, created_at, updated_at)
                 VALUES ('i1', 'fact', 'likes kubernetes', 0, 0);",
        );
        assert_eq!(fts_hits(&conn, "agentmem_messages_fts", "\"latency\""), 1);
        assert_eq!(
            fts_hits(&conn, "agentmem_memories_fts", "\"kubernetes\""),
            1
        );
    }

    #[test]
    fn version_2_memories_become_global_in_migration_3_and_stay_searchable() {
        let conn = migrated_from(
            2,
            "INSERT INTO agentmem_memories (id, item_id, kind, key, text, created_at, updated_at)
                 VALUES (7, 'i7', 'fact', 'name', 'name is kubernetes', 1, 2);
             INSERT INTO agentmem_memories (id, item_id, kind, text, metadata, created_at, updated_at)
                 VALUES (9, 'i9', 'insight', 'kubernetes latency', '{\"a\":1}', 3, 4);",
        );
        let migrated: Vec<(i64, String, String, Option<i64>, i64, i64)> = rows(
            &conn,
            "SELECT id, item_id, scope, expires_at, created_at, updated_at
             FROM agentmem_memories ORDER BY id",
            [],
            |r| r.try_into(),
        );
        assert_eq!(
            migrated,
            [
                (7, "i7".into(), String::new(), None, 1, 2),
                (9, "i9".into(), String::new(), None, 3, 4)
            ]
        );
        let matching = |conn: &Connection, word: &str| -> Vec<String> {
            rows(
                conn,
                "SELECT m.item_id FROM agentmem_memories_fts f
                 JOIN agentmem_memories m ON m.id = f.rowid
                 WHERE agentmem_memories_fts MATCH ?1 ORDER BY m.id",
                [word],
                |r| r.get(0),
            )
        };
        assert_eq!(matching(&conn, "\"kubernetes\""), ["i7", "i9"]);
        // A key is now unique per scope and kind.
        conn.execute(
            "INSERT INTO agentmem_memories (item_id, scope, kind, key, text, created_at, updated_at)
                 VALUES ('a1', 'agent:a', 'fact', 'name', 'name is tokyo', 5, 5)",
            [],
        )
        .unwrap();
        assert!(conn
            .execute(
                "INSERT INTO agentmem_memories (item_id, kind, key, text, created_at, updated_at)
                     VALUES ('dup', 'fact', 'name', 'again', 5, 5)",
                [],
            )
            .is_err());
        // The full-text triggers follow the new table.
        conn.execute_batch(
            "UPDATE agentmem_memories SET text = 'osaka' WHERE item_id = 'i7';
             DELETE FROM agentmem_memories WHERE item_id = 'i9';",
        )
        .unwrap();
        assert!(matching(&conn, "\"kubernetes\"").is_empty());
        assert_eq!(matching(&conn, "\"osaka\""), ["i7"]);
        assert_eq!(matching(&conn, "\"tokyo\""), ["a1"]);
        check_fts(&conn, "agentmem_memories_fts");
        let leftovers = count(
            &conn,
            "SELECT count(*) FROM sqlite_master WHERE name LIKE '%v3%' OR tbl_name LIKE '%v3%'",
            [],
        );
        assert_eq!(leftovers, 0);
    }

    #[test]
    fn version_3_sessions_read_back_after_migration_4_without_labels_or_expiry() {
        let mut conn = migrated_from(
            3,
            "INSERT INTO agentmem_sessions
                 (id, name, metadata, message_count, next_seq, created_at, updated_at)
                 VALUES (4, 'old', '{\"a\":1}', 2, 3, 10, 20);
             INSERT INTO agentmem_messages (session_id, seq, message_id, role, content, timestamp)
                 VALUES (4, 1, 'm1', 'user', 'kubernetes latency', 11),
                        (4, 2, 'm2', 'assistant', 'low', 12);",
        );
        let id: agentmem_core::SessionId = "old".parse().unwrap();
        for limit in [None, Some(0), Some(1)] {
            let session = crate::sessions::load(&mut conn, &id, limit)
                .unwrap()
                .expect("the old session reads back");
            assert_eq!(session.total_messages, 2);
            assert!(session.labels.is_empty());
            assert_eq!(session.expires_at, None);
            assert_eq!(session.metadata["a"], 1);
        }
        let listed = crate::sessions::list(&mut conn).unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].message_count, 2);
        // Old sessions take labels, keep their sequence numbers, and go with their tags.
        crate::lifecycle::update(
            &mut conn,
            &id,
            &agentmem_core::SessionPatch::default()
                .owner("ada")
                .tag("k", "v"),
        )
        .unwrap();
        crate::sessions::append(&mut conn, "old", &[agentmem_core::Message::user("x")]).unwrap();
        let session = crate::sessions::load(&mut conn, &id, None)
            .unwrap()
            .unwrap();
        assert_eq!(session.messages.len(), 3);
        assert_eq!(session.labels.owner.as_deref(), Some("ada"));
        crate::sessions::delete(&mut conn, "old").unwrap();
        let tags = count(&conn, "SELECT count(*) FROM agentmem_session_tags", []);
        assert_eq!(tags, 0);
    }

    #[test]
    fn version_5_data_stays_and_gains_empty_checkpoint_tables_in_migration_6() {
        let conn = migrated_from(
            5,
            "INSERT INTO agentmem_sessions (name, created_at, updated_at) VALUES ('s', 0, 0);
             INSERT INTO agentmem_properties (name, value) VALUES ('p', 'v');",
        );
        for table in [
            "agentmem_checkpoints",
            "agentmem_checkpoint_blobs",
            "agentmem_checkpoint_writes",
        ] {
            assert_eq!(
                count(&conn, &format!("SELECT count(*) FROM {table}"), []),
                0
            );
        }
        assert_eq!(
            count(&conn, "SELECT count(*) FROM agentmem_sessions", []),
            1
        );
        let value: String = conn
            .query_row("SELECT value FROM agentmem_properties", [], |r| r.get(0))
            .unwrap();
        assert_eq!(value, "v");
    }

    #[test]
    fn version_6_data_stays_and_gains_empty_graph_tables_in_migration_7() {
        let conn = migrated_from(
            6,
            "INSERT INTO agentmem_sessions (name, created_at, updated_at) VALUES ('s', 0, 0);
             INSERT INTO agentmem_checkpoints (thread, ns, checkpoint_id, body_type, body,
                 channel_versions, metadata, created_at)
                 VALUES ('t', '', '1', 'json', x'7b7d', '{}', '{}', 0);",
        );
        let graph = ["entities", "observations", "relations"]
            .map(|t| rows_in(&conn, &format!("agentmem_graph_{t}")));
        assert_eq!(graph, [0, 0, 0]);
        let kept = ["agentmem_sessions", "agentmem_checkpoints"].map(|t| rows_in(&conn, t));
        assert_eq!(kept, [1, 1]);
    }

    #[test]
    fn version_7_data_stays_and_gains_an_empty_vector_table_in_migration_8() {
        let conn = migrated_from(
            7,
            "INSERT INTO agentmem_sessions (name, created_at, updated_at) VALUES ('s', 0, 0);
             INSERT INTO agentmem_graph_entities (name, entity_type) VALUES ('Alice', 'person');",
        );
        assert_eq!(rows_in(&conn, "agentmem_vectors"), 0);
        let kept = ["agentmem_sessions", "agentmem_graph_entities"].map(|t| rows_in(&conn, t));
        assert_eq!(kept, [1, 1]);
        conn.execute(
            "INSERT INTO agentmem_vectors (key, data) VALUES (?1, ?2)",
            (&[7u8; 32][..], &[1u8, 2, 3, 4][..]),
        )
        .unwrap();
        assert_eq!(rows_in(&conn, "agentmem_vectors"), 1);
    }

    #[test]
    fn version_9_memories_stay_and_gain_a_revision_in_migration_10_that_every_write_bumps() {
        let mut conn = migrated_from(
            9,
            "INSERT INTO agentmem_memories (id, item_id, kind, key, text, created_at, updated_at)
                 VALUES (7, 'i7', 'fact', 'name', 'name is kubernetes', 1, 2);",
        );
        let revision = |conn: &mut Connection| crate::memories::revision(conn).unwrap();
        assert_eq!(revision(&mut conn), 0, "the counter starts at 0");
        assert_eq!(rows_in(&conn, "agentmem_memories"), 1);
        assert_eq!(
            fts_hits(&conn, "agentmem_memories_fts", "\"kubernetes\""),
            1
        );
        let mut last = 0;
        // Each write as an older build, another tool or a person would run it, knowing
        // nothing of the counter; a statement touching no row changes nothing.
        for (sql, bumps) in [
            "INSERT INTO agentmem_memories (item_id, kind, text, created_at, updated_at)
                 VALUES ('i8', 'fact', 'tokyo', 3, 3)",
            "UPDATE agentmem_memories SET text = 'osaka' WHERE item_id = 'i8'",
            "UPDATE agentmem_memories SET updated_at = 9 WHERE item_id = 'i7'",
            "UPDATE agentmem_memories SET text = 'none' WHERE item_id = 'missing'",
            "INSERT INTO agentmem_memories (item_id, kind, text, created_at, updated_at)
                 VALUES ('i8', 'fact', 'kyoto', 3, 4)
                 ON CONFLICT (item_id) DO UPDATE SET text = excluded.text",
            "DELETE FROM agentmem_memories WHERE item_id = 'missing'",
            "DELETE FROM agentmem_memories WHERE item_id = 'i7'",
            "DELETE FROM agentmem_memories",
        ]
        .into_iter()
        .zip([true, true, true, false, true, false, true, true])
        {
            conn.execute(sql, []).unwrap();
            let now = revision(&mut conn);
            assert_eq!(now != last, bumps, "{sql}: {last} -> {now}");
            last = now;
        }
        assert_eq!(rows_in(&conn, "agentmem_memories"), 0);
        // A transaction rolled back takes its bumps with it, as it takes its rows.
        let tx = conn.transaction().unwrap();
        tx.execute(
            "INSERT INTO agentmem_memories (item_id, kind, text, created_at, updated_at)
                 VALUES ('i9', 'fact', 'x', 5, 5)",
            [],
        )
        .unwrap();
        drop(tx);
        assert_eq!(revision(&mut conn), last);
        check_fts(&conn, "agentmem_memories_fts");
    }

    #[test]
    fn newer_version_is_refused_without_changes() {
        let mut conn = migrated();
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
        let conn = migrated();
        conn.execute("UPDATE agentmem_schema SET version = 0", [])
            .unwrap();
        let err = read_version(&conn).unwrap_err().into_error("m");
        assert_eq!(err.kind(), agentmem_core::ErrorKind::CorruptData);
        conn.execute("DELETE FROM agentmem_schema", []).unwrap();
        let err = read_version(&conn).unwrap_err().into_error("m");
        assert_eq!(err.kind(), agentmem_core::ErrorKind::CorruptData);
    }
}
