//! The knowledge graph in and out of stores: read out whole, merged in by the graph's rules.

use std::collections::{HashMap, HashSet};

use agentmem_core::graph::MAX_GRAPH_BATCH;
use agentmem_core::{
    AgentMemory, Entity, Error, GraphQuery, GraphState, KnowledgeGraph, ObservationAddition,
    Relation, Result,
};
use serde::Serialize;

/// At most this many entities, observation lists or relations go in one write.
const BATCH_ITEMS: usize = 1000;

/// A write stops growing at this many bytes of text (but holds at least one item), so that no
/// request to a server is huge.
const BATCH_BYTES: usize = 4 << 20;

/// What merging a graph into a store wrote (or, in a dry run, would write).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct GraphReport {
    /// Entities in the graph merged in (a name it holds twice counts twice).
    pub entities: u64,
    /// Entities created in the store (names it did not hold).
    pub entities_created: u64,
    /// Observations written: those of the entities created, and those added to entities the
    /// store held (or to the first of two entities of one name) that they did not hold.
    pub observations_written: u64,
    /// Relations in the graph merged in.
    pub relations: u64,
    /// Relations created in the store (those it did not hold).
    pub relations_created: u64,
}

/// The whole knowledge graph of `store`, as it lists it (entities in creation order with their
/// observations, then relations); empty when the store keeps no graph (its
/// [`capabilities`](agentmem_core::SessionStore::capabilities) say so), so such a store exports
/// as it did before the graph existed.
pub async fn export_graph(store: &dyn AgentMemory) -> Result<KnowledgeGraph> {
    if !store.capabilities().graph {
        return Ok(KnowledgeGraph::default());
    }
    store.read_graph(&GraphQuery::All).await
}

/// Merges `graph` into the knowledge graph of `store` by the graph's rules, as a store's own
/// calls would: entities whose names the store does not hold are created (of two entities of
/// one name in `graph`, the first), then the observations of the others are added to the
/// entity of their name (those it holds already are skipped), then the relations the store
/// does not hold are created. Merging the same graph twice writes nothing the second time.
///
/// `graph` should be checked first (a document's [`validate`](agentmem_formats::ExportDocument::validate)
/// does): a text a store refuses fails the merge midway. A non-empty graph into a store that
/// keeps none is [`Unsupported`](agentmem_core::ErrorKind::Unsupported) before anything is
/// written.
///
/// ```
/// use agentmem_core::{Entity, GraphQuery, GraphStore, InMemoryStore, KnowledgeGraph, Relation};
/// use agentmem_transfer::import_graph;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = InMemoryStore::new();
/// store.create_entities(&[Entity::new("Alice", "person").with_observations(["likes tea"])]).await?;
/// let graph = KnowledgeGraph {
///     entities: vec![
///         Entity::new("Alice", "robot").with_observations(["likes tea", "lives in Kyoto"]),
///         Entity::new("Acme", "company"),
///     ],
///     relations: vec![Relation::new("Alice", "Acme", "works_at")],
/// };
/// let report = import_graph(&store, &graph).await?;
/// assert_eq!((report.entities_created, report.observations_written), (1, 1));
/// let alice = &store.read_graph(&GraphQuery::All).await?.entities[0];
/// assert_eq!((alice.entity_type.as_str(), alice.observations.len()), ("person", 2));
/// assert_eq!(import_graph(&store, &graph).await?.relations_created, 0);
/// # Ok::<(), agentmem_core::Error>(())
/// # });
/// ```
pub async fn import_graph(store: &dyn AgentMemory, graph: &KnowledgeGraph) -> Result<GraphReport> {
    let plan = plan_graph(store, graph).await?;
    write_graph(store, plan).await
}

/// What merging a graph into a store writes: computed against the store's graph by
/// [`GraphState`], the rules themselves.
#[derive(Debug, Default)]
pub(crate) struct GraphPlan {
    /// The entities to create, with their observations (each once).
    entities: Vec<Entity>,
    /// Observations to add to entities the store holds (or that `entities` creates).
    additions: Vec<ObservationAddition>,
    /// The relations to create.
    relations: Vec<Relation>,
    /// What writing the plan writes, if nobody else writes meanwhile.
    pub(crate) report: GraphReport,
}

/// Plans merging `graph` into `store` (see [`import_graph`]); reads the store's graph unless
/// `graph` is empty.
pub(crate) async fn plan_graph(
    store: &dyn AgentMemory, graph: &KnowledgeGraph,
) -> Result<GraphPlan> {
    if graph.is_empty() {
        return Ok(GraphPlan::default());
    }
    if !store.capabilities().graph {
        return Err(Error::unsupported(format!(
            "the graph holds {} entities and {} relations and the {} store keeps no knowledge \
             graph; nothing was written",
            graph.entities.len(),
            graph.relations.len(),
            store.backend()
        )));
    }
    let held = store.read_graph(&GraphQuery::All).await?;
    plan(held, graph)
}

