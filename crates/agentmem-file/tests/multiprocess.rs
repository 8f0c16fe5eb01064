//! Several processes appending to one session lose nothing: durable appends (which leave the
//! lock before their shared fsync) and buffered ones (which keep the lock as a lease while
//! busy).
//!
//! Two processes forking between two sessions in opposite directions finish (no deadlock).
//!
//! Several processes putting checkpoints and pending writes to one thread (and copying and
//! deleting two other threads in opposite directions) lose nothing.
//!
//! Three processes writing the knowledge graph at once (each creating its own entities and
//! relations, adding observations to one shared entity, racing to create the same names, and
//! churning enough to compact the log) lose nothing, and each raced name is created once.
//!
//! Three processes writing embedding vectors at once (each putting and deleting its own,
//! replacing shared keys, and churning enough to compact the log) lose nothing.
//!
//! The test re-runs its own test binary as the child processes: `child_appender` does work
//! only when `AGENTMEM_FILE_CHILD_ROOT` is set, which the parent sets for its children alone.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use agentmem_core::checkpoint::sort_writes;
use agentmem_core::{
    ChannelBlob, Checkpoint, CheckpointKey, CheckpointNs, CheckpointQuery, CheckpointStore, Entity,
    ErrorKind, GraphQuery, GraphStore, Layered, Message, ObservationAddition, ObservationDeletion,
    PendingWrite, Relation, Rewind, SessionId, SessionStore, StoredVector, ThreadId, TypedBytes,
    VectorKey, VectorStore,
};
use agentmem_file::{Durability, FileStore};
use agentmem_testkit::fixtures::checkpoint_with_blob;
use common::open_with;
use tempfile::TempDir;

const PROCESSES: usize = 4;
const PER_PROCESS: usize = 500;
const ROOT_VAR: &str = "AGENTMEM_FILE_CHILD_ROOT";
const INDEX_VAR: &str = "AGENTMEM_FILE_CHILD_INDEX";
const DURABILITY_VAR: &str = "AGENTMEM_FILE_CHILD_DURABILITY";
const FORKER_VAR: &str = "AGENTMEM_FILE_CHILD_FORKER";
const CHECKPOINTER_VAR: &str = "AGENTMEM_FILE_CHILD_CHECKPOINTER";
/// Checkpoints each checkpointing child puts.
const CHECKPOINTS: usize = 150;
/// Rounds of each forking child.
const FORKS: usize = 150;
const GRAPHER_VAR: &str = "AGENTMEM_FILE_CHILD_GRAPHER";
/// Graph-writing children.
const GRAPHERS: usize = 3;
/// Entities each graph-writing child creates.
const ENTITIES: usize = 100;
/// Names every graph-writing child tries to create (one every fifth entity).
const RACES: usize = ENTITIES / 5;
/// Rounds of adding and deleting an observation, after the entities.
const CHURN: usize = 400;
const VECTORER_VAR: &str = "AGENTMEM_FILE_CHILD_VECTORER";
/// Vector-writing children.
const VECTORERS: u8 = 3;
/// Vectors each vector-writing child puts (it then deletes the odd ones).
const VECTORS: u8 = 100;
/// Keys every vector-writing child replaces.
const SHARED: u8 = 5;

/// The store root, this child's index and the value of `role_var` (the variable that makes
/// one child test act), when this process is a child started to run that test; `None`
/// otherwise: the test then does nothing, the parent test below drives it.
fn child_env(role_var: &str) -> Option<(String, String, String)> {
    match (
        std::env::var(ROOT_VAR),
        std::env::var(INDEX_VAR),
        std::env::var(role_var),
    ) {
        (Ok(root), Ok(index), Ok(role)) => Some((root, index, role)),
        _ => None,
    }
}

/// In a child whose role (in `role_var`) is a durability: the store on the shared root with
/// that durability, and the child's index.
async fn child_store_with_durability(role_var: &str) -> Option<(Layered<FileStore>, String)> {
    let (root, index, durability) = child_env(role_var)?;
    let durability: Durability = durability.parse().expect("a durability");
    Some((open_with(Path::new(&root), durability).await, index))
}

