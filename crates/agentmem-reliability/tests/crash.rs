//! Crash safety of the durable embedded backends: a child appending (and compacting)
//! with fsync durability is killed with SIGKILL at a random moment, again and again; after
//! each kill the store opens, every acknowledged message is present, intact and in order,
//! nothing is duplicated, a compaction is all-or-nothing, and a torn tail is repaired and
//! reported.
//!
//! Each trial's kill delay and batch size come from a seeded generator; a failure names the
//! trial and seed. `AGENTMEM_CRASH_TRIALS` sets the number of trials (default 100 appending
//! and 40 compacting, per backend).
mod common;

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use agentmem::file::{FileStore, RepairKind};
use agentmem_core::{AgentMemory, Message, SessionId, SessionStore};
use agentmem_reliability::{audit, tagged, SplitMix64};
use common::{acks, compactions, spawn, transcript};

/// Trials per session: a session is reused for this many kills (each reopen repairs what the
/// previous kill left), then a new one starts, which bounds the work per check.
const TRIALS_PER_SESSION: usize = 10;

fn trials(default: usize) -> usize {
    std::env::var("AGENTMEM_CRASH_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Sqlite,
}

fn durable_url(kind: Kind, dir: &Path) -> String {
    match kind {
        Kind::File => format!("file://{}?durability=fsync", dir.display()),
        Kind::Sqlite => format!(
            "sqlite://{}?synchronous=full",
            dir.join("memory.db").display()
        ),
    }
}

#[derive(Debug, Default)]
struct Figures {
    trials: usize,
    trials_with_acks: usize,
    acked: usize,
    checked: usize,
    unacked_batches_found: usize,
    compactions_acked: usize,
    unacked_compactions_found: usize,
    repairs: HashMap<&'static str, usize>,
    torn_tails_injected: usize,
}

/// Runs `n` kill trials of `agentmem-stress churn` (compacting every `compact_every` batches,
/// never when 0) against `kind`, checking the store after each.
async fn kill_trials(kind: Kind, n: usize, compact_every: u64, max_delay_ms: u64) -> Figures {
    let dir = tempfile::tempdir().unwrap();
    let url = durable_url(kind, dir.path());
    let mut figures = Figures::default();
    let mut previous: Vec<Message> = Vec::new();
    let mut acked_total: Vec<String> = Vec::new();
    let mut archives_acked: Vec<String> = Vec::new();
    for trial in 0..n {
        let session_name = format!("crash{}", trial / TRIALS_PER_SESSION);
        if trial % TRIALS_PER_SESSION == 0 {
            previous.clear();
            acked_total.clear();
            archives_acked.clear();
        }
        let session: SessionId = session_name.parse().unwrap();
        let seed = 0x5EED_0000 + (trial as u64) * 7919 + compact_every;
        let mut rng = SplitMix64::new(seed);
        let batch = 1 + rng.below(3);
        let delay = Duration::from_millis(rng.below(max_delay_ms));
        let writer = format!("t{trial}");
        let ctx =
            format!("{kind:?} trial {trial} (seed {seed:#x}, batch {batch}, kill after {delay:?})");

        let child = spawn(&[
            "churn",
            &url,
            &session_name,
            &writer,
            "1000000",
            &batch.to_string(),
            &compact_every.to_string(),
        ]);
        tokio::time::sleep(delay).await;
        let events = child.kill();
        let acked = acks(&events);
        let compacted = compactions(&events);
        figures.trials += 1;
        figures.acked += acked.len();
        figures.compactions_acked += compacted.len();
        if !acked.is_empty() {
            figures.trials_with_acks += 1;
        }
        acked_total.extend(acked.iter().cloned());
        archives_acked.extend(compacted.iter().map(|(a, _)| a.clone()));

        // Every tenth file trial also tears the log's tail, as a power cut mid-write would.
        let log = dir
            .path()
            .join(format!("agents/{session_name}/session.jsonl"));
        let inject = kind == Kind::File && trial % 10 == 9 && log.exists();
        if inject {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
            f.write_all(b"{\"id\":\"torn-by-test\",\"role\":\"us")
                .unwrap();
            figures.torn_tails_injected += 1;
        }

        // Reopen, as a new process would, and check.
        let file_store = match kind {
            Kind::File => Some(std::sync::Arc::new(
                FileStore::connect(&url).await.unwrap_or_else(|e| {
                    panic!("{ctx}: the store does not open after the kill: {e}")
                }),
            )),
            Kind::Sqlite => None,
        };
        let store: std::sync::Arc<dyn AgentMemory> = match &file_store {
            Some(f) => f.clone(),
            None => agentmem::open(&url)
                .await
                .unwrap_or_else(|e| panic!("{ctx}: the store does not open after the kill: {e}")),
        };
        let (all, archive_ids, current) = transcript(store.as_ref(), &session).await;
        let report = audit(&all, &acked_total).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        assert!(
            all.len() >= previous.len() && all[..previous.len()] == previous[..],
            "{ctx}: what the previous trials left changed"
        );
        for a in &archives_acked {
            assert!(
                archive_ids.contains(a),
                "{ctx}: acknowledged archive {a} is missing"
            );
        }
        // What this trial added: its acknowledged messages in order, then at most one whole
        // batch that reached the store unacknowledged; summaries of its compactions.
        let added = &all[previous.len()..];
        let mut tagged_ids = Vec::new();
        let mut summaries = 0;
        for m in added {
            match tagged::decode(m).unwrap() {
                Some((w, _)) => {
                    assert_eq!(w, writer, "{ctx}: message {} from another trial", m.id);
                    tagged_ids.push(m.id.clone());
                }
                None => {
                    assert!(
                        m.id.starts_with(&format!("{writer}-sum-"))
                            && m.content == format!("summary {}", m.id),
                        "{ctx}: unexpected message {} ({:?})",
                        m.id,
                        m.content
                    );
                    summaries += 1;
                }
            }
        }
        assert_eq!(
            &tagged_ids[..acked.len()],
            &acked[..],
            "{ctx}: acknowledged order"
        );
        let extra = tagged_ids.len() - acked.len();
        assert!(
            extra == 0 || extra as u64 == batch,
            "{ctx}: {extra} unacknowledged messages: a batch is all or nothing"
        );
        if extra > 0 {
            figures.unacked_batches_found += 1;
        }
        assert!(
            summaries == compacted.len() || summaries == compacted.len() + 1,
            "{ctx}: {summaries} summaries for {} acknowledged compactions",
            compacted.len()
        );
        if summaries > compacted.len() {
            figures.unacked_compactions_found += 1;
        }
        for (i, m) in current.iter().enumerate() {
            if tagged::decode(m).unwrap().is_none() {
                assert_eq!(i, 0, "{ctx}: a summary in the middle of the session: a mix");
            }
        }
        figures.checked += report.checked;
        if let Some(f) = &file_store {
            let repairs = f.repairs();
            for r in &repairs {
                assert!(r.repaired, "{ctx}: found but not repaired: {r}");
                *figures.repairs.entry(r.kind.as_str()).or_default() += 1;
            }
            if inject {
                assert!(
                    repairs.iter().any(|r| r.kind == RepairKind::TornTail),
                    "{ctx}: the injected torn tail was not reported: {repairs:?}"
                );
            }
        }
        drop(store);
        drop(file_store);

        match kind {
            Kind::File => {
                let file = FileStore::connect(&url).await.unwrap();
                // A fresh store checks from scratch: the repairs of the reopen above held.
                let left = file.check(&session, false).await.unwrap();
                assert!(
                    left.is_empty(),
                    "{ctx}: still damaged after reopening: {left:?}"
                );
                if inject {
                    // Repaired, and gone from the log.
                    let text = std::fs::read_to_string(&log).unwrap();
                    assert!(!text.contains("torn-by-test"), "{ctx}: torn tail kept");
                }
            }
            Kind::Sqlite => {
                let conn = rusqlite::Connection::open(dir.path().join("memory.db")).unwrap();
                let ok: String = conn
                    .query_row("PRAGMA integrity_check", [], |r| r.get(0))
                    .unwrap();
                assert_eq!(ok, "ok", "{ctx}: integrity check");
            }
        }
        previous = all;
    }
    figures
}

/// The file backend reports its repairs as they happen; this test checks a torn tail is
/// reported (not only removed) by reopening a store right after tearing it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_torn_tail_is_reported_as_a_repair() {
    let dir = tempfile::tempdir().unwrap();
    let url = durable_url(Kind::File, dir.path());
    let session: SessionId = "torn".parse().unwrap();
    let child = spawn(&["churn", &url, "torn", "w", "20", "2", "0"]);
    let acked = acks(&child.wait_ok());
    let log = dir.path().join("agents/torn/session.jsonl");
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        f.write_all(b"[{\"id\":\"w-000020\",\"role\":\"user\",\"cont")
            .unwrap();
    }
    let store = FileStore::connect(&url).await.unwrap();
    let messages = store.load(&session, None).await.unwrap().unwrap().messages;
    audit(&messages, &acked).unwrap();
    assert_eq!(messages.len(), 20);
    let repairs = store.repairs();
    assert!(
        repairs
            .iter()
            .any(|r| r.kind == RepairKind::TornTail && r.repaired && r.path == log),
        "the torn tail is reported: {repairs:?}"
    );
}

