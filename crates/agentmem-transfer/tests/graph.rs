//! The knowledge graph through export, import and migration: a store's graph (hostile and
//! Unicode texts) exported in each of agentmem's own formats and imported into a fresh store
//! reads back the same, byte for byte on re-export; an import merges into a store holding part
//! of it and a second import writes nothing; a migration from a file store into SQLite carries
//! it, telling its progress callback, and verifies it; a store without a graph exports as
//! before and refuses a document with one before anything is written.
use agentmem_core::{
    AgentMemory, Entity, ErrorKind, GraphQuery, GraphStore, InMemoryStore, KnowledgeGraph,
    MemoryItem, MemoryKind, MemoryStore, Message, ObservationAddition, Relation, SessionStore,
};
use agentmem_formats::{json, jsonl, yaml, ExportDocument, Format};
use agentmem_transfer::{
    export_document, import_document, migrate, write_jsonl, GraphReport, MigrateOptions,
    ProgressEvent, Silent,
};

mod common;
use common::Without;

/// A format's `to_string`.
type Render = fn(&ExportDocument) -> agentmem_core::Result<String>;

/// Names and texts that break naive keys, patterns and encodings.
const HOSTILE: &[&str] = &[
    "Alice",
    "ü 日本 \u{1f600} \u{202e}",
    "line\nbreak\r\t\"'\\",
    "a|b%2F[x]?{}*$1 ../../etc",
    "",
];

/// A graph with every hostile text as entity, type, observation and relation.
fn graph() -> KnowledgeGraph {
    let entities = HOSTILE
        .iter()
        .enumerate()
        .map(|(i, name)| {
            Entity::new(*name, HOSTILE[(i + 1) % HOSTILE.len()])
                .with_observations(HOSTILE.iter().map(|o| format!("{o} #{i}")))
        })
        .collect();
    let mut relations: Vec<Relation> = HOSTILE
        .windows(2)
        .map(|w| Relation::new(w[0], w[1], w[0]))
        .collect();
    relations.push(Relation::new("Alice", "nobody (no such entity)", "knows"));
    KnowledgeGraph {
        entities,
        relations,
    }
}

/// Writes `graph` into `store` with the store's own calls.
async fn fill(store: &dyn AgentMemory, graph: &KnowledgeGraph) {
    store.create_entities(&graph.entities).await.unwrap();
    store.create_relations(&graph.relations).await.unwrap();
}

/// An in-memory store holding a session, a memory item and [`graph`].
async fn source() -> agentmem_core::Layered<InMemoryStore> {
    let store = InMemoryStore::new();
    SessionStore::append(&store, &"s".parse().unwrap(), &[Message::user("hi")])
        .await
        .unwrap();
    store
        .put_memory(&MemoryItem::new(MemoryKind::Fact, "f"))
        .await
        .unwrap();
    fill(&store, &graph()).await;
    store
}

async fn read(store: &dyn AgentMemory) -> KnowledgeGraph {
    store.read_graph(&GraphQuery::All).await.unwrap()
}

#[tokio::test]
async fn every_own_format_round_trips_the_graph() {
    let from = source().await;
    let doc = export_document(&from).await.unwrap();
    assert_eq!(doc.graph, graph());
    let mut out = Vec::new();
    let counts = write_jsonl(&from, &mut out).await.unwrap();
    assert_eq!((counts.entities, counts.relations), (5, 5));
    let streamed = String::from_utf8(out).unwrap();
    assert_eq!(streamed, jsonl::to_string(&doc).unwrap());

    let render: [(&str, Render); 3] = [
        ("jsonl", jsonl::to_string),
        ("json", json::to_string),
        ("yaml", yaml::to_string),
    ];
    for (name, to_string) in render {
        let format: Format = name.parse().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("all.{name}"));
        format.export(&doc, &path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, to_string(&doc).unwrap(), "{name}");
        let back = format.import(&path).unwrap();
        assert_eq!(back.graph, doc.graph, "{name}");
        assert_eq!(to_string(&back).unwrap(), text, "{name}");

        let to = InMemoryStore::new();
        let report = import_document(&to, &back).await.unwrap();
        let expected = GraphReport {
            entities: 5,
            entities_created: 5,
            observations_written: 25,
            relations: 5,
            relations_created: 5,
        };
        assert_eq!(report.graph, expected, "{name}");
        assert_eq!(read(&to).await, graph(), "{name}");
        let again = export_document(&to).await.unwrap();
        assert_eq!(to_string(&again).unwrap(), text, "{name}: byte for byte");
        let second = import_document(&to, &back).await.unwrap();
        assert_eq!(
            (
                second.graph.entities_created,
                second.graph.observations_written
            ),
            (0, 0),
            "{name}"
        );
        assert_eq!(second.graph.relations_created, 0, "{name}");
    }
}

