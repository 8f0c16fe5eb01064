//! Checkpoints in SQLite against the in-memory reference: the same calls on both stores give
//! the same answers (values, orders, counts, error kinds), with awkward thread ids,
//! namespaces, ids, metadata and values; and what one connection writes, another reads.
use std::fmt::Debug;

use agentmem_core::{
    ChannelBlob, Checkpoint, CheckpointId, CheckpointKey, CheckpointNs, CheckpointPrune,
    CheckpointQuery, CheckpointStore, InMemoryStore, Layered, Metadata, PendingWrite, Result,
    SessionStore, ThreadId, TypedBytes,
};
use agentmem_sqlite::SqliteStore;
use agentmem_testkit::fixtures::latest_checkpoint;
use chrono::{TimeZone, Utc};
use serde_json::{json, Value};

/// The reference store and the SQLite store under test, given the same calls.
struct Pair {
    reference: Layered<InMemoryStore>,
    sqlite: Layered<SqliteStore>,
    _dir: tempfile::TempDir,
}

impl Pair {
    async fn new() -> Pair {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}/cp.db?synchronous=normal", dir.path().display());
        Pair {
            reference: InMemoryStore::new(),
            sqlite: SqliteStore::connect(&url).await.unwrap(),
            _dir: dir,
        }
    }

    fn stores(&self) -> [&dyn CheckpointStore; 2] {
        [&*self.reference, &*self.sqlite]
    }
}

/// Runs `$call` with `$s` bound to each store of `$pair` and asserts the same outcome: equal
/// values, or errors of the same kind. Evaluates to the reference's value.
macro_rules! same {
    ($pair:expr, |$s:ident| $call:expr) => {{
        let [reference, sqlite] = $pair.stores();
        let expected = {
            let $s = reference;
            $call.await
        };
        let got = {
            let $s = sqlite;
            $call.await
        };
        agree(expected, got, stringify!($call))
    }};
}

fn agree<T: PartialEq + Debug>(expected: Result<T>, got: Result<T>, what: &str) -> Option<T> {
    match (expected, got) {
        (Ok(expected), Ok(got)) => {
            assert_eq!(got, expected, "{what}");
            Some(expected)
        }
        (Err(expected), Err(got)) => {
            assert_eq!(got.kind(), expected.kind(), "{what}: {got} vs {expected}");
            None
        }
        (expected, got) => panic!("{what}: expected {expected:?}, got {got:?}"),
    }
}

const THREADS: [&str; 6] = [
    "user:42/chat",
    "a*b?[c] ..",
    "spa ce %25",
    "ünï/cødé ✓",
    "$where",
    "x|y\\z'\"",
];
const NAMESPACES: [&str; 3] = ["", "node:1", "node:1|inner:2 *"];
/// Ids in no particular order; byte order ranks `B` before `a` and `a` before `é`.
const IDS: [&str; 5] = ["1ef0-a", "1ef0-B", "1ef0-é", "1ef0-a0", "0"];

fn thread(i: usize) -> ThreadId {
    THREADS[i].parse().unwrap()
}

fn ns(i: usize) -> CheckpointNs {
    NAMESPACES[i].parse().unwrap()
}

fn id(text: &str) -> CheckpointId {
    text.parse().unwrap()
}

fn deep(depth: usize) -> Value {
    (0..depth).fold(json!("bottom"), |inner, _| json!({ "d": inner }))
}

/// The metadata of checkpoint `n`: typed values that look alike (`42`, `"42"`, `42.0`),
/// nested objects, a NUL inside a string, deep nesting, and a run id.
fn metadata(n: usize) -> Metadata {
    let value = json!({
        "run_id": format!("run-{}", n % 3),
        "step": n,
        "source": if n.is_multiple_of(2) { "loop" } else { "input" },
        "n": if n.is_multiple_of(3) { json!(42) } else { json!("42") },
        "obj": { "a": n % 2, "b": [1, "x", null] },
        "nul": "a\u{0}b",
        "float": 0.1 + n as f64,
        "deep": deep(50),
    });
    value.as_object().unwrap().clone()
}

