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
use std::cell::RefCell;
use std::path::Path;

use agentmem_core::{Layered, Message, MessageId, Metadata, Role};
use agentmem_sqlite::{SqliteConfig, SqliteStore, Synchronous};
use agentmem_testkit::bench::{self, big, message, messages, runtime};
use agentmem_testkit::peak_memory;
use agentmem_testkit::side_by_side::{self, BigSession};
use criterion::{criterion_group, Criterion, Throughput};
use rusqlite::{params, Connection};
use tokio::runtime::Runtime;

async fn store(dir: &Path, synchronous: Synchronous) -> Layered<SqliteStore> {
    let config = SqliteConfig::file(dir.join("bench.db")).with_synchronous(synchronous);
    SqliteStore::connect_with(config).await.unwrap()
}

/// A store in a new temporary folder, with the folder (removed when dropped).
fn temp_store(rt: &Runtime, synchronous: Synchronous) -> (tempfile::TempDir, Layered<SqliteStore>) {
    let dir = tempfile::tempdir().unwrap();
    let store = rt.block_on(store(dir.path(), synchronous));
    (dir, store)
}

/// The backend and the baseline side by side at `synchronous=normal`, in a new temporary
/// folder (removed when dropped).
fn normal_pair(rt: &Runtime) -> (tempfile::TempDir, Layered<SqliteStore>, RefCell<Raw>) {
    let (dir, store) = temp_store(rt, Synchronous::Normal);
    let raw = RefCell::new(Raw::open(dir.path(), Synchronous::Normal));
    (dir, store, raw)
}

/// The benchmark names of [`normal_pair`]: the backend's, then the baseline's.
const NORMAL_NAMES: [&str; 2] = [
    "agentmem/synchronous=normal",
    "raw_rusqlite/synchronous=normal",
];

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
        id: MessageId::new(row.get::<_, String>(0)?).expect("valid message id"),
        role: Role::User,
        content: row.get(1)?,
        timestamp: chrono::DateTime::from_timestamp_micros(row.get(2)?).unwrap_or_default(),
        tool_call_id: None,
        tool_name: None,
        metadata: Metadata::new(),
    })
}

/// Inserts `messages` into `session` from sequence number `next_seq` on, within the caller's
/// transaction on `conn`.
fn insert(conn: &Connection, next_seq: &mut i64, session: &str, messages: &[Message]) {
    let mut insert = conn.prepare_cached(RAW_INSERT).unwrap();
    for m in messages {
        insert
            .execute(params![
                session,
                *next_seq,
                m.id.as_str(),
                m.content,
                m.timestamp.timestamp_micros()
            ])
            .unwrap();
        *next_seq += 1;
    }
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
        insert(&tx, &mut self.next_seq, session, messages);
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
        insert(&self.conn, &mut self.next_seq, session, replacement);
        self.conn.execute_batch("COMMIT").unwrap();
    }
}

fn append_one(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("append_one");
    let m = message(0);
    for synchronous in [Synchronous::Full, Synchronous::Normal] {
        let (dir, store) = temp_store(&rt, synchronous);
        let name = format!("agentmem/synchronous={}", synchronous.as_str());
        side_by_side::append_one(&mut group, &rt, &store, name);
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
    let (_dir, store, raw) = normal_pair(&rt);
    side_by_side::append_batch_1000(
        c,
        &rt,
        &store,
        NORMAL_NAMES,
        |batch| raw.borrow_mut().append("batch", batch),
        || raw.borrow_mut().clear("batch"),
    );
}

/// Load the last 20, load all, and search, on one big session, each beside the baseline.
fn reads(c: &mut Criterion) {
    let (rt, n, dir) = (runtime(), big(), tempfile::tempdir().unwrap());
    let big = BigSession::fill(&rt, n, store(dir.path(), Synchronous::Normal));
    let mut raw = Raw::open(dir.path(), Synchronous::Normal);
    raw.fill("big", n);

    let mut group = big.load_last_20(c);
    group.bench_function("raw_rusqlite", |b| {
        b.iter(|| assert_eq!(raw.load_last("big", 20).len(), 20))
    });
    group.finish();

    let mut group = big.load_all(c);
    group.throughput(Throughput::Elements(n as u64));
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

    let mut group = big.search_top10(c);
    group.bench_function("raw_rusqlite_fts5", |b| {
        b.iter(|| assert_eq!(raw.query(RAW_SEARCH, params!["needle", "big"]).len(), 10))
    });
    group.finish();
}

fn compact(c: &mut Criterion) {
    let rt = runtime();
    let (_dir, store, raw) = normal_pair(&rt);
    side_by_side::compact(
        c,
        &rt,
        &store,
        NORMAL_NAMES,
        |history| {
            let mut raw = raw.borrow_mut();
            raw.clear("compact");
            raw.append("compact", history);
        },
        |summary| raw.borrow_mut().compact("compact", summary),
    );
}

/// Append latency (`synchronous=normal`, so fsync noise does not hide the backend's own
/// cost) and whole-session load, at several session sizes.
fn curves(c: &mut Criterion) {
    let rt = runtime();
    bench::curves(c, &rt, "agentmem/normal", || {
        temp_store(&rt, Synchronous::Normal)
    });
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
        "agentmem" => side_by_side::peak_of_big_load(store(dir, Synchronous::Normal)),
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
    let dir = tempfile::tempdir().unwrap();
    side_by_side::write_big_session(n, store(dir.path(), Synchronous::Normal));
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
            ("agentmem", "agentmem SqliteStore::load(None), new store"),
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

/// Not a timing: prints the peak memory of [`measure_peak_memory`] once.
fn peak_memory(c: &mut Criterion) {
    bench::peak_memory_group(c, big(), measure_peak_memory);
}

criterion_group! {
    name = benches;
    config = side_by_side::local_criterion();
    targets = append_one, append_batch_1000, reads, compact, curves, peak_memory
}

fn main() {
    bench::main(memory_child, benches);
}