fn print(kind: Kind, what: &str, f: &Figures) {
    println!(
        "crash: {kind:?} {what}: {} trials ({} killed after acks), {} acknowledged messages, {} messages checked, lost = 0; unacknowledged whole batches found: {}; compactions acknowledged: {}, completed but unacknowledged: {}; torn tails injected: {}; repairs: {:?}",
        f.trials,
        f.trials_with_acks,
        f.acked,
        f.checked,
        f.unacked_batches_found,
        f.compactions_acked,
        f.unacked_compactions_found,
        f.torn_tails_injected,
        f.repairs
    );
}

/// Kills helpers that append (and, when `compacting`, compact) at random moments: nothing
/// acknowledged is lost, every compaction is all or nothing.
async fn kill_during(kind: Kind, compacting: bool) {
    if compacting {
        let f = kill_trials(kind, trials(40), 1, 250).await;
        print(kind, "append+compact", &f);
        assert!(
            f.compactions_acked > 0,
            "no trial got as far as a compaction"
        );
    } else {
        let f = kill_trials(kind, trials(100), 0, 150).await;
        print(kind, "append", &f);
        assert!(
            f.trials_with_acks > 0,
            "no trial got as far as an acknowledged append"
        );
    }
}

/// The kill tests of each durable backend: `append_test, compaction_test: kind`.
macro_rules! kill_tests {
    ($($append:ident, $compaction:ident: $kind:expr;)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $append() {
            kill_during($kind, false).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $compaction() {
            kill_during($kind, true).await;
        }
    )*};
}

kill_tests! {
    file_kill_during_append_loses_nothing_acknowledged,
        file_kill_during_compaction_is_old_or_new_state: Kind::File;
    sqlite_kill_during_append_loses_nothing_acknowledged,
        sqlite_kill_during_compaction_is_old_or_new_state: Kind::Sqlite;
}
