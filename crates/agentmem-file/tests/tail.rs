//! `load(session, Some(n))` reads `session.jsonl` backwards from its end once the store knows
//! the session; these tests check that it returns exactly what the whole-log path returns (the
//! last `n` messages without orphaned tool results, the same total and session fields), on
//! many shapes of log, after other processes wrote, after a crash left a torn line, and on
//! corrupt data.
use std::io::Write;
use std::path::{Path, PathBuf};

mod common;

use agentmem_core::history::tail;
use agentmem_core::{ErrorKind, Layered, Message, Metadata, SessionId, SessionStore};
use agentmem_file::{FileStore, RepairKind};
use common::{contents, fresh, open, sid};
use tempfile::TempDir;

fn log_path(store: &Layered<FileStore>, id: &SessionId) -> PathBuf {
    store.memory_md_path(id).with_file_name("session.jsonl")
}

/// Compares every limit from 0 to past the end, on the warm `store` (the backwards path) and on
/// a store opened afresh for each load (the whole-log path), with `history::tail` of the whole
/// session.
async fn check_windows(root: &Path, store: &Layered<FileStore>, id: &SessionId) {
    let whole = store.load(id, None).await.unwrap().unwrap();
    let all = whole.messages.clone();
    assert_eq!(whole.total_messages, all.len() as u64);
    for n in (0..=all.len() + 2).chain([usize::MAX]) {
        let expected = tail(&all, n);
        let warm = store.load(id, Some(n)).await.unwrap().unwrap();
        assert_eq!(warm.messages, expected, "warm, limit {n}");
        assert_eq!(warm.total_messages, whole.total_messages, "limit {n}");
        assert_eq!(warm.metadata, whole.metadata);
        assert_eq!(warm.created_at, whole.created_at);
        assert_eq!(warm.updated_at, whole.updated_at);
        if n <= all.len() + 1 {
            let cold = open(root).await.load(id, Some(n)).await.unwrap().unwrap();
            assert_eq!(cold.messages, expected, "cold, limit {n}");
            assert_eq!(cold.total_messages, whole.total_messages);
        }
    }
}

fn tool_heavy() -> Vec<Vec<Message>> {
    vec![
        vec![Message::system("You are helpful.")],
        vec![Message::user("weather and time?")],
        vec![Message::tool_call("c1", "weather", "{}")],
        vec![
            Message::tool_result("c1", "weather", "sunny"),
            Message::tool_call("c2", "time", "{}"),
        ],
        vec![Message::tool_result("c2", "time", "noon")],
        vec![
            Message::tool_call("c3", "a", "{}"),
            Message::tool_call("c4", "b", "{}"),
            Message::tool_result("c3", "a", "1"),
            Message::tool_result("c4", "b", "2"),
        ],
        vec![Message::tool_result("c4", "b", "late")],
        vec![Message::assistant("Sunny at noon.")],
        vec![Message::tool_result(
            "c9",
            "x",
            "a result whose call is long gone",
        )],
    ]
}

#[tokio::test]
async fn tool_calls_and_results_at_every_window_edge() {
    let (dir, store, id) = fresh("tools").await;
    for batch in tool_heavy() {
        store.append(&id, &batch).await.unwrap();
    }
    check_windows(dir.path(), &store, &id).await;
}

#[tokio::test]
async fn long_lines_and_multibyte_text_across_blocks() {
    let (dir, store, id) = fresh("long").await;
    // Lines of 40-400 KB, most longer than the 64 KiB read step, full of multibyte
    // characters, so block boundaries fall inside them and inside characters.
    let long = |k: usize| "é漢🙂 ".repeat(k * 4_000 + 1);
    store.append(&id, &[Message::user("start")]).await.unwrap();
    store
        .append(&id, &[Message::assistant(long(10))])
        .await
        .unwrap();
    let batch: Vec<Message> = (1..4)
        .map(|k| Message::user(format!("{k}: {}", long(k))))
        .collect();
    store.append(&id, &batch).await.unwrap();
    store.append(&id, &[Message::user("ü")]).await.unwrap();
    store
        .append(&id, &[Message::tool_result("c", "t", long(2))])
        .await
        .unwrap();
    assert!(std::fs::metadata(log_path(&store, &id)).unwrap().len() > 500_000);
    check_windows(dir.path(), &store, &id).await;
}

