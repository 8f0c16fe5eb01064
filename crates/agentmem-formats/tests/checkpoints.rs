//! Checkpoints in agentmem's own formats: byte-for-byte round trips through JSON lines, JSON
//! and YAML (opaque bytes with NUL and invalid UTF-8, emptied channels, special writes,
//! hostile thread ids), deterministic bytes, and malformed checkpoints refused with typed
//! errors, never a panic.
use std::collections::BTreeMap;

use agentmem_core::{
    ChannelBlob, Checkpoint, CheckpointKey, CheckpointTuple, ErrorKind, MemoryItem, MemoryKind,
    Message, PendingWrite, TypedBytes,
};
use agentmem_formats::{
    canonical_checkpoint, canonicalize, json, jsonl, yaml, ExportDocument, Format, SessionExport,
};
use serde_json::{json, Value};

/// Bytes no text decoder accepts: NULs, a lone continuation byte, a truncated sequence.
const OPAQUE: &[u8] = &[0, 0xff, 0xfe, b'a', 0, 0xc3, 0x28, 0x80];

fn key(thread: &str, ns: &str, id: &str) -> CheckpointKey {
    CheckpointKey {
        thread: thread.parse().unwrap(),
        ns: ns.parse().unwrap(),
        id: id.parse().unwrap(),
    }
}

fn time() -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339("2026-04-20T18:35:04.123456Z")
        .unwrap()
        .with_timezone(&chrono::Utc)
}

fn write(task_id: &str, idx: i64, task_path: &str) -> PendingWrite {
    PendingWrite {
        task_id: task_id.into(),
        idx,
        channel: "messages".into(),
        value: TypedBytes::new("msgpack", [OPAQUE, task_id.as_bytes()].concat()),
        task_path: task_path.into(),
    }
}

/// A checkpoint reading two channels, one of them emptied, with special and ordinary writes.
fn tuple(thread: &str, ns: &str, id: &str) -> CheckpointTuple {
    let mut checkpoint = Checkpoint::new(key(thread, ns, id), TypedBytes::new("msgpack", OPAQUE));
    checkpoint.parent = Some("0000".parse().unwrap());
    checkpoint.created_at = time();
    checkpoint.channel_versions = BTreeMap::from([
        ("messages".into(), format!("0000{id}.0.5")),
        ("__start__".into(), "1".into()),
        ("a b/c:d".into(), "2".into()),
    ]);
    let meta = json!({
        "source": "loop",
        "step": -1,
        "run_id": "run-1",
        "parents": {"": "1ef0", "z": [1, "1", null, true, 1.5]},
        "nul": "a\u{0}b",
        "n": 42,
        "s": "42",
        "big": u64::MAX,
        "deep": [[{"z": 1, "a": null}]],
    });
    let Value::Object(meta) = meta else {
        unreachable!("an object")
    };
    checkpoint.metadata = meta;
    let blob = |channel: &str, value: Option<TypedBytes>| ChannelBlob {
        channel: channel.into(),
        version: checkpoint.channel_versions[channel].clone(),
        value,
    };
    let blobs = vec![
        blob("messages", Some(TypedBytes::new("msgpack", OPAQUE))),
        blob("__start__", None),
        blob("a b/c:d", Some(TypedBytes::new("bytes", Vec::new()))),
    ];
    let writes = vec![
        write("t2", -3, "~__pregel_pull, node"),
        write("t1", 1, ""),
        write("t1", -1, ""),
        write("t1", 0, ""),
    ];
    let mut tuple = CheckpointTuple {
        checkpoint,
        blobs,
        writes,
    };
    canonical_checkpoint(&mut tuple);
    tuple
}

/// Thread ids that break naive keys, paths and patterns.
fn hostile_threads() -> Vec<String> {
    vec![
        "user:42/chat $1 *".into(),
        "../../etc/passwd".into(),
        "a|b%2F\\[x]?{}".into(),
        "ü 日本 \u{202e}".into(),
        "line\nbreak\r\t\u{7f}\"'".into(),
        "-".into(),
        "x".repeat(512),
    ]
}

