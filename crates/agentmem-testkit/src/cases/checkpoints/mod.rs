//! Checkpoints (LangGraph's checkpointer model): byte-for-byte storage of what the saver hands
//! over, channel values per version, pending writes, listing newest first with filters applied
//! before the limit, and deleting, copying and pruning threads.
//!
//! The area applies only to stores whose [`Capabilities::checkpoints`](agentmem_core::Capabilities)
//! say they keep them ([`Area::applies_to`](super::Area::applies_to)). A store without them
//! must refuse every checkpoint operation with `Unsupported`: `checkpoints_are_kept_or_refused`, a case of the `misc`
//! area, checks that on every store.

use std::collections::BTreeMap;
use std::fmt::Debug;

use agentmem_core::{
    AgentMemory, ChannelBlob, Checkpoint, CheckpointId, CheckpointKey, CheckpointNs,
    CheckpointPrune, CheckpointQuery, CheckpointTuple, ErrorKind, PendingWrite, Result, ThreadId,
    TypedBytes, MAX_THREAD_KEY_BYTES,
};
use serde_json::json;

use super::{assert_kind, metadata};

mod threads;

pub use threads::{
    concurrent_checkpoint_writers_lose_nothing, copying_a_checkpoint_thread_copies_all_of_it,
    deleting_a_checkpoint_thread_removes_all_of_it, deleting_runs_removes_their_checkpoints,
    invalid_checkpoints_are_refused, pruning_checkpoints_keeps_the_latest_per_namespace,
};

pub(super) fn thread(id: &str) -> ThreadId {
    ThreadId::new(id).expect("a valid thread id")
}

pub(super) fn ns(name: &str) -> CheckpointNs {
    CheckpointNs::new(name).expect("a valid namespace")
}

pub(super) fn cid(id: &str) -> CheckpointId {
    CheckpointId::new(id).expect("a valid checkpoint id")
}

pub(super) fn key(thread_id: &str, namespace: &str, id: &str) -> CheckpointKey {
    CheckpointKey {
        thread: thread(thread_id),
        ns: ns(namespace),
        id: cid(id),
    }
}

/// A checkpoint at `key` whose body names it, reading `versions`, with `meta`.
pub(super) fn checkpoint(
    key: CheckpointKey, versions: &[(&str, &str)], meta: serde_json::Value,
) -> Checkpoint {
    let body = TypedBytes::new("msgpack", format!("body of {}", key.id).into_bytes());
    let mut checkpoint = Checkpoint::new(key, body);
    checkpoint.channel_versions = versions
        .iter()
        .map(|(c, v)| ((*c).to_owned(), (*v).to_owned()))
        .collect();
    checkpoint.metadata = metadata(meta);
    checkpoint
}

pub(super) fn blob(channel: &str, version: &str, value: Option<&str>) -> ChannelBlob {
    ChannelBlob {
        channel: channel.to_owned(),
        version: version.to_owned(),
        value: value.map(|v| TypedBytes::new("json", v.as_bytes().to_vec())),
    }
}

pub(super) fn write(task_id: &str, idx: i64, channel: &str, value: &str) -> PendingWrite {
    PendingWrite {
        task_id: task_id.to_owned(),
        idx,
        channel: channel.to_owned(),
        value: TypedBytes::new("json", value.as_bytes().to_vec()),
        task_path: String::new(),
    }
}

pub(super) fn ok<T>(result: Result<T>, what: &str) -> T {
    result.unwrap_or_else(|e| panic!("{what} failed: {e}"))
}

pub(super) async fn put(store: &dyn AgentMemory, checkpoint: &Checkpoint, blobs: &[ChannelBlob]) {
    let what = format!("put_checkpoint {:?}", checkpoint.key);
    ok(store.put_checkpoint(checkpoint, blobs).await, &what);
}

pub(super) async fn put_writes(
    store: &dyn AgentMemory, at: &CheckpointKey, writes: &[PendingWrite],
) {
    ok(store.put_writes(at, writes).await, "put_writes");
}

