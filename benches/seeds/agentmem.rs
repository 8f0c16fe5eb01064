//! agentmem's side of the seed comparison (issue 20, item 5): the seeds' job, 10,000 appends
//! of one short user message and then a reload of the session by a new store, through
//! `agentmem::open`, beside the physical floors on the same disk. `benches/seeds/run.sh`
//! runs this next to the seeds' own Python implementations and prints the table.
//!
//! A plain `main` (`harness = false`), not criterion: each case is one long run (a session
//! grown message by message), repeated, median taken. One JSON object per case on stdout,
//! progress on stderr.
//!
//! Cases:
//! - `agentmem file durability=buffered|fsync`: `file://<dir>?durability=…`; each append
//!   writes the `session.jsonl` line and the Swarms `MEMORY.md` block (fsync: and syncs both).
//! - `agentmem sqlite synchronous=normal|full` (cargo feature `sqlite`): `sqlite://<dir>/…db`.
//! - `floor write(2)`: the message as one serde_json line, one `write(2)` on a file opened once.
//! - `floor write(2)+fdatasync`: the same, then `fdatasync` per message.
//!
//! The reload of the agentmem cases is `agentmem::open` of the same URL (a new store, as a new
//! process would open it) plus `load(session, None)`, which returns every message; the floors
//! reload with `std::fs::read` and a serde_json parse of every line into `Message`.
//!
//! Environment: `SEEDS_N` messages (default 10,000), `SEEDS_REPEAT` runs per case (default 3),
//! `SEEDS_DIR` the directory to work in (default the system temp dir), `SEEDS_CASES` a
//! comma-separated list of case-name substrings to run (default all). With
//! `AGENTMEM_BENCH_QUICK=1` (CI's test mode) every case runs once with 200 messages.
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agentmem::{Message, SessionId};
use serde_json::json;

/// Message `i`: the text of `agentmem_testkit::bench::message`, and of `seeds.py`'s `text`.
fn text(i: usize) -> String {
    let needle = if i.is_multiple_of(100) { " needle" } else { "" };
    format!("message {i}: a turn of ordinary length about GCP latency and cost.{needle}")
}

fn env_usize(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(v) if !v.is_empty() => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        _ => default,
    }
}

fn quick() -> bool {
    std::env::var("AGENTMEM_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// One run of a case: messages appended, the appends' time, the reload's time, and how many
/// messages the reload gave back.
struct Run {
    append: Duration,
    reload: Duration,
    reloaded: usize,
}

/// A case: its name and what one run of `n` messages in a fresh directory does.
type Case = (String, Box<dyn Fn(&Path, usize) -> Run>);

fn agentmem_case(name: &str, url: impl Fn(&Path) -> String + 'static) -> Case {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let run = move |dir: &Path, n: usize| {
        let url = url(dir);
        runtime.block_on(async {
            let session = SessionId::new("bench").unwrap();
            let store = agentmem::open(&url).await.unwrap();
            let start = Instant::now();
            for i in 0..n {
                let message = Message::user(text(i));
                store
                    .append(&session, std::slice::from_ref(&message))
                    .await
                    .unwrap();
            }
            let append = start.elapsed();
            drop(store);
            let start = Instant::now();
            let reader = agentmem::open(&url).await.unwrap();
            let loaded = reader.load(&session, None).await.unwrap();
            let reload = start.elapsed();
            Run {
                append,
                reload,
                reloaded: loaded.map_or(0, |s| s.messages.len()),
            }
        })
    };
    (format!("agentmem {name}"), Box::new(run))
}

fn floor_case(fsync: bool) -> Case {
    let run = move |dir: &Path, n: usize| {
        let path = dir.join("floor.jsonl");
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap();
        let start = Instant::now();
        for i in 0..n {
            let mut line = serde_json::to_vec(&Message::user(text(i))).unwrap();
            line.push(b'\n');
            // One write(2): `File` is unbuffered and the line is short.
            file.write_all(&line).unwrap();
            if fsync {
                file.sync_data().unwrap();
            }
        }
        let append = start.elapsed();
        drop(file);
        let start = Instant::now();
        let bytes = std::fs::read(&path).unwrap();
        let messages: Vec<Message> = bytes
            .split(|b| *b == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| serde_json::from_slice(line).unwrap())
            .collect();
        let reload = start.elapsed();
        Run {
            append,
            reload,
            reloaded: messages.len(),
        }
    };
    let name = if fsync {
        "floor write(2)+fdatasync"
    } else {
        "floor write(2)"
    };
    (name.to_owned(), Box::new(run))
}

fn cases() -> Vec<Case> {
    let file = |durability: &'static str| {
        agentmem_case(&format!("file durability={durability}"), move |dir| {
            format!("file://{}?durability={durability}", dir.display())
        })
    };
    #[allow(unused_mut, reason = "pushed to only with some cargo features")]
    let mut cases = vec![file("buffered"), file("fsync")];
    #[cfg(feature = "sqlite")]
    for synchronous in ["normal", "full"] {
        cases.push(agentmem_case(
            &format!("sqlite synchronous={synchronous}"),
            move |dir| {
                format!(
                    "sqlite://{}?synchronous={synchronous}",
                    dir.join("memory.db").display()
                )
            },
        ));
    }
    cases.push(floor_case(false));
    cases.push(floor_case(true));
    cases
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn main() {
    let (n, repeat) = if quick() {
        (200, 1)
    } else {
        (env_usize("SEEDS_N", 10_000), env_usize("SEEDS_REPEAT", 3))
    };
    let base: PathBuf = std::env::var_os("SEEDS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let only: Vec<String> = std::env::var("SEEDS_CASES")
        .unwrap_or_default()
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    for (name, run) in cases() {
        if !only.is_empty() && !only.iter().any(|o| name.contains(o.as_str())) {
            continue;
        }
        let mut runs = Vec::new();
        for r in 0..repeat.max(1) {
            let dir = tempfile::Builder::new()
                .prefix("agentmem-seeds-")
                .tempdir_in(&base)
                .unwrap();
            let result = run(dir.path(), n);
            // Every message must come back, or the timing measured something else.
            assert_eq!(result.reloaded, n, "{name}: reload gave back too few");
            eprintln!(
                "{name} run {}: {n} appends {:.3} s, reload {:.1} ms",
                r + 1,
                result.append.as_secs_f64(),
                result.reload.as_secs_f64() * 1e3
            );
            runs.push(result);
        }
        let runs_json: Vec<_> = runs
            .iter()
            .map(|r| {
                json!({
                    "appended": n,
                    "append_s": r.append.as_secs_f64(),
                    "reload_s": r.reload.as_secs_f64(),
                    "reloaded": r.reloaded,
                })
            })
            .collect();
        let out = json!({
            "impl": name,
            "package": format!("agentmem {}", env!("CARGO_PKG_VERSION")),
            "n": n,
            "runs": runs_json,
            "append_s": median(runs.iter().map(|r| r.append).collect()).as_secs_f64(),
            "reload_s": median(runs.iter().map(|r| r.reload).collect()).as_secs_f64(),
        });
        println!("{out}");
    }
}
