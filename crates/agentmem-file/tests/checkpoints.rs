//! Checkpoints on files: after every step of a mixed run, what the working store, another store
//! on the same root (another process, with caches of its own) and a freshly opened store read
//! from the logs equals what the in-memory reference holds; the layout on disk; and what a
//! crash or an edit leaves in a thread's log is repaired, never a panic or a wrong answer.

mod common;

use std::path::{Path, PathBuf};

use agentmem_core::{
    AgentMemory, ChannelBlob, Checkpoint, CheckpointKey, CheckpointNs, CheckpointPrune,
    CheckpointQuery, CheckpointStore, CheckpointTuple, ErrorKind, Layered, PendingWrite, ThreadId,
    ThreadInfo, TypedBytes, MAX_METADATA_DEPTH,
};
use agentmem_file::{Durability, FileStore, RepairKind};
use agentmem_testkit::fixtures::latest_checkpoint;
use common::{append_bytes, kinds, open_with, MixedRun};
use serde_json::json;
use sha2::{Digest, Sha256};

fn thread(id: &str) -> ThreadId {
    id.parse().expect("a valid thread id")
}

fn key(thread_id: &str, ns: &str, id: &str) -> CheckpointKey {
    CheckpointKey {
        thread: thread(thread_id),
        ns: ns.parse().expect("a valid namespace"),
        id: id.parse().expect("a valid checkpoint id"),
    }
}

/// Metadata no JSON round trip may bend: `\u0000`, big and negative integers, floats,
/// non-ASCII, an object nested as deep as the store accepts.
fn hard_metadata(run: &str, step: u64) -> serde_json::Map<String, serde_json::Value> {
    let mut deep = json!("bottom");
    for level in 0..MAX_METADATA_DEPTH - 1 {
        deep = if level % 2 == 0 {
            json!([deep])
        } else {
            json!({ "k": deep })
        };
    }
    let value = json!({
        "run_id": run, "step": step, "source": "loop", "parents": {"": "x"},
        "nul": "a\u{0}b\n\"c\"", "max": u64::MAX, "min": i64::MIN, "pi": std::f64::consts::PI,
        "tiny": 5e-324, "big": 1.7976931348623157e308, "tenth": 0.1, "unicode": "é ü 𝄞",
        "deep": deep,
    });
    match value {
        serde_json::Value::Object(map) => map,
        _ => unreachable!("an object literal"),
    }
}

fn checkpoint(at: CheckpointKey, run: &str, step: u64) -> (Checkpoint, Vec<ChannelBlob>) {
    let body = TypedBytes::new("msgpack", vec![0, 0xff, b'\n', step as u8]);
    let mut c = Checkpoint::new(at, body);
    let v = format!("{step:05}");
    c.channel_versions.insert("messages".into(), v.clone());
    c.channel_versions.insert("emptied".into(), "1".into());
    c.metadata = hard_metadata(run, step);
    let blobs = vec![
        ChannelBlob {
            channel: "messages".into(),
            version: v,
            value: Some(TypedBytes::new("bytes", vec![step as u8, 0, 10])),
        },
        ChannelBlob {
            channel: "emptied".into(),
            version: "1".into(),
            value: None,
        },
        // Read by no checkpoint: kept until a deletion drops what nothing reads.
        ChannelBlob {
            channel: "unread".into(),
            version: format!("u{step}"),
            value: Some(TypedBytes::new("json", b"{}".to_vec())),
        },
    ];
    (c, blobs)
}

fn write(task: &str, idx: i64, value: &str) -> PendingWrite {
    PendingWrite {
        task_id: task.into(),
        idx,
        channel: "ch?*".into(),
        value: TypedBytes::new("json", value.as_bytes().to_vec()),
        task_path: format!("~{task}"),
    }
}

/// One operation of the mixed run.
#[derive(Debug, Clone)]
enum Step {
    Put(Checkpoint, Vec<ChannelBlob>),
    Writes(CheckpointKey, Vec<PendingWrite>),
    DeleteThread(ThreadId),
    DeleteRuns(Vec<String>),
    Copy(ThreadId, ThreadId),
    Prune(Vec<ThreadId>, CheckpointPrune),
}

/// The checkpoint calls and views, for the mixed run.
struct Checkpoints;