pub(super) async fn get(
    store: &dyn AgentMemory, at: &CheckpointKey, latest: bool,
) -> CheckpointTuple {
    let id = (!latest).then_some(&at.id);
    ok(
        store.get_checkpoint(&at.thread, &at.ns, id).await,
        "get_checkpoint",
    )
    .unwrap_or_else(|| panic!("checkpoint {at:?} (latest: {latest}) is missing"))
}

pub(super) async fn list(store: &dyn AgentMemory, query: &CheckpointQuery) -> Vec<CheckpointTuple> {
    ok(store.list_checkpoints(query).await, "list_checkpoints")
}

/// The (thread, namespace, id) of each tuple, as strings, in order.
pub(super) fn keys(tuples: &[CheckpointTuple]) -> Vec<(String, String, String)> {
    tuples
        .iter()
        .map(|t| {
            let k = &t.checkpoint.key;
            (k.thread.to_string(), k.ns.to_string(), k.id.to_string())
        })
        .collect()
}

pub(super) fn ids(tuples: &[CheckpointTuple]) -> Vec<String> {
    tuples
        .iter()
        .map(|t| t.checkpoint.key.id.to_string())
        .collect()
}

/// Puts `n` checkpoints `c0..` on (thread, ns), each the parent of the next, with metadata
/// `{"step": i, "source": "loop", "run_id": run}`.
pub(super) async fn chain(
    store: &dyn AgentMemory, thread_id: &str, namespace: &str, n: usize, run: &str,
) {
    let mut parent = None;
    for i in 0..n {
        let step = i.to_string();
        let mut c = checkpoint(
            key(thread_id, namespace, &format!("c{i}")),
            &[("step", &step)],
            json!({"step": i, "source": "loop", "run_id": run}),
        );
        c.parent = parent.take();
        put(store, &c, &[blob("step", &step, Some(&step))]).await;
        parent = Some(c.key.id.clone());
    }
}

pub(super) fn assert_unsupported<T: Debug>(result: Result<T>, what: &str) {
    assert_kind(result, ErrorKind::Unsupported, what);
}

/// A store keeps checkpoints and says so, or says it does not and refuses every operation
/// with `Unsupported`.
pub async fn checkpoints_are_kept_or_refused(store: &dyn AgentMemory) {
    let at = key("kept", "", "c1");
    let c = checkpoint(at.clone(), &[], json!({}));
    if store.capabilities().checkpoints {
        put(store, &c, &[]).await;
        assert_eq!(get(store, &at, true).await.checkpoint, c);
        return;
    }
    let t = &at.thread;
    assert_unsupported(store.put_checkpoint(&c, &[]).await, "put_checkpoint");
    assert_unsupported(store.put_writes(&at, &[]).await, "put_writes");
    assert_unsupported(store.get_checkpoint(t, &at.ns, None).await, "get");
    assert_unsupported(
        store.list_checkpoints(&CheckpointQuery::default()).await,
        "list",
    );
    assert_unsupported(store.list_threads().await, "list_threads");
    assert_unsupported(store.delete_thread(t).await, "delete_thread");
    assert_unsupported(store.delete_run_checkpoints(&[]).await, "delete_runs");
    assert_unsupported(store.copy_thread(t, &thread("x")).await, "copy_thread");
    let prune = store.prune_checkpoints(&[], CheckpointPrune::KeepLatest);
    assert_unsupported(prune.await, "prune");
}

