//! Crash repair: what a crash can leave behind is detected, reported and repaired on the
//! next open, and real corruption is an error naming the file and line, never a panic.

mod common;

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

use agentmem_core::{
    AgentMemoryExt, ErrorKind, Layered, Message, MessageId, SessionId, SessionStore,
};
use agentmem_file::{Durability, FileStore, RepairKind};
use agentmem_formats::swarms::render_memory_md;
use common::{at, kinds, load_some, open_with, shown, sid};

/// Opens the store in `root` with fsync, the durability whose crashes these tests mimic.
async fn open(root: &Path) -> Layered<FileStore> {
    open_with(root, Durability::Fsync).await
}

fn truncate(path: &Path, len: u64) {
    OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|f| f.set_len(len))
        .expect("truncate");
}

fn three() -> Vec<Message> {
    vec![
        Message::user("Research cloud databases.")
            .with_timestamp(at(1))
            .with_id(MessageId::new("m1").expect("valid message id")),
        Message::assistant("BigQuery, ClickHouse,\n---\nAlloyDB.")
            .with_timestamp(at(2))
            .with_id(MessageId::new("m2").expect("valid message id")),
        Message::user("Thanks")
            .with_timestamp(at(3))
            .with_id(MessageId::new("m3").expect("valid message id")),
    ]
}

/// Each of `messages` as a batch of its own, to be appended one by one.
fn one_by_one(messages: Vec<Message>) -> impl Iterator<Item = Vec<Message>> {
    messages.into_iter().map(|m| vec![m])
}

/// Appends each of `batches` to session `id` of the store in `root`, then closes the store, as
/// a process that exited (or crashed later) leaves it.
async fn write_and_close(
    root: &Path, id: &SessionId, batches: impl IntoIterator<Item = Vec<Message>>,
) {
    let store = open(root).await;
    for batch in batches {
        store.append(id, &batch).await.expect("append");
    }
}

#[tokio::test]
async fn memory_md_cut_mid_record_is_reported_and_regenerated() {
    let dir = tempfile::tempdir().expect("temp dir");
    let id = sid("ResearchAgent");
    write_and_close(dir.path(), &id, [three()]).await;
    let md_path = dir.path().join("agents/ResearchAgent/MEMORY.md");
    let original = std::fs::read(&md_path).expect("read MEMORY.md");
    truncate(&md_path, original.len() as u64 - 12);

    let store = open(dir.path()).await;
    // A check without repair reports and changes nothing.
    let found = store.check(&id, false).await.expect("check");
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].kind, RepairKind::MemoryMdRegenerated);
    assert!(!found[0].repaired);
    assert_eq!(
        std::fs::read(&md_path).expect("read").len(),
        original.len() - 12
    );
    assert!(store.repairs().is_empty());

    // First real access repairs it.
    assert_eq!(store.messages(&id).await.expect("load"), three());
    assert_eq!(kinds(&store), [RepairKind::MemoryMdRegenerated]);
    assert!(store.repairs()[0].repaired);
    assert_eq!(std::fs::read(&md_path).expect("read"), original);
    // And it stays repaired: a fresh check finds nothing.
    assert!(store.check(&id, true).await.expect("check").is_empty());
}

#[tokio::test]
async fn session_log_cut_mid_line_keeps_every_complete_message() {
    let dir = tempfile::tempdir().expect("temp dir");
    let id = sid("torn");
    let batch = vec![
        Message::assistant("batch one").with_timestamp(at(4)),
        Message::assistant("batch two").with_timestamp(at(5)),
    ];
    let log_path = dir.path().join("agents/torn/session.jsonl");
    write_and_close(dir.path(), &id, one_by_one(three()).chain([batch])).await;
    let full = std::fs::read(&log_path).expect("read log");
    // Cut the last line (the batch) in the middle: the whole batch goes, never half of it.
    truncate(&log_path, full.len() as u64 - 40);

    let store = open(dir.path()).await;
    let session = load_some(&store, &id).await;
    assert_eq!(session.messages, three());
    assert_eq!(
        kinds(&store),
        [RepairKind::TornTail, RepairKind::MemoryMdRegenerated]
    );
    let repaired = std::fs::read(&log_path).expect("read log");
    assert!(repaired.ends_with(b"\n"));
    assert!(full.starts_with(&repaired));
    let md = std::fs::read_to_string(store.memory_md_path(&id)).expect("MEMORY.md");
    assert_eq!(md, render_memory_md("torn", session.created_at, &three()));

    // Appends continue cleanly after the repair, and a second process sees them.
    store
        .append_one(&id, Message::user("after").with_timestamp(at(6)))
        .await
        .expect("append");
    let other = open(dir.path()).await;
    assert_eq!(other.messages(&id).await.expect("load").len(), 4);
    assert!(other.repairs().is_empty(), "{:?}", other.repairs());
}

