//! Append one message; append a batch of 20; load the last 20 of a long session.
//!
//! `cargo bench -p agentmem-mongodb --bench mongodb` against `MONGODB_URL` (default
//! `mongodb://127.0.0.1:27017/?directConnection=true`). With `AGENTMEM_BENCH_QUICK=1` the long
//! session holds 2,000 messages and criterion takes fewer samples (for CI). Each run uses a
//! fresh database and drops it at the end. Without a server the bench prints why and exits.
#![allow(missing_docs, clippy::unwrap_used)]

use std::time::Duration;

use agentmem_core::{AgentMemory, Message, SessionId};
use agentmem_mongodb::MongoMemory;
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

/// A store in a fresh database, or `None` (with the reason printed) when no server answers.
fn store(rt: &tokio::runtime::Runtime) -> Option<MongoMemory> {
    let url = std::env::var("MONGODB_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
        .unwrap_or_else(|| "mongodb://127.0.0.1:27017/?directConnection=true".to_string());
    let config = agentmem_mongodb::MongoConfig::new(&url)
        .unwrap()
        .with_database(agentmem_testkit::unique_namespace("bench"))
        .unwrap();
    match rt.block_on(MongoMemory::connect_with(config)) {
        Ok(store) => Some(store),
        Err(e) => {
            eprintln!(
                "SKIPPED: no MongoDB at {}: {e}",
                agentmem_testkit::redact_url(&url)
            );
            None
        }
    }
}

fn appends(c: &mut Criterion) {
    let rt = runtime();
    let Some(store) = store(&rt) else { return };
    let session = SessionId::new("bench").unwrap();
    let message = Message::user("A message of ordinary length about GCP latency and cost.");
    c.bench_function("append_one", |b| {
        b.to_async(&rt).iter(|| async {
            store
                .append(&session, std::slice::from_ref(&message))
                .await
                .unwrap();
        })
    });
    let batch: Vec<Message> = (0..20)
        .map(|i| Message::user(format!("batch message {i} about GCP latency and cost")))
        .collect();
    c.bench_function("append_batch_of_20", |b| {
        b.to_async(&rt).iter(|| async {
            store.append(&session, &batch).await.unwrap();
        })
    });
    rt.block_on(store.drop_database()).unwrap();
}

fn load_last_20(c: &mut Criterion) {
    let rt = runtime();
    let Some(store) = store(&rt) else { return };
    let size: usize = if quick() { 2_000 } else { 20_000 };
    let session = SessionId::new("big").unwrap();
    rt.block_on(async {
        for start in (0..size).step_by(500) {
            let batch: Vec<Message> = (start..(start + 500).min(size))
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
    rt.block_on(store.drop_database()).unwrap();
}

fn config() -> Criterion {
    let c = Criterion::default();
    if quick() {
        c.sample_size(10)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1))
    } else {
        c.sample_size(30).measurement_time(Duration::from_secs(5))
    }
}

criterion_group! {
    name = benches;
    config = config();
    targets = appends, load_last_20
}
criterion_main!(benches);
