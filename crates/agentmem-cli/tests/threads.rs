//! Checkpoint threads from the command line: `threads`, `thread`, `fork-thread`, and
//! checkpoints through `import`, `export` and `doctor`, on a file store.
mod common;

use agentmem_core::{
    ChannelBlob, Checkpoint, CheckpointKey, CheckpointTuple, PendingWrite, TypedBytes,
};
use agentmem_formats::{ExportDocument, Format};
use common::{export_into_fresh, fails, import, json, ok, on};
use serde_json::json;

/// A document holding two threads: `user:42/chat *` (three root checkpoints and one in a
/// subgraph) and `other`.
fn document() -> ExportDocument {
    let mut doc = ExportDocument::new();
    let mut add = |thread: &str, ns: &str, id: &str, parent: Option<&str>, step: i64| {
        let key = CheckpointKey {
            thread: thread.parse().unwrap(),
            ns: ns.parse().unwrap(),
            id: id.parse().unwrap(),
        };
        let mut checkpoint = Checkpoint::new(key, TypedBytes::new("msgpack", vec![0, 1, 255]));
        checkpoint.parent = parent.map(|p| p.parse().unwrap());
        checkpoint
            .channel_versions
            .insert("messages".into(), id.into());
        checkpoint.metadata = json!({"step": step, "source": "loop"})
            .as_object()
            .cloned()
            .unwrap();
        doc.checkpoints.push(CheckpointTuple {
            checkpoint,
            blobs: vec![ChannelBlob {
                channel: "messages".into(),
                version: id.into(),
                value: Some(TypedBytes::new("json", format!("[{step}]").into_bytes())),
            }],
            writes: vec![PendingWrite {
                task_id: format!("task-{id}"),
                idx: 0,
                channel: "messages".into(),
                value: TypedBytes::new("json", b"\"hi\"".to_vec()),
                task_path: "~0".into(),
            }],
        });
    };
    add("user:42/chat *", "", "1ef1", None, 0);
    add("user:42/chat *", "", "1ef2", Some("1ef1"), 1);
    add("user:42/chat *", "", "1ef3", Some("1ef2"), 2);
    add("user:42/chat *", "child:9", "1ef2a", None, 0);
    add("other", "", "1ef5", None, 0);
    doc
}

#[test]
fn threads_are_listed_shown_forked_and_exported() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("checkpoints.json");
    Format::Json.export(&document(), &file).unwrap();
    ok(import(dir.path(), &file, "json"));

    assert_eq!(ok(on(dir.path()).arg("threads")), "other\nuser:42/chat *\n");
    let listed = json(on(dir.path()).args(["--json", "threads"]));
    assert_eq!(listed[1]["thread"], "user:42/chat *");
    assert_eq!(listed[1]["checkpoints"], 4);

    let shown = ok(on(dir.path()).args(["thread", "user:42/chat *"]));
    let lines: Vec<&str> = shown.lines().collect();
    assert!(lines[0].starts_with("CHECKPOINT"), "{shown}");
    assert!(lines[1].starts_with("1ef3"), "newest first: {shown}");
    assert!(
        lines[1].contains("loop") && lines[1].contains("1ef2"),
        "{shown}"
    );
    assert_eq!(lines.len(), 5, "{shown}");
    let root = json(on(dir.path()).args(["--json", "thread", "user:42/chat *", "--ns", ""]));
    let ids: Vec<&str> = root
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["1ef3", "1ef2", "1ef1"]);
    assert_eq!(root[0]["step"], 2);
    assert_eq!(root[0]["writes"], 1);

    let forked =
        ok(on(dir.path()).args(["fork-thread", "user:42/chat *", "what if", "--at", "1ef2"]));
    assert!(forked.contains("2 checkpoints"), "{forked}");
    let copy = json(on(dir.path()).args(["--json", "thread", "what if"]));
    assert_eq!(
        copy.as_array().unwrap().len(),
        2,
        "1ef1 and 1ef2 of the root"
    );
    let err = fails(on(dir.path()).args(["fork-thread", "other", "what if"]), 6);
    assert!(err.contains("holds checkpoints already"), "{err}");
    let err = fails(on(dir.path()).args(["thread", "nobody"]), 3);
    assert!(err.contains("holds no checkpoint"), "{err}");

    let doctor = ok(on(dir.path()).arg("doctor"));
    assert!(doctor.contains("threads:   3 (7 checkpoints)"), "{doctor}");

    // An export holds every checkpoint; importing it into a fresh store gives the same threads.
    let exported = dir.path().join("all.jsonl");
    let fresh = export_into_fresh(dir.path(), "--all", "jsonl", &exported);
    assert_eq!(
        ok(on(fresh.path()).arg("threads")),
        "other\nuser:42/chat *\nwhat if\n"
    );
    assert_eq!(
        ok(on(fresh.path()).args(["thread", "user:42/chat *"])),
        shown
    );
}
