//! Writers of one process: durable appends by many tasks (group commit), and buffered stores
//! that keep a session's lock as a lease while busy and hand it over when idle or after a
//! while. Two stores on one root stand for two processes: each has its own lock handles.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

mod common;

use agentmem_core::{AgentMemoryExt, Message, SessionId};
use agentmem_file::{Durability, FileStore};
use common::{contents, load_some, open_with, sid};

fn tagged(writer: usize, i: usize) -> Message {
    Message::user(format!("w{writer} #{i}"))
        .with_metadata("w", writer as u64)
        .with_metadata("i", i as u64)
}

/// The session's messages hold every writer's appends, each writer's in its order; its
/// `MEMORY.md` is exactly the view of the log.
async fn assert_complete(
    store: &agentmem_core::Layered<FileStore>, id: &SessionId, writers: usize, each: usize,
) {
    let session = load_some(store, id).await;
    assert_eq!(session.messages.len(), writers * each);
    let mut next: HashMap<u64, u64> = HashMap::new();
    for m in &session.messages {
        let w = m.metadata["w"].as_u64().expect("writer");
        let i = m.metadata["i"].as_u64().expect("index");
        let expected = next.entry(w).or_insert(0);
        assert_eq!(i, *expected, "writer {w}'s appends out of order or missing");
        *expected += 1;
    }
    let md = std::fs::read_to_string(store.memory_md_path(id)).expect("MEMORY.md");
    let rendered = agentmem_formats::swarms::render_memory_md(
        id.as_str(),
        session.created_at,
        &session.messages,
    );
    assert_eq!(md, rendered, "MEMORY.md is the log's view");
    assert!(store.repairs().is_empty(), "{:?}", store.repairs());
}

/// Eight tasks appending durably at once share fsyncs; every acknowledged append is there,
/// in order, for this store and for a new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn durable_appends_of_eight_tasks_all_read_back() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Arc::new(open_with(dir.path(), Durability::Fsync).await);
    let id = sid("shared");
    let tasks: Vec<_> = (0..8)
        .map(|w| {
            let (store, id) = (store.clone(), id.clone());
            tokio::spawn(async move {
                for i in 0..40 {
                    store.append_one(&id, tagged(w, i)).await.expect("append");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("task");
    }
    assert_complete(&store, &id, 8, 40).await;
    assert_complete(&open_with(dir.path(), Durability::Fsync).await, &id, 8, 40).await;
}

/// A buffered store keeps the session's lock while busy; once idle it lets another store (as
/// another process would) append, and then sees that append itself, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_lease_hands_the_session_to_another_store() {
    let dir = tempfile::tempdir().expect("temp dir");
    let a = open_with(dir.path(), Durability::Buffered).await;
    let b = open_with(dir.path(), Durability::Buffered).await;
    let id = sid("handed_over");
    a.append_one(&id, tagged(0, 0)).await.expect("a appends");
    a.append_one(&id, tagged(0, 1))
        .await
        .expect("a appends under its lease");
    // `b` waits for `a`'s lease to end (a's store stays open and idle).
    tokio::time::timeout(Duration::from_secs(30), b.append_one(&id, tagged(1, 0)))
        .await
        .expect("the idle lease ended")
        .expect("b appends");
    a.append_one(&id, tagged(0, 2))
        .await
        .expect("a appends again");
    let seen = a.messages(&id).await.expect("load");
    assert_eq!(contents(&seen), ["w0 #0", "w0 #1", "w1 #0", "w0 #2"]);
    // Once both are idle, the lock is free for anyone.
    let lock = std::fs::File::open(dir.path().join("locks/handed_over.lock")).expect("lock file");
    tokio::time::timeout(Duration::from_secs(30), async {
        while lock.try_lock().is_err() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("the lock is released when the stores are idle");
}

/// A store appending without pause does not keep the session from another store: its lease
/// ends after a bounded time and the other store gets its turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_store_does_not_starve_another() {
    let dir = tempfile::tempdir().expect("temp dir");
    let busy = Arc::new(open_with(dir.path(), Durability::Buffered).await);
    let other = open_with(dir.path(), Durability::Buffered).await;
    let id = sid("contended");
    busy.append_one(&id, tagged(0, 0)).await.expect("append");
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (busy, id, stop) = (busy.clone(), id.clone(), stop.clone());
        tokio::spawn(async move {
            let mut i = 1;
            while !stop.load(Ordering::Relaxed) {
                busy.append_one(&id, tagged(0, i))
                    .await
                    .expect("busy append");
                i += 1;
            }
            i
        })
    };
    let turns = async {
        for i in 0..20 {
            other
                .append_one(&id, tagged(1, i))
                .await
                .expect("other append");
        }
    };
    tokio::time::timeout(Duration::from_secs(60), turns)
        .await
        .expect("the other store got its turns");
    stop.store(true, Ordering::Relaxed);
    let written = writer.await.expect("writer");
    let session = load_some(&other, &id).await;
    assert_eq!(session.messages.len(), written + 20);
    assert_complete_pair(&session.messages, written, 20);
}

/// Writer 0 wrote `zero` messages and writer 1 `one`, each in order.
fn assert_complete_pair(messages: &[Message], zero: usize, one: usize) {
    for (w, count) in [(0u64, zero), (1, one)] {
        let seen: Vec<u64> = messages
            .iter()
            .filter(|m| m.metadata["w"].as_u64() == Some(w))
            .map(|m| m.metadata["i"].as_u64().expect("index"))
            .collect();
        assert_eq!(seen, (0..count as u64).collect::<Vec<_>>(), "writer {w}");
    }
}

/// A store property read by one handle answers from what it last read only while the schema
/// file is the same file: each change by another handle (another process) is seen by the next
/// read, a value of the same length set within the same clock tick included.
#[tokio::test]
async fn store_properties_set_by_another_handle_are_seen_at_once() {
    use agentmem_core::{PropertyChange, SessionStore};
    let dir = tempfile::tempdir().expect("temp dir");
    let (reader, writer) = (
        common::open(dir.path()).await,
        common::open(dir.path()).await,
    );
    assert_eq!(reader.store_property("p").await.expect("read"), None);
    let mut previous: Option<String> = None;
    for value in ["one", "two", "six", "ten"] {
        let change = PropertyChange::replace("p", previous.as_deref(), value);
        assert!(writer.set_store_property(&change).await.expect("set"));
        for _ in 0..2 {
            let seen = reader.store_property("p").await.expect("read");
            assert_eq!(seen.as_deref(), Some(value));
        }
        previous = Some(value.to_owned());
    }
    assert_eq!(reader.store_property("other").await.expect("read"), None);
}