/// Body, blobs, metadata, parent and channel versions come back exactly as written: bytes
/// with NUL and invalid UTF-8, metadata of any JSON shape (strings holding `\u0000`, nesting,
/// key order), an emptied channel (`None`), and the creation time to the microsecond.
pub async fn checkpoints_round_trip_byte_for_byte(store: &dyn AgentMemory) {
    let at = key("round trip", "", "1ef0a");
    let mut c = checkpoint(
        at.clone(),
        &[
            ("messages", "00002.0.5"),
            ("empty", "3"),
            ("__start__", "1"),
        ],
        json!({
            "source": "loop", "step": 3, "parents": {"": "1ef09"}, "run_id": "run-1",
            "writes": {"node": {"messages": ["héllo", null, 1.5, true]}},
            "nul": "a\u{0}b", "zebra": 1, "alpha": [], "deep": {"a": {"b": {"c": {}}}}
        }),
    );
    c.body = TypedBytes::new("msgpack", vec![0, 159, 146, 150, 255, 0, 10]);
    c.parent = Some(cid("1ef09"));
    let blobs = [
        ChannelBlob {
            channel: "messages".into(),
            version: "00002.0.5".into(),
            value: Some(TypedBytes::new("msgpack", vec![0xC0, 0, 0xFF])),
        },
        blob("empty", "3", None),
        blob("__start__", "1", Some("{\"x\":1}")),
        // A blob of a version this checkpoint does not read is not returned with it.
        blob("messages", "00001.0.1", Some("old")),
    ];
    put(store, &c, &blobs).await;
    for latest in [false, true] {
        let got = get(store, &at, latest).await;
        assert_eq!(got.checkpoint, c, "the checkpoint comes back exactly");
        let mut found = got.blobs.clone();
        found.sort_by(|a, b| a.channel.cmp(&b.channel));
        let mut expected = blobs[..3].to_vec();
        expected.sort_by(|a, b| a.channel.cmp(&b.channel));
        assert_eq!(
            found, expected,
            "the blobs of its versions, the emptied one too"
        );
        assert!(got.writes.is_empty(), "no pending writes yet");
    }
    let nope = cid("nope");
    let missing = store.get_checkpoint(&at.thread, &at.ns, Some(&nope)).await;
    assert!(ok(missing, "get a missing id").is_none());
    let other = store
        .get_checkpoint(&thread("no such thread"), &at.ns, None)
        .await;
    assert!(ok(other, "get a missing thread").is_none());
}

/// Thread ids and namespaces are any UTF-8: ids that differ by one character (glob and key
/// characters, case, escapes, spaces, a long id) are distinct threads, listed as written.
pub async fn checkpoint_threads_with_hostile_ids_stay_apart(store: &dyn AgentMemory) {
    let long = "t".repeat(MAX_THREAD_KEY_BYTES);
    let threads = [
        "a",
        "A",
        "a:b",
        "a/b",
        "a\\b",
        "a*",
        "a?",
        "[a]",
        "{a}",
        "a b",
        "$a",
        "..",
        ".",
        "%41",
        "%2F",
        "a|b",
        "ü",
        "中文",
        "a\nb",
        "a\u{7f}",
        "a%",
        long.as_str(),
    ];
    let namespaces = ["", "node:1", "node:1|inner:2", "*", "$"];
    for (i, t) in threads.iter().enumerate() {
        for n in namespaces {
            let meta = json!({"thread": t, "ns": n});
            let c = checkpoint(key(t, n, &format!("c{i}")), &[("ch", "1")], meta);
            put(store, &c, &[blob("ch", "1", Some(&format!("{t}|{n}")))]).await;
        }
    }
    for (i, t) in threads.iter().enumerate() {
        for n in namespaces {
            let got = get(store, &key(t, n, &format!("c{i}")), true).await;
            assert_eq!(got.checkpoint.key.thread.as_str(), *t);
            assert_eq!(got.checkpoint.key.ns.as_str(), n);
            let value = got.blobs[0].value.as_ref().expect("a value");
            assert_eq!(
                value.bytes,
                format!("{t}|{n}").into_bytes(),
                "thread {t:?} ns {n:?}"
            );
        }
        let listed = list(store, &CheckpointQuery::thread(thread(t))).await;
        assert_eq!(
            listed.len(),
            namespaces.len(),
            "thread {t:?} holds its own only"
        );
    }
    let mut expected: Vec<&str> = threads.to_vec();
    expected.sort_unstable();
    let listed = ok(store.list_threads().await, "list_threads");
    let listed: Vec<&str> = listed.iter().map(|t| t.thread.as_str()).collect();
    assert_eq!(listed, expected, "every thread, by id, exactly as written");
    assert!(ok(store.list_threads().await, "list_threads")
        .iter()
        .all(|t| t.checkpoints == namespaces.len() as u64));
}

