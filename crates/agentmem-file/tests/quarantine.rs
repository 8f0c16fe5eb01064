//! Hostile files: every file the backend reads (the memory log, an archive, a session's
//! `lifecycle.json`, the root's `agentmem.json`) cut off, replaced by garbage, JSON of another
//! shape, or with invalid UTF-8. The next process still opens the store and serves what is
//! valid; what cannot be read is in a `quarantine/` folder byte for byte; nothing is deleted;
//! the reports (`check`, `repairs`) name the file.

mod common;

use std::path::{Path, PathBuf};

use agentmem_core::{
    AgentMemoryExt, MemoryFilter, MemoryItem, MemoryKind, MemoryStore, Message, SessionId,
    SessionPatch, SessionStore,
};
use agentmem_file::{RepairKind, RepairReport};
use common::{contents, load_some, open, sid};

/// A file the backend reads.
#[derive(Debug, Clone, Copy, PartialEq)]
enum File {
    /// `memories.jsonl`: damaged lines are set aside, the readable records kept.
    Memories,
    /// The older archive's `.jsonl`.
    Archive,
    /// The session's `lifecycle.json`.
    Lifecycle,
    /// The root's `agentmem.json`.
    Schema,
}

/// How it is damaged.
#[derive(Debug, Clone, Copy)]
enum Damage {
    /// Cut off inside its first line.
    Truncated,
    Garbage,
    WrongShape,
    InvalidUtf8,
}

const GARBAGE: &[u8] = b"\x00\x01garbage {{[\xff\n";
const WRONG_SHAPE: &[u8] = b"{\"format\":[\"x\"],\"version\":\"1\",\"op\":\"put\",\"item\":5}\n";

impl File {
    fn path(self, root: &Path, id: &SessionId) -> PathBuf {
        match self {
            File::Memories => root.join("memories.jsonl"),
            File::Archive => oldest_archive(root.join("agents").join(id.as_str()).join("archive")),
            File::Lifecycle => root.join("agents").join(id.as_str()).join("lifecycle.json"),
            File::Schema => root.join("agentmem.json"),
        }
    }

    /// Its quarantine folder: the session's for its own files, else the root's.
    fn quarantine(self, root: &Path, id: &SessionId) -> PathBuf {
        match self {
            File::Archive | File::Lifecycle => root.join("agents").join(id.as_str()),
            File::Memories | File::Schema => root.to_path_buf(),
        }
        .join("quarantine")
    }

    /// Text in it, where invalid UTF-8 goes.
    fn marker(self) -> &'static [u8] {
        match self {
            File::Memories => b"fact one",
            File::Archive => b"bravo",
            File::Lifecycle => b"ada",
            File::Schema => b"agentmem-file",
        }
    }

    /// The damaged file, and what must be set aside: the whole file, or for the memory log
    /// the damaged line (its second, the first item) unless its header is cut off.
    fn damage(self, bytes: &[u8], how: Damage) -> (Vec<u8>, Vec<u8>) {
        let whole = |damaged: Vec<u8>| (damaged.clone(), damaged);
        let at = find(bytes, self.marker());
        match (self, how) {
            (_, Damage::Truncated) => {
                whole(bytes[..bytes.iter().position(|&b| b == b'\n').unwrap_or(4) / 2].to_vec())
            }
            (File::Memories, _) => {
                let start = find(bytes, b"\n") + 1;
                let end = start + find(&bytes[start..], b"\n") + 1;
                let line = match how {
                    Damage::Garbage => GARBAGE.to_vec(),
                    Damage::WrongShape => WRONG_SHAPE.to_vec(),
                    _ => with_invalid_byte(&bytes[start..end], at - start),
                };
                ([&bytes[..start], &line, &bytes[end..]].concat(), line)
            }
            (_, Damage::Garbage) => whole(GARBAGE.to_vec()),
            (_, Damage::WrongShape) => whole(WRONG_SHAPE.to_vec()),
            (_, Damage::InvalidUtf8) => whole(with_invalid_byte(bytes, at)),
        }
    }
}

fn find(bytes: &[u8], what: &[u8]) -> usize {
    bytes
        .windows(what.len())
        .position(|w| w == what)
        .expect("marker in the file")
}

fn with_invalid_byte(bytes: &[u8], at: usize) -> Vec<u8> {
    let mut out = bytes.to_vec();
    out[at] = 0xff;
    out
}

fn oldest_archive(dir: PathBuf) -> PathBuf {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("archive folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    logs.sort();
    logs.swap_remove(0)
}

/// Every file under `dir`.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("list") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// A store with one labelled session (two archives: `alpha bravo`, `charlie delta`; then
/// `echo`) and two memory items.
async fn populated(root: &Path, id: &SessionId) {
    let store = open(root).await;
    let owner = SessionPatch {
        owner: Some(Some("ada".into())),
        ..SessionPatch::default()
    };
    store
        .append(id, &[Message::user("alpha")])
        .await
        .expect("append");
    store.update_session(id, &owner).await.expect("labels");
    // Each compaction archives what came before it.
    for (next, summary) in [("bravo", "charlie"), ("delta", "echo")] {
        let next = Message::user(next);
        store.append_one(id, next).await.expect("append");
        let summary = [Message::user(summary)];
        store.compact(id, &summary).await.expect("compact");
    }
    for fact in ["fact one", "fact two"] {
        let item = MemoryItem::new(MemoryKind::Fact, fact);
        store.put_memory(&item).await.expect("put");
    }
}

/// The report naming `path`, which must be there.
fn naming<'r>(reports: &'r [RepairReport], path: &Path) -> &'r RepairReport {
    reports
        .iter()
        .find(|r| r.path == path)
        .unwrap_or_else(|| panic!("no report names {}: {reports:?}", path.display()))
}

