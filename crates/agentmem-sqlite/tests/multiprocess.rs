//! C2 across processes: four processes append 500 messages each to one session in one file;
//! four write checkpoints, channel values and pending writes into one thread, and pending
//! writes ahead of a checkpoint not stored yet; four write one knowledge graph.
//!
//! The parent test re-runs this test binary four times, selecting the `appender`
//! test with `--exact`; the children find the database and their number in the environment.
use std::collections::HashSet;
use std::process::{Command, Stdio};

use agentmem_core::{
    AgentMemoryExt, Checkpoint, CheckpointKey, CheckpointQuery, CheckpointStore, Entity,
    GraphQuery, GraphStore, Layered, Message, MessageId, ObservationAddition, PendingWrite,
    Relation, SessionId, SessionStore, ThreadId, TypedBytes,
};
use agentmem_sqlite::SqliteStore;
use agentmem_testkit::fixtures::checkpoint_with_blob;

const PROCESSES: usize = 4;
const PER_PROCESS: usize = 500;
/// The shared database of the children of every parent test but the openers'.
const DB_VAR: &str = "AGENTMEM_SQLITE_MP_DB";
const WORKER_VAR: &str = "AGENTMEM_SQLITE_MP_WORKER";
const APPENDERS: Workers = Workers {
    child: "appender",
    parent: "four_processes_append_to_one_session",
};

