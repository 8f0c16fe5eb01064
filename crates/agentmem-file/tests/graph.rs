//! The knowledge graph on files: after every step of a mixed run, what the working store,
//! another store on the same root (another process, with caches of its own) and a freshly
//! opened store read equals what the in-memory reference holds; the log on disk; compaction
//! seen by another store; and what a crash or an edit leaves in the log is repaired, never a
//! panic or a wrong answer.

mod common;

use std::path::{Path, PathBuf};

use agentmem_core::{
    AgentMemory, Entity, ErrorKind, GraphQuery, GraphStore, InMemoryStore, KnowledgeGraph,
    ObservationAddition, ObservationDeletion, Relation,
};
use agentmem_file::{Durability, FileStore, RepairKind};
use common::{append_bytes, kinds, open_with, MixedRun};

/// One graph call.
#[derive(Debug, Clone)]
enum Step {
    Entities(Vec<Entity>),
    Relations(Vec<Relation>),
    Add(Vec<ObservationAddition>),
    DeleteEntities(Vec<String>),
    DeleteObservations(Vec<ObservationDeletion>),
    DeleteRelations(Vec<Relation>),
}

/// The graph's calls and views, for the mixed run.
struct Graph;

impl MixedRun for Graph {
    type Step = Step;
    type Answer = Result<String, ErrorKind>;
    type View = Vec<KnowledgeGraph>;

    async fn apply(store: &dyn AgentMemory, step: &Step) -> Result<String, ErrorKind> {
        let answer = match step {
            Step::Entities(e) => store.create_entities(e).await.map(|r| format!("{r:?}")),
            Step::Relations(r) => store.create_relations(r).await.map(|r| format!("{r:?}")),
            Step::Add(a) => store.add_observations(a).await.map(|r| format!("{r:?}")),
            Step::DeleteEntities(n) => store.delete_entities(n).await.map(|n| n.to_string()),
            Step::DeleteObservations(d) => {
                store.delete_observations(d).await.map(|n| n.to_string())
            }
            Step::DeleteRelations(r) => store.delete_relations(r).await.map(|n| n.to_string()),
        };
        answer.map_err(|e| e.kind())
    }

    /// The whole graph, a search and an opening.
    async fn view(store: &dyn AgentMemory) -> Vec<KnowledgeGraph> {
        let queries = [
            GraphQuery::All,
            GraphQuery::Search("ÉTÉ".into()),
            GraphQuery::Open(vec!["Alice".into(), "nobody".into()]),
        ];
        let mut views = Vec::new();
        for query in &queries {
            views.push(store.read_graph(query).await.expect("read"));
        }
        views
    }
}

fn add(entity: &str, contents: &[&str]) -> ObservationAddition {
    ObservationAddition {
        entity_name: entity.into(),
        contents: contents.iter().map(|c| c.to_string()).collect(),
    }
}

fn strike(entity: &str, observations: &[&str]) -> ObservationDeletion {
    ObservationDeletion {
        entity_name: entity.into(),
        observations: observations.iter().map(|c| c.to_string()).collect(),
    }
}

/// The mixed run: duplicates within and across calls, a refused addition, deletions that
/// change nothing, re-creation, and text JSON must escape.
fn steps() -> Vec<Step> {
    let alice = || Entity::new("Alice", "person").with_observations(["été", "x\n\"y\"", "été"]);
    let works = || Relation::new("Alice", "Acme", "works_at");
    vec![
        Step::Entities(vec![alice(), Entity::new("Acme", "org"), alice()]),
        Step::Entities(vec![Entity::new("Alice", "robot"), Entity::new("Bob", "p")]),
        Step::Relations(vec![
            works(),
            works(),
            Relation::new("Bob", "ghost", "knows"),
        ]),
        Step::Add(vec![add("Bob", &["a", "b", "a"]), add("Bob", &["b", "c"])]),
        Step::Add(vec![add("Acme", &["new"]), add("nobody", &["x"])]),
        Step::Add(vec![add("Alice", &["été"])]),
        Step::DeleteObservations(vec![strike("Bob", &["a", "zz"]), strike("none", &["a"])]),
        Step::Add(vec![add("Bob", &["a"])]),
        Step::DeleteRelations(vec![Relation::new("Bob", "ghost", "other")]),
        Step::DeleteEntities(vec!["ghost".into()]),
        Step::DeleteEntities(vec!["nobody".into()]),
        Step::DeleteEntities(vec!["Alice".into()]),
        Step::Entities(vec![Entity::new("Alice", "person")]),
        Step::Relations(vec![works(), Relation::new("Acme", "Alice", "employs")]),
        Step::DeleteRelations(vec![works()]),
        Step::Add(vec![add("Alice", &["ÉTÉ again"])]),
    ]
}

