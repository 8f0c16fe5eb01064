//! Search latency of recall at scale (issue 35's goal: query p50 ≤ 20 ms at 100,000 items on
//! the file and SQLite backends): keyword, semantic and hybrid search of memory items whose
//! vectors (384 dimensions, as all-MiniLM-L6-v2's) are all stored, with a query embedder that
//! costs nothing (so the figures are the store and the ranking, not the model; the model's
//! own cost is `cargo bench -p agentmem-embed --features local`).
//!
//! Every item holds the words of the query `deployment failed service 42`, so `keyword` and
//! `hybrid` rank all 100,000 by BM25 (the worst case); one item in 100 holds `rollback`, the
//! rare word of the query of `keyword-rare` and `hybrid-rare`.
//!
//! Semantic and hybrid search keep decoded vectors (and, on a store with a memory revision,
//! the items) in memory between searches (the default); `semantic-uncached` lists the items
//! and reads and decodes every candidate's vector each time.
//!
//! `cargo bench -p agentmem-recall --bench recall`: 100,000 items (1,000 with
//! `AGENTMEM_BENCH_QUICK=1`, as CI runs it).
//!
//! `append_with_indexer/{backend}`: appending one message to a session of 10,000 (1,000
//! quick) with no indexer, and with the background indexer running and nudged after every
//! append (embedding each new message, `embed=messages`); and one indexer round after one
//! append: the background round (`index_changes`) beside a whole one (`index`).
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agentmem_core::vector::{encode_vector, MAX_VECTOR_BATCH, MODEL_PROPERTY};
use agentmem_core::{
    async_trait, AgentMemory, AgentMemoryExt, Embedder, MemoryFilter, MemoryItem, MemoryKind,
    Message, ModelIdentity, PropertyChange, Result, SessionId, StoredVector,
};
use agentmem_recall::{vector_key, Recall, RecallOptions, SearchMode};
use agentmem_testkit::bench::{self, quick_or, runtime};
use criterion::{criterion_group, Criterion};

const DIMENSIONS: usize = 384;

/// A unit vector drawn from `seed` (a linear congruential generator: the same every run).
fn unit_vector(seed: u64) -> Vec<f32> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut v: Vec<f32> = (0..DIMENSIONS)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        })
        .collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

/// A model whose vectors cost nothing: a unit vector seeded by the text's length.
#[derive(Debug)]
struct Free(ModelIdentity);

#[async_trait]
impl Embedder for Free {
    fn model(&self) -> &ModelIdentity {
        &self.0
    }
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|t| unit_vector(t.len() as u64)).collect())
    }
}

/// `n` memory items with their vectors stored, and the model recorded.
async fn fill(store: &Arc<dyn AgentMemory>, embedder: &Free, n: usize) {
    let mut vectors = Vec::new();
    for i in 0..n {
        let rare = if i % 100 == 7 {
            " before the rollback"
        } else {
            ""
        };
        let text = format!(
            "note {i}: the deployment of service {} failed at step {}{rare}",
            i % 97,
            i % 13
        );
        store
            .put_memory(&MemoryItem::new(MemoryKind::Fact, &text))
            .await
            .unwrap();
        vectors.push(StoredVector {
            key: vector_key(&text),
            data: encode_vector(&unit_vector(i as u64)),
        });
        if vectors.len() == MAX_VECTOR_BATCH {
            store.put_vectors(&vectors).await.unwrap();
            vectors.clear();
        }
    }
    store.put_vectors(&vectors).await.unwrap();
    let model = embedder.0.to_property();
    store
        .set_store_property(&PropertyChange::insert(MODEL_PROPERTY, &model))
        .await
        .unwrap();
}

/// A fresh store of `backend` (`file` or `sqlite`) in `dir`.
async fn open(backend: &str, dir: &std::path::Path) -> Arc<dyn AgentMemory> {
    match backend {
        "file" => Arc::new(
            agentmem_file::FileStore::connect(&format!("file://{}", dir.display()))
                .await
                .unwrap(),
        ),
        _ => Arc::new(
            agentmem_sqlite::SqliteStore::connect(&format!(
                "sqlite://{}",
                dir.join("bench.db").display()
            ))
            .await
            .unwrap(),
        ),
    }
}

