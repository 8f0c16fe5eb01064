//! PostgresStore beside raw tokio-postgres running the same statements on the same tables:
//! single append, batch append (1,000), last-20 load and whole load of a 100,000-message
//! session, search for a word in 1% of the messages and for words in all of them, and
//! compacting a 10,000-message session (2,000 in quick mode).
//!
//! ```text
//! cargo bench -p agentmem-postgres --bench postgres
//! AGENTMEM_BENCH_QUICK=1 cargo bench -p agentmem-postgres --bench postgres   # 10,000 messages, short runs
//! ```
//!
//! Reads `DATABASE_URL` (default `postgres://postgres@127.0.0.1:5432/test`), works in a
//! schema of its own and drops it at the end. The raw side uses one connection and
//! statements prepared up front, with parameters built outside the timed loop: it is the
//! floor that the store's pool checkout, validation, tsvector building and decoding sit on.
//! Search is the exception: the raw side ranks by `ts_rank` alone, the store's statement
//! before it weighed terms by inverse document frequency, so the two show what that costs.
//! Both sides use plain TCP (the store gets `sslmode=disable` unless `DATABASE_URL` names a
//! mode): with the default `prefer` the store would pay for TLS the raw side does not.

use std::time::Duration;

use agentmem_core::{
    AgentMemoryExt, Layered, Message, MessageQuery, Metadata, SessionId, SessionStore,
};
use agentmem_postgres::PostgresStore;
use agentmem_testkit::bench::{self, compact_size, quick_or, runtime};
use chrono::{DateTime, Utc};
use criterion::Criterion;
use tokio::runtime::Runtime;
use tokio_postgres::types::Json;
use tokio_postgres::{Client, Statement};

const BATCH: usize = 1_000;

fn big_session_size() -> usize {
    quick_or(10_000, 100_000)
}

fn sid(name: &str) -> SessionId {
    SessionId::new(name).expect("valid bench session id")
}

/// The words of the big session: every message names one of 100 topics, so a search for
/// one topic matches 1% of the session.
fn big_message(i: usize) -> Message {
    Message::user(format!(
        "message {i} about topic{} with a few ordinary filler words to index",
        i % 100
    ))
}

fn filler(i: usize) -> Message {
    Message::assistant(format!("reply {i} with ordinary filler words"))
}

/// The tsvector text agentmem writes for `filler(i)`: the words' stems.
fn filler_tsv(i: usize) -> String {
    format!("'repli':1 '{i}':2 'with':3 'ordinari':4 'filler':5 'word':6")
}

/// Column arrays for the raw append statement.
struct RawBatch {
    ids: Vec<String>,
    roles: Vec<&'static str>,
    contents: Vec<String>,
    raws: Vec<Option<Vec<u8>>>,
    timestamps: Vec<DateTime<Utc>>,
    tool_call_ids: Vec<Option<String>>,
    tool_names: Vec<Option<String>>,
    metadata: Vec<Option<Json<Metadata>>>,
    tsvs: Vec<String>,
}

impl RawBatch {
    fn new(n: usize) -> Self {
        let messages: Vec<Message> = (0..n).map(filler).collect();
        RawBatch {
            ids: messages.iter().map(|m| m.id.to_string()).collect(),
            roles: vec!["assistant"; n],
            contents: messages.iter().map(|m| m.content.clone()).collect(),
            raws: vec![None; n],
            timestamps: messages.iter().map(|m| m.timestamp).collect(),
            tool_call_ids: vec![None; n],
            tool_names: vec![None; n],
            metadata: (0..n).map(|_| None).collect(),
            tsvs: (0..n).map(filler_tsv).collect(),
        }
    }

    async fn append(&self, raw: &Client, st: &Statement, session: &str) {
        let n = self.ids.len() as i64;
        raw.execute(
            st,
            &[
                &session,
                &agentmem_core::now(),
                &n,
                &self.ids,
                &self.roles,
                &self.contents,
                &self.raws,
                &self.timestamps,
                &self.tool_call_ids,
                &self.tool_names,
                &self.metadata,
                &self.tsvs,
            ],
        )
        .await
        .expect("raw append");
    }
}

/// A message row as the raw side decodes it: the same columns the store reads.
type RawMessage = (
    String,
    String,
    String,
    Option<Vec<u8>>,
    DateTime<Utc>,
    Option<String>,
    Option<String>,
    Option<Json<Metadata>>,
);

fn decode(row: &tokio_postgres::Row, start: usize) -> RawMessage {
    (
        row.get(start),
        row.get(start + 1),
        row.get(start + 2),
        row.get(start + 3),
        row.get(start + 4),
        row.get(start + 5),
        row.get(start + 6),
        row.get(start + 7),
    )
}

struct Raw {
    client: Client,
    append: Statement,
    load: Statement,
    search: Statement,
    archive: Statement,
}

impl Raw {
    /// The store's load statement: the last `limit` messages of `session`, decoded.
    async fn load_last(&self, session: &str, limit: i64) -> Vec<RawMessage> {
        let rows = self
            .client
            .query(&self.load, &[&session, &limit])
            .await
            .expect("raw load");
        rows.iter().map(|r| decode(r, 5)).collect()
    }
}

