//! Helpers shared by the file store's tests: opening stores and loading their sessions,
//! session ids and fixed times.
#![allow(
    dead_code,
    reason = "shared by several test binaries, each using part of it"
)]

use std::path::Path;

use agentmem_core::{Layered, Message, Session, SessionId, SessionStore};
use agentmem_file::{Durability, FileConfig, FileStore};
use chrono::{DateTime, TimeZone, Utc};
use tempfile::TempDir;

/// 2026-04-20 18:35:`second` UTC, the day every test message is dated.
pub fn at(second: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 4, 20, 18, 35, second)
        .single()
        .expect("valid time")
}

/// `time` as `MEMORY.md` shows it: the local clock's, as Swarms writes it (so the tests
/// hold in any zone).
pub fn shown(time: DateTime<Utc>) -> String {
    agentmem_formats::time::isoformat_in(time, &chrono::Local)
}

/// The session named `name`, which must be a valid id.
pub fn sid(name: &str) -> SessionId {
    name.parse().expect("valid id")
}

/// Opens the file store in `root` with `durability`.
pub async fn open_with(root: &Path, durability: Durability) -> Layered<FileStore> {
    FileStore::connect_with(FileConfig::new(root).with_durability(durability))
        .await
        .expect("open")
}

/// Opens the file store in `root`, buffered: these tests check behaviour, not power loss.
pub async fn open(root: &Path) -> Layered<FileStore> {
    open_with(root, Durability::Buffered).await
}

/// Session `id` of `store`, which must exist.
pub async fn load_some(store: &impl SessionStore, id: &SessionId) -> Session {
    store.load(id, None).await.expect("load").expect("exists")
}

/// The contents of `messages`, in order: what tests compare a loaded session with.
pub fn contents(messages: &[Message]) -> Vec<&str> {
    messages.iter().map(|m| m.content.as_str()).collect()
}

/// A buffered store in a new temporary folder (removed when the folder is dropped) and the
/// id of its session `name`.
pub async fn fresh(name: &str) -> (TempDir, Layered<FileStore>, SessionId) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open(dir.path()).await;
    (dir, store, sid(name))
}