impl MixedRun for Checkpoints {
    type Step = Step;
    /// A count, or the kind of its error.
    type Answer = Result<u64, ErrorKind>;
    type View = (Vec<CheckpointTuple>, Vec<ThreadInfo>);

    async fn apply(store: &dyn AgentMemory, step: &Step) -> Result<u64, ErrorKind> {
        let result = match step {
            Step::Put(c, blobs) => store.put_checkpoint(c, blobs).await.map(|()| 0),
            Step::Writes(at, writes) => store.put_writes(at, writes).await.map(|()| 0),
            Step::DeleteThread(t) => store.delete_thread(t).await.map(u64::from),
            Step::DeleteRuns(runs) => store.delete_run_checkpoints(runs).await,
            Step::Copy(from, to) => store.copy_thread(from, to).await,
            Step::Prune(threads, keep) => store.prune_checkpoints(threads, *keep).await,
        };
        result.map_err(|e| e.kind())
    }

    async fn view(store: &dyn AgentMemory) -> (Vec<CheckpointTuple>, Vec<ThreadInfo>) {
        let all = store
            .list_checkpoints(&CheckpointQuery::default())
            .await
            .expect("list checkpoints");
        let threads = store.list_threads().await.expect("list threads");
        (all, threads)
    }
}

const THREADS: [&str; 5] = ["a/b", "../x", "A B*?[]%", "é:ü|$..", "Ab"];

fn long_thread() -> String {
    "λ".repeat(256) // 512 bytes
}

/// The mixed run: puts in two namespaces over hostile and long thread ids, pending writes
/// (kept, skipped, replaced, made ahead of their checkpoint), replacement, deleted runs,
/// pruning, copies, deletions, and writes after each rewrite; then the checkpoints the early
/// writes were made for (shown with them unless a rewrite took them), and threads holding
/// writes alone.
fn steps() -> Vec<Step> {
    let long = long_thread();
    let mut threads: Vec<&str> = THREADS.to_vec();
    threads.push(&long);
    let mut steps = Vec::new();
    for (n, t) in threads.iter().enumerate() {
        for i in 1..=4u64 {
            let run = if i <= 2 { "run-a" } else { "run-b" };
            let (c, blobs) = checkpoint(key(t, "", &format!("{i:04}")), run, i);
            steps.push(Step::Put(c, blobs));
        }
        let (c, blobs) = checkpoint(key(t, "node:1|inner:2", "0002"), "run-c", n as u64);
        steps.push(Step::Put(c, blobs));
        let at = key(t, "", "0003");
        steps.push(Step::Writes(
            at.clone(),
            vec![write("t1", 0, "1"), write("t1", -1, "err")],
        ));
        steps.push(Step::Writes(
            at.clone(),
            vec![
                write("t1", 0, "ignored"),
                write("t1", -1, "replaced"),
                write("t0", 1, "2"),
            ],
        ));
        steps.push(Step::Writes(key(t, "", "0009"), vec![write("t", 0, "x")]));
        steps.push(Step::Writes(
            key(t, "node:9", "0003"),
            vec![write("t", 0, "x")],
        ));
    }
    // Replaced: its writes stay.
    let (mut c, blobs) = checkpoint(key(THREADS[0], "", "0003"), "run-b", 30);
    c.parent = Some("0002".parse().expect("id"));
    steps.push(Step::Put(c, blobs));
    steps.push(Step::DeleteRuns(vec!["run-a".into(), "nope".into()]));
    steps.push(Step::DeleteRuns(vec![]));
    steps.push(Step::Prune(
        vec![thread(THREADS[0]), thread("none")],
        CheckpointPrune::KeepLatest,
    ));
    let (c, blobs) = checkpoint(key(THREADS[0], "", "0005"), "run-d", 5);
    steps.push(Step::Put(c, blobs));
    steps.push(Step::Writes(
        key(THREADS[0], "", "0005"),
        vec![write("t", 0, "after")],
    ));
    steps.push(Step::Copy(thread(THREADS[1]), thread("copy of ../x")));
    steps.push(Step::Copy(thread(THREADS[1]), thread(THREADS[2])));
    steps.push(Step::Copy(thread("none"), thread("other")));
    steps.push(Step::Copy(thread(THREADS[1]), thread(THREADS[1])));
    steps.push(Step::Copy(thread("none"), thread("none")));
    let (c, blobs) = checkpoint(key("copy of ../x", "", "0007"), "run-e", 7);
    steps.push(Step::Put(c, blobs));
    steps.push(Step::DeleteThread(thread(THREADS[3])));
    steps.push(Step::DeleteThread(thread(THREADS[3])));
    steps.push(Step::Prune(
        vec![thread(THREADS[4]), thread(&long)],
        CheckpointPrune::DeleteAll,
    ));
    let (c, blobs) = checkpoint(key(THREADS[3], "", "0001"), "run-f", 1);
    steps.push(Step::Put(c, blobs));
    steps.push(Step::DeleteRuns(vec!["run-b".into()]));
    steps.extend(late_checkpoints());
    steps.extend(threads_of_writes_alone());
    steps
}