/// Puts checkpoint `n` at (thread `t`, namespace `s`, id `i`) into both stores, with blobs
/// (one emptied channel, one value shared with others) and pending writes.
async fn put(pair: &Pair, n: usize, t: usize, s: usize, i: &str) {
    let key = CheckpointKey {
        thread: thread(t),
        ns: ns(s),
        id: id(i),
    };
    let mut checkpoint = Checkpoint::new(
        key.clone(),
        TypedBytes::new("msgpack", vec![0, 255, n as u8]),
    );
    checkpoint.parent = (n % 2 == 1).then(|| id("0"));
    checkpoint.metadata = metadata(n);
    checkpoint.created_at = Utc
        .timestamp_opt(1_700_000_000 + n as i64, 123_456_000)
        .unwrap();
    let channels = [
        ("messages", format!("v{n}")),
        ("shared", "v0".into()),
        ("gone", format!("e{n}")),
    ];
    for (channel, version) in &channels {
        checkpoint
            .channel_versions
            .insert((*channel).into(), version.clone());
    }
    let blobs = vec![
        ChannelBlob {
            channel: "messages".into(),
            version: format!("v{n}"),
            value: Some(TypedBytes::new("bytes", vec![n as u8; n % 4])),
        },
        ChannelBlob {
            channel: "shared".into(),
            version: "v0".into(),
            value: Some(TypedBytes::new("", Vec::new())),
        },
        ChannelBlob {
            channel: "gone".into(),
            version: format!("e{n}"),
            value: None,
        },
    ];
    same!(pair, |s| s.put_checkpoint(&checkpoint, &blobs)).unwrap();
    let write = |task: &str, idx: i64, path: &str, byte: u8| PendingWrite {
        task_id: task.into(),
        idx,
        channel: "ch".into(),
        value: TypedBytes::new("json", vec![byte]),
        task_path: path.into(),
    };
    let writes = vec![
        write("task-b", 1, "~a", 1),
        write("task-a", 0, "~a", 2),
        write("task-a", -1, "", 3),
        write("task-a", 0, "~z", 4), // same (task, idx) as an earlier one: skipped
    ];
    same!(pair, |s| s.put_writes(&key, &writes)).unwrap();
    let again = vec![write("task-a", -1, "~b", 5), write("task-b", 1, "", 6)];
    same!(pair, |s| s.put_writes(&key, &again)).unwrap();
}

/// Puts, in every namespace of thread `t`, checkpoints that read each version ever written
/// but come without blobs: they show which stored values are left (deleting a checkpoint
/// drops the values no remaining checkpoint reads, and a checkpoint written later must not
/// find them).
async fn probe(pair: &Pair, t: usize) {
    for space in 0..NAMESPACES.len() {
        for n in 0..100 {
            let key = CheckpointKey {
                thread: thread(t),
                ns: ns(space),
                id: id(&format!("probe-{n:03}")),
            };
            let mut checkpoint = Checkpoint::new(key, TypedBytes::new("json", Vec::new()));
            for (channel, version) in [("messages", format!("v{n}")), ("gone", format!("e{n}"))] {
                checkpoint.channel_versions.insert(channel.into(), version);
            }
            same!(pair, |s| s.put_checkpoint(&checkpoint, &[])).unwrap();
            same!(pair, |s| s.get_checkpoint(&thread(t), &ns(space), None));
        }
    }
}

fn at(t: &ThreadId, s: usize, i: &str) -> CheckpointKey {
    CheckpointKey {
        thread: t.clone(),
        ns: ns(s),
        id: id(i),
    }
}

