//! Hostile names and content on every backend: path traversal, absolute paths, NUL,
//! 10,000-character names, Redis glob characters, MongoDB `$`/`.` keys, SQL quotes, invalid
//! UTF-8 on disk and a 50 MB message. Each is rejected with `InvalidInput` or stored and
//! returned exactly, and nothing lands outside the store's root / prefix / schema / database.
//!
//! Every hostile string carries a marker unique to the test; afterwards the test looks for
//! that marker outside the store's namespace (files next to the root, Redis keys without the
//! prefix, Postgres tables and schemas, MongoDB databases and collections).
mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentmem_core::{
    AgentMemory, ErrorKind, MemoryFilter, MemoryId, MemoryItem, MemoryKind, MemoryStore, Message,
    MessageId, MessageQuery, Metadata, SessionId, SessionStore,
};
use agentmem_testkit::fixtures::session_ids;
use agentmem_testkit::unique_namespace;
use serde_json::json;

/// Names no backend may ever see: the validator refuses them.
fn hostile_names(marker: &str) -> Vec<String> {
    vec![
        format!("../{marker}"),
        format!("../../{marker}"),
        format!("/tmp/{marker}"),
        format!("/{marker}"),
        format!("a\0{marker}"),
        format!("{marker}\n"),
        "x".repeat(10_000),
        format!("{marker}*"),
        format!("{marker}?"),
        format!("[{marker}]"),
        format!("{marker}:x"),
        format!("${marker}"),
        format!(".{marker}"),
        format!("{marker}'; DROP TABLE sessions; --"),
        format!("{marker}\"x"),
        format!("C:\\{marker}"),
        ".".into(),
        "..".into(),
        String::new(),
    ]
}

/// Unusual names that are valid: each must get a session of its own.
fn tricky_valid_names() -> Vec<String> {
    vec![
        "a.b".into(),
        "a b".into(),
        "A.B".into(),
        "a".into(),
        "A".into(),
        "x".repeat(128),
        "エージェント".into(),
        "bob@example.com".into(),
        "Agent-7+x".into(),
        "_".into(),
        "0".into(),
        "a-".into(),
    ]
}

#[derive(Debug, Default)]
struct Figures {
    names_refused: usize,
    sessions_checked: usize,
    messages_stored: usize,
    messages_refused: usize,
    memories_stored: usize,
    memories_refused: usize,
    big: &'static str,
}

fn ok_or_invalid<T>(what: &str, r: agentmem_core::Result<T>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{what}: {e}");
            None
        }
    }
}

/// Whether `result` is `absent` (what a call returns for an id that addresses nothing) or a
/// refusal as invalid input.
fn absent_or_refused<T: PartialEq>(result: &agentmem_core::Result<T>, absent: T) -> bool {
    match result {
        Ok(value) => *value == absent,
        Err(e) => e.kind() == ErrorKind::InvalidInput,
    }
}

fn hostile_messages(marker: &str) -> Vec<Message> {
    let sql = format!("x'); CREATE TABLE {marker}(i int); --");
    let mut dollar = Metadata::new();
    dollar.insert("$set".into(), json!({"$gt": "", "a.b": 1}));
    dollar.insert("a.b.c".into(), json!("dotted"));
    dollar.insert("$".into(), json!("$"));
    dollar.insert(format!("{marker}.$where"), json!(marker));
    let mut empty_key = Metadata::new();
    empty_key.insert(String::new(), json!("empty key"));
    let mut nul_key = Metadata::new();
    nul_key.insert(format!("nul\0{marker}"), json!("v"));
    let base = |content: String| Message::user(content);
    let with_meta = |meta: Metadata| {
        let mut m = base(format!("metadata {marker}"));
        m.metadata = meta;
        m
    };
    let m_dollar = with_meta(dollar);
    let m_empty = with_meta(empty_key);
    let m_nul = with_meta(nul_key);
    // Ids that would be paths, operators or patterns if a backend used them as such.
    let id_tests = [
        format!("../../{marker}"),
        format!("${marker}"),
        format!("{marker}.a.b"),
        format!("{marker}'); --"),
        format!("{marker}:*"),
        format!("/tmp/{marker}"),
    ]
    .map(|id| {
        base(format!("id test {marker}")).with_id(MessageId::new(id).expect("valid message id"))
    });
    let mut all = vec![
        base(sql.clone()),
        base(format!("'; DROP TABLE messages; -- {marker}")),
        base(format!("glob * ? [a-z] \\ {marker}:*")),
        base(format!("nul \0 inside {marker}")),
        base(format!("${marker} {{\"$where\": \"1\"}}")),
        base(format!("\u{202e}bidi\u{feff} {marker} \r\n\t")),
        base("x".repeat(10_000)),
        base(format!("### User — 2026-01-01T00:00:00\n\n---\n\n{marker}")),
        base(String::new()),
        base(format!("emoji 👩‍👩‍👧 {marker}")),
        m_dollar,
        m_empty,
        m_nul,
        {
            let mut m = Message::tool_call(format!("{marker}'*"), format!("$tool.{marker}"), "{}");
            m.content = format!("tool {marker}");
            m
        },
    ];
    all.extend(id_tests);
    all
}

