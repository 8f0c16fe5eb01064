//! agentmem-redis beside raw redis-rs doing the same commands.
//!
//! - `append_one`: `RedisStore::append` of one message (one script: RPUSH + session meta +
//!   search index) vs one raw `RPUSH` of the same JSON.
//! - `append_batch_1000`: one `append` of 1,000 messages (one script call) vs one pipeline of
//!   1,000 raw `RPUSH` commands (one round trip).
//! - `load_last_20`: `load(session, Some(20))` on a big session (100,000 messages; 2,000 in
//!   quick mode) (MULTI: HMGET meta, LLEN, LRANGE -20 -1, then JSON parsing) vs one raw
//!   `LRANGE -20 -1`, as bytes (`raw_lrange`) and parsed into messages with `serde_json`
//!   (`raw_lrange+serde_json`, the same work).
//! - `load_all`: `load(session, None)` on the big session vs raw `LRANGE 0 -1` plus
//!   `serde_json` parsing of every element.
//! - `search_top10`: `search_messages` in the big session vs raw `LRANGE 0 -1`, parsing and
//!   ranking in the client with `agentmem_core::search::rank`.
//! - `compact`: `compact` of a 10,000-message session (2,000 in quick mode) into one summary
//!   vs raw `MULTI; RENAME list archive; RPUSH list summary; EXEC`. The store retires the
//!   session's index epoch; the retired postings are deleted by later writes, which the
//!   `append_after_compact` case times.
//!
//! Needs Redis at `REDIS_URL` (default `redis://127.0.0.1:6379`); skipped when unreachable.
//! `AGENTMEM_BENCH_QUICK=1` takes fewer, shorter samples. Keys go under a fresh prefix and
//! are deleted afterwards.
use std::hint::black_box;
use std::time::{Duration, Instant};

use agentmem_core::{Layered, Message, MessageQuery, SessionId, SessionStore};
use agentmem_redis::{RedisConfig, RedisStore};
use agentmem_testkit::bench::{self, big, compact_size, quick, quick_group};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use redis::aio::ConnectionManager;

fn messages(n: usize) -> Vec<Message> {
    (0..n)
        .map(|i| {
            Message::user(format!(
                "message {i}: what is the p99 latency of the checkout service in europe-west4?"
            ))
        })
        .collect()
}

struct Setup {
    store: Layered<RedisStore>,
    raw: ConnectionManager,
    prefix: String,
}

async fn setup() -> Option<Setup> {
    let url = agentmem_testkit::servers::redis_url();
    let prefix = agentmem_testkit::unique_namespace("bench");
    let config = RedisConfig::new(&url).ok()?.with_prefix(&prefix).ok()?;
    let store = match RedisStore::connect_with(config).await {
        Ok(store) => store,
        Err(e) => {
            eprintln!("SKIPPED: Redis at {url} is unavailable: {e}");
            return None;
        }
    };
    let client = redis::Client::open(url.as_str()).ok()?;
    let raw = client.get_connection_manager().await.ok()?;
    Some(Setup { store, raw, prefix })
}

