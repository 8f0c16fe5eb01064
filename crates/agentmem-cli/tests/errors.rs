//! Bad input exits non-zero with one clear line on standard error naming what and where.
mod common;

use common::{agentmem, column, fails, fixture, import, json, ok, on};

fn write(dir: &std::path::Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn usage_errors_are_one_line_with_code_2() {
    for args in [
        &["frobnicate"][..],
        &["show"],
        &["import", "x", "--format", "xml"],
        &["purge", "--older-than", "soon"],
        &["purge"],
        &["export", "--format", "jsonl"],
        &["compact", "s", "--summary", "x", "--auto"],
    ] {
        fails(agentmem().args(args), 2);
    }
    let err = fails(agentmem().args(["show", "../etc"]), 2);
    assert!(
        err.contains("invalid session id") && err.contains("`..`"),
        "{err}"
    );
    let err = fails(agentmem().args(["append", "a/b", "--role", "user", "x"]), 2);
    assert!(err.contains("path separator"), "{err}");
}

#[test]
fn bad_roles_and_missing_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let err = fails(
        on(dir.path()).args(["append", "s", "--role", "bad\trole", "x"]),
        2,
    );
    assert!(err.contains("invalid role"), "{err}");
    for args in [
        &["show", "missing"][..],
        &["archives", "missing"],
        &["compact", "missing", "--summary", "x"],
        &["export", "missing", "--format", "jsonl"],
    ] {
        fails(on(dir.path()).args(args), 3);
    }
}

#[test]
fn malformed_files_name_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let good = std::fs::read_to_string(fixture("export.jsonl")).unwrap();
    let lines: Vec<&str> = good.lines().collect();

    // The file, its text, the format it is imported as, the exit code, and what the error
    // line must name.
    // A YAML bomb: one 1 MB message anchored and referenced 10,000 times (10 GB expanded).
    let bomb = format!(
        "agentmem_export: 1\nbig: &big \"{}\"\nsessions:\n  - id: s\n    messages: [{}]\n",
        "x".repeat(1 << 20),
        vec!["*big"; 10_000].join(", ")
    );
    let bad_files: [(&str, String, &str, i32, &[&str]); 9] = [
        ("bomb.yaml", bomb, "yaml", 2, &["bomb.yaml", "expands beyond"]),
        (
            "a.jsonl",
            format!("{}\n{}\n{{oops\n", lines[0], lines[1]),
            "jsonl",
            4,
            &["a.jsonl line 3"],
        ),
        (
            "cut.jsonl",
            format!("{}\n", lines[..5].join("\n")),
            "jsonl",
            4,
            &["cut.jsonl line 6", "ends early"],
        ),
        (
            "id.jsonl",
            "{\"agentmem_export\":1}\n{\"type\":\"session\",\"id\":\"../x\",\"messages\":0,\"archives\":0}\n".into(),
            "jsonl",
            4,
            &["id.jsonl line 2", "`..`"],
        ),
        ("v.jsonl", "{\"agentmem_export\":9}\n".into(), "jsonl", 7, &[]),
        (
            "a.json",
            "{\"agentmem_export\": 1, \"sessions\": [{\"id\": 5}]}".into(),
            "json",
            4,
            &["a.json", "line 1"],
        ),
        (
            "a.yaml",
            "agentmem_export: 1\nsessions:\n  - id: [\n".into(),
            "yaml",
            4,
            &["a.yaml"],
        ),
        (
            "p.json",
            "{\"session_id\": \"s\", \"messages\": [{\"role\": \"user\", \"content\": \"x\", \"timestamp\": \"noon\"}]}".into(),
            "praisonai",
            4,
            &["p.json"],
        ),
        (
            "q.json",
            "{\"session_id\": \"a/b\", \"messages\": []}".into(),
            "praisonai",
            2,
            &["q.json", "--session"],
        ),
    ];
    for (name, text, format, code, named) in &bad_files {
        let path = write(dir.path(), name, text);
        let err = fails(import(&store, &path, format), *code);
        for part in *named {
            assert!(err.contains(part), "{name}: `{part}` not named in {err}");
        }
    }
    // The session id PraisonAI's q.json lacks can be given.
    ok(import(&store, dir.path().join("q.json"), "praisonai").args(["--session", "ab"]));

    let agent = dir.path().join("agents/Broken");
    std::fs::create_dir_all(agent.join("archive")).unwrap();
    let memory = std::fs::read_to_string(fixture("swarms/ResearchAgent/MEMORY.md")).unwrap();
    std::fs::write(agent.join("MEMORY.md"), &memory).unwrap();
    std::fs::write(
        agent.join("archive/history_2026-01-01_00-00-00.md"),
        &memory[..memory.len() - 4],
    )
    .unwrap();
    let err = fails(import(&store, &agent, "swarms"), 4);
    assert!(err.contains("history_2026-01-01_00-00-00.md line"), "{err}");

    for (missing, format) in [("nope.jsonl", "jsonl"), ("nope", "swarms")] {
        let err = fails(import(&store, dir.path().join(missing), format), 3);
        assert!(err.contains(missing), "{err}");
    }

    // None of the failed imports wrote anything (the praisonai one with --session did).
    assert_eq!(column(&json(on(&store).arg("sessions")), "id"), ["ab"]);
}