/// The checkpoints early writes were made for in [`steps`], put at last: their writes show
/// where nothing took them (kept by deleted runs that were not theirs, by a refused copy onto
/// the thread), and not where a prune, a deletion or a copy (which copies only the writes of
/// the checkpoints it copies) did.
fn late_checkpoints() -> Vec<Step> {
    let long = long_thread();
    let mut steps = Vec::new();
    for t in [
        THREADS[0], THREADS[1], THREADS[2], THREADS[3], THREADS[4], &long,
    ] {
        let (c, blobs) = checkpoint(key(t, "", "0009"), "run-g", 9);
        steps.push(Step::Put(c, blobs));
    }
    let (c, blobs) = checkpoint(key(THREADS[1], "node:9", "0003"), "run-g", 3);
    steps.push(Step::Put(c, blobs));
    let (c, blobs) = checkpoint(key("copy of ../x", "", "0009"), "run-g", 9);
    steps.push(Step::Put(c, blobs));
    steps
}

/// Threads that hold pending writes alone: listed nowhere, not a copy's source, left by a
/// prune with nothing, deleted (answering `false`), overwritten by a copy onto them.
fn threads_of_writes_alone() -> Vec<Step> {
    let mut steps = Vec::new();
    for t in ["w/copied onto", "w/deleted", "w/pruned", "w/kept"] {
        steps.push(Step::Writes(key(t, "", "0001"), vec![write("t", 0, t)]));
        steps.push(Step::Writes(key(t, "n", "0002"), vec![write("t", -1, t)]));
    }
    steps.push(Step::Copy(thread("w/deleted"), thread("other")));
    steps.push(Step::Copy(thread(THREADS[1]), thread("w/copied onto")));
    steps.push(Step::DeleteThread(thread("w/deleted")));
    steps.push(Step::Prune(
        vec![thread("w/pruned")],
        CheckpointPrune::KeepLatest,
    ));
    for t in ["w/copied onto", "w/deleted", "w/pruned", "w/kept"] {
        let (c, blobs) = checkpoint(key(t, "", "0001"), "run-h", 1);
        steps.push(Step::Put(c, blobs));
        let (c, blobs) = checkpoint(key(t, "n", "0002"), "run-h", 2);
        steps.push(Step::Put(c, blobs));
    }
    steps
}

common::mixed_run_tests!(Checkpoints, steps());

/// The folder of `thread` under `root`.
fn folder(root: &Path, thread: &str) -> PathBuf {
    let digest = Sha256::digest(thread.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    root.join("threads").join(hex)
}

fn log(root: &Path, thread: &str) -> PathBuf {
    folder(root, thread).join("checkpoints.jsonl")
}

async fn put_chain(store: &Layered<FileStore>, thread_id: &str, ids: std::ops::Range<u64>) {
    for i in ids {
        let (c, blobs) = checkpoint(key(thread_id, "", &format!("{i:04}")), "run", i);
        store.put_checkpoint(&c, &blobs).await.expect("put");
        let at = c.key.clone();
        let writes = [write("t", 0, &i.to_string())];
        store.put_writes(&at, &writes).await.expect("writes");
    }
}

/// A fresh root holding `thread_id`'s chain of checkpoints `ids`, written by a store opened
/// with `durability` and closed again.
async fn root_with_chain(
    durability: Durability, thread_id: &str, ids: std::ops::Range<u64>,
) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    put_chain(&open_with(dir.path(), durability).await, thread_id, ids).await;
    dir
}

/// The error of reading the latest checkpoint of `thread_id`, which must be refused.
async fn refused_get(store: &Layered<FileStore>, thread_id: &str) -> agentmem_core::Error {
    store
        .get_checkpoint(&thread(thread_id), &Default::default(), None)
        .await
        .expect_err("refused")
}