/// The backend-independent part: names, messages, memory items, searches and a 50 MB message,
/// each hostile string carrying a fresh marker; returns the figures and the marker.
async fn hostile_suite(store: &dyn AgentMemory) -> (Figures, String) {
    let marker = unique_namespace("pwned");
    let f = hostile_checks(store, &marker).await;
    (f, marker)
}

async fn hostile_checks(store: &dyn AgentMemory, marker: &str) -> Figures {
    let mut f = Figures::default();
    let backend = store.backend();
    for name in hostile_names(marker) {
        let err = SessionId::new(name.clone()).expect_err("a hostile name is refused");
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        f.names_refused += 1;
    }
    // Ids no backend could store are refused before any store sees them, also on import.
    for id in [format!("{marker}\0"), "x".repeat(10_000), String::new()] {
        let err = MessageId::new(id.clone()).expect_err("a hostile message id is refused");
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert!(
            MemoryId::new(id.clone()).is_err(),
            "a hostile memory id is refused"
        );
        let mut json = serde_json::to_value(Message::user("x")).unwrap();
        json["id"] = serde_json::Value::String(id);
        assert!(
            serde_json::from_value::<Message>(json).is_err(),
            "a hostile id does not parse"
        );
        f.names_refused += 1;
    }

    // Tricky valid names: each its own session, no collision (case, dots, spaces).
    let names = tricky_valid_names();
    for name in &names {
        let id = SessionId::new(name.clone()).unwrap();
        let m = Message::user(format!("I am {name}"));
        store.append(&id, &[m]).await.unwrap();
    }
    for name in &names {
        let id = SessionId::new(name.clone()).unwrap();
        let s = store.load(&id, None).await.unwrap().unwrap();
        assert_eq!(s.messages.len(), 1, "{backend}: session {name:?}");
        assert_eq!(s.messages[0].content, format!("I am {name}"), "{backend}");
        f.sessions_checked += 1;
    }
    let listed = session_ids(store).await;
    for name in &names {
        assert!(listed.contains(name), "{backend}: {name:?} listed");
    }

    // Hostile content, one append each so one refusal hides nothing.
    let session: SessionId = "hostile".parse().unwrap();
    let mut expected = Vec::new();
    for m in hostile_messages(marker) {
        let what = format!(
            "{backend}: append {:?}",
            m.id.chars().take(40).collect::<String>()
        );
        if ok_or_invalid(
            &what,
            store.append(&session, std::slice::from_ref(&m)).await,
        )
        .is_some()
        {
            expected.push(m);
            f.messages_stored += 1;
        } else {
            f.messages_refused += 1;
        }
    }
    let stored = store.load(&session, None).await.unwrap().unwrap().messages;
    assert_eq!(stored.len(), expected.len(), "{backend}: message count");
    for (s, e) in stored.iter().zip(&expected) {
        assert_eq!(s, e, "{backend}: stored exactly");
    }
    // save_session with the same content round-trips too.
    if !expected.is_empty() {
        let copy: SessionId = "hostile copy".parse().unwrap();
        let mut meta = Metadata::new();
        meta.insert("$where".into(), json!(marker));
        meta.insert("a.b".into(), json!("'; --"));
        if ok_or_invalid(
            "save_session",
            store.save_session(&copy, &expected, &meta).await,
        )
        .is_some()
        {
            let s = store.load(&copy, None).await.unwrap().unwrap();
            assert_eq!(s.messages, expected, "{backend}: save_session exactly");
            assert_eq!(s.metadata, meta, "{backend}: session metadata exactly");
        }
    }

    // Searches with hostile queries: typed, never a crash; scoped to the store.
    for q in [
        "*",
        "' OR 1=1 --",
        "$where",
        "\0",
        "a.b",
        "[",
        "%",
        "_",
        "\"",
        "NEAR(",
        "-x",
        "{}",
    ] {
        let r = store.search_messages(q, &MessageQuery::default()).await;
        ok_or_invalid(&format!("{backend}: search {q:?}"), r);
        let r = store.search_memories(q, &MemoryFilter::default()).await;
        ok_or_invalid(&format!("{backend}: memory search {q:?}"), r);
    }

    // Memory items: hostile ids, keys, text and metadata.
    let mut keepers = Vec::new();
    for (text, key) in [("keeper a", "ka"), ("keeper b", "kb")] {
        let item = MemoryItem::new(MemoryKind::Fact, text).with_key(key);
        keepers.push(store.put_memory(&item).await.unwrap());
    }
    let mut items = vec![
        MemoryItem::new(
            MemoryKind::Fact,
            format!("x'); DROP TABLE memories; -- {marker}"),
        ),
        MemoryItem::new(MemoryKind::LongTerm, format!("glob {marker}*")).with_key("*"),
        MemoryItem::new(MemoryKind::Insight, "dollar").with_key(format!("${marker}.a")),
        MemoryItem::new(MemoryKind::ShortTerm, "meta")
            .with_metadata("$inc", json!({"n": 1}))
            .with_metadata("a.b", json!(marker)),
        MemoryItem::new(MemoryKind::Fact, "nul \0 text"),
        MemoryItem::new(MemoryKind::Fact, "long").with_key("k".repeat(10_000)),
    ];
    for (i, id) in [
        format!("../../{marker}"),
        format!("/tmp/{marker}"),
        format!("{marker}:*"),
        format!("${marker}"),
        "*".to_string(),
    ]
    .into_iter()
    .enumerate()
    {
        let mut item = MemoryItem::new(MemoryKind::Fact, format!("hostile id {i}"));
        item.id = MemoryId::new(id).expect("valid memory id");
        items.push(item);
    }
    for item in items {
        let what = format!("{backend}: put_memory {:?}", item.id);
        match ok_or_invalid(&what, store.put_memory(&item).await) {
            Some(stored) => {
                let back = store.get_memory(&stored.id).await.unwrap();
                assert_eq!(back.as_ref(), Some(&stored), "{what}: returned exactly");
                assert_eq!(stored.text, item.text, "{what}");
                assert_eq!(stored.metadata, item.metadata, "{what}");
                f.memories_stored += 1;
            }
            None => f.memories_refused += 1,
        }
    }
    // Glob-like ids address nothing but themselves.
    for probe in ["?", "[a-z]*", "%", "_", ".*"] {
        let id = MemoryId::new(probe).expect("valid memory id");
        let got = store.get_memory(&id).await;
        assert!(
            absent_or_refused(&got, None),
            "{backend}: get_memory({probe:?}) = {got:?}"
        );
        let deleted = store.delete_memory(&id).await;
        assert!(
            absent_or_refused(&deleted, false),
            "{backend}: delete_memory({probe:?}) = {deleted:?}"
        );
    }
    // Deleting the item whose id is `*` deletes that one only.
    let _ = store
        .delete_memory(&MemoryId::new("*").expect("valid memory id"))
        .await;
    for keeper in &keepers {
        assert_eq!(
            store.get_memory(&keeper.id).await.unwrap().as_ref(),
            Some(keeper),
            "{backend}: an unrelated item survived"
        );
    }
    f.big = big_message(store).await;
    f
}

