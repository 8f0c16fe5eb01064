//! Multi-process contention on every backend: 8 processes × 1,000 appends to one
//! session, and a process compacting while another appends. Afterwards every acknowledged
//! message is there once, intact, and each process's messages are in its own order.
//!
//! The file backend runs with `durability=buffered` and SQLite with `synchronous=normal`
//! here: the point is concurrency (locking, ordering), not the disk (see `crash.rs`).
//! MongoDB runs 8 × `AGENTMEM_MONGO_APPENDS` (default 125) appends, because the Python test
//! server handles about a few hundred writes per second; the real server is not the limit.
//! Server backends skip only through `agentmem_testkit::service_unavailable`.
mod common;

use agentmem_core::SessionId;
use agentmem_reliability::audit;
use agentmem_testkit::unique_namespace;
use common::{acks, compactions, drop_namespace, open_or_skip, spawn, transcript};

const PROCESSES: usize = 8;
const APPENDS: u64 = 1_000;

fn mongo_appends() -> u64 {
    std::env::var("AGENTMEM_MONGO_APPENDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(125)
}

/// `PROCESSES` helpers each append `per_process` messages one by one to one session of `url`.
async fn many_appenders(backend: &str, url: &str, per_process: u64) {
    let Some(store) = open_or_skip(backend, url).await else {
        return;
    };
    let session: SessionId = "shared".parse().unwrap();
    let children: Vec<_> = (0..PROCESSES)
        .map(|p| {
            spawn(&[
                "churn",
                url,
                "shared",
                &format!("p{p}"),
                &per_process.to_string(),
                "1",
                "0",
            ])
        })
        .collect();
    let mut acked = Vec::new();
    for child in children {
        acked.extend(acks(&child.wait_ok()));
    }
    let (all, archives, _) = transcript(store.as_ref(), &session).await;
    let report = audit(&all, &acked).unwrap_or_else(|e| panic!("{backend}: {e}"));
    let expected = PROCESSES * per_process as usize;
    assert_eq!(
        acked.len(),
        expected,
        "{backend}: every append acknowledged"
    );
    assert_eq!(all.len(), expected, "{backend}: stored = acknowledged");
    assert_eq!(report.checked, expected);
    assert!(report.unacknowledged.is_empty() && archives.is_empty());
    println!(
        "contention: {backend}: {PROCESSES} processes × {per_process} appends: {} messages checked (intact, each process in order), lost = 0",
        report.checked
    );
    drop(store);
    drop_namespace(url).await;
}

/// One helper appends `appends` messages while another compacts the session `rounds` times.
async fn compact_while_appending(backend: &str, url: &str, appends: u64, rounds: u64) {
    let Some(store) = open_or_skip(backend, url).await else {
        return;
    };
    let session: SessionId = "busy".parse().unwrap();
    let appender = spawn(&["churn", url, "busy", "a", &appends.to_string(), "1", "0"]);
    let compactor = spawn(&["compact", url, "busy", "c", &rounds.to_string(), "0", "5"]);
    let acked = acks(&appender.wait_ok());
    let compacted = compactions(&compactor.wait_ok());
    let (all, archive_ids, _) = transcript(store.as_ref(), &session).await;
    let report = audit(&all, &acked).unwrap_or_else(|e| panic!("{backend}: {e}"));
    assert_eq!(
        all.len(),
        appends as usize,
        "{backend}: archives + session hold every message exactly once"
    );
    assert!(report.unacknowledged.is_empty());
    for (a, _) in &compacted {
        assert!(archive_ids.contains(a), "{backend}: archive {a} is missing");
    }
    assert_eq!(compacted.len() as u64, rounds);
    println!(
        "contention: {backend}: compacting {rounds} times while appending {appends}: {} archives + session hold {} messages, each once, lost = 0",
        archive_ids.len(),
        report.checked
    );
    drop(store);
    drop_namespace(url).await;
}

/// The URL of `backend`'s test store, and the folder an embedded store lives in (removed
/// when dropped); server stores get a fresh `namespace`.
fn store_url(backend: &str, namespace: &str) -> (String, Option<tempfile::TempDir>) {
    let namespace = unique_namespace(namespace);
    match backend {
        "Redis" => (common::redis_url(&namespace), None),
        "PostgreSQL" => (common::postgres_url(&namespace), None),
        "MongoDB" => (common::mongo_url(&namespace), None),
        embedded => {
            let dir = tempfile::tempdir().unwrap();
            let url = match embedded {
                "file" => format!("file://{}?durability=buffered", dir.path().display()),
                _ => format!(
                    "sqlite://{}?synchronous=normal&busy_timeout_ms=30000",
                    dir.path().join("memory.db").display()
                ),
            };
            (url, Some(dir))
        }
    }
}

/// The two tests of each backend: `backend: appenders test, compaction test; appends per
/// process, appends racing the compactions, compactions`.
macro_rules! contention_tests {
    ($($backend:literal: $many:ident, $race:ident; $per_process:expr, $racing:expr, $rounds:expr;)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $many() {
            let (url, _dir) = store_url($backend, "rel_many");
            many_appenders($backend, &url, $per_process).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $race() {
            let (url, _dir) = store_url($backend, "rel_busy");
            compact_while_appending($backend, &url, $racing, $rounds).await;
        }
    )*};
}

contention_tests! {
    "file": file_eight_processes_append, file_compaction_races_appends; APPENDS, 1_000, 20;
    "sqlite": sqlite_eight_processes_append, sqlite_compaction_races_appends; APPENDS, 1_000, 20;
    "Redis": redis_eight_processes_append, redis_compaction_races_appends; APPENDS, 1_000, 20;
    "PostgreSQL": postgres_eight_processes_append, postgres_compaction_races_appends;
        APPENDS, 1_000, 20;
    "MongoDB": mongodb_eight_processes_append, mongodb_compaction_races_appends;
        mongo_appends(), mongo_appends() * 2, 10;
}
