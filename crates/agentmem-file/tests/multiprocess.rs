//! Several processes appending to one session lose nothing: durable appends (which leave the
//! lock before their shared fsync) and buffered ones (which keep the lock as a lease while
//! busy).
//!
//! The test re-runs its own test binary as the child processes: `child_appender` does work
//! only when `AGENTMEM_FILE_CHILD_ROOT` is set, which the parent sets for its children alone.

use std::collections::HashMap;
use std::process::Command;

use agentmem_core::{Message, SessionId, SessionStore};
use agentmem_file::{Durability, FileConfig, FileStore};

const PROCESSES: usize = 4;
const PER_PROCESS: usize = 500;
const ROOT_VAR: &str = "AGENTMEM_FILE_CHILD_ROOT";
const INDEX_VAR: &str = "AGENTMEM_FILE_CHILD_INDEX";
const DURABILITY_VAR: &str = "AGENTMEM_FILE_CHILD_DURABILITY";

fn session() -> SessionId {
    "shared agent".parse().expect("valid id")
}

/// Child side: appends `PER_PROCESS` messages one by one, each with its process and sequence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_appender() {
    let (Ok(root), Ok(index)) = (std::env::var(ROOT_VAR), std::env::var(INDEX_VAR)) else {
        return; // Not a child: the parent test below drives this.
    };
    let durability: Durability = std::env::var(DURABILITY_VAR)
        .expect("durability")
        .parse()
        .expect("a durability");
    let store = FileStore::connect_with(FileConfig::new(root).with_durability(durability))
        .await
        .expect("open");
    for i in 0..PER_PROCESS {
        // Long-ish, multi-line content so a torn or interleaved write would show.
        let content = format!("p{index} #{i}\n{}", "x".repeat(200 + i % 50));
        let m = Message::user(content)
            .with_metadata("p", index.clone())
            .with_metadata("i", i as u64);
        store.append(&session(), &[m]).await.expect("append");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_processes_append_durably_to_one_session_and_lose_nothing() {
    four_processes_append(Durability::Fsync).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_processes_append_buffered_to_one_session_and_lose_nothing() {
    four_processes_append(Durability::Buffered).await;
}

async fn four_processes_append(durability: Durability) {
    if std::env::var(ROOT_VAR).is_ok() {
        return; // A child never spawns children.
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = std::env::current_exe().expect("test binary path");
    let children: Vec<_> = (0..PROCESSES)
        .map(|p| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "child_appender",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(ROOT_VAR, dir.path())
                .env(INDEX_VAR, p.to_string())
                .env(DURABILITY_VAR, durability.to_string())
                // The children's test-harness chatter is noise; failures go to stderr.
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("spawn a child process")
        })
        .collect();
    for mut child in children {
        let status = child.wait().expect("wait for a child");
        assert!(status.success(), "a child process failed: {status}");
    }

    let store = FileStore::connect_with(FileConfig::new(dir.path()))
        .await
        .expect("open");
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
