//! The knowledge graph (the MCP reference memory server's model): entities, relations and
//! observations with its duplicate, delete and search rules, creation order kept, atomic under
//! concurrent writers.
//!
//! The area applies only to stores whose [`Capabilities::graph`](agentmem_core::Capabilities)
//! say they keep one ([`Area::applies_to`](super::Area::applies_to)). A store without them
//! must refuse every graph operation with `Unsupported`: `graph_is_kept_or_refused`, a case of the `misc`
//! area, checks that on every store.

use std::fmt::Debug;

use agentmem_core::graph::{MAX_GRAPH_NAME_BYTES, MAX_OBSERVATION_BYTES};
use agentmem_core::{
    AddedObservations, AgentMemory, Entity, ErrorKind, GraphQuery, KnowledgeGraph,
    ObservationAddition, ObservationDeletion, Relation, Result,
};

use super::assert_kind;

fn ok<T>(result: Result<T>, call: &str) -> T {
    result.unwrap_or_else(|e| panic!("{call} failed: {e}"))
}

fn entity(name: &str, entity_type: &str, observations: &[&str]) -> Entity {
    Entity::new(name, entity_type).with_observations(observations.iter().copied())
}

fn addition(name: &str, contents: &[&str]) -> ObservationAddition {
    ObservationAddition {
        entity_name: name.into(),
        contents: names(contents),
    }
}

fn names(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

async fn create(store: &dyn AgentMemory, entities: &[Entity]) -> Vec<Entity> {
    ok(store.create_entities(entities).await, "create_entities")
}

async fn relate(store: &dyn AgentMemory, relations: &[Relation]) -> Vec<Relation> {
    ok(store.create_relations(relations).await, "create_relations")
}

async fn add(store: &dyn AgentMemory, additions: &[ObservationAddition]) -> Vec<AddedObservations> {
    ok(store.add_observations(additions).await, "add_observations")
}

async fn read(store: &dyn AgentMemory, query: GraphQuery) -> KnowledgeGraph {
    let call = format!("read_graph({query:?})");
    ok(store.read_graph(&query).await, &call)
}

async fn whole(store: &dyn AgentMemory) -> KnowledgeGraph {
    read(store, GraphQuery::All).await
}

fn entity_names(graph: &KnowledgeGraph) -> Vec<&str> {
    graph.entities.iter().map(|e| e.name.as_str()).collect()
}

fn observations_of<'a>(graph: &'a KnowledgeGraph, name: &str) -> Vec<&'a str> {
    let entity = graph
        .entities
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("entity {name:?} is in the graph"));
    entity.observations.iter().map(String::as_str).collect()
}

fn refused<T: Debug>(result: Result<T>, what: &str) {
    assert_kind(result, ErrorKind::Unsupported, what);
}

/// A store keeps a graph (and an empty store's is empty), or refuses every graph operation
/// with `Unsupported`.
pub async fn graph_is_kept_or_refused(store: &dyn AgentMemory) {
    if store.capabilities().graph {
        assert!(
            whole(store).await.is_empty(),
            "a new store's graph is empty"
        );
        let found = read(store, GraphQuery::Search(String::new())).await;
        assert!(found.is_empty(), "searching an empty graph finds nothing");
        return;
    }
    let e = [entity("a", "t", &[])];
    let r = [Relation::new("a", "b", "r")];
    refused(store.create_entities(&e).await, "create_entities");
    refused(store.create_relations(&r).await, "create_relations");
    refused(
        store.add_observations(&[addition("a", &["x"])]).await,
        "add_observations",
    );
    refused(
        store.delete_entities(&names(&["a"])).await,
        "delete_entities",
    );
    refused(store.delete_observations(&[]).await, "delete_observations");
    refused(store.delete_relations(&r).await, "delete_relations");
    refused(store.read_graph(&GraphQuery::All).await, "read_graph");
}

/// Entities come back as created, in creation order, with their observations in order;
/// `create_entities` returns what it created.
pub async fn graph_entities_round_trip_in_order(store: &dyn AgentMemory) {
    let entities = [
        entity("Zoë", "person", &["speaks Greek: Ωμέγα", "likes 🦀"]),
        entity("Acme", "company", &[]),
        entity("alpha", "project", &["b first", "a second", "c third"]),
    ];
    let created = create(store, &entities).await;
    assert_eq!(
        created, entities,
        "every new entity is created and returned"
    );
    let graph = whole(store).await;
    assert_eq!(graph.entities, entities, "creation order, not name order");
    assert!(graph.relations.is_empty());
}

