//! Every command, driven through the built binary on a file store.
mod common;

use std::path::{Path, PathBuf};

use common::{agentmem, column, fails, fixture, import, json, ok, on, rows};
use predicates::prelude::*;

const COMMANDS: [&str; 22] = [
    "sessions",
    "fork",
    "rewind",
    "tag",
    "expire",
    "rekey",
    "show",
    "append",
    "search",
    "compact",
    "archives",
    "memories",
    "delete",
    "purge",
    "workspace-id",
    "doctor",
    "export",
    "import",
    "migrate",
    "threads",
    "thread",
    "fork-thread",
];

#[test]
fn every_command_has_help() {
    for command in COMMANDS {
        let out = ok(agentmem().args([command, "--help"]));
        assert!(out.contains("Usage: agentmem"), "{command}: {out}");
    }
    let out = ok(agentmem().arg("--help"));
    for command in COMMANDS {
        assert!(out.contains(command), "{command} missing from --help");
        let help = ok(agentmem().args(["help", command]));
        assert!(help.contains("Usage: agentmem"), "help {command}: {help}");
    }
    assert!(ok(agentmem().arg("--version")).starts_with("agentmem "));
}

#[test]
fn append_show_search_and_list() {
    let dir = tempfile::tempdir().unwrap();
    ok(on(dir.path()).args([
        "append",
        "ResearchAgent",
        "--role",
        "user",
        "Compare BigQuery and AlloyDB",
    ]));
    ok(on(dir.path())
        .args(["append", "ResearchAgent", "--role", "ResearchAgent", "-"])
        .write_stdin("BigQuery is serverless.\n"));
    ok(on(dir.path()).args(["append", "other", "--role", "assistant", "unrelated"]));

    let sessions = json(on(dir.path()).arg("sessions"));
    assert_eq!(column(&sessions, "id"), ["ResearchAgent", "other"]);
    assert_eq!(sessions[0]["message_count"], 2);
    let text = ok(on(dir.path()).arg("sessions"));
    assert!(
        text.starts_with("SESSION") && text.contains("ResearchAgent  2"),
        "{text}"
    );

    let shown = ok(on(dir.path()).args(["show", "ResearchAgent"]));
    assert!(
        shown.contains("user: Compare BigQuery and AlloyDB"),
        "{shown}"
    );
    assert!(
        shown.contains("ResearchAgent: BigQuery is serverless.\n"),
        "stdin's final newline is dropped: {shown}"
    );
    let last = json(on(dir.path()).args(["show", "ResearchAgent", "--limit", "1"]));
    assert_eq!(rows(&last["messages"]).len(), 1);
    assert_eq!(last["total_messages"], 2);
    let md = ok(on(dir.path()).args(["show", "ResearchAgent", "--format", "markdown"]));
    assert!(
        md.starts_with("# Agent Memory\n\n**Conversation:** ResearchAgent\n"),
        "{md}"
    );
    assert!(md.contains("### ResearchAgent — "), "{md}");
    let as_json: serde_json::Value = serde_json::from_str(&ok(on(dir.path()).args([
        "show",
        "ResearchAgent",
        "--format",
        "json",
    ])))
    .unwrap();
    assert_eq!(as_json["id"], "ResearchAgent");

    let hits = json(on(dir.path()).args(["search", "bigquery"]));
    assert_eq!(column(&hits, "session"), ["ResearchAgent", "ResearchAgent"]);
    let scoped = json(on(dir.path()).args(["search", "unrelated", "--session", "ResearchAgent"]));
    assert!(rows(&scoped).is_empty());
    let limited = json(on(dir.path()).args(["search", "bigquery", "--limit", "1"]));
    assert_eq!(rows(&limited).len(), 1);
    let table = ok(on(dir.path()).args(["search", "serverless"]));
    assert!(
        table.lines().count() == 2 && table.contains("BigQuery is serverless."),
        "{table}"
    );
}

