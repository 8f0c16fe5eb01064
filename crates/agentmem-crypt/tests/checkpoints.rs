//! Checkpoints through the encryption layer, over core's in-memory store: what the layer reads
//! back is what core's store alone gives, the store holds no plaintext of bodies, channel
//! values or pending writes, ciphertext moved to another place fails to open, `copy_thread`
//! re-seals into its target, and a wrong key or none is refused.

use agentmem_core::{
    AgentMemory, AgentMemoryExt, ChannelBlob, CheckpointQuery, CheckpointStore, CheckpointTuple,
    ErrorKind, InMemoryStore, Message, Metadata, PendingWrite, Result, SessionStore, ThreadId,
    TypedBytes,
};
use agentmem_crypt::{CryptoError, MasterKey, NoKeyLayer, ENVELOPE_PREFIX, MARKER_PROPERTY};
use agentmem_testkit::fixtures::{checkpoint_at, prune_to_latest};

mod common;
use common::{
    assert_no_key, assert_wrong_key, at, crypto_error, everything, key, keyed, raw, sid, thread,
    unmarked_copy, values, with_key, Values, CHAT,
};

/// Bytes and type tags that must never appear in the store.
const BODY: &[u8] = b"canaryBodyPangolin";
const BLOB: &[u8] = b"canaryBlobAxolotl";
const WRITE: &[u8] = b"canaryWriteQuokka";
const TAG: &str = "canaryTagOkapi";

/// Canary bytes in every opaque value, with the id, value text or task appended.
const VALUES: Values = Values {
    body: |id| TypedBytes::new(TAG, canary(BODY, id)),
    metadata: |c| ("step", serde_json::json!(c.channel_versions.len())),
    blob: |v| TypedBytes::new("msgpack", canary(BLOB, v)),
    write: |text| TypedBytes::new(TAG, canary(WRITE, text)),
};

fn canary(canary: &[u8], then: &str) -> Vec<u8> {
    [canary, then.as_bytes()].concat()
}

/// A pending write of `task`, its value naming the task.
fn write(task: &str, idx: i64, channel: &str) -> PendingWrite {
    VALUES.write(task, idx, channel, task)
}

/// The shared chain, with ordinary and special writes.
async fn fill<S: CheckpointStore + ?Sized>(store: &S) -> Result<()> {
    VALUES.fill_chain(store).await?;
    store
        .put_writes(
            &at(CHAT, "", "2"),
            &[write("task-b", 0, "messages"), write("task-a", 1, "x")],
        )
        .await?;
    // An ordinary write again is skipped, a special one replaces.
    let mut again = write("task-b", 0, "other");
    again.value = TypedBytes::new("json", b"\"ignored\"".to_vec());
    store
        .put_writes(
            &at(CHAT, "", "2"),
            &[again, write("task-a", -1, "__error__")],
        )
        .await?;
    let mut special = write("task-a", -1, "__error__");
    special.value = TypedBytes::new("json", b"\"replaced\"".to_vec());
    store.put_writes(&at(CHAT, "", "2"), &[special]).await
}

fn assert_tampered<T: std::fmt::Debug>(result: Result<T>, what: &str) {
    let err = result.expect_err(what);
    assert_eq!(err.kind(), ErrorKind::CorruptData, "{what}: {err}");
    assert_eq!(crypto_error(&err), Some(&CryptoError::Tampered), "{what}");
}