/// Session `name` in `root` holding [`three`] in one batch, with `tail` written after its
/// log's last line: the log's path, its bytes now, and its length before the tail.
async fn session_with_tail(root: &Path, name: &str, tail: &[u8]) -> (PathBuf, Vec<u8>, usize) {
    let log_path = root.join("agents").join(name).join("session.jsonl");
    write_and_close(root, &sid(name), [three()]).await;
    let mut bytes = std::fs::read(&log_path).expect("read");
    let good_len = bytes.len();
    bytes.extend_from_slice(tail);
    std::fs::write(&log_path, &bytes).expect("write");
    (log_path, bytes, good_len)
}

#[tokio::test]
async fn a_zero_filled_last_line_is_a_torn_tail() {
    let dir = tempfile::tempdir().expect("temp dir");
    let id = sid("garbage_tail");
    // A power loss can leave zeros where a line should be.
    let zeros = [&[0u8; 64][..], b"\n"].concat();
    let (log_path, _, good_len) = session_with_tail(dir.path(), "garbage_tail", &zeros).await;
    let store = open(dir.path()).await;
    assert_eq!(store.messages(&id).await.expect("load"), three());
    assert_eq!(kinds(&store), [RepairKind::TornTail]);
    assert_eq!(std::fs::read(&log_path).expect("read").len(), good_len);
}

/// The files of the session folder's `quarantine/`, with their bytes.
fn quarantined(root: &Path, name: &str) -> Vec<Vec<u8>> {
    let dir = root.join("agents").join(name).join("quarantine");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    entries
        .map(|e| std::fs::read(e.expect("entry").path()).expect("read"))
        .collect()
}

#[tokio::test]
async fn a_complete_last_line_that_does_not_parse_is_set_aside_never_deleted() {
    let dir = tempfile::tempdir().expect("temp dir");
    let id = sid("whole_bad_tail");
    // A whole line (newline-terminated) that no reader accepts: not what a crash leaves.
    let bad = b"[{\"id\":\"x\", \"role\": \"\"}]\n";
    let (log_path, bytes, _) = session_with_tail(dir.path(), "whole_bad_tail", bad).await;
    let bad_line = bytes.iter().filter(|&&b| b == b'\n').count();
    // Checking alone changes nothing and names the line.
    let store = open(dir.path()).await;
    let err = store
        .check(&id, false)
        .await
        .expect_err("corrupt, not torn");
    assert_eq!(err.kind(), ErrorKind::CorruptData);
    assert!(
        err.to_string()
            .contains(&format!("session.jsonl line {bad_line}:")),
        "{err}"
    );
    assert_eq!(std::fs::read(&log_path).expect("read"), bytes);
    // Reading sets the line aside, byte for byte, and keeps the session readable.
    assert_eq!(store.messages(&id).await.expect("load"), three());
    assert_eq!(kinds(&store), [RepairKind::Quarantined]);
    let detail = &store.repairs()[0].detail;
    assert!(detail.contains(&format!("line {bad_line}")), "{detail}");
    assert_eq!(quarantined(dir.path(), "whole_bad_tail"), [bad.to_vec()]);
    let other = open(dir.path()).await;
    assert_eq!(other.messages(&id).await.expect("load"), three());
    assert!(other.repairs().is_empty(), "{:?}", other.repairs());
}

#[tokio::test]
async fn a_malformed_line_in_the_middle_is_named_and_set_aside() {
    let dir = tempfile::tempdir().expect("temp dir");
    let id = sid("corrupt");
    let log_path = dir.path().join("agents/corrupt/session.jsonl");
    write_and_close(dir.path(), &id, one_by_one(three())).await;
    let text = std::fs::read_to_string(&log_path).expect("read");
    let mut lines: Vec<&str> = text.lines().collect();
    let broken = "{\"id\": \"half a message";
    lines[2] = broken;
    std::fs::write(&log_path, lines.join("\n") + "\n").expect("write");
    let store = open(dir.path()).await;
    let err = store.check(&id, false).await.expect_err("check reports it");
    assert_eq!(err.kind(), ErrorKind::CorruptData);
    assert!(err.to_string().contains("session.jsonl line 3"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&log_path)
            .expect("read")
            .lines()
            .count(),
        4,
        "a check drops nothing"
    );
    // The other messages stay readable; the broken line is kept aside, not dropped.
    let kept = store.messages(&id).await.expect("load");
    assert_eq!(kept, [three()[0].clone(), three()[2].clone()]);
    assert_eq!(
        quarantined(dir.path(), "corrupt"),
        [format!("{broken}\n").into_bytes()]
    );
    assert_eq!(kinds(&store), [RepairKind::Quarantined]);
}