/// `show` prints stored text without letting it drive the terminal: escape sequences and
/// other control characters come out escaped; line breaks stay.
#[test]
fn show_escapes_terminal_control_sequences() {
    let dir = tempfile::tempdir().unwrap();
    let hostile = "red \u{1b}[31mtext\u{1b}]0;title\u{7}\rback\u{9b}2J\nsecond line";
    ok(on(dir.path()).args(["append", "s", "--role", "user", hostile]));
    let shown = ok(on(dir.path()).args(["show", "s"]));
    assert!(
        !shown.contains('\u{1b}') && !shown.contains('\u{7}'),
        "{shown:?}"
    );
    assert!(
        !shown.contains('\r') && !shown.contains('\u{9b}'),
        "{shown:?}"
    );
    assert!(shown.contains("red \\u{1b}[31mtext"), "{shown:?}");
    assert!(shown.contains("\nsecond line"), "{shown:?}");
    // The stored message itself is unchanged.
    let stored = json(on(dir.path()).args(["show", "s"]));
    assert_eq!(stored["messages"][0]["content"], hostile);
}

/// Every human-readable output escapes what stored text could use to drive the terminal:
/// `show` as Markdown, `search`, `sessions` (titles) and `tag`'s answer; JSON
/// keeps the stored text (escaped by JSON itself).
#[test]
fn every_text_output_escapes_terminal_control_sequences() {
    let dir = tempfile::tempdir().unwrap();
    let hostile = "zebra \u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\rover \u{202e}txt.exe";
    ok(on(dir.path()).args(["append", "s", "--role", "user", hostile]));
    // Labels refuse control characters outright; a bidirectional override is text, escaped.
    let refused = fails(
        on(dir.path()).args(["tag", "s", "--title", "t \u{1b}[31mred"]),
        2,
    );
    assert!(refused.contains("control character"), "{refused}");
    let title = "invoice \u{202e}fdp.exe";
    let tagged = ok(on(dir.path()).args(["tag", "s", "--title", title]));
    let outputs = [
        ("tag", tagged),
        (
            "show markdown",
            ok(on(dir.path()).args(["show", "s", "--format", "markdown"])),
        ),
        ("search", ok(on(dir.path()).args(["search", "zebra"]))),
        ("sessions", ok(on(dir.path()).args(["sessions"]))),
    ];
    for (what, shown) in &outputs {
        for c in ['\u{1b}', '\u{7}', '\u{9b}', '\r', '\u{7f}', '\u{202e}'] {
            assert!(!shown.contains(c), "{what} prints {c:?}: {shown:?}");
        }
    }
    assert!(
        outputs[1].1.contains("zebra \\u{1b}]0;pwned"),
        "{:?}",
        outputs[1].1
    );
    assert!(
        outputs[1].1.contains("\\u{202e}txt.exe"),
        "{:?}",
        outputs[1].1
    );
    let listed = json(on(dir.path()).args(["sessions"]));
    assert_eq!(listed[0]["labels"]["title"], title, "{listed}");
    let found = json(on(dir.path()).args(["search", "zebra"]));
    assert_eq!(found[0]["message"]["content"], hostile, "{found}");
}

#[test]
fn compact_archives_delete_and_purge() {
    let dir = tempfile::tempdir().unwrap();
    for text in ["one", "two", "three"] {
        ok(on(dir.path()).args(["append", "s", "--role", "user", text]));
    }
    let out = ok(on(dir.path()).args(["compact", "s", "--summary", "Counted to three."]));
    assert!(out.contains("3 messages archived"), "{out}");
    let shown = json(on(dir.path()).args(["show", "s"]));
    let content = shown["messages"][0]["content"].as_str().unwrap();
    assert!(
        content.starts_with("[Compressed Memory Summary]\n")
            && content.ends_with("Counted to three.")
    );
    ok(on(dir.path()).args(["append", "s", "--role", "assistant", "four"]));
    let auto = json(on(dir.path()).args(["compact", "s", "--auto"]));
    assert_eq!(auto["archive"]["message_count"], 2);
    let archives = json(on(dir.path()).args(["archives", "s"]));
    let counts: Vec<u64> = rows(&archives)
        .iter()
        .map(|a| a["message_count"].as_u64().unwrap())
        .collect();
    assert_eq!(counts, [3, 2]);
    assert!(ok(on(dir.path()).args(["archives", "s"])).starts_with("ARCHIVE"));
    agentmem().args(["compact", "s"]).assert().code(2);

    ok(on(dir.path()).args(["append", "t", "--role", "user", "x"]));
    let purged = ok(on(dir.path()).args(["purge", "--older-than", "30d"]));
    assert_eq!(purged, "purged 0 sessions, 0 memory items\n");
    let purged = json(on(dir.path()).args(["purge", "--keep", "1"]));
    assert_eq!(purged["sessions_deleted"], 1);
    let left = json(on(dir.path()).arg("sessions"));
    assert_eq!(rows(&left).len(), 1);
    let id = left[0]["id"].as_str().unwrap().to_string();
    assert_eq!(
        ok(on(dir.path()).args(["delete", &id])),
        format!("deleted session {id}\n")
    );
    fails(on(dir.path()).args(["delete", &id]), 3);
    assert!(rows(&json(on(dir.path()).arg("sessions"))).is_empty());
}

