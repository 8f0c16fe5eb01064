//! Append one message (fsync and buffered); 10,000 appends then a reload (the perf target:
//! under a second with `Durability::Buffered`); load the last 20 of a 10,000-message session.
//!
//! `cargo bench -p agentmem-file --bench file`. With `AGENTMEM_BENCH_QUICK=1` criterion takes
//! fewer samples (for CI).
#![allow(missing_docs, clippy::unwrap_used)]

use std::time::Duration;

use agentmem_core::{AgentMemory, Message, SessionId};
use agentmem_file::{Durability, FileConfig, FileMemory};
use criterion::{criterion_group, criterion_main, Criterion};

fn quick() -> bool {
    std::env::var("AGENTMEM_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

async fn store(dir: &tempfile::TempDir, durability: Durability) -> FileMemory {
    FileMemory::open(FileConfig::new(dir.path()).with_durability(durability))
        .await
        .unwrap()
}

fn message(i: usize) -> Message {
    Message::user(format!(
        "message {i}: a turn of ordinary length about GCP latency and cost."
    ))
}

fn append_one(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("append_one");
    for durability in [Durability::Fsync, Durability::Buffered] {
        let dir = tempfile::tempdir().unwrap();
        let store = rt.block_on(store(&dir, durability));
        let session = SessionId::new("bench").unwrap();
        let m = message(0);
        group.bench_function(format!("durability={durability}"), |b| {
            b.to_async(&rt).iter(|| async {
                store
                    .append(&session, std::slice::from_ref(&m))
                    .await
                    .unwrap()
            })
        });
    }
    group.finish();
}

fn append_10k_then_reload(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("append_10k_then_reload");
    group.sample_size(10);
    if quick() {
        group.measurement_time(Duration::from_secs(5));
    }
    let messages: Vec<Message> = (0..10_000).map(message).collect();
    group.bench_function("durability=buffered", |b| {
        b.to_async(&rt).iter(|| async {
            let dir = tempfile::tempdir().unwrap();
            let session = SessionId::new("bench").unwrap();
            let writer = store(&dir, Durability::Buffered).await;
            for m in &messages {
                writer
                    .append(&session, std::slice::from_ref(m))
                    .await
                    .unwrap();
            }
            // A new store, as a new process would open it.
            let reader = store(&dir, Durability::Buffered).await;
            let loaded = reader.load(&session, None).await.unwrap().unwrap();
            assert_eq!(loaded.messages.len(), messages.len());
        })
    });
    group.finish();
}

fn load_last_20(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let store = rt.block_on(store(&dir, Durability::Buffered));
    let session = SessionId::new("big").unwrap();
    rt.block_on(async {
        for start in (0..10_000).step_by(1_000) {
            let batch: Vec<Message> = (start..start + 1_000).map(message).collect();
            store.append(&session, &batch).await.unwrap();
        }
    });
    c.bench_function("load_last_20_of_10k", |b| {
        b.to_async(&rt)
            .iter(|| async { store.load(&session, Some(20)).await.unwrap().unwrap() })
    });
}

fn config() -> Criterion {
    if quick() {
        Criterion::default()
            .sample_size(10)
            .warm_up_time(Duration::from_millis(200))
            .measurement_time(Duration::from_secs(1))
    } else {
        Criterion::default()
    }
}

criterion_group! {
    name = benches;
    config = config();
    targets = append_one, append_10k_then_reload, load_last_20
}
criterion_main!(benches);
