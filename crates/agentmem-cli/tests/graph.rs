//! The knowledge graph through the CLI: the MCP reference memory server's `memory.jsonl`
//! imported (twice: nothing duplicated; a malformed file writes nothing) and exported byte for
//! byte as the server's `saveGraph` writes it; the graph in `export --all`, `import`,
//! `migrate` and `doctor`.
//!
//! The fixtures in `tests/fixtures/mcp-memory` were written by the reference server's own
//! `KnowledgeGraphManager` (`@modelcontextprotocol/server-memory` 2026.8.31, `saveGraph`):
//! - `saved_by_reference.jsonl`: a graph of Unicode, quotes, backslashes, control characters
//!   (escaped as JSON.stringify does, DEL left raw), U+2028/U+2029 and empty strings;
//! - `reference_quirks.jsonl`: what the server leaves after `create_entities` named an entity
//!   twice in one call (both kept, one observation twice), `create_relations` repeated a
//!   relation in one call, and `add_observations` added to an entity.
mod common;

use std::path::Path;

use common::{agentmem, fails, file_url, fixture, import, json, ok, on};

/// The graph the quirks fixture holds, merged by agentmem's rules (the first of two entities
/// of one name wins and gains the other's observations; repeats are kept once), written as
/// `saveGraph` would write it.
const QUIRKS_MERGED: &str = concat!(
    r#"{"type":"entity","name":"Ada Lovelace","entityType":"person","observations":["wrote the first program","born 1815"]}"#,
    "\n",
    "{\"type\":\"entity\",\"name\":\"Analytical Engine\",\"entityType\":\"machine\",\"observations\":[\"designed by Babbage\",\"never built\",\"日本語 ✓ \u{2028}\"]}",
    "\n",
    r#"{"type":"relation","from":"Ada Lovelace","to":"Analytical Engine","relationType":"wrote programs for"}"#,
    "\n",
    r#"{"type":"relation","from":"Charles Babbage","to":"Analytical Engine","relationType":"designed"}"#,
);

fn export_graph(dir: &Path) -> String {
    ok(on(dir).args(["export", "--format", "mcp-memory"]))
}

#[test]
fn a_reference_file_imported_twice_duplicates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = fixture("mcp-memory/reference_quirks.jsonl");
    let first = ok(import(dir.path(), &file, "mcp-memory"));
    assert_eq!(
        first.trim_end(),
        format!(
            "imported 3 entities (2 new; 5 observations written) and 3 relations (2 new) from {}",
            file.display()
        )
    );
    assert_eq!(export_graph(dir.path()), QUIRKS_MERGED);

    let second = json(import(dir.path(), &file, "mcp-memory"));
    assert_eq!(second["entities"], 3);
    assert_eq!(second["entities_created"], 0);
    assert_eq!(second["observations_written"], 0);
    assert_eq!(second["relations"], 3);
    assert_eq!(second["relations_created"], 0);
    assert_eq!(
        export_graph(dir.path()),
        QUIRKS_MERGED,
        "nothing duplicated"
    );

    // The same file with a final newline and blank lines is the same graph.
    let loose = dir.path().join("loose.jsonl");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&loose, format!("\n{}\n\n", text.replace('\n', "\n \t\n"))).unwrap();
    let third = json(import(dir.path(), &loose, "mcp-memory"));
    assert_eq!(third["entities_created"], 0);
    assert_eq!(export_graph(dir.path()), QUIRKS_MERGED);
}

#[test]
fn an_export_is_byte_for_byte_what_save_graph_writes() {
    let dir = tempfile::tempdir().unwrap();
    let file = fixture("mcp-memory/saved_by_reference.jsonl");
    let saved = std::fs::read(&file).unwrap();
    assert_ne!(
        saved.last(),
        Some(&b'\n'),
        "saveGraph writes no final newline"
    );
    ok(import(dir.path(), &file, "mcp-memory"));

    assert_eq!(
        export_graph(dir.path()).into_bytes(),
        saved,
        "to standard output"
    );
    let out = dir.path().join("out/memory.jsonl");
    let summary = ok(on(dir.path())
        .args(["export", "--format", "mcp-memory", "-o"])
        .arg(&out));
    assert_eq!(
        summary.trim_end(),
        format!(
            "exported 3 entities and 2 relations as mcp-memory to {}",
            out.display()
        )
    );
    assert_eq!(std::fs::read(&out).unwrap(), saved, "to a file");
    // --all asks for the same (the format holds the graph only).
    let all = ok(on(dir.path()).args(["export", "--all", "--format", "MCP-Memory"]));
    assert_eq!(all.into_bytes(), saved);
}

#[test]
fn an_empty_graph_is_an_empty_file() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(export_graph(dir.path()), "");
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let report = json(import(dir.path(), &empty, "mcp-memory"));
    assert_eq!(report["entities"], 0);
}

#[test]
fn a_malformed_file_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.jsonl");
    let good = std::fs::read_to_string(fixture("mcp-memory/reference_quirks.jsonl")).unwrap();
    let cases = [
        (format!("{good}\n{{\"type\":\"entity\",\"name\":\"X\""), 7),
        (format!("{good}\n\n[1, 2]"), 8),
        (good.replacen("\"entityType\":\"person\",", "", 1), 1),
        (good.replacen("\"designed\"", "null", 1), 6),
    ];
    for (text, line) in cases {
        std::fs::write(&bad, &text).unwrap();
        let err = fails(import(dir.path(), &bad, "mcp-memory"), 4);
        assert!(
            err.contains(&format!("corrupt data: {} line {line}: ", bad.display())),
            "{err}"
        );
        assert_eq!(export_graph(dir.path()), "", "nothing was written");
    }
    let nul = dir.path().join("nul.jsonl");
    std::fs::write(
        &nul,
        format!("{good}\n{{\"type\":\"relation\",\"from\":\"a\\u0000\",\"to\":\"b\",\"relationType\":\"r\"}}"),
    )
    .unwrap();
    let err = fails(import(dir.path(), &nul, "mcp-memory"), 4);
    assert!(err.contains("NUL"), "{err}");
    std::fs::write(&nul, [0xff, 0xfe, b'{']).unwrap();
    fails(import(dir.path(), &nul, "mcp-memory"), 4);
    assert_eq!(export_graph(dir.path()), "");
}

