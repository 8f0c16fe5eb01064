//! Checkpoints through export and import: a store's every checkpoint (hostile thread ids, all
//! namespaces, opaque bytes, emptied channels, special writes) exported in each of agentmem's
//! own formats and imported into a fresh store gives the same `list_checkpoints`; an import
//! adds what the store lacks and refuses conflicts whole; a store without checkpoints exports
//! as before and refuses a document with checkpoints before anything is written.
use std::collections::BTreeMap;

use agentmem_core::{
    AgentMemory, ChannelBlob, Checkpoint, CheckpointKey, CheckpointQuery, CheckpointStore,
    CheckpointTuple, ErrorKind, InMemoryStore, MemoryFilter, MemoryItem, MemoryKind, MemoryStore,
    Message, PendingWrite, SessionStore, ThreadInfo, TypedBytes,
};
use agentmem_formats::{json, jsonl, yaml, ExportDocument};
use agentmem_transfer::{export_document, import_document, write_jsonl, ExportCounts};

mod common;
use common::Without;

/// Bytes no text decoder accepts.
const OPAQUE: &[u8] = &[0, 0xff, 0xfe, b'a', 0, 0xc3, 0x28, 0x80];

const THREADS: &[&str] = &[
    "user:42/chat $1 *",
    "../../etc/passwd",
    "a|b%2F\\[x]?{}",
    "ü 日本 \u{202e}",
    "line\nbreak\r\t\"'",
    "-",
];

const NAMESPACES: &[&str] = &["", "node:1|inner:2"];

fn key(thread: &str, ns: &str, id: &str) -> CheckpointKey {
    CheckpointKey {
        thread: thread.parse().unwrap(),
        ns: ns.parse().unwrap(),
        id: id.parse().unwrap(),
    }
}

fn checkpoint(at: CheckpointKey, versions: &[(&str, &str)]) -> Checkpoint {
    let body = [OPAQUE, at.id.as_str().as_bytes()].concat();
    let mut checkpoint = Checkpoint::new(at, TypedBytes::new("msgpack", body));
    checkpoint.channel_versions = versions
        .iter()
        .map(|(c, v)| ((*c).to_owned(), (*v).to_owned()))
        .collect::<BTreeMap<_, _>>();
    let serde_json::Value::Object(meta) = serde_json::json!({
        "source": "loop", "step": -1, "run_id": "run-1", "nul": "a\u{0}b", "n": 42, "s": "42",
    }) else {
        unreachable!("an object")
    };
    checkpoint.metadata = meta;
    checkpoint
}

fn blob(channel: &str, version: &str, value: Option<&[u8]>) -> ChannelBlob {
    ChannelBlob {
        channel: channel.into(),
        version: version.into(),
        value: value.map(|v| TypedBytes::new("msgpack", v)),
    }
}

fn write(task_id: &str, idx: i64, value: &[u8]) -> PendingWrite {
    PendingWrite {
        task_id: task_id.into(),
        idx,
        channel: "messages".into(),
        value: TypedBytes::new("msgpack", value),
        task_path: if idx < 0 {
            "~__pregel_pull, node".into()
        } else {
            String::new()
        },
    }
}

/// Puts two checkpoints in every thread and namespace: the first writes both channel values
/// (one emptied), the second only the one that changed and reads the other from the first;
/// each has pending writes, special ones (negative index) among them.
async fn fill(store: &dyn AgentMemory) {
    for thread in THREADS {
        for ns in NAMESPACES {
            let first = checkpoint(
                key(thread, ns, "1ef01"),
                &[("messages", "1"), ("__start__", "1")],
            );
            let blobs = [
                blob("messages", "1", Some(OPAQUE)),
                blob("__start__", "1", None),
            ];
            store.put_checkpoint(&first, &blobs).await.unwrap();
            let writes = [
                write("t1", 0, OPAQUE),
                write("t1", -1, b"error"),
                write("t2", -3, b""),
            ];
            store.put_writes(&first.key, &writes).await.unwrap();

            let mut second = checkpoint(
                key(thread, ns, "1ef02"),
                &[("messages", "2"), ("__start__", "1")],
            );
            second.parent = Some(first.key.id.clone());
            let blobs = [blob("messages", "2", Some(b"\xff\x00two"))];
            store.put_checkpoint(&second, &blobs).await.unwrap();
            store
                .put_writes(&second.key, &[write("t3", 1, b"x")])
                .await
                .unwrap();
        }
    }
}

/// How many checkpoints and pending writes [`fill`] puts.
const CHECKPOINTS: u64 = 2 * 6 * 2;
const WRITES: u64 = 4 * 6 * 2;

async fn all(store: &dyn AgentMemory) -> Vec<CheckpointTuple> {
    store
        .list_checkpoints(&CheckpointQuery::default())
        .await
        .unwrap()
}

