//! Checkpoints on Redis beyond the conformance suite: the same operations on Redis and on
//! agentmem-core's in-memory store (the reference) give the same answers, also for listings
//! longer than one script call, metadata values too long for the script's pre-check and
//! pending writes that come before their checkpoint (or for one never stored); key names
//! escape hostile ids; nothing is left behind once every thread is gone.
use agentmem_core::{
    ChannelBlob, Checkpoint, CheckpointId, CheckpointKey, CheckpointNs, CheckpointPrune,
    CheckpointQuery, CheckpointStore, InMemoryStore, Layered, Metadata, PendingWrite, ThreadId,
    TypedBytes,
};
use agentmem_redis::RedisStore;
use agentmem_testkit::fixtures::{checkpoint_at, checkpoint_with_blob};
use agentmem_testkit::NamespaceGuard;
use chrono::DateTime;
use common::Lcg;
use redis::aio::MultiplexedConnection;
use serde_json::json;

mod common;

const THREADS: [&str; 5] = ["t:1", "t 2", "{x}", "a*?[b]", "%41"];
const NAMESPACES: [&str; 3] = ["", "node:1|inner:2", "{$}"];

async fn open(tag: &str) -> Option<(Layered<RedisStore>, MultiplexedConnection, NamespaceGuard)> {
    let url = agentmem_testkit::env_url("REDIS_URL", "redis://127.0.0.1:6379");
    common::store_and_raw(&url, tag).await
}

fn metadata(value: serde_json::Value) -> Metadata {
    match value {
        serde_json::Value::Object(map) => map,
        _ => unreachable!("an object"),
    }
}

/// A long metadata value: beyond what the list script pre-checks.
fn long_value() -> serde_json::Value {
    json!({"text": "x".repeat(400), "n": [1, 2, 3]})
}

/// The `i`-th random checkpoint and its blobs. Ids repeat (ties across threads and
/// namespaces, and replacements of the same key).
fn random_checkpoint(rng: &mut Lcg, i: u64) -> (Checkpoint, Vec<ChannelBlob>) {
    let key = CheckpointKey {
        thread: ThreadId::new(rng.pick(&THREADS)).unwrap(),
        ns: CheckpointNs::new(rng.pick(&NAMESPACES)).unwrap(),
        id: CheckpointId::new(format!("{:03}", rng.next(250))).unwrap(),
    };
    let body = TypedBytes::new("msgpack", vec![0, (i % 256) as u8, 255]);
    let mut checkpoint = Checkpoint::new(key, body);
    let (channel, version) = (format!("c{}", rng.next(3)), rng.next(4).to_string());
    checkpoint
        .channel_versions
        .insert(channel.clone(), version.clone());
    checkpoint.parent = i
        .is_multiple_of(3)
        .then(|| CheckpointId::new("parent").unwrap());
    let long = if i.is_multiple_of(11) {
        long_value()
    } else {
        json!(i)
    };
    checkpoint.metadata = metadata(json!({
        "step": rng.next(7),
        "run_id": format!("r{}", rng.next(5)),
        "source": if i.is_multiple_of(2) { "loop" } else { "input" },
        "long": long,
    }));
    let secs = 1_700_000_000 + rng.next(1000) as i64;
    checkpoint.created_at = DateTime::from_timestamp(secs, rng.next(3) as u32 * 333).unwrap();
    let value = (rng.next(4) != 0).then(|| TypedBytes::new("json", i.to_string().into_bytes()));
    let blob = ChannelBlob {
        channel,
        version,
        value,
    };
    (checkpoint, vec![blob])
}

/// The `i`-th pending write (`idx` from -2 to 1: special writes replace, others stay).
fn random_write(rng: &mut Lcg, i: u64) -> PendingWrite {
    PendingWrite {
        task_id: format!("task:{}", rng.next(3)),
        idx: rng.next(4) as i64 - 2,
        channel: "ch".into(),
        value: TypedBytes::new("json", i.to_string().into_bytes()),
        task_path: format!("~{}", rng.next(2)),
    }
}

