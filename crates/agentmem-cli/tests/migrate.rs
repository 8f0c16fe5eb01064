//! `agentmem migrate`: 10,000 messages go file → SQLite → Postgres → Redis → MongoDB → file
//! and come back byte for byte; re-running adds nothing.
//!
//! The server legs use DATABASE_URL, REDIS_URL and MONGODB_URL (read at run time, defaulting
//! to the local servers), each in a namespace of its own that is removed when the test ends.
//! An unreachable server skips its leg unless AGENTMEM_REQUIRE_SERVICES is set, which makes it
//! fail.
mod common;
mod deployments;

use std::path::Path;

use agentmem_core::{MemoryId, MemoryItem, MemoryKind, Message, MessageId, Role};
use agentmem_formats::{jsonl, ArchiveExport, ExportDocument, SessionExport};
use agentmem_testkit::ServerNamespace;
use chrono::{DateTime, Duration, Utc};
use common::{agentmem, file_url, import, json, ok, on, rows};
use deployments::reachable;

/// 10,000 messages in five sessions, with archives, tool pairs, agent roles, metadata and
/// memory items.
fn generated() -> ExportDocument {
    let start: DateTime<Utc> = "2026-01-01T00:00:00Z".parse().unwrap();
    let mut n = 0i64;
    let mut next = |session: &str, count: usize| -> Vec<Message> {
        (0..count)
            .map(|i| {
                n += 1;
                let t = start + Duration::microseconds(n * 1_000_003);
                let id = format!("{session}-{n}");
                let m = match i % 5 {
                    0 => Message::user(format!("question {n} about BigQuery and AlloyDB ✓")),
                    1 => Message::tool_call(format!("call{n}"), "search", format!("{{\"q\":{n}}}")),
                    2 => Message::tool_result(
                        format!("call{}", n - 1),
                        "search",
                        format!("result {n}"),
                    ),
                    3 => Message::new(
                        Role::Agent("ResearchAgent".into()),
                        format!("answer {n}\n\n---\n\nwith a rule"),
                    )
                    .with_metadata("score", n as f64 / 8.0),
                    _ => Message::assistant(if n % 10 == 4 {
                        String::new()
                    } else {
                        format!("note {n}")
                    })
                    .with_metadata("nested", serde_json::json!({"z": [1, 2], "a": null})),
                };
                m.with_id(MessageId::new(id).expect("valid message id"))
                    .with_timestamp(t)
            })
            .collect()
    };
    let mut doc = ExportDocument::new();
    let mut big = SessionExport::new("big".parse().unwrap());
    big.metadata.insert("model".into(), "gpt-4o".into());
    big.archives = vec![
        ArchiveExport::new(next("big", 1000)),
        ArchiveExport::new(next("big", 1500)),
    ];
    big.messages = next("big", 4500);
    doc.sessions.push(big);
    for name in ["s1", "s2", "s3 spaced", "s4"] {
        let mut s = SessionExport::new(name.parse().unwrap());
        if name == "s2" {
            s.archives = vec![ArchiveExport::new(next(name, 250))];
            s.messages = next(name, 500);
        } else {
            s.messages = next(name, 750);
        }
        s.metadata.insert("owner".into(), name.into());
        // Labels and an expiry (far ahead) travel with the session.
        if name == "s1" {
            s.labels.title = Some("Trip to Kyoto".into());
            s.labels.owner = Some("ada".into());
            s.labels.tags.insert("project".into(), "kyoto".into());
            s.labels.tags.insert("a.b$c".into(), "*".into());
        }
        if name == "s2" {
            s.expires_at = Some("2999-01-02T03:04:05.123456Z".parse().unwrap());
        }
        doc.sessions.push(s);
    }
    for i in 0..5 {
        let t = start + Duration::seconds(i);
        let mut item = MemoryItem::new(MemoryKind::ALL[i as usize % 4], format!("fact number {i}"));
        item.id = MemoryId::new(format!("mem{i}")).expect("valid memory id");
        item.created_at = t;
        item.updated_at = t + Duration::microseconds(7);
        if i == 0 {
            item = item.with_key("user.name").with_metadata("importance", 0.9);
        }
        doc.memories.push(item);
    }
    doc
}

fn migrate(from: &str, to: &str) -> serde_json::Value {
    json(agentmem().args(["migrate", "--from", from, "--to", to]))
}