async fn cleanup(setup: &Setup) {
    let mut conn = setup.raw.clone();
    // The prefix is a unique namespace of letters, digits and `_`: safe as a pattern.
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{}:*", setup.prefix))
        .query_async(&mut conn)
        .await
        .unwrap_or_default();
    for chunk in keys.chunks(500) {
        let _: redis::RedisResult<()> =
            redis::cmd("UNLINK").arg(chunk).query_async(&mut conn).await;
    }
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let Some(setup) = rt.block_on(setup()) else {
        return;
    };
    let session: SessionId = "bench_session".parse().unwrap();
    let raw_key = format!("{}:raw:msgs", setup.prefix);

    let mut group = c.benchmark_group("redis_append_one");
    quick_group(&mut group);
    let one = messages(1);
    let one_json = serde_json::to_string(&one[0]).unwrap();
    group.throughput(Throughput::Elements(1));
    group.bench_function("agentmem", |b| {
        b.to_async(&rt)
            .iter(|| async { setup.store.append(&session, black_box(&one)).await.unwrap() })
    });
    group.bench_function("raw_rpush", |b| {
        b.to_async(&rt).iter(|| async {
            let mut conn = setup.raw.clone();
            let _: i64 = redis::cmd("RPUSH")
                .arg(&raw_key)
                .arg(black_box(&one_json))
                .query_async(&mut conn)
                .await
                .unwrap();
        })
    });
    group.finish();

    let mut group = c.benchmark_group("redis_append_batch_1000");
    // A batch takes milliseconds: fewer samples keep the full run near a minute.
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(10));
    if quick() {
        group
            .sample_size(10)
            .measurement_time(Duration::from_secs(2))
            .warm_up_time(Duration::from_millis(300));
    }
    let batch = messages(1000);
    let batch_json: Vec<String> = batch
        .iter()
        .map(|m| serde_json::to_string(m).unwrap())
        .collect();
    group.throughput(Throughput::Elements(1000));
    let batch_session: SessionId = "bench_batch".parse().unwrap();
    group.bench_function("agentmem", |b| {
        b.to_async(&rt).iter(|| async {
            setup
                .store
                .append(&batch_session, black_box(&batch))
                .await
                .unwrap()
        })
    });
    let raw_batch_key = format!("{}:raw:batch", setup.prefix);
    group.bench_function("raw_pipelined_rpush", |b| {
        b.to_async(&rt).iter(|| async {
            let mut conn = setup.raw.clone();
            let mut pipe = redis::pipe();
            for json in &batch_json {
                pipe.cmd("RPUSH").arg(&raw_batch_key).arg(json).ignore();
            }
            let _: () = pipe.query_async(&mut conn).await.unwrap();
        })
    });
    group.finish();

    // The big session for the reads, written once, 1,000 messages at a time.
    let n = big();
    let read_session: SessionId = "bench_read".parse().unwrap();
    let raw_read_key = format!("{}:raw:read", setup.prefix);
    rt.block_on(async {
        let mut conn = setup.raw.clone();
        for start in (0..n).step_by(1_000) {
            let chunk = big_messages(start, (start + 1_000).min(n));
            setup.store.append(&read_session, &chunk).await.unwrap();
            let json: Vec<String> = chunk
                .iter()
                .map(|m| serde_json::to_string(m).unwrap())
                .collect();
            let _: i64 = redis::cmd("RPUSH")
                .arg(&raw_read_key)
                .arg(&json)
                .query_async(&mut conn)
                .await
                .unwrap();
        }
    });
    let mut group = c.benchmark_group(format!("redis_load_last_20_of_{n}"));
    quick_group(&mut group);
    bench::load(&mut group, &rt, &setup.store, &read_session, Some(20), 20);
    group.bench_function("raw_lrange", |b| {
        b.to_async(&rt)
            .iter(|| raw_lrange(&setup, &raw_read_key, -20, -1))
    });
    // The same work as the store's: the 20 messages parsed (as `load_all`'s baseline does).
    group.bench_function("raw_lrange+serde_json", |b| {
        b.to_async(&rt)
            .iter(|| async { parse(&raw_lrange(&setup, &raw_read_key, -20, -1).await) })
    });
    group.finish();

    big_reads(c, &rt, &setup, &read_session, &raw_read_key, n);
    compact(c, &rt, &setup);

    rt.block_on(cleanup(&setup));
}

/// Messages `start..end` of the big session: one in a hundred holds the search word.
fn big_messages(start: usize, end: usize) -> Vec<Message> {
    (start..end)
        .map(|i| {
            let needle = if i % 100 == 0 { " needle" } else { "" };
            Message::user(format!("message {i}: the p99 latency of checkout{needle}"))
        })
        .collect()
}

/// One raw `LRANGE key start stop`, the elements as bytes.
async fn raw_lrange(setup: &Setup, key: &str, start: isize, stop: isize) -> Vec<Vec<u8>> {
    let mut conn = setup.raw.clone();
    redis::cmd("LRANGE")
        .arg(key)
        .arg(start)
        .arg(stop)
        .query_async(&mut conn)
        .await
        .unwrap()
}

/// Messages as the store stores them (JSON), parsed.
fn parse(raw: &[Vec<u8>]) -> Vec<Message> {
    raw.iter()
        .map(|b| serde_json::from_slice(b).unwrap())
        .collect()
}

async fn raw_load_all(setup: &Setup, key: &str) -> Vec<Message> {
    parse(&raw_lrange(setup, key, 0, -1).await)
}