/// No URL form a backend accepts shows its password in an error: multi-host URLs (which a
/// URL parser refuses), a `password=` parameter, and libpq keyword strings.
#[test]
fn passwords_are_hidden_in_every_url_form() {
    for url in [
        "postgres://u:hunter2@127.0.0.1:1,127.0.0.1:2/db",
        "postgres://u@127.0.0.1:1/db?password=hunter2",
        "mongodb://u:hunter2@127.0.0.1:1,127.0.0.1:2/db?serverSelectionTimeoutMS=300",
        "host=127.0.0.1 port=1 user=u password=hunter2",
        "host=127.0.0.1 password='hunter2 with spaces'",
    ] {
        let out = agentmem()
            .args(["--store", url, "sessions"])
            .output()
            .unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(!out.status.success(), "{url}: {stderr}");
        assert!(stderr.starts_with("agentmem: "), "{url}: {stderr}");
        assert!(!stderr.contains("hunter2"), "{url}: {stderr}");
    }
}

#[test]
fn unreachable_and_unknown_stores() {
    let err = fails(
        agentmem().args(["--store", "redis://127.0.0.1:1/", "sessions"]),
        5,
    );
    assert!(err.contains("redis://127.0.0.1:1/"), "{err}");
    let err = fails(agentmem().args(["--store", "mysql://h/db", "sessions"]), 2);
    assert!(err.contains("unknown store URL scheme"), "{err}");
    let err = fails(
        agentmem().args(["--store", "postgres://u:hunter2@127.0.0.1:1/db", "sessions"]),
        5,
    );
    assert!(!err.contains("hunter2"), "{err}");
    let err = fails(
        agentmem().args(["--store", "file://relative", "sessions"]),
        2,
    );
    assert!(err.contains("relative"), "{err}");
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        file.path(),
        "not a database, just text that is long enough to be a header".repeat(20),
    )
    .unwrap();
    let err = fails(
        agentmem()
            .arg("--store")
            .arg(format!("sqlite://{}", file.path().display()))
            .arg("sessions"),
        4,
    );
    assert!(
        err.contains(&file.path().display().to_string()) || err.contains("sqlite"),
        "{err}"
    );
}

#[test]
fn export_refuses_a_non_empty_folder_and_needs_one_for_folders() {
    let dir = tempfile::tempdir().unwrap();
    ok(on(dir.path()).args(["append", "s", "--role", "user", "x"]));
    // The folder formats need `-o`.
    for args in [
        ["export", "s", "--format", "swarms"],
        ["export", "--all", "--format", "praisonai"],
    ] {
        fails(on(dir.path()).args(args), 2);
    }
    let busy = dir.path().join("busy");
    std::fs::create_dir_all(&busy).unwrap();
    std::fs::write(busy.join("keep.txt"), "x").unwrap();
    let err = fails(
        on(dir.path())
            .args(["export", "s", "--format", "swarms", "-o"])
            .arg(&busy),
        2,
    );
    assert!(err.contains("not empty"), "{err}");
}
