//! What lands on disk: exact Swarms bytes, file modes, names that cannot escape the root,
//! several stores sharing one root, and the memory log.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use agentmem_core::{
    AgentMemoryExt, ErrorKind, MemoryFilter, MemoryItem, MemoryKind, MemoryScope, MemoryStore,
    Message, Role, SessionId, SessionStore,
};
use agentmem_file::{FileConfig, FileStore};
use agentmem_formats::swarms::archive_file_stem;
use chrono::{DateTime, Utc};
use common::{at, contents, fresh, load_some, open, shown, sid};

/// [`at`] `s` seconds and `micros` microseconds.
fn t(s: u32, micros: i64) -> DateTime<Utc> {
    at(s) + chrono::Duration::microseconds(micros)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        out.push(path.clone());
        if path.is_dir() {
            walk(&path, out);
        }
    }
}

#[tokio::test]
async fn memory_md_and_archives_hold_exact_swarms_bytes() {
    let (dir, store, id) = fresh("ResearchAgent").await;
    let messages = vec![
        Message::user("  Research cloud database options for low-latency analytics.\n")
            .with_timestamp(t(4, 0)),
        Message::new(
            Role::Agent("ResearchAgent".into()),
            "I recommend evaluating BigQuery, ClickHouse Cloud, and AlloyDB...",
        )
        .with_timestamp(t(21, 250_000)),
        Message::tool_result("call_1", "search", "   ").with_timestamp(t(22, 0)),
        Message::assistant("### Not a heading\n---\nDone.").with_timestamp(t(23, 1)),
    ];
    store.append(&id, &messages[..1]).await.expect("append");
    store.append(&id, &messages[1..]).await.expect("append");
    let created = load_some(&store, &id).await.created_at;
    let expected = format!(
        "# Agent Memory\n\n**Conversation:** ResearchAgent\n**Created:** {}\n\n---\n\n## Interaction Log\n\n\
         ### User — {}\n\nResearch cloud database options for low-latency analytics.\n\n---\n\n\
         ### ResearchAgent — {}\n\nI recommend evaluating BigQuery, ClickHouse Cloud, and AlloyDB...\n\n---\n\n\
         ### Assistant — {}\n\n### Not a heading\n---\nDone.\n\n---\n\n",
        shown(created),
        shown(t(4, 0)),
        shown(t(21, 250_000)),
        shown(t(23, 1)),
    );
    let md_path = store.memory_md_path(&id);
    assert_eq!(md_path, dir.path().join("agents/ResearchAgent/MEMORY.md"));
    assert_eq!(std::fs::read_to_string(&md_path).expect("read"), expected);
    // The structured log keeps what MEMORY.md cannot: untrimmed and blank content, tool ids.
    assert_eq!(store.messages(&id).await.expect("load"), messages);

    // Two compactions in one second get two archives; each `.md` is MEMORY.md as it was.
    let summary = Message::system("[Compressed Memory Summary]\nS").with_timestamp(t(30, 0));
    let first = store
        .compact(&id, std::slice::from_ref(&summary))
        .await
        .expect("compact");
    let second = store.compact(&id, &[]).await.expect("compact again");
    assert_ne!(first.id, second.id);
    assert!(first
        .id
        .as_str()
        .starts_with(&archive_file_stem(first.created_at, 0)));
    let archive_dir = store.archive_dir(&id);
    assert_eq!(
        std::fs::read_to_string(archive_dir.join(format!("{}.md", first.id))).expect("archive"),
        expected
    );
    let after_first = format!(
        "# Agent Memory\n\n**Conversation:** ResearchAgent\n**Created:** {}\n\n---\n\n## Interaction Log\n\n\
         ### System — {}\n\n[Compressed Memory Summary]\nS\n\n---\n\n",
        shown(first.created_at),
        shown(t(30, 0)),
    );
    assert_eq!(
        std::fs::read_to_string(archive_dir.join(format!("{}.md", second.id))).expect("archive"),
        after_first
    );
    assert_eq!(
        std::fs::read_to_string(&md_path).expect("read"),
        format!(
            "# Agent Memory\n\n**Conversation:** ResearchAgent\n**Created:** {}\n\n---\n\n## Interaction Log\n\n",
            shown(second.created_at)
        )
    );
    let listed: Vec<_> = store
        .list_archives(&id)
        .await
        .expect("list")
        .into_iter()
        .map(|a| a.id)
        .collect();
    assert_eq!(listed, [first.id.clone(), second.id.clone()]);
    assert_eq!(
        store
            .load_archive(&id, &first.id)
            .await
            .expect("archive")
            .messages,
        messages
    );
}

