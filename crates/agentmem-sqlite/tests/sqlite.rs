//! SQLite-specific behaviour: opening, refusing, migrating, error kinds, and the full-text
//! indexes staying in step with the rows.
use std::path::{Path, PathBuf};
use std::time::Duration;

use agentmem_core::{
    AgentMemoryExt, ErrorKind, Layered, MemoryFilter, MemoryItem, MemoryKind, MemoryStore, Message,
    MessageQuery, Operation, RetentionPolicy, Rewind, SessionId, SessionPatch, SessionStore,
};
use agentmem_sqlite::{SqliteConfig, SqliteStore, Synchronous, SCHEMA_VERSION};
use agentmem_testkit::probe::put_memories;
use rusqlite::Connection;

fn sid(name: &str) -> SessionId {
    SessionId::new(name).unwrap()
}

fn url(path: &Path) -> String {
    format!("sqlite://{}", path.display())
}

async fn open(path: &Path) -> Layered<SqliteStore> {
    SqliteStore::connect(&url(path)).await.expect("open")
}

/// Opens the database file `name` in `dir` and appends one message to session `s`, so the
/// file holds a schema and a row.
async fn open_with_one_message(dir: &Path, name: &str) -> (PathBuf, Layered<SqliteStore>) {
    let path = dir.join(name);
    let store = open(&path).await;
    store
        .append_one(&sid("s"), Message::user("x"))
        .await
        .unwrap();
    (path, store)
}

/// How many live messages match `text`, across every session.
async fn message_hits(store: &impl SessionStore, text: &str) -> usize {
    store
        .search_messages(text, &MessageQuery::default())
        .await
        .unwrap()
        .len()
}

/// Runs FTS5's own consistency check of an index against its content table.
fn fts_consistent(path: &Path) {
    let conn = Connection::open(path).unwrap();
    for table in ["agentmem_messages_fts", "agentmem_memories_fts"] {
        conn.execute(
            &format!("INSERT INTO {table} ({table}) VALUES ('integrity-check')"),
            [],
        )
        .unwrap_or_else(|e| panic!("{table} out of step: {e}"));
    }
}

#[tokio::test]
async fn empty_and_missing_files_are_migrated_to_the_current_schema() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    let store = open(&empty).await;
    assert_eq!(store.schema_version().await.unwrap(), SCHEMA_VERSION);

    let nested = dir.path().join("a/b/new.db");
    let store = open(&nested).await;
    assert_eq!(store.schema_version().await.unwrap(), SCHEMA_VERSION);
    assert_eq!(store.database(), nested.display().to_string());
    let mode: String = Connection::open(&nested)
        .unwrap()
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    meta.permissions().mode() & 0o777
}

/// A database we create is 0600, and SQLite gives its `-wal` and `-shm` the same mode, so no
/// other local user can read the conversations; folders we create are 0700. A file the user
/// made keeps the mode they chose.
#[cfg(unix)]
#[tokio::test]
async fn created_database_files_are_0600_and_folders_0700() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a/b/memory.db");
    let store = open(&db).await;
    store
        .append(&sid("private"), &[Message::user("secret")])
        .await
        .unwrap();
    put_memories(&store, &[(MemoryKind::Fact, "also secret")]).await;
    let files = ["memory.db", "memory.db-wal", "memory.db-shm"].map(|n| db.with_file_name(n));
    for file in &files {
        assert_eq!(mode(file), 0o600, "{}", file.display());
    }
    assert_eq!(mode(&dir.path().join("a")), 0o700);
    assert_eq!(mode(&dir.path().join("a/b")), 0o700);
    drop(store);

    let mine = dir.path().join("mine.db");
    std::fs::write(&mine, b"").unwrap();
    std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o640)).unwrap();
    let store = open(&mine).await;
    store
        .append(&sid("shared"), &[Message::user("hi")])
        .await
        .unwrap();
    assert_eq!(mode(&mine), 0o640, "an existing file keeps its mode");
    assert_eq!(mode(&mine.with_file_name("mine.db-wal")), 0o640);
}

