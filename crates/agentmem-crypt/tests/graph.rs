//! The knowledge graph through the encryption layer: sealed in the store (in memory and on
//! disk), still unique and searchable, refused with a wrong key or none, and kept whole by
//! `rekey` and `encrypt_existing`, an interrupted rekey included.

use std::path::Path;
use std::sync::Arc;

use agentmem_core::graph::{MAX_GRAPH_BATCH, MAX_GRAPH_NAME_BYTES, MAX_OBSERVATION_BYTES};
use agentmem_core::{
    AgentMemory, AgentMemoryExt, Entity, ErrorKind, GraphQuery, GraphStore, KnowledgeGraph,
    ObservationAddition, ObservationDeletion, Relation, Result,
};
use agentmem_crypt::{
    encrypt_existing, envelope_key_id, rekey, CryptoError, EncryptLayer, MasterKey, NoKeyLayer,
    ENVELOPE_PREFIX, MAX_ENCRYPTED_GRAPH_NAME_BYTES, MAX_ENCRYPTED_OBSERVATION_BYTES,
};
use agentmem_file::{FileConfig, FileStore};

mod common;
use common::{crypto_error, key, keyed, raw, with_key, Store};

fn names(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

fn addition(name: &str, contents: &[&str]) -> ObservationAddition {
    ObservationAddition {
        entity_name: name.into(),
        contents: names(contents),
    }
}

/// A small graph with secrets in every kind of string.
fn people() -> (Vec<Entity>, Vec<Relation>) {
    let entities = vec![
        Entity::new("Alice Secretname", "person")
            .with_observations(["likes Earl Grey tea", "locker code 4711"]),
        Entity::new("Acme Hiddencorp", "company").with_observations(["makes rockets"]),
        Entity::new("Bob Quietman", "person"),
    ];
    let relations = vec![
        Relation::new("Alice Secretname", "Acme Hiddencorp", "works_at"),
        Relation::new("Bob Quietman", "Alice Secretname", "knows_secretly"),
        Relation::new("Alice Secretname", "Nobody Dangling", "owes_money_to"),
    ];
    (entities, relations)
}

/// Every plaintext string of `people()`.
fn secrets() -> Vec<String> {
    let (entities, relations) = people();
    let mut out: Vec<String> = entities
        .iter()
        .flat_map(|e| {
            [e.name.clone(), e.entity_type.clone()]
                .into_iter()
                .chain(e.observations.clone())
        })
        .collect();
    out.extend(
        relations
            .iter()
            .flat_map(|r| [r.from.clone(), r.to.clone(), r.relation_type.clone()]),
    );
    out
}

async fn write_people(store: &dyn AgentMemory) -> Result<KnowledgeGraph> {
    let (entities, relations) = people();
    store.create_entities(&entities).await?;
    store.create_relations(&relations).await?;
    Ok(KnowledgeGraph {
        entities,
        relations,
    })
}

async fn whole(store: &dyn AgentMemory) -> KnowledgeGraph {
    store
        .read_graph(&GraphQuery::All)
        .await
        .expect("read the graph")
}

/// Every string the store keeps, as the store shows it.
fn strings(graph: &KnowledgeGraph) -> Vec<&str> {
    let mut out = Vec::new();
    for e in &graph.entities {
        out.extend([e.name.as_str(), e.entity_type.as_str()]);
        out.extend(e.observations.iter().map(String::as_str));
    }
    for r in &graph.relations {
        out.extend([r.from.as_str(), r.to.as_str(), r.relation_type.as_str()]);
    }
    out
}

fn assert_sealed_under(graph: &KnowledgeGraph, key: &MasterKey) {
    assert!(!graph.is_empty());
    for s in strings(graph) {
        assert!(s.starts_with(ENVELOPE_PREFIX), "{s:?} is sealed");
        assert_eq!(envelope_key_id(s), Some(key.id()), "{s:?} is under the key");
    }
}

/// A graph call with its arguments, for the tables of calls that must be refused.
enum Call {
    Read(GraphQuery),
    Create(Vec<Entity>),
    Relate(Vec<Relation>),
    Add(Vec<ObservationAddition>),
}

impl Call {
    /// Makes the call on `store`, what it returns dropped.
    async fn on(self, store: &dyn AgentMemory) -> Result<()> {
        match self {
            Call::Read(query) => store.read_graph(&query).await.map(drop),
            Call::Create(entities) => store.create_entities(&entities).await.map(drop),
            Call::Relate(relations) => store.create_relations(&relations).await.map(drop),
            Call::Add(additions) => store.add_observations(&additions).await.map(drop),
        }
    }
}

/// A call of each kind that reads or writes the graph's strings: refused without the key
/// the store is marked with.
fn calls_needing_the_key() -> [(&'static str, Call); 6] {
    [
        ("read", Call::Read(GraphQuery::All)),
        ("search", Call::Read(GraphQuery::Search("tea".into()))),
        ("open", Call::Read(GraphQuery::Open(names(&["x"])))),
        ("create", Call::Create(vec![Entity::new("x", "t")])),
        ("relate", Call::Relate(vec![Relation::new("x", "y", "r")])),
        ("add", Call::Add(vec![addition("Bob Quietman", &["x"])])),
    ]
}

fn files_under(dir: &Path, out: &mut Vec<Vec<u8>>) {
    for entry in std::fs::read_dir(dir).expect("list a folder").flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(std::fs::read(&path).expect("read a file"));
        }
    }
}

