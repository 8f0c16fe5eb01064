//! What the backends' criterion benches share (feature `bench`): quick mode and sizes, the
//! runtime and criterion settings, the generated session, the agentmem side of the timings
//! every bench takes (loads, search, compaction, cost curves), and the peak-memory group.
//!
//! Each bench keeps its own baseline (the raw driver or std doing the same work); what is
//! here is only the part that is the same for every backend.
//!
//! `AGENTMEM_BENCH_QUICK=1` selects quick mode (for CI): smaller sessions and fewer, shorter
//! samples.

use std::path::Path;
use std::time::{Duration, Instant};

use agentmem_core::{AgentMemory, Message, MessageQuery, Metadata, SessionId};
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, Throughput};
use tokio::runtime::Runtime;

use crate::peak_memory;

/// Whether `AGENTMEM_BENCH_QUICK` asks for quick mode (set to anything but empty or `0`).
pub fn quick() -> bool {
    std::env::var("AGENTMEM_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// `quick` in quick mode, else `full`: a size, a list of sizes, a duration.
pub fn quick_or<T>(quick: T, full: T) -> T {
    if self::quick() {
        quick
    } else {
        full
    }
}

/// Messages in the big session the load and search cases read: 100,000 (2,000 quick).
pub fn big() -> usize {
    quick_or(2_000, 100_000)
}

/// Messages in the session a compaction case compacts: 10,000 (2,000 quick).
pub fn compact_size() -> usize {
    quick_or(2_000, 10_000)
}

/// Session sizes of the cost curves: 1k, 10k, 100k (1k and 10k quick).
pub fn curve_sizes() -> &'static [usize] {
    quick_or(&[1_000, 10_000], &[1_000, 10_000, 100_000])
}

/// The runtime the benches drive the stores on: multi-threaded, two workers.
pub fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime for the bench")
}

/// `full` in full mode; in quick mode, 10 samples after 300 ms of warm-up, each
/// measurement 1 s.
pub fn criterion(full: Criterion) -> Criterion {
    if quick() {
        full.sample_size(10)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1))
    } else {
        full
    }
}

/// In quick mode, gives `group` the quick settings of [`criterion()`]; else leaves it as it is.
pub fn quick_group(group: &mut BenchmarkGroup<'_, WallTime>) {
    if quick() {
        group
            .sample_size(10)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1));
    }
}

/// Message `i` of a generated session. One message in a hundred holds the word `needle`, so
/// a search of a 100,000-message session ranks 1,000 matches.
pub fn message(i: usize) -> Message {
    let needle = if i.is_multiple_of(100) { " needle" } else { "" };
    Message::user(format!(
        "message {i}: a turn of ordinary length about GCP latency and cost.{needle}"
    ))
}

/// Messages `0..n` of a generated session.
pub fn messages(n: usize) -> Vec<Message> {
    (0..n).map(message).collect()
}

/// Appends messages `0..n` to `session`, 1,000 at a time.
pub async fn fill(store: &dyn AgentMemory, session: &SessionId, n: usize) {
    for start in (0..n).step_by(1_000) {
        let batch: Vec<Message> = (start..(start + 1_000).min(n)).map(message).collect();
        store
            .append(session, &batch)
            .await
            .expect("fill the session");
    }
}

/// Times `iters` runs of `op`, running the untimed `reset` every `every` runs (and after the
/// last) so the session stays near its starting size: an append bench would otherwise grow it
/// by the number of iterations criterion picks, which skews a cost curve.
pub fn timed_with_reset(
    iters: u64, every: u64, mut op: impl FnMut(), mut reset: impl FnMut(),
) -> Duration {
    let mut total = Duration::ZERO;
    for i in 0..iters {
        if i > 0 && i % every == 0 {
            reset();
        }
        let start = Instant::now();
        op();
        total += start.elapsed();
    }
    reset();
    total
}

/// Benches `id`: appending `batch` to `session`, the session deleted (untimed) every 20
/// batches.
pub fn append_batches(
    group: &mut BenchmarkGroup<'_, WallTime>, id: &str, rt: &Runtime, store: &dyn AgentMemory,
    session: &SessionId, batch: &[Message],
) {
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            timed_with_reset(
                iters,
                20,
                || rt.block_on(store.append(session, batch)).expect("append"),
                || {
                    rt.block_on(store.delete_session(session))
                        .expect("delete the session");
                },
            )
        })
    });
}

/// Benches `"agentmem"`: loading the last `limit` messages of `session` (all of them for
/// `None`), which must come back `expected` long.
pub fn load(
    group: &mut BenchmarkGroup<'_, WallTime>, rt: &Runtime, store: &dyn AgentMemory,
    session: &SessionId, limit: Option<usize>, expected: usize,
) {
    group.bench_function("agentmem", |b| {
        b.to_async(rt).iter(|| async {
            let loaded = store.load(session, limit).await.expect("load");
            assert_eq!(loaded.map(|s| s.messages.len()), Some(expected));
        })
    });
}

