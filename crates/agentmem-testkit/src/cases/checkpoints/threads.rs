//! Checkpoint threads as wholes: deleting threads and runs, copying, pruning; invalid input
//! and concurrent writers.

use agentmem_core::{
    AgentMemory, CheckpointPrune, CheckpointQuery, ErrorKind, Metadata, TypedBytes,
};
use serde_json::json;

use super::super::assert_kind;
use super::{
    blob, chain, checkpoint, get, key, keys, list, ns, ok, put, put_writes, thread, write,
};

/// Deleting a thread removes its checkpoints, writes and blobs in every namespace, and nothing
/// of other threads.
pub async fn deleting_a_checkpoint_thread_removes_all_of_it(store: &dyn AgentMemory) {
    chain(store, "doomed", "", 3, "r").await;
    chain(store, "doomed", "sub", 2, "r").await;
    chain(store, "kept", "", 2, "r").await;
    put_writes(store, &key("doomed", "", "c2"), &[write("t", 0, "x", "v")]).await;
    assert!(ok(store.delete_thread(&thread("doomed")).await, "delete"));
    assert!(list(store, &CheckpointQuery::thread(thread("doomed")))
        .await
        .is_empty());
    let gone = store.get_checkpoint(&thread("doomed"), &ns(""), None).await;
    assert!(ok(gone, "get").is_none());
    assert!(!ok(
        store.delete_thread(&thread("doomed")).await,
        "delete again"
    ));
    // The same keys start afresh: no old write or blob shows through.
    let again = checkpoint(key("doomed", "", "c2"), &[("step", "2")], json!({}));
    put(store, &again, &[]).await;
    let fresh = get(store, &again.key, false).await;
    assert!(
        fresh.writes.is_empty() && fresh.blobs.is_empty(),
        "{fresh:?}"
    );
    assert_eq!(
        list(store, &CheckpointQuery::thread(thread("kept")))
            .await
            .len(),
        2
    );
}

/// Deleting by run removes the checkpoints whose metadata `run_id` is listed, in every thread
/// and namespace, with their writes, and nothing else.
pub async fn deleting_runs_removes_their_checkpoints(store: &dyn AgentMemory) {
    chain(store, "runs-1", "", 2, "r1").await;
    chain(store, "runs-2", "sub", 3, "r1").await;
    chain(store, "runs-3", "", 2, "r2").await;
    put(
        store,
        &checkpoint(key("runs-3", "", "c9"), &[], json!({"run_id": 7})),
        &[],
    )
    .await;
    put_writes(store, &key("runs-1", "", "c1"), &[write("t", 0, "x", "v")]).await;
    assert_eq!(ok(store.delete_run_checkpoints(&[]).await, "no runs"), 0);
    assert_eq!(
        ok(store.delete_run_checkpoints(&["r9".into()]).await, "none"),
        0
    );
    let deleted = store
        .delete_run_checkpoints(&["r1".into(), "7".into()])
        .await;
    assert_eq!(ok(deleted, "delete runs"), 5, "a run_id of 7 is not \"7\"");
    let left = list(store, &CheckpointQuery::default()).await;
    assert_eq!(
        keys(&left),
        [
            ("runs-3".into(), "".into(), "c9".into()),
            ("runs-3".into(), "".into(), "c1".into()),
            ("runs-3".into(), "".into(), "c0".into()),
        ]
    );
    let again = checkpoint(key("runs-1", "", "c1"), &[], json!({}));
    put(store, &again, &[]).await;
    assert!(
        get(store, &again.key, false).await.writes.is_empty(),
        "its writes went too"
    );
}

/// Copying a thread copies every namespace's checkpoints with their blobs, writes, parents,
/// metadata and times; the source is unchanged and the two are independent afterwards. A
/// missing source is `NotFound`, a target holding checkpoints `Conflict`.
pub async fn copying_a_checkpoint_thread_copies_all_of_it(store: &dyn AgentMemory) {
    chain(store, "source", "", 3, "r").await;
    chain(store, "source", "node:1", 2, "r").await;
    put_writes(store, &key("source", "", "c2"), &[write("t", 0, "x", "v")]).await;
    let copied = store
        .copy_thread(&thread("source"), &thread("copy: */[x]"))
        .await;
    assert_eq!(ok(copied, "copy_thread"), 5);
    let source = list(store, &CheckpointQuery::thread(thread("source"))).await;
    let copy = list(store, &CheckpointQuery::thread(thread("copy: */[x]"))).await;
    assert_eq!(copy.len(), 5);
    for (s, c) in source.iter().zip(&copy) {
        let mut expected = s.clone();
        expected.checkpoint.key.thread = thread("copy: */[x]");
        assert_eq!(
            *c, expected,
            "the copy equals the source but for its thread"
        );
    }
    chain(store, "copy: */[x]", "", 4, "r").await;
    assert_eq!(
        list(store, &CheckpointQuery::thread(thread("source")))
            .await
            .len(),
        5
    );
    assert_kind(
        store
            .copy_thread(&thread("nothing here"), &thread("t"))
            .await,
        ErrorKind::NotFound,
        "copy from a thread without checkpoints",
    );
    assert_kind(
        store
            .copy_thread(&thread("source"), &thread("copy: */[x]"))
            .await,
        ErrorKind::Conflict,
        "copy onto a thread with checkpoints",
    );
    assert!(list(store, &CheckpointQuery::thread(thread("t")))
        .await
        .is_empty());
}