/// Runs `n` copies of this test binary at once, each running only the test `test` (set up by
/// `setup` with its number), and asserts that every one ran it and passed.
fn run_children(test: &str, n: usize, setup: impl Fn(usize, &mut Command)) {
    let exe = std::env::current_exe().expect("path of this test binary");
    let children: Vec<_> = (0..n)
        .map(|i| {
            let mut child = Command::new(&exe);
            child
                .args(["--exact", test, "--nocapture", "--test-threads=1"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            setup(i, &mut child);
            child.spawn().expect("start a child process")
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().expect("wait for a child");
        let stdout = String::from_utf8_lossy(&out.stdout);
        // "1 passed" guards against a filter typo that would run no test and still exit 0.
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "child running {test} failed: {}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The four processes of the parent test `parent`: each runs the child test `child` of this
/// binary on the database the environment variable [`DB_VAR`] names.
struct Workers {
    child: &'static str,
    parent: &'static str,
}

impl Workers {
    /// Runs the children on the database `db` (see [`run_children`]).
    fn run(&self, db: &std::path::Path) {
        run_children(self.child, PROCESSES, |worker, child| {
            child.env(DB_VAR, db).env(WORKER_VAR, worker.to_string());
        });
    }

    /// In a child: the shared database and this child's number; `None` when run as a test of
    /// its own (no environment variable), which does nothing.
    async fn join(&self) -> Option<(Layered<SqliteStore>, usize)> {
        let Ok(db) = std::env::var(DB_VAR) else {
            eprintln!("{} only runs as a child of {}", self.child, self.parent);
            return None;
        };
        let worker: usize = std::env::var(WORKER_VAR)
            .expect("worker number")
            .parse()
            .expect("worker number");
        let store = SqliteStore::connect(&format!("sqlite://{db}"))
            .await
            .expect("open the shared database");
        Some((store, worker))
    }
}

fn session() -> SessionId {
    SessionId::new("shared").expect("valid session id")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_processes_append_to_one_session() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let db = dir.path().join("shared.db");
    // The children race to create and migrate the database too.
    APPENDERS.run(&db);

    let store = SqliteStore::connect(&format!("sqlite://{}", db.display()))
        .await
        .expect("open the shared database");
    let messages = store.messages(&session()).await.expect("load");
    assert_eq!(messages.len(), PROCESSES * PER_PROCESS);
    let ids: HashSet<&str> = messages.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids.len(), messages.len(), "every message is stored once");
    let mut next = vec![0usize; PROCESSES];
    for m in &messages {
        let worker = m.metadata["worker"].as_u64().expect("worker number") as usize;
        let i = m.metadata["i"].as_u64().expect("index") as usize;
        assert_eq!(i, next[worker], "process {worker}'s messages are in order");
        next[worker] += 1;
        assert_eq!(m.content, content(worker, i), "content intact");
        assert_eq!(m.id, format!("w{worker}-{i}"));
    }
    assert_eq!(next, vec![PER_PROCESS; PROCESSES]);
    let info = store.list_sessions().await.expect("list");
    assert_eq!(info[0].message_count, (PROCESSES * PER_PROCESS) as u64);
}

fn content(worker: usize, i: usize) -> String {
    format!(
        "process {worker} message {i}: ünïcødé ✓ {}",
        "x".repeat(i % 50)
    )
}

/// Run only as a child of `four_processes_append_to_one_session`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appender() {
    let Some((store, worker)) = APPENDERS.join().await else {
        return;
    };
    for i in 0..PER_PROCESS {
        let m = Message::user(content(worker, i))
            .with_id(MessageId::new(format!("w{worker}-{i}")).expect("valid message id"))
            .with_metadata("worker", worker)
            .with_metadata("i", i);
        store.append(&session(), &[m]).await.expect("append");
    }
}

const OPEN_DB_VAR: &str = "AGENTMEM_SQLITE_MP_OPEN_DB";

/// Agents started together on one new file must all open it: eight processes create, switch
/// to WAL and migrate one new database at once, five times over; every open succeeds (opening
/// waits for the others as writes do, instead of failing at once with "locked").
#[test]
fn eight_processes_open_one_new_database_together() {
    for _round in 0..5 {
        let dir = tempfile::tempdir().expect("temporary folder");
        let db = dir.path().join("new.db");
        run_children("opener", 8, |_, child| {
            child.env(OPEN_DB_VAR, &db);
        });
    }
}

/// Run only as a child of `eight_processes_open_one_new_database_together`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opener() {
    let Ok(db) = std::env::var(OPEN_DB_VAR) else {
        eprintln!("opener only runs as a child of eight_processes_open_one_new_database_together");
        return;
    };
    let store = SqliteStore::connect(&format!("sqlite://{db}"))
        .await
        .expect("open the new database beside seven other processes");
    store
        .append_one(&session(), Message::user("opened"))
        .await
        .expect("append");
}

const CHECKPOINTERS: Workers = Workers {
    child: "checkpointer",
    parent: "four_processes_write_checkpoints_into_one_thread",
};
const CHECKPOINTS_PER_PROCESS: usize = 100;

fn shared_thread() -> ThreadId {
    "shared: thread/*".parse().expect("valid thread id")
}

/// Checkpoint `id` of `thread`, in the root namespace.
fn key(thread: ThreadId, id: &str) -> CheckpointKey {
    let id = id.parse().expect("valid checkpoint id");
    CheckpointKey {
        thread,
        ns: Default::default(),
        id,
    }
}

/// The checkpoint every process adds pending writes to.
fn common_key() -> CheckpointKey {
    key(shared_thread(), "0")
}

/// The checkpoint every process adds pending writes to before it is stored (as LangGraph may):
/// the parent puts it once they are done.
fn late_key() -> CheckpointKey {
    key("shared: late".parse().expect("valid thread id"), "1")
}

/// Four processes write checkpoints (each with its channel value) into one thread, pending
/// writes to one checkpoint of it, and pending writes ahead of a checkpoint not stored, at
/// once: nothing acknowledged is lost, every checkpoint reads back with its value, and the
/// early writes show once their checkpoint is put.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_processes_write_checkpoints_into_one_thread() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let db = dir.path().join("checkpoints.db");
    let url = format!("sqlite://{}", db.display());
    let store = SqliteStore::connect(&url).await.expect("open");
    let common = Checkpoint::new(common_key(), TypedBytes::new("json", b"{}".to_vec()));
    store.put_checkpoint(&common, &[]).await.expect("put");
    CHECKPOINTERS.run(&db);

    let all = store
        .list_checkpoints(&CheckpointQuery::thread(shared_thread()))
        .await
        .expect("list");
    assert_eq!(all.len(), 1 + PROCESSES * CHECKPOINTS_PER_PROCESS);
    for tuple in &all[..all.len() - 1] {
        let id = tuple.checkpoint.key.id.as_str();
        assert_eq!(tuple.blobs.len(), 1, "{id}");
        let value = tuple.blobs[0].value.as_ref().expect("a value");
        assert_eq!(value.bytes, id.as_bytes());
    }
    let common = all.last().expect("the common checkpoint");
    assert_eq!(common.checkpoint.key, common_key());
    assert_eq!(
        common.writes.len(),
        PROCESSES * CHECKPOINTS_PER_PROCESS,
        "every pending write is stored once"
    );
    let threads = store.list_threads().await.expect("threads");
    assert_eq!(threads.len(), 1, "writes alone make no thread");
    assert_eq!(threads[0].checkpoints, all.len() as u64);
    let late = Checkpoint::new(late_key(), TypedBytes::new("json", b"{}".to_vec()));
    store.put_checkpoint(&late, &[]).await.expect("put");
    let late = store
        .get_checkpoint(&late_key().thread, &late_key().ns, None)
        .await
        .expect("get")
        .expect("the late checkpoint");
    assert_eq!(
        late.writes.len(),
        PROCESSES * CHECKPOINTS_PER_PROCESS,
        "every early write is stored once"
    );
}

/// Run only as a child of `four_processes_write_checkpoints_into_one_thread`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpointer() {
    let Some((store, worker)) = CHECKPOINTERS.join().await else {
        return;
    };
    for i in 0..CHECKPOINTS_PER_PROCESS {
        let id = format!("w{worker}-{i:03}");
        let key = key(shared_thread(), &id);
        let body = TypedBytes::new("json", b"{}".to_vec());
        let value = TypedBytes::new("bytes", id.as_bytes().to_vec());
        let (checkpoint, blob) = checkpoint_with_blob(key, body, "messages", &id, Some(value));
        store
            .put_checkpoint(&checkpoint, &[blob])
            .await
            .expect("put a checkpoint");
        let write = PendingWrite {
            task_id: format!("task-{worker}"),
            idx: i as i64,
            channel: "messages".into(),
            value: TypedBytes::new("json", b"1".to_vec()),
            task_path: String::new(),
        };
        store
            .put_writes(&common_key(), std::slice::from_ref(&write))
            .await
            .expect("put a pending write");
        store
            .put_writes(&late_key(), &[write])
            .await
            .expect("put a pending write ahead of its checkpoint");
    }
}

