//! Bad input exits non-zero with one clear line on standard error naming what and where.
#![allow(clippy::unwrap_used)]

mod common;

use common::{agentmem, fails, fixture, json, ok, on};

fn write(dir: &std::path::Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn usage_errors_are_one_line_with_code_2() {
    fails(agentmem().arg("frobnicate"), 2);
    fails(agentmem().args(["show"]), 2);
    fails(agentmem().args(["import", "x", "--format", "xml"]), 2);
    let err = fails(agentmem().args(["show", "../etc"]), 2);
    assert!(
        err.contains("invalid session id") && err.contains("`..`"),
        "{err}"
    );
    let err = fails(agentmem().args(["append", "a/b", "--role", "user", "x"]), 2);
    assert!(err.contains("path separator"), "{err}");
    fails(agentmem().args(["purge", "--older-than", "soon"]), 2);
    fails(agentmem().args(["purge"]), 2);
    fails(agentmem().args(["export", "--format", "jsonl"]), 2);
    fails(
        agentmem().args(["compact", "s", "--summary", "x", "--auto"]),
        2,
    );
}

#[test]
fn bad_roles_and_missing_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let err = fails(
        on(dir.path()).args(["append", "s", "--role", "bad\trole", "x"]),
        2,
    );
    assert!(err.contains("invalid role"), "{err}");
    fails(on(dir.path()).args(["show", "missing"]), 3);
    fails(on(dir.path()).args(["archives", "missing"]), 3);
    fails(
        on(dir.path()).args(["compact", "missing", "--summary", "x"]),
        3,
    );
    fails(
        on(dir.path()).args(["export", "missing", "--format", "jsonl"]),
        3,
    );
}

#[test]
fn malformed_files_name_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let good = std::fs::read_to_string(fixture("export.jsonl")).unwrap();
    let lines: Vec<&str> = good.lines().collect();

    let bad_json = write(
        dir.path(),
        "a.jsonl",
        &format!("{}\n{}\n{{oops\n", lines[0], lines[1]),
    );
    let err = fails(
        on(&store)
            .arg("import")
            .arg(&bad_json)
            .args(["--format", "jsonl"]),
        4,
    );
    assert!(err.contains("a.jsonl line 3"), "{err}");

    let cut = write(
        dir.path(),
        "cut.jsonl",
        &format!("{}\n", lines[..5].join("\n")),
    );
    let err = fails(
        on(&store)
            .arg("import")
            .arg(&cut)
            .args(["--format", "jsonl"]),
        4,
    );
    assert!(
        err.contains("cut.jsonl line 6") && err.contains("ends early"),
        "{err}"
    );

    let bad_id = write(
        dir.path(),
        "id.jsonl",
        "{\"agentmem_export\":1}\n{\"type\":\"session\",\"id\":\"../x\",\"messages\":0,\"archives\":0}\n",
    );
    let err = fails(
        on(&store)
            .arg("import")
            .arg(&bad_id)
            .args(["--format", "jsonl"]),
        4,
    );
    assert!(
        err.contains("id.jsonl line 2") && err.contains("`..`"),
        "{err}"
    );

    let version = write(dir.path(), "v.jsonl", "{\"agentmem_export\":9}\n");
    fails(
        on(&store)
            .arg("import")
            .arg(&version)
            .args(["--format", "jsonl"]),
        7,
    );

    let doc = write(
        dir.path(),
        "a.json",
        "{\"agentmem_export\": 1, \"sessions\": [{\"id\": 5}]}",
    );
    let err = fails(
        on(&store)
            .arg("import")
            .arg(&doc)
            .args(["--format", "json"]),
        4,
    );
    assert!(err.contains("a.json") && err.contains("line 1"), "{err}");

    let yaml = write(
        dir.path(),
        "a.yaml",
        "agentmem_export: 1\nsessions:\n  - id: [\n",
    );
    let err = fails(
        on(&store)
            .arg("import")
            .arg(&yaml)
            .args(["--format", "yaml"]),
        4,
    );
    assert!(err.contains("a.yaml"), "{err}");

    let praison = write(dir.path(), "p.json", "{\"session_id\": \"s\", \"messages\": [{\"role\": \"user\", \"content\": \"x\", \"timestamp\": \"noon\"}]}");
    let err = fails(
        on(&store)
            .arg("import")
            .arg(&praison)
            .args(["--format", "praisonai"]),
        4,
    );
    assert!(err.contains("p.json"), "{err}");
    let praison = write(
        dir.path(),
        "q.json",
        "{\"session_id\": \"a/b\", \"messages\": []}",
    );
    let err = fails(
        on(&store)
            .arg("import")
            .arg(&praison)
            .args(["--format", "praisonai"]),
        2,
    );
    assert!(err.contains("q.json") && err.contains("--session"), "{err}");
    ok(on(&store)
        .arg("import")
        .arg(&praison)
        .args(["--format", "praisonai", "--session", "ab"]));

    let agent = dir.path().join("agents/Broken");
    std::fs::create_dir_all(agent.join("archive")).unwrap();
    let memory = std::fs::read_to_string(fixture("swarms/ResearchAgent/MEMORY.md")).unwrap();
    std::fs::write(agent.join("MEMORY.md"), &memory).unwrap();
    std::fs::write(
        agent.join("archive/history_2026-01-01_00-00-00.md"),
        &memory[..memory.len() - 4],
    )
    .unwrap();
    let err = fails(
        on(&store)
            .arg("import")
            .arg(&agent)
            .args(["--format", "swarms"]),
        4,
    );
    assert!(err.contains("history_2026-01-01_00-00-00.md line"), "{err}");

    let err = fails(
        on(&store)
            .arg("import")
            .arg(dir.path().join("nope.jsonl"))
            .args(["--format", "jsonl"]),
        3,
    );
    assert!(err.contains("nope.jsonl"), "{err}");
    let err = fails(
        on(&store)
            .arg("import")
            .arg(dir.path().join("nope"))
            .args(["--format", "swarms"]),
        3,
    );
    assert!(err.contains("nope"), "{err}");

    // None of the failed imports wrote anything (the praisonai one with --session did).
    let sessions = json(on(&store).arg("sessions"));
    let ids: Vec<&str> = sessions
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["ab"]);
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
    fails(
        on(dir.path()).args(["export", "s", "--format", "swarms"]),
        2,
    );
    fails(
        on(dir.path()).args(["export", "--all", "--format", "praisonai"]),
        2,
    );
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
