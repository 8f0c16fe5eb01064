//! Permissions: the file backend's files are 0600 and its folders 0700 after every kind
//! of write (append, save, compact, memory, purge), and so is the SQLite database with its
//! `-wal`/`-shm`; a store in a read-only folder gives a clear error and loses nothing.
//!
//! We run as root, which ignores permission bits, so "read-only" is a read-only bind mount
//! (`mount --bind` + `remount,ro`); where mounting is not permitted, that test skips loudly.
mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agentmem_core::{
    AgentMemory, ErrorKind, MemoryFilter, MemoryItem, MemoryKind, MemoryStore, Message, Metadata,
    RetentionPolicy, SessionId, SessionStore,
};
use common::{loud_skip, Mount};

/// Every path under `root` (root included) whose mode is not 0700 (folders) or 0600 (files).
fn wrong_modes(root: &Path) -> (usize, Vec<String>) {
    let mut checked = 0;
    let mut wrong = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(p) = stack.pop() {
        let meta = std::fs::symlink_metadata(&p).unwrap();
        let mode = meta.permissions().mode() & 0o777;
        let want = if meta.is_dir() { 0o700 } else { 0o600 };
        checked += 1;
        if mode != want {
            wrong.push(format!("{} is {mode:o}, want {want:o}", p.display()));
        }
        if meta.is_dir() {
            for e in std::fs::read_dir(&p).unwrap() {
                stack.push(e.unwrap().path());
            }
        }
    }
    (checked, wrong)
}

/// Runs every kind of write on `store`, calling `check` after each.
async fn every_write(store: &dyn AgentMemory, mut check: impl FnMut(&str)) {
    let a: SessionId = "perm a".parse().unwrap();
    let b: SessionId = "perm b".parse().unwrap();
    store.append(&a, &[Message::user("hello")]).await.unwrap();
    check("append");
    store
        .save_session(&b, &[Message::user("saved")], &Metadata::new())
        .await
        .unwrap();
    check("save_session");
    store.append(&b, &[Message::user("more")]).await.unwrap();
    store
        .compact(&b, &[Message::system("summary")])
        .await
        .unwrap();
    check("compact");
    let item = store
        .put_memory(&MemoryItem::new(MemoryKind::Fact, "the sky is blue"))
        .await
        .unwrap();
    check("put_memory");
    for i in 0..200 {
        // Enough replacements to make the file backend rewrite its memory log.
        store
            .put_memory(&MemoryItem::new(MemoryKind::Fact, format!("v{i}")).with_key("k"))
            .await
            .unwrap();
    }
    check("memory log compaction");
    store.delete_memory(&item.id).await.unwrap();
    check("delete_memory");
    tokio::time::sleep(Duration::from_millis(20)).await;
    let keep_one = RetentionPolicy {
        max_sessions: Some(1),
        ..RetentionPolicy::default()
    };
    let report = store.purge(&keep_one).await.unwrap();
    assert_eq!(report.sessions_deleted, 1);
    check("purge");
    store.delete_session(&b).await.unwrap();
    check("delete_session");
}

/// Opens a store at `<scheme><folder>/<name>` in a fresh folder and runs [`every_write`] on
/// it, calling `check(folder, op)` after each write; returns the folder, the store (still
/// open) and the sum of the modes each check counted.
async fn check_after_every_write(
    scheme: &str, name: &str, mut check: impl FnMut(&Path, &str) -> usize,
) -> (tempfile::TempDir, Arc<dyn AgentMemory>, usize) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{scheme}{}", dir.path().join(name).display());
    let store = agentmem::open(&url).await.unwrap();
    let mut total = 0;
    every_write(store.as_ref(), |op| total += check(dir.path(), op)).await;
    (dir, store, total)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_store_files_are_0600_and_folders_0700_after_every_write() {
    let (_dir, _store, total) = check_after_every_write("file://", "home", |dir, op| {
        let (checked, wrong) = wrong_modes(&dir.join("home"));
        assert!(wrong.is_empty(), "after {op}: {wrong:#?}");
        checked
    })
    .await;
    println!(
        "permissions: file: 7 kinds of write, {total} file and folder modes checked, all 0600/0700"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_database_files_are_0600_after_every_write() {
    let (dir, _store, total) = check_after_every_write("sqlite://", "memory.db", |dir, op| {
        let mut checked = 0;
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let mode = e.metadata().unwrap().permissions().mode() & 0o777;
            assert_eq!(
                mode,
                0o600,
                "after {op}: {} is {mode:o}",
                e.path().display()
            );
            checked += 1;
        }
        checked
    })
    .await;
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().any(|n| n.ends_with("-wal")),
        "WAL checked too: {names:?}"
    );
    println!("permissions: sqlite: 7 kinds of write, {total} file modes checked (db, -wal, -shm), all 0600");
}