async fn hostile(file: File, how: Damage) {
    let case = format!("{file:?}, {how:?}");
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path();
    let id = sid("s");
    populated(root, &id).await;
    let path = file.path(root, &id);
    let (damaged, set_aside) = file.damage(&std::fs::read(&path).expect("read"), how);
    std::fs::write(&path, &damaged).expect("damage");
    let before = files(root);

    let store = open(root).await; // the next process
    let expected_kind = match (file, how) {
        (File::Memories, _) => RepairKind::Quarantined,
        _ => RepairKind::QuarantinedFile,
    };
    if matches!(file, File::Archive | File::Lifecycle) {
        // A check names it and changes nothing.
        let found = store.check(&id, false).await.expect("check");
        let report = naming(&found, &path);
        assert_eq!(
            (report.kind, report.repaired),
            (expected_kind, false),
            "{case}"
        );
        assert_eq!(std::fs::read(&path).expect("unchanged"), damaged, "{case}");
    }

    // What is valid is served, and the store takes writes.
    let session = load_some(&store, &id).await;
    assert_eq!(contents(&session.messages), ["echo"], "{case}");
    let owner = (file != File::Lifecycle).then(|| "ada".to_string());
    assert_eq!(session.labels.owner, owner, "{case}");
    let archives = store.list_archives(&id).await.expect("list archives");
    if file == File::Archive {
        if let [damaged, _] = archives.as_slice() {
            // Only its header was read by the listing: the load finds the rest unreadable.
            let gone = store.load_archive(&id, &damaged.id).await;
            assert!(gone.is_err(), "{case}");
        }
    }
    let mut kept = Vec::new();
    for info in store.list_archives(&id).await.expect("list archives") {
        let archive = store.load_archive(&id, &info.id).await;
        kept.push(contents(&archive.expect("load archive").messages).join(" "));
    }
    let all_archives = ["alpha bravo", "charlie delta"];
    let lost_archives = usize::from(file == File::Archive);
    assert_eq!(kept, all_archives[lost_archives..], "{case}");
    let items = store
        .list_memories(&MemoryFilter::default())
        .await
        .expect("memories");
    let facts: Vec<&str> = items.iter().map(|i| i.text.as_str()).collect();
    let lost_facts = match (file, how) {
        (File::Memories, Damage::Truncated) => 2,
        (File::Memories, _) => 1,
        _ => 0,
    };
    assert_eq!(facts, ["fact one", "fact two"][lost_facts..], "{case}");
    store
        .append_one(&id, Message::user("foxtrot"))
        .await
        .expect("append");
    let item = MemoryItem::new(MemoryKind::Fact, "fact three");
    store.put_memory(&item).await.expect("put");

    // Set aside byte for byte, reported, nothing deleted.
    let quarantine = file.quarantine(root, &id);
    let aside = files(&quarantine);
    assert_eq!(aside.len(), 1, "{case}: {aside:?}");
    assert_eq!(std::fs::read(&aside[0]).expect("read"), set_aside, "{case}");
    let report = naming(&store.repairs(), &path).clone();
    assert_eq!(
        (report.kind, report.repaired),
        (expected_kind, true),
        "{case}"
    );
    assert!(
        report.detail.contains(&aside[0].display().to_string()),
        "{case}: {report}"
    );
    for old in before {
        assert!(
            old.exists() || old == path,
            "{case}: {} deleted",
            old.display()
        );
    }
}

#[tokio::test]
async fn every_file_the_backend_reads_is_quarantined_never_deleted() {
    for file in [File::Memories, File::Archive, File::Lifecycle, File::Schema] {
        for how in [
            Damage::Truncated,
            Damage::Garbage,
            Damage::WrongShape,
            Damage::InvalidUtf8,
        ] {
            hostile(file, how).await;
        }
    }
}

/// A log of a newer version is not unreadable, only unknown to this build: `Unsupported`, and
/// the file stays where it is, as it is.
#[tokio::test]
async fn newer_versions_are_refused_not_set_aside() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path();
    let id = sid("s");
    populated(root, &id).await;
    for (file, version) in [(File::Memories, "2"), (File::Archive, "1")] {
        let path = file.path(root, &id);
        let bytes = std::fs::read(&path).expect("read");
        let at = find(&bytes, format!("\"version\":{version}").as_bytes()) + 10;
        let newer = [&bytes[..at], b"99", &bytes[at + 1..]].concat();
        std::fs::write(&path, &newer).expect("write");
        let store = open(root).await;
        let read = match file {
            File::Memories => store
                .list_memories(&MemoryFilter::default())
                .await
                .map(drop),
            _ => store.list_archives(&id).await.map(drop),
        };
        let e = read.expect_err("a newer version");
        assert_eq!(
            e.kind(),
            agentmem_core::ErrorKind::Unsupported,
            "{file:?}: {e}"
        );
        assert_eq!(std::fs::read(&path).expect("read"), newer, "{file:?}");
        assert!(!file.quarantine(root, &id).exists(), "{file:?}");
        std::fs::write(&path, &bytes).expect("restore");
    }
}

