//! The memory revision on a database file: it follows the writes of every writer of the file
//! (another handle, as another process would be; raw SQL, as an older build or another tool
//! would write) and nothing else, and a database from before it (schema 9) gains it on open.
mod common;

use agentmem_core::{
    MemoryFilter, MemoryItem, MemoryKind, MemoryStore, RetentionPolicy, SessionStore,
};
use common::{open, reopened_from, UNDO_MEMORY_REVISION};
use rusqlite::Connection;

async fn revision(store: &impl MemoryStore) -> u64 {
    store
        .memory_revision()
        .await
        .expect("memory_revision")
        .expect("SQLite keeps a memory revision")
}

/// Every read of the memory items, through `store`.
async fn read_everything(store: &impl MemoryStore, item: &MemoryItem) {
    store.list_memories(&MemoryFilter::default()).await.unwrap();
    store.get_memory(&item.id).await.unwrap();
    store
        .search_memories("revision", &MemoryFilter::default())
        .await
        .unwrap();
}

/// The revision `reader` reports, which must differ from `last` after `what`.
async fn changed(reader: &impl MemoryStore, last: &mut u64, what: &str) {
    let now = revision(reader).await;
    assert_ne!(now, *last, "the revision changes with {what}");
    *last = now;
}

#[tokio::test]
async fn the_revision_follows_writes_through_another_handle_and_raw_sql_not_reads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.db");
    let reader = open(&path).await;
    let writer = open(&path).await;
    let mut last = revision(&reader).await;
    assert_eq!(revision(&writer).await, last, "one file, one revision");

    let item = MemoryItem::new(MemoryKind::Fact, "revision one").with_key("rev");
    writer.put_memory(&item).await.unwrap();
    changed(&reader, &mut last, "a new item").await;
    read_everything(&writer, &item).await;
    read_everything(&reader, &item).await;
    assert_eq!(revision(&reader).await, last, "reads change nothing");
    assert_eq!(revision(&writer).await, last);

    let replacement = MemoryItem::new(MemoryKind::Fact, "revision two").with_key("rev");
    let stored = writer.put_memory(&replacement).await.unwrap();
    assert_eq!(stored.id, item.id, "replaced by (scope, kind, key)");
    changed(&reader, &mut last, "a replacement by key").await;
    writer.put_memory(&stored).await.unwrap();
    changed(&reader, &mut last, "a put of the same item again").await;
    assert!(writer.delete_memory(&item.id).await.unwrap());
    changed(&reader, &mut last, "a delete").await;
    assert!(!writer.delete_memory(&item.id).await.unwrap());
    assert_eq!(revision(&reader).await, last, "a delete of nothing");

    let past = agentmem_core::now() - chrono::Duration::seconds(1);
    let expired = MemoryItem::new(MemoryKind::ShortTerm, "expired").expiring_at(past);
    writer.put_memory(&expired).await.unwrap();
    changed(&reader, &mut last, "an expired item").await;
    read_everything(&reader, &expired).await;
    assert_eq!(revision(&reader).await, last, "reads skip expired items");
    let purged = writer.purge(&RetentionPolicy::default()).await.unwrap();
    assert_eq!(purged.memories_deleted, 1);
    changed(&reader, &mut last, "a purge").await;
    writer.purge(&RetentionPolicy::default()).await.unwrap();
    assert_eq!(revision(&reader).await, last, "a purge of nothing");

    // Writes that know nothing of the revision: an older build's, a tool's, a person's.
    let conn = Connection::open(&path).unwrap();
    conn.execute(
        "INSERT INTO agentmem_memories (item_id, kind, text, created_at, updated_at)
             VALUES ('raw', 'fact', 'written by hand', 1, 1)",
        [],
    )
    .unwrap();
    changed(&reader, &mut last, "a raw INSERT").await;
    conn.execute(
        "UPDATE agentmem_memories SET text = 'edited by hand' WHERE item_id = 'raw'",
        [],
    )
    .unwrap();
    changed(&reader, &mut last, "a raw UPDATE").await;
    conn.execute("DELETE FROM agentmem_memories", []).unwrap();
    changed(&reader, &mut last, "a raw DELETE").await;
    // Writes to other data kinds leave it alone.
    conn.execute(
        "INSERT INTO agentmem_properties (name, value) VALUES ('p', 'v')",
        [],
    )
    .unwrap();
    assert_eq!(revision(&reader).await, last, "other tables");
}

/// A database file as agentmem wrote it at schema 9 (before the revision): opening it migrates
/// it to the current schema, keeps its items, and gives it a revision that every write changes.
#[tokio::test]
async fn a_schema_9_database_gains_a_revision_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    let kept = MemoryItem::new(MemoryKind::Fact, "kept from schema 9").with_key("kept");
    {
        let store = open(&path).await;
        store.put_memory(&kept).await.unwrap();
    }
    // Migration 10 only adds the revision (a table and its triggers), so without it the file
    // is a schema 9 one; an older build then writes to it.
    let undo = format!(
        "{UNDO_MEMORY_REVISION}
         INSERT INTO agentmem_memories (item_id, kind, text, created_at, updated_at)
             VALUES ('old', 'fact', 'written at schema 9', 1, 1);"
    );
    let store = reopened_from(&path, 9, &undo).await;
    let items = store.list_memories(&MemoryFilter::default()).await.unwrap();
    assert_eq!(
        items.iter().map(|i| i.text.as_str()).collect::<Vec<_>>(),
        ["written at schema 9", "kept from schema 9"]
    );
    let mut last = revision(&store).await;
    read_everything(&store, &kept).await;
    assert_eq!(revision(&store).await, last, "reads change nothing");
    let other = open(&path).await;
    let new = MemoryItem::new(MemoryKind::Fact, "after the migration");
    other.put_memory(&new).await.unwrap();
    changed(&store, &mut last, "a put through another handle").await;
    store
        .put_memory(&MemoryItem::new(MemoryKind::Fact, "replaced").with_key("kept"))
        .await
        .unwrap();
    changed(&store, &mut last, "a replacement by key").await;
    assert!(store.delete_memory(&new.id).await.unwrap());
    changed(&store, &mut last, "a delete").await;
    let hits = store
        .search_memories("schema", &MemoryFilter::default())
        .await
        .unwrap();
    assert_eq!(hits.len(), 1, "the old row is still searchable");
    assert_eq!(revision(&store).await, last);
}
