//! The knowledge graph: entities, the relations between them and the observations recorded about
//! them — the model of the MCP reference memory server (`@modelcontextprotocol/server-memory`),
//! as a data kind of the store beside sessions, memory items and checkpoints. One graph per
//! store, shared by every process and handle.
//!
//! An [`Entity`] has a unique name, a type and an ordered list of observations (short facts).
//! A [`Relation`] joins two entity names with a type, in active voice (`Alice works_at Acme`);
//! its ends need not exist. The JSON forms are the reference server's (`entityType`,
//! `relationType`, `entityName`, …), so its tool payloads and JSONL lines map field for field.
//!
//! The rules every store follows are the reference server's, written once in
//! [`GraphState`] (the in-memory store and backends that evaluate in the client use it):
//!
//! - creating an entity whose name exists skips it; creating an existing relation (same from, to
//!   and type) skips it; adding an observation an entity holds skips it. Unlike the reference
//!   server, duplicates *within* one call are skipped as well (the first wins), so a name is
//!   always unique and an entity never holds one observation twice;
//! - adding observations to an entity that does not exist fails the whole call
//!   ([`entity_not_found`]) and applies nothing;
//! - deleting an entity deletes every relation naming it (as from or to); deleting
//!   observations of a missing entity, or anything that is not there, is no error;
//! - entities and relations are listed in the order they were created, observations in the
//!   order they were added;
//! - [`GraphQuery::Search`] matches a case-insensitive (Unicode lowercase) substring of an
//!   entity's name, type or any observation; [`GraphQuery::Open`] matches names exactly. Both
//!   return the matching entities and every relation touching one of them.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::check_stored_text;

mod state;

pub use state::{fresh_texts, GraphState};

/// The most bytes an entity name, entity type or relation type may take.
pub const MAX_GRAPH_NAME_BYTES: usize = 1024;

/// The most bytes one observation may take.
pub const MAX_OBSERVATION_BYTES: usize = 64 * 1024;

/// The most items (entities, relations, names, or observation lists and their observations)
/// one graph call may carry.
pub const MAX_GRAPH_BATCH: usize = 10_000;

/// A node of the graph: a uniquely named thing of a type, with what is known about it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entity {
    /// The entity's name, unique in the graph.
    pub name: String,
    /// What kind of thing it is (`person`, `project`, …).
    pub entity_type: String,
    /// Facts about it, in the order they were added; no two equal.
    pub observations: Vec<String>,
}

impl Entity {
    /// An entity with no observations.
    pub fn new(name: impl Into<String>, entity_type: impl Into<String>) -> Self {
        Entity {
            name: name.into(),
            entity_type: entity_type.into(),
            observations: Vec::new(),
        }
    }

    /// The same entity with `observations`.
    pub fn with_observations<I, T>(mut self, observations: I) -> Self
    where
        I: IntoIterator<Item = T>,
        T: Into<String>,
    {
        self.observations = observations.into_iter().map(Into::into).collect();
        self
    }

    /// Whether `query_lowercase` (already lowercased) is a substring of the lowercased name,
    /// type or one of the observations: the reference server's search rule.
    pub fn matches(&self, query_lowercase: &str) -> bool {
        let has = |text: &str| text.to_lowercase().contains(query_lowercase);
        has(&self.name) || has(&self.entity_type) || self.observations.iter().any(|o| has(o))
    }
}

/// A directed, typed edge between two entity names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Relation {
    /// The name of the entity the relation starts at.
    pub from: String,
    /// The name of the entity the relation ends at.
    pub to: String,
    /// What the relation is, in active voice (`works_at`).
    pub relation_type: String,
}

impl Relation {
    /// `from` —`relation_type`→ `to`.
    pub fn new(
        from: impl Into<String>, to: impl Into<String>, relation_type: impl Into<String>,
    ) -> Self {
        Relation {
            from: from.into(),
            to: to.into(),
            relation_type: relation_type.into(),
        }
    }

    /// Whether `name` is one of the relation's ends.
    pub fn touches(&self, name: &str) -> bool {
        self.from == name || self.to == name
    }
}

/// Observations to add to one entity (`add_observations`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObservationAddition {
    /// The entity to add to; it must exist.
    pub entity_name: String,
    /// The observations, in order; those the entity holds already are skipped.
    pub contents: Vec<String>,
}