/// The store's statements, written out again for the raw client.
async fn prepare_raw(url: &str, schema: &str) -> Raw {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("raw connection");
    tokio::spawn(connection);
    let s = format!("\"{schema}\"");
    let append = format!(
        "WITH s AS (
            INSERT INTO {s}.sessions AS s (id, metadata, created_at, updated_at, next_seq, message_count)
            VALUES ($1, '{{}}', $2, $2, $3, $3)
            ON CONFLICT (id) DO UPDATE SET
                next_seq = s.next_seq + EXCLUDED.next_seq,
                message_count = s.message_count + EXCLUDED.message_count,
                updated_at = GREATEST(s.updated_at, EXCLUDED.updated_at)
            RETURNING s.next_seq - $3 AS first_seq
        )
        INSERT INTO {s}.messages
            (session_id, seq, id, role, content, content_raw, ts, tool_call_id, tool_name, metadata, tsv)
        SELECT $1, s.first_seq + m.ord - 1, m.id, m.role, m.content, m.content_raw, m.ts,
               m.tool_call_id, m.tool_name, m.metadata, m.tsv::tsvector
        FROM s, unnest($4::text[], $5::text[], $6::text[], $7::bytea[], $8::timestamptz[],
                       $9::text[], $10::text[], $11::json[], $12::text[])
             WITH ORDINALITY AS m(id, role, content, content_raw, ts, tool_call_id, tool_name, metadata, tsv, ord)"
    );
    let cols = "id, role, content, content_raw, ts, tool_call_id, tool_name, metadata";
    let load = format!(
        "SELECT s.metadata, s.created_at, s.updated_at, s.message_count, m.seq,
                m.id, m.role, m.content, m.content_raw, m.ts, m.tool_call_id, m.tool_name, m.metadata
         FROM {s}.sessions s
         LEFT JOIN LATERAL (
             SELECT seq, {cols} FROM {s}.messages
             WHERE session_id = $1 ORDER BY seq DESC LIMIT $2
         ) m ON true
         WHERE s.id = $1"
    );
    // The store's search statement before inverse document frequency: `ts_rank` alone.
    let m_cols = cols
        .split(", ")
        .map(|c| format!("m.{c}"))
        .collect::<Vec<_>>()
        .join(", ");
    let search = format!(
        "SELECT m.session_id, {m_cols}, ts_rank(m.tsv, q, 1)::float8 AS score
         FROM {s}.messages m
         JOIN {s}.sessions s ON s.id = m.session_id,
         CAST($1::text AS tsquery) AS q
         WHERE m.tsv @@ q AND (s.expires_at IS NULL OR s.expires_at > $3)
         ORDER BY score DESC, m.session_id, m.seq
         LIMIT $2"
    );
    // The store's `compact`: move the live rows into an archive, in one statement.
    let archive = format!(
        "WITH moved AS (
            DELETE FROM {s}.messages WHERE session_id = $1
            RETURNING seq, {cols}
        ), kept AS (
            INSERT INTO {s}.archived_messages (session_id, archive_id, seq, {cols})
            SELECT $1, $2, seq, {cols} FROM moved
            RETURNING 1
        )
        INSERT INTO {s}.archives (session_id, id, created_at, message_count)
        SELECT $1, $2, $3, count(*) FROM kept
        RETURNING message_count"
    );
    Raw {
        archive: client.prepare(&archive).await.expect("prepare archive"),
        append: client.prepare(&append).await.expect("prepare append"),
        load: client.prepare(&load).await.expect("prepare load"),
        search: client.prepare(&search).await.expect("prepare search"),
        client,
    }
}

fn main() {
    let rt = runtime();
    let base = agentmem_testkit::servers::postgres_url();
    let schema = format!("ambench_{}", std::process::id());
    let sep = if base.contains('?') { '&' } else { '?' };
    // The raw side connects without TLS; unless the URL names a mode, so does the store
    // (its default, `prefer`, would encrypt where the raw side does not).
    let tls = if base.contains("sslmode=") {
        ""
    } else {
        "&sslmode=disable"
    };
    let url = format!("{base}{sep}schema={schema}&pool_size=4{tls}");
    let store = match rt.block_on(PostgresStore::connect(&url)) {
        Ok(store) => store,
        Err(e) => {
            eprintln!("SKIPPED: PostgreSQL at DATABASE_URL is unavailable: {e}");
            return;
        }
    };
    let raw = rt.block_on(prepare_raw(&base, &schema));

    let n = big_session_size();
    eprintln!("filling a {n}-message session …");
    rt.block_on(async {
        for start in (0..n).step_by(BATCH) {
            let batch: Vec<Message> = (start..(start + BATCH).min(n)).map(big_message).collect();
            store.append(&sid("big"), &batch).await.expect("fill");
        }
        raw.client
            .batch_execute(&format!("ANALYZE \"{schema}\".messages"))
            .await
            .expect("analyze");
    });

    let mut c = bench::criterion(Criterion::default().configure_from_args());
    bench_appends(&mut c, &rt, &store, &raw);
    bench_reads(&mut c, &rt, &store, &raw, n);
    bench_compact(&mut c, &rt, &store, &raw);
    c.final_summary();

    rt.block_on(store.drop_schema()).expect("drop bench schema");
}