async fn ids(store: &dyn AgentMemory, thread_id: &str) -> Vec<String> {
    let query = CheckpointQuery::thread(thread(thread_id));
    let found = store.list_checkpoints(&query).await.expect("list");
    found
        .iter()
        .map(|t| t.checkpoint.key.id.as_str().to_owned())
        .collect()
}

#[tokio::test]
async fn a_thread_is_one_private_log_named_by_the_hash_of_its_id() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open_with(dir.path(), Durability::Fsync).await;
    let reads_first = thread("never written");
    let root = CheckpointNs::root();
    let none = store.get_checkpoint(&reads_first, &root, None).await;
    assert!(none.expect("get").is_none());
    assert!(
        !dir.path().join("threads").exists(),
        "a read creates nothing"
    );
    let id = "../../etc/passwd\n*";
    put_chain(&store, id, 0..2).await;
    let path = log(dir.path(), id);
    let text = std::fs::read_to_string(&path).expect("the thread's log");
    let header: serde_json::Value =
        serde_json::from_str(text.lines().next().expect("a header")).expect("JSON");
    assert_eq!(header["thread"], id, "the header holds the exact id");
    assert_eq!(text.lines().count(), 5, "a header, then one line a write");
    let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(&folder(dir.path(), id)), 0o700);
    assert_eq!(mode(&dir.path().join("threads")), 0o700);
    let threads = store.list_threads().await.expect("threads");
    assert_eq!(threads.len(), 1);
    assert_eq!(threads[0].thread.as_str(), id);
    assert_eq!(threads[0].checkpoints, 2);
    // Deleted: the log goes, the folder and its lock stay (a waiting process holds the lock).
    assert!(store.delete_thread(&thread(id)).await.expect("delete"));
    assert!(!path.exists());
    assert!(folder(dir.path(), id).join("checkpoints.lock").exists());
    assert!(store.list_threads().await.expect("threads").is_empty());
}

/// Pending writes made ahead of their checkpoint are logged (a thread without a log gets one)
/// and listed nowhere; a deleted run that is not theirs keeps them, in the state record of the
/// rewrite too; they show once their checkpoint is put (by another store); a thread's
/// deletion takes them with its log.
#[tokio::test]
async fn writes_ahead_of_their_checkpoint_wait_in_the_log() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open_with(dir.path(), Durability::Fsync).await;
    let early = key("early", "", "0002");
    let writes = [write("t", 0, "early"), write("t", -1, "error")];
    store.put_writes(&early, &writes).await.expect("writes");
    let path = log(dir.path(), "early");
    let text = std::fs::read_to_string(&path).expect("the thread's log");
    assert_eq!(text.lines().count(), 2, "a header and the writes");
    assert!(store.list_threads().await.expect("threads").is_empty());
    assert!(ids(&store, "early").await.is_empty());
    // A checkpoint before them, of a run then deleted: the rewrite keeps the writes alone.
    let (c, blobs) = checkpoint(key("early", "", "0001"), "run-x", 1);
    store.put_checkpoint(&c, &blobs).await.expect("put");
    let runs = ["run-x".to_owned()];
    let deleted = store.delete_run_checkpoints(&runs).await.expect("runs");
    assert_eq!(deleted, 1);
    let text = std::fs::read_to_string(&path).expect("the log, rewritten");
    let state: serde_json::Value =
        serde_json::from_str(text.lines().nth(1).expect("a state record")).expect("JSON");
    assert_eq!(state["op"], "state");
    assert!(store.list_threads().await.expect("threads").is_empty());
    // Another store (another process) puts their checkpoint: they show with it.
    let other = open_with(dir.path(), Durability::Fsync).await;
    let (c, blobs) = checkpoint(early.clone(), "run-y", 2);
    other.put_checkpoint(&c, &blobs).await.expect("put");
    let tuple = latest_checkpoint(&store, &early).await.expect("stored");
    let mut want = writes.to_vec();
    agentmem_core::checkpoint::sort_writes(&mut want);
    assert_eq!(tuple.writes, want);
    // A thread of writes alone: deleting it answers `false` and removes its log.
    let alone = key("alone", "n", "0001");
    store.put_writes(&alone, &writes).await.expect("writes");
    assert!(log(dir.path(), "alone").exists());
    assert!(!other.delete_thread(&alone.thread).await.expect("delete"));
    assert!(!log(dir.path(), "alone").exists());
    let (c, blobs) = checkpoint(alone.clone(), "run-z", 1);
    store.put_checkpoint(&c, &blobs).await.expect("put");
    let tuple = latest_checkpoint(&store, &alone).await.expect("stored");
    assert!(tuple.writes.is_empty(), "deleted with their thread");
    for s in [&store, &other] {
        assert!(s.repairs().is_empty(), "{:?}", s.repairs());
    }
}