/// The latest checkpoint is the one with the greatest id (byte order, whatever the order of
/// writing); listing is newest first.
pub async fn latest_checkpoint_is_the_greatest_id(store: &dyn AgentMemory) {
    for id in ["1ef2", "1ef3", "1ef1", "1EF9", "1ef20"] {
        put(
            store,
            &checkpoint(key("order", "", id), &[], json!({})),
            &[],
        )
        .await;
    }
    let latest = get(store, &key("order", "", "x"), true).await;
    assert_eq!(latest.checkpoint.key.id, "1ef3");
    let listed = list(store, &CheckpointQuery::thread(thread("order"))).await;
    assert_eq!(ids(&listed), ["1ef3", "1ef20", "1ef2", "1ef1", "1EF9"]);
}

/// Channel values are stored per version: a checkpoint reads the versions it names, including
/// ones written with an earlier checkpoint, and a new version does not change an older
/// checkpoint's values.
pub async fn checkpoint_channel_values_are_kept_per_version(store: &dyn AgentMemory) {
    let first = checkpoint(key("blobs", "", "c1"), &[("a", "1"), ("b", "1")], json!({}));
    put(
        store,
        &first,
        &[blob("a", "1", Some("a1")), blob("b", "1", Some("b1"))],
    )
    .await;
    let mut second = checkpoint(key("blobs", "", "c2"), &[("a", "2"), ("b", "1")], json!({}));
    second.parent = Some(cid("c1"));
    put(store, &second, &[blob("a", "2", Some("a2"))]).await;
    let values = |t: &CheckpointTuple| -> BTreeMap<String, String> {
        t.blobs
            .iter()
            .map(|b| {
                let v = b
                    .value
                    .as_ref()
                    .map(|v| v.bytes.clone())
                    .unwrap_or_default();
                (b.channel.clone(), String::from_utf8(v).expect("utf-8"))
            })
            .collect()
    };
    let latest = get(store, &second.key, true).await;
    assert_eq!(latest.checkpoint.parent, Some(cid("c1")));
    assert_eq!(
        values(&latest),
        BTreeMap::from([("a".into(), "a2".into()), ("b".into(), "b1".into())])
    );
    let older = get(store, &first.key, false).await;
    assert_eq!(
        values(&older),
        BTreeMap::from([("a".into(), "a1".into()), ("b".into(), "b1".into())])
    );
}

/// Putting a checkpoint at an existing key replaces it and keeps its pending writes.
pub async fn putting_a_checkpoint_again_replaces_it(store: &dyn AgentMemory) {
    let at = key("again", "", "c1");
    put(store, &checkpoint(at.clone(), &[], json!({"v": 1})), &[]).await;
    put_writes(store, &at, &[write("t1", 0, "ch", "w")]).await;
    let mut newer = checkpoint(at.clone(), &[], json!({"v": 2}));
    newer.body = TypedBytes::new("json", b"new".to_vec());
    put(store, &newer, &[]).await;
    let got = get(store, &at, false).await;
    assert_eq!(got.checkpoint, newer, "replaced");
    assert_eq!(got.writes.len(), 1, "its writes stay");
    let listed = list(store, &CheckpointQuery::thread(thread("again"))).await;
    assert_eq!(listed.len(), 1, "one checkpoint, not two");
}