/// Benches `"agentmem"`: searching messages for `query` within `scope`, which must find
/// `expected` hits.
pub fn search(
    group: &mut BenchmarkGroup<'_, WallTime>, rt: &Runtime, store: &dyn AgentMemory, query: &str,
    scope: &MessageQuery, expected: usize,
) {
    group.bench_function("agentmem", |b| {
        b.to_async(rt).iter(|| async {
            let hits = store.search_messages(query, scope).await.expect("search");
            assert_eq!(hits.len(), expected);
        })
    });
}

/// Benches `id`: compacting `session`, holding `history`, into `summary`. Before each run
/// the session is deleted and saved again, untimed, so no archives pile up.
pub fn compactions(
    group: &mut BenchmarkGroup<'_, WallTime>, id: &str, rt: &Runtime, store: &dyn AgentMemory,
    session: &SessionId, history: &[Message], summary: &[Message],
) {
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                rt.block_on(async {
                    store.delete_session(session).await.expect("delete");
                    store
                        .save_session(session, history, &Metadata::new())
                        .await
                        .expect("save the session");
                });
                let start = Instant::now();
                rt.block_on(store.compact(session, summary))
                    .expect("compact");
                total += start.elapsed();
            }
            total
        })
    });
}

/// The cost curves, at each of [`curve_sizes`]: `curve_append_one` (one append to a session
/// of that size, benched as `append_id`) and `curve_load_all` (loading it whole). `open`
/// makes a fresh store and what must outlive it (e.g. its temporary folder).
pub fn curves<K, S: AgentMemory>(
    c: &mut Criterion, rt: &Runtime, append_id: &str, mut open: impl FnMut() -> (K, S),
) {
    let m = message(0);
    let mut append = c.benchmark_group("curve_append_one");
    append.sample_size(10);
    let mut stores = Vec::new();
    for &n in curve_sizes() {
        let (kept, store) = open();
        let session = SessionId::new("curve").expect("a valid session id");
        rt.block_on(fill(&store, &session, n));
        // Every n/10 appends, switch to a fresh session grown to `n` by appends of 1,000
        // (untimed), so each measured append lands on a session of n to 1.1 n messages that
        // was built the way sessions grow. (Resetting with `save_session` instead would measure
        // the aftermath of a bulk rewrite, e.g. FTS5 merging its deletions.)
        let every = (n as u64 / 10).max(1);
        let mut since = every;
        let mut fresh = 0usize;
        let mut current = session.clone();
        append.bench_with_input(BenchmarkId::new(append_id, n), &n, |b, &n| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    if since == every {
                        fresh += 1;
                        current =
                            SessionId::new(format!("curve_{fresh}")).expect("a valid session id");
                        rt.block_on(fill(&store, &current, n));
                        since = 0;
                    }
                    let start = Instant::now();
                    rt.block_on(store.append(&current, std::slice::from_ref(&m)))
                        .expect("append");
                    total += start.elapsed();
                    since += 1;
                }
                total
            })
        });
        stores.push((n, kept, store, session));
    }
    append.finish();

    let mut load_all = c.benchmark_group("curve_load_all");
    load_all.sample_size(10);
    for (n, _kept, store, session) in &stores {
        load_all.throughput(Throughput::Elements(*n as u64));
        load_all.bench_with_input(BenchmarkId::new("agentmem", n), n, |b, &n| {
            b.to_async(rt).iter(|| async {
                let s = store.load(session, None).await.expect("load");
                assert_eq!(s.map(|s| s.messages.len()), Some(n));
            })
        });
    }
    load_all.finish();
}

/// The child side of the peak-memory group for the store: one whole load of `session`,
/// measured with [`peak_memory::peak_of`].
pub fn peak_of_load_all(
    rt: &Runtime, store: &dyn AgentMemory, session: &str,
) -> peak_memory::Measured {
    let session = SessionId::new(session).map_err(|e| e.to_string())?;
    peak_memory::peak_of(|| {
        rt.block_on(store.load(&session, None))
            .expect("load")
            .expect("the session exists")
            .messages
            .len()
    })
}

/// The group `peak_memory_load_all_of_{n}`, which measures memory, not time: when selected
/// (criterion calls the closure only then), it runs `measure(n)` once, which prints its
/// figures on stderr (see [`peak_memory::measure_in_children`]), then times an empty closure
/// so criterion has something.
pub fn peak_memory_group(c: &mut Criterion, n: usize, measure: impl FnOnce(usize)) {
    let mut group = c.benchmark_group(format!("peak_memory_load_all_of_{n}"));
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(10));
    group.measurement_time(Duration::from_millis(10));
    let mut measure = Some(measure);
    group.bench_function("printed_on_stderr", |b| {
        if let Some(measure) = measure.take() {
            measure(n);
        }
        b.iter(|| ())
    });
    group.finish();
}

/// A bench's `main` with a peak-memory group: in a measuring child, runs `child` (see
/// [`peak_memory::child_main`]) and returns; otherwise runs `benches` (a `criterion_group!`)
/// and criterion's summary.
pub fn main(child: impl FnOnce(&str, &Path) -> peak_memory::Measured, benches: impl FnOnce()) {
    if peak_memory::child_main(child) {
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
