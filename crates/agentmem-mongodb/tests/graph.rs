//! MongoDB-specific knowledge-graph behaviour against `MONGODB_URL`: the stored layout (names
//! only ever values, keys digests, so 1 KiB names fit any server's index keys), several
//! clients writing at once, and the document size limit of an entity. The contract itself is
//! the conformance suite's `Graph` area (`tests/conformance.rs`, and on the second server
//! `tests/text_server.rs`).
mod common;

use agentmem_core::graph::MAX_OBSERVATION_BYTES;
use agentmem_core::{Entity, ErrorKind, GraphQuery, GraphStore, ObservationAddition, Relation};
use agentmem_mongodb::mongodb::bson::{doc, Document};
use agentmem_mongodb::mongodb::IndexModel;
use agentmem_testkit::fixtures::{hub_note, visit_hub};
use common::{on_three_clients_at_once, raw};
use futures_util::TryStreamExt;

fn addition(entity: &str, contents: &[String]) -> ObservationAddition {
    ObservationAddition {
        entity_name: entity.to_owned(),
        contents: contents.to_vec(),
    }
}

/// Names, types and observations are string values only; keys are digests of the names, a
/// relation carries the keys of its ends, the creation counter lives in `meta`, and the
/// relation indexes exist. Names of 1 KiB (past MongoDB's old 1024-byte index key limit)
/// and operator-like strings round-trip.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graph_layout_keys_names_by_digest() {
    let Some(store) = common::store().await else {
        return;
    };
    let long_a = format!("a{}", "$.é".repeat(255));
    let long_b = format!("b{}", "x".repeat(1023));
    assert_eq!((long_a.len(), long_b.len()), (1021, 1024));
    let entities = [
        Entity::new(&long_a, "$set").with_observations(["a.b", "$where"]),
        Entity::new(&long_b, "{\"$gt\": \"\"}"),
    ];
    assert_eq!(store.create_entities(&entities).await.unwrap().len(), 2);
    let relation = Relation::new(&long_a, &long_b, "$inc");
    store
        .create_relations(std::slice::from_ref(&relation))
        .await
        .unwrap();

    let stored = raw(&store, "graph_entities").await;
    assert_eq!(stored.len(), 2);
    let a = stored
        .iter()
        .find(|d| d.get_str("name") == Ok(long_a.as_str()))
        .unwrap();
    let keys: Vec<&str> = a.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["_id", "name", "entity_type", "observations", "seq"],
        "{a:?}"
    );
    let a_id = a.get_str("_id").unwrap();
    assert_eq!(a_id.len(), 64, "a SHA-256 digest in hex");
    assert!(a_id.bytes().all(|b| b.is_ascii_hexdigit()));
    let relations = raw(&store, "graph_relations").await;
    assert_eq!(relations.len(), 1);
    assert_eq!(relations[0].get_str("from_id").unwrap(), a_id);
    assert_eq!(relations[0].get_str("relation_type").unwrap(), "$inc");
    let counter = raw(&store, "meta")
        .await
        .into_iter()
        .find(|d| d.get_str("_id") == Ok("graph_seq"))
        .unwrap();
    assert_eq!(
        counter.get_i64("next").unwrap(),
        3,
        "two entities, one relation"
    );

    let indexes: Vec<IndexModel> = store
        .client()
        .database(store.database_name())
        .collection::<Document>("graph_relations")
        .list_indexes()
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    for field in ["from_id", "to_id"] {
        assert!(
            indexes.iter().any(|i| i.keys.contains_key(field)),
            "{field}: {indexes:?}"
        );
    }

    let opened = store
        .read_graph(&GraphQuery::Open(vec![long_b.clone()]))
        .await
        .unwrap();
    assert_eq!(opened.entities, [entities[1].clone()]);
    assert_eq!(opened.relations, [relation]);
    let found = store
        .read_graph(&GraphQuery::Search("$WHERE".into()))
        .await
        .unwrap();
    assert_eq!(found.entities, [entities[0].clone()]);
}

/// Three clients, each making 100 calls of each kind at once (creating an entity, adding an
/// observation to one shared entity, creating a relation to it): every call reports its
/// change, and every change is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_clients_writing_at_once_lose_nothing() {
    let Some(store) = common::store().await else {
        return;
    };
    store
        .create_entities(&[Entity::new("hub", "place")])
        .await
        .unwrap();
    on_three_clients_at_once(&store, 100, |c, i, client| async move {
        visit_hub(&client, &format!("e{c}-{i}")).await;
    })
    .await;

    let graph = store.read_graph(&GraphQuery::All).await.unwrap();
    assert_eq!(graph.entities.len(), 301);
    assert_eq!(graph.entities[0].name, "hub", "created first, listed first");
    let hub = &graph.entities[0];
    assert_eq!(hub.observations.len(), 300);
    assert_eq!(graph.relations.len(), 300);
    for c in 0..3 {
        for i in 0..100 {
            let name = format!("e{c}-{i}");
            assert!(graph.entities.iter().any(|e| e.name == name), "{name}");
            assert!(hub.observations.contains(&hub_note(&name)), "{name}");
            assert!(graph.relations.iter().any(|r| r.from == name), "{name}");
        }
    }
}

/// Three clients creating one name 20 times each at once (with different types): exactly
/// one call reports the entity, and it is the one stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_creates_of_one_name_from_three_clients_leave_one() {
    let Some(store) = common::store().await else {
        return;
    };
    let created: Vec<Entity> = on_three_clients_at_once(&store, 20, |c, i, client| async move {
        client
            .create_entities(&[Entity::new("Solo", format!("type {c}-{i}"))])
            .await
            .unwrap()
    })
    .await
    .into_iter()
    .flatten()
    .collect();
    assert_eq!(created.len(), 1, "{created:?}");
    let graph = store.read_graph(&GraphQuery::All).await.unwrap();
    assert_eq!(graph.entities, created);
    assert_eq!(raw(&store, "graph_entities").await.len(), 1);
}

/// An entity and its observations share one document: additions that would take it past
/// MongoDB's 16 MiB limit are `InvalidInput`, refused before anything of the call (even an
/// addition to another entity) is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn additions_past_the_document_limit_are_refused_whole() {
    let Some(store) = common::store().await else {
        return;
    };
    let big = |i: usize| format!("{i:04}{}", "x".repeat(MAX_OBSERVATION_BYTES - 4));
    let held: Vec<String> = (0..200).map(big).collect();
    let full = Entity::new("full", "thing").with_observations(held.clone());
    store
        .create_entities(&[full, Entity::new("small", "thing")])
        .await
        .unwrap();
    let more: Vec<String> = (200..260).map(big).collect();
    let err = store
        .add_observations(&[addition("small", &["fits".into()]), addition("full", &more)])
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(err.message().contains("16 MiB"), "{err}");
    let graph = store.read_graph(&GraphQuery::All).await.unwrap();
    assert_eq!(graph.entities[0].observations, held);
    assert!(graph.entities[1].observations.is_empty(), "nothing applied");
    // Within the limit it is taken.
    let added = store
        .add_observations(&[addition("full", &more[..20])])
        .await
        .unwrap();
    assert_eq!(added[0].added_observations.len(), 20);
}