/// Pending writes: an ordinary write (index ≥ 0) is stored once per (task, index), a special
/// one (index < 0) replaces; they come back sorted by task path, task id and index; writes
/// made before their checkpoint is stored show once it is; an empty call changes nothing.
pub async fn checkpoint_writes_follow_langgraph_rules(store: &dyn AgentMemory) {
    let at = key("writes", "", "c1");
    put(store, &checkpoint(at.clone(), &[], json!({})), &[]).await;
    let with_path = |w: PendingWrite, path: &str| PendingWrite {
        task_path: path.to_owned(),
        ..w
    };
    put_writes(
        store,
        &at,
        &[
            with_path(write("task-b", 0, "x", "b0"), "~1"),
            with_path(write("task-b", 1, "y", "b1"), "~1"),
        ],
    )
    .await;
    put_writes(
        store,
        &at,
        &[
            with_path(write("task-a", 1, "y", "a1"), "~0"),
            with_path(write("task-a", 0, "x", "a0"), "~0"),
            with_path(write("task-a", -1, "__error__", "boom"), "~0"),
        ],
    )
    .await;
    // A retried task writes again: ordinary writes are kept as first written; the special
    // write is replaced.
    put_writes(
        store,
        &at,
        &[
            with_path(write("task-b", 0, "x", "b0 again"), "~1"),
            with_path(write("task-a", -1, "__error__", "boom 2"), "~0"),
        ],
    )
    .await;
    put_writes(store, &at, &[]).await;
    let got = get(store, &at, false).await;
    let seen: Vec<(String, String, i64, String, String)> = got
        .writes
        .iter()
        .map(|w| {
            let value = String::from_utf8(w.value.bytes.clone()).expect("utf-8");
            (
                w.task_path.clone(),
                w.task_id.clone(),
                w.idx,
                w.channel.clone(),
                value,
            )
        })
        .collect();
    let row = |p: &str, t: &str, i: i64, c: &str, v: &str| {
        (p.to_owned(), t.to_owned(), i, c.to_owned(), v.to_owned())
    };
    assert_eq!(
        seen,
        [
            row("~0", "task-a", -1, "__error__", "boom 2"),
            row("~0", "task-a", 0, "x", "a0"),
            row("~0", "task-a", 1, "y", "a1"),
            row("~1", "task-b", 0, "x", "b0"),
            row("~1", "task-b", 1, "y", "b1"),
        ]
    );
    // Writes may come before their checkpoint (LangGraph puts both from background threads):
    // they are kept and show once it is stored.
    let early = key("writes", "", "c9");
    put_writes(store, &early, &[write("t", 0, "x", "early")]).await;
    let none = store
        .get_checkpoint(&early.thread, &early.ns, Some(&early.id))
        .await;
    assert!(
        ok(none, "get c9").is_none(),
        "writes alone make no checkpoint"
    );
    put(store, &checkpoint(early.clone(), &[], json!({})), &[]).await;
    let got_early = get(store, &early, false).await;
    assert_eq!(
        got_early.writes.len(),
        1,
        "the early write shows with its checkpoint"
    );
    assert_eq!(got_early.writes[0].value.bytes, b"early");
    let alone = key("writes only", "", "c1");
    put_writes(store, &alone, &[write("t", 0, "x", "v")]).await;
    let threads = ok(store.list_threads().await, "list_threads");
    let threads: Vec<&str> = threads.iter().map(|t| t.thread.as_str()).collect();
    assert_eq!(threads, ["writes"], "writes alone make no thread");
    let only = CheckpointQuery::thread(alone.thread.clone());
    assert!(list(store, &only).await.is_empty(), "nor a checkpoint");
    // Writes belong to their checkpoint: the next one starts without any.
    let next = key("writes", "", "c2");
    put(store, &checkpoint(next.clone(), &[], json!({})), &[]).await;
    assert!(get(store, &next, false).await.writes.is_empty());
    let in_child = key("writes", "child", "c1");
    put(store, &checkpoint(in_child.clone(), &[], json!({})), &[]).await;
    assert!(get(store, &in_child, false).await.writes.is_empty());
}

