//! Checkpoints, beyond the conformance cases: the migration that adds them to an existing
//! schema, keys at their longest, the metadata pre-filter's fallback, run ids holding NUL,
//! pending writes made ahead of their checkpoint through each delete, and deletes and prunes
//! racing writers in other pools (standing in for other processes).

mod common;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use agentmem_core::{
    ChannelBlob, Checkpoint, CheckpointKey, CheckpointPrune, CheckpointQuery, CheckpointStore,
    Layered, Metadata, ThreadId, TypedBytes,
};
use agentmem_postgres::PostgresStore;
use agentmem_testkit::fixtures::{
    checkpoint_at, checkpoint_key as key, latest_checkpoint, pending_write as write,
    prune_to_latest,
};
use common::incompressible;
use serde_json::json;

fn metadata(value: serde_json::Value) -> Metadata {
    match value {
        serde_json::Value::Object(map) => map,
        other => panic!("metadata must be an object, not {other}"),
    }
}

/// A checkpoint at `at` reading `versions`, with `meta`.
fn checkpoint(at: CheckpointKey, versions: &[(&str, &str)], meta: serde_json::Value) -> Checkpoint {
    let mut c = Checkpoint::new(at, TypedBytes::new("msgpack", b"body".to_vec()));
    c.channel_versions = versions
        .iter()
        .map(|(c, v)| ((*c).to_owned(), (*v).to_owned()))
        .collect();
    c.metadata = metadata(meta);
    c
}

fn blob(channel: &str, version: &str, value: &str) -> ChannelBlob {
    ChannelBlob {
        channel: channel.to_owned(),
        version: version.to_owned(),
        value: Some(TypedBytes::new("json", value.as_bytes().to_vec())),
    }
}

/// A second store on `store`'s schema with a pool of its own: another process.
async fn another_process(store: &PostgresStore) -> Layered<PostgresStore> {
    let url = common::with_options(&common::database_url(), &[("schema", store.schema())]);
    PostgresStore::connect(&url).await.expect("another process")
}

/// A store in a fresh schema whose thread `pruned` a writer (`write`, given a handle on the
/// store, on a task of its own) fills while another process prunes it to its latest
/// checkpoint again and again; once the writer is done (its panics fail the test): the store
/// (dropping its schema when dropped), the pruning process and the thread. `None` (skipped)
/// without a server.
async fn prunes_racing<W, F>(
    write: W,
) -> Option<(common::GuardedStore, Layered<PostgresStore>, ThreadId)>
where
    W: FnOnce(Layered<PostgresStore>) -> F,
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let store = common::open(&[]).await?;
    let thread = ThreadId::new("pruned").expect("thread id");
    let pruner = another_process(&store).await;
    let writer = tokio::spawn(write(store.clone()));
    while !writer.is_finished() {
        prune_to_latest(&pruner, &thread).await;
    }
    writer.await.expect("writer task");
    Some((store, pruner, thread))
}

#[tokio::test]
async fn a_version_4_schema_gains_checkpoints_when_migrated_to_5() {
    let Some(store) = common::open(&[]).await else {
        return;
    };
    let again = common::migrated_from(&store, 4, |s| {
        format!(
            "{undo_6}
             DROP TABLE {s}.checkpoints, {s}.checkpoint_blobs, {s}.checkpoint_writes;",
            undo_6 = common::undo_version_6(s)
        )
    })
    .await;
    let at = key("new", "", "c1");
    again
        .put_checkpoint(
            &checkpoint(at.clone(), &[("a", "1")], json!({})),
            &[blob("a", "1", "v")],
        )
        .await
        .expect("put");
    let got = latest_checkpoint(&again, &at).await.expect("stored");
    assert_eq!(got.blobs.len(), 1);
}

