//! The SQLite backend beside plain rusqlite doing the same work in the same run (issue 12):
//! append one message (`synchronous` full and normal), append a batch of 1,000, load the last
//! 20 of a big session, load the whole big session, search it (FTS5), compact a session; and
//! the cost curves (append latency and whole-session load at 1k / 10k / 100k messages).
//!
//! The baseline (`raw_rusqlite`) is one connection on its own database file in WAL mode with
//! the same `synchronous`, a messages table keyed by `(session, seq)` with an external-content
//! FTS5 index kept by a trigger (as the backend's schema), and cached prepared statements. It
//! keeps no session row, no message count and no archive table, and it decodes rows into
//! `Message` the short way: that is the work the ratios put a price on.
//!
//! `cargo bench -p agentmem-sqlite --bench sqlite`: the big session holds 100,000 messages,
//! the compacted one 10,000. With `AGENTMEM_BENCH_QUICK=1` both hold 2,000, the curves stop at
//! 10,000 and criterion takes fewer samples (for CI).
//!
//! `peak_memory_load_all_of_<n>` measures memory, not time: it loads the big session whole
//! once in a fresh process (this binary started again, see [`memory_child`]) and prints, on
//! stderr, how far the resident set grew above what it was before the load (Linux: the peak is
//! reset by writing `5` to `/proc/self/clear_refs` and read from `VmHWM` in
//! `/proc/self/status`); the same for the raw rusqlite baseline and for `std::fs::read` plus
//! serde_json of the same messages as JSON lines. Its criterion timing is of an empty closure
//! and means nothing.
#![allow(missing_docs, clippy::unwrap_used)]

use agentmem_testkit::peak_memory;
use std::path::Path;
use std::time::{Duration, Instant};

use agentmem_core::{AgentMemory, Layered, Message, MessageQuery, Metadata, Role, SessionId};
use agentmem_sqlite::{SqliteConfig, SqliteMemory, Synchronous};
use criterion::{criterion_group, BenchmarkId, Criterion, Throughput};
use rusqlite::{params, Connection};
use tokio::runtime::Runtime;

