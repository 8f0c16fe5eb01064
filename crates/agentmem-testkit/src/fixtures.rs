//! Values and steps the backends' own tests (beyond the conformance cases) use again and
//! again, with one definition here instead of one in every test file. They panic on failure,
//! as the tests calling them do.

use agentmem_core::{
    ChannelBlob, Checkpoint, CheckpointId, CheckpointKey, CheckpointNs, CheckpointPrune,
    CheckpointStore, CheckpointTuple, Entity, GraphStore, ObservationAddition, PendingWrite,
    Relation, SessionStore, ThreadId, TypedBytes,
};

/// The checkpoint `id` of thread `thread` in namespace `ns`.
///
/// # Panics
///
/// When `thread`, `ns` or `id` is not a valid id: a fixture's mistake, not data under test.
pub fn checkpoint_key(thread: &str, ns: &str, id: &str) -> CheckpointKey {
    CheckpointKey {
        thread: ThreadId::new(thread).expect("a valid thread id"),
        ns: CheckpointNs::new(ns).expect("a valid checkpoint namespace"),
        id: CheckpointId::new(id).expect("a valid checkpoint id"),
    }
}

/// A checkpoint at `key` with body `body` whose one channel `channel` is at `version`, and
/// that version's blob, holding `value` (`None`: the channel was emptied).
pub fn checkpoint_with_blob(
    key: CheckpointKey, body: TypedBytes, channel: &str, version: &str, value: Option<TypedBytes>,
) -> (Checkpoint, ChannelBlob) {
    let mut checkpoint = Checkpoint::new(key, body);
    checkpoint
        .channel_versions
        .insert(channel.to_owned(), version.to_owned());
    let blob = ChannelBlob {
        channel: channel.to_owned(),
        version: version.to_owned(),
        value,
    };
    (checkpoint, blob)
}

/// The checkpoint at `at` exactly (thread, namespace and id), if any.
///
/// # Panics
///
/// When the read fails.
pub async fn checkpoint_at<S: CheckpointStore + ?Sized>(
    store: &S, at: &CheckpointKey,
) -> Option<CheckpointTuple> {
    store
        .get_checkpoint(&at.thread, &at.ns, Some(&at.id))
        .await
        .expect("get the checkpoint")
}

/// The latest checkpoint in the thread and namespace of `at` (whatever its id), if any.
///
/// # Panics
///
/// When the read fails.
pub async fn latest_checkpoint<S: CheckpointStore + ?Sized>(
    store: &S, at: &CheckpointKey,
) -> Option<CheckpointTuple> {
    store
        .get_checkpoint(&at.thread, &at.ns, None)
        .await
        .expect("get the latest checkpoint")
}

/// Prunes `thread` of `store` to its latest checkpoint; how many checkpoints went.
///
/// # Panics
///
/// When the prune fails.
pub async fn prune_to_latest<S: CheckpointStore + ?Sized>(store: &S, thread: &ThreadId) -> u64 {
    store
        .prune_checkpoints(std::slice::from_ref(thread), CheckpointPrune::KeepLatest)
        .await
        .expect("prune")
}

/// The pending write `idx` of task `task`: the JSON value `1` on channel `x`, no task path.
pub fn pending_write(task: &str, idx: i64) -> PendingWrite {
    PendingWrite {
        task_id: task.to_owned(),
        idx,
        channel: "x".to_owned(),
        value: TypedBytes::new("json", b"1".to_vec()),
        task_path: String::new(),
    }
}

/// The observation [`visit_hub`] adds to the hub for the visitor `name`.
pub fn hub_note(name: &str) -> String {
    format!("seen {name}")
}

/// One visitor's writes to a graph whose entity `hub` exists, as concurrent-writer tests make
/// them by the hundred: creates the entity `name` (type `visitor`, observation `arrived`),
/// adds [`hub_note`] of `name` to the hub and relates `name` to it (`visits`).
///
/// # Panics
///
/// When a call fails or does not report exactly its one change.
pub async fn visit_hub<S: GraphStore + ?Sized>(store: &S, name: &str) {
    let entity = Entity::new(name, "visitor").with_observations(["arrived"]);
    let created = store.create_entities(&[entity]).await.expect("create");
    assert_eq!(created.len(), 1, "{name}: created");
    let addition = ObservationAddition {
        entity_name: "hub".into(),
        contents: vec![hub_note(name)],
    };
    let added = store.add_observations(&[addition]).await.expect("add");
    assert_eq!(added.len(), 1, "{name}: one addition");
    assert_eq!(
        added[0].added_observations,
        [hub_note(name)],
        "{name}: added"
    );
    let relation = Relation::new(name, "hub", "visits");
    let related = store.create_relations(&[relation]).await.expect("relate");
    assert_eq!(related.len(), 1, "{name}: related");
}

/// The ids of the sessions `store` lists, in its order.
///
/// # Panics
///
/// When listing fails.
pub async fn session_ids<S: SessionStore + ?Sized>(store: &S) -> Vec<String> {
    let sessions = store.list_sessions().await.expect("list sessions");
    sessions.into_iter().map(|s| s.id.into_string()).collect()
}
