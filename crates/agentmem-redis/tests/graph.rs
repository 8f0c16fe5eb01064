//! The knowledge graph on Redis beyond the conformance suite: random operations over hostile
//! names give the same answers as agentmem-core's in-memory store (searches whose Unicode
//! lowercasing differs from ASCII included); key names escape the names and nothing is left
//! once every entity and relation is gone; and, on a single server (`REDIS_URL`) and on the
//! cluster (`REDIS_CLUSTER_URL`), writers on three connections lose nothing, concurrent
//! creates of one name leave one entity, and `add_observations` applies all or nothing.
use std::sync::Arc;

use agentmem_core::{
    Entity, ErrorKind, GraphQuery, GraphStore, InMemoryStore, KnowledgeGraph, Layered,
    ObservationAddition, ObservationDeletion, Relation, Result,
};
use agentmem_redis::RedisStore;
use agentmem_testkit::fixtures::visit_hub;
use common::{
    keys, single_url, store_and_raw, store_under_fresh_prefix, stores_under_fresh_prefix, Lcg,
};

mod common;

/// Entity names that are hostile as key parts (braces, `:`, glob characters, spaces, `%`,
/// the empty name) or whose Unicode lowercase is not their ASCII one (KELVIN SIGN → `k`,
/// `İ` → `i̇`, `Ω` → `ω`).
const NAMES: [&str; 10] = [
    "{x}",
    "a:b",
    "%41",
    "A",
    "a b*?[",
    "Ωmega",
    "\u{212A}elvin",
    "İstanbul",
    "",
    "plain",
];
const TYPES: [&str; 3] = ["person", "Ort", "ΤΎΠΟΣ"];
/// Observations: repeats up to case, and one (KELVIN SIGN) that matches `kelvin` by Unicode
/// rules only.
const TEXTS: [&str; 7] = [
    "likes tea",
    "LIKES TEA",
    "ı dotless",
    "{}",
    "kelvin",
    "x",
    "\u{212A}ELVIN",
];
const SEARCHES: [&str; 9] = ["", "a", "kelvin", "i̇", "omega", "x}", "%", "TEA", "zzz"];

impl Lcg {
    /// One to three picks of `items` (repeats likely).
    fn some(&mut self, items: &[&str]) -> Vec<String> {
        let n = 1 + self.next(3);
        (0..n).map(|_| self.pick(items).to_string()).collect()
    }

    fn relation(&mut self) -> Relation {
        Relation::new(self.pick(&NAMES), self.pick(&NAMES), self.pick(&TYPES))
    }
}

/// Applies one random operation to both stores and asserts equal answers.
async fn step(rng: &mut Lcg, redis: &Layered<RedisStore>, memory: &InMemoryStore) {
    fn same<T: PartialEq + std::fmt::Debug>(a: Result<T>, b: Result<T>, what: &str) {
        match (a, b) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{what}"),
            (Err(a), Err(b)) => {
                assert_eq!((a.kind(), a.message()), (b.kind(), b.message()), "{what}")
            }
            (a, b) => panic!("{what}: {a:?} vs {b:?}"),
        }
    }
    match rng.next(6) {
        0 => {
            let entities: Vec<Entity> = (0..1 + rng.next(3))
                .map(|_| {
                    Entity::new(rng.pick(&NAMES), rng.pick(&TYPES))
                        .with_observations(rng.some(&TEXTS))
                })
                .collect();
            let r = redis.create_entities(&entities).await;
            same(
                r,
                memory.create_entities(&entities).await,
                "create_entities",
            );
        }
        1 => {
            let relations: Vec<Relation> = (0..1 + rng.next(3)).map(|_| rng.relation()).collect();
            let r = redis.create_relations(&relations).await;
            same(
                r,
                memory.create_relations(&relations).await,
                "create_relations",
            );
        }
        2 => {
            let additions: Vec<ObservationAddition> = (0..1 + rng.next(2))
                .map(|_| ObservationAddition {
                    entity_name: rng.pick(&NAMES).into(),
                    contents: rng.some(&TEXTS),
                })
                .collect();
            let r = redis.add_observations(&additions).await;
            same(
                r,
                memory.add_observations(&additions).await,
                "add_observations",
            );
        }
        3 if rng.next(3) == 0 => {
            let names = rng.some(&NAMES);
            let r = redis.delete_entities(&names).await;
            same(r, memory.delete_entities(&names).await, "delete_entities");
        }
        4 => {
            let deletions = vec![ObservationDeletion {
                entity_name: rng.pick(&NAMES).into(),
                observations: rng.some(&TEXTS),
            }];
            let r = redis.delete_observations(&deletions).await;
            same(
                r,
                memory.delete_observations(&deletions).await,
                "delete_observations",
            );
        }
        _ => {
            let relations = vec![rng.relation(), rng.relation()];
            let r = redis.delete_relations(&relations).await;
            same(
                r,
                memory.delete_relations(&relations).await,
                "delete_relations",
            );
        }
    }
}