fn quick() -> bool {
    std::env::var("AGENTMEM_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Messages in the big session (load and search cases).
fn big() -> usize {
    if quick() {
        2_000
    } else {
        100_000
    }
}

/// Messages in the session that is compacted.
fn compact_size() -> usize {
    if quick() {
        2_000
    } else {
        10_000
    }
}

fn curve_sizes() -> &'static [usize] {
    if quick() {
        &[1_000, 10_000]
    } else {
        &[1_000, 10_000, 100_000]
    }
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

async fn store(dir: &Path, synchronous: Synchronous) -> Layered<SqliteMemory> {
    let config = SqliteConfig::file(dir.join("bench.db")).with_synchronous(synchronous);
    SqliteMemory::connect_with(config).await.unwrap()
}

/// One message in a hundred holds the search word, so a search of the big session ranks
/// 1,000 matches among 100,000 messages.
fn message(i: usize) -> Message {
    let needle = if i.is_multiple_of(100) { " needle" } else { "" };
    Message::user(format!(
        "message {i}: a turn of ordinary length about GCP latency and cost.{needle}"
    ))
}

fn messages(n: usize) -> Vec<Message> {
    (0..n).map(message).collect()
}

async fn fill(store: &Layered<SqliteMemory>, session: &SessionId, n: usize) {
    for start in (0..n).step_by(1_000) {
        let batch: Vec<Message> = (start..(start + 1_000).min(n)).map(message).collect();
        store.append(session, &batch).await.unwrap();
    }
}

/// The baseline: plain rusqlite on a table shaped like the backend's.
struct Raw {
    conn: Connection,
    next_seq: i64,
}

const RAW_SCHEMA: &str = r#"
CREATE TABLE raw_messages (
    id INTEGER PRIMARY KEY,
    session TEXT NOT NULL,
    archive INTEGER,
    seq INTEGER NOT NULL,
    message_id TEXT NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    timestamp INTEGER NOT NULL,
    UNIQUE (session, seq)
);
CREATE VIRTUAL TABLE raw_fts USING fts5 (
    content, content = 'raw_messages', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 0'
);
CREATE TRIGGER raw_fts_insert AFTER INSERT ON raw_messages BEGIN
    INSERT INTO raw_fts (rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER raw_fts_delete AFTER DELETE ON raw_messages BEGIN
    INSERT INTO raw_fts (raw_fts, rowid, content) VALUES ('delete', old.id, old.content);
END;
"#;

const RAW_INSERT: &str = "INSERT INTO raw_messages (session, seq, message_id, role, content, \
     timestamp) VALUES (?1, ?2, ?3, 'user', ?4, ?5)";
const RAW_SELECT_LAST: &str = "SELECT message_id, content, timestamp FROM raw_messages \
     WHERE session = ?1 AND archive IS NULL ORDER BY seq DESC LIMIT ?2";
const RAW_SELECT_ALL: &str = "SELECT message_id, content, timestamp FROM raw_messages \
     WHERE session = ?1 AND archive IS NULL ORDER BY seq";
const RAW_SEARCH: &str = "SELECT m.message_id, m.content, m.timestamp FROM raw_fts \
     JOIN raw_messages m ON m.id = raw_fts.rowid \
     WHERE raw_fts MATCH ?1 AND m.session = ?2 AND m.archive IS NULL \
     ORDER BY bm25(raw_fts) LIMIT 10";

fn decode(row: &rusqlite::Row<'_>) -> rusqlite::Result<Message> {
    // A struct literal: `Message::user` would spend time on a fresh id and clock read.
    Ok(Message {
        id: row.get(0)?,
        role: Role::User,
        content: row.get(1)?,
        timestamp: chrono::DateTime::from_timestamp_micros(row.get(2)?).unwrap_or_default(),
        tool_call_id: None,
        tool_name: None,
        metadata: Metadata::new(),
    })
}

impl Raw {
    fn open(dir: &Path, synchronous: Synchronous) -> Raw {
        let conn = Connection::open(dir.join("raw.db")).unwrap();
        let _: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .unwrap();
        conn.pragma_update(None, "synchronous", synchronous.as_str())
            .unwrap();
        conn.execute_batch(RAW_SCHEMA).unwrap();
        Raw { conn, next_seq: 1 }
    }

    fn append(&mut self, session: &str, messages: &[Message]) {
        let tx = self.conn.transaction().unwrap();
        {
            let mut insert = tx.prepare_cached(RAW_INSERT).unwrap();
            for m in messages {
                insert
                    .execute(params![
                        session,
                        self.next_seq,
                        m.id,
                        m.content,
                        m.timestamp.timestamp_micros()
                    ])
                    .unwrap();
                self.next_seq += 1;
            }
        }
        tx.commit().unwrap();
    }

    fn fill(&mut self, session: &str, n: usize) {
        for start in (0..n).step_by(1_000) {
            let batch: Vec<Message> = (start..(start + 1_000).min(n)).map(message).collect();
            self.append(session, &batch);
        }
    }

    fn clear(&mut self, session: &str) {
        self.conn
            .execute("DELETE FROM raw_messages WHERE session = ?1", [session])
            .unwrap();
    }

    fn query(&self, sql: &str, params: impl rusqlite::Params) -> Vec<Message> {
        let mut st = self.conn.prepare_cached(sql).unwrap();
        let rows = st.query_map(params, decode).unwrap();
        rows.collect::<rusqlite::Result<_>>().unwrap()
    }

    fn load_last(&self, session: &str, n: i64) -> Vec<Message> {
        let mut out = self.query(RAW_SELECT_LAST, params![session, n]);
        out.reverse();
        out
    }

    fn load_all(&self, session: &str) -> Vec<Message> {
        self.query(RAW_SELECT_ALL, params![session])
    }

    /// Marks the live messages archived and inserts the replacement, in one transaction.
    fn compact(&mut self, session: &str, replacement: &[Message]) {
        self.conn.execute_batch("BEGIN IMMEDIATE").unwrap();
        self.conn
            .execute(
                "UPDATE raw_messages SET archive = 1 WHERE session = ?1 AND archive IS NULL",
                [session],
            )
            .unwrap();
        {
            let mut insert = self.conn.prepare_cached(RAW_INSERT).unwrap();
            for m in replacement {
                insert
                    .execute(params![
                        session,
                        self.next_seq,
                        m.id,
                        m.content,
                        m.timestamp.timestamp_micros()
                    ])
                    .unwrap();
                self.next_seq += 1;
            }
        }
        self.conn.execute_batch("COMMIT").unwrap();
    }
}

/// Times `iters` runs of `op`, running the untimed `reset` every `every` runs so the session
/// stays near its starting size (an append benchmark would otherwise grow it by the number of
/// iterations criterion picks, which skews a cost curve).
fn timed_with_reset(
    iters: u64,
    every: u64,
    mut op: impl FnMut(),
    mut reset: impl FnMut(),
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

fn append_one(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("append_one");
    let m = message(0);
    for synchronous in [Synchronous::Full, Synchronous::Normal] {
        let dir = tempfile::tempdir().unwrap();
        let store = rt.block_on(store(dir.path(), synchronous));
        let session = SessionId::new("bench").unwrap();
        group.bench_function(
            format!("agentmem/synchronous={}", synchronous.as_str()),
            |b| {
                b.to_async(&rt).iter(|| async {
                    store
                        .append(&session, std::slice::from_ref(&m))
                        .await
                        .unwrap();
                })
            },
        );
        let mut raw = Raw::open(dir.path(), synchronous);
        group.bench_function(
            format!("raw_rusqlite/synchronous={}", synchronous.as_str()),
            |b| b.iter(|| raw.append("bench", std::slice::from_ref(&m))),
        );
    }
    group.finish();
}

fn append_batch_1000(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("append_batch_1000");
    group.throughput(Throughput::Elements(1_000));
    group.sample_size(10);
    let batch = messages(1_000);
    let dir = tempfile::tempdir().unwrap();
    let store = rt.block_on(store(dir.path(), Synchronous::Normal));
    let session = SessionId::new("batch").unwrap();
    group.bench_function("agentmem/synchronous=normal", |b| {
        b.iter_custom(|iters| {
            timed_with_reset(
                iters,
                20,
                || rt.block_on(store.append(&session, &batch)).unwrap(),
                || {
                    rt.block_on(store.delete_session(&session)).unwrap();
                },
            )
        })
    });
    let mut raw = Raw::open(dir.path(), Synchronous::Normal);
    group.bench_function("raw_rusqlite/synchronous=normal", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for i in 0..iters {
                if i > 0 && i % 20 == 0 {
                    raw.clear("batch");
                }
                let start = Instant::now();
                raw.append("batch", &batch);
                total += start.elapsed();
            }
            raw.clear("batch");
            total
        })
    });
    group.finish();
}

/// Load the last 20, load all, and search, on one big session, each beside the baseline.
fn reads(c: &mut Criterion) {
    let rt = runtime();
    let n = big();
    let dir = tempfile::tempdir().unwrap();
    let store = rt.block_on(store(dir.path(), Synchronous::Normal));
    let session = SessionId::new("big").unwrap();
    rt.block_on(fill(&store, &session, n));
    let mut raw = Raw::open(dir.path(), Synchronous::Normal);
    raw.fill("big", n);

    let mut group = c.benchmark_group(format!("load_last_20_of_{n}"));
    group.bench_function("agentmem", |b| {
        b.to_async(&rt).iter(|| async {
            let s = store.load(&session, Some(20)).await.unwrap().unwrap();
            assert_eq!(s.messages.len(), 20);
        })
    });
    group.bench_function("raw_rusqlite", |b| {
        b.iter(|| assert_eq!(raw.load_last("big", 20).len(), 20))
    });
    group.finish();

    let mut group = c.benchmark_group(format!("load_all_of_{n}"));
    group.sample_size(10);
    group.throughput(Throughput::Elements(n as u64));
    group.bench_function("agentmem", |b| {
        b.to_async(&rt).iter(|| async {
            let s = store.load(&session, None).await.unwrap().unwrap();
            assert_eq!(s.messages.len(), n);
        })
    });
    group.bench_function("raw_rusqlite", |b| {
        b.iter(|| assert_eq!(raw.load_all("big").len(), n))
    });
    // What the issue's load target compares with: serde_json parsing the same messages.
    let json: Vec<Vec<u8>> = messages(n)
        .iter()
        .map(|m| serde_json::to_vec(m).unwrap())
        .collect();
    group.bench_function("serde_json_parse_only", |b| {
        b.iter(|| {
            let parsed: Vec<Message> = json
                .iter()
                .map(|l| serde_json::from_slice(l).unwrap())
                .collect();
            assert_eq!(parsed.len(), n);
        })
    });
    group.finish();

    let mut group = c.benchmark_group(format!("search_top10_of_{n}"));
    let scope = MessageQuery {
        session: Some(session.clone()),
        limit: 10,
    };
    group.bench_function("agentmem", |b| {
        b.to_async(&rt).iter(|| async {
            let hits = store.search_messages("needle", &scope).await.unwrap();
            assert_eq!(hits.len(), 10);
        })
    });
    group.bench_function("raw_rusqlite_fts5", |b| {
        b.iter(|| assert_eq!(raw.query(RAW_SEARCH, params!["needle", "big"]).len(), 10))
    });
    group.finish();
}

fn compact(c: &mut Criterion) {
    let rt = runtime();
    let n = compact_size();
    let history = messages(n);
    let summary = [Message::system("summary of the session so far")];
    let dir = tempfile::tempdir().unwrap();
    let store = rt.block_on(store(dir.path(), Synchronous::Normal));
    let session = SessionId::new("compact").unwrap();
    let mut group = c.benchmark_group(format!("compact_{n}"));
    group.sample_size(10);
    group.bench_function("agentmem/synchronous=normal", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                // Untimed: a fresh session of `n` messages (and no archives piling up).
                rt.block_on(async {
                    store.delete_session(&session).await.unwrap();
                    store
                        .save_session(&session, &history, &Metadata::new())
                        .await
                        .unwrap();
                });
                let start = Instant::now();
                rt.block_on(store.compact(&session, &summary)).unwrap();
                total += start.elapsed();
            }
            total
        })
    });
    let mut raw = Raw::open(dir.path(), Synchronous::Normal);
    group.bench_function("raw_rusqlite/synchronous=normal", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                raw.clear("compact");
                raw.append("compact", &history);
                let start = Instant::now();
                raw.compact("compact", &summary);
                total += start.elapsed();
            }
            total
        })
    });
    group.finish();
}