#[tokio::test]
async fn a_torn_last_line_is_cut_away_and_the_thread_goes_on() {
    let dir = root_with_chain(Durability::Fsync, "t", 0..3).await;
    let path = log(dir.path(), "t");
    let whole = std::fs::metadata(&path).expect("stat").len();
    append_bytes(&path, br#"{"op":"put","checkpoint":{"thr"#);
    let store = open_with(dir.path(), Durability::Fsync).await;
    assert_eq!(ids(&store, "t").await, ["0002", "0001", "0000"]);
    assert_eq!(kinds(&store), [RepairKind::TornTail]);
    assert_eq!(std::fs::metadata(&path).expect("stat").len(), whole);
    put_chain(&store, "t", 3..4).await;
    let again = open_with(dir.path(), Durability::Fsync).await;
    assert_eq!(ids(&again, "t").await, ["0003", "0002", "0001", "0000"]);
    assert!(again.repairs().is_empty());
    // A tail of zeros (a crash after the size grew, before the data landed) is torn too.
    append_bytes(&path, &[0; 40]);
    append_bytes(&path, b"\n");
    let store = open_with(dir.path(), Durability::Fsync).await;
    assert_eq!(ids(&store, "t").await.len(), 4);
    assert_eq!(kinds(&store), [RepairKind::TornTail]);
}

#[tokio::test]
async fn an_unreadable_line_is_set_aside_and_the_rest_kept() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open_with(dir.path(), Durability::Buffered).await;
    put_chain(&store, "t", 0..2).await;
    let path = log(dir.path(), "t");
    // Appended by another writer, as this store's cache does not know yet.
    append_bytes(&path, b"{\"op\":\"put\",\"what\":1}\n");
    put_chain(&store, "t", 2..3).await;
    assert_eq!(ids(&store, "t").await, ["0002", "0001", "0000"]);
    assert_eq!(kinds(&store), [RepairKind::Quarantined]);
    let quarantine = folder(dir.path(), "t").join("quarantine");
    let aside: Vec<_> = std::fs::read_dir(&quarantine)
        .expect("quarantine folder")
        .map(|e| std::fs::read(e.expect("entry").path()).expect("read"))
        .collect();
    assert_eq!(aside, [b"{\"op\":\"put\",\"what\":1}\n".to_vec()]);
    let fresh = open_with(dir.path(), Durability::Buffered).await;
    let tuple = fresh
        .get_checkpoint(&thread("t"), &Default::default(), None)
        .await
        .expect("get")
        .expect("latest");
    assert_eq!(tuple.checkpoint.key.id.as_str(), "0002");
    assert_eq!(tuple.writes.len(), 1);
    assert_eq!(ids(&fresh, "t").await.len(), 3);
    assert!(fresh.repairs().is_empty(), "{:?}", fresh.repairs());
}

#[tokio::test]
async fn a_damaged_header_is_rebuilt_from_the_records_that_name_the_thread() {
    let id = "user:42/chat";
    let dir = root_with_chain(Durability::Buffered, id, 0..2).await;
    let path = log(dir.path(), id);
    let text = std::fs::read_to_string(&path).expect("read");
    let (_, rest) = text.split_once('\n').expect("lines");
    std::fs::write(&path, format!("{{\"op\":\"hea\n{rest}")).expect("write");
    // A walk finds the thread by the records that name it.
    let store = open_with(dir.path(), Durability::Buffered).await;
    let threads = store.list_threads().await.expect("threads");
    assert_eq!(threads.len(), 1);
    assert_eq!(
        (threads[0].thread.as_str(), threads[0].checkpoints),
        (id, 2)
    );
    assert_eq!(kinds(&store), [RepairKind::Quarantined]);
    // A log nothing readable in: set aside whole, the thread shows nothing.
    let other = log(dir.path(), "garbage");
    put_chain(&store, "garbage", 0..1).await;
    std::fs::write(&other, b"not json\n").expect("write");
    let store = open_with(dir.path(), Durability::Buffered).await;
    assert_eq!(store.list_threads().await.expect("threads").len(), 1);
    assert_eq!(kinds(&store), [RepairKind::QuarantinedFile]);
    assert!(!other.exists());
    assert!(ids(&store, "garbage").await.is_empty());
}