/// A store with a session, a memory item and [`fill`]'s checkpoints.
async fn source() -> impl AgentMemory {
    let store = InMemoryStore::new();
    let id = "demo".parse().unwrap();
    store.append(&id, &[Message::user("hello")]).await.unwrap();
    store
        .put_memory(&MemoryItem::new(MemoryKind::Fact, "likes tea"))
        .await
        .unwrap();
    fill(&store).await;
    store
}

#[tokio::test]
async fn export_holds_every_checkpoint_in_byte_order() {
    let store = source().await;
    let doc = export_document(&store).await.unwrap();
    assert_eq!(doc.checkpoints.len() as u64, CHECKPOINTS);
    let keys: Vec<&CheckpointKey> = doc.checkpoints.iter().map(|t| &t.checkpoint.key).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted, "by thread, namespace, id");
    assert_eq!(keys[0].thread.as_str(), "-");
    let second = &doc.checkpoints[1];
    assert_eq!(
        second.blobs.len(),
        2,
        "the shared channel value comes with the second too"
    );
    assert_eq!(second.blobs[0].channel, "__start__");
    assert!(second.blobs[0].value.is_none());

    let mut out = Vec::new();
    let counts = write_jsonl(&store, &mut out).await.unwrap();
    let expected = ExportCounts {
        sessions: 1,
        messages: 1,
        memories: 1,
        checkpoints: CHECKPOINTS,
        ..ExportCounts::default()
    };
    assert_eq!(counts, expected);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        jsonl::to_string(&doc).unwrap()
    );
}

#[tokio::test]
async fn export_then_import_gives_the_same_checkpoints_in_every_format() {
    let from = source().await;
    let doc = export_document(&from).await.unwrap();
    let texts = [
        (
            "jsonl",
            jsonl::parse(&jsonl::to_string(&doc).unwrap(), "x.jsonl"),
        ),
        (
            "json",
            json::parse(&json::to_string(&doc).unwrap(), "x.json"),
        ),
        (
            "yaml",
            yaml::parse(&yaml::to_string(&doc).unwrap(), "x.yaml"),
        ),
    ];
    for (format, read) in texts {
        let read = read.unwrap();
        assert_eq!(read.checkpoints, doc.checkpoints, "{format}");
        let to = InMemoryStore::new();
        let report = import_document(&to, &read).await.unwrap();
        assert_eq!(report.checkpoints, CHECKPOINTS, "{format}");
        assert_eq!(report.checkpoints_written, CHECKPOINTS, "{format}");
        assert_eq!(report.writes_written, WRITES, "{format}");
        assert_eq!(all(&to).await, all(&from).await, "{format}");
        assert_eq!(threads(&to).await, threads(&from).await, "{format}");
        let exported = export_document(&to).await.unwrap();
        assert_eq!(
            jsonl::to_string(&exported).unwrap(),
            jsonl::to_string(&doc).unwrap(),
            "{format}: exported again, the same bytes"
        );

        let again = import_document(&to, &read).await.unwrap();
        assert_eq!(
            (again.checkpoints_written, again.writes_written),
            (0, 0),
            "{format}"
        );
        assert_eq!(all(&to).await, all(&from).await, "{format}");
    }
}

async fn threads(store: &dyn AgentMemory) -> Vec<ThreadInfo> {
    store.list_threads().await.unwrap()
}

/// Whether `store` holds nothing but `checkpoints`: no session, no memory item.
async fn holds_only(store: &dyn AgentMemory, checkpoints: &[CheckpointTuple]) {
    assert!(
        store.list_sessions().await.unwrap().is_empty(),
        "no session written"
    );
    let items = store.list_memories(&MemoryFilter::default()).await.unwrap();
    assert!(items.is_empty(), "no memory item written");
    assert_eq!(
        all(store).await,
        checkpoints,
        "the checkpoints are as they were"
    );
}

