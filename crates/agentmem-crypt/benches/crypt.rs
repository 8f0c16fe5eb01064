//! What the encryption layer costs, over core's in-memory store (so the timing is the layer's
//! work): an append, loading a session, a search (which decrypts every message it covers) and
//! a memory put, each plain, without a key (`NoKeyLayer`) and encrypted.
//!
//! `cargo bench -p agentmem-crypt --bench crypt`. With `AGENTMEM_BENCH_QUICK=1` criterion
//! takes fewer samples and the sessions are smaller (for CI).
use std::sync::Arc;

use agentmem_core::{
    AgentMemory, AgentMemoryExt, InMemoryStore, MemoryItem, MemoryKind, Message, MessageQuery,
    SessionId,
};
use agentmem_crypt::{EncryptLayer, MasterKey, NoKeyLayer};
use agentmem_testkit::bench::{append_batches, criterion, fill, quick_group, quick_or, runtime};
use criterion::{criterion_group, BenchmarkId, Criterion};

/// `no-key` is a plain store through `NoKeyLayer`, which reads the store's encryption marker
/// before each write: against `plain`, what that costs.
fn stores() -> [(&'static str, Arc<dyn AgentMemory>); 3] {
    let key = MasterKey::generate().unwrap();
    [
        ("plain", Arc::new(InMemoryStore::new())),
        (
            "no-key",
            Arc::new(InMemoryStore::new().with_layer(NoKeyLayer)),
        ),
        (
            "encrypted",
            Arc::new(InMemoryStore::new().with_layer(EncryptLayer::new(&key))),
        ),
    ]
}

fn crypt(c: &mut Criterion) {
    let rt = runtime();
    let session: SessionId = "bench".parse().unwrap();
    let one = [Message::user(
        "What did we decide about the schema migration?",
    )];
    let item = MemoryItem::new(MemoryKind::Fact, "The user prefers metric units")
        .with_metadata("importance", 3);
    // Ten sessions; one message in a hundred holds `needle`.
    let per_session = quick_or(200, 1_000);
    let sessions: Vec<SessionId> = (0..10).map(|i| format!("s{i}").parse().unwrap()).collect();

    let mut group = c.benchmark_group("crypt");
    quick_group(&mut group);
    for (name, store) in stores() {
        append_batches(
            &mut group,
            &format!("append_one/{name}"),
            &rt,
            &*store,
            &session,
            &one,
        );
        rt.block_on(async {
            for s in &sessions {
                fill(&*store, s, per_session).await;
            }
        });
        group.bench_function(BenchmarkId::new(format!("load_{per_session}"), name), |b| {
            b.to_async(&rt).iter(|| async {
                let loaded = store.load(&sessions[0], None).await.unwrap();
                assert_eq!(loaded.unwrap().messages.len(), per_session);
            })
        });
        let total = 10 * per_session;
        group.bench_function(BenchmarkId::new(format!("search_{total}"), name), |b| {
            b.to_async(&rt).iter(|| async {
                let hits = store
                    .search_messages("needle", &MessageQuery::default())
                    .await
                    .unwrap();
                assert_eq!(hits.len(), 10);
            })
        });
        group.bench_function(BenchmarkId::new("put_memory", name), |b| {
            b.to_async(&rt)
                .iter(|| async { store.put_memory(&item).await.unwrap() })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = criterion(Criterion::default());
    targets = crypt
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