#[tokio::test]
async fn the_graph_is_sealed_in_memory_and_on_disk() {
    let (memory, key, store) = keyed();
    let written = write_people(&store).await.unwrap();
    assert_eq!(
        whole(&store).await,
        written,
        "read back as written, in order"
    );
    assert_sealed_under(&whole(&*memory).await, &key);

    let dir = tempfile::tempdir().unwrap();
    let files: Store = Arc::new(
        FileStore::connect_with(FileConfig::new(dir.path()))
            .await
            .unwrap(),
    );
    assert!(files.capabilities().graph, "the file store keeps a graph");
    let store = with_key(&files, &key);
    write_people(&store).await.unwrap();
    store
        .add_observations(&[addition("Bob Quietman", &["hums loudly"])])
        .await
        .unwrap();
    assert_sealed_under(&whole(&*files).await, &key);
    drop(store);
    drop(files);
    let mut contents = Vec::new();
    files_under(dir.path(), &mut contents);
    assert!(!contents.is_empty());
    let mut needles = secrets();
    needles.extend(["Secretname", "Earl Grey", "4711", "hums loudly"].map(String::from));
    for needle in needles {
        let found = contents
            .iter()
            .any(|file| file.windows(needle.len()).any(|w| w == needle.as_bytes()));
        assert!(!found, "{needle:?} is in no file of the store");
    }
    // Reopened with the key, the graph is all there.
    let files: Store = Arc::new(
        FileStore::connect_with(FileConfig::new(dir.path()))
            .await
            .unwrap(),
    );
    let reopened = whole(&with_key(&files, &key)).await;
    assert_eq!(reopened.entities[2].observations, ["hums loudly"]);
}