/// An existing name is skipped (its type and observations untouched), the first of equal
/// names in one call wins, and an entity's repeated observations are kept once.
pub async fn creating_existing_entities_skips_them(store: &dyn AgentMemory) {
    create(store, &[entity("Alice", "person", &["likes tea"])]).await;
    let created = create(
        store,
        &[
            entity("Alice", "robot", &["likes oil"]),
            entity("Bob", "person", &["x", "y", "x"]),
            entity("Bob", "dog", &["z"]),
        ],
    )
    .await;
    assert_eq!(
        created,
        [entity("Bob", "person", &["x", "y"])],
        "only the new name is created, once, its repeated observation kept once"
    );
    let graph = whole(store).await;
    assert_eq!(
        graph.entities,
        [
            entity("Alice", "person", &["likes tea"]),
            entity("Bob", "person", &["x", "y"])
        ]
    );
    assert!(
        create(store, &[entity("Alice", "x", &[])]).await.is_empty(),
        "creating only existing names creates nothing"
    );
}

/// A relation equal to a stored one or an earlier one of the call is skipped; relation ends
/// need not exist; relations keep creation order.
pub async fn relations_are_unique_and_may_dangle(store: &dyn AgentMemory) {
    create(store, &[entity("Alice", "person", &[])]).await;
    let first = [
        Relation::new("Alice", "Acme", "works_at"),
        Relation::new("Alice", "Bob", "knows"),
    ];
    assert_eq!(relate(store, &first).await, first, "both are new");
    let second = [
        Relation::new("Alice", "Acme", "works_at"),
        Relation::new("Alice", "Acme", "founded"),
        Relation::new("Acme", "Alice", "works_at"),
        Relation::new("Alice", "Acme", "founded"),
    ];
    assert_eq!(
        relate(store, &second).await,
        [second[1].clone(), second[2].clone()],
        "a stored relation and a repeat within the call are skipped; direction and type count"
    );
    let graph = whole(store).await;
    assert_eq!(
        graph.relations,
        [
            first[0].clone(),
            first[1].clone(),
            second[1].clone(),
            second[2].clone()
        ],
        "creation order; ends that are no entity (Acme, Bob) are allowed"
    );
}

/// `add_observations` appends what each entity does not hold yet, in order, and reports it;
/// a second addition to one entity in the same call sees the first.
pub async fn adding_observations_skips_held_ones(store: &dyn AgentMemory) {
    create(
        store,
        &[
            entity("Alice", "person", &["likes tea"]),
            entity("Bob", "person", &[]),
        ],
    )
    .await;
    let added = add(
        store,
        &[
            addition(
                "Alice",
                &["likes tea", "lives in Oslo", "lives in Oslo", "LIKES TEA"],
            ),
            addition("Bob", &["plays chess"]),
            addition("Alice", &["lives in Oslo", "runs"]),
        ],
    )
    .await;
    let expected = |name: &str, added: &[&str]| AddedObservations {
        entity_name: name.into(),
        added_observations: names(added),
    };
    assert_eq!(
        added,
        [
            expected("Alice", &["lives in Oslo", "LIKES TEA"]),
            expected("Bob", &["plays chess"]),
            expected("Alice", &["runs"]),
        ],
        "held and repeated observations are skipped (comparison is exact, case counts)"
    );
    let graph = whole(store).await;
    assert_eq!(
        observations_of(&graph, "Alice"),
        ["likes tea", "lives in Oslo", "LIKES TEA", "runs"]
    );
    assert_eq!(observations_of(&graph, "Bob"), ["plays chess"]);
}

/// Adding observations to an entity that does not exist fails the whole call with the
/// reference server's message, and applies nothing, not even the additions before it.
pub async fn adding_observations_to_a_missing_entity_applies_nothing(store: &dyn AgentMemory) {
    create(store, &[entity("Alice", "person", &["likes tea"])]).await;
    let result = store
        .add_observations(&[
            addition("Alice", &["lives in Oslo"]),
            addition("Ghost", &["boo"]),
            addition("Casper", &["boo"]),
        ])
        .await;
    let err = match result {
        Ok(added) => panic!("adding to a missing entity succeeded: {added:?}"),
        Err(e) => e,
    };
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    assert_eq!(err.message(), "Entity with name Ghost not found");
    let graph = whole(store).await;
    assert_eq!(
        observations_of(&graph, "Alice"),
        ["likes tea"],
        "the addition before the missing entity was not applied"
    );
    assert_eq!(entity_names(&graph), ["Alice"], "no entity was created");
}