/// Every query of the test reads the same from both stores.
async fn assert_same_reads(redis: &Layered<RedisStore>, memory: &InMemoryStore, rng: &mut Lcg) {
    let mut queries = vec![GraphQuery::All, GraphQuery::Open(rng.some(&NAMES))];
    queries.extend(SEARCHES.iter().map(|s| GraphQuery::Search(s.to_string())));
    for query in &queries {
        let expected = memory.read_graph(query).await.unwrap();
        assert_eq!(
            redis.read_graph(query).await.unwrap(),
            expected,
            "{query:?}"
        );
    }
}

#[tokio::test]
async fn random_operations_match_the_in_memory_store() {
    let Some((redis, mut raw, _guard)) = store_and_raw(&single_url(), "graph_model").await else {
        return;
    };
    let memory = InMemoryStore::new();
    let mut rng = Lcg(7);
    for i in 0..600 {
        step(&mut rng, &redis, &memory).await;
        if i % 25 == 0 {
            assert_same_reads(&redis, &memory, &mut rng).await;
        }
    }
    assert_same_reads(&redis, &memory, &mut rng).await;
    let whole = redis.read_graph(&GraphQuery::All).await.unwrap();
    assert!(
        whole.entities.len() > 3 && whole.relations.len() > 3,
        "{whole:?}"
    );

    // Names appear in key names escaped: no brace, glob character, space or second `:`
    // after the kind, whatever the name.
    let prefix = redis.prefix().to_string();
    let graph_keys = format!("{prefix}:g:*");
    for key in keys(&mut raw, &graph_keys).await {
        let part = key.rsplit(':').next().unwrap();
        assert!(
            part.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.-%".contains(&b)),
            "{key}"
        );
    }

    // Deleting every name leaves only the counter.
    let names: Vec<String> = NAMES.iter().map(|n| n.to_string()).collect();
    let deleted = redis.delete_entities(&names).await.unwrap();
    assert_eq!(deleted, memory.delete_entities(&names).await.unwrap());
    assert_eq!(
        redis.read_graph(&GraphQuery::All).await.unwrap(),
        KnowledgeGraph::default()
    );
    assert_eq!(
        keys(&mut raw, &graph_keys).await,
        [format!("{prefix}:g:seq")]
    );
}

