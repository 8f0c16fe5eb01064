//! What the SQLite tests of older database files share: opening a file, and taking one back
//! to an older schema before it is opened again.
#![allow(dead_code)] // Each test binary uses its own part.

use std::path::Path;

use agentmem_core::{Layered, SessionStore};
use agentmem_sqlite::{SqliteStore, SCHEMA_VERSION};
use rusqlite::Connection;

/// Opens (or creates) the store at `path`.
pub async fn open(path: &Path) -> Layered<SqliteStore> {
    let url = format!("sqlite://{}?synchronous=normal", path.display());
    SqliteStore::connect(&url).await.expect("open")
}

/// Undoes migration 10, the memory revision (a table and its triggers).
pub const UNDO_MEMORY_REVISION: &str = "DROP TRIGGER agentmem_memory_revision_insert;
     DROP TRIGGER agentmem_memory_revision_update;
     DROP TRIGGER agentmem_memory_revision_delete;
     DROP TABLE agentmem_memory_revision;";

/// Runs `undo` (SQL taking the closed file at `path` back to schema `version`: what the later
/// migrations made, dropped) and records `version`; then opens the file, which migrates it to
/// the current schema again.
pub async fn reopened_from(path: &Path, version: u32, undo: &str) -> Layered<SqliteStore> {
    Connection::open(path)
        .unwrap()
        .execute_batch(&format!(
            "{undo}\nUPDATE agentmem_schema SET version = {version};"
        ))
        .unwrap();
    assert_eq!(
        SCHEMA_VERSION, 10,
        "a migration after 10 must be undone by every caller too"
    );
    let store = open(path).await;
    assert_eq!(store.schema_version().await.unwrap(), SCHEMA_VERSION);
    store
}