/// Deleting entities deletes every relation naming one of the names, as from or to (even a
/// name no entity has), and nothing else; it reports how many entities went.
pub async fn deleting_entities_removes_their_relations(store: &dyn AgentMemory) {
    create(
        store,
        &[
            entity("Alice", "person", &[]),
            entity("Bob", "person", &[]),
            entity("Carol", "person", &[]),
        ],
    )
    .await;
    relate(
        store,
        &[
            Relation::new("Alice", "Bob", "knows"),
            Relation::new("Bob", "Alice", "knows"),
            Relation::new("Bob", "Carol", "knows"),
            Relation::new("Carol", "Ghost", "fears"),
            Relation::new("Ghost", "Carol", "haunts"),
        ],
    )
    .await;
    let removed = ok(
        store
            .delete_entities(&names(&["Alice", "Ghost", "Nobody"]))
            .await,
        "delete_entities",
    );
    assert_eq!(removed, 1, "one of the names was an entity");
    let graph = whole(store).await;
    assert_eq!(entity_names(&graph), ["Bob", "Carol"]);
    assert_eq!(
        graph.relations,
        [Relation::new("Bob", "Carol", "knows")],
        "relations naming Alice or Ghost at either end went"
    );
    let again = ok(
        store.delete_entities(&names(&["Alice"])).await,
        "delete_entities again",
    );
    assert_eq!(again, 0, "deleting what is gone deletes nothing");
}

/// Deleting observations and relations removes exact matches and passes over what is not
/// there; re-created entities and re-added observations go to the end.
pub async fn deleted_graph_items_come_back_at_the_end(store: &dyn AgentMemory) {
    create(
        store,
        &[
            entity("Alice", "person", &["a", "b", "c"]),
            entity("Bob", "person", &["x"]),
        ],
    )
    .await;
    relate(
        store,
        &[
            Relation::new("Alice", "Bob", "knows"),
            Relation::new("Bob", "Alice", "knows"),
        ],
    )
    .await;
    let deletions = [
        ObservationDeletion {
            entity_name: "Alice".into(),
            observations: names(&["a", "B", "zzz"]),
        },
        ObservationDeletion {
            entity_name: "Ghost".into(),
            observations: names(&["x"]),
        },
    ];
    let removed = ok(
        store.delete_observations(&deletions).await,
        "delete_observations",
    );
    assert_eq!(removed, 1, "only the exact match `a` went");
    add(store, &[addition("Alice", &["a"])]).await;
    assert_eq!(
        observations_of(&whole(store).await, "Alice"),
        ["b", "c", "a"],
        "a re-added observation goes to the end"
    );

    let gone = [
        Relation::new("Alice", "Bob", "knows"),
        Relation::new("Alice", "Bob", "likes"),
    ];
    let removed = ok(store.delete_relations(&gone).await, "delete_relations");
    assert_eq!(removed, 1, "only the stored relation went");
    relate(store, &[Relation::new("Alice", "Bob", "knows")]).await;
    assert_eq!(
        whole(store).await.relations,
        [
            Relation::new("Bob", "Alice", "knows"),
            Relation::new("Alice", "Bob", "knows")
        ],
        "a re-created relation goes to the end"
    );

    ok(
        store.delete_entities(&names(&["Alice"])).await,
        "delete_entities",
    );
    create(store, &[entity("Alice", "robot", &[])]).await;
    let graph = whole(store).await;
    assert_eq!(
        entity_names(&graph),
        ["Bob", "Alice"],
        "a re-created entity goes to the end"
    );
    assert_eq!(
        graph.entities[1],
        entity("Alice", "robot", &[]),
        "it starts afresh: nothing of the deleted one survives"
    );
    assert!(graph.relations.is_empty(), "its relations went with it");
}