/// Whether an error says what is wrong: the file system is read-only, or which file of the
/// store could not be written.
fn clear(e: &agentmem_core::Error, folder: &Path) -> bool {
    let text = e.to_string();
    text.to_lowercase().contains("read-only") || text.contains(&*folder.to_string_lossy())
}

/// Writes to a store whose folder became read-only: a clear `Unavailable` error (at open or
/// at the write), reads still work, and after the folder is writable again nothing is lost.
async fn read_only(kind: &str) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let url = match kind {
        "file" => format!("file://{}", data.display()),
        _ => format!("sqlite://{}", data.join("memory.db").display()),
    };
    let id: SessionId = "kept".parse().unwrap();
    let before = vec![Message::user("one"), Message::assistant("two")];
    {
        let store = agentmem::open(&url).await.unwrap();
        store.append(&id, &before).await.unwrap();
        store
            .put_memory(&MemoryItem::new(MemoryKind::Fact, "remembered"))
            .await
            .unwrap();
    }
    let mount = match Mount::read_only_bind(&data) {
        Ok(m) => m,
        Err(why) => {
            loud_skip(&format!("{kind} read-only folder"), &why);
            return;
        }
    };
    let mut refused = Vec::new();
    match agentmem::open(&url).await {
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::Unavailable, "{kind}: open: {e}");
            assert!(clear(&e, &data), "{kind}: open: a clear error: {e}");
            refused.push(format!("open: {e}"));
        }
        Ok(store) => {
            let loaded = store.load(&id, None).await;
            let other: SessionId = "new".parse().unwrap();
            let ops: Vec<(&str, agentmem_core::Result<()>)> = vec![
                ("append", store.append(&id, &[Message::user("three")]).await),
                (
                    "append new",
                    store.append(&other, &[Message::user("x")]).await,
                ),
                ("compact", store.compact(&id, &[]).await.map(drop)),
                (
                    "put_memory",
                    store
                        .put_memory(&MemoryItem::new(MemoryKind::Fact, "more"))
                        .await
                        .map(drop),
                ),
            ];
            for (op, r) in ops {
                let e = r.expect_err(&format!("{kind}: {op} on a read-only folder"));
                assert_eq!(e.kind(), ErrorKind::Unavailable, "{kind}: {op}: {e}");
                assert!(clear(&e, &data), "{kind}: {op}: a clear error: {e}");
                refused.push(format!("{op}: {e}"));
            }
            // Reading a read-only store works where the backend can.
            if let Ok(Some(s)) = loaded {
                assert_eq!(s.messages, before, "{kind}: read while read-only");
            }
        }
    }
    drop(mount);
    let store = agentmem::open(&url).await.unwrap();
    assert_eq!(
        store.load(&id, None).await.unwrap().unwrap().messages,
        before
    );
    let items = store.list_memories(&MemoryFilter::default()).await.unwrap();
    assert_eq!(items.len(), 1, "{kind}: memory kept");
    // And the store works again.
    store.append(&id, &[Message::user("three")]).await.unwrap();
    assert_eq!(
        store.load(&id, None).await.unwrap().unwrap().messages.len(),
        3
    );
    println!(
        "permissions: {kind}: read-only folder: {} writes refused with a clear unavailable error, {} messages + 1 memory kept, lost = 0; e.g. {}",
        refused.len(),
        before.len(),
        refused.first().cloned().unwrap_or_default()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_store_in_a_read_only_folder_fails_clearly_and_keeps_everything() {
    read_only("file").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_store_in_a_read_only_folder_fails_clearly_and_keeps_everything() {
    read_only("sqlite").await;
}