#[test]
fn ten_thousand_messages_through_every_backend_and_back() {
    let dir = tempfile::tempdir().unwrap();
    let doc = generated();
    let total: u64 = doc.sessions.iter().map(SessionExport::total_messages).sum();
    assert_eq!(total, 10_000);
    let expected = jsonl::to_string(&doc).unwrap();
    let input = dir.path().join("in.jsonl");
    std::fs::write(&input, &expected).unwrap();

    let first = dir.path().join("first");
    ok(import(&first, &input, "jsonl"));
    let mut chain = vec![
        file_url(&first),
        format!("sqlite://{}", dir.path().join("m.db").display()),
    ];
    // The server legs' namespaces, removed when they are dropped at the end of the test.
    let mut servers = Vec::new();
    for (service, namespace) in [
        ("postgres", ServerNamespace::postgres("cli_migrate")),
        ("redis", ServerNamespace::redis("cli_migrate")),
        ("mongodb", ServerNamespace::mongodb("cli_migrate")),
    ] {
        if reachable(service, namespace.url()) {
            chain.push(namespace.url().to_string());
            servers.push(namespace);
        }
    }
    let last = dir.path().join("last");
    chain.push(file_url(&last));
    if agentmem_testkit::services_required() {
        assert_eq!(chain.len(), 6, "every backend takes part");
    }

    for leg in chain.windows(2) {
        let report = migrate(&leg[0], &leg[1]);
        assert_eq!(report["messages"], 10_000, "{leg:?}");
        assert_eq!(report["messages_written"], 10_000, "{leg:?}");
        assert_eq!(report["sessions_created"], 5, "{leg:?}");
        assert_eq!(report["archives_written"], 3, "{leg:?}");
        assert_eq!(report["memories_written"], 5, "{leg:?}");
        assert_eq!(report["verified"], true, "{leg:?}");
    }
    let back = ok(on(&last).args(["export", "--all", "--format", "jsonl"]));
    assert!(
        back == expected,
        "the export after the round trip differs from the input"
    );

    // Re-running a leg (and a dry run) writes nothing.
    let again = migrate(&chain[chain.len() - 2], &chain[chain.len() - 1]);
    assert_eq!(again["messages_written"], 0);
    assert_eq!(again["archives_written"], 0);
    assert_eq!(again["memories_written"], 0);
    let dry = json(
        agentmem()
            .args(["migrate", "--dry-run", "--from", &chain[0], "--to"])
            .arg(file_url(&dir.path().join("dry"))),
    );
    assert_eq!(dry["messages_written"], 10_000);
    assert_eq!(dry["verified"], false);
    assert!(rows(&json(on(&dir.path().join("dry")).arg("sessions"))).is_empty());

    for namespace in &servers {
        ok(agentmem().args(["--store", namespace.url(), "purge", "--keep", "0"]));
    }
}

#[test]
fn an_interrupted_migration_resumes_without_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    let dst = dir.path().join("dst");
    ok(import(&src, common::fixture("export.jsonl"), "jsonl"));
    // The destination already holds part of a session (as if a migration stopped there).
    let partial = dir.path().join("partial.jsonl");
    let text = std::fs::read_to_string(common::fixture("export.jsonl")).unwrap();
    let head: Vec<&str> = text.lines().collect();
    let user = head
        .iter()
        .position(|l| l.contains("\"id\":\"user_123\""))
        .unwrap();
    let mut lines = vec![
        head[0].to_string(),
        head[user].replace("\"messages\":2", "\"messages\":1"),
        head[user + 1].to_string(),
    ];
    lines.push(String::new());
    std::fs::write(&partial, lines.join("\n")).unwrap();
    ok(import(&dst, &partial, "jsonl"));

    let run = agentmem()
        .args([
            "migrate",
            "--batch-size",
            "1",
            "--from",
            &file_url(&src),
            "--to",
            &file_url(&dst),
        ])
        .output()
        .unwrap();
    assert!(run.status.success());
    let out = String::from_utf8(run.stdout).unwrap();
    assert!(out.contains("counts verified"), "{out}");
    // Not a terminal: one plain progress line per session, on standard error.
    let progress = String::from_utf8(run.stderr).unwrap();
    let lines: Vec<&str> = progress.lines().collect();
    assert_eq!(lines.len(), 3, "{progress}");
    assert!(
        lines[2].starts_with(
            "migrate: [3/3] session user_123: 2 messages, wrote 1 message and 0 archives"
        ),
        "{progress}"
    );
    assert_eq!(
        ok(on(&dst).args(["export", "--all", "--format", "jsonl"])),
        text,
        "the destination ends up holding exactly the source"
    );
    assert!(Path::new(&dst).join("agents/user_123").is_dir());
}