/// Thread and namespace of 512 bytes, channel and version of 1,024, none of them
/// compressible: the blob's key still fits in the index, and every operation works on it.
#[tokio::test]
async fn keys_at_their_longest_are_stored() {
    let Some(store) = common::open(&[]).await else {
        return;
    };
    let (thread, ns) = (incompressible(512, 1), incompressible(512, 2));
    let (channel, version) = (incompressible(1024, 3), incompressible(1024, 4));
    let at = key(&thread, &ns, &incompressible(128, 5));
    let c = checkpoint(at.clone(), &[(&channel, &version)], json!({}));
    store
        .put_checkpoint(&c, &[blob(&channel, &version, "value")])
        .await
        .expect("put");
    let mut long_write = write(&incompressible(1024, 6), 0);
    long_write.task_path = incompressible(4096, 7);
    store.put_writes(&at, &[long_write]).await.expect("writes");
    let got = checkpoint_at(&*store, &at).await.expect("stored");
    assert_eq!(got.checkpoint, c);
    assert_eq!(got.blobs, [blob(&channel, &version, "value")]);
    assert_eq!(got.writes.len(), 1);
    let target = ThreadId::new(incompressible(512, 8)).expect("thread id");
    assert_eq!(
        store.copy_thread(&at.thread, &target).await.expect("copy"),
        1
    );
    let pruned = store
        .prune_checkpoints(
            std::slice::from_ref(&at.thread),
            CheckpointPrune::KeepLatest,
        )
        .await
        .expect("prune");
    assert_eq!(pruned, 0);
    let copied = store
        .get_checkpoint(&target, &at.ns, None)
        .await
        .expect("get copy")
        .expect("copied");
    assert_eq!(copied.blobs, got.blobs);
}

/// `jsonb` finds `{"n": 1.0}` equal to `{"n": 1}` where agentmem does not: with a limit, the
/// listing must not stop at the rows the server let through and the client refused.
#[tokio::test]
async fn a_limit_counts_only_what_the_filter_really_accepts() {
    let Some(store) = common::open(&[]).await else {
        return;
    };
    let put = |id: &str, meta: serde_json::Value| {
        let c = checkpoint(key("t", "", id), &[], meta);
        let store = &store;
        async move { store.put_checkpoint(&c, &[]).await.expect("put") }
    };
    put("c1", json!({"n": 1})).await;
    put("c2", json!({"n": 1.0})).await;
    put("c3", json!({"n": [1, 2]})).await;
    put("c4", json!({"n": 1.0, "nul": "a\u{0}b"})).await;
    let query = |limit| CheckpointQuery {
        metadata: metadata(json!({"n": 1})),
        limit,
        ..CheckpointQuery::default()
    };
    for limit in [Some(1), Some(2), None] {
        let found = store.list_checkpoints(&query(limit)).await.expect("list");
        let ids: Vec<&str> = found.iter().map(|t| t.checkpoint.key.id.as_str()).collect();
        assert_eq!(ids, ["c1"], "limit {limit:?}");
    }
    // A filter value `jsonb` cannot hold is decided in the client alone.
    let nul = CheckpointQuery {
        metadata: metadata(json!({"nul": "a\u{0}b"})),
        limit: Some(1),
        ..CheckpointQuery::default()
    };
    let found = store.list_checkpoints(&nul).await.expect("list");
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].checkpoint.key.id, "c4");
}

#[tokio::test]
async fn run_ids_are_matched_exactly_nul_included() {
    let Some(store) = common::open(&[]).await else {
        return;
    };
    for (id, run) in [
        ("c1", json!("r\u{0}1")),
        ("c2", json!("r")),
        ("c3", json!(["r"])),
    ] {
        let c = checkpoint(key("t", "", id), &[], json!({ "run_id": run }));
        store.put_checkpoint(&c, &[]).await.expect("put");
    }
    let deleted = store
        .delete_run_checkpoints(&["r\u{0}1".to_owned(), "r\u{0}".to_owned()])
        .await
        .expect("delete runs");
    assert_eq!(deleted, 1);
    let left = store
        .list_checkpoints(&CheckpointQuery::default())
        .await
        .expect("list");
    let ids: Vec<&str> = left.iter().map(|t| t.checkpoint.key.id.as_str()).collect();
    assert_eq!(ids, ["c3", "c2"]);
}

