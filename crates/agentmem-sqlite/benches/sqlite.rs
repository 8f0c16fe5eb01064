//! Append one message; load the last 20 of a 100,000-message session.
//!
//! `cargo bench -p agentmem-sqlite --bench sqlite`. With `AGENTMEM_BENCH_QUICK=1` the big
//! session holds 2,000 messages and criterion takes fewer samples (for CI).
#![allow(missing_docs, clippy::unwrap_used)]

use std::time::Duration;

use agentmem_core::{AgentMemory, Message, SessionId};
use agentmem_sqlite::{SqliteConfig, SqliteMemory, Synchronous};
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

async fn store(dir: &tempfile::TempDir, synchronous: Synchronous) -> SqliteMemory {
    let config = SqliteConfig::file(dir.path().join("bench.db")).with_synchronous(synchronous);
    SqliteMemory::open(config).await.unwrap()
}

fn append_one(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("append_one");
    for synchronous in [Synchronous::Full, Synchronous::Normal] {
        let dir = tempfile::tempdir().unwrap();
        let store = rt.block_on(store(&dir, synchronous));
        let session = SessionId::new("bench").unwrap();
        let message = Message::user("A message of ordinary length about GCP latency and cost.");
        group.bench_function(format!("synchronous={}", synchronous.as_str()), |b| {
            b.to_async(&rt).iter(|| async {
                store
                    .append(&session, std::slice::from_ref(&message))
                    .await
                    .unwrap();
            })
        });
    }
    group.finish();
}

fn load_last_20(c: &mut Criterion) {
    let rt = runtime();
    let size: usize = if quick() { 2_000 } else { 100_000 };
    let dir = tempfile::tempdir().unwrap();
    let store = rt.block_on(store(&dir, Synchronous::Normal));
    let session = SessionId::new("big").unwrap();
    rt.block_on(async {
        for start in (0..size).step_by(1_000) {
            let batch: Vec<Message> = (start..(start + 1_000).min(size))
                .map(|i| Message::user(format!("message {i} of a long session about GCP latency")))
                .collect();
            store.append(&session, &batch).await.unwrap();
        }
    });
    c.bench_function(&format!("load_last_20_of_{size}"), |b| {
        b.to_async(&rt).iter(|| async {
            let s = store.load(&session, Some(20)).await.unwrap().unwrap();
            assert_eq!(s.messages.len(), 20);
        })
    });
}

fn config() -> Criterion {
    let c = Criterion::default();
    if quick() {
        c.sample_size(10)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1))
    } else {
        c
    }
}

criterion_group! {
    name = benches;
    config = config();
    targets = append_one, load_last_20
}
criterion_main!(benches);
