//! Bench groups that time a backend beside a baseline doing the same work (feature `bench`):
//! the agentmem side is [`bench`](mod@crate::bench)'s, the baseline side comes from the bench (as
//! closures, or benched by the caller on the group returned), so each bench keeps only what is
//! its own.

use std::future::Future;
use std::time::{Duration, Instant};

use agentmem_core::{AgentMemory, Message, MessageQuery, SessionId};
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, Throughput};
use tokio::runtime::Runtime;

use crate::bench::{self, compact_size, fill, messages, runtime, timed_with_reset};
use crate::peak_memory;

/// The criterion settings of a bench on local storage: 1 s of warm-up, 3 s of measurement
/// (quick mode: see [`bench::criterion`]).
pub fn local_criterion() -> Criterion {
    bench::criterion(
        Criterion::default()
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(3)),
    )
}

/// The names of one case's two sides: the agentmem one, then the baseline's.
pub type Sides<'a> = [&'a str; 2];

/// Times `iters` runs of `op`, each after an untimed `setup`.
pub fn timed_after_setup(iters: u64, mut setup: impl FnMut(), mut op: impl FnMut()) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        setup();
        let start = Instant::now();
        op();
        total += start.elapsed();
    }
    total
}

/// One benchmark of the group `append_one` (the caller's, which benches the baseline beside
/// it): a single message appended to the session `bench` of `store`, timed as `name`.
pub fn append_one<S: AgentMemory>(
    group: &mut BenchmarkGroup<'_, WallTime>, rt: &Runtime, store: &S, name: String,
) {
    let (message, session) = (
        bench::message(0),
        SessionId::new("bench").expect("a valid session id"),
    );
    group.bench_function(name, |b| {
        b.to_async(rt).iter(|| async {
            store
                .append(&session, std::slice::from_ref(&message))
                .await
                .expect("append one message");
        })
    });
}

/// The group `append_batch_1000`: batches of 1,000 messages appended to the session `batch`
/// of `store`, beside `append_raw` of the same batch; every 20 batches each side is reset,
/// untimed (the session deleted, `reset_raw`).
pub fn append_batch_1000<S: AgentMemory>(
    c: &mut Criterion, rt: &Runtime, store: &S, [agentmem, raw]: Sides<'_>,
    mut append_raw: impl FnMut(&[Message]), mut reset_raw: impl FnMut(),
) {
    let mut group = c.benchmark_group("append_batch_1000");
    group.throughput(Throughput::Elements(1_000));
    group.sample_size(10);
    let batch = messages(1_000);
    let session = SessionId::new("batch").expect("a valid session id");
    bench::append_batches(&mut group, agentmem, rt, store, &session, &batch);
    group.bench_function(raw, |b| {
        b.iter_custom(|iters| timed_with_reset(iters, 20, || append_raw(&batch), &mut reset_raw))
    });
    group.finish();
}

/// The group `compact_{n}`: the session `compact` of `store`, holding [`compact_size()`]
/// messages, compacted into one summary, beside `compact_raw(summary)` after an untimed
/// `prepare_raw(history)` that gives the baseline the same history again.
pub fn compact<S: AgentMemory>(
    c: &mut Criterion, rt: &Runtime, store: &S, [agentmem, raw]: Sides<'_>,
    mut prepare_raw: impl FnMut(&[Message]), mut compact_raw: impl FnMut(&[Message]),
) {
    let n = compact_size();
    let history = messages(n);
    let summary = [Message::system("summary of the session so far")];
    let session = SessionId::new("compact").expect("a valid session id");
    let mut group = c.benchmark_group(format!("compact_{n}"));
    group.sample_size(10);
    bench::compactions(
        &mut group, agentmem, rt, store, &session, &history, &summary,
    );
    group.bench_function(raw, |b| {
        b.iter_custom(|iters| {
            timed_after_setup(iters, || prepare_raw(&history), || compact_raw(&summary))
        })
    });
    group.finish();
}

/// The subject of the read benches: a store whose session `big` holds `n` messages (see
/// [`big()`](crate::bench::big)), a needle in every hundred. Each bench method returns its group
/// with the agentmem side benched; the caller benches its baseline and finishes the group.
pub struct BigSession<'rt, S> {
    rt: &'rt Runtime,
    store: S,
    session: SessionId,
    n: usize,
}

impl<'rt, S: AgentMemory> BigSession<'rt, S> {
    /// The store `open` makes, with the session `big` filled with `n` messages.
    pub fn fill(rt: &'rt Runtime, n: usize, open: impl Future<Output = S>) -> Self {
        let store = rt.block_on(open);
        let session = SessionId::new("big").expect("a valid session id");
        rt.block_on(fill(&store, &session, n));
        BigSession {
            rt,
            store,
            session,
            n,
        }
    }

    /// The group `load_last_20_of_{n}`: loading the last 20 messages.
    pub fn load_last_20<'c>(&self, c: &'c mut Criterion) -> BenchmarkGroup<'c, WallTime> {
        let mut group = c.benchmark_group(format!("load_last_20_of_{}", self.n));
        bench::load(
            &mut group,
            self.rt,
            &self.store,
            &self.session,
            Some(20),
            20,
        );
        group
    }

    /// The group `load_all_of_{n}` (10 samples): loading the whole session.
    pub fn load_all<'c>(&self, c: &'c mut Criterion) -> BenchmarkGroup<'c, WallTime> {
        let mut group = c.benchmark_group(format!("load_all_of_{}", self.n));
        group.sample_size(10);
        bench::load(
            &mut group,
            self.rt,
            &self.store,
            &self.session,
            None,
            self.n,
        );
        group
    }

    /// The group `search_top10_of_{n}`: the 10 best messages for `needle`.
    pub fn search_top10<'c>(&self, c: &'c mut Criterion) -> BenchmarkGroup<'c, WallTime> {
        let mut group = c.benchmark_group(format!("search_top10_of_{}", self.n));
        let scope = MessageQuery {
            session: Some(self.session.clone()),
            limit: 10,
        };
        bench::search(&mut group, self.rt, &self.store, "needle", &scope, 10);
        group
    }
}

/// The child side of the peak-memory group for the store `open` makes: one whole load of the
/// session `big`, measured (see [`bench::peak_of_load_all`]).
pub fn peak_of_big_load<S: AgentMemory>(open: impl Future<Output = S>) -> peak_memory::Measured {
    let rt = runtime();
    let store = rt.block_on(open);
    bench::peak_of_load_all(&rt, &store, "big")
}

/// The parent side of the peak-memory group: the session `big` of `n` messages written into
/// the store `open` makes, which is then closed for [`peak_of_big_load`] to load in a fresh
/// process.
pub fn write_big_session<S: AgentMemory>(n: usize, open: impl Future<Output = S>) {
    drop(BigSession::fill(&runtime(), n, open));
}