fn free() -> Free {
    Free(ModelIdentity {
        id: "free".into(),
        dimensions: DIMENSIONS,
        normalized: true,
    })
}

fn searches(c: &mut Criterion) {
    let rt = runtime();
    let n = quick_or(1_000, 100_000);
    for backend in ["file", "sqlite"] {
        let dir = tempfile::tempdir().unwrap();
        let store = rt.block_on(open(backend, dir.path()));
        let embedder = free();
        rt.block_on(fill(&store, &embedder, n));
        let embedder = Arc::new(embedder);
        let cached = Recall::new(
            Arc::clone(&store),
            embedder.clone(),
            RecallOptions::default(),
        );
        let uncached = Recall::new(
            Arc::clone(&store),
            embedder,
            RecallOptions::default().with_vector_cache_bytes(0),
        );
        let mut group = c.benchmark_group(format!("recall/{backend}/{n}"));
        bench::quick_group(&mut group);
        let (every, rare) = ("deployment failed service 42", "rollback of the release");
        let cases = [
            ("keyword", every, SearchMode::Keyword, &cached),
            ("semantic", every, SearchMode::Semantic, &cached),
            ("hybrid", every, SearchMode::Hybrid, &cached),
            ("semantic-uncached", every, SearchMode::Semantic, &uncached),
            ("keyword-rare", rare, SearchMode::Keyword, &cached),
            ("hybrid-rare", rare, SearchMode::Hybrid, &cached),
        ];
        for (name, query, mode, recall) in cases {
            group.bench_function(name, |b| {
                b.to_async(&rt).iter(|| async {
                    let hits = recall
                        .search_memories(query, &MemoryFilter::default(), mode)
                        .await
                        .unwrap();
                    assert_eq!(hits.len(), 10);
                })
            });
        }
        group.finish();
    }
}

fn appends_with_indexer(c: &mut Criterion) {
    let rt = runtime();
    let n = quick_or(1_000, 10_000);
    let session: SessionId = "chat".parse().unwrap();
    for backend in ["file", "sqlite"] {
        let dir = tempfile::tempdir().unwrap();
        let store = rt.block_on(open(backend, dir.path()));
        let history: Vec<Message> = (0..n)
            .map(|i| Message::user(format!("turn {i}: the deployment of service {}", i % 97)))
            .collect();
        rt.block_on(store.append(&session, &history)).unwrap();
        let options = RecallOptions::default().with_embed_messages(true);
        let recall = Recall::new(Arc::clone(&store), Arc::new(free()), options);
        rt.block_on(recall.index(&mut |_| {})).unwrap();
        let next = AtomicUsize::new(0);
        let append = || {
            let text = format!("new turn {}", next.fetch_add(1, Ordering::Relaxed));
            let (store, session) = (Arc::clone(&store), session.clone());
            async move {
                store
                    .append_one(&session, Message::user(text))
                    .await
                    .unwrap()
            }
        };
        let mut group = c.benchmark_group(format!("append_with_indexer/{backend}/{n}"));
        bench::quick_group(&mut group);
        group.bench_function("no-indexer", |b| b.to_async(&rt).iter(&append));
        {
            let _guard = rt.enter();
            let indexer = recall.spawn_indexer(Duration::from_secs(1));
            group.bench_function("indexer", |b| {
                b.to_async(&rt).iter(|| async {
                    append().await;
                    indexer.nudge();
                })
            });
            indexer.stop();
        }
        // What the stopped indexer left, so each round below has one append to embed.
        rt.block_on(recall.index_changes(&mut |_| {})).unwrap();
        group.bench_function("round-after-one-append/index_changes", |b| {
            b.to_async(&rt).iter(|| async {
                append().await;
                let report = recall.index_changes(&mut |_| {}).await.unwrap();
                assert!(report.embedded <= 1);
            })
        });
        group.bench_function("round-after-one-append/index", |b| {
            b.to_async(&rt).iter(|| async {
                append().await;
                recall.index(&mut |_| {}).await.unwrap();
            })
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = bench::criterion(Criterion::default());
    targets = searches, appends_with_indexer
}

criterion::criterion_main!(benches);