/// A 50 MB message: refused with `InvalidInput` or stored and returned exactly.
async fn big_message(store: &dyn AgentMemory) -> &'static str {
    let session: SessionId = "big".parse().unwrap();
    let chunk = "0123456789abcdef—é\n";
    let content = chunk.repeat(50 * 1024 * 1024 / chunk.len());
    let m = Message::user(content);
    match store.append(&session, std::slice::from_ref(&m)).await {
        Ok(()) => {
            let back = store.load(&session, None).await.unwrap().unwrap().messages;
            assert_eq!(back.len(), 1);
            assert!(
                back[0] == m,
                "{}: the 50 MB message came back changed",
                store.backend()
            );
            "stored and returned exactly"
        }
        Err(e) => {
            assert_eq!(
                e.kind(),
                ErrorKind::InvalidInput,
                "{}: {e}",
                store.backend()
            );
            let left = store.load(&session, None).await.unwrap();
            assert!(
                left.is_none(),
                "{}: the refused append ({e}) created the session: {:?}",
                store.backend(),
                left.map(|s| (s.total_messages, s.messages.len()))
            );
            "refused with invalid input"
        }
    }
}

fn print(backend: &str, f: &Figures) {
    println!(
        "hostile: {backend}: {} hostile names refused, {} tricky sessions kept apart, hostile messages {} stored exactly / {} refused, memory items {} stored exactly / {} refused, 50 MB message {}; nothing outside the namespace",
        f.names_refused,
        f.sessions_checked,
        f.messages_stored,
        f.messages_refused,
        f.memories_stored,
        f.memories_refused,
        f.big
    );
}

