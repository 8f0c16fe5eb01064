//! The knowledge graph on one file through several handles (each its own pool of
//! connections, as separate processes would be), and on a database from before the graph.
mod common;

use std::path::Path;

use agentmem_core::{AgentMemoryExt, Entity, GraphQuery, GraphStore, Layered, Message, SessionId};
use agentmem_sqlite::SqliteStore;
use agentmem_testkit::fixtures::visit_hub;
use common::{open, reopened_from, UNDO_MEMORY_REVISION};
use tokio::task::JoinSet;

/// `n` handles on the database file `path`.
async fn handles(path: &Path, n: usize) -> Vec<Layered<SqliteStore>> {
    let mut stores = Vec::new();
    for _ in 0..n {
        stores.push(open(path).await);
    }
    stores
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_creates_of_one_name_through_two_handles_leave_one_entity() {
    let dir = tempfile::tempdir().unwrap();
    let stores = handles(&dir.path().join("graph.db"), 2).await;
    let mut tasks = JoinSet::new();
    for i in 0..40 {
        let store = stores[i % 2].clone();
        tasks.spawn(async move {
            let entity =
                Entity::new("same", format!("type {i}")).with_observations([format!("{i}")]);
            store.create_entities(&[entity]).await.unwrap()
        });
    }
    let mut created = Vec::new();
    while let Some(result) = tasks.join_next().await {
        created.extend(result.unwrap());
    }
    assert_eq!(created.len(), 1, "exactly one call created it: {created:?}");
    for store in &stores {
        let graph = store.read_graph(&GraphQuery::All).await.unwrap();
        assert_eq!(graph.entities, created, "the winner's entity, whole");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writes_through_three_handles_are_all_kept_and_reads_never_fail() {
    const PER_HANDLE: usize = 100;
    let dir = tempfile::tempdir().unwrap();
    let stores = handles(&dir.path().join("graph.db"), 3).await;
    stores[0]
        .create_entities(&[Entity::new("hub", "place")])
        .await
        .unwrap();
    let mut tasks = JoinSet::new();
    for (h, store) in stores.iter().enumerate() {
        for i in 0..PER_HANDLE {
            let store = store.clone();
            tasks.spawn(async move {
                let name = format!("h{h}-{i}");
                visit_hub(&store, &name).await;
                // A read between others' writes sees a whole graph: the hub and this visit.
                let seen = store
                    .read_graph(&GraphQuery::Open(vec![name.clone()]))
                    .await
                    .unwrap();
                assert_eq!(seen.entities.len(), 1);
                assert_eq!(seen.relations.len(), 1);
            });
        }
    }
    while let Some(result) = tasks.join_next().await {
        result.unwrap();
    }
    let total = 3 * PER_HANDLE;
    for store in &stores {
        let graph = store.read_graph(&GraphQuery::All).await.unwrap();
        assert_eq!(graph.entities.len(), 1 + total);
        assert_eq!(graph.entities[0].name, "hub");
        assert_eq!(graph.entities[0].observations.len(), total);
        assert!(graph.entities[1..]
            .iter()
            .all(|e| e.observations == ["arrived"]));
        assert_eq!(graph.relations.len(), total);
        let hub = store
            .read_graph(&GraphQuery::Search("HUB".into()))
            .await
            .unwrap();
        assert_eq!(
            hub.relations.len(),
            total,
            "every relation touching the hub"
        );
    }
}

/// A database file as agentmem wrote it at schema 6 (before the graph): opening it migrates it
/// to the current schema, keeps its data, and gives it a working graph.
#[tokio::test]
async fn a_schema_6_database_gains_the_graph_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    let session: SessionId = "s".parse().unwrap();
    {
        let store = open(&path).await;
        store
            .append_one(&session, Message::user("kept"))
            .await
            .unwrap();
    }
    // Migrations 7, 8 and 10 only add tables (the graph's, the vectors', the memory
    // revision and its triggers), so without them the file is a schema 6 one (migration 9
    // remakes the full-text indexes, whatever they are).
    let undo = format!("{UNDO_MEMORY_REVISION} DROP TABLE agentmem_vectors; DROP TABLE agentmem_graph_observations; DROP TABLE agentmem_graph_relations; DROP TABLE agentmem_graph_entities;");
    let store = reopened_from(&path, 6, &undo).await;
    assert_eq!(store.messages(&session).await.unwrap().len(), 1);
    assert!(store.read_graph(&GraphQuery::All).await.unwrap().is_empty());
    let alice = Entity::new("Alice", "person").with_observations(["likes tea"]);
    store
        .create_entities(std::slice::from_ref(&alice))
        .await
        .unwrap();
    let reopened = open(&path).await;
    let graph = reopened.read_graph(&GraphQuery::All).await.unwrap();
    assert_eq!(graph.entities, [alice]);
}