/// A session, a memory item and checkpoints in several hostile threads and namespaces,
/// ordered as an export orders them.
fn sample() -> ExportDocument {
    let mut doc = ExportDocument::new();
    let mut session = SessionExport::new("demo".parse().unwrap());
    session
        .messages
        .push(Message::user("hello").with_timestamp(time()));
    doc.sessions.push(session);
    let mut item = MemoryItem::new(MemoryKind::Fact, "likes tea");
    item.created_at = time();
    item.updated_at = time();
    doc.memories.push(item);
    for thread in hostile_threads() {
        for ns in ["", "node:1|inner:2", "sub graph/ü"] {
            for id in ["1ef01", "1ef02"] {
                doc.checkpoints.push(tuple(&thread, ns, id));
            }
        }
    }
    doc.checkpoints
        .sort_by(|a, b| a.checkpoint.key.cmp(&b.checkpoint.key));
    canonicalize(&mut doc);
    doc
}

fn render(format: Format, doc: &ExportDocument) -> String {
    match format {
        Format::Jsonl => jsonl::to_string(doc),
        Format::Json => json::to_string(doc),
        Format::Yaml => yaml::to_string(doc),
        other => panic!("{other} is not one of agentmem's own formats"),
    }
    .unwrap()
}

fn parse(format: Format, text: &str) -> agentmem_core::Result<ExportDocument> {
    match format {
        Format::Jsonl => jsonl::parse(text, "in"),
        Format::Json => json::parse(text, "in"),
        Format::Yaml => yaml::parse(text, "in"),
        other => panic!("{other} is not one of agentmem's own formats"),
    }
}

const OWN: [Format; 3] = [Format::Jsonl, Format::Json, Format::Yaml];

#[test]
fn checkpoints_round_trip_byte_for_byte_in_every_own_format() {
    let doc = sample();
    let dir = tempfile::tempdir().unwrap();
    for format in OWN {
        let text = render(format, &doc);
        let back = parse(format, &text).unwrap();
        assert_eq!(back, doc, "{format}");
        assert_eq!(render(format, &back), text, "{format}: same bytes again");
        let first = &back.checkpoints[0];
        assert_eq!(first.checkpoint.body.bytes, OPAQUE, "{format}");
        assert!(first.blobs.iter().any(|b| b.value.is_none()), "{format}");
        assert_eq!(first.checkpoint.metadata["nul"], "a\u{0}b", "{format}");
        assert_eq!(first.checkpoint.metadata["n"], 42, "{format}");
        assert_eq!(first.checkpoint.metadata["s"], "42", "{format}");
        assert_eq!(first.checkpoint.metadata["big"], u64::MAX, "{format}");
        let idx: Vec<i64> = first.writes.iter().map(|w| w.idx).collect();
        assert_eq!(idx, [-1, 0, 1, -3], "{format}: sorted by path, task, index");

        let path = dir.path().join(format!("export.{format}"));
        format.export(&doc, &path).unwrap();
        assert_eq!(
            format.import(&path).unwrap(),
            doc,
            "{format}: through a file"
        );
    }
}

#[test]
fn the_same_checkpoints_give_the_same_bytes_whatever_their_order_inside() {
    let doc = sample();
    let mut shuffled = doc.clone();
    for tuple in &mut shuffled.checkpoints {
        tuple.blobs.reverse();
        tuple.writes.reverse();
        // Rebuild the metadata with its keys in reverse order.
        let entries: Vec<(String, Value)> = tuple
            .checkpoint
            .metadata
            .iter()
            .rev()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        tuple.checkpoint.metadata = entries.into_iter().collect();
    }
    for format in OWN {
        assert_eq!(render(format, &shuffled), render(format, &doc), "{format}");
    }
}