/// Whether this process is a child: a child never spawns children.
fn is_child() -> bool {
    std::env::var(ROOT_VAR).is_ok()
}

/// Starts `count` copies of this test binary, each running only the test `child_test` on the
/// store in `root`, with its index set, and `role_var` (the variable that makes that test
/// act) set to `role`.
fn spawn_children(
    child_test: &str, count: usize, root: &Path, role_var: &str, role: &str,
) -> Vec<Child> {
    let exe = std::env::current_exe().expect("test binary path");
    (0..count)
        .map(|p| {
            Command::new(&exe)
                .args(["--exact", child_test, "--nocapture", "--test-threads=1"])
                .env(ROOT_VAR, root)
                .env(INDEX_VAR, p.to_string())
                .env(role_var, role)
                // The children's test-harness chatter is noise; failures go to stderr.
                .stdout(Stdio::null())
                .spawn()
                .expect("spawn a child process")
        })
        .collect()
}

/// Runs `count` children of the test `child_test` (see [`spawn_children`]) on a store in a new
/// folder, and asserts that every one passed; the folder, or `None` in a child (a child never
/// spawns children).
fn run_children(
    child_test: &str, count: usize, role_var: &str, role: impl std::fmt::Display,
) -> Option<TempDir> {
    if is_child() {
        return None;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let children = spawn_children(child_test, count, dir.path(), role_var, &role.to_string());
    for mut child in children {
        let status = child.wait().expect("wait for a child");
        assert!(status.success(), "a child process failed: {status}");
    }
    Some(dir)
}

fn session() -> SessionId {
    "shared agent".parse().expect("valid id")
}

/// Child side: appends `PER_PROCESS` messages one by one, each with its process and sequence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_appender() {
    let Some((store, index)) = child_store_with_durability(DURABILITY_VAR).await else {
        return;
    };
    for i in 0..PER_PROCESS {
        // Long-ish, multi-line content so a torn or interleaved write would show.
        let content = format!("p{index} #{i}\n{}", "x".repeat(200 + i % 50));
        let m = Message::user(content)
            .with_metadata("p", index.clone())
            .with_metadata("i", i as u64);
        store.append(&session(), &[m]).await.expect("append");
    }
}

common::durability_tests!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    four_processes_append =>
    four_processes_append_durably_to_one_session_and_lose_nothing,
    four_processes_append_buffered_to_one_session_and_lose_nothing
);

async fn four_processes_append(durability: Durability) {
    let Some(dir) = run_children("child_appender", PROCESSES, DURABILITY_VAR, durability) else {
        return;
    };

    let store = open_with(dir.path(), Durability::Fsync).await;
    let session = store
        .load(&session(), None)
        .await
        .expect("load")
        .expect("session exists");
    assert_eq!(session.messages.len(), PROCESSES * PER_PROCESS);
    assert_eq!(session.total_messages, (PROCESSES * PER_PROCESS) as u64);
    let mut next: HashMap<String, u64> = HashMap::new();
    for m in &session.messages {
        let p = m.metadata["p"].as_str().expect("process tag").to_string();
        let i = m.metadata["i"].as_u64().expect("sequence tag");
        let expected = next.entry(p.clone()).or_insert(0);
        assert_eq!(
            i, *expected,
            "process {p}'s messages out of order or missing"
        );
        *expected += 1;
        let want = format!("p{p} #{i}\n{}", "x".repeat(200 + (i as usize) % 50));
        assert_eq!(m.content, want, "message intact");
    }
    assert_eq!(next.len(), PROCESSES);
    assert!(next.values().all(|&n| n == PER_PROCESS as u64));
    // MEMORY.md holds every block, in the log's order, and needed no repair.
    let md = std::fs::read_to_string(store.memory_md_path(&session.id)).expect("MEMORY.md");
    assert_eq!(md.matches("### User — ").count(), PROCESSES * PER_PROCESS);
    assert!(store.repairs().is_empty(), "{:?}", store.repairs());
    let rendered = agentmem_formats::swarms::render_memory_md(
        session.id.as_str(),
        session.created_at,
        &session.messages,
    );
    assert_eq!(md, rendered);
}

