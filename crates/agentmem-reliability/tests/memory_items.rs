//! Memory items under contention (the PraisonAI failure: 2 processes × 150 long-term writes
//! kept 152 of 300): 8 processes store items of their own and upsert facts under shared keys,
//! as auto-memory does. Afterwards every acknowledged item is there once, and every shared
//! key holds exactly one item, with a value some process wrote. On the file backend and
//! SQLite, writers are also killed with SIGKILL mid-write: nothing acknowledged is lost.
mod common;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use agentmem_core::{AgentMemory, MemoryFilter, MemoryItem, MemoryKind};
use agentmem_reliability::protocol::Event;
use agentmem_testkit::unique_namespace;
use common::{drop_namespace, open_or_skip, spawn};

const PROCESSES: usize = 8;
const SHARED_KEYS: u64 = 5;

/// What the writers acknowledged: their own items' ids, and for every shared key the values
/// written under it. A writer killed mid-run may also have landed the upsert that follows its
/// last acknowledged item, its acknowledgement cut off by the kill (`in_flight`).
#[derive(Default)]
struct Acked {
    own: HashSet<String>,
    shared: HashMap<String, HashSet<String>>,
    in_flight: HashMap<String, HashSet<String>>,
}

impl Acked {
    fn add(&mut self, events: &[Event]) {
        for e in events {
            if let Event::Ack(ack) = e {
                match ack.split_once('=') {
                    Some((key, text)) => {
                        self.shared
                            .entry(key.to_string())
                            .or_default()
                            .insert(text.to_string());
                    }
                    None => {
                        self.own.insert(ack.clone());
                        // `<writer>-m<i>`: its upsert, `<writer>:<i>` under `shared.k<i % n>`.
                        if let Some((writer, i)) = ack.rsplit_once("-m") {
                            let i: u64 = i.parse().unwrap();
                            self.in_flight
                                .entry(format!("shared.k{}", i % SHARED_KEYS))
                                .or_default()
                                .insert(format!("{writer}:{i}"));
                        }
                    }
                }
            }
        }
    }
}

/// Checks the store against what was acknowledged; returns the number of items checked.
async fn audit(backend: &str, store: &Arc<dyn AgentMemory>, acked: &Acked) -> usize {
    let items = store.list_memories(&MemoryFilter::default()).await.unwrap();
    let mut ids = HashSet::new();
    for item in &items {
        assert!(
            ids.insert(item.id.to_string()),
            "{backend}: {} twice",
            item.id
        );
    }
    let missing: Vec<&String> = acked.own.iter().filter(|id| !ids.contains(*id)).collect();
    assert!(
        missing.is_empty(),
        "{backend}: acknowledged items lost: {missing:?}"
    );
    let facts: Vec<&MemoryItem> = items
        .iter()
        .filter(|i| i.kind == MemoryKind::Fact)
        .collect();
    for (key, written) in &acked.shared {
        let holding: Vec<&&MemoryItem> = facts
            .iter()
            .filter(|i| i.key.as_deref() == Some(key))
            .collect();
        assert_eq!(holding.len(), 1, "{backend}: key {key} held by {holding:?}");
        let text = &holding[0].text;
        let attempted = acked.in_flight.get(key).is_some_and(|t| t.contains(text));
        assert!(
            written.contains(text) || attempted,
            "{backend}: key {key} holds {text:?}, which no writer wrote"
        );
    }
    let keyed = facts.iter().filter(|i| i.key.is_some()).count();
    assert_eq!(
        keyed,
        acked.shared.len(),
        "{backend}: one item per shared key"
    );
    items.len()
}

/// `PROCESSES` writers each store `per_process` items and as many shared-key upserts.
async fn many_writers(backend: &str, url: &str, per_process: u64) {
    let Some(store) = open_or_skip(backend, url).await else {
        return;
    };
    let children: Vec<_> = (0..PROCESSES)
        .map(|p| {
            spawn(&[
                "remember",
                url,
                &format!("p{p}"),
                &per_process.to_string(),
                &SHARED_KEYS.to_string(),
            ])
        })
        .collect();
    let mut acked = Acked::default();
    for child in children {
        acked.add(&child.wait_ok());
    }
    assert_eq!(
        acked.own.len(),
        PROCESSES * per_process as usize,
        "{backend}"
    );
    let checked = audit(backend, &store, &acked).await;
    assert_eq!(checked, acked.own.len() + SHARED_KEYS as usize, "{backend}");
    println!(
        "memory items: {backend}: {PROCESSES} processes × {per_process} items + upserts of \
         {SHARED_KEYS} shared keys: {checked} items checked, lost = 0, duplicate keys = 0"
    );
    drop(store);
    drop_namespace(url).await;
}

/// Writers killed with SIGKILL at random points while storing: every acknowledged item is
/// there, shared keys are never duplicated, and the store opens and accepts writes again.
async fn killed_writers(backend: &str, url: &str, trials: u64) {
    let mut acked = Acked::default();
    for trial in 0..trials {
        let writers: Vec<_> = (0..2)
            .map(|w| {
                spawn(&[
                    "remember",
                    url,
                    &format!("t{trial}w{w}"),
                    "100000",
                    &SHARED_KEYS.to_string(),
                ])
            })
            .collect();
        // Both writing, then a different moment in the write each trial.
        let started = std::time::Instant::now();
        while !writers
            .iter()
            .all(|w| w.events_so_far().contains(&Event::Ready))
            && started.elapsed() < std::time::Duration::from_secs(10)
        {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        std::thread::sleep(std::time::Duration::from_millis(5 + 23 * (trial % 7)));
        for writer in writers {
            acked.add(&writer.kill());
        }
    }
    let store = agentmem::open(url).await.unwrap();
    let checked = audit(backend, &store, &acked).await;
    store
        .put_memory(&MemoryItem::new(MemoryKind::Fact, "after the kills").with_key("after"))
        .await
        .unwrap();
    println!(
        "memory items, SIGKILL: {backend}: {trials} trials × 2 writers: {} acknowledged \
         items, {checked} checked, lost = 0",
        acked.own.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_memory_items_under_contention() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}?durability=buffered", dir.path().display());
    many_writers("file", &url, 200).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_memory_items_under_contention() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!(
        "sqlite://{}?synchronous=normal",
        dir.path().join("m.db").display()
    );
    many_writers("sqlite", &url, 200).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_memory_items_under_contention() {
    many_writers("redis", &common::redis_url(&unique_namespace("mi")), 200).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_memory_items_under_contention() {
    many_writers(
        "postgres",
        &common::postgres_url(&unique_namespace("mi")),
        200,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mongodb_memory_items_under_contention() {
    // The Python test server takes a few hundred writes a second (see contention.rs).
    many_writers("mongodb", &common::mongo_url(&unique_namespace("mi")), 25).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_memory_writers_killed_lose_nothing_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    killed_writers("file", &format!("file://{}", dir.path().display()), 10).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_memory_writers_killed_lose_nothing_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("k.db").display());
    killed_writers("sqlite", &url, 10).await;
}
