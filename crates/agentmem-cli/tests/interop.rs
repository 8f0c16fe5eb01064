//! Export and import through the built binary: agentmem's own formats round trip byte for
//! byte; Swarms and PraisonAI fixtures import to the expected messages and export back.
mod common;

use common::{column, export_into_fresh, fails, fixture, import, json, ok, on, rows};
use serde_json::Value;

#[test]
fn jsonl_to_store_to_jsonl_is_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let original = std::fs::read(fixture("export.jsonl")).unwrap();
    ok(import(dir.path(), fixture("export.jsonl"), "jsonl"));
    let exported = ok(on(dir.path()).args(["export", "--all", "--format", "jsonl"]));
    assert_eq!(exported.as_bytes(), original.as_slice());
    // Into a file too.
    let file = dir.path().join("out/all.jsonl");
    let summary = ok(on(dir.path())
        .args(["export", "--all", "--format", "jsonl", "-o"])
        .arg(&file));
    assert!(
        summary.contains("3 sessions (11 messages) and 2 memory items"),
        "{summary}"
    );
    assert_eq!(std::fs::read(&file).unwrap(), original);
    // Importing again writes nothing.
    let again = ok(import(dir.path(), fixture("export.jsonl"), "jsonl"));
    assert!(
        again.contains("(0 new; 0 messages and 0 archives written)"),
        "{again}"
    );
    assert!(again.contains("2 memory items (0 new)"), "{again}");
}

/// Memory items follow the sessions' policy: an import adds what the store lacks, skips what
/// it holds already, and stops with a conflict (writing nothing) where it would overwrite.
#[test]
fn importing_memory_items_never_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let header = "{\"agentmem_export\":1}\n";
    let item = |id: &str, key: &str, text: &str| {
        format!(
            "{{\"type\":\"memory\",\"id\":\"{id}\",\"kind\":\"fact\",\"key\":\"{key}\",\
             \"text\":\"{text}\",\"created_at\":\"2026-04-21T09:00:03Z\",\
             \"updated_at\":\"2026-04-21T09:00:03Z\"}}\n"
        )
    };
    let first = dir.path().join("first.jsonl");
    std::fs::write(
        &first,
        format!("{header}{}", item("f1", "user.name", "Alice")),
    )
    .unwrap();
    assert!(ok(import(&store, &first, "jsonl")).contains("1 memory item (1 new)"));
    for (name, body, named) in [
        ("same_id.jsonl", item("f1", "user.name", "Bob"), "f1"),
        (
            "same_key.jsonl",
            item("f2", "user.name", "Bob"),
            "user.name",
        ),
    ] {
        let path = dir.path().join(name);
        let other = item("f3", "user.city", "Paris");
        std::fs::write(&path, format!("{header}{other}{body}")).unwrap();
        let err = fails(import(&store, &path, "jsonl"), 6);
        assert!(err.contains(named), "{name}: {err}");
        let listed = json(on(&store).arg("memories"));
        assert_eq!(
            column(&listed, "text"),
            ["Alice"],
            "{name}: nothing was written"
        );
    }
}

#[test]
fn json_and_yaml_carry_the_same_content() {
    let source = tempfile::tempdir().unwrap();
    ok(import(source.path(), fixture("export.jsonl"), "jsonl"));
    let original = std::fs::read_to_string(fixture("export.jsonl")).unwrap();
    for format in ["json", "yaml"] {
        let file = source.path().join(format!("all.{format}"));
        let dest = export_into_fresh(source.path(), "--all", format, &file);
        let back = ok(on(dest.path()).args(["export", "--all", "--format", "jsonl"]));
        assert_eq!(back, original, "{format}");
    }
    let one = ok(on(source.path()).args(["export", "user_123", "--format", "json"]));
    let doc: Value = serde_json::from_str(&one).unwrap();
    assert_eq!(rows(&doc["sessions"]).len(), 1);
    assert!(rows(&doc["memories"]).is_empty());
}

fn messages(dir: &std::path::Path, session: &str) -> (Vec<Value>, Vec<Vec<Value>>) {
    let shown = json(on(dir).args(["show", session]));
    let current = rows(&shown["messages"]).to_vec();
    let archives = json(on(dir).args(["archives", session]));
    let doc: Value =
        serde_json::from_str(&ok(on(dir).args(["export", session, "--format", "json"]))).unwrap();
    let archived: Vec<Vec<Value>> = rows(&doc["sessions"][0]["archives"])
        .iter()
        .map(|a| rows(&a["messages"]).to_vec())
        .collect();
    assert_eq!(rows(&archives).len(), archived.len());
    (current, archived)
}