/// The store property an encrypted store is marked with (`agentmem-crypt`'s), and a value of
/// its shape.
const MARKER: &str = "agentmem.encryption";
const MARKER_VALUE: &str = r#"{"v":1,"key":"0011223344556677","check":"AAAA"}"#;

/// A store marked encrypted, holding one record in an envelope's shape (the file backend
/// stores whatever the encryption layer hands it).
async fn marked(root: &Path) {
    use agentmem_core::PropertyChange;
    let store = open(root).await;
    let envelope = "agentmem-enc:v1:0011223344556677:bm90IHJlYWxseSBjaXBoZXJ0ZXh0";
    store
        .append_one(&sid("vault"), Message::user(envelope))
        .await
        .expect("append");
    let change = PropertyChange::insert(MARKER, MARKER_VALUE);
    assert!(store.set_store_property(&change).await.expect("mark"));
}

/// A [`marked`] store under `root` whose `agentmem.json` `damage` rewrote: the file's path and
/// its damaged bytes.
async fn marked_and_damaged(root: &Path, damage: fn(&[u8]) -> Vec<u8>) -> (PathBuf, Vec<u8>) {
    marked(root).await;
    let path = File::Schema.path(root, &sid("vault"));
    let damaged = damage(&std::fs::read(&path).expect("read"));
    std::fs::write(&path, &damaged).expect("damage");
    (path, damaged)
}

/// The encryption marker survives a damaged `agentmem.json`: read back when the file still
/// parses (a byte of invalid UTF-8 outside the properties, a field of the wrong type), and the
/// file set aside as any damaged file is; when its properties cannot be read back (cut off,
/// garbage, a property name hit by the damage) the store, which holds encrypted records, is
/// refused (`CorruptData` naming the file), again on the next open, and the file is left as
/// it is, rather than opened unmarked, taking plaintext.
#[tokio::test]
async fn the_encryption_marker_survives_a_damaged_schema_file() {
    use agentmem_core::ErrorKind;
    use agentmem_file::{FileConfig, FileStore};
    type Damaging = fn(&[u8]) -> Vec<u8>;
    let recovered: [(&str, Damaging); 2] = [
        ("invalid UTF-8 in the format", |b| {
            with_invalid_byte(b, find(b, b"agentmem-file"))
        }),
        ("a schema version of the wrong type", |b| {
            let at = find(b, b"\"schema_version\": 1") + 18;
            [&b[..at], b"\"one\"", &b[at + 1..]].concat()
        }),
    ];
    for (case, damage) in recovered {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        let (path, damaged) = marked_and_damaged(root, damage).await;
        let store = open(root).await;
        let marker = store.store_property(MARKER).await.expect("read the marker");
        assert_eq!(marker.as_deref(), Some(MARKER_VALUE), "{case}");
        let aside = files(&File::Schema.quarantine(root, &sid("vault")));
        assert_eq!(aside.len(), 1, "{case}: {aside:?}");
        assert_eq!(std::fs::read(&aside[0]).expect("read"), damaged, "{case}");
        let report = naming(&store.repairs(), &path).clone();
        assert_eq!(report.kind, RepairKind::QuarantinedFile, "{case}");
        drop(store);
        let again = open(root).await;
        let marker = again.store_property(MARKER).await.expect("read the marker");
        assert_eq!(marker.as_deref(), Some(MARKER_VALUE), "{case}: kept");
    }

    let refused: [(&str, Damaging); 3] = [
        ("cut off", |b| b[..b.len() / 2].to_vec()),
        ("garbage", |_| GARBAGE.to_vec()),
        ("invalid UTF-8 in the property's name", |b| {
            with_invalid_byte(b, find(b, MARKER.as_bytes()) + 3)
        }),
    ];
    for (case, damage) in refused {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        let (path, damaged) = marked_and_damaged(root, damage).await;
        for attempt in ["first open", "next open"] {
            let config = FileConfig::new(root);
            let Err(err) = FileStore::connect_with(config).await else {
                panic!("{case}, {attempt}: a store that lost its marker must be refused");
            };
            assert_eq!(err.kind(), ErrorKind::CorruptData, "{case}: {err}");
            let text = err.to_string();
            assert!(text.contains(&path.display().to_string()), "{case}: {text}");
            assert!(text.contains("encryption marker"), "{case}: {text}");
            assert_eq!(std::fs::read(&path).expect("read"), damaged, "{case}");
        }
        assert!(
            !File::Schema.quarantine(root, &sid("vault")).exists(),
            "{case}: left in place"
        );
    }
}
