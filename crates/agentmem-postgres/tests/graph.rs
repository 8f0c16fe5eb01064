//! The knowledge graph, beyond the conformance cases: the migration that adds it to an
//! existing schema, texts at their longest, and many writers in separate pools (standing in
//! for separate processes) creating, adding and deleting at once.

mod common;

use std::collections::HashSet;

use agentmem_core::{
    Entity, ErrorKind, GraphQuery, GraphStore, Layered, ObservationAddition, ObservationDeletion,
    Relation,
};
use agentmem_postgres::PostgresStore;
use common::{incompressible, other_processes};

/// `first` and two more processes on its schema.
async fn three_processes(first: &Layered<PostgresStore>) -> Vec<Layered<PostgresStore>> {
    let mut all = vec![first.clone()];
    all.extend(other_processes(first, 2).await);
    all
}

fn add(name: &str, contents: &[&str]) -> ObservationAddition {
    ObservationAddition {
        entity_name: name.to_owned(),
        contents: contents.iter().map(|c| (*c).to_owned()).collect(),
    }
}

/// How many observations of the schema belong to no entity (none may).
async fn orphan_observations(store: &PostgresStore) -> i64 {
    let s = format!("\"{}\"", store.schema());
    common::count(
        &common::admin().await,
        &format!(
            "SELECT count(*) FROM {s}.graph_observations o
             WHERE NOT EXISTS (SELECT 1 FROM {s}.graph_entities e WHERE e.seq = o.entity)"
        ),
        &[],
    )
    .await
}

#[tokio::test]
async fn a_version_5_schema_gains_the_graph_when_migrated_to_6() {
    let Some(store) = common::open(&[]).await else {
        return;
    };
    let again = common::migrated_from(&store, 5, common::undo_version_6).await;
    let alice = Entity::new("Alice", "person").with_observations(["likes tea"]);
    assert_eq!(
        again
            .create_entities(std::slice::from_ref(&alice))
            .await
            .expect("create"),
        std::slice::from_ref(&alice)
    );
    let graph = again.read_graph(&GraphQuery::All).await.expect("read");
    assert_eq!(graph.entities, [alice]);
}

/// Names and types of 1,024 bytes (a relation's three texts together above PostgreSQL's
/// btree entry limit of ~2,700 bytes) and an observation of 64 KiB, none compressible: every
/// operation works on them.
#[tokio::test]
async fn texts_at_their_longest_are_stored() {
    let Some(store) = common::open(&[]).await else {
        return;
    };
    let (a, b, kind) = (
        incompressible(1024, 1),
        incompressible(1024, 2),
        incompressible(1024, 3),
    );
    let long = incompressible(64 * 1024, 4);
    let entities = [
        Entity::new(&a, &kind).with_observations([long.clone()]),
        Entity::new(&b, &kind),
    ];
    assert_eq!(
        store
            .create_entities(&entities)
            .await
            .expect("create")
            .len(),
        2
    );
    let relation = Relation::new(&a, &b, &kind);
    assert_eq!(
        store
            .create_relations(&[relation.clone(), relation.clone()])
            .await
            .expect("relate"),
        std::slice::from_ref(&relation)
    );
    let added = store
        .add_observations(&[add(&b, &[&long, &long])])
        .await
        .expect("add");
    assert_eq!(added[0].added_observations, std::slice::from_ref(&long));
    let opened = store
        .read_graph(&GraphQuery::Open(vec![a.clone()]))
        .await
        .expect("open");
    assert_eq!(opened.entities, entities[..1]);
    assert_eq!(opened.relations, std::slice::from_ref(&relation));
    let found = store
        .read_graph(&GraphQuery::Search(long[100..200].to_lowercase()))
        .await
        .expect("search");
    assert_eq!(found.entities.len(), 2);
    let deletion = ObservationDeletion {
        entity_name: b.clone(),
        observations: vec![long.clone()],
    };
    assert_eq!(
        store
            .delete_observations(&[deletion])
            .await
            .expect("delete"),
        1
    );
    assert_eq!(
        store.delete_relations(&[relation]).await.expect("unrelate"),
        1
    );
    assert_eq!(store.delete_entities(&[a, b]).await.expect("delete"), 2);
    assert!(store
        .read_graph(&GraphQuery::All)
        .await
        .expect("read")
        .is_empty());
}

