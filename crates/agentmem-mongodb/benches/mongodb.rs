//! Each case beside the raw `mongodb` driver doing the same work on a plain collection in the
//! same database, indexed on (session, seq): append one message (`insert_one`, the seq counted
//! in the client), a batch of 20 and one of 1,000 (`insert_many`), load the last 20 of a long
//! session (`find` sorted newest first, limit 20), load the whole long session, search it,
//! and compact a session (10,000 messages; 1,000 in quick mode).
//!
//! `cargo bench -p agentmem-mongodb --bench mongodb` against `MONGODB_URL` (default
//! `mongodb://127.0.0.1:27017/?directConnection=true`). With `AGENTMEM_BENCH_QUICK=1` the long
//! session holds 2,000 messages and criterion takes fewer samples (for CI). Each run uses a
//! fresh database and drops it at the end. Without a server the bench prints why and exits.
use std::time::{Duration, Instant};

use agentmem_core::{
    Layered, Message, MessageId, MessageQuery, Metadata, Role, SessionId, SessionStore,
};
use agentmem_mongodb::MongoStore;
use agentmem_testkit::bench::{self, quick_or, runtime};
use criterion::{criterion_group, criterion_main, Criterion};
use futures_util::TryStreamExt;
use mongodb::bson::{doc, Document};

