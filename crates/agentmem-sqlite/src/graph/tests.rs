//! Unit tests of the graph statements: the indexes they use, what they leave in the tables,
//! and their answers beside the reference rules ([`GraphState`]).

use super::{read, write};
use crate::testing::{assert_looks_up, migrated, rows_in};
use agentmem_core::{
    Entity, ErrorKind, GraphQuery, GraphState, ObservationAddition, ObservationDeletion, Relation,
};

fn addition(name: &str, contents: &[&str]) -> ObservationAddition {
    ObservationAddition {
        entity_name: name.into(),
        contents: contents.iter().map(|c| (*c).to_string()).collect(),
    }
}

#[test]
fn lookups_walk_indexes_and_never_scan() {
    let conn = migrated();
    for (sql, index) in [
        (
            read::RELATIONS_FROM,
            "sqlite_autoindex_agentmem_graph_relations_1",
        ),
        (read::RELATIONS_TO, "agentmem_graph_relations_to"),
        (
            read::OBSERVATIONS_OF,
            "sqlite_autoindex_agentmem_graph_observations_1",
        ),
        (
            "DELETE FROM agentmem_graph_relations WHERE to_name = ?1",
            "agentmem_graph_relations_to",
        ),
        (
            "DELETE FROM agentmem_graph_observations WHERE entity_id = ?1 AND content = ?2",
            "sqlite_autoindex_agentmem_graph_observations_1",
        ),
    ] {
        assert_looks_up(&conn, sql, index);
    }
}

#[test]
fn deleting_an_entity_leaves_no_observation_or_relation_behind() {
    let mut conn = migrated();
    let alice = Entity::new("Alice", "person").with_observations(["a", "b"]);
    write::create_entities(&mut conn, &[alice, Entity::new("Bob", "person")]).unwrap();
    write::create_relations(
        &mut conn,
        &[
            Relation::new("Alice", "Bob", "knows"),
            Relation::new("Bob", "Alice", "knows"),
            Relation::new("Bob", "Carol", "knows"),
        ],
    )
    .unwrap();
    assert_eq!(
        write::delete_entities(&mut conn, &["Alice".into(), "Nobody".into()]).unwrap(),
        1
    );
    assert_eq!(rows_in(&conn, "agentmem_graph_observations"), 0);
    assert_eq!(rows_in(&conn, "agentmem_graph_relations"), 1);
    // A re-created entity starts afresh, after the others, and holds none of the old facts.
    write::create_entities(&mut conn, &[Entity::new("Alice", "robot")]).unwrap();
    let graph = read::read(&mut conn, &GraphQuery::All).unwrap();
    let names: Vec<&str> = graph.entities.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["Bob", "Alice"]);
    assert!(graph.entities[1].observations.is_empty());
}

#[test]
fn a_missing_entity_fails_add_observations_and_applies_nothing() {
    let mut conn = migrated();
    write::create_entities(&mut conn, &[Entity::new("Alice", "person")]).unwrap();
    let err = write::add_observations(
        &mut conn,
        &[addition("Alice", &["x"]), addition("Ghost", &["y"])],
    )
    .unwrap_err()
    .into_error("m");
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert!(err.to_string().contains("Ghost"), "{err}");
    assert_eq!(rows_in(&conn, "agentmem_graph_observations"), 0);
    assert!(conn.is_autocommit(), "the transaction was ended");
}

/// The same calls on the tables and on [`GraphState`] give the same answers and graphs.
#[test]
fn answers_match_the_reference_rules() {
    let mut conn = migrated();
    let mut reference = GraphState::default();
    let entities = [
        Entity::new("Ünïcode", "ΣΊΣΥΦΟΣ").with_observations(["x", "x", "%_*"]),
        Entity::new("Alice", "person"),
        Entity::new("Ünïcode", "duplicate"),
    ];
    assert_eq!(
        write::create_entities(&mut conn, &entities).unwrap(),
        reference.create_entities(&entities)
    );
    let relations = [
        Relation::new("Alice", "Ünïcode", "knows"),
        Relation::new("Alice", "Ünïcode", "knows"),
        Relation::new("Alice", "Alice", "is"),
        Relation::new("Zed", "Yann", "knows"),
    ];
    assert_eq!(
        write::create_relations(&mut conn, &relations).unwrap(),
        reference.create_relations(&relations)
    );
    let additions = [
        addition("Alice", &["b", "a", "b"]),
        addition("Alice", &["a", "c"]),
        addition("Ünïcode", &["x", "y"]),
    ];
    assert_eq!(
        write::add_observations(&mut conn, &additions).unwrap(),
        reference.add_observations(&additions).unwrap()
    );
    let deletions = [
        ObservationDeletion {
            entity_name: "Alice".into(),
            observations: vec!["b".into(), "b".into(), "nope".into()],
        },
        ObservationDeletion {
            entity_name: "Ghost".into(),
            observations: vec!["x".into()],
        },
    ];
    assert_eq!(
        write::delete_observations(&mut conn, &deletions).unwrap(),
        reference.delete_observations(&deletions)
    );
    let re_added = [addition("Alice", &["b"])];
    assert_eq!(
        write::add_observations(&mut conn, &re_added).unwrap(),
        reference.add_observations(&re_added).unwrap()
    );
    let gone = [relations[0].clone(), Relation::new("No", "Such", "thing")];
    assert_eq!(
        write::delete_relations(&mut conn, &gone).unwrap(),
        reference.delete_relations(&gone)
    );
    write::create_relations(&mut conn, &relations[..1]).unwrap();
    reference.create_relations(&relations[..1]);
    for query in [
        GraphQuery::All,
        GraphQuery::Search("σίσυφος".into()),
        GraphQuery::Search("ünï".into()),
        GraphQuery::Search("%".into()),
        GraphQuery::Search("B".into()),
        GraphQuery::Search(String::new()),
        GraphQuery::Open(vec!["Alice".into(), "Alice".into(), "Yann".into()]),
        GraphQuery::Open(vec!["Ünïcode".into(), "Zed".into()]),
        GraphQuery::Open(Vec::new()),
    ] {
        assert_eq!(
            read::read(&mut conn, &query).unwrap(),
            reference.read(&query),
            "{query:?}"
        );
    }
}

/// Past the lookup limit, the relations touching the entities kept come from one scan: the
/// same answer as the lookups.
#[test]
fn many_matches_find_their_relations_by_a_scan() {
    let mut conn = migrated();
    let mut reference = GraphState::default();
    let entities: Vec<Entity> = (0..600)
        .map(|i| Entity::new(format!("e{i}"), "thing"))
        .collect();
    let relations: Vec<Relation> = (0..600)
        .map(|i| Relation::new(format!("e{i}"), format!("e{}", (i * 7) % 900), "next"))
        .collect();
    write::create_entities(&mut conn, &entities).unwrap();
    write::create_relations(&mut conn, &relations).unwrap();
    reference.create_entities(&entities);
    reference.create_relations(&relations);
    for query in [
        GraphQuery::Search("e".into()),
        GraphQuery::Search("e1".into()),
        GraphQuery::Open((0..700).map(|i| format!("e{i}")).collect()),
    ] {
        assert_eq!(
            read::read(&mut conn, &query).unwrap(),
            reference.read(&query),
            "{query:?}"
        );
    }
}