/// Search matches a case-insensitive substring of name, type or any observation (Unicode
/// lowercase) and returns every relation touching a match; an empty query matches all.
pub async fn search_nodes_ignores_case_and_returns_touching_relations(store: &dyn AgentMemory) {
    create(
        store,
        &[
            entity("Ärzte ohne Grenzen", "organisation", &["founded 1971"]),
            entity("Alice", "person", &["Works at ΑΘΗΝΑ labs"]),
            entity("Bob", "PERSON", &[]),
            entity("Carol", "robot", &["likes 100% cotton"]),
        ],
    )
    .await;
    relate(
        store,
        &[
            Relation::new("Alice", "Bob", "knows"),
            Relation::new("Carol", "Bob", "knows"),
            Relation::new("Carol", "Ärzte ohne Grenzen", "donates_to"),
            Relation::new("Ghost", "Alice", "haunts"),
        ],
    )
    .await;
    let search = |text: &str| read(store, GraphQuery::Search(text.into()));

    let found = search("ärzte").await;
    assert_eq!(
        entity_names(&found),
        ["Ärzte ohne Grenzen"],
        "Unicode case folding of a name"
    );
    assert_eq!(
        found.relations,
        [Relation::new("Carol", "Ärzte ohne Grenzen", "donates_to")]
    );

    let found = search("αθηνα").await;
    assert_eq!(entity_names(&found), ["Alice"], "an observation, in Greek");
    assert_eq!(
        found.relations,
        [
            Relation::new("Alice", "Bob", "knows"),
            Relation::new("Ghost", "Alice", "haunts")
        ],
        "relations touching a match at either end, in creation order"
    );

    let found = search("person").await;
    assert_eq!(
        entity_names(&found),
        ["Alice", "Bob"],
        "the type, in any case"
    );
    assert_eq!(
        found.relations.len(),
        3,
        "Alice-Bob, Carol-Bob and Ghost-Alice"
    );

    assert_eq!(
        entity_names(&search("100%").await),
        ["Carol"],
        "`%` is literal"
    );
    assert!(search("_").await.is_empty(), "`_` is literal");
    assert!(search("nobody").await.is_empty());
    let all = search("").await;
    assert_eq!(all.entities.len(), 4, "an empty query matches every entity");
    assert_eq!(all.relations.len(), 4);
}

/// `open_nodes` takes exact names (case counts, missing names are passed over) and returns
/// every relation touching one of them.
pub async fn open_nodes_takes_exact_names(store: &dyn AgentMemory) {
    create(
        store,
        &[
            entity("Alice", "person", &["a"]),
            entity("Bob", "person", &[]),
            entity("Carol", "person", &[]),
        ],
    )
    .await;
    relate(
        store,
        &[
            Relation::new("Bob", "Carol", "knows"),
            Relation::new("Alice", "Dave", "knows"),
            Relation::new("Carol", "Alice", "knows"),
        ],
    )
    .await;
    let opened = read(
        store,
        GraphQuery::Open(names(&["Carol", "alice", "Nobody", "Alice"])),
    )
    .await;
    assert_eq!(
        entity_names(&opened),
        ["Alice", "Carol"],
        "graph order; `alice` and `Nobody` match nothing"
    );
    assert_eq!(opened.entities[0].observations, ["a"]);
    assert_eq!(
        opened.relations,
        [
            Relation::new("Bob", "Carol", "knows"),
            Relation::new("Alice", "Dave", "knows"),
            Relation::new("Carol", "Alice", "knows")
        ],
        "every relation touching an opened entity, whatever is at the other end"
    );
    assert!(read(store, GraphQuery::Open(Vec::new())).await.is_empty());
}

/// Strings that mean something to a backend (quotes, SQL, Lua and glob patterns, key
/// separators, JSON, whitespace, the empty string) and long ones are stored and matched
/// literally. (Long, not the longest the validate layer allows: the encryption layer's
/// sealed form must fit those limits too, so its own are lower.)
pub async fn hostile_graph_strings_round_trip(store: &dyn AgentMemory) {
    let hostile = [
        "",
        " padded ",
        "Robert'); DROP TABLE graph_entities;--",
        "a:b{c}[d]*?%_\\",
        "{\"type\":\"entity\"}",
        "line\nbreak\ttab\r",
        "🦀\u{200d}👩‍👩‍👧",
    ];
    let long_name = "n".repeat(MAX_GRAPH_NAME_BYTES * 2 / 3);
    let long_observation = "o".repeat(MAX_OBSERVATION_BYTES * 2 / 3);
    let mut entities: Vec<Entity> = hostile
        .iter()
        .map(|h| entity(h, h, &[h, "plain"]))
        .collect();
    entities.push(
        Entity::new(long_name.clone(), long_name.clone()).with_observations([long_observation]),
    );
    assert_eq!(create(store, &entities).await, entities);
    let relations: Vec<Relation> = hostile
        .iter()
        .zip(hostile.iter().rev())
        .map(|(a, b)| Relation::new(*a, *b, *a))
        .collect();
    assert_eq!(relate(store, &relations).await, relations);
    let graph = whole(store).await;
    assert_eq!(graph.entities, entities, "every string comes back exactly");
    assert_eq!(graph.relations, relations);
    let opened = read(store, GraphQuery::Open(names(&["a:b{c}[d]*?%_\\"]))).await;
    assert_eq!(
        entity_names(&opened),
        ["a:b{c}[d]*?%_\\"],
        "opened literally"
    );
    let removed = ok(
        store
            .delete_entities(&names(&["", long_name.as_str()]))
            .await,
        "delete",
    );
    assert_eq!(
        removed, 2,
        "the empty name and a long name are names like any other"
    );
}