#[tokio::test]
async fn names_relations_and_observations_stay_unique_through_encryption() {
    let key = key();
    let memory = raw();
    let (a, b) = (with_key(&memory, &key), with_key(&memory, &key));
    let first = a
        .create_entities(&[Entity::new("Ann", "person"), Entity::new("Ann", "robot")])
        .await
        .unwrap();
    assert_eq!(
        first,
        [Entity::new("Ann", "person")],
        "the first of one call wins"
    );
    assert!(
        b.create_entities(&[Entity::new("Ann", "x")])
            .await
            .unwrap()
            .is_empty(),
        "another handle sees the name"
    );
    let relation = Relation::new("Ann", "Zed", "knows");
    assert_eq!(
        a.create_relations(&[relation.clone(), relation.clone()])
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(b
        .create_relations(std::slice::from_ref(&relation))
        .await
        .unwrap()
        .is_empty());
    let added = b
        .add_observations(&[
            addition("Ann", &["x", "y", "x"]),
            addition("Ann", &["y", "z"]),
        ])
        .await
        .unwrap();
    assert_eq!(added[0].added_observations, ["x", "y"]);
    assert_eq!(added[1].added_observations, ["z"]);
    assert_eq!(added[1].entity_name, "Ann");
    let deletion = ObservationDeletion {
        entity_name: "Ann".into(),
        observations: names(&["y", "absent"]),
    };
    assert_eq!(
        a.delete_observations(&[deletion]).await.unwrap(),
        1,
        "deleted by exact value"
    );
    assert_eq!(whole(&b).await.entities[0].observations, ["x", "z"]);
    assert_eq!(
        a.delete_relations(std::slice::from_ref(&relation))
            .await
            .unwrap(),
        1
    );
    a.create_relations(&[relation]).await.unwrap();
    assert_eq!(
        b.delete_entities(&names(&["Ann", "Ghost"])).await.unwrap(),
        1
    );
    assert!(
        whole(&a).await.is_empty(),
        "the relation went with its entity"
    );
    assert!(whole(&*memory).await.is_empty());
}

#[tokio::test]
async fn a_missing_entity_is_named_as_given() {
    let store = with_key(&raw(), &key());
    store
        .create_entities(&[Entity::new("Here", "t")])
        .await
        .unwrap();
    let err = store
        .add_observations(&[addition("Here", &["x"]), addition("Ghost", &["y"])])
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert_eq!(err.message(), "Entity with name Ghost not found");
    // A name too long to be stored sealed cannot exist; an earlier missing one is named first.
    let long = "l".repeat(MAX_ENCRYPTED_GRAPH_NAME_BYTES + 1);
    let call = [addition("Gone", &[]), addition(&long, &["y"])];
    let err = store.add_observations(&call).await.unwrap_err();
    assert_eq!(err.message(), "Entity with name Gone not found");
    let err = store.add_observations(&call[1..]).await.unwrap_err();
    assert_eq!(
        (err.kind(), err.message()),
        (
            ErrorKind::NotFound,
            format!("Entity with name {long} not found").as_str()
        )
    );
    assert!(
        whole(&store).await.entities[0].observations.is_empty(),
        "nothing applied"
    );
}

#[tokio::test]
async fn search_and_open_select_in_the_client() {
    let store = with_key(&raw(), &key());
    write_people(&store).await.unwrap();
    let found = store
        .read_graph(&GraphQuery::Search("EARL grey".into()))
        .await
        .unwrap();
    assert_eq!(found.entities.len(), 1);
    assert_eq!(found.entities[0].name, "Alice Secretname");
    assert_eq!(found.relations.len(), 3, "every relation touching Alice");
    let by_type = store
        .read_graph(&GraphQuery::Search("COMPANY".into()))
        .await
        .unwrap();
    assert_eq!(by_type.entities[0].name, "Acme Hiddencorp");
    assert!(
        store
            .read_graph(&GraphQuery::Search("agentmem-enc".into()))
            .await
            .unwrap()
            .is_empty(),
        "ciphertext is never matched"
    );
    let opened = store
        .read_graph(&GraphQuery::Open(names(&[
            "Bob Quietman",
            "bob quietman",
            "Nobody Dangling",
        ])))
        .await
        .unwrap();
    assert_eq!(opened.entities, [Entity::new("Bob Quietman", "person")]);
    assert_eq!(
        opened.relations,
        [Relation::new(
            "Bob Quietman",
            "Alice Secretname",
            "knows_secretly"
        )]
    );
}

#[tokio::test]
async fn the_longest_strings_that_fit_sealed_round_trip_and_longer_ones_are_refused() {
    let memory = raw();
    let store = with_key(&memory, &key());
    let name = "n".repeat(MAX_ENCRYPTED_GRAPH_NAME_BYTES);
    let observation = "o".repeat(MAX_ENCRYPTED_OBSERVATION_BYTES);
    let hostile = [
        "",
        " padded ",
        "a:b{c}[d]*?%_\\",
        "line\nbreak\t",
        "🦀\u{200d}👩‍👩‍👧",
    ];
    let mut entities: Vec<Entity> = hostile
        .iter()
        .map(|h| Entity::new(*h, *h).with_observations([*h, "plain"]))
        .collect();
    entities.push(Entity::new(name.clone(), name.clone()).with_observations([observation.clone()]));
    assert_eq!(store.create_entities(&entities).await.unwrap(), entities);
    let relation = Relation::new(name.clone(), "", name.clone());
    store
        .create_relations(std::slice::from_ref(&relation))
        .await
        .unwrap();
    assert_eq!(whole(&store).await.entities, entities);
    let stored = whole(&*memory).await;
    assert!(stored.entities[5].name.len() <= MAX_GRAPH_NAME_BYTES);
    assert!(stored.entities[5].observations[0].len() <= MAX_OBSERVATION_BYTES);

    let too_long_name = format!("{name}n");
    let too_long = format!("{observation}o");
    let fresh = Entity::new("fresh", "t");
    for (what, call) in [
        (
            "a name",
            Call::Create(vec![fresh, Entity::new(too_long_name.clone(), "t")]),
        ),
        (
            "a type",
            Call::Create(vec![Entity::new("fresh", too_long_name.clone())]),
        ),
        (
            "an observation",
            Call::Add(vec![addition("", &["new", &too_long])]),
        ),
        (
            "a relation end",
            Call::Relate(vec![Relation::new("a", too_long_name.clone(), "r")]),
        ),
        ("a NUL", Call::Create(vec![Entity::new("nul\0", "t")])),
    ] {
        let err = call.on(&store).await.expect_err(what);
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{what}: {err}");
        assert!(
            !err.to_string().contains("nnnnnnnn"),
            "{what}: the text is not in the error"
        );
    }
    assert_eq!(
        whole(&store).await.entities,
        entities,
        "nothing of a refused call was written"
    );
    // Deleting or opening what cannot be stored matches nothing.
    assert_eq!(
        store
            .delete_entities(std::slice::from_ref(&too_long_name))
            .await
            .unwrap(),
        0
    );
    assert!(store
        .read_graph(&GraphQuery::Open(vec![too_long_name]))
        .await
        .unwrap()
        .is_empty());
    assert_eq!(store.delete_relations(&[relation]).await.unwrap(), 1);
    assert_eq!(
        store.delete_entities(&[name, String::new()]).await.unwrap(),
        2
    );
}

#[tokio::test]
async fn a_wrong_key_or_none_is_refused() {
    let (key, other) = (key(), key());
    let memory = raw();
    write_people(&with_key(&memory, &key)).await.unwrap();
    let wrong = with_key(&memory, &other);
    for (what, call) in calls_needing_the_key() {
        let err = call.on(&wrong).await.expect_err(what);
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{what}: {err}");
        assert!(
            matches!(crypto_error(&err), Some(CryptoError::WrongKey { .. })),
            "{what}: {err}"
        );
    }
    let none = memory.clone().with_layer(NoKeyLayer);
    for (what, call) in calls_needing_the_key() {
        let err = call.on(&none).await.expect_err(what);
        assert_eq!(
            crypto_error(&err),
            Some(&CryptoError::NoKey { found: key.id() }),
            "{what}: {err}"
        );
    }
    // Deleting needs no key: by the strings as stored.
    let stored = whole(&*memory).await;
    let bob = stored.entities[2].name.clone();
    assert_eq!(none.delete_entities(&[bob]).await.unwrap(), 1);
    assert_eq!(whole(&with_key(&memory, &key)).await.entities.len(), 2);
    assert_eq!(
        whole(&*memory).await.relations.len(),
        2,
        "Bob's relation went with him"
    );
}

#[tokio::test]
async fn without_a_key_an_unmarked_store_with_sealed_strings_is_refused() {
    let key = key();
    let sealed = raw();
    write_people(&with_key(&sealed, &key)).await.unwrap();
    // The sealed graph copied into a store without a marker (as before markers existed).
    let unmarked = raw();
    let graph = whole(&*sealed).await;
    unmarked.create_entities(&graph.entities).await.unwrap();
    let none = unmarked.clone().with_layer(NoKeyLayer);
    let err = none.read_graph(&GraphQuery::All).await.unwrap_err();
    assert_eq!(
        crypto_error(&err),
        Some(&CryptoError::NoKey { found: key.id() })
    );
    // Plaintext passes through untouched.
    let plain = raw().with_layer(NoKeyLayer);
    let written = write_people(&plain).await.unwrap();
    assert_eq!(whole(&plain).await, written);
}

#[tokio::test]
async fn a_moved_string_does_not_open() {
    let (memory, _, store) = keyed();
    store
        .create_entities(&[
            Entity::new("A", "t").with_observations(["secret of A"]),
            Entity::new("B", "t"),
        ])
        .await
        .unwrap();
    let stored = whole(&*memory).await;
    // A writer of the store gives B the sealed observation of A.
    let moved = ObservationAddition {
        entity_name: stored.entities[1].name.clone(),
        contents: stored.entities[0].observations.clone(),
    };
    memory.add_observations(&[moved]).await.unwrap();
    let err = store.read_graph(&GraphQuery::All).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::CorruptData, "{err}");
    assert_eq!(crypto_error(&err), Some(&CryptoError::Tampered));
}

