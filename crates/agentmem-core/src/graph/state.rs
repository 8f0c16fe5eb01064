//! [`GraphState`]: a whole graph in memory with every rule of the module docs applied to it.

use std::collections::{HashMap, HashSet};

use super::{
    entity_not_found, touching, AddedObservations, Entity, GraphQuery, KnowledgeGraph,
    ObservationAddition, ObservationDeletion, Relation,
};
use crate::error::Result;

/// A whole graph as plain data, with every graph operation on it: the rules written once, for
/// the in-memory store and for backends that replay a log into memory (the file store).
///
/// ```
/// use agentmem_core::{Entity, GraphQuery, GraphState, ObservationAddition, Relation};
/// let mut graph = GraphState::default();
/// let created = graph.create_entities(&[Entity::new("Alice", "person"), Entity::new("Alice", "robot")]);
/// assert_eq!(created.len(), 1, "a name is unique; the first wins");
/// graph.create_relations(&[Relation::new("Alice", "Acme", "works_at")]);
/// let added = graph.add_observations(&[ObservationAddition {
///     entity_name: "Alice".into(),
///     contents: vec!["likes tea".into(), "likes tea".into()],
/// }])?;
/// assert_eq!(added[0].added_observations, ["likes tea"]);
/// let found = graph.read(&GraphQuery::Search("TEA".into()));
/// assert_eq!((found.entities.len(), found.relations.len()), (1, 1));
/// assert_eq!(graph.delete_entities(&["Alice".into()]), 1);
/// assert!(graph.read(&GraphQuery::All).is_empty(), "its relation went with it");
/// # Ok::<(), agentmem_core::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct GraphState {
    entities: Vec<Entity>,
    relations: Vec<Relation>,
    /// Entity name → its index in `entities`.
    by_name: HashMap<String, usize>,
    known_relations: HashSet<Relation>,
}

impl GraphState {
    /// A state holding `graph` as it is (a store's own, already following the rules).
    pub fn from_graph(graph: KnowledgeGraph) -> Self {
        let mut state = GraphState {
            entities: graph.entities,
            relations: graph.relations,
            ..GraphState::default()
        };
        state.reindex();
        state
    }

    /// The whole graph.
    pub fn graph(&self) -> KnowledgeGraph {
        KnowledgeGraph {
            entities: self.entities.clone(),
            relations: self.relations.clone(),
        }
    }

    /// The part of the graph `query` selects; only what it selects is cloned.
    pub fn read(&self, query: &GraphQuery) -> KnowledgeGraph {
        let Some(keep) = query.entity_filter() else {
            return self.graph();
        };
        let entities: Vec<Entity> = self.entities.iter().filter(|e| keep(e)).cloned().collect();
        let relations = touching(&entities, &self.relations);
        KnowledgeGraph {
            entities,
            relations,
        }
    }

    /// Whether an entity of this name exists.
    pub fn has_entity(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// How many entities and relations the graph holds.
    pub fn len(&self) -> (usize, usize) {
        (self.entities.len(), self.relations.len())
    }

    /// Whether the graph holds neither entities nor relations.
    pub fn is_empty(&self) -> bool {
        self.entities.is_empty() && self.relations.is_empty()
    }

    /// Creates the entities whose names are new (the first of equal names in `entities` wins;
    /// repeated observations of one entity are kept once); returns those created.
    pub fn create_entities(&mut self, entities: &[Entity]) -> Vec<Entity> {
        let mut created = Vec::new();
        for entity in entities {
            if self.by_name.contains_key(&entity.name) {
                continue;
            }
            let entity = Entity {
                observations: fresh_texts(&entity.observations, |_| false),
                ..entity.clone()
            };
            self.by_name
                .insert(entity.name.clone(), self.entities.len());
            self.entities.push(entity.clone());
            created.push(entity);
        }
        created
    }

    /// Creates the relations that are new; returns those created.
    pub fn create_relations(&mut self, relations: &[Relation]) -> Vec<Relation> {
        let mut created = Vec::new();
        for relation in relations {
            if self.known_relations.insert(relation.clone()) {
                self.relations.push(relation.clone());
                created.push(relation.clone());
            }
        }
        created
    }

    /// Adds the observations each entity does not hold yet, in order. Fails with
    /// [`entity_not_found`] and changes nothing when an entity does not exist.
    pub fn add_observations(
        &mut self, additions: &[ObservationAddition],
    ) -> Result<Vec<AddedObservations>> {
        if let Some(missing) = additions.iter().find(|a| !self.has_entity(&a.entity_name)) {
            return Err(entity_not_found(&missing.entity_name));
        }
        let mut results = Vec::with_capacity(additions.len());
        for addition in additions {
            let index = self.by_name[&addition.entity_name];
            let entity = &mut self.entities[index];
            let held: HashSet<&str> = entity.observations.iter().map(String::as_str).collect();
            let added = fresh_texts(&addition.contents, |o| held.contains(o));
            entity.observations.extend(added.iter().cloned());
            results.push(AddedObservations {
                entity_name: addition.entity_name.clone(),
                added_observations: added,
            });
        }
        Ok(results)
    }

    /// Deletes the named entities and every relation naming one of `names`; returns how many
    /// entities went.
    pub fn delete_entities(&mut self, names: &[String]) -> u64 {
        let names: HashSet<&str> = names.iter().map(String::as_str).collect();
        let before = self.entities.len();
        self.entities.retain(|e| !names.contains(e.name.as_str()));
        self.relations
            .retain(|r| !names.contains(r.from.as_str()) && !names.contains(r.to.as_str()));
        let removed = before - self.entities.len();
        self.reindex();
        removed as u64
    }

    /// Deletes observations from entities (missing entities and observations are passed
    /// over); returns how many observations went.
    pub fn delete_observations(&mut self, deletions: &[ObservationDeletion]) -> u64 {
        let mut removed = 0;
        for deletion in deletions {
            let Some(&index) = self.by_name.get(&deletion.entity_name) else {
                continue;
            };
            let entity = &mut self.entities[index];
            let before = entity.observations.len();
            entity
                .observations
                .retain(|o| !deletion.observations.contains(o));
            removed += before - entity.observations.len();
        }
        removed as u64
    }

    /// Deletes the relations equal to one of `relations`; returns how many went.
    pub fn delete_relations(&mut self, relations: &[Relation]) -> u64 {
        let doomed: HashSet<&Relation> = relations.iter().collect();
        let before = self.relations.len();
        self.relations.retain(|r| !doomed.contains(r));
        for relation in relations {
            self.known_relations.remove(relation);
        }
        (before - self.relations.len()) as u64
    }

    fn reindex(&mut self) {
        self.by_name = self
            .entities
            .iter()
            .enumerate()
            .map(|(i, e)| (e.name.clone(), i))
            .collect();
        self.known_relations = self.relations.iter().cloned().collect();
    }
}

/// The texts of `texts` that `held` does not hold, each once, in order: what adding
/// observations (or entities' first ones) keeps. Every store with a graph shares this rule.
pub fn fresh_texts<'a>(
    texts: impl IntoIterator<Item = &'a String>, held: impl Fn(&str) -> bool,
) -> Vec<String> {
    let mut seen = HashSet::new();
    texts
        .into_iter()
        .filter(|t| !held(t) && seen.insert(t.as_str()))
        .cloned()
        .collect()
}