#[tokio::test]
async fn a_conflicting_checkpoint_writes_nothing() {
    let doc = export_document(&source().await).await.unwrap();
    let thread = THREADS[3];
    // The last thread of the document, so a conflict found late still writes nothing before it.
    let cases: Vec<(&str, Checkpoint, Vec<ChannelBlob>, Vec<PendingWrite>)> = vec![
        (
            "another body",
            {
                let mut c = checkpoint(
                    key(thread, "", "1ef01"),
                    &[("messages", "1"), ("__start__", "1")],
                );
                c.body.bytes.push(1);
                c
            },
            vec![],
            vec![],
        ),
        (
            "other metadata",
            {
                let mut c = checkpoint(
                    key(thread, "", "1ef01"),
                    &[("messages", "1"), ("__start__", "1")],
                );
                c.metadata.insert("n".into(), "42".into());
                c
            },
            vec![],
            vec![],
        ),
        (
            "a pending write with another value",
            doc.checkpoints
                .iter()
                .find(|t| t.checkpoint.key == key(thread, "", "1ef01"))
                .unwrap()
                .checkpoint
                .clone(),
            vec![],
            vec![write("t1", 0, b"other")],
        ),
        (
            "a channel value another checkpoint reads with another content",
            checkpoint(key(thread, "node:1|inner:2", "0aaa"), &[("messages", "2")]),
            vec![blob("messages", "2", Some(b"other"))],
            vec![],
        ),
    ];
    for (what, stored, blobs, writes) in cases {
        let to = InMemoryStore::new();
        to.put_checkpoint(&stored, &blobs).await.unwrap();
        if !writes.is_empty() {
            to.put_writes(&stored.key, &writes).await.unwrap();
        }
        let before = all(&to).await;
        let err = import_document(&to, &doc).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Conflict, "{what}: {err}");
        assert!(
            err.message().contains("nothing was imported"),
            "{what}: {err}"
        );
        assert!(
            err.message().contains(&format!("{thread:?}")),
            "{what}: {err}"
        );
        holds_only(&to, &before).await;
    }
}

#[tokio::test]
async fn an_import_completes_what_the_store_holds_in_part() {
    let from = source().await;
    let doc = export_document(&from).await.unwrap();
    let to = InMemoryStore::new();
    // One checkpoint held whole, one without its pending writes, one without its channel values.
    let whole = &doc.checkpoints[0];
    to.put_checkpoint(&whole.checkpoint, &whole.blobs)
        .await
        .unwrap();
    to.put_writes(&whole.checkpoint.key, &whole.writes)
        .await
        .unwrap();
    let bare = &doc.checkpoints[1];
    to.put_checkpoint(&bare.checkpoint, &bare.blobs)
        .await
        .unwrap();
    let blobless = &doc.checkpoints[5];
    to.put_checkpoint(&blobless.checkpoint, &[]).await.unwrap();
    to.put_writes(&blobless.checkpoint.key, &blobless.writes)
        .await
        .unwrap();

    let report = import_document(&to, &doc).await.unwrap();
    assert_eq!(
        report.checkpoints_written,
        CHECKPOINTS - 2,
        "the blobless one again"
    );
    let held = (whole.writes.len() + blobless.writes.len()) as u64;
    assert_eq!(report.writes_written, WRITES - held);
    assert_eq!(all(&to).await, all(&from).await);
}

/// An in-memory store that keeps no checkpoints, as a backend without the capability: every
/// checkpoint operation the transfer might call is refused.
fn no_checkpoints() -> Without {
    Without::new(|c| c.checkpoints = false)
}

#[tokio::test]
async fn a_store_without_checkpoints_exports_as_before() {
    let store = no_checkpoints();
    let id = "demo".parse().unwrap();
    SessionStore::append(&store, &id, &[Message::user("hello")])
        .await
        .unwrap();
    // Checkpoints in the store beneath are not the outer store's to export.
    fill(&store.0).await;
    let doc = export_document(&store).await.unwrap();
    assert!(doc.checkpoints.is_empty());
    let mut out = Vec::new();
    let counts = write_jsonl(&store, &mut out).await.unwrap();
    assert_eq!(counts.checkpoints, 0);
    let text = String::from_utf8(out).unwrap();
    assert!(!text.contains("checkpoint"), "{text}");
    assert_eq!(text, jsonl::to_string(&doc).unwrap());
}

#[tokio::test]
async fn a_store_without_checkpoints_refuses_a_document_with_some_before_writing() {
    let doc = export_document(&source().await).await.unwrap();
    let store = no_checkpoints();
    let err = import_document(&store, &doc).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
    assert!(err.message().contains("keeps no checkpoints"), "{err}");
    assert!(err.message().contains("nothing was imported"), "{err}");
    holds_only(&store.0, &[]).await;

    let without = ExportDocument {
        checkpoints: Vec::new(),
        ..doc
    };
    let report = import_document(&store, &without).await.unwrap();
    assert_eq!((report.sessions_created, report.checkpoints), (1, 0));
}

#[tokio::test]
async fn a_malformed_document_is_refused_before_writing() {
    let mut doc = export_document(&source().await).await.unwrap();
    let last = doc.checkpoints.len() - 1;
    doc.checkpoints[last].blobs[0].version = "not read".into();
    let to = InMemoryStore::new();
    let err = import_document(&to, &doc).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::CorruptData, "{err}");
    holds_only(&to, &[]).await;

    let mut doc = export_document(&source().await).await.unwrap();
    let twice = doc.checkpoints[last].writes[0].clone();
    doc.checkpoints[last].writes.push(twice);
    let err = import_document(&to, &doc).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::CorruptData, "{err}");
    assert!(err.message().contains("appears twice"), "{err}");
    holds_only(&to, &[]).await;
}