#[test]
fn jsonl_writes_one_checkpoint_record_per_line_after_sessions_and_memories() {
    let doc = sample();
    let text = jsonl::to_string(&doc).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let kinds: Vec<String> = lines[1..]
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["type"].to_string())
        .collect();
    let n = doc.checkpoints.len();
    assert_eq!(kinds.len(), 3 + n);
    assert_eq!(kinds[..3], [r#""session""#, r#""message""#, r#""memory""#]);
    assert!(
        kinds[3..].iter().all(|k| k == r#""checkpoint""#),
        "{kinds:?}"
    );
    assert!(lines[4].starts_with(r#"{"type":"checkpoint","checkpoint":{"thread":"#));
    // The opaque bytes are standard base64.
    assert!(lines[4].contains(r#""body":{"type":"msgpack","bytes":"AP/+YQDDKIA="}"#));

    // A checkpoint record where a session's message is due names its line.
    let mut cut: Vec<&str> = lines.clone();
    cut.remove(2);
    cut.insert(2, lines[4]);
    let err = jsonl::parse(&(cut.join("\n") + "\n"), "f.jsonl").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::CorruptData);
    assert!(err.message().contains("f.jsonl line 3"), "{err}");
    assert!(err.message().contains("a checkpoint record"), "{err}");
}

#[test]
fn a_document_without_checkpoints_is_written_as_before() {
    let mut doc = sample();
    doc.checkpoints.clear();
    assert!(!json::to_string(&doc).unwrap().contains("checkpoints"));
    assert!(!yaml::to_string(&doc).unwrap().contains("checkpoints"));
    assert!(!jsonl::to_string(&doc).unwrap().contains("checkpoint"));
    let empty = json::to_string(&ExportDocument::new()).unwrap();
    assert_eq!(
        empty,
        "{\n  \"agentmem_export\": 1,\n  \"sessions\": [],\n  \"memories\": []\n}\n"
    );
}

/// One checkpoint record (as JSON) changed by `change`.
fn changed(change: impl FnOnce(&mut Value)) -> Value {
    let mut value = serde_json::to_value(tuple("t", "", "1ef01")).unwrap();
    change(&mut value);
    value
}

/// Nested arrays `depth` deep.
fn nested(depth: usize) -> Value {
    (0..depth).fold(json!(1), |inner, _| json!([inner]))
}

/// Checkpoint records that no store could take or that would make an import ambiguous, with
/// what each breaks.
fn malformed() -> Vec<(&'static str, Vec<Value>)> {
    let one = |what, change: fn(&mut Value)| (what, vec![changed(change)]);
    vec![
        one("empty thread", |v| v["checkpoint"]["thread"] = json!("")),
        one("NUL in thread", |v| {
            v["checkpoint"]["thread"] = json!("a\u{0}b")
        }),
        one("long thread", |v| {
            v["checkpoint"]["thread"] = json!("x".repeat(513))
        }),
        one("thread not text", |v| v["checkpoint"]["thread"] = json!(7)),
        one("NUL in namespace", |v| {
            v["checkpoint"]["ns"] = json!("\u{0}")
        }),
        one("empty id", |v| v["checkpoint"]["id"] = json!("")),
        one("control in id", |v| v["checkpoint"]["id"] = json!("a\nb")),
        one("long id", |v| {
            v["checkpoint"]["id"] = json!("1".repeat(129))
        }),
        one("no id", |v| {
            v["checkpoint"].as_object_mut().unwrap().remove("id");
        }),
        one("bad base64", |v| {
            v["checkpoint"]["body"]["bytes"] = json!("not base64!")
        }),
        one("bytes not text", |v| {
            v["checkpoint"]["body"]["bytes"] = json!([0, 1])
        }),
        one("no body", |v| {
            v["checkpoint"].as_object_mut().unwrap().remove("body");
        }),
        one("NUL in type tag", |v| {
            v["checkpoint"]["body"]["type"] = json!("a\u{0}")
        }),
        one("long type tag", |v| {
            v["checkpoint"]["body"]["type"] = json!("t".repeat(1025))
        }),
        one("version not text", |v| {
            v["checkpoint"]["channel_versions"]["messages"] = json!(5)
        }),
        one("NUL in channel", |v| {
            v["checkpoint"]["channel_versions"]["a\u{0}"] = json!("1")
        }),
        one("metadata not an object", |v| {
            v["checkpoint"]["metadata"] = json!([1])
        }),
        one("metadata too deep", |v| {
            v["checkpoint"]["metadata"]["deep"] = nested(70)
        }),
        one("metadata deeper than the parser goes", |v| {
            v["checkpoint"]["metadata"]["deep"] = nested(300)
        }),
        one("bad time", |v| {
            v["checkpoint"]["created_at"] = json!("yesterday")
        }),
        one("no checkpoint", |v| {
            v.as_object_mut().unwrap().remove("checkpoint");
        }),
        one("no blobs", |v| {
            v.as_object_mut().unwrap().remove("blobs");
        }),
        one("blob not read", |v| v["blobs"][0]["version"] = json!("9")),
        one("blob of an unknown channel", |v| {
            v["blobs"][0]["channel"] = json!("nope")
        }),
        one("blob twice", |v| {
            let first = v["blobs"][0].clone();
            v["blobs"].as_array_mut().unwrap().push(first);
        }),
        one("blob value bad base64", |v| {
            v["blobs"][1]["value"]["bytes"] = json!("***")
        }),
        one("idx not an integer", |v| v["writes"][0]["idx"] = json!(1.5)),
        one("idx beyond i64", |v| {
            v["writes"][0]["idx"] = json!(u64::MAX)
        }),
        one("idx text", |v| v["writes"][0]["idx"] = json!("0")),
        one("write twice", |v| {
            let first = v["writes"][0].clone();
            v["writes"].as_array_mut().unwrap().push(first);
        }),
        one("NUL in task id", |v| {
            v["writes"][0]["task_id"] = json!("\u{0}")
        }),
        one("long task path", |v| {
            v["writes"][0]["task_path"] = json!("p".repeat(4097))
        }),
        one("writes not a list", |v| v["writes"] = json!({})),
        one("not an object", |v| *v = json!(["checkpoint"])),
        (
            "the same checkpoint twice",
            vec![changed(|_| {}), changed(|_| {})],
        ),
        (
            "one channel value, two contents",
            vec![
                changed(|_| {}),
                changed(|v| {
                    v["checkpoint"]["id"] = json!("1ef02");
                    v["blobs"][0]["value"] = json!({"type": "json", "bytes": ""});
                }),
            ],
        ),
    ]
}

#[test]
fn malformed_checkpoints_are_refused_with_typed_errors() {
    for (what, records) in malformed() {
        let mut lines = String::from("{\"agentmem_export\":1}\n");
        for record in &records {
            let mut record = record.clone();
            if let Value::Object(map) = &mut record {
                map.insert("type".into(), json!("checkpoint"));
            }
            lines.push_str(&serde_json::to_string(&record).unwrap());
            lines.push('\n');
        }
        let document = json!({"agentmem_export": 1, "checkpoints": records});
        let texts = [
            (Format::Jsonl, lines),
            (Format::Json, serde_json::to_string(&document).unwrap()),
            (Format::Yaml, serde_norway::to_string(&document).unwrap()),
        ];
        for (format, text) in texts {
            let err = parse(format, &text).expect_err(what);
            assert_eq!(
                err.kind(),
                ErrorKind::CorruptData,
                "{what} in {format}: {err}"
            );
        }
    }
}

#[test]
fn validation_names_the_checkpoint_and_what_is_wrong() {
    let mut doc = sample();
    doc.validate("x").unwrap();
    let dup = doc.checkpoints[0].clone();
    doc.checkpoints.push(dup);
    let err = doc.validate("x").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::CorruptData);
    assert!(err.message().contains("appears twice"), "{err}");
    assert!(
        err.message().starts_with("x: checkpoint \"1ef01\""),
        "{err}"
    );

    let mut doc = sample();
    doc.checkpoints[0].blobs[0].version = "other".into();
    let err = doc.validate("x").unwrap_err();
    assert!(err.message().contains("is not one it reads"), "{err}");
}