#[tokio::test]
async fn a_log_in_the_wrong_folder_is_an_error_not_another_threads_answer() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open_with(dir.path(), Durability::Buffered).await;
    put_chain(&store, "mine", 0..1).await;
    put_chain(&store, "yours", 0..1).await;
    std::fs::rename(log(dir.path(), "mine"), log(dir.path(), "yours")).expect("move");
    let fresh = open_with(dir.path(), Durability::Buffered).await;
    let err = refused_get(&fresh, "yours").await;
    assert_eq!(err.kind(), ErrorKind::CorruptData, "{err}");
    let err = fresh.list_threads().await.expect_err("refused");
    assert_eq!(err.kind(), ErrorKind::CorruptData, "{err}");
}

#[tokio::test]
async fn a_newer_log_is_refused_and_left_alone() {
    let dir = root_with_chain(Durability::Buffered, "t", 0..1).await;
    let path = log(dir.path(), "t");
    let newer = "{\"op\":\"header\",\"format\":\"agentmem.checkpoints\",\"version\":9,\"thread\":\"t\"}\n{\"op\":\"future\"}\n";
    std::fs::write(&path, newer).expect("write");
    let store = open_with(dir.path(), Durability::Buffered).await;
    let err = refused_get(&store, "t").await;
    assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
    assert_eq!(std::fs::read_to_string(&path).expect("read"), newer);
}

#[tokio::test]
async fn a_temporary_file_left_by_a_rewrite_is_removed() {
    let dir = root_with_chain(Durability::Buffered, "t", 0..2).await;
    let tmp = folder(dir.path(), "t").join(".tmp-left-by-a-crash");
    std::fs::write(&tmp, b"half a state").expect("write");
    let store = open_with(dir.path(), Durability::Buffered).await;
    let pruned = store
        .prune_checkpoints(&[thread("t")], CheckpointPrune::KeepLatest)
        .await
        .expect("prune");
    assert_eq!(pruned, 1);
    assert!(!tmp.exists());
    assert_eq!(kinds(&store), [RepairKind::TempFile]);
    let fresh = open_with(dir.path(), Durability::Buffered).await;
    assert_eq!(ids(&fresh, "t").await, ["0001"]);
}

/// Two stores (two processes, in effect) copying between the same two threads in opposite
/// directions, with deletions and writes between, finish, and every thread left is whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_in_opposite_directions_finish() {
    let dir = tempfile::tempdir().expect("temp dir");
    let a = open_with(dir.path(), Durability::Buffered).await;
    let b = open_with(dir.path(), Durability::Buffered).await;
    let run = |store: Layered<FileStore>, from: &'static str, to: &'static str| async move {
        for i in 0..60u64 {
            let (c, blobs) = checkpoint(key(from, "", &format!("{i:04}")), "run", i);
            store.put_checkpoint(&c, &blobs).await.expect("put");
            match store.copy_thread(&thread(from), &thread(to)).await {
                Ok(n) => assert!(n > 0),
                Err(e) => assert!(
                    matches!(e.kind(), ErrorKind::Conflict | ErrorKind::NotFound),
                    "{e}"
                ),
            }
            if i % 3 == 0 {
                store.delete_thread(&thread(to)).await.expect("delete");
            }
        }
    };
    let one = tokio::spawn(run(a, "ping", "pong"));
    let two = tokio::spawn(run(b, "pong", "ping"));
    one.await.expect("first");
    two.await.expect("second");
    let fresh = open_with(dir.path(), Durability::Buffered).await;
    for t in ["ping", "pong"] {
        for tuple in fresh
            .list_checkpoints(&CheckpointQuery::thread(thread(t)))
            .await
            .expect("list")
        {
            assert_eq!(tuple.checkpoint.key.thread.as_str(), t);
            assert_eq!(tuple.blobs.len(), 2, "a checkpoint with its blobs");
        }
    }
    assert!(fresh.repairs().is_empty(), "{:?}", fresh.repairs());
}