fn role_content_time(m: &Value) -> (String, String, String) {
    (
        m["role"].as_str().unwrap().to_string(),
        m["content"].as_str().unwrap().to_string(),
        m["timestamp"].as_str().unwrap().to_string(),
    )
}

#[test]
fn swarms_folder_imports_to_the_expected_messages_and_exports_back() {
    let dir = tempfile::tempdir().unwrap();
    let folder = fixture("swarms/ResearchAgent");
    let out = ok(import(dir.path(), &folder, "swarms"));
    assert!(out.contains("8 messages and 2 archives written"), "{out}");
    let (current, archives) = messages(dir.path(), "ResearchAgent");
    let rct: Vec<_> = current.iter().map(role_content_time).collect();
    assert_eq!(rct.len(), 3);
    assert_eq!(rct[0].0, "system");
    assert!(rct[0].1.ends_with("User asked which is cheaper."));
    assert_eq!(rct[0].2, "2026-04-20T14:30:46Z");
    assert_eq!(
        rct[1],
        (
            "user".into(),
            "Summarise our findings — briefly, in 日本語 too.".into(),
            "2026-04-20T15:02:11.123456Z".into()
        )
    );
    assert_eq!(rct[2].0, "ResearchAgent");
    assert_eq!(
        rct[2].1,
        "- BigQuery: pay per query\n- AlloyDB: pay per vCPU\n\n結論: 用途次第。"
    );
    assert_eq!(rct[2].2, "2026-04-20T15:02:40.000900Z");
    let sizes: Vec<usize> = archives.iter().map(Vec::len).collect();
    assert_eq!(
        sizes,
        [3, 2],
        "archives in file-time order, _1 after the first"
    );
    assert_eq!(role_content_time(&archives[0][2]).0, "ResearchAgent");
    assert_eq!(
        role_content_time(&archives[0][2]).1,
        "BigQuery is serverless.\n\nAlloyDB is PostgreSQL-compatible."
    );
    assert_eq!(role_content_time(&archives[1][1]).1, "Which is cheaper?");

    // Re-importing adds nothing: ids are derived from the folder's content.
    let again = ok(import(dir.path(), &folder, "swarms"));
    assert!(
        again.contains("0 messages and 0 archives written"),
        "{again}"
    );

    // Export writes the same files, byte for byte.
    let exported = dir.path().join("exported");
    ok(on(dir.path())
        .args(["export", "ResearchAgent", "--format", "swarms", "-o"])
        .arg(&exported));
    for file in [
        "MEMORY.md",
        "archive/history_2026-04-20_14-30-45.md",
        "archive/history_2026-04-20_14-30-45_1.md",
    ] {
        assert_eq!(
            std::fs::read_to_string(exported.join(file)).unwrap(),
            std::fs::read_to_string(folder.join(file)).unwrap(),
            "{file}"
        );
    }
    // And the export re-imports (elsewhere) to the same messages.
    let other = tempfile::tempdir().unwrap();
    ok(import(other.path(), &exported, "swarms").args(["--session", "ResearchAgent"]));
    assert_eq!(messages(other.path(), "ResearchAgent"), (current, archives));
    // A workspace folder with agents/ imports each agent under its name.
    let ws = tempfile::tempdir().unwrap();
    let agent = ws.path().join("agents/Writer");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::copy(folder.join("MEMORY.md"), agent.join("MEMORY.md")).unwrap();
    ok(import(other.path(), ws.path(), "swarms"));
    assert_eq!(
        rows(&json(on(other.path()).args(["show", "Writer"]))["messages"]).len(),
        3
    );
}