#[tokio::test]
async fn rekey_keeps_the_graph_in_order_under_the_new_key() {
    let (old, new) = (key(), key());
    let memory = raw();
    let store = with_key(&memory, &old);
    write_people(&store).await.unwrap();
    // Deleted and re-created: now last.
    store
        .delete_entities(&names(&["Acme Hiddencorp"]))
        .await
        .unwrap();
    store
        .create_entities(&[Entity::new("Acme Hiddencorp", "company")])
        .await
        .unwrap();
    store
        .add_observations(&[addition("Alice Secretname", &["late observation"])])
        .await
        .unwrap();
    let before = whole(&store).await;

    let report = rekey(memory.clone(), &old, &new).await.unwrap();
    assert_eq!((report.entities, report.relations), (3, 2));
    assert_eq!(
        whole(&with_key(&memory, &new)).await,
        before,
        "the same graph, in the same order"
    );
    assert_sealed_under(&whole(&*memory).await, &new);
    let err = with_key(&memory, &old)
        .read_graph(&GraphQuery::All)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    // Run again: nothing is left to rewrite.
    let again = rekey(memory.clone(), &new, &new).await.unwrap();
    assert_eq!((again.entities, again.relations), (0, 0));
    assert_eq!(whole(&with_key(&memory, &new)).await, before);
}