common::mixed_run_tests!(Graph, steps());

fn log(root: &Path) -> PathBuf {
    root.join("graph").join("graph.jsonl")
}

fn lines(root: &Path) -> usize {
    std::fs::read_to_string(log(root))
        .expect("read")
        .lines()
        .count()
}

async fn names(store: &dyn AgentMemory) -> Vec<String> {
    let graph = store.read_graph(&GraphQuery::All).await.expect("read");
    graph.entities.into_iter().map(|e| e.name).collect()
}

async fn create(store: &dyn AgentMemory, names: &[&str]) {
    let entities: Vec<Entity> = names.iter().map(|n| Entity::new(*n, "t")).collect();
    store.create_entities(&entities).await.expect("create");
}

#[tokio::test]
async fn the_graph_is_one_private_log_that_only_changes_append_to() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open_with(dir.path(), Durability::Fsync).await;
    assert!(names(&store).await.is_empty());
    assert!(!dir.path().join("graph").exists(), "a read creates nothing");
    create(&store, &["a", "b"]).await;
    let text = std::fs::read_to_string(log(dir.path())).expect("read");
    let mut rows = text.lines();
    assert_eq!(
        rows.next(),
        Some(r#"{"op":"header","format":"agentmem.graph","version":1}"#)
    );
    assert_eq!(
        rows.next(),
        Some(
            r#"{"op":"create_entities","entities":[{"name":"a","entityType":"t","observations":[]},{"name":"b","entityType":"t","observations":[]}]}"#
        )
    );
    let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode(&log(dir.path())), 0o600);
    assert_eq!(mode(&dir.path().join("graph")), 0o700);
    // Writes that change nothing, and a refused one, write nothing.
    let size = std::fs::metadata(log(dir.path())).expect("stat").len();
    create(&store, &["a"]).await;
    let err = store
        .add_observations(&[add("a", &["x"]), add("missing", &["y"])])
        .await
        .expect_err("refused");
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert_eq!(store.delete_entities(&["zz".into()]).await.expect("del"), 0);
    assert_eq!(
        std::fs::metadata(log(dir.path())).expect("stat").len(),
        size
    );
    // One line a change.
    store
        .add_observations(&[add("a", &["x"])])
        .await
        .expect("add");
    assert_eq!(lines(dir.path()), 3);
    let fresh = open_with(dir.path(), Durability::Fsync).await;
    let graph = fresh.read_graph(&GraphQuery::All).await.expect("read");
    assert_eq!(graph.entities[0].observations, ["x"]);
}

#[tokio::test]
async fn the_graph_survives_reopening() {
    let dir = tempfile::tempdir().expect("temp dir");
    let reference = InMemoryStore::new();
    {
        let store = open_with(dir.path(), Durability::Fsync).await;
        for step in steps() {
            let _ = Graph::apply(&store, &step).await;
            let _ = Graph::apply(&reference, &step).await;
        }
    }
    let store = open_with(dir.path(), Durability::Fsync).await;
    assert_eq!(Graph::view(&store).await, Graph::view(&reference).await);
    assert!(store.repairs().is_empty(), "{:?}", store.repairs());
}