#[test]
fn praisonai_session_imports_to_the_expected_messages_and_exports_back() {
    let dir = tempfile::tempdir().unwrap();
    let file = fixture("praisonai/history_4f2a9c1e.json");
    ok(import(dir.path(), &file, "praisonai"));
    let (current, archives) = messages(dir.path(), "history_4f2a9c1e");
    let got: Vec<_> = current.iter().map(role_content_time).collect();
    let expected = [
        (
            "system",
            "Summary of earlier turns: the user is planning a trip to Kyoto.",
            "2026-04-20T15:00:00.500Z",
        ),
        (
            "user",
            "What's the weather in Kyoto and Osaka tomorrow?",
            "2026-04-20T15:01:00.123456Z",
        ),
        (
            "assistant",
            "{\"city\": \"Kyoto\"}",
            "2026-04-20T15:01:01.250Z",
        ),
        (
            "assistant",
            "{\"city\": \"Osaka\"}",
            "2026-04-20T15:01:01.250Z",
        ),
        ("tool", "Kyoto: 18°C, light rain", "2026-04-20T15:01:02Z"),
        ("tool", "Osaka: 20°C, cloudy", "2026-04-20T15:01:02.000001Z"),
        (
            "assistant",
            "Tomorrow Kyoto has light rain (18°C) and Osaka is cloudy (20°C). Pack an umbrella.",
            "2026-04-20T15:01:05.750Z",
        ),
    ];
    let expected: Vec<(String, String, String)> = expected
        .iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        .collect();
    assert_eq!(got, expected);
    // Tool calls pair with their results, by id and name.
    assert_eq!(current[2]["tool_call_id"], "call_kyoto");
    assert_eq!(current[2]["tool_name"], "get_weather");
    assert_eq!(current[3]["tool_call_id"], "call_osaka");
    assert_eq!(current[4]["tool_call_id"], "call_kyoto");
    assert_eq!(current[4]["tool_name"], "get_weather");
    assert_eq!(current[2]["metadata"]["model"], "gpt-4o-mini");
    assert_eq!(
        current[6]["metadata"]["praisonai"]["extra"]["name"],
        "travel_agent"
    );
    assert_eq!(archives.len(), 1);
    assert_eq!(archives[0].len(), 2);
    assert_eq!(
        archives[0][1]["content"],
        "April is cherry blossom season in Kyoto."
    );
    let meta = &json(on(dir.path()).args(["show", "history_4f2a9c1e"]))["metadata"];
    assert_eq!(meta["channel"], "cli");
    assert_eq!(meta["praisonai"]["user_id"], "alice");

    // Export gives the file's content back, and re-imports to the same messages.
    let exported = ok(on(dir.path()).args(["export", "history_4f2a9c1e", "--format", "praisonai"]));
    let original: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&exported).unwrap(), original);
    let other = tempfile::tempdir().unwrap();
    let path = other.path().join("session.json");
    std::fs::write(&path, &exported).unwrap();
    ok(import(other.path(), &path, "praisonai"));
    assert_eq!(
        messages(other.path(), "history_4f2a9c1e"),
        (current, archives)
    );

    // --all writes one file per session; a folder of them imports back.
    let all = dir.path().join("sessions");
    let third = export_into_fresh(dir.path(), "--all", "praisonai", &all);
    assert!(all.join("history_4f2a9c1e.json").is_file());
    assert_eq!(rows(&json(on(third.path()).arg("sessions"))).len(), 1);
}

#[test]
fn native_sessions_survive_the_python_formats() {
    let dir = tempfile::tempdir().unwrap();
    ok(import(dir.path(), fixture("export.jsonl"), "jsonl"));
    let (current, archives) = messages(dir.path(), "ResearchAgent");
    let file = dir.path().join("p.json");
    let other = export_into_fresh(dir.path(), "ResearchAgent", "praisonai", &file);
    // Ids, tool pairing, agent roles, metadata and archive boundaries all come back.
    assert_eq!(messages(other.path(), "ResearchAgent"), (current, archives));
}

#[test]
fn importing_into_a_diverging_session_is_a_conflict_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    ok(on(dir.path()).args(["append", "user_123", "--role", "user", "something else"]));
    let err = fails(import(dir.path(), fixture("export.jsonl"), "jsonl"), 6);
    assert!(err.contains("user_123") && err.contains("differs"), "{err}");
    // Conflicts are found before anything is written: no other session was imported.
    assert_eq!(
        rows(&json(on(dir.path()).args(["show", "user_123"]))["messages"]).len(),
        1
    );
    assert_eq!(rows(&json(on(dir.path()).arg("sessions"))).len(), 1);
    assert!(rows(&json(on(dir.path()).arg("memories"))).is_empty());
}

#[test]
fn import_under_another_session_id() {
    let dir = tempfile::tempdir().unwrap();
    let err = fails(
        import(dir.path(), fixture("export.jsonl"), "jsonl").args(["--session", "x"]),
        2,
    );
    assert!(err.contains("holds 3 sessions"), "{err}");
    let one = dir.path().join("one.jsonl");
    ok(import(dir.path(), fixture("export.jsonl"), "jsonl"));
    ok(on(dir.path())
        .args(["export", "user_123", "--format", "jsonl", "-o"])
        .arg(&one));
    ok(import(dir.path(), &one, "jsonl").args(["--session", "copy"]));
    let a = json(on(dir.path()).args(["show", "user_123"]));
    let b = json(on(dir.path()).args(["show", "copy"]));
    assert_eq!(a["messages"], b["messages"]);
    assert_eq!(a["metadata"], b["metadata"]);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&one).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "exports are private: {mode:o}");
    }
}