fn plan(held: KnowledgeGraph, incoming: &KnowledgeGraph) -> Result<GraphPlan> {
    let mut state = GraphState::from_graph(held);
    let entities = state.create_entities(&incoming.entities);
    // Every entity not created (its name held, or an earlier one's) merges its observations
    // into the entity of its name, which exists now.
    let created: HashSet<&str> = entities.iter().map(|e| e.name.as_str()).collect();
    let mut first = HashSet::new();
    let merges: Vec<ObservationAddition> = incoming
        .entities
        .iter()
        .filter(|e| !(created.contains(e.name.as_str()) && first.insert(e.name.as_str())))
        .filter(|e| !e.observations.is_empty())
        .map(|e| ObservationAddition {
            entity_name: e.name.clone(),
            contents: e.observations.clone(),
        })
        .collect();
    let additions: Vec<ObservationAddition> = state
        .add_observations(&merges)?
        .into_iter()
        .filter(|a| !a.added_observations.is_empty())
        .map(|a| ObservationAddition {
            entity_name: a.entity_name,
            contents: a.added_observations,
        })
        .collect();
    let relations = state.create_relations(&incoming.relations);
    let report = GraphReport {
        entities: incoming.entities.len() as u64,
        entities_created: entities.len() as u64,
        observations_written: observation_count(&entities, &additions),
        relations: incoming.relations.len() as u64,
        relations_created: relations.len() as u64,
    };
    Ok(GraphPlan {
        entities,
        additions,
        relations,
        report,
    })
}

fn observation_count(entities: &[Entity], additions: &[ObservationAddition]) -> u64 {
    let created: usize = entities.iter().map(|e| e.observations.len()).sum();
    let added: usize = additions.iter().map(|a| a.contents.len()).sum();
    (created + added) as u64
}

/// Writes `plan` in writes of the sizes a store takes; reports what the store says it wrote.
pub(crate) async fn write_graph(store: &dyn AgentMemory, plan: GraphPlan) -> Result<GraphReport> {
    let mut report = GraphReport {
        entities: plan.report.entities,
        relations: plan.report.relations,
        ..GraphReport::default()
    };
    let (entities, mut additions) = fit(plan.entities);
    for batch in batches(&entities, entity_bytes) {
        let created = store.create_entities(batch).await?;
        report.entities_created += created.len() as u64;
        report.observations_written += created
            .iter()
            .map(|e| e.observations.len() as u64)
            .sum::<u64>();
        // An entity another writer created meanwhile gets these observations added instead.
        let names: HashSet<&str> = created.iter().map(|e| e.name.as_str()).collect();
        for entity in batch.iter().filter(|e| !names.contains(e.name.as_str())) {
            additions.extend(split(&entity.name, &entity.observations));
        }
    }
    for addition in plan.additions {
        additions.extend(split(&addition.entity_name, &addition.contents));
    }
    for batch in batches(&additions, addition_bytes) {
        let added = store.add_observations(batch).await?;
        report.observations_written += added
            .iter()
            .map(|a| a.added_observations.len() as u64)
            .sum::<u64>();
    }
    for batch in batches(&plan.relations, relation_bytes) {
        report.relations_created += store.create_relations(batch).await?.len() as u64;
    }
    Ok(report)
}

/// The entities with at most [`MAX_GRAPH_BATCH`] observations each (what one call takes),
/// and the rest of longer ones' observations as additions, to follow their creation.
fn fit(entities: Vec<Entity>) -> (Vec<Entity>, Vec<ObservationAddition>) {
    let mut rest = Vec::new();
    let entities = entities
        .into_iter()
        .map(|mut e| {
            if e.observations.len() > MAX_GRAPH_BATCH {
                rest.extend(split(&e.name, &e.observations[MAX_GRAPH_BATCH..]));
                e.observations.truncate(MAX_GRAPH_BATCH);
            }
            e
        })
        .collect();
    (entities, rest)
}

/// `observations` to add to `name`, in additions of at most [`MAX_GRAPH_BATCH`] each.
fn split(name: &str, observations: &[String]) -> Vec<ObservationAddition> {
    observations
        .chunks(MAX_GRAPH_BATCH)
        .map(|chunk| ObservationAddition {
            entity_name: name.to_owned(),
            contents: chunk.to_vec(),
        })
        .collect()
}

fn entity_bytes(e: &Entity) -> usize {
    e.name.len() + e.entity_type.len() + e.observations.iter().map(String::len).sum::<usize>()
}

fn addition_bytes(a: &ObservationAddition) -> usize {
    a.entity_name.len() + a.contents.iter().map(String::len).sum::<usize>()
}

fn relation_bytes(r: &Relation) -> usize {
    r.from.len() + r.to.len() + r.relation_type.len()
}

/// `items` cut into runs of at most [`BATCH_ITEMS`] items and (but for a single item)
/// [`BATCH_BYTES`] bytes, as `size` measures them.
fn batches<T>(items: &[T], size: fn(&T) -> usize) -> Vec<&[T]> {
    let mut runs = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, item) in items.iter().enumerate() {
        let n = size(item);
        if i > start && (i - start == BATCH_ITEMS || bytes + n > BATCH_BYTES) {
            runs.push(&items[start..i]);
            (start, bytes) = (i, 0);
        }
        bytes += n;
    }
    if start < items.len() {
        runs.push(&items[start..]);
    }
    runs
}