/// Puts pending writes at `key` in both stores, whether or not its checkpoint is stored.
async fn write_ahead(pair: &Pair, key: &CheckpointKey) {
    let writes = [PendingWrite {
        task_id: "early".into(),
        idx: 0,
        channel: "ch".into(),
        value: TypedBytes::new("json", key.id.as_str().as_bytes().to_vec()),
        task_path: String::new(),
    }];
    same!(pair, |s| s.put_writes(key, &writes)).unwrap();
    same!(pair, |s| s.get_checkpoint(
        &key.thread,
        &key.ns,
        Some(&key.id)
    ));
}

/// Puts a bare checkpoint at `key` in both stores and compares what reads back: the writes
/// stored ahead of it that are left show.
async fn reveal(pair: &Pair, key: &CheckpointKey) {
    let checkpoint = Checkpoint::new(key.clone(), TypedBytes::new("json", Vec::new()));
    same!(pair, |s| s.put_checkpoint(&checkpoint, &[])).unwrap();
    let got = same!(pair, |s| s.get_checkpoint(
        &key.thread,
        &key.ns,
        Some(&key.id)
    ));
    assert!(got.is_some_and(|t| t.is_some()), "{key:?}");
}

async fn fill(pair: &Pair) {
    let mut n = 0;
    for t in 0..THREADS.len() {
        for s in 0..NAMESPACES.len() {
            for i in IDS.iter().take(1 + (t + s) % IDS.len()) {
                put(pair, n, t, s, i).await;
                n += 1;
            }
        }
    }
    // Replacing a checkpoint keeps its writes.
    put(pair, 99, 0, 0, IDS[0]).await;
}

