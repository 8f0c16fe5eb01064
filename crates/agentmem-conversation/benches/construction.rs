//! Building a persistent [`Conversation`] on a long stored session (issue 20, item 4): the
//! build preloads the stored memory (the newest blocks that fit half the context length).
//! Timed at 1k / 10k / 100k stored messages, on the file backend and on SQLite
//! (`synchronous=normal`): the cost must not grow with the session.
//!
//! `cargo bench -p agentmem-conversation --bench construction`. With `AGENTMEM_BENCH_QUICK=1`
//! the sizes stop at 10k and criterion takes fewer samples (for CI, which also runs it once in
//! test mode: `cargo test --bench '*'`).
use std::sync::Arc;

use agentmem_conversation::Conversation;
use agentmem_core::{AgentMemory, AgentName, SessionId};
use agentmem_file::{Durability, FileConfig, FileStore};
use agentmem_sqlite::{SqliteConfig, SqliteStore, Synchronous};
use agentmem_testkit::bench::{self, curve_sizes, fill, runtime};
use agentmem_testkit::side_by_side;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use tokio::runtime::Runtime;

/// `conversation_build/{id}/{n}`: one build of agent `Bench_{n}`, whose session holds n
/// messages; the preload must hold some of them.
fn curve(c: &mut Criterion, rt: &Runtime, id: &str, store: Arc<dyn AgentMemory>) {
    let mut group = c.benchmark_group("conversation_build");
    group.sample_size(10);
    bench::quick_group(&mut group);
    for &n in curve_sizes() {
        let agent: AgentName = format!("Bench_{n}").parse().unwrap();
        rt.block_on(fill(&*store, &SessionId::from(agent.clone()), n));
        group.bench_with_input(BenchmarkId::new(id, n), &n, |b, _| {
            b.to_async(rt).iter(|| async {
                let convo = Conversation::builder(agent.clone())
                    .system_prompt("You are a research assistant.")
                    .persistent(true)
                    .store(store.clone())
                    .build()
                    .await
                    .unwrap();
                assert!(convo.preloaded().is_some_and(|p| p.kept > 0));
                convo
            })
        });
    }
    group.finish();
}

fn builds(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let file = rt
        .block_on(FileStore::connect_with(
            FileConfig::new(dir.path().join("file")).with_durability(Durability::Buffered),
        ))
        .unwrap();
    curve(c, &rt, "file", Arc::new(file));
    let sqlite = rt
        .block_on(SqliteStore::connect_with(
            SqliteConfig::file(dir.path().join("conversation.db"))
                .with_synchronous(Synchronous::Normal),
        ))
        .unwrap();
    curve(c, &rt, "sqlite/normal", Arc::new(sqlite));
}

criterion_group! {
    name = benches;
    config = side_by_side::local_criterion();
    targets = builds
}
criterion_main!(benches);