#[tokio::test]
async fn interrupted_compactions_leave_the_old_or_the_new_state() {
    let dir = tempfile::tempdir().expect("temp dir");
    let id = sid("compacted");
    let summary = Message::system("[Compressed Memory Summary]\nsummary").with_timestamp(at(9));
    let (archive_dir, md_path, info, before_md);
    {
        let store = open(dir.path()).await;
        store.append(&id, &three()).await.expect("append");
        before_md = std::fs::read(store.memory_md_path(&id)).expect("read");
        info = store
            .compact(&id, std::slice::from_ref(&summary))
            .await
            .expect("compact");
        archive_dir = store.archive_dir(&id);
        md_path = store.memory_md_path(&id);
    }
    let archived = archive_dir.join(format!("{}.jsonl", info.id));
    assert_eq!(
        std::fs::read(archive_dir.join(format!("{}.md", info.id))).expect("archive md"),
        before_md
    );

    // Crash 1: a second compaction wrote its archive but never replaced the session.
    let orphan = std::fs::read_to_string(&archived)
        .expect("read archive")
        .replacen("\"generation\":0", "\"generation\":1", 1);
    std::fs::write(
        archive_dir.join("history_2099-01-01_00-00-00.jsonl"),
        orphan,
    )
    .expect("write");
    std::fs::write(
        archive_dir.join("history_2099-01-01_00-00-00.md"),
        &before_md,
    )
    .expect("write");
    // Crash 2: the archive's `.md` view of the first compaction is missing.
    std::fs::remove_file(archive_dir.join(format!("{}.md", info.id))).expect("remove");
    // Crash 3: the session log was replaced but MEMORY.md is still the old one.
    std::fs::write(&md_path, &before_md).expect("write");
    // And a temporary file from a rewrite that never got renamed.
    std::fs::write(dir.path().join("agents/compacted/.tmp-123"), b"partial").expect("write");

    let store = open(dir.path()).await;
    let archives = store.list_archives(&id).await.expect("list archives");
    assert_eq!(archives.len(), 1);
    assert_eq!(archives[0].id, info.id);
    assert_eq!(
        store.messages(&id).await.expect("load"),
        vec![summary.clone()]
    );
    let mut found = kinds(&store);
    found.sort_by_key(|k| format!("{k:?}"));
    assert_eq!(
        found,
        [
            RepairKind::ArchiveMdRegenerated,
            RepairKind::MemoryMdRegenerated,
            RepairKind::OrphanArchive,
            RepairKind::TempFile,
        ]
    );
    assert!(!archive_dir
        .join("history_2099-01-01_00-00-00.jsonl")
        .exists());
    assert!(!archive_dir.join("history_2099-01-01_00-00-00.md").exists());
    assert!(!dir.path().join("agents/compacted/.tmp-123").exists());
    assert_eq!(
        std::fs::read(archive_dir.join(format!("{}.md", info.id))).expect("regenerated"),
        before_md
    );
    let md = std::fs::read_to_string(&md_path).expect("MEMORY.md");
    assert_eq!(
        md,
        format!(
            "# Agent Memory\n\n**Conversation:** compacted\n**Created:** {}\n\n---\n\n## Interaction Log\n\n\
             ### System — {}\n\n[Compressed Memory Summary]\nsummary\n\n---\n\n",
            shown(info.created_at),
            shown(at(9)),
        )
    );
    let archive = store.load_archive(&id, &info.id).await.expect("archive");
    assert_eq!(archive.messages, three());
}

#[tokio::test]
async fn a_half_deleted_session_is_removed_on_open() {
    let dir = tempfile::tempdir().expect("temp dir");
    drop(open(dir.path()).await);
    let trash = dir.path().join("agents/.trash-0123");
    std::fs::create_dir_all(trash.join("archive")).expect("mkdir");
    std::fs::write(trash.join("session.jsonl"), b"{}").expect("write");
    let store = open(dir.path()).await;
    assert!(!trash.exists());
    assert_eq!(kinds(&store), [RepairKind::Trash]);
    assert!(store.list_sessions().await.expect("list").is_empty());
}