/// Three processes, each with 100 writers at once: every writer creates an entity and a
/// relation to a hub, and adds an observation to the hub and two to its entity. Nothing is
/// lost, and each entity's observations keep their order.
#[tokio::test]
async fn three_processes_of_100_writers_lose_nothing() {
    let Some(store) = common::open(&[]).await else {
        return;
    };
    store
        .create_entities(&[Entity::new("hub", "place")])
        .await
        .expect("hub");
    let mut tasks = Vec::new();
    for (w, process) in three_processes(&store).await.into_iter().enumerate() {
        for i in 0..100 {
            let process = process.clone();
            tasks.push(tokio::spawn(async move {
                let name = format!("e{w}-{i}");
                let me = Entity::new(&name, "thing").with_observations(["first"]);
                assert_eq!(
                    process.create_entities(&[me]).await.expect("create").len(),
                    1
                );
                let relation = Relation::new(&name, "hub", "near");
                assert_eq!(
                    process
                        .create_relations(&[relation])
                        .await
                        .expect("relate")
                        .len(),
                    1
                );
                let hub_note = format!("seen by {name}");
                let added = process
                    .add_observations(&[add("hub", &[&hub_note]), add(&name, &["second", "third"])])
                    .await
                    .expect("add");
                assert_eq!(added[0].added_observations, [hub_note]);
                assert_eq!(added[1].added_observations, ["second", "third"]);
            }));
        }
    }
    for task in tasks {
        task.await.expect("writer");
    }
    let graph = store.read_graph(&GraphQuery::All).await.expect("read");
    assert_eq!(graph.entities.len(), 301);
    assert_eq!(graph.relations.len(), 300);
    let hub = &graph.entities[0];
    assert_eq!(hub.name, "hub");
    let notes: HashSet<&str> = hub.observations.iter().map(String::as_str).collect();
    assert_eq!(notes.len(), 300, "every note on the hub kept, once");
    for entity in &graph.entities[1..] {
        assert_eq!(
            entity.observations,
            ["first", "second", "third"],
            "{}",
            entity.name
        );
    }
    let opened = store
        .read_graph(&GraphQuery::Open(vec!["hub".into()]))
        .await
        .expect("open");
    assert_eq!(
        opened.relations.len(),
        300,
        "every relation touching the hub"
    );
}

/// 300 creates of one name (and of the same relations) from three processes at once leave one
/// entity (one of each relation), created by exactly one call, with that call's type and
/// observations.
#[tokio::test]
async fn concurrent_creates_of_one_name_leave_one_entity() {
    let Some(store) = common::open(&[]).await else {
        return;
    };
    let mut tasks = Vec::new();
    for (w, process) in three_processes(&store).await.into_iter().enumerate() {
        for i in 0..100 {
            let process = process.clone();
            tasks.push(tokio::spawn(async move {
                // 20 more names and relations, each call in another order: the creates also
                // wait for each other crosswise, which must not deadlock.
                let mut batch: Vec<Entity> = (0..20)
                    .map(|k| Entity::new(format!("n{k}"), "kind"))
                    .collect();
                batch.rotate_left((i * 7 + w) % 20);
                batch.insert(
                    i % 21,
                    Entity::new("same", format!("type {w} {i}"))
                        .with_observations([format!("{w} {i}")]),
                );
                let created = process.create_entities(&batch).await.expect("create");
                let mut relations: Vec<Relation> = (0..20)
                    .map(|k| Relation::new("same", format!("n{k}"), "knows"))
                    .collect();
                relations.rotate_right((i * 3 + w) % 20);
                let related = process.create_relations(&relations).await.expect("relate");
                (created, related.len())
            }));
        }
    }
    let mut created_same = Vec::new();
    let mut relations_created = 0;
    for task in tasks {
        let (created, related) = task.await.expect("creator");
        created_same.extend(created.into_iter().filter(|e| e.name == "same"));
        relations_created += related;
    }
    assert_eq!(created_same.len(), 1, "one call created the name");
    assert_eq!(relations_created, 20, "one call created each relation");
    let graph = store.read_graph(&GraphQuery::All).await.expect("read");
    let same: Vec<&Entity> = graph.entities.iter().filter(|e| e.name == "same").collect();
    assert_eq!(same, [&created_same[0]]);
    assert_eq!(graph.entities.len(), 21);
    assert_eq!(graph.relations.len(), 20);
}