/// Strings a store could not keep (NUL, over the size limits) are refused whole, before
/// anything is written.
pub async fn invalid_graph_input_is_refused(store: &dyn AgentMemory) {
    let too_long = "n".repeat(MAX_GRAPH_NAME_BYTES + 1);
    let result = store
        .create_entities(&[entity("fine", "t", &[]), entity("nul\0", "t", &[])])
        .await;
    assert_kind(result, ErrorKind::InvalidInput, "a NUL in a name");
    let result = store
        .create_entities(&[entity("fine", "t", &[]), entity(&too_long, "t", &[])])
        .await;
    assert_kind(result, ErrorKind::InvalidInput, "an over-long name");
    let huge = "o".repeat(MAX_OBSERVATION_BYTES + 1);
    create(store, &[entity("Alice", "person", &[])]).await;
    let result = store
        .add_observations(&[addition("Alice", &["ok", &huge])])
        .await;
    assert_kind(result, ErrorKind::InvalidInput, "an over-long observation");
    let result = store
        .create_relations(&[Relation::new("a", "b", "r\0")])
        .await;
    assert_kind(result, ErrorKind::InvalidInput, "a NUL in a relation type");
    let graph = whole(store).await;
    assert_eq!(
        graph.entities,
        [entity("Alice", "person", &[])],
        "nothing else was written"
    );
    assert!(graph.relations.is_empty());
}

/// Concurrent writers lose nothing: entities created, observations added to one entity and
/// relations created from many tasks at once are all there.
pub async fn concurrent_graph_writers_lose_nothing(store: &dyn AgentMemory) {
    create(store, &[entity("hub", "node", &[])]).await;
    let writers = (0..4).map(|w| async move {
        for i in 0..10 {
            let name = format!("w{w}-{i}");
            create(store, &[entity(&name, "node", &[])]).await;
            add(store, &[addition("hub", &[&format!("seen {name}")])]).await;
            relate(store, &[Relation::new("hub", &name, "links")]).await;
        }
    });
    futures_util::future::join_all(writers).await;
    let graph = whole(store).await;
    assert_eq!(graph.entities.len(), 41, "every entity");
    assert_eq!(
        observations_of(&graph, "hub").len(),
        40,
        "every observation"
    );
    assert_eq!(graph.relations.len(), 40, "every relation");
    for w in 0..4 {
        let mine: Vec<&str> = graph
            .entities
            .iter()
            .map(|e| e.name.as_str())
            .filter(|n| n.starts_with(&format!("w{w}-")))
            .collect();
        let expected: Vec<String> = (0..10).map(|i| format!("w{w}-{i}")).collect();
        assert_eq!(mine, expected, "each writer's entities in its order");
    }
}

/// Concurrent creates of one name leave exactly one entity, and exactly one call reports
/// creating it.
pub async fn concurrent_creates_of_one_name_leave_one_entity(store: &dyn AgentMemory) {
    let racers = (0..8).map(|r| async move {
        let mine = entity("contested", &format!("type {r}"), &[&format!("from {r}")]);
        create(store, &[mine]).await
    });
    let results = futures_util::future::join_all(racers).await;
    let winners: Vec<&Entity> = results.iter().flatten().collect();
    assert_eq!(winners.len(), 1, "exactly one create succeeds: {results:?}");
    let graph = whole(store).await;
    assert_eq!(graph.entities.len(), 1, "one entity of that name");
    assert_eq!(&graph.entities[0], winners[0], "and it is the winner's");
}