#[tokio::test]
async fn an_interrupted_rekey_is_finished_and_shows_each_entity_once_meanwhile() {
    let (old, new) = (key(), key());
    let memory = raw();
    let written = write_people(&with_key(&memory, &old)).await.unwrap();
    // As a rekey stopped after rewriting Alice (new form beside the old one) would leave it.
    let both = memory
        .clone()
        .with_layer(EncryptLayer::new(&new).with_read_key(&old));
    let alice = written.entities[0].clone();
    both.create_entities(&[alice]).await.unwrap();
    both.create_relations(&written.relations[..1])
        .await
        .unwrap();
    assert_eq!(whole(&*memory).await.entities.len(), 4);
    assert_eq!(
        whole(&both).await,
        written,
        "each entity and relation shown once, in order"
    );
    let opened = both
        .read_graph(&GraphQuery::Open(names(&["Alice Secretname"])))
        .await
        .unwrap();
    assert_eq!(opened.entities.len(), 1);
    assert_eq!(opened.relations.len(), 3);

    rekey(memory.clone(), &old, &new).await.unwrap();
    let stored = whole(&*memory).await;
    assert_eq!(stored.entities.len(), 3, "the old forms are gone");
    assert_sealed_under(&stored, &new);
    assert_eq!(whole(&with_key(&memory, &new)).await, written);
}