#[tokio::test]
async fn files_are_private_to_the_owner() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("store");
    let store = open(&root).await;
    let id = sid("private");
    store
        .append_one(&id, Message::user("secret"))
        .await
        .expect("append");
    store
        .compact(&id, &[Message::system("summary")])
        .await
        .expect("compact");
    store
        .store_memory(MemoryKind::Fact, "the user likes tea")
        .await
        .expect("memory");
    let mut paths = vec![root.clone()];
    walk(&root, &mut paths);
    let mut files = 0;
    for path in &paths {
        let mode = std::fs::metadata(path).expect("stat").permissions().mode() & 0o777;
        if path.is_dir() {
            assert_eq!(mode, 0o700, "{}", path.display());
        } else {
            files += 1;
            assert_eq!(mode, 0o600, "{}", path.display());
        }
    }
    // schema, memory log + lock, session lock, log, MEMORY.md, archive .jsonl + .md
    assert_eq!(files, 8, "{paths:?}");
}

#[tokio::test]
async fn hostile_names_never_escape_the_root() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("store");
    let store = open(&root).await;
    for bad in [
        "../escape",
        "..",
        "/etc/passwd",
        "a/../../b",
        "a\\b",
        ".hidden",
        "nul\0byte",
        "tab\tname",
        "",
    ] {
        let err = SessionId::new(bad).expect_err("rejected");
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{bad:?}");
    }
    for bad in ["../x", "history/../../x", ".x"] {
        assert!(agentmem_core::ArchiveId::new(bad).is_err(), "{bad:?}");
    }
    let tricky = [
        "a.b",
        "a b",
        "a_b",
        "エージェント",
        "x@y+z",
        &"n".repeat(128),
    ];
    for name in tricky {
        let id = sid(name);
        store
            .append_one(&id, Message::user(name))
            .await
            .expect("append");
        store.compact(&id, &[]).await.expect("compact");
        assert_eq!(
            store.memory_md_path(&id),
            root.join("agents").join(name).join("MEMORY.md")
        );
    }
    // Similar names are distinct sessions, not one file.
    let listed = store.list_sessions().await.expect("list");
    assert_eq!(listed.len(), tricky.len());
    // Everything written is inside the root, and nothing else appeared beside it.
    let mut paths = Vec::new();
    walk(dir.path(), &mut paths);
    let canonical_root = root.canonicalize().expect("canonical");
    for path in &paths {
        assert!(
            path.canonicalize()
                .expect("canonical")
                .starts_with(&canonical_root)
                || path == &root,
            "{}",
            path.display()
        );
    }
    assert_eq!(std::fs::read_dir(dir.path()).expect("read").count(), 1);
}