#[tokio::test]
async fn data_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.db");
    let msgs = vec![
        Message::user("héllo").with_metadata("k", serde_json::json!({"n": [1, 2.5, null]})),
        Message::tool_call("c1", "search", "{\"q\":1}"),
        Message::tool_result("c1", "search", "found"),
    ];
    {
        let store = open(&path).await;
        store.append(&sid("s"), &msgs).await.unwrap();
        put_memories(&store, &[(MemoryKind::Fact, "likes tea")]).await;
    }
    let store = open(&path).await;
    assert_eq!(store.messages(&sid("s")).await.unwrap(), msgs);
    assert_eq!(
        store
            .list_memories(&MemoryFilter::default())
            .await
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn a_newer_schema_is_refused_and_the_file_left_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let path = open_with_one_message(dir.path(), "future.db").await.0;
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute(
            "UPDATE agentmem_schema SET version = ?1",
            [SCHEMA_VERSION + 1],
        )
        .unwrap();
    } // Closing the last connection checkpoints the WAL into the file.
    let before = std::fs::read(&path).unwrap();
    let err = SqliteStore::connect(&url(&path)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
    let text = err.to_string();
    assert!(text.contains("future.db"), "{text}");
    assert!(
        text.contains(&format!("schema version {}", SCHEMA_VERSION + 1)),
        "{text}"
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the database was modified"
    );
}

#[tokio::test]
async fn files_that_are_not_databases_are_corrupt_data_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.db");
    std::fs::write(
        &text,
        "# My notes\n\nThis is a Markdown file, not a database.\n".repeat(40),
    )
    .unwrap();
    let random = dir.path().join("random.db");
    // Deterministic pseudo-random bytes (xorshift), 8 KiB.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let bytes: Vec<u8> = (0..8192)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(&random, &bytes).unwrap();
    // Shorter than a SQLite header: must not be taken for an empty database and overwritten.
    let tiny = dir.path().join("tiny.db");
    std::fs::write(&tiny, "hello\n").unwrap();
    for path in [&text, &random, &tiny] {
        let before = std::fs::read(path).unwrap();
        let err = SqliteStore::connect(&url(path)).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::CorruptData, "{err}");
        assert!(
            err.to_string().contains(&path.display().to_string()),
            "{err}"
        );
        assert_eq!(std::fs::read(path).unwrap(), before);
    }
}

#[tokio::test]
async fn a_missing_file_with_create_false_is_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent.db");
    let err = SqliteStore::connect(&format!("{}?create=false", url(&path)))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    // Opening runs inside the layers' `open` operation, which labels its errors.
    assert_eq!(err.operation(), Some(Operation::Open));
    assert_eq!(err.backend_name(), Some("sqlite"));
    assert!(!path.exists());
}

#[tokio::test]
async fn bad_urls_are_invalid_input() {
    for bad in ["sqlite://x.db?journal=off", "sqlite://", "file://x.db"] {
        let err = SqliteStore::connect(bad).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{bad}: {err}");
    }
}