/// Every pending write of `store`'s schema as (thread, namespace, checkpoint id, task id),
/// sorted.
async fn write_rows(store: &PostgresStore) -> Vec<(String, String, String, String)> {
    let sql = format!(
        "SELECT thread, ns, checkpoint_id, task_id FROM \"{}\".checkpoint_writes
         ORDER BY thread, ns, checkpoint_id, task_id",
        store.schema()
    );
    common::admin()
        .await
        .query(&sql, &[])
        .await
        .expect("read writes")
        .iter()
        .map(|row| (row.get(0), row.get(1), row.get(2), row.get(3)))
        .collect()
}

fn row(thread: &str, ns: &str, id: &str, task: &str) -> (String, String, String, String) {
    (thread.into(), ns.into(), id.into(), task.into())
}

/// Writes made ahead of their checkpoint (or of one never put) through each delete: a run's
/// delete leaves them, a copy neither copies them nor keeps the target's, a prune keeping the
/// latest removes every write but the latest checkpoint's, a thread's delete all of them.
#[tokio::test]
async fn writes_ahead_of_their_checkpoint_follow_each_delete_rule() {
    let Some(store) = common::open(&[]).await else {
        return;
    };
    for (id, run) in [("c1", "r1"), ("c2", "r2")] {
        let c = checkpoint(key("a", "", id), &[], json!({ "run_id": run }));
        store.put_checkpoint(&c, &[]).await.expect("put");
    }
    for at in [
        key("a", "", "c1"),
        key("a", "", "c2"),
        key("a", "", "c3"),
        key("a", "sub", "s1"),
        key("alone", "", "c1"),
    ] {
        store
            .put_writes(&at, &[write("t", 0)])
            .await
            .expect("writes");
    }
    let threads = store.list_threads().await.expect("list threads");
    assert_eq!(threads.len(), 1, "writes alone make no thread");
    let deleted = store
        .delete_run_checkpoints(&["r1".to_owned()])
        .await
        .expect("delete run");
    assert_eq!(deleted, 1);
    // Thread `a`'s writes that stay through the run's deletion and the copy out of `a`.
    let in_a = [
        row("a", "", "c2", "t"),
        row("a", "", "c3", "t"),
        row("a", "sub", "s1", "t"),
    ];
    assert_eq!(
        write_rows(&store).await,
        [&in_a[..], &[row("alone", "", "c1", "t")]].concat(),
        "only the run's checkpoint's writes went"
    );
    let alone = ThreadId::new("alone").expect("thread id");
    let a = ThreadId::new("a").expect("thread id");
    assert_eq!(store.copy_thread(&a, &alone).await.expect("copy"), 1);
    assert_eq!(
        write_rows(&store).await,
        [&in_a[..], &[row("alone", "", "c2", "t")]].concat(),
        "the copy replaces the target and copies only its checkpoints' writes"
    );
    assert_eq!(prune_to_latest(&*store, &a).await, 0);
    assert_eq!(
        write_rows(&store).await,
        [row("a", "", "c2", "t"), row("alone", "", "c2", "t")],
        "a prune keeps the latest checkpoint's writes only"
    );
    let ahead = key("only writes", "", "c1");
    store
        .put_writes(&ahead, &[write("t", 0)])
        .await
        .expect("writes");
    assert!(!store.delete_thread(&ahead.thread).await.expect("delete"));
    assert!(store.delete_thread(&a).await.expect("delete"));
    assert_eq!(write_rows(&store).await, [row("alone", "", "c2", "t")]);
}