/// Entities of ASCII names and types whose observations, given at creation or added later,
/// match a search by Unicode rules only (KELVIN SIGN lowercases to `k`) are found.
#[tokio::test]
async fn observations_beyond_ascii_are_searched_by_unicode_rules() {
    let Some((store, _guard)) = store_under_fresh_prefix(&single_url(), "graph_wide").await else {
        return;
    };
    let entities = [
        Entity::new("born", "person").with_observations(["\u{212A}"]),
        Entity::new("later", "person").with_observations(["x"]),
        Entity::new("never", "person").with_observations(["x"]),
    ];
    store.create_entities(&entities).await.unwrap();
    let addition = ObservationAddition {
        entity_name: "later".into(),
        contents: vec!["\u{212A}ELVIN".into()],
    };
    store.add_observations(&[addition]).await.unwrap();
    let found = |text: &str| {
        let (query, store) = (GraphQuery::Search(text.into()), &store);
        async move {
            let graph = store.read_graph(&query).await.unwrap();
            graph
                .entities
                .into_iter()
                .map(|e| e.name)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(found("k").await, ["born", "later"]);
    assert_eq!(found("KELVIN").await, ["later"]);
    assert_eq!(found("\u{212A}").await, ["born", "later"]);
}

/// An entity whose string key is gone (never written so) reads as corrupt data, not as an
/// entity without a type.
#[tokio::test]
async fn a_missing_entity_string_is_corrupt_data() {
    let Some((store, mut raw, _guard)) = store_and_raw(&single_url(), "graph_corrupt").await else {
        return;
    };
    store
        .create_entities(&[Entity::new("x", "t")])
        .await
        .unwrap();
    // The entity's string is keyed by its number, its score in `P:g:ents`.
    let prefix = store.prefix();
    let number: String = redis::cmd("ZSCORE")
        .arg(format!("{prefix}:g:ents"))
        .arg("x")
        .query_async(&mut raw)
        .await
        .unwrap();
    let key = format!("{prefix}:g:e:{number}");
    let deleted: u64 = redis::cmd("DEL")
        .arg(&key)
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(deleted, 1);
    let queries = [
        GraphQuery::All,
        GraphQuery::Search("y".into()),
        GraphQuery::Open(vec!["x".into()]),
    ];
    for query in &queries {
        let err = store.read_graph(query).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::CorruptData, "{query:?}: {err}");
    }
}

/// On three connections, 100 tasks each create an entity, add an observation to a shared one
/// and relate the two: every acknowledged change is kept.
async fn writers_lose_nothing(url: &str) {
    let Some((stores, _guard)) = stores_under_fresh_prefix(url, "graph_writers", 3).await else {
        return;
    };
    let hub = Entity::new("hub", "place");
    stores[0].create_entities(&[hub]).await.unwrap();
    let mut tasks = tokio::task::JoinSet::new();
    for (c, store) in stores.iter().enumerate() {
        for i in 0..100 {
            let store = Arc::clone(store);
            tasks.spawn(async move { visit_hub(&*store, &format!("e{c}-{i}")).await });
        }
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    let graph = stores[2].read_graph(&GraphQuery::All).await.unwrap();
    assert_eq!(graph.entities.len(), 301);
    assert_eq!(graph.entities[0].name, "hub");
    assert_eq!(graph.entities[0].observations.len(), 300);
    assert_eq!(graph.relations.len(), 300);
    let opened = stores[1]
        .read_graph(&GraphQuery::Open(vec!["hub".into()]))
        .await
        .unwrap();
    assert_eq!((opened.entities.len(), opened.relations.len()), (1, 300));
}

/// 150 creates of one name over three connections: exactly one is created, and it is the
/// one stored.
async fn one_name_one_entity(url: &str) {
    let Some((stores, _guard)) = stores_under_fresh_prefix(url, "graph_one_name", 3).await else {
        return;
    };
    let mut tasks = tokio::task::JoinSet::new();
    for (c, store) in stores.iter().enumerate() {
        for i in 0..50 {
            let store = Arc::clone(store);
            tasks.spawn(async move {
                let entity = Entity::new("same", format!("t{c}-{i}"));
                store.create_entities(&[entity]).await.unwrap()
            });
        }
    }
    let mut created = Vec::new();
    while let Some(done) = tasks.join_next().await {
        created.extend(done.unwrap());
    }
    assert_eq!(created.len(), 1, "{created:?}");
    let graph = stores[0].read_graph(&GraphQuery::All).await.unwrap();
    assert_eq!(graph.entities, created);
}

/// While entity `b` is deleted and re-created over and over, additions to `a` and `b`
/// together either apply to both or to neither.
async fn additions_are_all_or_nothing(url: &str) {
    let Some((stores, _guard)) = stores_under_fresh_prefix(url, "graph_atomic", 3).await else {
        return;
    };
    let both = [Entity::new("a", "t"), Entity::new("b", "t")];
    stores[0].create_entities(&both).await.unwrap();
    let churn = {
        let store = Arc::clone(&stores[0]);
        tokio::spawn(async move {
            for _ in 0..100 {
                store.delete_entities(&["b".into()]).await.unwrap();
                store
                    .create_entities(&[Entity::new("b", "t")])
                    .await
                    .unwrap();
            }
        })
    };
    let mut tasks = tokio::task::JoinSet::new();
    for (c, store) in stores.iter().enumerate().skip(1) {
        for i in 0..100 {
            let store = Arc::clone(store);
            tasks.spawn(async move {
                let content = vec![format!("{c}-{i}")];
                let additions = ["a", "b"].map(|name| ObservationAddition {
                    entity_name: name.into(),
                    contents: content.clone(),
                });
                match store.add_observations(&additions).await {
                    Ok(added) => added.iter().all(|a| a.added_observations == content),
                    Err(e) => {
                        assert_eq!(e.kind(), ErrorKind::NotFound);
                        assert!(
                            e.to_string().contains("Entity with name b not found"),
                            "{e}"
                        );
                        false
                    }
                }
            });
        }
    }
    let mut applied = 0;
    while let Some(done) = tasks.join_next().await {
        applied += usize::from(done.unwrap());
    }
    churn.await.unwrap();
    let a = stores[0]
        .read_graph(&GraphQuery::Open(vec!["a".into()]))
        .await
        .unwrap();
    assert_eq!(a.entities[0].observations.len(), applied);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writers_on_three_connections_lose_nothing() {
    writers_lose_nothing(&single_url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_creates_of_one_name_leave_one_entity() {
    one_name_one_entity(&single_url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_additions_apply_all_or_nothing() {
    additions_are_all_or_nothing(&single_url()).await;
}

/// The same three on the Redis Cluster (the store's keys on one slot).
mod cluster {
    fn url() -> String {
        agentmem_testkit::servers::redis_cluster_url()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn writers_on_three_connections_lose_nothing() {
        super::writers_lose_nothing(&url()).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_creates_of_one_name_leave_one_entity() {
        super::one_name_one_entity(&url()).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_additions_apply_all_or_nothing() {
        super::additions_are_all_or_nothing(&url()).await;
    }
}
