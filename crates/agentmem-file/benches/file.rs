//! The file backend beside a std baseline doing the same work in the same run (issue 12):
//! append one message (fsync and buffered), append a batch of 1,000, load the last 20 of a big
//! session, load the whole big session, search it, compact a session; 10,000 appends then a
//! reload by a new store (target: under a second without fsync); and the cost curves (append
//! latency and whole-session load at 1k / 10k / 100k existing messages).
//!
//! The baseline (`raw_std`) writes the same JSON bytes the backend's `session.jsonl` gets (one
//! line per append) with a plain `write` and, for the fsync case, `fdatasync`; it reads them
//! back with `std::fs::read` plus `serde_json`. It does not write the Swarms `MEMORY.md` view
//! nor take locks, which the backend does: that difference is what the ratios show.
//!
//! `cargo bench -p agentmem-file --bench file`: the big session holds 100,000 messages, the
//! compacted one 10,000. With `AGENTMEM_BENCH_QUICK=1` both hold 2,000, the curves stop at
//! 10,000 and criterion takes fewer samples (for CI).
//!
//! `group_commit` runs durable (`Durability::Fsync`) appends of one message by 1, 2, 4 and 8
//! writers at once on one session, free-running: tasks of this process sharing one store (they
//! take the sample's appends from one counter, so all stay busy to its end), and separate
//! processes (this binary started again, one store each, kept running across the samples of a
//! case as an agent's process is, and told per sample how many to append). Its throughput is
//! messages acknowledged per second by all writers together. Each case starts on a new session.
//!
//! `peak_memory_load_all_of_<n>` measures memory, not time: it loads the big session whole
//! once in a fresh process (this binary started again, see [`memory_child`]) and prints, on
//! stderr, how far the resident set grew above what it was before the load (Linux: the peak is
//! reset by writing `5` to `/proc/self/clear_refs` and read from `VmHWM` in
//! `/proc/self/status`); the same for the baseline reading and parsing the same bytes. Its
//! criterion timing is of an empty closure and means nothing.
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentmem_core::{Layered, Message, SessionId, SessionStore};
use agentmem_file::{Durability, FileConfig, FileStore};
use agentmem_testkit::bench::{self, big, message, messages, quick, runtime};
use agentmem_testkit::peak_memory;
use agentmem_testkit::side_by_side::{self, BigSession};
use criterion::{criterion_group, Criterion, Throughput};
use tokio::runtime::Runtime;

async fn store(dir: &Path, durability: Durability) -> Layered<FileStore> {
    FileStore::connect_with(FileConfig::new(dir).with_durability(durability))
        .await
        .unwrap()
}

/// A store in a new temporary folder, with the folder (removed when dropped).
fn temp_store(rt: &Runtime, durability: Durability) -> (tempfile::TempDir, Layered<FileStore>) {
    let dir = tempfile::tempdir().unwrap();
    let store = rt.block_on(store(dir.path(), durability));
    (dir, store)
}

/// The baseline: a JSON-lines log written and read with std and serde_json only.
struct RawLog {
    file: File,
    fsync: bool,
}

impl RawLog {
    fn create(path: PathBuf, fsync: bool) -> RawLog {
        let file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&path)
            .unwrap();
        RawLog { file, fsync }
    }

    /// One line per append, as the backend writes it: an object, or an array for a batch.
    fn append(&mut self, messages: &[Message]) {
        let mut bytes = if let [one] = messages {
            serde_json::to_vec(one).unwrap()
        } else {
            serde_json::to_vec(messages).unwrap()
        };
        bytes.push(b'\n');
        self.file.write_all(&bytes).unwrap();
        if self.fsync {
            self.file.sync_data().unwrap();
        }
    }

    fn truncate(&mut self) {
        self.file.set_len(0).unwrap();
        // The file is opened without O_APPEND, so the cursor must follow.
        use std::io::Seek;
        self.file.seek(std::io::SeekFrom::Start(0)).unwrap();
    }

    fn fill(&mut self, n: usize) {
        for start in (0..n).step_by(1_000) {
            let batch: Vec<Message> = (start..(start + 1_000).min(n)).map(message).collect();
            self.append(&batch);
        }
    }
}