/// A random key: a checkpoint id of the random checkpoints (stored already, later or never)
/// or, when `orphan`, one no random checkpoint takes.
fn random_key(rng: &mut Lcg, orphan: bool) -> CheckpointKey {
    let id = if orphan {
        format!("{:03}-w", rng.next(250))
    } else {
        format!("{:03}", rng.next(250))
    };
    CheckpointKey {
        thread: ThreadId::new(rng.pick(&THREADS)).unwrap(),
        ns: CheckpointNs::new(rng.pick(&NAMESPACES)).unwrap(),
        id: CheckpointId::new(id).unwrap(),
    }
}

/// Queries over threads, namespaces, ids, `before`, metadata (short and long values) and
/// limits, each compared between the two stores.
fn queries() -> Vec<CheckpointQuery> {
    let mut out = Vec::new();
    let threads = [None, Some("t:1"), Some("{x}")];
    let namespaces = [None, Some(""), Some("{$}")];
    let filters = [
        json!({}),
        json!({"step": 3}),
        json!({"source": "loop", "step": 2}),
        json!({"long": long_value()}),
        json!({"long": 22}),
    ];
    for thread in threads {
        for ns in namespaces {
            for filter in &filters {
                for limit in [None, Some(1), Some(7), Some(600)] {
                    out.push(CheckpointQuery {
                        thread: thread.map(|t| ThreadId::new(t).unwrap()),
                        ns: ns.map(|n| CheckpointNs::new(n).unwrap()),
                        metadata: metadata(filter.clone()),
                        limit,
                        ..CheckpointQuery::default()
                    });
                }
            }
        }
    }
    for (id, before) in [
        (Some("007"), None),
        (None, Some("100")),
        (Some("050"), Some("100")),
        (Some("150"), Some("100")),
    ] {
        for limit in [None, Some(3)] {
            out.push(CheckpointQuery {
                id: id.map(|i| CheckpointId::new(i).unwrap()),
                before: before.map(|b| CheckpointId::new(b).unwrap()),
                limit,
                ..CheckpointQuery::default()
            });
        }
    }
    out
}

/// Asserts that both stores answer every query, and list the same threads, alike.
async fn assert_same(redis: &impl CheckpointStore, reference: &InMemoryStore, when: &str) {
    for query in queries() {
        let got = redis.list_checkpoints(&query).await.unwrap();
        let expected = reference.list_checkpoints(&query).await.unwrap();
        assert_eq!(got.len(), expected.len(), "{when}: {query:?}");
        assert!(got == expected, "{when}: {query:?}");
    }
    assert_eq!(
        redis.list_threads().await.unwrap(),
        reference.list_threads().await.unwrap(),
        "{when}: threads"
    );
    for thread in THREADS {
        for ns in NAMESPACES {
            let (t, n) = (
                ThreadId::new(thread).unwrap(),
                CheckpointNs::new(ns).unwrap(),
            );
            assert_eq!(
                redis.get_checkpoint(&t, &n, None).await.unwrap(),
                reference.get_checkpoint(&t, &n, None).await.unwrap(),
                "{when}: latest of {thread:?} {ns:?}"
            );
        }
    }
}

/// Puts `write` at `at` on the Redis store and on the reference alike.
async fn put_write_on_both(
    store: &Layered<RedisStore>, reference: &InMemoryStore, at: &CheckpointKey, write: PendingWrite,
) {
    store
        .put_writes(at, std::slice::from_ref(&write))
        .await
        .unwrap();
    reference.put_writes(at, &[write]).await.unwrap();
}