/// Pruning keeps the newest checkpoint of each namespace with its writes and the values it
/// reads (`KeepLatest`) or removes the thread (`DeleteAll`); other threads are untouched.
pub async fn pruning_checkpoints_keeps_the_latest_per_namespace(store: &dyn AgentMemory) {
    chain(store, "prune-1", "", 4, "r").await;
    chain(store, "prune-1", "sub", 3, "r").await;
    chain(store, "prune-2", "", 2, "r").await;
    chain(store, "untouched", "", 2, "r").await;
    put_writes(store, &key("prune-1", "", "c3"), &[write("t", 0, "x", "v")]).await;
    let threads = [thread("prune-1"), thread("prune-2"), thread("absent")];
    let pruned = store.prune_checkpoints(&threads, CheckpointPrune::KeepLatest);
    assert_eq!(ok(pruned.await, "prune"), 3 + 2 + 1);
    let kept = list(store, &CheckpointQuery::thread(thread("prune-1"))).await;
    assert_eq!(
        keys(&kept),
        [
            ("prune-1".into(), "".into(), "c3".into()),
            ("prune-1".into(), "sub".into(), "c2".into()),
        ]
    );
    assert_eq!(kept[0].writes.len(), 1, "the kept checkpoint's writes stay");
    assert_eq!(kept[0].blobs.len(), 1, "so do the values it reads");
    assert_eq!(
        kept[0].blobs[0].value,
        Some(TypedBytes::new("json", b"3".to_vec()))
    );
    let all = store.prune_checkpoints(&threads[..1], CheckpointPrune::DeleteAll);
    assert_eq!(ok(all.await, "prune all"), 2);
    assert!(list(store, &CheckpointQuery::thread(thread("prune-1")))
        .await
        .is_empty());
    assert_eq!(
        list(store, &CheckpointQuery::thread(thread("untouched")))
            .await
            .len(),
        2
    );
    assert_eq!(
        ok(
            store
                .prune_checkpoints(&[], CheckpointPrune::DeleteAll)
                .await,
            "none"
        ),
        0
    );
}

/// Checkpoints, writes and blobs that cannot be stored are refused whole (`InvalidInput`):
/// a NUL in a channel name or task id, metadata nested too deep; nothing is written.
pub async fn invalid_checkpoints_are_refused(store: &dyn AgentMemory) {
    let at = key("invalid", "", "c1");
    let mut bad = checkpoint(at.clone(), &[("a\u{0}b", "1")], json!({}));
    assert_kind(
        store.put_checkpoint(&bad, &[]).await,
        ErrorKind::InvalidInput,
        "a NUL in a channel name",
    );
    bad.channel_versions.clear();
    let mut deep = json!("leaf");
    for _ in 0..(agentmem_core::MAX_METADATA_DEPTH + 1) {
        deep = json!({ "d": deep });
    }
    bad.metadata = Metadata::from_iter([("deep".to_owned(), deep)]);
    assert_kind(
        store.put_checkpoint(&bad, &[]).await,
        ErrorKind::InvalidInput,
        "metadata nested too deep",
    );
    let good = checkpoint(at.clone(), &[], json!({}));
    assert_kind(
        store
            .put_checkpoint(&good, &[blob("a\u{0}", "1", None)])
            .await,
        ErrorKind::InvalidInput,
        "a NUL in a blob's channel",
    );
    assert!(ok(store.get_checkpoint(&at.thread, &at.ns, None).await, "get").is_none());
    put(store, &good, &[]).await;
    let writes = [write("ok", 0, "x", "v"), write("bad\u{0}", 0, "x", "v")];
    assert_kind(
        store.put_writes(&at, &writes).await,
        ErrorKind::InvalidInput,
        "a NUL in a task id",
    );
    assert!(
        get(store, &at, false).await.writes.is_empty(),
        "refused whole"
    );
}

/// Several writers putting checkpoints and writes on one thread at once lose nothing.
pub async fn concurrent_checkpoint_writers_lose_nothing(store: &dyn AgentMemory) {
    let writers = (0..4).map(|w| async move {
        for i in 0..10 {
            let at = key("busy", "", &format!("w{w}-{i:02}"));
            let (channel, version) = (format!("w{w}"), i.to_string());
            let c = checkpoint(at.clone(), &[(&channel, &version)], json!({}));
            let value = format!("{w}/{i}");
            put(store, &c, &[blob(&channel, &version, Some(&value))]).await;
            put_writes(store, &at, &[write(&format!("task{w}"), 0, "x", &value)]).await;
        }
    });
    futures_util::future::join_all(writers).await;
    let all = list(store, &CheckpointQuery::thread(thread("busy"))).await;
    assert_eq!(all.len(), 40, "every checkpoint");
    assert!(all
        .iter()
        .all(|t| t.writes.len() == 1 && t.blobs.len() == 1));
    let threads = ok(store.list_threads().await, "list_threads");
    let busy = threads.iter().find(|t| t.thread == "busy").expect("listed");
    assert_eq!(busy.checkpoints, 40);
}