#[tokio::test]
async fn stores_sharing_a_root_see_each_others_writes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let a = open(dir.path()).await;
    let b = open(dir.path()).await;
    let id = sid("shared");
    let mut expected = Vec::new();
    for i in 0..20 {
        let m = Message::user(format!("m{i}"));
        let store = if i % 3 == 0 { &a } else { &b };
        store.append_one(&id, m.clone()).await.expect("append");
        expected.push(m);
    }
    assert_eq!(a.messages(&id).await.expect("load"), expected);
    assert_eq!(b.messages(&id).await.expect("load"), expected);
    // A compaction by one is seen by the other, and appends after it land after the summary.
    a.compact(&id, &[Message::system("summary")])
        .await
        .expect("compact");
    b.append_one(&id, Message::user("after"))
        .await
        .expect("append");
    let now = a.messages(&id).await.expect("load");
    assert_eq!(contents(&now), ["summary", "after"]);
    assert_eq!(
        b.list_archives(&id).await.expect("archives")[0].message_count,
        20
    );
    // Deleting through one is seen by the other, which can create the session anew.
    assert!(b.delete_session(&id).await.expect("delete"));
    assert!(a.load(&id, None).await.expect("load").is_none());
    a.append_one(&id, Message::user("reborn"))
        .await
        .expect("append");
    assert_eq!(b.messages(&id).await.expect("load").len(), 1);
    assert!(
        a.repairs().is_empty() && b.repairs().is_empty(),
        "{:?} {:?}",
        a.repairs(),
        b.repairs()
    );
}

#[tokio::test]
async fn the_memory_log_is_compacted_and_shared() {
    let dir = tempfile::tempdir().expect("temp dir");
    let a = open(dir.path()).await;
    let b = open(dir.path()).await;
    let first = a
        .put_memory(&MemoryItem::new(MemoryKind::Fact, "name: Alice").with_key("name"))
        .await
        .expect("put");
    for i in 0..300 {
        let store = if i % 2 == 0 { &a } else { &b };
        let stored = store
            .put_memory(
                &MemoryItem::new(MemoryKind::Fact, format!("name: Bob {i}")).with_key("name"),
            )
            .await
            .expect("put");
        assert_eq!(stored.id, first.id, "same kind and key keeps the id");
        assert_eq!(stored.created_at, first.created_at);
    }
    let log = std::fs::read_to_string(dir.path().join("memories.jsonl")).expect("read");
    assert!(
        log.lines().count() < 100,
        "the log was compacted: {} lines",
        log.lines().count()
    );
    let items = b
        .list_memories(&MemoryFilter::default())
        .await
        .expect("list");
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].text, "name: Bob 299");
    assert!(a.delete_memory(&first.id).await.expect("delete"));
    assert!(b.get_memory(&first.id).await.expect("get").is_none());
    let reopened = open(dir.path()).await;
    assert!(reopened
        .list_memories(&MemoryFilter::default())
        .await
        .expect("list")
        .is_empty());
}

/// A memory log written before scopes (version 1) reads as global items; the first new record
/// rewrites it as version 2 with every item kept, so an older reader refuses it rather than
/// taking scoped items for global ones.
#[tokio::test]
async fn a_version_1_memory_log_is_upgraded_before_scoped_records() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("memories.jsonl");
    std::fs::write(
        &path,
        concat!(
            r#"{"op":"header","format":"agentmem.memories","version":1}"#,
            "\n",
            r#"{"op":"put","item":{"id":"old1","kind":"fact","key":"name","text":"The user's name is Ada","created_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:05Z"}}"#,
            "\n",
        ),
    )
    .expect("write a version-1 log");
    let store = open(dir.path()).await;
    let old = store
        .get_memory(&"old1".parse().expect("id"))
        .await
        .expect("get")
        .expect("the old item reads back");
    assert!(old.scope.is_global() && old.expires_at.is_none());
    let bob = MemoryItem::new(MemoryKind::Fact, "The user's name is Bob")
        .with_key("name")
        .in_scope(MemoryScope::agent("bob"));
    let stored = store.put_memory(&bob).await.expect("put");
    assert_eq!(stored, bob, "another scope's key is a new item");
    let log = std::fs::read_to_string(&path).expect("read");
    assert!(
        log.starts_with(r#"{"op":"header","format":"agentmem.memories","version":2}"#),
        "{log}"
    );
    let reopened = open(dir.path()).await;
    let all = reopened
        .list_memories(&MemoryFilter::default())
        .await
        .expect("list");
    assert_eq!(all, [old, bob]);
}