#[tokio::test]
async fn a_swarms_memory_md_without_a_log_is_imported() {
    let dir = tempfile::tempdir().expect("temp dir");
    let swarms = "# Agent Memory\n\n**Conversation:** ResearchAgent_id_42_conversation\n**Created:** 2026-04-20T18:33:12.345678\n\n---\n\n## Interaction Log\n\n\
                  ### User — 2026-04-20T18:35:04\n\nResearch cloud database options.\n\n---\n\n\
                  ### ResearchAgent — 2026-04-20T18:35:21.500000\n\nI recommend BigQuery.\n\n---\n\n";
    let folder = dir.path().join("agents/ResearchAgent");
    std::fs::create_dir_all(&folder).expect("mkdir");
    std::fs::write(folder.join("MEMORY.md"), swarms).expect("write");

    let store = open(dir.path()).await;
    let id = sid("ResearchAgent");
    let messages = store.messages(&id).await.expect("load");
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[1].role.as_str(), "ResearchAgent");
    assert_eq!(messages[1].content, "I recommend BigQuery.");
    assert_eq!(kinds(&store), [RepairKind::Imported]);
    // The Swarms file is kept byte for byte, and appends continue it.
    assert_eq!(
        std::fs::read_to_string(folder.join("MEMORY.md")).expect("read"),
        swarms
    );
    store
        .append_one(&id, Message::user("more").with_timestamp(at(30)))
        .await
        .expect("append");
    let md = std::fs::read_to_string(folder.join("MEMORY.md")).expect("read");
    assert_eq!(
        md,
        format!("{swarms}### User — {}\n\nmore\n\n---\n\n", shown(at(30)))
    );

    // A broken foreign file is an error naming it, not a panic and not a silent empty session.
    let broken = dir.path().join("agents/Broken");
    std::fs::create_dir_all(&broken).expect("mkdir");
    std::fs::write(broken.join("MEMORY.md"), "# Agent Memory\n\nnot really\n").expect("write");
    let err = store.load(&sid("Broken"), None).await.expect_err("corrupt");
    assert_eq!(err.kind(), ErrorKind::CorruptData);
    assert!(err.to_string().contains("MEMORY.md line 3"), "{err}");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// Replays a compaction's four file writes one by one, as a crash after each would leave
/// them, and reopens: always exactly the old state or the new one.
#[tokio::test]
async fn a_crash_after_any_step_of_compaction_leaves_old_or_new_state() {
    let dir = tempfile::tempdir().expect("temp dir");
    let source = dir.path().join("source");
    let id = sid("steps");
    let summary = Message::system("[Compressed Memory Summary]\nS")
        .with_timestamp(at(9))
        .with_id(MessageId::new("s").expect("valid message id"));
    let store = open(&source).await;
    store.append(&id, &three()).await.expect("append");
    let before = dir.path().join("before");
    copy_dir(&source, &before);
    let info = store
        .compact(&id, std::slice::from_ref(&summary))
        .await
        .expect("compact");
    drop(store);
    let session_dir = Path::new("agents/steps");
    let steps = [
        session_dir.join(format!("archive/{}.jsonl", info.id)),
        session_dir.join(format!("archive/{}.md", info.id)),
        session_dir.join("session.jsonl"),
        session_dir.join("MEMORY.md"),
    ];
    let final_md = std::fs::read(source.join(&steps[3])).expect("read");
    let old_md = std::fs::read(before.join(&steps[3])).expect("read");
    for done in 0..=steps.len() {
        let root = dir.path().join(format!("crash_after_{done}"));
        copy_dir(&before, &root);
        std::fs::create_dir_all(root.join(session_dir).join("archive")).expect("mkdir");
        for step in &steps[..done] {
            std::fs::copy(source.join(step), root.join(step)).expect("copy");
        }
        let store = open(&root).await;
        let messages = store.messages(&id).await.expect("load");
        let archives = store.list_archives(&id).await.expect("archives");
        let md = std::fs::read(root.join(&steps[3])).expect("read");
        if done < 3 {
            assert_eq!(messages, three(), "old state after {done} steps");
            assert!(archives.is_empty(), "after {done} steps");
            assert_eq!(md, old_md);
            assert!(!root.join(&steps[0]).exists() && !root.join(&steps[1]).exists());
        } else {
            assert_eq!(
                messages,
                vec![summary.clone()],
                "new state after {done} steps"
            );
            assert_eq!(archives.len(), 1);
            assert_eq!(
                store
                    .load_archive(&id, &archives[0].id)
                    .await
                    .expect("archive")
                    .messages,
                three()
            );
            assert_eq!(md, final_md);
        }
        let expected: &[RepairKind] = match done {
            1 | 2 => &[RepairKind::OrphanArchive],
            3 => &[RepairKind::MemoryMdRegenerated],
            _ => &[],
        };
        assert_eq!(kinds(&store), expected, "after {done} steps");
    }
}