/// What `add_observations` added to one entity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AddedObservations {
    /// The entity.
    pub entity_name: String,
    /// The observations that were new, in the order they were added.
    pub added_observations: Vec<String>,
}

/// Observations to delete from one entity (`delete_observations`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObservationDeletion {
    /// The entity; a missing one is passed over.
    pub entity_name: String,
    /// The observations to delete; those it does not hold are passed over.
    pub observations: Vec<String>,
}

/// A graph, or the part of one a query selected: entities in creation order, then relations in
/// creation order.
/// In JSON either list may be left out when empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct KnowledgeGraph {
    /// The entities.
    pub entities: Vec<Entity>,
    /// The relations.
    pub relations: Vec<Relation>,
}

impl KnowledgeGraph {
    /// Whether the graph holds neither entities nor relations.
    pub fn is_empty(&self) -> bool {
        self.entities.is_empty() && self.relations.is_empty()
    }

    /// The part of this (whole) graph `query` selects, by the rules of the module docs.
    pub fn select(self, query: &GraphQuery) -> KnowledgeGraph {
        let Some(keep) = query.entity_filter() else {
            return self;
        };
        let entities: Vec<Entity> = self.entities.into_iter().filter(|e| keep(e)).collect();
        let relations = touching(&entities, &self.relations);
        KnowledgeGraph {
            entities,
            relations,
        }
    }
}

/// The relations of `relations` with an end among `entities`, in order.
pub(crate) fn touching<'a>(
    entities: &[Entity], relations: impl IntoIterator<Item = &'a Relation>,
) -> Vec<Relation> {
    let names: std::collections::HashSet<&str> = entities.iter().map(|e| e.name.as_str()).collect();
    relations
        .into_iter()
        .filter(|r| names.contains(r.from.as_str()) || names.contains(r.to.as_str()))
        .cloned()
        .collect()
}

/// Which entities a [`GraphQuery`] keeps (see [`GraphQuery::entity_filter`]).
pub type EntityFilter<'a> = Box<dyn Fn(&Entity) -> bool + Send + Sync + 'a>;

/// Which part of the graph to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GraphQuery {
    /// The whole graph.
    All,
    /// Entities whose name, type or an observation contains this text, ignoring case, and
    /// every relation touching one of them.
    Search(String),
    /// The entities of these exact names, and every relation touching one of them.
    Open(Vec<String>),
}

impl GraphQuery {
    /// Which entities the query keeps; `None` for the whole graph.
    pub fn entity_filter(&self) -> Option<EntityFilter<'_>> {
        match self {
            GraphQuery::All => None,
            GraphQuery::Search(text) => {
                let text = text.to_lowercase();
                Some(Box::new(move |e: &Entity| e.matches(&text)))
            }
            GraphQuery::Open(names) => {
                let names: std::collections::HashSet<&str> =
                    names.iter().map(String::as_str).collect();
                Some(Box::new(move |e: &Entity| names.contains(e.name.as_str())))
            }
        }
    }

    /// Checks the query's sizes (the validate layer calls it).
    pub fn validate(&self) -> Result<()> {
        match self {
            GraphQuery::All => Ok(()),
            GraphQuery::Search(text) => {
                check_stored_text("a search query", text, MAX_OBSERVATION_BYTES)
            }
            GraphQuery::Open(names) => check_names(names),
        }
    }
}

/// The error of `add_observations` naming an entity that does not exist; its message is the
/// reference server's.
pub fn entity_not_found(name: &str) -> Error {
    Error::not_found(format!("Entity with name {name} not found"))
}

/// The error of a store that keeps no graph (see [`refuse_graph!`](crate::refuse_graph)).
pub fn unsupported(backend: &str) -> Error {
    Error::unsupported(format!("the {backend} store keeps no knowledge graph"))
}

fn check_batch(what: &str, len: usize) -> Result<()> {
    if len > MAX_GRAPH_BATCH {
        return Err(Error::invalid_input(format!(
            "{len} {what} in one call; at most {MAX_GRAPH_BATCH}"
        )));
    }
    Ok(())
}

fn check_name(name: &str) -> Result<()> {
    check_stored_text("an entity name", name, MAX_GRAPH_NAME_BYTES)
}

fn check_observation_texts(observations: &[String]) -> Result<()> {
    observations
        .iter()
        .try_for_each(|o| check_stored_text("an observation", o, MAX_OBSERVATION_BYTES))
}