/// Pending writes racing a delete of their thread from another pool, while a reader watches
/// the checkpoint: every write is acknowledged; those that committed before the delete go
/// with it (a write the reader saw beside the checkpoint never survives), those after stay
/// (so what stays is a suffix of the writer's sequence) and show once the checkpoint is put
/// again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_racing_a_delete_go_with_it_or_come_after() {
    let Some(store) = common::open(&[]).await else {
        return;
    };
    let deleter = another_process(&store).await;
    for round in 0..20 {
        let at = key(&format!("raced {round}"), "", "c1");
        let c = checkpoint(at.clone(), &[], json!({}));
        store.put_checkpoint(&c, &[]).await.expect("put");
        let deleted = Arc::new(AtomicBool::new(false));
        let writer = {
            let (store, at) = (store.clone(), at.clone());
            tokio::spawn(async move {
                for i in 0..10 {
                    let w = write(&format!("t{i}"), 0);
                    if let Err(e) = store.put_writes(&at, &[w]).await {
                        panic!("put_writes in round {round}: {e}");
                    }
                }
            })
        };
        let reader = {
            let (store, at, deleted) = (store.clone(), at.clone(), deleted.clone());
            tokio::spawn(async move {
                let mut seen = BTreeSet::new();
                while !deleted.load(Ordering::SeqCst) {
                    if let Some(t) = checkpoint_at(&store, &at).await {
                        seen.extend(t.writes.into_iter().map(|w| w.task_id));
                    }
                }
                seen
            })
        };
        assert!(deleter.delete_thread(&at.thread).await.expect("delete"));
        deleted.store(true, Ordering::SeqCst);
        writer.await.expect("writer task");
        let seen = reader.await.expect("reader task");
        assert!(
            store.list_threads().await.expect("threads").is_empty(),
            "round {round}: writes alone make no thread"
        );
        store.put_checkpoint(&c, &[]).await.expect("put again");
        let got = checkpoint_at(&*store, &at).await.expect("put again");
        let stayed: BTreeSet<String> = got.writes.into_iter().map(|w| w.task_id).collect();
        let first = (0..10).find(|i| stayed.contains(&format!("t{i}")));
        let suffix: BTreeSet<String> = first
            .map(|f| (f..10).map(|i| format!("t{i}")).collect())
            .unwrap_or_default();
        assert_eq!(stayed, suffix, "round {round}: what stays came after");
        assert!(
            seen.is_disjoint(&stayed),
            "round {round}: seen {seen:?} beside the checkpoint, yet {stayed:?} stayed"
        );
        assert!(deleter.delete_thread(&at.thread).await.expect("clear"));
    }
}

/// A writer puts checkpoints one after another, each followed by its pending write, while
/// another process prunes the thread to its latest checkpoint: the latest checkpoint's
/// writes are never pruned, so each write reads back right after it is acknowledged, and
/// a last prune leaves the last checkpoint with its write and no other write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prunes_racing_writes_keep_the_latest_checkpoints_writes() {
    let race = prunes_racing(|writer| async move {
        for i in 0..100 {
            let at = key("pruned", "", &format!("c{i:03}"));
            let c = checkpoint(at.clone(), &[], json!({}));
            writer.put_checkpoint(&c, &[]).await.expect("put");
            let w = write(&format!("t{i}"), 0);
            writer.put_writes(&at, &[w]).await.expect("writes");
            let got = checkpoint_at(&writer, &at)
                .await
                .expect("the latest checkpoint stays");
            assert_eq!(got.writes.len(), 1, "{i}: its write stays");
        }
    });
    let Some((store, pruner, thread)) = race.await else {
        return;
    };
    prune_to_latest(&pruner, &thread).await;
    assert_eq!(write_rows(&store).await, [row("pruned", "", "c099", "t99")]);
}

/// A writer puts checkpoints that alternate between two versions of one channel, writing the
/// version's value again each time, while another process prunes the thread to its latest
/// checkpoint: the blob a prune finds unread may be the one a put is writing again, and every
/// checkpoint must still find its value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prunes_racing_puts_keep_every_value_a_checkpoint_reads() {
    let race = prunes_racing(|writer| async move {
        for i in 0..200 {
            let version = format!("v{}", i % 2);
            let c = checkpoint(
                key("pruned", "", &format!("c{i:03}")),
                &[("ch", &version)],
                json!({}),
            );
            let value = blob("ch", &version, &version);
            writer.put_checkpoint(&c, &[value]).await.expect("put");
        }
    });
    let Some((store, _, thread)) = race.await else {
        return;
    };
    let all = store
        .list_checkpoints(&CheckpointQuery::thread(thread.clone()))
        .await
        .expect("list");
    assert!(!all.is_empty());
    for t in &all {
        assert_eq!(
            t.blobs.len(),
            1,
            "{:?} reads its value",
            t.checkpoint.key.id
        );
    }
    assert_eq!(all[0].checkpoint.key.id, "c199");
}