async fn check_reads(pair: &Pair) {
    same!(pair, |s| s.list_threads());
    for t in 0..THREADS.len() {
        for n in 0..NAMESPACES.len() {
            same!(pair, |s| s.get_checkpoint(&thread(t), &ns(n), None));
            for i in IDS {
                same!(pair, |s| s.get_checkpoint(&thread(t), &ns(n), Some(&id(i))));
            }
        }
    }
    let mut queries = vec![CheckpointQuery::default()];
    for filter in [
        json!({ "n": 42 }),
        json!({ "n": "42" }),
        json!({ "n": 42.0 }),
        json!({ "obj": { "a": 1, "b": [1, "x", null] } }),
        json!({ "obj": { "a": 1 } }),
        json!({ "run_id": "run-1" }),
        json!({ "run_id": "run-1", "source": "loop" }),
        json!({ "run_id": 1 }),
        json!({ "nul": "a\u{0}b" }),
        json!({ "deep": deep(50) }),
        json!({ "missing": null }),
    ] {
        queries.push(CheckpointQuery {
            metadata: filter.as_object().unwrap().clone(),
            ..CheckpointQuery::default()
        });
    }
    let mut more = Vec::new();
    for base in &queries {
        for limit in [None, Some(0), Some(1), Some(3)] {
            for thread_filter in [None, Some(thread(1)), Some(thread(5))] {
                for ns_filter in [None, Some(ns(0)), Some(ns(2))] {
                    more.push(CheckpointQuery {
                        thread: thread_filter.clone(),
                        ns: ns_filter,
                        limit,
                        ..base.clone()
                    });
                }
            }
        }
    }
    for i in IDS {
        more.push(CheckpointQuery {
            before: Some(id(i)),
            ..CheckpointQuery::default()
        });
        more.push(CheckpointQuery {
            id: Some(id(i)),
            thread: Some(thread(4)),
            ..CheckpointQuery::default()
        });
    }
    for query in queries.iter().chain(&more) {
        same!(pair, |s| s.list_checkpoints(query));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_answers_as_the_reference_does() {
    let pair = Pair::new().await;
    assert!(pair.sqlite.capabilities().checkpoints);
    fill(&pair).await;
    check_reads(&pair).await;

    // Writes ahead of their checkpoint: stored, but alone they make no checkpoint and no
    // thread; each maintenance step below shows which of them it kept.
    let copy: ThreadId = "copy of ü *".parse().unwrap();
    let lonely: ThreadId = "writes only: ✓".parse().unwrap();
    let ahead = [
        at(&thread(0), 0, "zzz"),
        at(&thread(2), 1, "0-early"),
        at(&thread(2), 0, "zzz"),
        at(&thread(3), 0, "zzz"),
        at(&thread(5), 0, "zzz"),
        at(&lonely, 0, "1"),
        at(&copy, 0, "x"),
    ];
    for key in &ahead {
        write_ahead(&pair, key).await;
    }
    same!(pair, |s| s.put_writes(&ahead[0], &[]));
    check_reads(&pair).await;
    same!(pair, |s| s
        .list_checkpoints(&CheckpointQuery::thread(lonely.clone())));
    same!(pair, |s| s.delete_thread(&lonely));
    reveal(&pair, &ahead[5]).await;
    same!(pair, |s| s.delete_thread(&lonely));

    // Runs, across threads; then writes put ahead show with their checkpoint.
    same!(pair, |s| s.delete_run_checkpoints(&[
        "run-1".into(),
        "nope".into(),
        "run-1".into()
    ]));
    same!(pair, |s| s.delete_run_checkpoints(&[]));
    check_reads(&pair).await;
    reveal(&pair, &ahead[3]).await;
    // Checkpoint 1 (run-1) went with its writes: put again, it has none.
    reveal(&pair, &at(&thread(0), 1, IDS[0])).await;
    probe(&pair, 1).await;

    // Copies: into a new thread (its own early writes go, the source's early writes are not
    // copied), from an empty one, onto a held one.
    let empty: ThreadId = "never written".parse().unwrap();
    same!(pair, |s| s.copy_thread(&thread(2), &copy));
    same!(pair, |s| s.copy_thread(&empty, &copy));
    same!(pair, |s| s.copy_thread(&thread(3), &copy));
    same!(pair, |s| s.copy_thread(&thread(3), &thread(3)));
    check_reads(&pair).await;
    reveal(&pair, &ahead[6]).await;
    reveal(&pair, &at(&copy, 1, "0-early")).await;
    same!(pair, |s| s
        .list_checkpoints(&CheckpointQuery::thread(copy.clone())));

    // Pruning (early writes go too), then deleting.
    let some = [thread(2), empty.clone(), thread(2), thread(4)];
    same!(pair, |s| s
        .prune_checkpoints(&some, CheckpointPrune::KeepLatest));
    same!(pair, |s| s
        .prune_checkpoints(&[thread(5)], CheckpointPrune::DeleteAll));
    check_reads(&pair).await;
    for key in [&ahead[1], &ahead[2], &ahead[4]] {
        reveal(&pair, key).await;
    }
    probe(&pair, 2).await;
    probe(&pair, 5).await;
    same!(pair, |s| s
        .list_checkpoints(&CheckpointQuery::thread(copy.clone())));
    same!(pair, |s| s.delete_thread(&thread(0)));
    reveal(&pair, &ahead[0]).await;
    same!(pair, |s| s.delete_thread(&thread(0)));
    same!(pair, |s| s.delete_thread(&thread(0)));
    same!(pair, |s| s.delete_thread(&empty));
    check_reads(&pair).await;

    // A pruned thread written again starts afresh: the versions it no longer reads are gone.
    put(&pair, 7, 2, 0, "new").await;
    check_reads(&pair).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_one_store_writes_another_on_the_same_file_reads() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/shared.db", dir.path().display());
    let writer = SqliteStore::connect(&url).await.unwrap();
    let reader = SqliteStore::connect(&url).await.unwrap();
    let key = CheckpointKey {
        thread: thread(1),
        ns: ns(2),
        id: id("1"),
    };
    let checkpoint = Checkpoint::new(key.clone(), TypedBytes::new("json", b"{}".to_vec()));
    writer.put_checkpoint(&checkpoint, &[]).await.unwrap();
    let got = latest_checkpoint(&reader, &key).await.unwrap();
    assert_eq!(got.checkpoint, checkpoint);
    assert_eq!(reader.list_threads().await.unwrap()[0].thread, key.thread);
}