/// Append latency (`synchronous=normal`, so fsync noise does not hide the backend's own
/// cost) and whole-session load, at several session sizes.
fn curves(c: &mut Criterion) {
    let rt = runtime();
    let m = message(0);
    let mut append = c.benchmark_group("curve_append_one");
    append.sample_size(10);
    let mut stores = Vec::new();
    for &n in curve_sizes() {
        let dir = tempfile::tempdir().unwrap();
        let store = rt.block_on(store(dir.path(), Synchronous::Normal));
        let session = SessionId::new("curve").unwrap();
        rt.block_on(fill(&store, &session, n));
        // Every n/10 appends, switch to a fresh session grown to `n` by appends of 1,000
        // (untimed), so each measured append lands on a session of n to 1.1 n messages that
        // was built the way sessions grow. (Resetting with `save_session` instead would measure
        // the aftermath of a bulk rewrite, e.g. FTS5 merging its deletions.)
        let every = (n as u64 / 10).max(1);
        let mut since = every;
        let mut fresh = 0usize;
        let mut current = session.clone();
        append.bench_with_input(BenchmarkId::new("agentmem/normal", n), &n, |b, &n| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    if since == every {
                        fresh += 1;
                        current = SessionId::new(format!("curve_{fresh}")).unwrap();
                        rt.block_on(fill(&store, &current, n));
                        since = 0;
                    }
                    let start = Instant::now();
                    rt.block_on(store.append(&current, std::slice::from_ref(&m)))
                        .unwrap();
                    total += start.elapsed();
                    since += 1;
                }
                total
            })
        });
        stores.push((n, dir, store, session));
    }
    append.finish();

    let mut load = c.benchmark_group("curve_load_all");
    load.sample_size(10);
    for (n, _dir, store, session) in &stores {
        load.throughput(Throughput::Elements(*n as u64));
        load.bench_with_input(BenchmarkId::new("agentmem", n), n, |b, &n| {
            b.to_async(&rt).iter(|| async {
                let s = store.load(session, None).await.unwrap().unwrap();
                assert_eq!(s.messages.len(), n);
            })
        });
    }
    load.finish();
}