fn check_observations(observations: &[String]) -> Result<()> {
    check_batch("observations", observations.len())?;
    check_observation_texts(observations)
}

/// Checks the texts of one entity (sizes, no NUL), however many observations it has: what an
/// import checks of a whole file before writing it in calls of the sizes a store takes.
pub fn check_entity(entity: &Entity) -> Result<()> {
    check_name(&entity.name)?;
    check_stored_text("an entity type", &entity.entity_type, MAX_GRAPH_NAME_BYTES)?;
    check_observation_texts(&entity.observations)
}

/// Checks the texts of one relation (sizes, no NUL).
pub fn check_relation(relation: &Relation) -> Result<()> {
    check_name(&relation.from)?;
    check_name(&relation.to)?;
    check_stored_text(
        "a relation type",
        &relation.relation_type,
        MAX_GRAPH_NAME_BYTES,
    )
}

/// Checks entities before `create_entities` (the validate layer calls it).
pub fn check_entities(entities: &[Entity]) -> Result<()> {
    check_batch("entities", entities.len())?;
    entities.iter().try_for_each(|e| {
        check_batch("observations", e.observations.len())?;
        check_entity(e)
    })
}

/// Checks relations before they are created or deleted (the validate layer calls it).
pub fn check_relations(relations: &[Relation]) -> Result<()> {
    check_batch("relations", relations.len())?;
    relations.iter().try_for_each(check_relation)
}

/// Checks entity names before they are deleted or opened (the validate layer calls it).
pub fn check_names(names: &[String]) -> Result<()> {
    check_batch("entity names", names.len())?;
    names.iter().try_for_each(|n| check_name(n))
}

/// Checks additions before `add_observations` (the validate layer calls it).
pub fn check_additions(additions: &[ObservationAddition]) -> Result<()> {
    check_batch("observation lists", additions.len())?;
    additions.iter().try_for_each(|a| {
        check_name(&a.entity_name)?;
        check_observations(&a.contents)
    })
}

/// Checks deletions before `delete_observations` (the validate layer calls it).
pub fn check_deletions(deletions: &[ObservationDeletion]) -> Result<()> {
    check_batch("observation lists", deletions.len())?;
    deletions.iter().try_for_each(|d| {
        check_name(&d.entity_name)?;
        check_observations(&d.observations)
    })
}

/// Implements [`GraphStore`](crate::GraphStore) for a store type that keeps no graph: every
/// method refused with `Unsupported`, naming the store's backend. Such a store leaves
/// [`Capabilities::graph`](crate::Capabilities::graph) off.
///
/// ```
/// # use agentmem_core::*;
/// #[derive(Debug)]
/// struct Sessions;
/// agentmem_core::refuse_graph!(Sessions, "sessions-only");
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let err = Sessions.read_graph(&GraphQuery::All).await.unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::Unsupported);
/// # });
/// ```
#[macro_export]
macro_rules! refuse_graph {
    ($store:ty, $name:expr) => {
        #[$crate::async_trait]
        impl $crate::GraphStore for $store {
            async fn create_entities(
                &self, _: &[$crate::Entity],
            ) -> $crate::Result<Vec<$crate::Entity>> {
                Err($crate::graph::unsupported($name))
            }

            async fn create_relations(
                &self, _: &[$crate::Relation],
            ) -> $crate::Result<Vec<$crate::Relation>> {
                Err($crate::graph::unsupported($name))
            }

            async fn add_observations(
                &self, _: &[$crate::ObservationAddition],
            ) -> $crate::Result<Vec<$crate::AddedObservations>> {
                Err($crate::graph::unsupported($name))
            }

            async fn delete_entities(&self, _: &[String]) -> $crate::Result<u64> {
                Err($crate::graph::unsupported($name))
            }

            async fn delete_observations(
                &self, _: &[$crate::ObservationDeletion],
            ) -> $crate::Result<u64> {
                Err($crate::graph::unsupported($name))
            }

            async fn delete_relations(&self, _: &[$crate::Relation]) -> $crate::Result<u64> {
                Err($crate::graph::unsupported($name))
            }

            async fn read_graph(
                &self, _: &$crate::GraphQuery,
            ) -> $crate::Result<$crate::KnowledgeGraph> {
                Err($crate::graph::unsupported($name))
            }
        }
    };
}