/// Listing: newest first across threads, by thread and namespace; `None` namespace spans
/// every namespace and `""` only the root; `id`, `before` and the metadata filter apply before
/// the limit.
pub async fn checkpoint_listing_filters_before_the_limit(store: &dyn AgentMemory) {
    chain(store, "list-1", "", 5, "run-a").await;
    chain(store, "list-2", "", 3, "run-b").await;
    chain(store, "list-1", "child", 2, "run-a").await;
    let all = list(store, &CheckpointQuery::default()).await;
    assert_eq!(
        keys(&all)[..4],
        [
            ("list-1".into(), "".into(), "c4".into()),
            ("list-1".into(), "".into(), "c3".into()),
            ("list-1".into(), "".into(), "c2".into()),
            ("list-2".into(), "".into(), "c2".into()),
        ],
        "newest id first, then thread, then namespace"
    );
    assert_eq!(all.len(), 10, "every thread, every namespace");
    let one = CheckpointQuery::thread(thread("list-1"));
    assert_eq!(
        list(store, &one).await.len(),
        7,
        "one thread, all namespaces"
    );
    let root = CheckpointQuery {
        ns: Some(CheckpointNs::root()),
        ..one.clone()
    };
    assert_eq!(
        ids(&list(store, &root).await),
        ["c4", "c3", "c2", "c1", "c0"]
    );
    let child = CheckpointQuery {
        ns: Some(ns("child")),
        ..one.clone()
    };
    assert_eq!(ids(&list(store, &child).await), ["c1", "c0"]);
    let before = CheckpointQuery {
        before: Some(cid("c3")),
        limit: Some(2),
        ..root.clone()
    };
    assert_eq!(
        ids(&list(store, &before).await),
        ["c2", "c1"],
        "before, then limit"
    );
    let by_id = CheckpointQuery {
        id: Some(cid("c1")),
        ..one.clone()
    };
    assert_eq!(list(store, &by_id).await.len(), 2, "c1 of both namespaces");
    let step = |value: serde_json::Value, limit: Option<usize>| CheckpointQuery {
        metadata: metadata(json!({ "step": value })),
        limit,
        ..CheckpointQuery::default()
    };
    assert_eq!(
        keys(&list(store, &step(json!(4), Some(1))).await),
        [("list-1".into(), "".into(), "c4".into())],
        "the filter applies before the limit"
    );
    assert_eq!(list(store, &step(json!(1), None)).await.len(), 3);
    assert!(
        list(store, &step(json!("1"), None)).await.is_empty(),
        "1 is not \"1\""
    );
    let run = CheckpointQuery {
        metadata: metadata(json!({"run_id": "run-b", "source": "loop"})),
        ..CheckpointQuery::default()
    };
    assert_eq!(list(store, &run).await.len(), 3, "every key must match");
    let none = CheckpointQuery {
        metadata: metadata(json!({"run_id": "run-b", "source": "input"})),
        ..CheckpointQuery::default()
    };
    assert!(list(store, &none).await.is_empty());
    let limit_zero = CheckpointQuery {
        limit: Some(0),
        ..CheckpointQuery::default()
    };
    assert!(list(store, &limit_zero).await.is_empty());
    let nothing = CheckpointQuery::thread(thread("list-none"));
    assert!(list(store, &nothing).await.is_empty());
}

/// The metadata filter compares JSON values with their types: numbers, strings, booleans,
/// null, arrays and whole objects; a key the metadata lacks matches nothing (not even null).
pub async fn checkpoint_metadata_filters_compare_json_values(store: &dyn AgentMemory) {
    let meta = json!({
        "n": 42, "s": "42", "t": true, "z": null, "a": [1, "2"], "o": {"k": 1},
        "u": "ü \u{0} $x.y", "$dollar": 1, "dot.ted": 2
    });
    put(store, &checkpoint(key("json", "", "c1"), &[], meta), &[]).await;
    let count = |filter: serde_json::Value| async move {
        let q = CheckpointQuery {
            metadata: metadata(filter),
            ..CheckpointQuery::thread(thread("json"))
        };
        list(store, &q).await.len()
    };
    for (filter, expected) in [
        (json!({"n": 42}), 1),
        (json!({"n": "42"}), 0),
        (json!({"s": "42"}), 1),
        (json!({"s": 42}), 0),
        (json!({"t": true}), 1),
        (json!({"t": "true"}), 0),
        (json!({"z": null}), 1),
        (json!({"missing": null}), 0),
        (json!({"a": [1, "2"]}), 1),
        (json!({"a": [1]}), 0),
        (json!({"o": {"k": 1}}), 1),
        (json!({"o": {}}), 0),
        (json!({"u": "ü \u{0} $x.y"}), 1),
        (json!({"$dollar": 1, "dot.ted": 2}), 1),
        (json!({"n": 42, "s": "x"}), 0),
        (json!({}), 1),
    ] {
        assert_eq!(count(filter.clone()).await, expected, "filter {filter}");
    }
}