#[tokio::test]
async fn a_torn_last_line_is_cut_away_and_the_graph_goes_on() {
    let dir = tempfile::tempdir().expect("temp dir");
    create(&open_with(dir.path(), Durability::Fsync).await, &["a", "b"]).await;
    let path = log(dir.path());
    let whole = std::fs::metadata(&path).expect("stat").len();
    append_bytes(&path, br#"{"op":"create_entities","entities":[{"na"#);
    let store = open_with(dir.path(), Durability::Fsync).await;
    assert_eq!(names(&store).await, ["a", "b"]);
    assert_eq!(kinds(&store), [RepairKind::TornTail]);
    assert_eq!(std::fs::metadata(&path).expect("stat").len(), whole);
    create(&store, &["c"]).await;
    let again = open_with(dir.path(), Durability::Fsync).await;
    assert_eq!(names(&again).await, ["a", "b", "c"]);
    assert!(again.repairs().is_empty());
    // A tail of zeros (a crash after the size grew, before the data landed) is torn too, and
    // a store that had read the log before repairs it as well.
    append_bytes(&path, &[0; 40]);
    append_bytes(&path, b"\n");
    create(&again, &["d"]).await;
    assert_eq!(kinds(&again), [RepairKind::TornTail]);
    let fresh = open_with(dir.path(), Durability::Fsync).await;
    assert_eq!(names(&fresh).await, ["a", "b", "c", "d"]);
    assert!(fresh.repairs().is_empty());
}

#[tokio::test]
async fn an_unreadable_line_is_set_aside_and_the_rest_kept() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open_with(dir.path(), Durability::Buffered).await;
    create(&store, &["a", "b"]).await;
    let path = log(dir.path());
    // Appended by another writer, as this store's cache does not know yet.
    append_bytes(&path, b"{\"op\":\"create_entities\",\"what\":1}\n");
    create(&store, &["c"]).await;
    assert_eq!(names(&store).await, ["a", "b", "c"]);
    assert_eq!(kinds(&store), [RepairKind::Quarantined]);
    let quarantine = dir.path().join("graph").join("quarantine");
    let aside: Vec<_> = std::fs::read_dir(&quarantine)
        .expect("quarantine folder")
        .map(|e| std::fs::read(e.expect("entry").path()).expect("read"))
        .collect();
    assert_eq!(
        aside,
        [b"{\"op\":\"create_entities\",\"what\":1}\n".to_vec()]
    );
    let fresh = open_with(dir.path(), Durability::Buffered).await;
    assert_eq!(names(&fresh).await, ["a", "b", "c"]);
    assert!(fresh.repairs().is_empty(), "{:?}", fresh.repairs());
}

#[tokio::test]
async fn a_damaged_creation_takes_only_its_entity_and_later_records_still_apply() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open_with(dir.path(), Durability::Buffered).await;
    create(&store, &["a"]).await;
    create(&store, &["b"]).await;
    store
        .add_observations(&[add("a", &["1"]), add("b", &["2"])])
        .await
        .expect("add");
    // Line 3 (b's creation) damaged by an edit; the header line too.
    let text = std::fs::read_to_string(log(dir.path())).expect("read");
    let mut rows: Vec<&str> = text.lines().collect();
    rows[0] = "{\"op\":\"hea";
    rows[2] = "not json";
    std::fs::write(log(dir.path()), rows.join("\n") + "\n").expect("write");
    let fresh = open_with(dir.path(), Durability::Buffered).await;
    let graph = fresh.read_graph(&GraphQuery::All).await.expect("read");
    assert_eq!(
        graph.entities,
        [Entity::new("a", "t").with_observations(["1"])]
    );
    assert_eq!(kinds(&fresh), [RepairKind::Quarantined]);
    // Rewritten with a header: read as is from now on.
    let again = open_with(dir.path(), Durability::Buffered).await;
    assert_eq!(names(&again).await, ["a"]);
    assert!(again.repairs().is_empty(), "{:?}", again.repairs());
}

#[tokio::test]
async fn a_newer_log_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().expect("temp dir");
    create(&open_with(dir.path(), Durability::Buffered).await, &["a"]).await;
    let newer =
        "{\"op\":\"header\",\"format\":\"agentmem.graph\",\"version\":9}\n{\"op\":\"future\"}\n";
    std::fs::write(log(dir.path()), newer).expect("write");
    let store = open_with(dir.path(), Durability::Buffered).await;
    let err = store
        .read_graph(&GraphQuery::All)
        .await
        .expect_err("refused");
    assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
    let err = store
        .create_entities(&[Entity::new("b", "t")])
        .await
        .expect_err("refused");
    assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
    assert_eq!(
        std::fs::read_to_string(log(dir.path())).expect("read"),
        newer
    );
}

#[tokio::test]
async fn compaction_rewrites_the_log_and_other_stores_follow() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open_with(dir.path(), Durability::Buffered).await;
    let other = open_with(dir.path(), Durability::Buffered).await;
    create(&store, &["a", "b", "c"]).await;
    let relation = Relation::new("a", "b", "r");
    store
        .create_relations(std::slice::from_ref(&relation))
        .await
        .expect("relate");
    assert_eq!(names(&other).await, ["a", "b", "c"], "read before");
    let inode = |root: &Path| {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(log(root)).expect("stat").ino()
    };
    let before = inode(dir.path());
    // Churn: each round leaves the graph as it was and two records in the log.
    let rounds = 600;
    for i in 0..rounds {
        let note = format!("note {i}");
        store
            .add_observations(&[add("a", &[&note])])
            .await
            .expect("add");
        store
            .delete_observations(&[strike("a", &[&note])])
            .await
            .expect("delete");
    }
    store
        .add_observations(&[add("c", &["kept"])])
        .await
        .expect("add");
    assert_ne!(inode(dir.path()), before, "the log was rewritten");
    // Far fewer lines than the 1,200 records written.
    assert!(lines(dir.path()) < rounds, "{} lines", lines(dir.path()));
    let want = store.read_graph(&GraphQuery::All).await.expect("read");
    assert_eq!(want.relations, [relation]);
    assert_eq!(want.entities[2].observations, ["kept"]);
    // The other store, whose cache holds the old file, reads the new one.
    assert_eq!(
        other.read_graph(&GraphQuery::All).await.expect("read"),
        want
    );
    // And writes to it, which the first store sees.
    create(&other, &["d"]).await;
    assert_eq!(names(&store).await, ["a", "b", "c", "d"]);
    let fresh = open_with(dir.path(), Durability::Buffered).await;
    assert_eq!(names(&fresh).await, ["a", "b", "c", "d"]);
    for s in [&store, &other, &fresh] {
        assert!(s.repairs().is_empty(), "{:?}", s.repairs());
    }
}