fn parse_line(line: &[u8], out: &mut Vec<Message>) {
    if line.first() == Some(&b'[') {
        out.extend(serde_json::from_slice::<Vec<Message>>(line).unwrap());
    } else {
        out.push(serde_json::from_slice(line).unwrap());
    }
}

fn raw_load_all(path: &Path) -> Vec<Message> {
    let bytes = std::fs::read(path).unwrap();
    let mut out = Vec::new();
    for line in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        parse_line(line, &mut out);
    }
    out
}

/// Reads the file and parses lines from the end until `n` messages are in hand.
fn raw_load_last(path: &Path, n: usize) -> Vec<Message> {
    let bytes = std::fs::read(path).unwrap();
    let mut lines = Vec::new();
    let mut count = 0;
    for line in bytes.rsplit(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let mut parsed = Vec::new();
        parse_line(line, &mut parsed);
        count += parsed.len();
        lines.push(parsed);
        if count >= n {
            break;
        }
    }
    let mut out: Vec<Message> = lines.into_iter().rev().flatten().collect();
    let skip = out.len().saturating_sub(n);
    out.drain(..skip);
    out
}

fn append_one(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("append_one");
    let m = message(0);
    for durability in [Durability::Fsync, Durability::Buffered] {
        let (dir, store) = temp_store(&rt, durability);
        let name = format!("agentmem/durability={durability}");
        side_by_side::append_one(&mut group, &rt, &store, name);
        let fsync = matches!(durability, Durability::Fsync);
        let mut raw = RawLog::create(dir.path().join("raw.jsonl"), fsync);
        let name = if fsync {
            "raw_std/write+fdatasync"
        } else {
            "raw_std/write"
        };
        group.bench_function(name, |b| b.iter(|| raw.append(std::slice::from_ref(&m))));
    }
    group.finish();
}

fn append_batch_1000(c: &mut Criterion) {
    let rt = runtime();
    let (dir, store) = temp_store(&rt, Durability::Buffered);
    let raw = std::cell::RefCell::new(RawLog::create(dir.path().join("raw.jsonl"), false));
    side_by_side::append_batch_1000(
        c,
        &rt,
        &store,
        ["agentmem/durability=buffered", "raw_std/write"],
        |batch| raw.borrow_mut().append(batch),
        || raw.borrow_mut().truncate(),
    );
}

/// Load the last 20, load all, and search, on one big session, each beside the baseline.
fn reads(c: &mut Criterion) {
    let (rt, n, dir) = (runtime(), big(), tempfile::tempdir().unwrap());
    let big = BigSession::fill(&rt, n, store(dir.path(), Durability::Buffered));
    let raw_path = dir.path().join("raw.jsonl");
    RawLog::create(raw_path.clone(), false).fill(n);

    let mut group = big.load_last_20(c);
    group.bench_function("raw_std/read+serde_json", |b| {
        b.iter(|| assert_eq!(raw_load_last(&raw_path, 20).len(), 20))
    });
    group.finish();

    let mut group = big.load_all(c);
    group.throughput(Throughput::Elements(n as u64));
    group.bench_function("raw_std/read+serde_json", |b| {
        b.iter(|| assert_eq!(raw_load_all(&raw_path).len(), n))
    });
    group.finish();

    let mut group = big.search_top10(c);
    group.sample_size(10);
    // The backend scans and ranks in process, so the baseline is: read, parse, rank.
    group.bench_function("raw_std/read+serde_json+rank", |b| {
        b.iter(|| {
            let all = raw_load_all(&raw_path);
            let hits =
                agentmem_core::search::rank("needle", all.iter().map(|m| m.content.as_str()), 10);
            assert_eq!(hits.len(), 10);
        })
    });
    group.finish();
}