/// Checks that `to` holds every entity of `graph` (by name) with all its observations, and
/// every relation; a difference is a [`Conflict`](agentmem_core::ErrorKind::Conflict).
pub(crate) async fn verify_graph(to: &dyn AgentMemory, graph: &KnowledgeGraph) -> Result<()> {
    if graph.is_empty() {
        return Ok(());
    }
    let held = to.read_graph(&GraphQuery::All).await?;
    let fail = |why: String| Error::conflict(format!("verification failed: {why}"));
    let entities: HashMap<&str, HashSet<&String>> = held
        .entities
        .iter()
        .map(|e| (e.name.as_str(), e.observations.iter().collect()))
        .collect();
    for entity in &graph.entities {
        let Some(observations) = entities.get(entity.name.as_str()) else {
            return Err(fail(format!(
                "entity {:?} is missing at the destination",
                entity.name
            )));
        };
        if let Some(missing) = entity
            .observations
            .iter()
            .find(|o| !observations.contains(o))
        {
            return Err(fail(format!(
                "entity {:?} lacks the observation {missing:?} at the destination",
                entity.name
            )));
        }
    }
    let relations: HashSet<&Relation> = held.relations.iter().collect();
    if let Some(missing) = graph.relations.iter().find(|r| !relations.contains(r)) {
        return Err(fail(format!(
            "relation {:?} -{:?}-> {:?} is missing at the destination",
            missing.from, missing.relation_type, missing.to
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentmem_core::{ErrorKind, GraphStore, InMemoryStore};

    fn graph() -> KnowledgeGraph {
        KnowledgeGraph {
            entities: vec![
                Entity::new("Alice", "person").with_observations(["likes tea", "likes tea"]),
                Entity::new("Bob", "person"),
                Entity::new("Alice", "robot").with_observations(["beeps", "likes tea"]),
            ],
            relations: vec![
                Relation::new("Alice", "Bob", "knows"),
                Relation::new("Alice", "Bob", "knows"),
                Relation::new("Bob", "Carol", "knows"),
            ],
        }
    }

    #[tokio::test]
    async fn merges_by_the_rules_and_a_second_merge_writes_nothing() {
        let store = InMemoryStore::new();
        store
            .create_entities(&[Entity::new("Bob", "cat").with_observations(["purrs"])])
            .await
            .unwrap();
        let planned = plan_graph(&store, &graph()).await.unwrap().report;
        let report = import_graph(&store, &graph()).await.unwrap();
        assert_eq!(report, planned, "the plan is what gets written");
        let expected = GraphReport {
            entities: 3,
            entities_created: 1,
            observations_written: 2,
            relations: 3,
            relations_created: 2,
        };
        assert_eq!(report, expected);
        let stored = store.read_graph(&GraphQuery::All).await.unwrap();
        assert_eq!(
            stored.entities,
            [
                Entity::new("Bob", "cat").with_observations(["purrs"]),
                Entity::new("Alice", "person").with_observations(["likes tea", "beeps"]),
            ]
        );
        assert_eq!(stored.relations.len(), 2);
        let again = import_graph(&store, &graph()).await.unwrap();
        assert_eq!(
            (
                again.entities_created,
                again.observations_written,
                again.relations_created
            ),
            (0, 0, 0)
        );
        verify_graph(&store, &graph()).await.unwrap();
        let mut more = graph();
        more.relations.push(Relation::new("X", "Y", "z"));
        let err = verify_graph(&store, &more).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Conflict);
    }

    #[tokio::test]
    async fn long_entities_and_large_graphs_go_in_several_writes() {
        let store = InMemoryStore::new();
        let many: Vec<String> = (0..MAX_GRAPH_BATCH + 5).map(|i| format!("o{i}")).collect();
        let mut graph = KnowledgeGraph {
            entities: vec![Entity::new("long", "t").with_observations(many.clone())],
            relations: Vec::new(),
        };
        for i in 0..2 * BATCH_ITEMS + 1 {
            graph.entities.push(Entity::new(format!("e{i}"), "t"));
            graph
                .relations
                .push(Relation::new("long", format!("e{i}"), "r"));
        }
        let report = import_graph(&store, &graph).await.unwrap();
        assert_eq!(report.entities_created, 2 * BATCH_ITEMS as u64 + 2);
        assert_eq!(report.observations_written, many.len() as u64);
        assert_eq!(report.relations_created, 2 * BATCH_ITEMS as u64 + 1);
        assert_eq!(store.read_graph(&GraphQuery::All).await.unwrap(), graph);
    }

    #[test]
    fn batches_bound_items_and_bytes() {
        let items = vec![1usize; 2500];
        let runs = batches(&items, |_| 1);
        assert_eq!(
            runs.iter().map(|r| r.len()).collect::<Vec<_>>(),
            [1000, 1000, 500]
        );
        let big = vec![BATCH_BYTES / 2 + 1; 3];
        assert_eq!(batches(&big, |n| *n).len(), 3);
        assert!(batches(&Vec::<usize>::new(), |n| *n).is_empty());
    }
}