#[tokio::test]
async fn a_log_of_live_records_is_not_compacted() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open_with(dir.path(), Durability::Buffered).await;
    let five = ["a", "b", "c", "d", "e"];
    create(&store, &five).await;
    // Many more records than entities, but each one mostly what the graph holds: a rewrite
    // would not be much smaller.
    for i in 0..1_200 {
        let note = format!("{i:04} {}", "x".repeat(500));
        store
            .add_observations(&[add(five[i % 5], &[&note])])
            .await
            .expect("add");
    }
    assert_eq!(lines(dir.path()), 1_202);
    let graph = store.read_graph(&GraphQuery::All).await.expect("read");
    assert_eq!(graph.entities[4].observations.len(), 240);
}

#[tokio::test]
async fn a_temporary_file_left_by_a_rewrite_is_removed() {
    let dir = tempfile::tempdir().expect("temp dir");
    create(&open_with(dir.path(), Durability::Buffered).await, &["a"]).await;
    let tmp = dir.path().join("graph").join(".tmp-interrupted");
    std::fs::write(&tmp, b"half a rewrite").expect("write");
    let store = open_with(dir.path(), Durability::Buffered).await;
    create(&store, &["b"]).await;
    assert!(!tmp.exists());
    assert_eq!(kinds(&store), [RepairKind::TempFile]);
    assert_eq!(names(&store).await, ["a", "b"]);
}

#[tokio::test]
async fn concurrent_tasks_of_one_store_and_two_stores_lose_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let stores = [
        open_with(dir.path(), Durability::Buffered).await,
        open_with(dir.path(), Durability::Buffered).await,
    ];
    create(&stores[0], &["hub"]).await;
    let mut tasks = Vec::new();
    for t in 0..8 {
        let store = stores[t % 2].clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..25 {
                let name = format!("t{t}-{i}");
                create(&store, &[&name, "one"]).await;
                store
                    .add_observations(&[add("hub", &[&name])])
                    .await
                    .expect("add");
            }
        }));
    }
    for task in tasks {
        task.await.expect("task");
    }
    let graph = stores[1].read_graph(&GraphQuery::All).await.expect("read");
    assert_eq!(graph.entities.len(), 2 + 8 * 25);
    assert_eq!(graph.entities[0].observations.len(), 8 * 25);
    let ones = graph.entities.iter().filter(|e| e.name == "one").count();
    assert_eq!(ones, 1);
}

/// The log's bytes.
fn log_bytes(root: &Path) -> Vec<u8> {
    std::fs::read(log(root)).expect("read")
}

/// What `check_graph(repair)` finds: each finding's kind, and whether it was repaired.
async fn check(store: &FileStore, repair: bool) -> Vec<(RepairKind, bool)> {
    let found = store.check_graph(repair).await.expect("check");
    found.iter().map(|r| (r.kind, r.repaired)).collect()
}

#[tokio::test]
async fn a_check_reports_a_torn_graph_tail_and_a_repair_truncates_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    create(&open_with(dir.path(), Durability::Fsync).await, &["a", "b"]).await;
    let whole = log_bytes(dir.path());
    append_bytes(
        &log(dir.path()),
        br#"{"op":"create_entities","entities":[{"na"#,
    );
    let torn = log_bytes(dir.path());
    let store = open_with(dir.path(), Durability::Fsync).await;
    let found = store.check_graph(false).await.expect("check");
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        (found[0].kind, found[0].repaired),
        (RepairKind::TornTail, false)
    );
    assert_eq!(found[0].path, log(dir.path()));
    assert!(found[0].detail.contains("line 3"), "{}", found[0]);
    assert_eq!(log_bytes(dir.path()), torn, "a check changes nothing");
    assert!(store.repairs().is_empty());
    assert_eq!(check(&store, true).await, [(RepairKind::TornTail, true)]);
    assert_eq!(log_bytes(dir.path()), whole);
    assert_eq!(kinds(&store), [RepairKind::TornTail]);
    assert!(check(&store, false).await.is_empty());
    assert_eq!(names(&store).await, ["a", "b"]);
}