#[test]
fn memories_list_and_filter() {
    let dir = tempfile::tempdir().unwrap();
    ok(import(dir.path(), fixture("export.jsonl"), "jsonl"));
    let all = json(on(dir.path()).arg("memories"));
    assert_eq!(column(&all, "id"), ["f1", "n1"]);
    let facts = json(on(dir.path()).args(["memories", "--kind", "fact"]));
    assert_eq!(rows(&facts).len(), 1);
    assert_eq!(facts[0]["text"], "The user's name is Alice.");
    let table = ok(on(dir.path()).arg("memories"));
    assert!(
        table.contains("user.name") && table.contains("long_term"),
        "{table}"
    );
    fails(on(dir.path()).args(["memories", "--kind", "facts"]), 2);
}

/// `memories` shows each item's scope and expiry, and filters by scope: what an agent sees
/// (`--agent`, `--workspace`, `--owner`), one scope alone (`--exact`), or the global items;
/// `purge` deletes expired items and, with `--memories-older-than`, old ones.
#[test]
fn memories_show_and_filter_scopes() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("scoped.jsonl");
    let item = |id: &str, scope: &str, text: &str, extra: &str| {
        format!(
            r#"{{"type":"memory","id":"{id}","kind":"fact","key":"name","scope":{scope},"text":"{text}","created_at":"2026-04-21T09:00:03Z","updated_at":"2026-04-21T09:00:03Z"{extra}}}"#
        )
    };
    let lines = [
        r#"{"agentmem_export":1}"#.to_string(),
        item("g", "{}", "shared", ""),
        item("a", r#"{"agent":"alice"}"#, "alice anywhere", ""),
        item(
            "ak",
            r#"{"agent":"alice","workspace":"git-kyoto"}"#,
            "alice in kyoto",
            "",
        ),
        item(
            "bk",
            r#"{"agent":"bob","workspace":"git-kyoto"}"#,
            "bob in kyoto",
            "",
        ),
        item(
            "x",
            r#"{"agent":"bob"}"#,
            "expired",
            r#","expires_at":"2026-01-01T00:00:00Z""#,
        ),
    ];
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();
    ok(import(dir.path(), &input, "jsonl"));

    let all = json(on(dir.path()).arg("memories"));
    assert_eq!(
        column(&all, "id"),
        ["g", "a", "ak", "bk"],
        "every live item"
    );
    assert_eq!(all[2]["scope"]["workspace"], "git-kyoto");
    let table = ok(on(dir.path()).arg("memories"));
    assert!(
        table.contains("SCOPE") && table.contains("agent:alice/workspace:git-kyoto"),
        "{table}"
    );
    assert!(table.contains("global"), "{table}");
    let sees = |args: &[&str]| {
        let listed = json(on(dir.path()).arg("memories").args(args));
        column(&listed, "id")
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        sees(&["--agent", "alice", "--workspace", "git-kyoto"]),
        ["g", "a", "ak"]
    );
    assert_eq!(sees(&["--agent", "alice", "--exact"]), ["a"]);
    assert_eq!(sees(&["--global"]), ["g"]);
    assert_eq!(sees(&["--agent", "bob"]), ["g"]);
    fails(
        on(dir.path()).args(["memories", "--global", "--agent", "alice"]),
        2,
    );
    fails(on(dir.path()).args(["memories", "--exact"]), 2);
    let refused = fails(on(dir.path()).args(["memories", "--agent", "a/b"]), 2);
    assert!(refused.contains("path separator"), "{refused}");

    let purged = ok(on(dir.path()).args(["purge", "--memories-older-than", "1d"]));
    assert_eq!(
        purged, "purged 0 sessions, 5 memory items\n",
        "four old, one expired"
    );
    assert!(rows(&json(on(dir.path()).arg("memories"))).is_empty());
}

