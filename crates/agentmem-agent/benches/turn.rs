//! One agent turn on a long session (issue 20, item 4): a fresh [`Agent`] (as a new process
//! builds it) with history and auto-save on one session injects the history for a user
//! message ([`Agent::context_for_turn`]), then saves the turn ([`Agent::after_turn`]: the
//! user message and the reply are new, the injected history is already stored). Timed at
//! 1k / 10k / 100k stored messages, on the file backend (`durability=buffered`) and on SQLite
//! (`synchronous=normal`): the cost must not grow with the session.
//!
//! `cargo bench -p agentmem-agent --bench turn`. With `AGENTMEM_BENCH_QUICK=1` the sizes stop
//! at 10k and criterion takes fewer samples (for CI, which also runs it once in test mode:
//! `cargo test --bench '*'`).
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentmem_agent::{Agent, AgentConfig};
use agentmem_core::{AgentMemory, Message, SessionId};
use agentmem_file::{Durability, FileConfig, FileStore};
use agentmem_sqlite::{SqliteConfig, SqliteStore, Synchronous};
use agentmem_testkit::bench::{self, curve_sizes, fill, runtime};
use agentmem_testkit::side_by_side;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use tokio::runtime::Runtime;

/// One turn of a fresh agent on `session`: inject, answer, save. Returns how many messages
/// the save stored, which must be the two of the turn.
async fn turn(store: &Arc<dyn AgentMemory>, session: &SessionId, i: usize) -> usize {
    let config = AgentConfig::default()
        .with_session_id(session.as_str())
        .with_history(true)
        .with_auto_save(session.as_str());
    let agent = Agent::new(config, store.clone(), Some("bench")).unwrap();
    let user = [Message::user(format!(
        "turn {i}: what did we say about latency?"
    ))];
    let context = agent.context_for_turn(&user).await.unwrap();
    let mut conversation = context.messages("You are terse.", &user);
    conversation.push(Message::assistant("That it is under a millisecond."));
    agent.after_turn(&conversation).await.unwrap().saved
}

/// `agent_turn/{id}/{n}` at each size: every n/10 turns (untimed) the turns move to a fresh
/// session filled to n, so each timed turn meets a session of n to 1.2 n messages.
fn curve(c: &mut Criterion, rt: &Runtime, id: &str, store: Arc<dyn AgentMemory>) {
    let mut group = c.benchmark_group("agent_turn");
    group.sample_size(10);
    bench::quick_group(&mut group);
    for &n in curve_sizes() {
        let every = (n / 10).max(1);
        let mut since = every;
        let mut fresh = 0usize;
        let mut session = SessionId::new("unused").unwrap();
        group.bench_with_input(BenchmarkId::new(id, n), &n, |b, &n| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for i in 0..iters as usize {
                    if since == every {
                        fresh += 1;
                        session = SessionId::new(format!("turn_{n}_{fresh}")).unwrap();
                        rt.block_on(fill(&*store, &session, n));
                        since = 0;
                    }
                    let start = Instant::now();
                    let saved = rt.block_on(turn(&store, &session, i));
                    total += start.elapsed();
                    assert_eq!(saved, 2, "the turn's two messages, nothing injected");
                    since += 1;
                }
                total
            })
        });
    }
    group.finish();
}

fn turns(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let file = rt
        .block_on(FileStore::connect_with(
            FileConfig::new(dir.path().join("file")).with_durability(Durability::Buffered),
        ))
        .unwrap();
    curve(c, &rt, "file/buffered", Arc::new(file));
    let sqlite = rt
        .block_on(SqliteStore::connect_with(
            SqliteConfig::file(dir.path().join("agent.db")).with_synchronous(Synchronous::Normal),
        ))
        .unwrap();
    curve(c, &rt, "sqlite/normal", Arc::new(sqlite));
}

criterion_group! {
    name = benches;
    config = side_by_side::local_criterion();
    targets = turns
}
criterion_main!(benches);