fn config() -> Criterion {
    if quick() {
        Criterion::default()
            .sample_size(10)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1))
    } else {
        Criterion::default()
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(3))
    }
}

/// Reads a JSON-lines file of messages with std and serde_json.
fn json_lines_load(path: &Path) -> Vec<Message> {
    let bytes = std::fs::read(path).unwrap();
    bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect()
}

/// The child side: one whole load of the big session, measured (see
/// `agentmem_testkit::peak_memory`).
fn memory_child(case: &str, dir: &Path) -> peak_memory::Measured {
    match case {
        "agentmem" => {
            let rt = runtime();
            let store = rt.block_on(store(dir, Synchronous::Normal));
            let session = SessionId::new("big").unwrap();
            peak_memory::peak_of(|| {
                rt.block_on(store.load(&session, None))
                    .unwrap()
                    .unwrap()
                    .messages
                    .len()
            })
        }
        "raw_rusqlite" => {
            // The database exists: open it without creating the schema again.
            let raw = Raw {
                conn: Connection::open(dir.join("raw.db")).unwrap(),
                next_seq: 0,
            };
            peak_memory::peak_of(|| raw.load_all("big").len())
        }
        "serde_json" => peak_memory::peak_of(|| json_lines_load(&dir.join("raw.jsonl")).len()),
        other => Err(format!("unknown memory case {other:?}")),
    }
}