#[tokio::test]
async fn a_check_reports_a_bad_graph_line_and_a_repair_sets_it_aside_keeping_the_rest() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open_with(dir.path(), Durability::Buffered).await;
    for name in ["a", "b", "c"] {
        create(&store, &[name]).await;
    }
    // Line 3 (b's creation) edited into something unreadable.
    let text = std::fs::read_to_string(log(dir.path())).expect("read");
    let mut rows: Vec<&str> = text.lines().collect();
    rows[2] = "not json";
    std::fs::write(log(dir.path()), rows.join("\n") + "\n").expect("write");
    let edited = log_bytes(dir.path());
    let quarantine = dir.path().join("graph").join("quarantine");

    let found = store.check_graph(false).await.expect("check");
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        (found[0].kind, found[0].repaired),
        (RepairKind::Quarantined, false)
    );
    let detail = &found[0].detail;
    assert!(detail.contains("line 3 does not parse"), "{detail}");
    assert!(detail.contains("to be set aside in"), "{detail}");
    assert_eq!(log_bytes(dir.path()), edited, "a check changes nothing");
    assert!(!quarantine.exists());

    assert_eq!(check(&store, true).await, [(RepairKind::Quarantined, true)]);
    let aside: Vec<_> = std::fs::read_dir(&quarantine)
        .expect("quarantine folder")
        .map(|e| std::fs::read(e.expect("entry").path()).expect("read"))
        .collect();
    assert_eq!(aside, [b"not json\n".to_vec()]);
    assert_eq!(kinds(&store), [RepairKind::Quarantined]);
    assert!(check(&store, false).await.is_empty());
    assert_eq!(names(&store).await, ["a", "c"]);
    let fresh = open_with(dir.path(), Durability::Buffered).await;
    assert_eq!(names(&fresh).await, ["a", "c"]);
    assert!(fresh.repairs().is_empty(), "{:?}", fresh.repairs());
}

#[tokio::test]
async fn a_check_of_a_clean_graph_finds_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open_with(dir.path(), Durability::Buffered).await;
    // No graph yet: nothing to find, and nothing created.
    assert!(check(&store, false).await.is_empty());
    assert!(check(&store, true).await.is_empty());
    assert!(!dir.path().join("graph").exists());
    create(&store, &["a", "b"]).await;
    store
        .add_observations(&[add("a", &["x"])])
        .await
        .expect("add");
    let before = log_bytes(dir.path());
    assert!(check(&store, false).await.is_empty());
    assert!(check(&store, true).await.is_empty());
    assert_eq!(log_bytes(dir.path()), before);
    assert!(store.repairs().is_empty(), "{:?}", store.repairs());
    // The store goes on from its cache after a check.
    create(&store, &["c"]).await;
    assert_eq!(names(&store).await, ["a", "b", "c"]);
}

#[tokio::test]
async fn a_check_reports_graph_temp_files_and_refuses_a_newer_log() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open_with(dir.path(), Durability::Buffered).await;
    create(&store, &["a"]).await;
    let tmp = dir.path().join("graph").join(".tmp-interrupted");
    std::fs::write(&tmp, b"half a rewrite").expect("write");
    assert_eq!(check(&store, false).await, [(RepairKind::TempFile, false)]);
    assert!(tmp.exists());
    assert_eq!(check(&store, true).await, [(RepairKind::TempFile, true)]);
    assert!(!tmp.exists());
    // A temporary file beside no log (the first write interrupted) is found too.
    std::fs::remove_file(log(dir.path())).expect("remove");
    std::fs::write(&tmp, b"half a first write").expect("write");
    assert_eq!(check(&store, true).await, [(RepairKind::TempFile, true)]);
    assert!(!tmp.exists());

    let newer = "{\"op\":\"header\",\"format\":\"agentmem.graph\",\"version\":9}\n{\"op\":\"x\"}\n";
    std::fs::write(log(dir.path()), newer).expect("write");
    for repair in [false, true] {
        let err = store.check_graph(repair).await.expect_err("refused");
        assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
    }
    assert_eq!(
        std::fs::read_to_string(log(dir.path())).expect("read"),
        newer
    );
}