/// Replays `replace_archive`'s writes one by one (new log beside the archive, new `.md`, the
/// rename over the archive's log), as a crash after each would leave them, and reopens: the
/// old archive or the new one, its `.md` always the view of its log, nothing left over. A new
/// log that does not read back (not what a crash leaves) rolls back to the old archive.
#[tokio::test]
async fn a_crash_after_any_step_of_replace_archive_leaves_old_or_new_archive() {
    let dir = tempfile::tempdir().expect("temp dir");
    let source = dir.path().join("source");
    let id = sid("rekeyed");
    let store = open(&source).await;
    store.append(&id, &three()).await.expect("append");
    let info = store.compact(&id, &[]).await.expect("compact");
    let before = dir.path().join("before");
    copy_dir(&source, &before);
    let new: Vec<Message> = three()
        .into_iter()
        .map(|mut m| {
            m.content = format!("re-encrypted {}", m.content);
            m
        })
        .collect();
    store
        .replace_archive(&id, &info.id, &new)
        .await
        .expect("replace");
    drop(store);
    let archive_dir = Path::new("agents/rekeyed/archive");
    let log = archive_dir.join(format!("{}.jsonl", info.id));
    let md = archive_dir.join(format!("{}.md", info.id));
    let pending = archive_dir.join(format!(".replace-{}.jsonl", info.id));
    let (old_md, new_md) = (
        std::fs::read(before.join(&md)).expect("read"),
        std::fs::read(source.join(&md)).expect("read"),
    );
    assert_ne!(old_md, new_md);
    assert!(!source.join(&pending).exists());

    for done in 0..=3 {
        let root = dir.path().join(format!("crash_after_{done}"));
        copy_dir(&before, &root);
        if done >= 1 {
            std::fs::copy(source.join(&log), root.join(&pending)).expect("copy");
        }
        if done >= 2 {
            std::fs::copy(source.join(&md), root.join(&md)).expect("copy");
        }
        if done >= 3 {
            std::fs::rename(root.join(&pending), root.join(&log)).expect("rename");
        }
        let store = open(&root).await;
        if done == 1 {
            // A check without repair reports the interrupted replacement and changes nothing.
            let found = store.check(&id, false).await.expect("check");
            assert!(found
                .iter()
                .any(|r| r.kind == RepairKind::ArchiveReplacement && !r.repaired));
            assert!(root.join(&pending).exists());
        }
        let archive = store.load_archive(&id, &info.id).await.expect("archive");
        let expected = if done == 0 { three() } else { new.clone() };
        assert_eq!(archive.messages, expected, "after {done} steps");
        assert_eq!(archive.info.created_at, info.created_at);
        assert_eq!(
            store.list_archives(&id).await.expect("list")[0].message_count,
            3
        );
        let md_now = std::fs::read(root.join(&md)).expect("read");
        assert_eq!(&md_now, if done == 0 { &old_md } else { &new_md });
        assert!(!root.join(&pending).exists(), "after {done} steps");
        let expected: &[RepairKind] = match done {
            1 | 2 => &[RepairKind::ArchiveReplacement],
            _ => &[],
        };
        assert_eq!(kinds(&store), expected, "after {done} steps");
    }

    // A new log that does not parse: the old archive stays and its view is restored.
    let root = dir.path().join("unreadable");
    copy_dir(&before, &root);
    std::fs::write(root.join(&pending), b"{\"not\": \"an archive\"}\n").expect("write");
    std::fs::copy(source.join(&md), root.join(&md)).expect("copy");
    let store = open(&root).await;
    let archive = store.load_archive(&id, &info.id).await.expect("archive");
    assert_eq!(archive.messages, three());
    assert_eq!(std::fs::read(root.join(&md)).expect("read"), old_md);
    assert!(!root.join(&pending).exists());
    assert_eq!(kinds(&store), [RepairKind::ArchiveReplacement]);
}