#[test]
fn workspace_id_names_the_folder_and_session() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().canonicalize().unwrap();
    let report = json(
        agentmem()
            .arg("workspace-id")
            .arg(dir.path())
            .args(["--agent", "assistant"]),
    );
    assert_eq!(report["workspace_id"], format!("dir:{}", real.display()));
    let session = report["session_id"].as_str().unwrap();
    assert!(
        session.starts_with("history_") && session.len() == 16,
        "{session}"
    );
    // The documented id of agent "assistant" in the global workspace.
    let global = json(
        agentmem()
            .env("AGENTMEM_GLOBAL_SESSIONS", "1")
            .arg("workspace-id")
            .arg(dir.path())
            .args(["--agent", "assistant"]),
    );
    assert_eq!(global["workspace_id"], "global");
    assert_eq!(global["session_id"], "history_9d7d79a1");
    agentmem()
        .current_dir(dir.path())
        .arg("workspace-id")
        .assert()
        .success()
        .stdout(predicate::str::contains("agent:     agent"));
    fails(agentmem().args(["workspace-id", "/no/such/folder/here"]), 3);
}

#[test]
fn default_store_is_the_agentmem_home_and_env_sets_it() {
    let home = tempfile::tempdir().unwrap();
    ok(agentmem()
        .env("AGENTMEM_HOME", home.path())
        .args(["append", "h", "--role", "user", "hi"]));
    assert!(home.path().join("agents/h/MEMORY.md").is_file());
    let other = tempfile::tempdir().unwrap();
    ok(agentmem()
        .env("AGENTMEM_STORE", common::file_url(other.path()))
        .args(["append", "e", "--role", "user", "hi"]));
    assert!(other.path().join("agents/e/session.jsonl").is_file());
    // --store wins over the environment.
    let flag = tempfile::tempdir().unwrap();
    ok(agentmem()
        .env("AGENTMEM_STORE", common::file_url(other.path()))
        .arg("--store")
        .arg(common::file_url(flag.path()))
        .args(["append", "f", "--role", "user", "hi"]));
    assert!(flag.path().join("agents/f").is_dir() && !other.path().join("agents/f").exists());
}

#[test]
fn doctor_reports_repairs_and_keeps_a_backup() {
    let dir = tempfile::tempdir().unwrap();
    ok(import(dir.path(), fixture("export.jsonl"), "jsonl"));
    let healthy = ok(on(dir.path()).arg("doctor"));
    assert!(healthy.contains("schema version 1"), "{healthy}");
    assert!(
        healthy.contains("sessions:  3 (6 messages), archives: 2 (5 messages), memory items: 2"),
        "{healthy}"
    );
    assert!(healthy.contains("problems:  none"), "{healthy}");

    // A crash in the middle of an append leaves a torn last line.
    let log = dir.path().join("agents/user_123/session.jsonl");
    let mut bytes = std::fs::read(&log).unwrap();
    let good_len = bytes.len();
    bytes.extend_from_slice(b"{\"id\":\"torn\",\"role\":\"us");
    std::fs::write(&log, &bytes).unwrap();

    let err = fails(on(dir.path()).arg("doctor"), 4);
    assert!(
        err.contains("1 problems found") && err.contains("--repair"),
        "{err}"
    );
    let report = on(dir.path()).args(["doctor", "--json"]).output().unwrap();
    let report: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    assert_eq!(report["problems"][0]["kind"], "torn tail");
    assert_eq!(report["problems"][0]["repaired"], false);
    assert_eq!(report["counts"]["unchecked_sessions"], 1);
    assert_eq!(
        std::fs::read(&log).unwrap().len(),
        bytes.len(),
        "a check changes nothing"
    );

    let backup = dir.path().join("bk");
    let repaired = ok(on(dir.path())
        .args(["doctor", "--repair", "--backup-dir"])
        .arg(&backup));
    assert!(repaired.contains("torn tail, repaired"), "{repaired}");
    assert_eq!(std::fs::read(&log).unwrap().len(), good_len);
    assert_eq!(
        std::fs::read(backup.join("agents/user_123/session.jsonl")).unwrap(),
        bytes
    );
    assert!(ok(on(dir.path()).arg("doctor")).contains("problems:  none"));
    assert_eq!(
        rows(&json(on(dir.path()).args(["show", "user_123"]))["messages"]).len(),
        2
    );
}