/// Child side of the fork test: child 0 forks `x` into `y`, child 1 `y` into `x`, each
/// appending to its source, rewinding it and deleting the target now and then, so that both
/// processes keep leases and take the two locks at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_forker() {
    let Some((root, index, _)) = child_env(FORKER_VAR) else {
        return;
    };
    let store = open_with(Path::new(&root), Durability::Buffered).await;
    let (x, y): (SessionId, SessionId) = ("x".parse().expect("id"), "y".parse().expect("id"));
    let (from, to) = if index == "0" { (x, y) } else { (y, x) };
    for i in 0..FORKS {
        let m = Message::user(format!("p{index} #{i}"));
        store.append(&from, &[m]).await.expect("append");
        match store.fork(&from, &to, None).await {
            Ok(info) => assert!(info.message_count > 0),
            Err(e) => assert!(
                matches!(e.kind(), ErrorKind::Conflict | ErrorKind::NotFound),
                "{e}"
            ),
        }
        if i % 3 == 0 {
            // The other process may have just deleted it (as its fork target).
            if let Err(e) = store.rewind(&from, &Rewind::Last(1)).await {
                assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
            }
        }
        if i % 5 == 0 {
            store.delete_session(&to).await.expect("delete");
        }
    }
}

/// Two processes forking between the same two sessions in opposite directions (with
/// appends, rewinds and deletions between) finish: the locks are taken in one order
/// everywhere. Every session left is whole, with `MEMORY.md` its log's view, and nothing is
/// left half-built.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_forking_in_opposite_directions_finish() {
    if is_child() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let mut children = spawn_children("child_forker", 2, dir.path(), FORKER_VAR, "1");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    for child in &mut children {
        loop {
            if let Some(status) = child.try_wait().expect("wait for a child") {
                assert!(status.success(), "a child process failed: {status}");
                break;
            }
            if std::time::Instant::now() > deadline {
                for c in &mut children {
                    let _ = c.kill();
                }
                panic!("the forking processes did not finish: deadlock?");
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    let store = open_with(dir.path(), Durability::Fsync).await;
    for name in ["x", "y"] {
        let id: SessionId = name.parse().expect("id");
        let Some(session) = store.load(&id, None).await.expect("load") else {
            continue;
        };
        let md = std::fs::read_to_string(store.memory_md_path(&id)).expect("MEMORY.md");
        let rendered =
            agentmem_formats::swarms::render_memory_md(name, session.created_at, &session.messages);
        assert_eq!(md, rendered, "{name}: MEMORY.md is the log's view");
    }
    assert!(store.repairs().is_empty(), "{:?}", store.repairs());
    let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("agents"))
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .filter(|n| n.to_string_lossy().starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

fn shared_thread() -> ThreadId {
    "shared/thread: *1*".parse().expect("valid thread id")
}

/// The checkpoint `i` of child `p`, with its blob and its pending writes.
fn child_checkpoint(p: &str, i: usize) -> (Checkpoint, Vec<ChannelBlob>, Vec<PendingWrite>) {
    let key = CheckpointKey {
        thread: shared_thread(),
        ns: CheckpointNs::root(),
        id: format!("{i:05}-p{p}").parse().expect("valid checkpoint id"),
    };
    let channel = format!("c{p}");
    let body = TypedBytes::new("bytes", format!("{p}/{i}"));
    let value = TypedBytes::new("bytes", "v".repeat(100 + i));
    let (mut checkpoint, blob) =
        checkpoint_with_blob(key, body, &channel, &i.to_string(), Some(value));
    checkpoint.metadata.insert("p".into(), p.into());
    let write = |idx: i64| PendingWrite {
        task_id: format!("task-{p}"),
        idx,
        channel: channel.clone(),
        value: TypedBytes::new("bytes", format!("{p}/{i}/{idx}")),
        task_path: String::new(),
    };
    (checkpoint, vec![blob], vec![write(0), write(-1)])
}

/// Child side of the checkpoint test: puts `CHECKPOINTS` checkpoints to the shared thread,
/// each with its pending writes (before it or after it), and now and then copies `ping` to `pong` (even children) or
/// back (odd ones) and deletes the target.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_checkpointer() {
    let Some((store, p)) = child_store_with_durability(CHECKPOINTER_VAR).await else {
        return;
    };
    let (ping, pong): (ThreadId, ThreadId) =
        ("ping".parse().expect("id"), "pong".parse().expect("id"));
    let odd = p.parse::<usize>().expect("index") % 2 == 1;
    let (from, to) = if odd { (pong, ping) } else { (ping, pong) };
    for i in 0..CHECKPOINTS {
        let (checkpoint, blobs, writes) = child_checkpoint(&p, i);
        // Every other time (the first time too, so the writes may create the log) the writes
        // come first, as LangGraph's background puts may.
        let early = i % 2 == 0;
        if early {
            store
                .put_writes(&checkpoint.key, &writes)
                .await
                .expect("writes");
        }
        store
            .put_checkpoint(&checkpoint, &blobs)
            .await
            .expect("put");
        if !early {
            store
                .put_writes(&checkpoint.key, &writes)
                .await
                .expect("writes");
        }
        if i % 10 == 0 {
            let mut own = checkpoint.clone();
            own.key.thread = from.clone();
            store.put_checkpoint(&own, &blobs).await.expect("put");
            match store.copy_thread(&from, &to).await {
                Ok(n) => assert!(n > 0),
                Err(e) => assert!(
                    matches!(e.kind(), ErrorKind::Conflict | ErrorKind::NotFound),
                    "{e}"
                ),
            }
            store.delete_thread(&to).await.expect("delete");
        }
    }
}

common::durability_tests!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    four_processes_put_checkpoints =>
    four_processes_put_checkpoints_durably_to_one_thread_and_lose_nothing,
    four_processes_put_checkpoints_buffered_to_one_thread_and_lose_nothing
);

async fn four_processes_put_checkpoints(durability: Durability) {
    let child_test = "child_checkpointer";
    let Some(dir) = run_children(child_test, PROCESSES, CHECKPOINTER_VAR, durability) else {
        return;
    };

    let store = open_with(dir.path(), Durability::Fsync).await;
    let all = store
        .list_checkpoints(&CheckpointQuery::thread(shared_thread()))
        .await
        .expect("list");
    assert_eq!(all.len(), PROCESSES * CHECKPOINTS);
    for p in 0..PROCESSES {
        for i in 0..CHECKPOINTS {
            let (checkpoint, blobs, mut writes) = child_checkpoint(&p.to_string(), i);
            let got = store
                .get_checkpoint(
                    &shared_thread(),
                    &checkpoint.key.ns,
                    Some(&checkpoint.key.id),
                )
                .await
                .expect("get")
                .expect("every acknowledged checkpoint is there");
            assert_eq!(got.checkpoint.body, checkpoint.body);
            assert_eq!(got.blobs, blobs, "its blob");
            sort_writes(&mut writes);
            assert_eq!(got.writes, writes, "its writes");
        }
    }
    let threads = store.list_threads().await.expect("threads");
    let shared = threads
        .iter()
        .find(|t| t.thread == shared_thread())
        .expect("listed");
    assert_eq!(shared.checkpoints, (PROCESSES * CHECKPOINTS) as u64);
    assert!(store.repairs().is_empty(), "{:?}", store.repairs());
}

fn one_addition(entity: &str, content: &str) -> ObservationAddition {
    ObservationAddition {
        entity_name: entity.into(),
        contents: vec![content.into()],
    }
}

/// Child side of the graph test: creates `ENTITIES` entities of its own, each with a relation
/// to `hub` and its name added to `hub`'s observations; every fifth time races the others to
/// create `race-<n>` (the winner, told by the answer, records itself on it); then adds and
/// deletes an observation `CHURN` times, so that the log fills with dead records and is
/// compacted while the others write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_grapher() {
    let Some((root, p, _)) = child_env(GRAPHER_VAR) else {
        return;
    };
    let store = open_with(Path::new(&root), Durability::Fsync).await;
    store
        .create_entities(&[Entity::new("hub", "hub")])
        .await
        .expect("hub");
    for i in 0..ENTITIES {
        let name = format!("p{p}-{i}");
        let entity = Entity::new(&name, "t").with_observations([format!("made by p{p}")]);
        let created = store.create_entities(&[entity]).await.expect("create");
        assert_eq!(created.len(), 1, "a name of its own");
        let relation = Relation::new(&name, "hub", "in");
        store.create_relations(&[relation]).await.expect("relate");
        store
            .add_observations(&[one_addition("hub", &name)])
            .await
            .expect("add");
        if i % 5 == 0 {
            let race = format!("race-{}", i / 5);
            let entity = Entity::new(&race, format!("p{p}"));
            if !store
                .create_entities(&[entity])
                .await
                .expect("race")
                .is_empty()
            {
                let won = one_addition(&race, &format!("won by p{p}"));
                store.add_observations(&[won]).await.expect("won");
            }
        }
    }
    let own = format!("p{p}-0");
    for k in 0..CHURN {
        let note = format!("churn {k}");
        store
            .add_observations(&[one_addition(&own, &note)])
            .await
            .expect("add");
        let deletion = ObservationDeletion {
            entity_name: own.clone(),
            observations: vec![note],
        };
        store
            .delete_observations(&[deletion])
            .await
            .expect("delete");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_writing_the_graph_lose_nothing_and_create_a_name_once() {
    let Some(dir) = run_children("child_grapher", GRAPHERS, GRAPHER_VAR, 1) else {
        return;
    };

    let store = open_with(dir.path(), Durability::Fsync).await;
    let graph = store.read_graph(&GraphQuery::All).await.expect("read");
    assert_eq!(graph.entities.len(), 1 + GRAPHERS * ENTITIES + RACES);
    assert_eq!(graph.relations.len(), GRAPHERS * ENTITIES);
    let entity = |name: &str| {
        graph
            .entities
            .iter()
            .find(|e| e.name == name)
            .unwrap_or_else(|| panic!("{name} is there"))
    };
    let hub = entity("hub");
    assert_eq!(hub.observations.len(), GRAPHERS * ENTITIES);
    for p in 0..GRAPHERS {
        let own: Vec<String> = (0..ENTITIES).map(|i| format!("p{p}-{i}")).collect();
        let prefix = format!("p{p}-");
        let added: Vec<&String> = hub
            .observations
            .iter()
            .filter(|o| o.starts_with(&prefix))
            .collect();
        assert_eq!(added, own.iter().collect::<Vec<_>>(), "p{p}'s in order");
        for name in &own {
            assert_eq!(entity(name).observations, [format!("made by p{p}")]);
            assert!(graph.relations.contains(&Relation::new(name, "hub", "in")));
        }
    }
    for r in 0..RACES {
        let race = entity(&format!("race-{r}"));
        // Exactly one process was told it created the name: the one whose type it bears.
        assert_eq!(race.observations, [format!("won by {}", race.entity_type)]);
    }
    // Without compaction the log would hold every record written, one line each: the header,
    // the hub, three a child's entity, a creation and a win a race, two a round of churn.
    let written = 2 + GRAPHERS * (3 * ENTITIES + 2 * CHURN) + 2 * RACES;
    let log = std::fs::read_to_string(dir.path().join("graph").join("graph.jsonl"))
        .expect("read the log");
    assert!(log.lines().count() < written, "compacted");
    assert!(store.repairs().is_empty(), "{:?}", store.repairs());
}

/// The key of vector `n` of child `p` (`p` 255: the shared keys).
fn vector_key(p: u8, n: u8) -> VectorKey {
    let mut key = [0u8; 32];
    (key[0], key[1]) = (p, n);
    VectorKey(key)
}

/// Vector `n` of child `p`, as written in `round`.
fn child_vector(p: u8, n: u8, round: u16) -> StoredVector {
    let values = [f32::from(p), f32::from(n), f32::from(round), 0.5];
    StoredVector::new(vector_key(p, n), &values)
}

/// Child side of the vector test: puts `VECTORS` vectors of its own, one call each, with the
/// shared keys replaced every tenth time; deletes its odd ones; then replaces its vector 0
/// `CHURN` times, so that the log fills with dead records and is compacted while the others
/// write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_vectorer() {
    let Some((root, p, _)) = child_env(VECTORER_VAR) else {
        return;
    };
    let p: u8 = p.parse().expect("index");
    let store = open_with(Path::new(&root), Durability::Fsync).await;
    for n in 0..VECTORS {
        let mut batch = vec![child_vector(p, n, 0)];
        if n % 10 == 0 {
            batch.extend((0..SHARED).map(|s| child_vector(255, s, u16::from(p))));
        }
        store.put_vectors(&batch).await.expect("put");
    }
    let odd: Vec<VectorKey> = (0..VECTORS)
        .filter(|n| n % 2 == 1)
        .map(|n| vector_key(p, n))
        .collect();
    let gone = store.delete_vectors(&odd).await.expect("delete");
    assert_eq!(gone, odd.len() as u64, "its own vectors, each there once");
    for round in 1..=CHURN as u16 {
        store
            .put_vectors(&[child_vector(p, 0, round)])
            .await
            .expect("churn");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_writing_vectors_lose_nothing() {
    let Some(dir) = run_children("child_vectorer", VECTORERS.into(), VECTORER_VAR, 1) else {
        return;
    };

    let store = open_with(dir.path(), Durability::Fsync).await;
    for p in 0..VECTORERS {
        let keys: Vec<VectorKey> = (0..VECTORS).map(|n| vector_key(p, n)).collect();
        let mut found = store.get_vectors(&keys).await.expect("get");
        found.sort_by_key(|v| v.key);
        let mut expected: Vec<StoredVector> = (0..VECTORS)
            .filter(|n| n % 2 == 0)
            .map(|n| child_vector(p, n, 0))
            .collect();
        expected[0] = child_vector(p, 0, CHURN as u16);
        assert_eq!(found, expected, "p{p}'s vectors");
    }
    let shared: Vec<VectorKey> = (0..SHARED).map(|s| vector_key(255, s)).collect();
    for v in store.get_vectors(&shared).await.expect("get") {
        let writers: Vec<StoredVector> = (0..VECTORERS)
            .map(|p| child_vector(255, v.key.0[1], p.into()))
            .collect();
        assert!(
            writers.contains(&v),
            "a shared key holds one child's vector whole"
        );
    }
    // Without compaction the log would hold every record written: the header, then a child's
    // puts (its own, the shared keys' every tenth time, its churn) and its deletes (a record
    // is 41 bytes besides the vector's 16).
    let puts = VECTORS as usize + SHARED as usize * 10 + CHURN;
    let per_child = puts * (41 + 16) + VECTORS as usize / 2 * 41;
    let written = 12 + VECTORERS as usize * per_child;
    let len = std::fs::metadata(dir.path().join("vectors").join("vectors.log"))
        .expect("the log")
        .len();
    assert!(len < written as u64, "compacted: {len} of {written} bytes");
    assert!(store.repairs().is_empty(), "{:?}", store.repairs());
}