fn compact(c: &mut Criterion) {
    let rt = runtime();
    let (dir, store) = temp_store(&rt, Durability::Buffered);
    // Baseline: copy the log to an archive file, write the replacement to a temporary file
    // and rename it over the log; no fsync, as under `Durability::Buffered`.
    let live = dir.path().join("raw.jsonl");
    let archive = dir.path().join("raw-archive.jsonl");
    let tmp = dir.path().join("raw.jsonl.tmp");
    side_by_side::compact(
        c,
        &rt,
        &store,
        ["agentmem/durability=buffered", "raw_std/copy+write+rename"],
        |history| RawLog::create(live.clone(), false).append(history),
        |summary| {
            let bytes = std::fs::read(&live).unwrap();
            std::fs::write(&archive, &bytes).unwrap();
            let mut line = serde_json::to_vec(summary).unwrap();
            line.push(b'\n');
            std::fs::write(&tmp, &line).unwrap();
            std::fs::rename(&tmp, &live).unwrap();
        },
    );
}

fn append_10k_then_reload(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("append_10k_then_reload");
    group.sample_size(10);
    if quick() {
        group.measurement_time(Duration::from_secs(5));
    }
    let messages = messages(10_000);
    group.bench_function("agentmem/durability=buffered", |b| {
        b.to_async(&rt).iter(|| async {
            let dir = tempfile::tempdir().unwrap();
            let session = SessionId::new("bench").unwrap();
            let writer = store(dir.path(), Durability::Buffered).await;
            for m in &messages {
                writer
                    .append(&session, std::slice::from_ref(m))
                    .await
                    .unwrap();
            }
            // A new store, as a new process would open it.
            let reader = store(dir.path(), Durability::Buffered).await;
            let loaded = reader.load(&session, None).await.unwrap().unwrap();
            assert_eq!(loaded.messages.len(), messages.len());
        })
    });
    group.bench_function("raw_std/write+read", |b| {
        b.iter(|| {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("raw.jsonl");
            let mut raw = RawLog::create(path.clone(), false);
            for m in &messages {
                raw.append(std::slice::from_ref(m));
            }
            drop(raw);
            assert_eq!(raw_load_all(&path).len(), messages.len());
        })
    });
    group.finish();
}

/// Append latency (buffered, so the disk's fsync noise does not hide the backend's own cost)
/// and whole-session load, at several session sizes.
fn curves(c: &mut Criterion) {
    let rt = runtime();
    bench::curves(c, &rt, "agentmem/buffered", || {
        temp_store(&rt, Durability::Buffered)
    });
}

/// Writers in the group-commit cases.
const WRITERS: [usize; 4] = [1, 2, 4, 8];
/// Set in a writer process of `group_commit/processes`: `root|session`.
const WRITER_ENV: &str = "AGENTMEM_BENCH_FILE_WRITER";

/// Durable appends by several writers at once (see the module documentation).
fn group_commit(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("group_commit");
    bench::quick_group(&mut group);
    let m = message(0);
    for writers in WRITERS {
        group.throughput(Throughput::Elements(writers as u64));
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(rt.block_on(store(dir.path(), Durability::Fsync)));
        let session = SessionId::new("shared").unwrap();
        group.bench_function(format!("tasks/{writers}"), |b| {
            b.to_async(&rt).iter_custom(|iters| {
                let store = store.clone();
                let (session, m) = (session.clone(), m.clone());
                async move {
                    // The writers share the sample's appends: each takes the next until none
                    // are left, so all of them stay busy to the end (no writer finishing its
                    // own share early and leaving the others to run with fewer at once).
                    let left = Arc::new(AtomicU64::new(iters * writers as u64));
                    let start = Instant::now();
                    let tasks: Vec<_> = (0..writers)
                        .map(|_| {
                            let (store, session, m) = (store.clone(), session.clone(), m.clone());
                            let left = left.clone();
                            tokio::spawn(async move {
                                while left
                                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                                        n.checked_sub(1)
                                    })
                                    .is_ok()
                                {
                                    store
                                        .append(&session, std::slice::from_ref(&m))
                                        .await
                                        .unwrap();
                                }
                            })
                        })
                        .collect();
                    for task in tasks {
                        task.await.unwrap();
                    }
                    start.elapsed()
                }
            })
        });
        let dir = tempfile::tempdir().unwrap();
        let mut processes = WriterProcesses::start(dir.path(), writers);
        group.bench_function(format!("processes/{writers}"), |b| {
            b.iter_custom(|iters| processes.append(iters))
        });
        processes.stop();
    }
    group.finish();
}

/// Writer processes of `group_commit/processes`, each with a durable store on one session.
struct WriterProcesses {
    children: Vec<(
        std::process::Child,
        std::io::BufReader<std::process::ChildStdout>,
    )>,
}