/// Random checkpoints and writes on both stores, then every maintenance operation, checked
/// against the in-memory reference after each step. More checkpoints than one list script
/// call examines, so listings continue from a cursor. Some writes come before their
/// checkpoint, some for checkpoints never stored: at the end a checkpoint is put at each of
/// their keys, which shows on both stores which of them every step kept.
#[tokio::test]
async fn checkpoints_behave_like_the_reference_store() {
    let Some((store, _raw, _guard)) = open("cp_ref").await else {
        return;
    };
    let reference = InMemoryStore::new();
    let mut rng = Lcg(7);
    let mut early = Vec::new();
    for i in 0..1400 {
        if i % 5 == 0 {
            let at = random_key(&mut rng, i % 15 == 0);
            let write = random_write(&mut rng, i);
            put_write_on_both(&store, &reference, &at, write).await;
            early.push(at);
        }
        let (checkpoint, blobs) = random_checkpoint(&mut rng, i);
        store.put_checkpoint(&checkpoint, &blobs).await.unwrap();
        reference.put_checkpoint(&checkpoint, &blobs).await.unwrap();
        if i % 4 == 0 {
            let write = random_write(&mut rng, i);
            let at = &checkpoint.key;
            put_write_on_both(&store, &reference, at, write).await;
        }
    }
    assert_same(&*store, &reference, "after the puts").await;

    let runs = ["r1".to_string(), "r3".to_string()];
    assert_eq!(
        store.delete_run_checkpoints(&runs).await.unwrap(),
        reference.delete_run_checkpoints(&runs).await.unwrap()
    );
    assert_same(&*store, &reference, "after deleting runs").await;

    let pruned = [ThreadId::new("t:1").unwrap(), ThreadId::new("{x}").unwrap()];
    assert_eq!(
        store
            .prune_checkpoints(&pruned, CheckpointPrune::KeepLatest)
            .await
            .unwrap(),
        reference
            .prune_checkpoints(&pruned, CheckpointPrune::KeepLatest)
            .await
            .unwrap()
    );
    assert_same(&*store, &reference, "after pruning").await;

    let (source, target) = (ThreadId::new("t 2").unwrap(), ThreadId::new("t:1").unwrap());
    store.delete_thread(&target).await.unwrap();
    reference.delete_thread(&target).await.unwrap();
    // Writes the target holds without a checkpoint: the copy replaces them.
    for i in 0..20 {
        let mut at = random_key(&mut rng, i % 2 == 0);
        at.thread = target.clone();
        let write = random_write(&mut rng, i);
        put_write_on_both(&store, &reference, &at, write).await;
        early.push(at);
    }
    assert_eq!(
        store.copy_thread(&source, &target).await.unwrap(),
        reference.copy_thread(&source, &target).await.unwrap()
    );
    assert_same(&*store, &reference, "after a copy").await;

    for (i, at) in early.iter().enumerate() {
        let checkpoint = Checkpoint::new(at.clone(), TypedBytes::new("json", vec![i as u8]));
        store.put_checkpoint(&checkpoint, &[]).await.unwrap();
        reference.put_checkpoint(&checkpoint, &[]).await.unwrap();
        assert_eq!(
            checkpoint_at(&*store, at).await,
            checkpoint_at(&reference, at).await,
            "the writes kept at {at:?}"
        );
    }
    assert_same(
        &*store,
        &reference,
        "after putting the early writes' checkpoints",
    )
    .await;
}

/// Key names hold hostile ids escaped (no brace but the cluster tag's, no glob character, no
/// space), listings give the ids back exactly, and deleting every thread leaves no key, the
/// write hashes of checkpoints never stored included (a thread of writes alone is no thread
/// but is deleted too).
#[tokio::test]
async fn checkpoint_keys_are_escaped_and_cleared() {
    let Some((store, mut raw, _guard)) = open("cp_keys").await else {
        return;
    };
    let prefix = store.prefix().to_string();
    let mut rng = Lcg(11);
    for i in 0..60 {
        let (checkpoint, blobs) = random_checkpoint(&mut rng, i);
        store.put_checkpoint(&checkpoint, &blobs).await.unwrap();
        let write = common::plain_write();
        store
            .put_writes(&checkpoint.key, std::slice::from_ref(&write))
            .await
            .unwrap();
        let mut orphan = checkpoint.key.clone();
        orphan.id = CheckpointId::new(format!("{i}-w")).unwrap();
        if i % 2 == 0 {
            orphan.thread = ThreadId::new("only: writes").unwrap();
        }
        store.put_writes(&orphan, &[write]).await.unwrap();
    }
    let pattern = format!("{prefix}:cp:*");
    let keys = common::keys(&mut raw, &pattern).await;
    assert!(keys.len() > 20, "{keys:?}");
    for key in &keys {
        let rest = &key[prefix.len()..];
        assert!(
            !rest.contains(['{', '}', '*', '?', '[', ']', ' ', '$', '|']),
            "{key}"
        );
    }
    let threads = store.list_threads().await.unwrap();
    let mut listed: Vec<&str> = threads.iter().map(|t| t.thread.as_str()).collect();
    listed.sort_unstable();
    let mut expected = THREADS.to_vec();
    expected.sort_unstable();
    assert_eq!(listed, expected);
    for thread in &threads {
        assert!(store.delete_thread(&thread.thread).await.unwrap());
    }
    let only_writes = ThreadId::new("only: writes").unwrap();
    assert!(!store.delete_thread(&only_writes).await.unwrap());
    let left = common::keys(&mut raw, &pattern).await;
    assert!(left.is_empty(), "{left:?}");
}