#[tokio::test]
async fn a_held_write_lock_gives_unavailable_after_the_busy_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("locked.db");
    let store = SqliteStore::connect_with(
        SqliteConfig::file(&path).with_busy_timeout(Duration::from_millis(50)),
    )
    .await
    .unwrap();
    let mut other = Connection::open(&path).unwrap();
    let tx = other
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .unwrap();
    let err = store
        .append_one(&sid("s"), Message::user("x"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(err.is_temporary());
    assert_eq!(err.operation(), Some(Operation::Append));
    // Reads are not blocked by a writer in WAL mode.
    assert!(store.load(&sid("s"), None).await.unwrap().is_none());
    drop(tx);
    store
        .append_one(&sid("s"), Message::user("x"))
        .await
        .unwrap();
}

#[tokio::test]
async fn memory_urls_and_caller_connections_work() {
    let store = SqliteStore::connect("sqlite::memory:").await.unwrap();
    assert!(!store.capabilities().cross_process);
    assert!(store.capabilities().indexed_search);
    store
        .append_one(&sid("s"), Message::user("in memory"))
        .await
        .unwrap();
    // Every call sees the same database (one shared connection).
    assert_eq!(store.messages(&sid("s")).await.unwrap().len(), 1);

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("caller.db");
    let store = SqliteStore::from_client(Connection::open(&path).unwrap())
        .await
        .unwrap();
    assert!(store.capabilities().cross_process);
    assert_eq!(store.schema_version().await.unwrap(), SCHEMA_VERSION);
    store
        .append_one(&sid("s"), Message::user("via caller"))
        .await
        .unwrap();
    assert_eq!(
        open(&path).await.messages(&sid("s")).await.unwrap().len(),
        1
    );
}

#[tokio::test]
async fn stored_garbage_is_corrupt_data() {
    let dir = tempfile::tempdir().unwrap();
    let (path, store) = open_with_one_message(dir.path(), "g.db").await;
    Connection::open(&path)
        .unwrap()
        .execute("UPDATE agentmem_messages SET metadata = '{not json'", [])
        .unwrap();
    let err = store.messages(&sid("s")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::CorruptData, "{err}");
    assert!(err.to_string().contains("g.db"), "{err}");
}

#[tokio::test]
async fn full_text_indexes_follow_every_change() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fts.db");
    let store =
        SqliteStore::connect_with(SqliteConfig::file(&path).with_synchronous(Synchronous::Normal))
            .await
            .unwrap();
    store
        .append_one(&sid("a"), Message::user("kubernetes upgrade"))
        .await
        .unwrap();
    store
        .append_one(&sid("b"), Message::user("kubernetes cost"))
        .await
        .unwrap();
    assert_eq!(message_hits(&store, "Kubernetes").await, 2);

    // save_session replaces the indexed rows.
    store
        .save_session(
            &sid("a"),
            &[Message::user("postgres tuning")],
            &Default::default(),
        )
        .await
        .unwrap();
    assert_eq!(message_hits(&store, "kubernetes").await, 1);
    assert_eq!(message_hits(&store, "postgres").await, 1);

    // Compacted messages leave the live search; the summary joins it.
    store
        .compact(&sid("a"), &[Message::system("summary: tuning")])
        .await
        .unwrap();
    assert_eq!(message_hits(&store, "postgres").await, 0);
    assert_eq!(message_hits(&store, "summary").await, 1);

    // Deleting a session cascades to its messages, archives and index entries.
    assert!(store.delete_session(&sid("a")).await.unwrap());
    assert_eq!(message_hits(&store, "summary").await, 0);

    // Bob's put replaces Alice's item (same key), keeping its id.
    let mut put = Vec::new();
    for text in ["name is Alice", "name is Bob"] {
        let item = MemoryItem::new(MemoryKind::Fact, text).with_key("name");
        put.push(store.put_memory(&item).await.unwrap());
    }
    let item = &put[0];
    let f = MemoryFilter::default();
    assert!(store.search_memories("alice", &f).await.unwrap().is_empty());
    let hits = store.search_memories("bob", &f).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].item.id, item.id);
    assert!(store.delete_memory(&item.id).await.unwrap());
    assert!(store.search_memories("bob", &f).await.unwrap().is_empty());

    store
        .append_one(&sid("old"), Message::user("kubernetes again"))
        .await
        .unwrap();
    let report = store
        .purge(&RetentionPolicy {
            max_age: None,
            max_sessions: Some(1),
            ..RetentionPolicy::default()
        })
        .await
        .unwrap();
    assert_eq!(report.sessions_deleted, 1);
    assert_eq!(message_hits(&store, "kubernetes").await, 1);
    // Purging expired memory items removes their index entries too; a put over an expired
    // key replaces the row (and its entry).
    let past = agentmem_core::now() - chrono::Duration::seconds(1);
    for text in ["expired volcano", "expired lava"] {
        store
            .put_memory(
                &MemoryItem::new(MemoryKind::ShortTerm, text)
                    .with_key(text)
                    .expiring_at(past),
            )
            .await
            .unwrap();
    }
    store
        .put_memory(&MemoryItem::new(MemoryKind::ShortTerm, "fresh lava").with_key("expired lava"))
        .await
        .unwrap();
    let report = store.purge(&RetentionPolicy::default()).await.unwrap();
    assert_eq!(report.memories_deleted, 1);
    assert!(store
        .search_memories("volcano", &f)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(store.search_memories("lava", &f).await.unwrap().len(), 1);
    fts_consistent(&path);
    let orphans: i64 = Connection::open(&path)
        .unwrap()
        .query_row(
            "SELECT (SELECT count(*) FROM agentmem_messages) + (SELECT count(*) FROM agentmem_archives)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(orphans, 1, "only the kept session's message remains");
}

#[tokio::test]
async fn fork_rewind_and_expiry_keep_the_index_and_leave_no_rows_behind() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("life.db");
    let store = open(&path).await;
    let (a, b) = (sid("a"), sid("b"));
    let first = Message::user("walrus tusks");
    store
        .append(&a, &[first.clone(), Message::assistant("narwhal horn")])
        .await
        .unwrap();
    store
        .update_session(&a, &SessionPatch::default().tag("k", "v").owner("ada"))
        .await
        .unwrap();
    store.fork(&a, &b, Some(&first.id)).await.unwrap();
    assert_eq!(message_hits(&store, "walrus").await, 2);
    store.rewind(&a, &Rewind::Last(1)).await.unwrap();
    assert_eq!(message_hits(&store, "narwhal").await, 0);
    fts_consistent(&path);

    // An expired session is out of every search at once; a write over it and a purge delete
    // its rows (messages, tags, index entries).
    let past = agentmem_core::now() - chrono::Duration::seconds(1);
    let expired = SessionPatch::default().expire_at(past);
    for session in [&a, &b] {
        store.update_session(session, &expired).await.unwrap();
    }
    assert_eq!(message_hits(&store, "walrus").await, 0);
    store.append_one(&a, Message::user("fresh")).await.unwrap();
    let report = store.purge(&RetentionPolicy::default()).await.unwrap();
    assert_eq!(
        report.sessions_deleted, 1,
        "b was still stored, a was rewritten"
    );
    fts_consistent(&path);
    let left: (i64, i64, i64) = Connection::open(&path)
        .unwrap()
        .query_row(
            "SELECT (SELECT count(*) FROM agentmem_sessions),
                    (SELECT count(*) FROM agentmem_messages),
                    (SELECT count(*) FROM agentmem_session_tags)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(left, (1, 1, 0));
}

#[tokio::test]
async fn search_text_is_never_fts_syntax() {
    let store = SqliteStore::connect("sqlite::memory:").await.unwrap();
    store
        .append_one(&sid("s"), Message::user("NEAR the AND gate, col:umn"))
        .await
        .unwrap();
    let all = MessageQuery::default();
    for query in [
        "NEAR(",
        "AND",
        "\"unbalanced",
        "col:umn",
        "*",
        "-x OR",
        "^start",
        "a + b",
    ] {
        let hits = store.search_messages(query, &all).await;
        assert!(hits.is_ok(), "{query:?}: {hits:?}");
    }
    assert_eq!(message_hits(&store, "and").await, 1);
    assert_eq!(message_hits(&store, "umn").await, 1);
    assert_eq!(message_hits(&store, "*").await, 0);
}

#[tokio::test]
async fn archives_in_the_same_second_get_suffixes_and_list_oldest_first() {
    let store = SqliteStore::connect("sqlite::memory:").await.unwrap();
    let s = sid("s");
    store.append_one(&s, Message::user("one")).await.unwrap();
    let mut ids = Vec::new();
    for i in 0..3 {
        ids.push(
            store
                .compact(&s, &[Message::system(format!("summary {i}"))])
                .await
                .unwrap()
                .id,
        );
    }
    let listed: Vec<_> = store
        .list_archives(&s)
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.id)
        .collect();
    assert_eq!(listed, ids);
    for id in &ids {
        assert!(id.as_str().starts_with("history_"), "{id}");
    }
    let unique: std::collections::HashSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), 3);
    let first = store.load_archive(&s, &ids[0]).await.unwrap();
    assert_eq!(first.messages[0].content, "one");
    assert_eq!(
        store.load_archive(&s, &ids[2]).await.unwrap().messages[0].content,
        "summary 1"
    );
}