impl WriterProcesses {
    /// Starts `writers` processes on the session `shared` of the store at `root` and waits
    /// until each has read the session once (as a running writer has).
    fn start(root: &Path, writers: usize) -> Self {
        use std::process::{Command, Stdio};
        let exe = std::env::current_exe().unwrap();
        let mut children: Vec<_> = (0..writers)
            .map(|_| {
                let mut child = Command::new(&exe)
                    .env(WRITER_ENV, format!("{}|shared", root.display()))
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .spawn()
                    .unwrap();
                let out = std::io::BufReader::new(child.stdout.take().unwrap());
                (child, out)
            })
            .collect();
        for (_, out) in &mut children {
            expect_line(out, "ready");
        }
        WriterProcesses { children }
    }

    /// Lets every process append `count` messages at once; how long until all have.
    fn append(&mut self, count: u64) -> Duration {
        let start = Instant::now();
        for (child, _) in &mut self.children {
            writeln!(child.stdin.as_mut().unwrap(), "{count}").unwrap();
        }
        for (_, out) in &mut self.children {
            expect_line(out, "done");
        }
        start.elapsed()
    }

    /// Ends the processes (their input closes) and checks that they succeeded.
    fn stop(self) {
        for (mut child, _) in self.children {
            drop(child.stdin.take());
            assert!(child.wait().unwrap().success(), "writer process failed");
        }
    }
}

fn expect_line(out: &mut impl std::io::BufRead, expected: &str) {
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), expected, "writer process did not answer");
}

/// The writer process of `group_commit/processes`; `false` when this is not one. Reads a count
/// per line, appends that many messages and answers `done`, until its input ends.
fn writer_child() -> bool {
    let Ok(spec) = std::env::var(WRITER_ENV) else {
        return false;
    };
    let (root, session) = spec.split_once('|').unwrap();
    let rt = runtime();
    let store = rt.block_on(store(Path::new(root), Durability::Fsync));
    let session = SessionId::new(session).unwrap();
    let m = message(0);
    rt.block_on(store.load(&session, Some(1))).unwrap();
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "ready").unwrap();
    stdout.flush().unwrap();
    for line in std::io::stdin().lines() {
        let count: u64 = line.unwrap().trim().parse().unwrap();
        rt.block_on(async {
            for _ in 0..count {
                store
                    .append(&session, std::slice::from_ref(&m))
                    .await
                    .unwrap();
            }
        });
        writeln!(stdout, "done").unwrap();
        stdout.flush().unwrap();
    }
    true
}

/// The child side: one whole load of the big session, measured (see
/// `agentmem_testkit::peak_memory`).
fn memory_child(case: &str, dir: &Path) -> peak_memory::Measured {
    match case {
        "agentmem" => side_by_side::peak_of_big_load(store(dir, Durability::Buffered)),
        "raw_std" => peak_memory::peak_of(|| raw_load_all(&dir.join("raw.jsonl")).len()),
        other => Err(format!("unknown memory case {other:?}")),
    }
}

/// Peak memory of a whole load of the big session, by the backend and by the baseline, each in
/// a fresh process so neither inherits the other's freed heap. Printed once, on stderr.
fn measure_peak_memory(n: usize) {
    let dir = tempfile::tempdir().unwrap();
    side_by_side::write_big_session(n, store(dir.path(), Durability::Buffered));
    RawLog::create(dir.path().join("raw.jsonl"), false).fill(n);
    let log = dir.path().join("agents/big/session.jsonl");
    let bytes = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0);
    eprintln!(
        "peak memory, load all of {n} (session.jsonl {:.1} MiB), each in a fresh process:",
        bytes as f64 / 1024.0 / 1024.0
    );
    peak_memory::measure_in_children(
        dir.path(),
        &[
            ("agentmem", "agentmem FileStore::load(None), new store"),
            ("raw_std", "raw_std std::fs::read + serde_json"),
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
    targets = append_one, append_batch_1000, reads, compact, append_10k_then_reload, curves,
        group_commit, peak_memory
}

fn main() {
    if writer_child() {
        return;
    }
    bench::main(memory_child, benches);
}