/// Runs and prunes leave no key behind once they take a namespace's or a thread's last
/// checkpoint, and the blobs of what remains stay; a prune keeping the latest checkpoint
/// keeps only its write hash (those of checkpoints never stored go too).
#[tokio::test]
async fn deleting_runs_and_pruning_clear_their_keys() {
    let Some((store, mut raw, _guard)) = open("cp_gc").await else {
        return;
    };
    let prefix = store.prefix().to_string();
    let thread = ThreadId::new("gc thread").unwrap();
    for (i, run) in ["a", "a", "b"].iter().enumerate() {
        let key = CheckpointKey {
            thread: thread.clone(),
            ns: CheckpointNs::new(if i == 2 { "sub" } else { "" }).unwrap(),
            id: CheckpointId::new(format!("c{i}")).unwrap(),
        };
        let body = TypedBytes::new("json", b"{}".to_vec());
        let (mut checkpoint, blob) = checkpoint_with_blob(key, body, "ch", &i.to_string(), None);
        checkpoint.metadata = metadata(json!({ "run_id": run }));
        store.put_checkpoint(&checkpoint, &[blob]).await.unwrap();
    }
    assert_eq!(
        store.delete_run_checkpoints(&["b".into()]).await.unwrap(),
        1
    );
    // Writes of c0 and c1, and of ids with no checkpoint (in a namespace with checkpoints,
    // one without, and greater than the newest id).
    for (ns, id) in [
        ("", "c0"),
        ("", "c1"),
        ("", "c9"),
        ("", "b"),
        ("none", "c1"),
    ] {
        let at = CheckpointKey {
            thread: thread.clone(),
            ns: CheckpointNs::new(ns).unwrap(),
            id: CheckpointId::new(id).unwrap(),
        };
        let write = PendingWrite {
            task_id: "t".into(),
            idx: 0,
            channel: "x".into(),
            value: TypedBytes::new("json", id.as_bytes().to_vec()),
            task_path: String::new(),
        };
        store.put_writes(&at, &[write]).await.unwrap();
    }
    assert_eq!(
        store
            .prune_checkpoints(std::slice::from_ref(&thread), CheckpointPrune::KeepLatest)
            .await
            .unwrap(),
        1
    );
    let latest = store
        .get_checkpoint(&thread, &CheckpointNs::root(), None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(latest.checkpoint.key.id, "c1");
    assert_eq!(latest.blobs.len(), 1, "{latest:?}");
    assert_eq!(latest.writes.len(), 1, "{latest:?}");
    let writes = common::keys(&mut raw, &format!("{prefix}:cp:t:*:w:*")).await;
    assert_eq!(writes, [format!("{prefix}:cp:t:gc%20thread:n::w:c1")]);
    let indexed: Vec<Vec<u8>> = redis::cmd("ZRANGE")
        .arg(format!("{prefix}:cp:t:gc%20thread:writes"))
        .arg(0)
        .arg(-1)
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(indexed, [b"\0c1".to_vec()]);
    // The blob hash holds only what c1 reads; `sub` left no key.
    let blobs = common::keys(&mut raw, &format!("{prefix}:cp:t:*:blobs")).await;
    assert_eq!(blobs.len(), 1, "{blobs:?}");
    let fields: u64 = redis::cmd("HLEN")
        .arg(&blobs[0])
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(fields, 1);
    assert_eq!(
        store.delete_run_checkpoints(&["a".into()]).await.unwrap(),
        1
    );
    let left = common::keys(&mut raw, &format!("{prefix}:cp:*")).await;
    assert!(left.is_empty(), "{left:?}");
    assert!(store.list_threads().await.unwrap().is_empty());
}