const GRAPHERS: Workers = Workers {
    child: "grapher",
    parent: "four_processes_write_one_graph",
};
const GRAPH_WRITES_PER_PROCESS: usize = 50;

/// Four processes write one knowledge graph at once: each creates the same contested
/// entities (one of each name stays), its own entities with a relation to a shared hub, and
/// adds observations to the hub. Nothing acknowledged is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_processes_write_one_graph() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let db = dir.path().join("graph.db");
    let store = SqliteStore::connect(&format!("sqlite://{}", db.display()))
        .await
        .expect("open");
    store
        .create_entities(&[Entity::new("hub", "place")])
        .await
        .expect("create the hub");
    GRAPHERS.run(&db);

    let graph = store.read_graph(&GraphQuery::All).await.expect("read");
    let per_process = GRAPH_WRITES_PER_PROCESS;
    let names: HashSet<&str> = graph.entities.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names.len(), graph.entities.len(), "names are unique");
    // The hub, each process's own entities, and one of each contested name.
    assert_eq!(
        graph.entities.len(),
        1 + PROCESSES * per_process + per_process
    );
    let hub = &graph.entities[0];
    assert_eq!(hub.name, "hub");
    assert_eq!(hub.observations.len(), PROCESSES * per_process);
    let relations: HashSet<&Relation> = graph.relations.iter().collect();
    assert_eq!(
        relations.len(),
        graph.relations.len(),
        "relations are unique"
    );
    // Each own entity's relation to the hub, and one of each contested relation.
    assert_eq!(graph.relations.len(), PROCESSES * per_process + per_process);
}

/// Run only as a child of `four_processes_write_one_graph`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grapher() {
    let Some((store, worker)) = GRAPHERS.join().await else {
        return;
    };
    for i in 0..GRAPH_WRITES_PER_PROCESS {
        let own = format!("w{worker}-{i}");
        let contested = format!("contested-{i}");
        store
            .create_entities(&[
                Entity::new(&own, "visitor"),
                Entity::new(&contested, format!("claimed by {worker}")),
            ])
            .await
            .expect("create entities");
        store
            .create_relations(&[
                Relation::new(&own, "hub", "visits"),
                Relation::new(&contested, "hub", "contests"),
            ])
            .await
            .expect("create relations");
        let addition = ObservationAddition {
            entity_name: "hub".into(),
            contents: vec![format!("visited by {own}")],
        };
        store
            .add_observations(&[addition])
            .await
            .expect("add an observation");
    }
}