/// A store in `dir` holding the fixture export, with `tail` written after the last line of
/// its file `relative`: that file's path and its bytes now.
fn imported_with_tail(dir: &Path, relative: &str, tail: &[u8]) -> (PathBuf, Vec<u8>) {
    ok(import(dir, fixture("export.jsonl"), "jsonl"));
    let file = dir.join(relative);
    let mut bytes = std::fs::read(&file).unwrap();
    bytes.extend_from_slice(tail);
    std::fs::write(&file, &bytes).unwrap();
    (file, bytes)
}

/// A whole line that does not parse is not a crash artefact: `doctor` reports it with its
/// line number and changes nothing; `doctor --repair` sets it aside in the session's
/// `quarantine/` (after a backup), never deleting it, and later runs keep reporting it.
#[test]
fn doctor_reports_a_whole_bad_line_and_repair_sets_it_aside() {
    let dir = tempfile::tempdir().unwrap();
    let bad = b"[{\"id\":\"x\",\"role\":\"\"}]\n";
    let (log, bytes) = imported_with_tail(dir.path(), "agents/user_123/session.jsonl", bad);
    let line = bytes.iter().filter(|&&b| b == b'\n').count();
    let doctor = |args: &[&str]| -> serde_json::Value {
        let out = on(dir.path()).args(args).output().unwrap();
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let report = doctor(&["doctor", "--json"]);
    let problem = &report["problems"][0];
    assert_eq!(problem["kind"], "corrupt", "{report}");
    let detail = problem["detail"].as_str().unwrap_or_default();
    assert!(detail.contains(&format!("line {line}")), "{report}");
    assert_eq!(
        std::fs::read(&log).unwrap(),
        bytes,
        "a check changes nothing"
    );

    let report = doctor(&["doctor", "--json", "--repair"]);
    let problem = &report["problems"][0];
    assert_eq!(problem["kind"], "quarantined lines", "{report}");
    assert_eq!(problem["repaired"], true, "{report}");
    let detail = problem["detail"].as_str().unwrap_or_default();
    assert!(detail.contains(&format!("line {line}")), "{report}");
    let quarantine = dir.path().join("agents/user_123/quarantine");
    let kept: Vec<Vec<u8>> = std::fs::read_dir(&quarantine)
        .unwrap()
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect();
    assert_eq!(kept, [bad.to_vec()], "set aside byte for byte");
    assert_eq!(
        rows(&json(on(dir.path()).args(["show", "user_123"]))["messages"]).len(),
        2,
        "the readable messages are all there"
    );
    let report = doctor(&["doctor", "--json"]);
    assert_eq!(
        report["problems"][0]["kind"], "quarantined lines",
        "{report}"
    );
    assert_eq!(report["problems"][0]["repaired"], false, "{report}");
}

#[test]
fn doctor_repairs_a_torn_memory_log() {
    let dir = tempfile::tempdir().unwrap();
    imported_with_tail(
        dir.path(),
        "memories.jsonl",
        b"{\"op\":\"put\",\"item\":{\"id\"",
    );
    fails(on(dir.path()).arg("doctor"), 4);
    let out = ok(on(dir.path()).args(["doctor", "--repair"]));
    assert!(
        out.contains("torn tail, repaired") && out.contains("backup:"),
        "{out}"
    );
    assert_eq!(rows(&json(on(dir.path()).arg("memories"))).len(), 2);
    let backups = std::fs::read_dir(dir.path().join("backups"))
        .unwrap()
        .count();
    assert_eq!(backups, 1);
}