/// Runs [`hostile_suite`] on an embedded store at `path` = `<folder>/<name>` in a fresh
/// folder, opened at `<scheme><path><query>`, and closes the store; returns the folder, the
/// path, the figures and the marker.
async fn embedded_suite(
    scheme: &str, name: &str, query: &str,
) -> (tempfile::TempDir, PathBuf, Figures, String) {
    let outer = tempfile::tempdir().unwrap();
    let path = outer.path().join(name);
    let url = format!("{scheme}{}{query}", path.display());
    let store = agentmem::open(&url).await.unwrap();
    let (f, marker) = hostile_suite(store.as_ref()).await;
    (outer, path, f, marker)
}

/// A fresh namespace on a server backend, its URL (`url_of` the namespace) and the store open
/// there; `None` (a skip) when the server cannot be reached.
async fn server_store(
    service: &str, url_of: fn(&str) -> String,
) -> Option<(String, String, Arc<dyn AgentMemory>)> {
    let namespace = unique_namespace("rel_hostile");
    let url = url_of(&namespace);
    let store = common::open_or_skip(service, &url).await?;
    Some((namespace, url, store))
}

/// Checks that none of `names` (of `what`: files, databases, …) carries the marker.
fn assert_unmarked<T: std::fmt::Display>(
    names: impl IntoIterator<Item = T>, marker: &str, what: &str,
) {
    for name in names {
        let name = name.to_string();
        assert!(
            !name.contains(marker),
            "a {what} named from hostile input: {name}"
        );
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        out.push(path.clone());
        if path.is_dir() {
            walk(&path, out);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_hostile_input() {
    let (outer, root, f, marker) = embedded_suite("file://", "root", "?durability=buffered").await;
    let top: Vec<_> = std::fs::read_dir(outer.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        top,
        vec![std::ffi::OsString::from("root")],
        "only the root was created"
    );
    assert!(!Path::new(&format!("/tmp/{marker}")).exists());
    let mut paths = Vec::new();
    walk(&root, &mut paths);
    assert_unmarked(paths.iter().map(|p| p.display()), &marker, "file");
    print("file", &f);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_hostile_input() {
    let (outer, db, f, marker) =
        embedded_suite("sqlite://", "memory.db", "?synchronous=normal").await;
    let conn = rusqlite::Connection::open(&db).unwrap();
    let tables: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name LIKE ?1",
            [format!("%{marker}%")],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(tables, 0, "SQL from content was executed");
    for e in std::fs::read_dir(outer.path()).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(name.starts_with("memory.db"), "unexpected file {name}");
    }
    print("sqlite", &f);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_hostile_input() {
    let Some((prefix, _, store)) = server_store("Redis", common::redis_url).await else {
        return;
    };
    let (f, marker) = hostile_suite(store.as_ref()).await;
    // Every key mentioning the marker (or at all new) lives under the prefix.
    let base = agentmem_testkit::env_url("REDIS_URL", "redis://127.0.0.1:6379");
    let client = redis::Client::open(base.as_str()).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("*{marker}*"))
        .query_async(&mut con)
        .await
        .unwrap();
    for k in &keys {
        assert!(
            k.starts_with(&format!("{prefix}:")),
            "key outside the prefix: {k}"
        );
    }
    let ours: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}*"))
        .query_async(&mut con)
        .await
        .unwrap();
    assert!(!ours.is_empty());
    if !ours.is_empty() {
        let _: () = redis::cmd("DEL")
            .arg(&ours)
            .query_async(&mut con)
            .await
            .unwrap();
    }
    print("Redis", &f);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_hostile_input() {
    let Some((_, url, _probe)) = server_store("PostgreSQL", common::postgres_url).await else {
        return;
    };
    let store = agentmem::postgres::PostgresStore::connect(&url)
        .await
        .unwrap();
    let (f, marker) = hostile_suite(&store).await;
    let client = store.pool().get().await.unwrap();
    let pattern = format!("%{marker}%");
    let mut counts = Vec::new();
    for sql in [
        "SELECT count(*) FROM information_schema.tables WHERE table_name ILIKE $1 OR table_schema ILIKE $1",
        "SELECT count(*) FROM information_schema.schemata WHERE schema_name ILIKE $1",
    ] {
        let row = client.query_one(sql, &[&pattern]).await.unwrap();
        counts.push(row.get::<_, i64>(0));
    }
    assert_eq!(counts[0], 0, "SQL from content was executed");
    assert_eq!(counts[1], 0);
    drop(client);
    store.drop_schema().await.unwrap();
    print("PostgreSQL", &f);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mongodb_hostile_input() {
    let Some((db, url, _probe)) = server_store("MongoDB", common::mongo_url).await else {
        return;
    };
    let store = agentmem::mongodb::MongoStore::connect(&url).await.unwrap();
    let (f, marker) = hostile_suite(&store).await;
    let client = store.client();
    let databases = client.list_database_names().await.unwrap();
    assert_unmarked(databases, &marker, "database");
    let collections = client.database(&db).list_collection_names().await.unwrap();
    assert_unmarked(collections, &marker, "collection");
    store.drop_database().await.unwrap();
    print("MongoDB", &f);
}

/// Checks that a read of a file with invalid UTF-8 failed as `CorruptData` naming `file`.
fn refused_naming<T: std::fmt::Debug>(read: agentmem_core::Result<T>, file: &str) {
    let err = read.expect_err("invalid UTF-8 is refused");
    assert_eq!(err.kind(), ErrorKind::CorruptData, "{err}");
    assert!(err.to_string().contains(file), "names the file: {err}");
}

/// Checks that the folder `quarantine` holds one file: the line of the log `bad` that holds
/// byte `pos`, byte for byte.
fn assert_line_set_aside(quarantine: &Path, bad: &[u8], pos: usize) {
    let line_start = bad[..pos].iter().rposition(|&b| b == b'\n').unwrap() + 1;
    let line_end = pos + bad[pos..].iter().position(|&b| b == b'\n').unwrap() + 1;
    let quarantined: Vec<Vec<u8>> = std::fs::read_dir(quarantine)
        .unwrap()
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect();
    assert_eq!(
        quarantined,
        [bad[line_start..line_end].to_vec()],
        "set aside byte for byte"
    );
}

/// Invalid UTF-8 in the file backend's files: nothing dropped. A whole line of
/// `session.jsonl` or `memories.jsonl` is set aside byte for byte in a `quarantine/` folder
/// (the log keeps its other lines); a Swarms `MEMORY.md` is `CorruptData` naming the file,
/// not rewritten. (Every other file kind: the file crate's `tests/quarantine.rs`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_invalid_utf8_on_disk_is_corrupt_data_naming_the_file() {
    use agentmem::file::FileStore;
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}?durability=buffered", dir.path().display());
    let id: SessionId = "utf8".parse().unwrap();
    {
        let store = FileStore::connect(&url).await.unwrap();
        store.append(&id, &[Message::user("one")]).await.unwrap();
        store.append(&id, &[Message::user("two")]).await.unwrap();
    }
    // Corrupt the middle line (the first message), keeping a valid last line.
    let log = dir.path().join("agents/utf8/session.jsonl");
    let text = std::fs::read(&log).unwrap();
    let pos = text.windows(3).position(|w| w == b"one").unwrap();
    let mut bad = text.clone();
    bad[pos] = 0xff;
    bad[pos + 1] = 0xfe;
    std::fs::write(&log, &bad).unwrap();
    let store = FileStore::connect(&url).await.unwrap();
    let err = store.check(&id, false).await.expect_err("a check names it");
    assert!(err.to_string().contains("session.jsonl line 2"), "{err}");
    assert_eq!(
        std::fs::read(&log).unwrap(),
        bad,
        "a check rewrites nothing"
    );
    let kept = store.load(&id, None).await.unwrap().unwrap().messages;
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].content, "two");
    assert_line_set_aside(&dir.path().join("agents/utf8/quarantine"), &bad, pos);

    // A Swarms MEMORY.md (no session.jsonl) with invalid UTF-8.
    let swarms: SessionId = "swarms".parse().unwrap();
    let folder = dir.path().join("agents/swarms");
    std::fs::create_dir_all(&folder).unwrap();
    let mut md = b"# Agent Memory\n\n**Conversation:** swarms\n**Created:** 2026-01-01T00:00:00\n\n---\n\n## Interaction Log\n\n### User \xff\xfe 2026-01-01T00:00:01\n\nhi\n\n---\n\n".to_vec();
    md.extend_from_slice(b"");
    std::fs::write(folder.join("MEMORY.md"), &md).unwrap();
    refused_naming(store.load(&swarms, None).await, "MEMORY.md");
    assert_eq!(std::fs::read(folder.join("MEMORY.md")).unwrap(), md);

    // The memory log.
    let mem = dir.path().join("memories.jsonl");
    for text in ["fact one", "fact two"] {
        let item = MemoryItem::new(MemoryKind::Fact, text);
        store.put_memory(&item).await.unwrap();
    }
    drop(store);
    let text = std::fs::read(&mem).unwrap();
    let pos = text.windows(8).position(|w| w == b"fact one").unwrap();
    let mut bad = text.clone();
    bad[pos] = 0xff;
    std::fs::write(&mem, &bad).unwrap();
    let store = FileStore::connect(&url).await.unwrap();
    let facts = store.list_memories(&MemoryFilter::default()).await.unwrap();
    assert_eq!(facts.len(), 1, "the readable item is served");
    assert_eq!(facts[0].text, "fact two");
    assert_line_set_aside(&dir.path().join("quarantine"), &bad, pos);
    let report = &store.repairs()[0];
    assert_eq!(report.path, mem, "the report names the file: {report}");
    println!("hostile: file: invalid UTF-8 in session.jsonl and memories.jsonl (set aside in quarantine/), MEMORY.md (refused as corrupt data naming the file): nothing dropped");
}

/// Invalid UTF-8 written into SQLite's text columns behind the store's back: a typed error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_invalid_utf8_in_the_database_is_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("memory.db");
    let url = format!("sqlite://{}", db.display());
    let id: SessionId = "utf8".parse().unwrap();
    {
        let store = agentmem::open(&url).await.unwrap();
        store.append(&id, &[Message::user("one")]).await.unwrap();
    }
    let conn = rusqlite::Connection::open(&db).unwrap();
    let changed = conn
        .execute(
            "UPDATE agentmem_messages SET content = CAST(X'FFFE41' AS TEXT)",
            [],
        )
        .unwrap();
    assert_eq!(changed, 1);
    drop(conn);
    let store = agentmem::open(&url).await.unwrap();
    match store.load(&id, None).await {
        Err(e) => assert_eq!(e.kind(), ErrorKind::CorruptData, "{e}"),
        Ok(s) => panic!("invalid UTF-8 read back as {:?}", s.map(|s| s.messages)),
    }
}