#[test]
fn the_format_is_for_the_graph_only() {
    let dir = tempfile::tempdir().unwrap();
    ok(on(dir.path()).args(["append", "chat", "--role", "user", "hello"]));
    let err = fails(
        on(dir.path()).args(["export", "chat", "--format", "mcp-memory"]),
        2,
    );
    assert!(
        err.contains("holds the knowledge graph, not sessions"),
        "{err}"
    );
    let file = fixture("mcp-memory/reference_quirks.jsonl");
    let err = fails(
        import(dir.path(), &file, "mcp-memory").args(["--session", "chat"]),
        2,
    );
    assert!(err.contains("no session to import as one"), "{err}");
    // Session formats still need a session or --all.
    let err = fails(on(dir.path()).args(["export", "--format", "jsonl"]), 2);
    assert!(err.contains("<SESSION|--all>"), "{err}");
}

#[test]
fn export_all_import_migrate_and_doctor_carry_the_graph() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source");
    ok(on(&source).args(["append", "chat", "--role", "user", "hello"]));
    ok(import(
        &source,
        fixture("mcp-memory/saved_by_reference.jsonl"),
        "mcp-memory",
    ));
    let graph = export_graph(&source);

    for format in ["jsonl", "json", "yaml"] {
        let file = dir.path().join(format!("all.{format}"));
        let summary = ok(on(&source)
            .args(["export", "--all", "--format", format, "-o"])
            .arg(&file));
        assert!(
            summary.contains("and 3 entities and 2 relations as"),
            "{summary}"
        );
        let dest = dir.path().join(format!("dest-{format}"));
        let imported = ok(import(&dest, &file, format));
        assert!(
            imported.contains(
                "and 3 entities (3 new; 7 observations written) and 2 relations (2 new) from"
            ),
            "{imported}"
        );
        assert_eq!(export_graph(&dest), graph, "{format}");
        let again = json(import(&dest, &file, format));
        assert_eq!(again["observations_written"], 0, "{format}");
        assert_eq!(export_graph(&dest), graph, "{format}");
    }
    // agentmem's own lines for the graph are the server's: the server (and the mcp-memory
    // import) reads the graph of a JSON lines export, passing over the other records.
    let graph_only = dir.path().join("graph-only");
    ok(import(
        &graph_only,
        dir.path().join("all.jsonl"),
        "mcp-memory",
    ));
    assert_eq!(export_graph(&graph_only), graph);
    assert!(
        ok(on(&graph_only).arg("sessions")).lines().count() <= 1,
        "no session"
    );

    let sqlite = format!("sqlite://{}", dir.path().join("agents.db").display());
    let migrated = ok(agentmem().args(["migrate", "--from", &file_url(&source), "--to", &sqlite]));
    assert!(
        migrated.contains(
            "graph of 3 entities (3 new; 7 observations written) and 2 relations (2 new); counts verified"
        ),
        "{migrated}"
    );
    let back = ok(agentmem().args(["--store", &sqlite, "export", "--format", "mcp-memory"]));
    assert_eq!(back, graph);
    let again = json(agentmem().args(["migrate", "--from", &file_url(&source), "--to", &sqlite]));
    assert_eq!(again["entities_created"], 0);
    assert_eq!(again["observations_written"], 0);

    let doctor = ok(agentmem().args(["--store", &sqlite, "doctor"]));
    assert!(
        doctor.contains("graph:     3 entities, 2 relations"),
        "{doctor}"
    );
    let report = json(on(&source).arg("doctor"));
    assert_eq!(report["counts"]["entities"], 3);
    assert_eq!(report["counts"]["relations"], 2);
}

/// A torn last line of the file store's graph log (a crash mid-write) is reported by `doctor`
/// without being touched, and `doctor --repair` backs the log up, then repairs it.
#[test]
fn doctor_reports_then_repairs_a_torn_graph_log() {
    let dir = tempfile::tempdir().unwrap();
    ok(&mut import(
        dir.path(),
        fixture("mcp-memory/saved_by_reference.jsonl"),
        "mcp-memory",
    ));
    let before = export_graph(dir.path());
    let log = dir.path().join("graph").join("graph.jsonl");
    let mut bytes = std::fs::read(&log).unwrap();
    bytes.extend_from_slice(b"{\"op\":\"create_ent");
    std::fs::write(&log, &bytes).unwrap();

    fails(on(dir.path()).arg("doctor"), 4);
    assert_eq!(
        std::fs::read(&log).unwrap(),
        bytes,
        "a check changes nothing"
    );
    let out = ok(on(dir.path()).args(["doctor", "--repair"]));
    assert!(
        out.contains("torn tail, repaired") && out.contains("backup:"),
        "{out}"
    );
    assert_eq!(export_graph(dir.path()), before, "every whole record kept");
    let backups: Vec<_> = std::fs::read_dir(dir.path().join("backups"))
        .unwrap()
        .map(|e| e.unwrap().path().join("graph").join("graph.jsonl"))
        .collect();
    assert_eq!(backups.len(), 1);
    assert_eq!(
        std::fs::read(&backups[0]).unwrap(),
        bytes,
        "the backup is the log as found"
    );
    ok(on(dir.path()).arg("doctor"));
}