/// Asserts that `keyless` refuses, for want of `key`, every read of sealed checkpoints: the
/// latest of `t`, a listing, and a copy of `t` (which reads it to re-seal it).
async fn assert_reads_need_the_key<S: CheckpointStore + ?Sized>(
    keyless: &S, t: &ThreadId, key: &MasterKey,
) {
    assert_no_key(
        keyless.get_checkpoint(t, &Default::default(), None).await,
        key,
        "get_checkpoint",
    );
    assert_no_key(
        keyless.list_checkpoints(&CheckpointQuery::default()).await,
        key,
        "list_checkpoints",
    );
    assert_no_key(
        keyless.copy_thread(t, &thread("x")).await,
        key,
        "copy_thread",
    );
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[tokio::test]
async fn the_layer_reads_back_what_the_store_alone_gives_and_the_store_holds_no_plaintext() {
    let plain = InMemoryStore::new();
    let (raw, key, store) = keyed();
    fill(&plain).await.expect("fill the plain store");
    fill(&store).await.expect("fill through the layer");

    assert_eq!(everything(&store).await, everything(&plain).await);
    let t = thread(CHAT);
    let root = Default::default();
    for id in [None, Some("1".parse().expect("an id"))] {
        assert_eq!(
            store
                .get_checkpoint(&t, &root, id.as_ref())
                .await
                .expect("get"),
            plain
                .get_checkpoint(&t, &root, id.as_ref())
                .await
                .expect("get"),
        );
    }
    let latest = store.get_checkpoint(&t, &root, None).await.expect("get");
    let latest = latest.expect("stored");
    assert_eq!(latest.blobs.len(), 2, "the emptied channel is returned too");
    assert_eq!(latest.writes.len(), 3);
    let queries = [
        CheckpointQuery {
            ns: Some("node:a|b".parse().expect("a namespace")),
            ..CheckpointQuery::default()
        },
        CheckpointQuery {
            before: Some("2".parse().expect("an id")),
            limit: Some(1),
            ..CheckpointQuery::thread(t.clone())
        },
        CheckpointQuery {
            metadata: Metadata::from_iter([("step".to_owned(), serde_json::json!(0))]),
            ..CheckpointQuery::default()
        },
    ];
    for query in &queries {
        assert_eq!(
            store.list_checkpoints(query).await.expect("list"),
            plain.list_checkpoints(query).await.expect("list"),
            "{query:?}"
        );
    }
    assert_eq!(
        store.list_threads().await.expect("threads"),
        plain.list_threads().await.expect("threads")
    );

    // The store holds envelopes: no byte or type tag given, ids, metadata and versions in the
    // clear.
    let stored = everything(&*raw).await;
    assert_eq!(
        values(&stored).len(),
        values(&everything(&plain).await).len()
    );
    for value in values(&stored) {
        assert_eq!(value.type_tag, format!("{ENVELOPE_PREFIX}{}", key.id()));
        for secret in [BODY, BLOB, WRITE, TAG.as_bytes()] {
            assert!(!contains(&value.bytes, secret), "plaintext in the store");
        }
    }
    let clear = |tuples: Vec<CheckpointTuple>| {
        tuples
            .into_iter()
            .map(|t| {
                let c = t.checkpoint;
                let blobs: Vec<_> = t
                    .blobs
                    .into_iter()
                    .map(|b| (b.channel, b.version))
                    .collect();
                let writes: Vec<_> = t.writes.into_iter().map(|w| (w.task_id, w.idx)).collect();
                (
                    c.key,
                    c.parent,
                    c.channel_versions,
                    c.metadata,
                    blobs,
                    writes,
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(clear(stored), clear(everything(&plain).await));
    // The first checkpoint write marked the store.
    let marker = raw.store_property(MARKER_PROPERTY).await.expect("marker");
    assert!(marker.expect("marked").contains(&key.id().to_string()));
}

#[tokio::test]
async fn deleting_and_pruning_go_through_the_layer() {
    let (plain, raw) = (InMemoryStore::new(), raw());
    let store = with_key(&raw, &key());
    fill(&plain).await.expect("fill");
    fill(&store).await.expect("fill");
    let t = thread(CHAT);
    assert_eq!(
        prune_to_latest(&store, &t).await,
        prune_to_latest(&plain, &t).await
    );
    assert_eq!(everything(&store).await, everything(&plain).await);
    let runs = ["run-1".to_owned()];
    assert_eq!(
        store
            .delete_run_checkpoints(&runs)
            .await
            .expect("delete runs"),
        plain
            .delete_run_checkpoints(&runs)
            .await
            .expect("delete runs"),
    );
    assert!(everything(&store).await.is_empty());
    fill(&store).await.expect("fill again");
    assert!(store.delete_thread(&t).await.expect("delete"));
    assert!(!store.delete_thread(&t).await.expect("delete again"));
    assert_eq!(store.list_threads().await.expect("threads").len(), 1);
}

#[tokio::test]
async fn ciphertext_moved_to_another_place_fails_to_open() {
    let raw = raw();
    let store = with_key(&raw, &key());
    fill(&store).await.expect("fill");
    let t = CHAT;
    let root = Default::default();
    let stored = |id: &str| {
        let raw = raw.clone();
        let key = at(t, "", id);
        async move { checkpoint_at(&*raw, &key).await.expect("stored") }
    };
    let (one, two) = (stored("1").await, stored("2").await);

    // A body moved to another checkpoint.
    let mut moved = one.checkpoint.clone();
    moved.body = two.checkpoint.body.clone();
    raw.put_checkpoint(&moved, &[]).await.expect("raw put");
    assert_tampered(
        store
            .get_checkpoint(&thread(t), &root, Some(&moved.key.id))
            .await,
        "a body moved to another checkpoint",
    );
    raw.put_checkpoint(&one.checkpoint, &[])
        .await
        .expect("restore");
    store
        .get_checkpoint(&thread(t), &root, Some(&one.checkpoint.key.id))
        .await
        .expect("restored");

    // A checkpoint pointed at another parent.
    let mut reparented = two.checkpoint.clone();
    reparented.parent = None;
    raw.put_checkpoint(&reparented, &[]).await.expect("raw put");
    assert_tampered(
        store.get_checkpoint(&thread(t), &root, None).await,
        "a checkpoint given another parent",
    );
    raw.put_checkpoint(&two.checkpoint, &[])
        .await
        .expect("restore");

    // A channel value moved to another version.
    let value = two
        .blobs
        .iter()
        .find(|b| b.channel == "messages")
        .expect("a blob");
    let swapped = ChannelBlob {
        version: "1".into(),
        ..value.clone()
    };
    raw.put_checkpoint(&one.checkpoint, &[swapped])
        .await
        .expect("raw put");
    assert_tampered(
        store
            .get_checkpoint(&thread(t), &root, Some(&one.checkpoint.key.id))
            .await,
        "a channel value moved to another version",
    );

    // A pending write moved to another task, and to another checkpoint.
    let mut other_task = two.writes[0].clone();
    other_task.task_id = "task-z".into();
    raw.put_writes(&two.checkpoint.key, &[other_task])
        .await
        .expect("raw put");
    assert_tampered(
        store.get_checkpoint(&thread(t), &root, None).await,
        "a pending write moved to another task",
    );
    raw.put_writes(&at("other", "", "3"), &two.writes[..1])
        .await
        .expect("raw put");
    assert_tampered(
        store.get_checkpoint(&thread("other"), &root, None).await,
        "a pending write moved to another thread",
    );

    // The store's own copy (through no layer) copies ciphertext bound to the source.
    raw.copy_thread(&thread("other"), &thread("copied"))
        .await
        .expect("raw copy");
    assert_tampered(
        store
            .list_checkpoints(&CheckpointQuery::thread(thread("copied")))
            .await,
        "a thread copied as ciphertext",
    );
}

#[tokio::test]
async fn copy_thread_reseals_into_the_target() {
    let raw = raw();
    let store = with_key(&raw, &key());
    fill(&store).await.expect("fill");
    let (source, target) = (thread(CHAT), thread("fork of it"));
    assert_eq!(store.copy_thread(&source, &target).await.expect("copy"), 3);

    let listed = |t: &ThreadId| CheckpointQuery::thread(t.clone());
    let original = store
        .list_checkpoints(&listed(&source))
        .await
        .expect("list");
    let mut copied = store
        .list_checkpoints(&listed(&target))
        .await
        .expect("list");
    for tuple in &mut copied {
        assert_eq!(tuple.checkpoint.key.thread, target);
        tuple.checkpoint.key.thread = source.clone();
    }
    assert_eq!(
        copied, original,
        "everything copied: ids, parents, blobs, writes, times"
    );
    // Sealed anew: no envelope of the source is in the target.
    let raw_source = raw.list_checkpoints(&listed(&source)).await.expect("raw");
    let raw_target = raw.list_checkpoints(&listed(&target)).await.expect("raw");
    for value in values(&raw_target) {
        assert!(value.type_tag.starts_with(ENVELOPE_PREFIX));
        assert!(!values(&raw_source).contains(&value));
    }

    let err = store
        .copy_thread(&source, &target)
        .await
        .expect_err("target holds checkpoints");
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    let err = store
        .copy_thread(&thread("nothing"), &thread("new"))
        .await
        .expect_err("empty");
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    assert!(store
        .list_checkpoints(&listed(&thread("new")))
        .await
        .expect("list")
        .is_empty());
}

#[tokio::test]
async fn a_wrong_key_is_refused() {
    let raw = raw();
    let right = key();
    fill(&with_key(&raw, &right)).await.expect("fill");
    let wrong = with_key(&raw, &key());
    let t = thread("other");
    assert_wrong_key(
        wrong.get_checkpoint(&t, &Default::default(), None).await,
        "get",
    );
    assert_wrong_key(
        wrong.list_checkpoints(&CheckpointQuery::default()).await,
        "list",
    );
    assert_wrong_key(
        wrong
            .put_checkpoint(&VALUES.checkpoint(at("other", "", "9"), None, &[]), &[])
            .await,
        "put",
    );
    assert_wrong_key(wrong.copy_thread(&t, &thread("x")).await, "copy");

    // Records under a key not held, in a store without a marker: each names its key.
    let wrong = unmarked_copy(&raw)
        .await
        .with_layer(agentmem_crypt::EncryptLayer::new(&key()));
    let err = wrong
        .list_checkpoints(&CheckpointQuery::default())
        .await
        .expect_err("wrong key");
    assert!(
        matches!(crypto_error(&err), Some(CryptoError::WrongKey { found, .. }) if *found == right.id()),
        "{err}"
    );
}

#[tokio::test]
async fn a_value_not_sealed_is_corrupt_through_the_layer() {
    let raw = raw();
    raw.put_checkpoint(&VALUES.checkpoint(at("t", "", "1"), None, &[]), &[])
        .await
        .expect("raw put");
    let store = with_key(&raw, &key());
    let err = store
        .get_checkpoint(&thread("t"), &Default::default(), None)
        .await
        .expect_err("plaintext");
    assert_eq!(err.kind(), ErrorKind::CorruptData);
    assert_eq!(crypto_error(&err), Some(&CryptoError::NotEncrypted));
}

#[tokio::test]
async fn without_a_key_a_marked_store_refuses_checkpoint_reads_and_writes() {
    let raw = raw();
    let key = key();
    fill(&with_key(&raw, &key)).await.expect("fill");
    let before = everything(&*raw).await;
    let keyless = raw.clone().with_layer(NoKeyLayer);
    let t = thread(CHAT);
    let c = VALUES.checkpoint(at("fresh", "", "1"), None, &[]);
    assert_no_key(
        keyless.put_checkpoint(&c, &[]).await,
        &key,
        "put_checkpoint",
    );
    assert_no_key(
        keyless
            .put_writes(&at("other", "", "3"), &[write("t", 0, "c")])
            .await,
        &key,
        "put_writes",
    );
    assert_reads_need_the_key(&keyless, &t, &key).await;
    assert_eq!(everything(&*raw).await, before, "nothing written");

    // Listing threads and deleting need no key.
    assert_eq!(keyless.list_threads().await.expect("threads").len(), 2);
    assert_eq!(prune_to_latest(&keyless, &t).await, 1);
    let runs = ["run-1".to_owned()];
    assert_eq!(
        keyless.delete_run_checkpoints(&runs).await.expect("runs"),
        3
    );
    assert!(everything(&*raw).await.is_empty());
}

#[tokio::test]
async fn without_a_key_sealed_values_in_an_unmarked_store_are_refused() {
    let sealed_store = raw();
    let key = key();
    fill(&with_key(&sealed_store, &key)).await.expect("fill");
    // The sealed records alone, without the marker (as in a store encrypted before markers).
    let unmarked = unmarked_copy(&sealed_store).await;
    for tuple in everything(&*sealed_store).await {
        unmarked
            .put_writes(&tuple.checkpoint.key, &tuple.writes)
            .await
            .expect("raw put");
    }
    // Plaintext beside them passes.
    let keyless = unmarked.clone().with_layer(NoKeyLayer);
    let plain = VALUES.checkpoint(at("plain", "", "1"), None, &[]);
    keyless
        .put_checkpoint(&plain, &[])
        .await
        .expect("plaintext write");
    let got = keyless
        .get_checkpoint(&thread("plain"), &Default::default(), None)
        .await
        .expect("plaintext read");
    assert_eq!(got.expect("stored").checkpoint, plain);

    let t = thread(CHAT);
    assert_reads_need_the_key(&keyless, &t, &key).await;
    assert!(unmarked
        .list_checkpoints(&CheckpointQuery::thread(thread("x")))
        .await
        .expect("list")
        .is_empty());
    // A thread with only a sealed pending write is refused too.
    let only_write = CheckpointQuery::thread(thread("plain"));
    let sealed_write = everything(&*sealed_store).await[0].writes.first().cloned();
    if let Some(write) = sealed_write {
        unmarked
            .put_writes(&plain.key, &[write])
            .await
            .expect("raw put");
        assert_no_key(
            keyless.list_checkpoints(&only_write).await,
            &key,
            "a sealed write",
        );
    }
}

#[tokio::test]
async fn sessions_and_checkpoints_share_one_marker() {
    let (raw, _, store) = keyed();
    store
        .append_one(&sid("s"), Message::user("hello"))
        .await
        .expect("append");
    fill(&store).await.expect("fill under the marked key");
    let other = with_key(&raw, &common::key());
    assert_wrong_key(
        other.list_checkpoints(&CheckpointQuery::default()).await,
        "list",
    );
    assert_eq!(store.list_sessions().await.expect("sessions").len(), 1);
}

/// A store wearing the layer is still an `AgentMemory` with checkpoints.
#[test]
fn the_layered_store_keeps_the_checkpoints_capability() {
    fn capabilities(store: &impl AgentMemory) -> agentmem_core::Capabilities {
        store.capabilities()
    }
    let plain = InMemoryStore::new();
    let layered = with_key(&raw(), &key());
    assert_eq!(
        capabilities(&layered).checkpoints,
        capabilities(&plain).checkpoints
    );
}