#[tokio::test]
async fn many_small_lines_span_many_blocks() {
    let (_dir, store, id) = fresh("many").await;
    let batch: Vec<Message> = (0..3_000)
        .map(|i| Message::user(format!("message {i} ünïcödé")))
        .collect();
    store.append(&id, &batch).await.unwrap();
    for i in 0..200 {
        store
            .append(&id, &[Message::assistant(format!("reply {i}"))])
            .await
            .unwrap();
    }
    let all = store.load(&id, None).await.unwrap().unwrap().messages;
    for n in [0, 1, 20, 199, 200, 201, 1_000, 3_199, 3_200, 3_201, 10_000] {
        let s = store.load(&id, Some(n)).await.unwrap().unwrap();
        assert_eq!(s.messages, tail(&all, n), "limit {n}");
        assert_eq!(s.total_messages, 3_200);
    }
}

#[tokio::test]
async fn empty_and_missing_sessions() {
    let (dir, store, id) = fresh("empty").await;
    assert!(store.load(&id, Some(3)).await.unwrap().is_none());
    let mut meta = Metadata::new();
    meta.insert("k".into(), serde_json::json!("v"));
    store.save_session(&id, &[], &meta).await.unwrap();
    for n in [0, 1, 5] {
        let s = store.load(&id, Some(n)).await.unwrap().unwrap();
        assert!(s.messages.is_empty());
        assert_eq!(s.total_messages, 0);
        assert_eq!(s.metadata, meta);
    }
    check_windows(dir.path(), &store, &id).await;
}

#[tokio::test]
async fn after_save_session_and_compaction() {
    let (dir, store, id) = fresh("rewritten").await;
    let history: Vec<Message> = tool_heavy().into_iter().flatten().collect();
    store
        .save_session(&id, &history, &Metadata::new())
        .await
        .unwrap();
    check_windows(dir.path(), &store, &id).await;
    store
        .compact(
            &id,
            &[
                Message::system("summary"),
                Message::tool_result("c1", "weather", "kept"),
            ],
        )
        .await
        .unwrap();
    store
        .append(
            &id,
            &[Message::user("after"), Message::assistant("compaction")],
        )
        .await
        .unwrap();
    check_windows(dir.path(), &store, &id).await;
    // A compaction by another store (a new file under the same name) is seen by this one.
    let other = open(dir.path()).await;
    other.compact(&id, &[Message::system("s2")]).await.unwrap();
    let s = store.load(&id, Some(1)).await.unwrap().unwrap();
    assert_eq!(s.messages[0].content, "s2");
    assert_eq!(s.total_messages, 1);
}

#[tokio::test]
async fn appends_by_another_store_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let a = open(dir.path()).await;
    let b = open(dir.path()).await;
    let id = sid("shared");
    a.append(&id, &[Message::user("one"), Message::user("two")])
        .await
        .unwrap();
    assert_eq!(total_seen(&a, &id, 1).await, 2);
    b.append(&id, &[Message::tool_call("c", "t", "{}")])
        .await
        .unwrap();
    b.append(
        &id,
        &[Message::tool_result("c", "t", "r"), Message::user("three")],
    )
    .await
    .unwrap();
    let s = a.load(&id, Some(2)).await.unwrap().unwrap();
    assert_eq!(s.total_messages, 5);
    // The last two start with a result whose call is cut off: it is dropped.
    assert_eq!(s.messages.len(), 1);
    assert_eq!(s.messages[0].content, "three");
    check_windows(dir.path(), &a, &id).await;
}

/// Appends user messages `m0`, `m1`, … (`count` of them) to session `id`, one append each.
async fn append_numbered(store: &Layered<FileStore>, id: &SessionId, count: usize) {
    for i in 0..count {
        store
            .append(id, &[Message::user(format!("m{i}"))])
            .await
            .unwrap();
    }
}

/// The session's total message count, as a load of its last `window` messages reports it.
async fn total_seen(store: &Layered<FileStore>, id: &SessionId, window: usize) -> u64 {
    store
        .load(id, Some(window))
        .await
        .unwrap()
        .unwrap()
        .total_messages
}

/// A fresh store whose session `name` holds `count` numbered messages ([`append_numbered`]),
/// read once through a window of `window` so the store knows the session, and its log's path.
async fn warm_log(
    name: &str, count: usize, window: usize,
) -> (TempDir, Layered<FileStore>, SessionId, PathBuf) {
    let (dir, store, id) = fresh(name).await;
    append_numbered(&store, &id, count).await;
    assert_eq!(total_seen(&store, &id, window).await, count as u64);
    let path = log_path(&store, &id);
    (dir, store, id, path)
}