/// Peak memory of a whole load of the big session, by the backend and by the baselines, each
/// in a fresh process so none inherits another's freed heap. Printed once, on stderr.
fn measure_peak_memory(n: usize) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let store = rt.block_on(store(dir.path(), Synchronous::Normal));
    let session = SessionId::new("big").unwrap();
    rt.block_on(fill(&store, &session, n));
    drop(store);
    let mut raw = Raw::open(dir.path(), Synchronous::Normal);
    raw.fill("big", n);
    drop(raw);
    let mut json = Vec::new();
    for m in messages(n) {
        serde_json::to_writer(&mut json, &m).unwrap();
        json.push(b'\n');
    }
    std::fs::write(dir.path().join("raw.jsonl"), &json).unwrap();
    eprintln!(
        "peak memory, load all of {n} (as JSON lines {:.1} MiB), each in a fresh process:",
        json.len() as f64 / 1024.0 / 1024.0
    );
    drop(json);
    peak_memory::measure_in_children(
        dir.path(),
        &[
            ("agentmem", "agentmem SqliteMemory::load(None), new store"),
            (
                "raw_rusqlite",
                "raw_rusqlite SELECT of the session, rows decoded",
            ),
            (
                "serde_json",
                "serde_json std::fs::read + parse of the same messages",
            ),
        ],
        n,
    );
}

/// Not a timing: runs [`measure_peak_memory`] once when this group is selected (criterion
/// calls the closure only then), then times an empty closure so criterion has something.
fn peak_memory(c: &mut Criterion) {
    let n = big();
    let mut group = c.benchmark_group(format!("peak_memory_load_all_of_{n}"));
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(10));
    group.measurement_time(Duration::from_millis(10));
    let mut measured = false;
    group.bench_function("printed_on_stderr", |b| {
        if !measured {
            measured = true;
            measure_peak_memory(n);
        }
        b.iter(|| ())
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = config();
    targets = append_one, append_batch_1000, reads, compact, curves, peak_memory
}

fn main() {
    if peak_memory::child_main(memory_child) {
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