/// While one process deletes and re-creates an entity over and over, two others add to it and
/// to a stable entity in one call: each call adds to both or to neither (failing `NotFound`),
/// and deleting never leaves an observation behind.
#[tokio::test]
async fn add_observations_is_all_or_nothing_while_an_entity_comes_and_goes() {
    let Some(store) = common::open(&[]).await else {
        return;
    };
    let flicker = Entity::new("flicker", "light");
    store
        .create_entities(&[Entity::new("stable", "rock"), flicker.clone()])
        .await
        .expect("create");
    let processes = three_processes(&store).await;
    let toggler = processes[0].clone();
    let toggling = tokio::spawn(async move {
        for _ in 0..150 {
            let names = ["flicker".to_owned()];
            assert_eq!(toggler.delete_entities(&names).await.expect("delete"), 1);
            let created = toggler
                .create_entities(std::slice::from_ref(&flicker))
                .await
                .expect("create");
            assert_eq!(created.len(), 1);
        }
    });
    let mut adders = Vec::new();
    for (w, process) in processes.into_iter().enumerate().skip(1) {
        adders.push(tokio::spawn(async move {
            let mut applied = Vec::new();
            for i in 0..150 {
                let note = format!("{w} {i}");
                match process
                    .add_observations(&[add("stable", &[&note]), add("flicker", &[&note])])
                    .await
                {
                    Ok(added) => {
                        assert_eq!(added[0].added_observations, std::slice::from_ref(&note));
                        assert_eq!(added[1].added_observations, std::slice::from_ref(&note));
                        applied.push(note);
                    }
                    Err(e) => assert_eq!(e.kind(), ErrorKind::NotFound, "{e}"),
                }
            }
            applied
        }));
    }
    toggling.await.expect("toggler");
    let mut applied = HashSet::new();
    for adder in adders {
        applied.extend(adder.await.expect("adder"));
    }
    let graph = store
        .read_graph(&GraphQuery::Open(vec!["stable".into()]))
        .await
        .expect("read");
    let held: HashSet<String> = graph.entities[0].observations.iter().cloned().collect();
    assert_eq!(
        held, applied,
        "the stable entity holds exactly the applied calls' notes"
    );
    assert_eq!(orphan_observations(&store).await, 0);
}

/// Deleting observations and entities in one process while another adds to the same
/// entities: no call fails for any reason but a missing entity, and nothing is orphaned.
#[tokio::test]
async fn deletes_racing_additions_keep_the_graph_whole() {
    let Some(store) = common::open(&[]).await else {
        return;
    };
    let names: Vec<String> = (0..10).map(|i| format!("n{i}")).collect();
    let entities: Vec<Entity> = names.iter().map(|n| Entity::new(n, "t")).collect();
    store.create_entities(&entities).await.expect("create");
    let processes = three_processes(&store).await;
    let mut tasks = Vec::new();
    for (w, process) in processes.into_iter().enumerate() {
        let (names, entities) = (names.clone(), entities.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0..60 {
                // Every call names the entities in another order.
                let mut order = names.clone();
                order.rotate_left((i * 3 + w) % names.len());
                let note = format!("{w} {i}");
                let additions: Vec<ObservationAddition> =
                    order.iter().map(|n| add(n, &[&note, "shared"])).collect();
                match w {
                    0 => {
                        if let Err(e) = process.add_observations(&additions).await {
                            assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
                        }
                    }
                    1 => {
                        let deletions: Vec<ObservationDeletion> = order
                            .iter()
                            .map(|n| ObservationDeletion {
                                entity_name: n.clone(),
                                observations: vec!["shared".into(), format!("0 {}", i / 2)],
                            })
                            .collect();
                        process
                            .delete_observations(&deletions)
                            .await
                            .expect("delete");
                    }
                    _ => {
                        process.delete_entities(&order[..3]).await.expect("delete");
                        process.create_entities(&entities).await.expect("re-create");
                    }
                }
            }
        }));
    }
    for task in tasks {
        task.await.expect("task");
    }
    assert_eq!(orphan_observations(&store).await, 0);
    let graph = store.read_graph(&GraphQuery::All).await.expect("read");
    assert_eq!(graph.entities.len(), 10);
}