#[tokio::test]
async fn urls_and_capabilities() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("file://{}?durability=buffered", dir.path().display());
    let store = FileStore::connect(&url).await.expect("connect");
    assert_eq!(store.root(), dir.path());
    assert_eq!(store.backend(), "file");
    assert!(!store.capabilities().durable);
    assert!(store.capabilities().cross_process && store.capabilities().atomic_compaction);
    assert_eq!(
        store.schema_version().await.expect("version"),
        agentmem_file::SCHEMA_VERSION
    );
    let fsync = FileStore::connect(&format!("file://{}", dir.path().display()))
        .await
        .expect("connect");
    assert!(fsync.capabilities().durable);
    for bad in ["file://relative/dir", "file:///x?sync=1", "redis://x"] {
        let err = FileStore::connect(bad).await.expect_err("rejected");
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{bad}");
    }
    // A root written by a newer agentmem is refused rather than misread.
    std::fs::write(
        dir.path().join("agentmem.json"),
        r#"{"format":"agentmem-file","schema_version":99}"#,
    )
    .expect("write");
    let err = FileStore::connect(&url).await.expect_err("newer schema");
    assert_eq!(err.kind(), ErrorKind::Unsupported);
}

#[tokio::test]
async fn appends_add_bytes_in_place_without_rewriting() {
    use std::os::unix::fs::MetadataExt;
    let (dir, store, id) = fresh("in_place").await;
    store
        .append_one(&id, Message::user("first"))
        .await
        .expect("append");
    let log = dir.path().join("agents/in_place/session.jsonl");
    let md = store.memory_md_path(&id);
    let (log_before, md_before) = (
        std::fs::read(&log).expect("read"),
        std::fs::read(&md).expect("read"),
    );
    let inodes = |p: &Path| std::fs::metadata(p).expect("stat").ino();
    let (log_ino, md_ino) = (inodes(&log), inodes(&md));
    store
        .append(&id, &[Message::user("second"), Message::assistant("third")])
        .await
        .expect("append");
    assert_eq!(
        (inodes(&log), inodes(&md)),
        (log_ino, md_ino),
        "same files, not replaced"
    );
    let (log_after, md_after) = (
        std::fs::read(&log).expect("read"),
        std::fs::read(&md).expect("read"),
    );
    assert!(log_after.starts_with(&log_before) && md_after.starts_with(&md_before));
    let added = std::str::from_utf8(&log_after[log_before.len()..]).expect("utf-8");
    assert_eq!(
        added.matches('\n').count(),
        1,
        "a batch is one line: {added}"
    );
    assert!(added.starts_with('['));
}

#[tokio::test]
async fn the_store_wears_the_standard_layers() {
    let (dir, store, id) = fresh("layered").await;
    // Errors say which backend and operation they came from.
    let err = store.compact(&id, &[]).await.expect_err("missing session");
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert_eq!(err.operation(), Some(agentmem_core::Operation::Compact));
    assert_eq!(err.backend_name(), Some("file"));
    // A message no reader could accept is refused before anything is written.
    let err = store
        .append(&id, &[Message::new(Role::Agent(" bob".into()), "bad role")])
        .await
        .expect_err("invalid message");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(err.operation(), Some(agentmem_core::Operation::Append));
    assert!(!dir.path().join("agents/layered").exists());
    // Appending nothing writes nothing.
    store.append(&id, &[]).await.expect("empty append");
    assert!(!dir.path().join("agents/layered").exists());
    // Opening errors are labelled too.
    std::fs::write(
        dir.path().join("agentmem.json"),
        r#"{"format":"something-else","schema_version":1}"#,
    )
    .expect("write");
    let err = FileStore::connect_with(FileConfig::new(dir.path()))
        .await
        .expect_err("foreign root");
    assert_eq!(err.kind(), ErrorKind::CorruptData);
    assert_eq!(err.operation(), Some(agentmem_core::Operation::Open));
    assert_eq!(err.backend_name(), Some("file"));
}