#[tokio::test]
async fn during_a_rotation_old_forms_are_found_and_deleted() {
    let (old, new) = (key(), key());
    let memory = raw();
    write_people(&with_key(&memory, &old)).await.unwrap();
    let both = memory
        .clone()
        .with_layer(EncryptLayer::new(&new).with_read_key(&old));
    let bob = both
        .read_graph(&GraphQuery::Open(names(&["Bob Quietman"])))
        .await
        .unwrap();
    assert_eq!(bob.entities, [Entity::new("Bob Quietman", "person")]);
    let deletion = ObservationDeletion {
        entity_name: "Alice Secretname".into(),
        observations: names(&["locker code 4711"]),
    };
    assert_eq!(both.delete_observations(&[deletion]).await.unwrap(), 1);
    let relation = Relation::new("Alice Secretname", "Nobody Dangling", "owes_money_to");
    assert_eq!(both.delete_relations(&[relation]).await.unwrap(), 1);
    assert_eq!(
        both.delete_entities(&names(&["Bob Quietman"]))
            .await
            .unwrap(),
        1
    );
    let left = whole(&both).await;
    assert_eq!(left.entities.len(), 2);
    assert_eq!(left.entities[0].observations, ["likes Earl Grey tea"]);
    assert_eq!(
        left.relations,
        [Relation::new(
            "Alice Secretname",
            "Acme Hiddencorp",
            "works_at"
        )]
    );
}

#[tokio::test]
async fn encrypt_existing_seals_a_plaintext_graph_with_more_observations_than_one_call_holds() {
    let key = key();
    let memory = raw();
    let written = write_people(&*memory).await.unwrap();
    let many: Vec<String> = (0..=MAX_GRAPH_BATCH).map(|i| format!("fact {i}")).collect();
    memory
        .create_entities(&[Entity::new("Big", "t")])
        .await
        .unwrap();
    for chunk in many.chunks(MAX_GRAPH_BATCH) {
        let addition = ObservationAddition {
            entity_name: "Big".into(),
            contents: chunk.to_vec(),
        };
        memory.add_observations(&[addition]).await.unwrap();
    }
    let report = encrypt_existing(memory.clone(), &key).await.unwrap();
    assert_eq!((report.entities, report.relations), (4, 3));
    assert_sealed_under(&whole(&*memory).await, &key);
    let graph = whole(&with_key(&memory, &key)).await;
    assert_eq!(graph.entities[..3], written.entities[..]);
    assert_eq!(
        graph.entities[3].observations, many,
        "every observation, in order"
    );
    assert_eq!(graph.relations, written.relations);
}

#[tokio::test]
async fn encrypt_existing_refuses_a_name_too_long_to_seal_before_writing() {
    let memory = raw();
    let long = "l".repeat(MAX_ENCRYPTED_GRAPH_NAME_BYTES + 1);
    memory
        .create_entities(&[Entity::new("short", "t"), Entity::new(long, "t")])
        .await
        .unwrap();
    let before = whole(&*memory).await;
    let err = encrypt_existing(memory.clone(), &key()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert_eq!(whole(&*memory).await, before, "the graph is as it was");
}