#[tokio::test]
async fn an_import_merges_into_the_graph_a_store_holds() {
    let to = InMemoryStore::new();
    to.create_entities(&[
        Entity::new("Alice", "robot").with_observations(["held first", "Alice #0"]),
        Entity::new("Zed", "z"),
    ])
    .await
    .unwrap();
    to.create_relations(&[Relation::new("Alice", "nobody (no such entity)", "knows")])
        .await
        .unwrap();
    let mut doc = ExportDocument::new();
    doc.graph = graph();
    // The reference server's files may repeat an entity: its observations merge into the first.
    doc.graph
        .entities
        .push(Entity::new("Zed", "other").with_observations(["late", "late"]));
    let report = import_document(&to, &doc).await.unwrap();
    assert_eq!(
        (report.graph.entities, report.graph.entities_created),
        (6, 4)
    );
    assert_eq!(report.graph.relations_created, 4);
    let held = read(&to).await;
    let alice = &held.entities[0];
    assert_eq!(
        alice.entity_type, "robot",
        "the store's entity keeps its type"
    );
    assert_eq!(
        alice.observations.len(),
        2 + 5 - 1,
        "one observation it held"
    );
    assert_eq!(alice.observations[..2], ["held first", "Alice #0"]);
    assert_eq!(held.entities[1].observations, ["late"]);
    assert_eq!(held.entities.len(), 6);
    // 6 for Alice, 1 for Zed, 5 for each of the 4 new entities.
    assert_eq!(report.graph.observations_written, 5 - 1 + 1 + 4 * 5);
    let again = import_document(&to, &doc).await.unwrap();
    assert_eq!(again.graph.observations_written, 0);
    assert_eq!(read(&to).await, held);
}

#[tokio::test]
async fn a_migration_from_files_to_sqlite_carries_the_graph() {
    let dir = tempfile::tempdir().unwrap();
    let files = agentmem_file::FileStore::connect(&format!(
        "file://{}?durability=buffered",
        dir.path().join("files").display()
    ))
    .await
    .unwrap();
    let sqlite = agentmem_sqlite::SqliteStore::connect(&format!(
        "sqlite://{}",
        dir.path().join("agents.db").display()
    ))
    .await
    .unwrap();
    SessionStore::append(&files, &"s".parse().unwrap(), &[Message::user("hi")])
        .await
        .unwrap();
    fill(&files, &graph()).await;
    // Observations added after creation come after those created with the entity.
    files
        .add_observations(&[ObservationAddition {
            entity_name: "Alice".into(),
            contents: vec!["added later".into()],
        }])
        .await
        .unwrap();
    let expected = read(&files).await;

    let dry = MigrateOptions {
        dry_run: true,
        ..MigrateOptions::default()
    };
    let planned = migrate(&files, &sqlite, dry, &mut Silent).await.unwrap();
    assert_eq!(planned.graph.entities_created, 5);
    assert!(read(&sqlite).await.is_empty(), "a dry run writes nothing");

    let mut events = Vec::new();
    let report = migrate(&files, &sqlite, MigrateOptions::default(), &mut |e| {
        events.push(e)
    })
    .await
    .unwrap();
    assert!(report.verified);
    assert_eq!(report.graph, planned.graph);
    assert_eq!(report.graph.observations_written, 26);
    assert_eq!(
        events.last(),
        Some(&ProgressEvent::Graph {
            copied: report.graph
        })
    );
    assert_eq!(read(&sqlite).await, expected);
    assert_eq!(
        export_document(&sqlite).await.unwrap().graph,
        export_document(&files).await.unwrap().graph
    );
    let again = migrate(&files, &sqlite, MigrateOptions::default(), &mut Silent)
        .await
        .unwrap();
    assert_eq!(again.graph.entities, 5);
    assert_eq!(
        (
            again.graph.entities_created,
            again.graph.observations_written
        ),
        (0, 0)
    );
    assert_eq!(again.graph.relations_created, 0);
}

#[tokio::test]
async fn an_empty_graph_is_no_event_and_no_record() {
    let from = InMemoryStore::new();
    SessionStore::append(&from, &"s".parse().unwrap(), &[Message::user("hi")])
        .await
        .unwrap();
    let mut events = Vec::new();
    migrate(
        &from,
        &InMemoryStore::new(),
        MigrateOptions::default(),
        &mut |e| events.push(e),
    )
    .await
    .unwrap();
    assert!(!events
        .iter()
        .any(|e| matches!(e, ProgressEvent::Graph { .. })));
    let text = jsonl::to_string(&export_document(&from).await.unwrap()).unwrap();
    assert!(!text.contains("entity"), "{text}");
    let text = json::to_string(&export_document(&from).await.unwrap()).unwrap();
    assert!(!text.contains("graph"), "{text}");
}

/// An in-memory store that keeps no graph, as a backend without the capability: every graph
/// operation the transfer might call is refused.
fn no_graph() -> Without {
    Without::new(|c| c.graph = false)
}

#[tokio::test]
async fn a_store_without_a_graph_exports_as_before_and_refuses_one() {
    let store = no_graph();
    SessionStore::append(&store, &"s".parse().unwrap(), &[Message::user("hi")])
        .await
        .unwrap();
    // A graph in the store beneath is not the outer store's to export.
    fill(&store.0, &graph()).await;
    let doc = export_document(&store).await.unwrap();
    assert!(doc.graph.is_empty());

    let mut with_graph = ExportDocument::new();
    with_graph.sessions = doc.sessions.clone();
    with_graph.sessions[0].id = "new".parse().unwrap();
    with_graph.graph = graph();
    let err = import_document(&store, &with_graph).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
    assert!(err.message().contains("keeps no knowledge graph"), "{err}");
    let sessions = SessionStore::list_sessions(&store).await.unwrap();
    assert_eq!(sessions.len(), 1, "nothing was written");

    let fresh = no_graph();
    let err = migrate(
        &source().await,
        &fresh,
        MigrateOptions::default(),
        &mut Silent,
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
}

#[tokio::test]
async fn a_malformed_graph_is_refused_before_writing() {
    let mut doc = export_document(&source().await).await.unwrap();
    doc.graph.entities[2]
        .observations
        .push("nul \0 inside".into());
    let to = InMemoryStore::new();
    let err = import_document(&to, &doc).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::CorruptData, "{err}");
    assert!(SessionStore::list_sessions(&to).await.unwrap().is_empty());
    assert!(read(&to).await.is_empty());
}