/// `replace_archive` rewrites both files of one archive under their names: the `.md` is
/// exactly the Swarms view of the new messages under the archive's own header, the `.jsonl`
/// keeps its header but the count; the other archive's bytes and the session are untouched.
#[tokio::test]
async fn a_replaced_archive_keeps_its_names_and_exact_swarms_bytes() {
    let (_dir, store, id) = fresh("Rekeyed").await;
    store
        .append(&id, &[Message::user("old one").with_timestamp(t(1, 0))])
        .await
        .expect("append");
    let first = store.compact(&id, &[]).await.expect("compact");
    store
        .append(&id, &[Message::user("old two").with_timestamp(t(2, 0))])
        .await
        .expect("append");
    let second = store
        .compact(&id, &[Message::system("summary").with_timestamp(t(3, 0))])
        .await
        .expect("compact");
    let archive_dir = store.archive_dir(&id);
    let files = |dir: &Path| {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("list")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let names_before = files(&archive_dir);
    let first_bytes = (
        std::fs::read(archive_dir.join(format!("{}.jsonl", first.id))).expect("read"),
        std::fs::read(archive_dir.join(format!("{}.md", first.id))).expect("read"),
    );
    let log_path = archive_dir.join(format!("{}.jsonl", second.id));
    let header_before: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&log_path)
            .expect("read")
            .lines()
            .next()
            .expect("header"),
    )
    .expect("json");
    let session_md = std::fs::read(store.memory_md_path(&id)).expect("read");

    let new = vec![
        Message::user("new two").with_timestamp(t(2, 0)),
        Message::assistant("  and more\n").with_timestamp(t(2, 500)),
    ];
    let info = store
        .replace_archive(&id, &second.id, &new)
        .await
        .expect("replace");
    assert_eq!(
        (info.id.clone(), info.created_at),
        (second.id.clone(), second.created_at)
    );
    assert_eq!(info.message_count, 2);

    assert_eq!(
        files(&archive_dir),
        names_before,
        "same files, nothing left over"
    );
    assert_eq!(
        std::fs::read_to_string(archive_dir.join(format!("{}.md", second.id))).expect("read"),
        format!(
            "# Agent Memory\n\n**Conversation:** Rekeyed\n**Created:** {}\n\n---\n\n## Interaction Log\n\n\
             ### User — {}\n\nnew two\n\n---\n\n\
             ### Assistant — {}\n\nand more\n\n---\n\n",
            shown(first.created_at),
            shown(t(2, 0)),
            shown(t(2, 500)),
        )
    );
    let log = std::fs::read_to_string(&log_path).expect("read");
    let mut lines = log.lines();
    let mut header: serde_json::Value =
        serde_json::from_str(lines.next().expect("header")).expect("json");
    assert_eq!(header["message_count"], 2);
    header["message_count"] = header_before["message_count"].clone();
    assert_eq!(header, header_before, "the header keeps all but the count");
    let logged: Vec<Message> = lines
        .map(|l| serde_json::from_str(l).expect("message"))
        .collect();
    assert_eq!(logged, new, "one message a line, exactly as given");
    assert_eq!(
        std::fs::metadata(&log_path)
            .expect("stat")
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
    assert_eq!(
        (
            std::fs::read(archive_dir.join(format!("{}.jsonl", first.id))).expect("read"),
            std::fs::read(archive_dir.join(format!("{}.md", first.id))).expect("read"),
        ),
        first_bytes,
        "the other archive is byte for byte as it was"
    );
    assert_eq!(
        std::fs::read(store.memory_md_path(&id)).expect("read"),
        session_md
    );
}