/// Appends raw bytes to the log, as a process that crashed mid-append leaves them: under the
/// session's file lock, as that process held it (so this waits for the store's lease).
fn append_raw(path: &Path, bytes: &[u8]) {
    let folder = path.parent().unwrap();
    let root = folder.parent().unwrap().parent().unwrap();
    let id = folder.file_name().unwrap().to_str().unwrap();
    let lock = std::fs::File::open(root.join("locks").join(format!("{id}.lock"))).unwrap();
    lock.lock().unwrap();
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(bytes).unwrap();
    lock.unlock().unwrap();
}

#[tokio::test]
async fn a_torn_last_line_is_repaired_before_the_window_is_read() {
    for torn in [
        &b"{\"id\":\"x\",\"role\":\"user\",\"cont"[..],
        &b"\0\0\0\0\0\0\0\0\n"[..],
        "{\"content\":\"é漢".as_bytes(),
    ] {
        let (dir, store, id, path) = warm_log("torn", 30, 2).await;
        let good = {
            let mut line = serde_json::to_vec(&Message::assistant("appended elsewhere")).unwrap();
            line.push(b'\n');
            line
        };
        let before = std::fs::metadata(&path).unwrap().len();
        append_raw(&path, &good);
        append_raw(&path, torn);
        let s = store.load(&id, Some(3)).await.unwrap().unwrap();
        assert_eq!(s.total_messages, 31);
        assert_eq!(contents(&s.messages), ["m28", "m29", "appended elsewhere"]);
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            before + good.len() as u64,
            "the torn line is truncated away"
        );
        let kinds: Vec<RepairKind> = store.repairs().iter().map(|r| r.kind).collect();
        assert!(kinds.contains(&RepairKind::TornTail), "{kinds:?}");
        check_windows(dir.path(), &store, &id).await;

        // The same crash seen by a store that opens the session afresh: the same result.
        append_raw(&path, torn);
        let fresh = open(dir.path()).await;
        let s = fresh.load(&id, Some(3)).await.unwrap().unwrap();
        assert_eq!(s.total_messages, 31);
        assert_eq!(s.messages[2].content, "appended elsewhere");
        assert!(fresh
            .repairs()
            .iter()
            .any(|r| r.kind == RepairKind::TornTail));
    }
}

/// A whole line another process appended that does not parse is not a torn tail: it is set
/// aside in `quarantine/` (never deleted), and the window is read from the readable lines.
#[tokio::test]
async fn a_complete_unparsable_last_line_is_set_aside_not_truncated() {
    let (dir, store, id, path) = warm_log("whole_bad", 10, 2).await;
    let bad = b"[{\"id\":\"x\"}, not json\n";
    append_raw(&path, bad);
    let s = store.load(&id, Some(3)).await.unwrap().unwrap();
    assert_eq!(contents(&s.messages), ["m7", "m8", "m9"]);
    assert_eq!(s.total_messages, 10);
    let kinds: Vec<RepairKind> = store.repairs().iter().map(|r| r.kind).collect();
    assert_eq!(kinds, [RepairKind::Quarantined]);
    let quarantine = path.with_file_name("quarantine");
    let kept: Vec<Vec<u8>> = std::fs::read_dir(&quarantine)
        .unwrap()
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect();
    assert_eq!(kept, [bad.to_vec()], "the line is kept byte for byte");
    let fresh = open(dir.path()).await;
    assert_eq!(total_seen(&fresh, &id, 3).await, 10);
    assert!(fresh.repairs().is_empty(), "{:?}", fresh.repairs());
}

#[tokio::test]
async fn a_damaged_line_in_the_window_is_corrupt_data() {
    let (_dir, store, id, path) = warm_log("damaged", 10, 1).await;
    // Overwrite the first byte of the second-to-last line in place (same length, same file).
    let mut bytes = std::fs::read(&path).unwrap();
    let last_nl = bytes.len() - 1;
    let prev_nl = bytes[..last_nl].iter().rposition(|&b| b == b'\n').unwrap();
    let start = bytes[..prev_nl].iter().rposition(|&b| b == b'\n').unwrap() + 1;
    bytes[start] = b'#';
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.write_all_at(&bytes[start..=start], start as u64).unwrap();
    }
    // The last message alone is still readable; a window reaching the line is not.
    let s = store.load(&id, Some(1)).await.unwrap().unwrap();
    assert_eq!(s.messages[0].content, "m9");
    let e = store.load(&id, Some(2)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::CorruptData);
    assert!(e.to_string().contains("line 10"), "{e}");
    let e = store.load(&id, None).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::CorruptData);
    assert!(e.to_string().contains("line 10"), "{e}");
}
