//! C2 across processes: four processes append 500 messages each to one session in one file.
//!
//! The parent test re-runs this test binary four times, selecting the `appender`
//! test with `--exact`; the children find the database and their number in the environment.
#![allow(
    missing_docs,
    reason = "a test or bench crate: nothing in it is public API"
)]

use std::collections::HashSet;
use std::process::{Command, Stdio};

use agentmem_core::{AgentMemoryExt, Message, MessageId, SessionId, SessionStore};
use agentmem_sqlite::SqliteStore;

const PROCESSES: usize = 4;
const PER_PROCESS: usize = 500;
const DB_VAR: &str = "AGENTMEM_SQLITE_MP_DB";
const WORKER_VAR: &str = "AGENTMEM_SQLITE_MP_WORKER";

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

fn session() -> SessionId {
    SessionId::new("shared").expect("valid session id")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_processes_append_to_one_session() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let db = dir.path().join("shared.db");
    // The children race to create and migrate the database too.
    run_children("appender", PROCESSES, |worker, child| {
        child.env(DB_VAR, &db).env(WORKER_VAR, worker.to_string());
    });

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
    // Not a test of its own: outside the parent (no environment variable) it does nothing.
    let Ok(db) = std::env::var(DB_VAR) else {
        eprintln!("appender only runs as a child of four_processes_append_to_one_session");
        return;
    };
    let worker: usize = std::env::var(WORKER_VAR)
        .expect("worker number")
        .parse()
        .expect("worker number");
    let store = SqliteStore::connect(&format!("sqlite://{db}"))
        .await
        .expect("open the shared database");
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