/// A store in a fresh database, or `None` (with the reason printed) when no server answers.
fn store(rt: &tokio::runtime::Runtime) -> Option<Layered<MongoStore>> {
    let url = agentmem_testkit::servers::mongodb_url();
    let config = agentmem_mongodb::MongoConfig::new(&url)
        .unwrap()
        .with_database(agentmem_testkit::unique_namespace("bench"))
        .unwrap();
    match rt.block_on(MongoStore::connect_with(config)) {
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
    let coll = raw_collection(&store);
    rt.block_on(raw_index(&coll));
    let session = SessionId::new("bench").unwrap();
    let message = Message::user("A message of ordinary length about GCP latency and cost.");
    // The raw side numbers its documents itself, as one process writing alone can.
    let seq = std::sync::atomic::AtomicI64::new(0);
    let next = |n: i64| seq.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    let mut group = c.benchmark_group("append_one");
    group.bench_function("agentmem", |b| {
        b.to_async(&rt).iter(|| async {
            store
                .append(&session, std::slice::from_ref(&message))
                .await
                .unwrap();
        })
    });
    group.bench_function("raw_insert_one", |b| {
        b.to_async(&rt).iter(|| async {
            coll.insert_one(raw_doc("one", next(1), &message))
                .await
                .unwrap();
        })
    });
    group.finish();
    let batch: Vec<Message> = (0..20)
        .map(|i| Message::user(format!("batch message {i} about GCP latency and cost")))
        .collect();
    let mut group = c.benchmark_group("append_batch_of_20");
    group.bench_function("agentmem", |b| {
        b.to_async(&rt).iter(|| async {
            store.append(&session, &batch).await.unwrap();
        })
    });
    group.bench_function("raw_insert_many", |b| {
        b.to_async(&rt).iter(|| async {
            raw_insert(&coll, "twenty", next(20), &batch).await;
        })
    });
    group.finish();
    rt.block_on(store.drop_database()).unwrap();
}

fn load_last_20(c: &mut Criterion) {
    let rt = runtime();
    let Some(store) = store(&rt) else { return };
    let coll = raw_collection(&store);
    rt.block_on(raw_index(&coll));
    let size: usize = quick_or(2_000, 20_000);
    let session = SessionId::new("big").unwrap();
    rt.block_on(fill_big(&store, &coll, &session, size, 500, |i| {
        Message::user(format!("message {i} of a long session about GCP latency"))
    }));
    let mut group = c.benchmark_group(format!("load_last_20_of_{size}"));
    group.bench_function("agentmem", |b| {
        b.to_async(&rt).iter(|| async {
            let s = store.load(&session, Some(20)).await.unwrap().unwrap();
            assert_eq!(s.messages.len(), 20);
        })
    });
    // The raw side: the last 20 by the (s, seq) index, newest first, decoded and reversed.
    group.bench_function("raw_find_limit", |b| {
        b.to_async(&rt).iter(|| async {
            let docs: Vec<Document> = coll
                .find(doc! {"s": "big"})
                .sort(doc! {"seq": -1})
                .limit(20)
                .await
                .unwrap()
                .try_collect()
                .await
                .unwrap();
            let mut messages: Vec<Message> = docs.iter().map(raw_message).collect();
            messages.reverse();
            assert_eq!(messages.len(), 20);
        })
    });
    group.finish();
    rt.block_on(store.drop_database()).unwrap();
}

/// The raw side's index, on (session, seq) as the store's.
async fn raw_index(coll: &mongodb::Collection<Document>) {
    coll.create_index(
        mongodb::IndexModel::builder()
            .keys(doc! {"s": 1, "seq": 1})
            .build(),
    )
    .await
    .unwrap();
}

/// The raw side's collection, in the store's database.
fn raw_collection(store: &MongoStore) -> mongodb::Collection<Document> {
    store
        .client()
        .database(store.database_name())
        .collection("raw_messages")
}

fn raw_doc(session: &str, seq: i64, m: &Message) -> Document {
    doc! {"s": session, "seq": seq, "id": m.id.as_str(), "role": "user", "content": &m.content,
    "ts": m.timestamp.timestamp_micros()}
}

/// Inserts `messages` as the raw session `session`'s, at positions `first` on.
async fn raw_insert(
    coll: &mongodb::Collection<Document>, session: &str, first: i64, messages: &[Message],
) {
    let docs: Vec<Document> = messages
        .iter()
        .enumerate()
        .map(|(i, m)| raw_doc(session, first + i as i64, m))
        .collect();
    coll.insert_many(docs).await.unwrap();
}

/// Writes messages `0..n` (message `i` made by `message(i)`) to both sides, `batch` at a
/// time: to the store's `session`, and to the raw session "big".
async fn fill_big(
    store: &Layered<MongoStore>, coll: &mongodb::Collection<Document>, session: &SessionId,
    n: usize, batch: usize, message: impl Fn(usize) -> Message,
) {
    for start in (0..n).step_by(batch) {
        let messages: Vec<Message> = (start..(start + batch).min(n)).map(&message).collect();
        store.append(session, &messages).await.unwrap();
        raw_insert(coll, "big", start as i64, &messages).await;
    }
}

async fn raw_load_all(coll: &mongodb::Collection<Document>, session: &str) -> Vec<Message> {
    let docs: Vec<Document> = coll
        .find(doc! {"s": session})
        .sort(doc! {"seq": 1})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    docs.iter().map(raw_message).collect()
}

fn raw_message(d: &Document) -> Message {
    Message {
        id: MessageId::new(d.get_str("id").unwrap().to_string()).expect("valid message id"),
        role: Role::User,
        content: d.get_str("content").unwrap().to_string(),
        timestamp: chrono::DateTime::from_timestamp_micros(d.get_i64("ts").unwrap())
            .unwrap_or_default(),
        tool_call_id: None,
        tool_name: None,
        metadata: Metadata::new(),
    }
}

/// One message in a hundred holds the search word.
fn needle_message(i: usize) -> Message {
    let needle = if i.is_multiple_of(100) { " needle" } else { "" };
    Message::user(format!(
        "message {i} of a long session about GCP latency{needle}"
    ))
}

fn with_baselines(c: &mut Criterion) {
    let rt = runtime();
    let Some(store) = store(&rt) else { return };
    let coll = raw_collection(&store);
    let batch: Vec<Message> = (0..1_000).map(needle_message).collect();

    let mut group = c.benchmark_group("append_batch_1000");
    group.sample_size(10);
    let session = SessionId::new("batch").unwrap();
    group.bench_function("agentmem", |b| {
        b.to_async(&rt)
            .iter(|| async { store.append(&session, &batch).await.unwrap() })
    });
    group.bench_function("raw_insert_many", |b| {
        b.to_async(&rt)
            .iter(|| async { raw_insert(&coll, "batch", 0, &batch).await })
    });
    group.finish();

    let n: usize = quick_or(2_000, 20_000);
    let big = SessionId::new("big").unwrap();
    rt.block_on(async {
        fill_big(&store, &coll, &big, n, 1_000, needle_message).await;
        raw_index(&coll).await;
    });

    let mut group = c.benchmark_group(format!("load_all_of_{n}"));
    group.sample_size(10);
    bench::load(&mut group, &rt, &store, &big, None, n);
    group.bench_function("raw_find", |b| {
        b.to_async(&rt)
            .iter(|| async { assert_eq!(raw_load_all(&coll, "big").await.len(), n) })
    });
    group.finish();

    let mut group = c.benchmark_group(format!("search_top10_of_{n}"));
    group.sample_size(10);
    let scope = MessageQuery {
        session: Some(big.clone()),
        limit: 10,
    };
    bench::search(&mut group, &rt, &store, "needle", &scope, 10);
    // The raw side fetches the session and ranks in the client.
    group.bench_function("raw_find+rank", |b| {
        b.to_async(&rt).iter(|| async {
            let all = raw_load_all(&coll, "big").await;
            let hits =
                agentmem_core::search::rank("needle", all.iter().map(|m| m.content.as_str()), 10);
            assert_eq!(hits.len(), 10);
        })
    });
    group.finish();

    let n: usize = quick_or(1_000, 10_000);
    let history: Vec<Message> = (0..n).map(needle_message).collect();
    let summary = [Message::system("summary of the session so far")];
    let session = SessionId::new("compacted").unwrap();
    let archive = store
        .client()
        .database(store.database_name())
        .collection::<Document>("raw_archived");
    let mut group = c.benchmark_group(format!("compact_{n}"));
    group.sample_size(10);
    bench::compactions(
        &mut group, "agentmem", &rt, &store, &session, &history, &summary,
    );
    // Raw: copy the live documents to an archive collection, delete them, insert the summary
    // (no transaction: the server may not support them).
    group.bench_function("raw_find+insert_many+delete_many", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                rt.block_on(async {
                    coll.delete_many(doc! {"s": "compacted"}).await.unwrap();
                    raw_insert(&coll, "compacted", 0, &history).await;
                });
                let start = Instant::now();
                rt.block_on(async {
                    let docs: Vec<Document> = coll
                        .find(doc! {"s": "compacted"})
                        .await
                        .unwrap()
                        .try_collect()
                        .await
                        .unwrap();
                    archive.insert_many(docs).await.unwrap();
                    coll.delete_many(doc! {"s": "compacted"}).await.unwrap();
                    raw_insert(&coll, "compacted", 0, &summary).await;
                });
                total += start.elapsed();
            }
            total
        })
    });
    group.finish();
    rt.block_on(store.drop_database()).unwrap();
}

fn config() -> Criterion {
    bench::criterion(
        Criterion::default()
            .sample_size(30)
            .measurement_time(Duration::from_secs(5)),
    )
}

criterion_group! {
    name = benches;
    config = config();
    targets = appends, load_last_20, with_baselines
}
criterion_main!(benches);