fn bench_appends(c: &mut Criterion, rt: &Runtime, store: &Layered<PostgresStore>, raw: &Raw) {
    let mut group = c.benchmark_group("append_single");
    let single = sid("single");
    let mut i = 0usize;
    group.bench_function("agentmem", |b| {
        b.to_async(rt).iter(|| {
            i += 1;
            let m = filler(i);
            let single = &single;
            async move { store.append_one(single, m).await.expect("append") }
        })
    });
    let one = RawBatch::new(1);
    group.bench_function("raw_tokio_postgres", |b| {
        b.to_async(rt)
            .iter(|| one.append(&raw.client, &raw.append, "raw_single"))
    });
    group.finish();

    let mut group = c.benchmark_group("append_batch_1000");
    let batch: Vec<Message> = (0..BATCH).map(filler).collect();
    let batched = sid("batched");
    group.bench_function("agentmem", |b| {
        b.to_async(rt)
            .iter(|| async { store.append(&batched, &batch).await.expect("append batch") })
    });
    let columns = RawBatch::new(BATCH);
    group.bench_function("raw_tokio_postgres", |b| {
        b.to_async(rt)
            .iter(|| columns.append(&raw.client, &raw.append, "raw_batched"))
    });
    group.finish();
}

fn bench_reads(
    c: &mut Criterion, rt: &Runtime, store: &Layered<PostgresStore>, raw: &Raw, n: usize,
) {
    let big = sid("big");
    let mut group = c.benchmark_group(format!("load_last_20_of_{n}"));
    bench::load(&mut group, rt, store, &big, Some(20), 20);
    group.bench_function("raw_tokio_postgres", |b| {
        b.to_async(rt)
            .iter(|| async { assert_eq!(raw.load_last("big", 20).await.len(), 20) })
    });
    group.finish();

    let mut group = c.benchmark_group(format!("load_all_of_{n}"));
    group.sample_size(10);
    bench::load(&mut group, rt, store, &big, None, n);
    // The store's load statement with the limit set to the whole session.
    group.bench_function("raw_tokio_postgres", |b| {
        b.to_async(rt)
            .iter(|| async { assert_eq!(raw.load_last("big", n as i64).await.len(), n) })
    });
    group.finish();

    // A word in 1% of the messages, then one in 1% with two in all of them (the search of
    // the whole session, where the weights of common words count most).
    for (name, query, tsquery) in [
        ("search_top10", "Topic7", "'topic7'"),
        (
            "search_common_top10",
            "filler words about Topic7",
            "'filler' | 'word' | 'topic7'",
        ),
    ] {
        let mut group = c.benchmark_group(format!("{name}_of_{n}"));
        let scope = MessageQuery {
            session: None,
            limit: 10,
        };
        bench::search(&mut group, rt, store, query, &scope, 10);
        group.bench_function("raw_tokio_postgres", |b| {
            b.to_async(rt).iter(|| async {
                let rows = raw
                    .client
                    .query(&raw.search, &[&tsquery, &10i64, &agentmem_core::now()])
                    .await
                    .expect("raw search");
                let hits: Vec<(String, RawMessage, f64)> = rows
                    .iter()
                    .map(|r| (r.get(0), decode(r, 1), r.get(9)))
                    .collect();
                assert_eq!(hits.len(), 10);
            })
        });
        group.finish();
    }
}

/// Compacting a session of `compact_size()` messages into one summary. The session is rebuilt
/// (untimed) before each run; the raw side runs the store's archive statement and the append
/// of the summary in one transaction.
fn bench_compact(c: &mut Criterion, rt: &Runtime, store: &Layered<PostgresStore>, raw: &Raw) {
    let n = compact_size();
    let history: Vec<Message> = (0..n).map(filler).collect();
    let summary = [Message::system("summary of the session so far")];
    let session = sid("compacted");
    let mut group = c.benchmark_group(format!("compact_{n}"));
    group.sample_size(10);
    bench::compactions(
        &mut group, "agentmem", rt, store, &session, &history, &summary,
    );
    let columns = RawBatch::new(n);
    let one = RawBatch::new(1);
    let mut round = 0u64;
    group.bench_function("raw_tokio_postgres", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                round += 1;
                let archive_id = format!("bench-{round}");
                rt.block_on(columns.append(&raw.client, &raw.append, "raw_compacted"));
                let start = std::time::Instant::now();
                rt.block_on(async {
                    raw.client.batch_execute("BEGIN").await.expect("begin");
                    raw.client
                        .query_one(
                            &raw.archive,
                            &[&"raw_compacted", &archive_id, &agentmem_core::now()],
                        )
                        .await
                        .expect("raw archive");
                    one.append(&raw.client, &raw.append, "raw_compacted").await;
                    raw.client.batch_execute("COMMIT").await.expect("commit");
                });
                total += start.elapsed();
            }
            total
        })
    });
    group.finish();
}
