//! Embedding vectors on a database file: kept across handles and reopening, and added to a
//! database from before them (schema 7) without touching its data.
mod common;

use agentmem_core::{
    AgentMemoryExt, Entity, GraphQuery, GraphStore, Message, SessionId, StoredVector, VectorKey,
    VectorStore,
};
use common::{open, reopened_from, UNDO_MEMORY_REVISION};

fn vector(n: u8) -> StoredVector {
    StoredVector::new(VectorKey([n; 32]), &[f32::from(n), 0.5])
}

/// A database file as agentmem wrote it at schema 7 (before vectors): opening it migrates it
/// to the current schema, keeps its sessions and graph, and gives it working vectors that a
/// later handle reads back.
#[tokio::test]
async fn a_schema_7_database_gains_vectors_on_open_and_keeps_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    let session: SessionId = "s".parse().unwrap();
    let alice = Entity::new("Alice", "person").with_observations(["likes tea"]);
    {
        let store = open(&path).await;
        store
            .append_one(&session, Message::user("kept"))
            .await
            .unwrap();
        store
            .create_entities(std::slice::from_ref(&alice))
            .await
            .unwrap();
    }
    // Migrations 8 and 10 only add the vector table and the memory revision (a table and
    // its triggers), so without them the file is a schema 7 one (migration 9 remakes the
    // full-text indexes, whatever they are).
    let undo = format!("{UNDO_MEMORY_REVISION} DROP TABLE agentmem_vectors;");
    let store = reopened_from(&path, 7, &undo).await;
    assert_eq!(store.messages(&session).await.unwrap().len(), 1);
    let graph = store.read_graph(&GraphQuery::All).await.unwrap();
    assert_eq!(graph.entities, [alice]);
    assert!(store
        .get_vectors(&[VectorKey([1; 32])])
        .await
        .unwrap()
        .is_empty());
    store.put_vectors(&[vector(1), vector(2)]).await.unwrap();
    assert_eq!(
        store.delete_vectors(&[VectorKey([2; 32])]).await.unwrap(),
        1
    );
    drop(store);

    let reopened = open(&path).await;
    let keys = [VectorKey([1; 32]), VectorKey([2; 32])];
    assert_eq!(reopened.get_vectors(&keys).await.unwrap(), [vector(1)]);
    assert_eq!(reopened.clear_vectors().await.unwrap(), 1);
}

/// A write through one handle is read by another (as another process would).
#[tokio::test]
async fn vectors_written_by_one_handle_are_read_by_another() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v.db");
    let (a, b) = (open(&path).await, open(&path).await);
    a.put_vectors(&[vector(3)]).await.unwrap();
    assert_eq!(
        b.get_vectors(&[VectorKey([3; 32])]).await.unwrap(),
        [vector(3)]
    );
    b.put_vectors(&[StoredVector::new(VectorKey([3; 32]), &[1.0])])
        .await
        .unwrap();
    let found = a.get_vectors(&[VectorKey([3; 32])]).await.unwrap();
    assert_eq!(found[0].data, 1.0f32.to_le_bytes());
}