fn big_reads(
    c: &mut Criterion, rt: &tokio::runtime::Runtime, setup: &Setup, session: &SessionId,
    raw_key: &str, n: usize,
) {
    let mut group = c.benchmark_group(format!("redis_load_all_of_{n}"));
    group.sample_size(10);
    quick_group(&mut group);
    group.throughput(Throughput::Elements(n as u64));
    bench::load(&mut group, rt, &setup.store, session, None, n);
    group.bench_function("raw_lrange+serde_json", |b| {
        b.to_async(rt)
            .iter(|| async { assert_eq!(raw_load_all(setup, raw_key).await.len(), n) })
    });
    group.finish();

    let mut group = c.benchmark_group(format!("redis_search_top10_of_{n}"));
    group.sample_size(10);
    quick_group(&mut group);
    let scope = MessageQuery {
        session: Some(session.clone()),
        limit: 10,
    };
    bench::search(&mut group, rt, &setup.store, "needle", &scope, 10);
    group.bench_function("raw_lrange+serde_json+rank", |b| {
        b.to_async(rt).iter(|| async {
            let all = raw_load_all(setup, raw_key).await;
            let hits =
                agentmem_core::search::rank("needle", all.iter().map(|m| m.content.as_str()), 10);
            assert_eq!(hits.len(), 10);
        })
    });
    group.finish();
}

fn compact(c: &mut Criterion, rt: &tokio::runtime::Runtime, setup: &Setup) {
    let n = compact_size();
    let history = big_messages(0, n);
    let history_json: Vec<String> = history
        .iter()
        .map(|m| serde_json::to_string(m).unwrap())
        .collect();
    let summary = [Message::system("summary of the session so far")];
    let summary_json = serde_json::to_string(&summary[0]).unwrap();
    let session: SessionId = "bench_compact".parse().unwrap();
    let mut group = c.benchmark_group(format!("redis_compact_{n}"));
    group.sample_size(10);
    quick_group(&mut group);
    bench::compactions(
        &mut group,
        "agentmem",
        rt,
        &setup.store,
        &session,
        &history,
        &summary,
    );
    let live = format!("{}:raw:compact", setup.prefix);
    let archive = format!("{}:raw:compact_archive", setup.prefix);
    group.bench_function("raw_multi_rename_rpush", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                rt.block_on(async {
                    let mut conn = setup.raw.clone();
                    let _: () = redis::pipe()
                        .cmd("DEL")
                        .arg(&live)
                        .arg(&archive)
                        .ignore()
                        .cmd("RPUSH")
                        .arg(&live)
                        .arg(&history_json)
                        .ignore()
                        .query_async(&mut conn)
                        .await
                        .unwrap();
                });
                let start = Instant::now();
                rt.block_on(async {
                    let mut conn = setup.raw.clone();
                    let _: () = redis::pipe()
                        .atomic()
                        .cmd("RENAME")
                        .arg(&live)
                        .arg(&archive)
                        .ignore()
                        .cmd("RPUSH")
                        .arg(&live)
                        .arg(&summary_json)
                        .ignore()
                        .query_async(&mut conn)
                        .await
                        .unwrap();
                });
                total += start.elapsed();
            }
            total
        })
    });
    group.finish();

    // The deferred half of a compaction: appends of one message (6 words) that each delete
    // 64 + 6 retired postings of the archived messages (about 10,000 distinct words at full
    // size), the session compacted again (untimed) every 100 appends (20 quick) so that every timed
    // append has postings to delete.
    let mut group = c.benchmark_group(format!("redis_append_one_after_compact_{n}"));
    group.sample_size(10);
    quick_group(&mut group);
    let one = [Message::user("what is the p99 latency now?")];
    let recompact = || {
        rt.block_on(async {
            setup.store.delete_session(&session).await.unwrap();
            setup
                .store
                .save_session(&session, &history, &Default::default())
                .await
                .unwrap();
            setup.store.compact(&session, &summary).await.unwrap();
        })
    };
    group.bench_function("agentmem", |b| {
        b.iter_custom(|iters| {
            recompact();
            bench::timed_with_reset(
                iters,
                bench::quick_or(20, 100),
                || rt.block_on(setup.store.append(&session, &one)).unwrap(),
                recompact,
            )
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
