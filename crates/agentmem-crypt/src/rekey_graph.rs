//! Rewriting the knowledge graph under a new key, for [`rekey`](crate::rekey()) and
//! [`encrypt_existing`](crate::encrypt_existing): crash-safe and resumable, through the
//! store's own graph operations only.
//!
//! Sealed under another key (or kept as given), every string of an entity or relation differs
//! from its form under the new key, so both forms can be stored side by side. The graph is
//! rewritten by creating, in the new form, each entity (with its observations) and each
//! relation that is not in it yet, in the order the store lists them, and then deleting the
//! old forms. At every moment each entity and relation is whole in one form or in both (a
//! layer holding both keys shows it once), so an interrupted rewrite loses nothing, and
//! running it again finishes it: what is in the new form already stays, the rest is created
//! after it in order, and the old forms go.

use std::collections::HashSet;

use agentmem_core::graph::MAX_GRAPH_BATCH;
use agentmem_core::{AgentMemory, Entity, GraphQuery, ObservationAddition, Relation, Result};

use crate::graph::GraphSealer;
use crate::layer::Encrypted;

/// What a graph rewrite rewrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct GraphRewrite {
    /// Entities rewritten (with their observations).
    pub(crate) entities: u64,
    /// Relations rewritten.
    pub(crate) relations: u64,
}

/// What is not yet under the write key: the entities and relations opened, and their stored
/// forms (to delete once they are rewritten).
#[derive(Default)]
struct Stale {
    entities: Vec<Entity>,
    names: Vec<String>,
    relations: Vec<Relation>,
    stored_relations: Vec<Relation>,
}

/// Rewrites every entity and relation of the graph that `layer` (which reads with the old key
/// or plaintext, and writes with the new key) does not write as it is stored. Nothing is
/// written before every string is opened and sealed anew: a graph that does not open, or a
/// string too long to be stored sealed, stops the rewrite with the graph as it was. A store
/// that keeps no graph has nothing to rewrite.
pub(crate) async fn rewrite_graph<S: AgentMemory>(layer: &Encrypted<S>) -> Result<GraphRewrite> {
    if !layer.inner.capabilities().graph {
        return Ok(GraphRewrite::default());
    }
    let stale = stale(layer).await?;
    for chunk in stale.entities.chunks(MAX_GRAPH_BATCH) {
        recreate(layer, chunk).await?;
    }
    for chunk in stale.relations.chunks(MAX_GRAPH_BATCH) {
        layer.create_sealed_relations(chunk).await?;
    }
    // The old forms: their relations go with their entities, dangling ones by value.
    for chunk in stale.names.chunks(MAX_GRAPH_BATCH) {
        layer.inner.delete_entities(chunk).await?;
    }
    for chunk in stale.stored_relations.chunks(MAX_GRAPH_BATCH) {
        layer.inner.delete_relations(chunk).await?;
    }
    Ok(GraphRewrite {
        entities: stale.entities.len() as u64,
        relations: stale.relations.len() as u64,
    })
}

/// Reads the stored graph and opens what is not stored as the write key seals it.
async fn stale<S: AgentMemory>(layer: &Encrypted<S>) -> Result<Stale> {
    let stored = layer.inner.read_graph(&GraphQuery::All).await?;
    let mut sealer = GraphSealer::new(&layer.keys);
    let mut stale = Stale::default();
    for entity in stored.entities {
        let name = entity.name.clone();
        let opened = sealer.open_entity(entity)?;
        // Sealed whole now: a string too long for the store stops the rewrite before it writes.
        if sealer.seal_entity(&opened)?.name != name {
            stale.names.push(name);
            stale.entities.push(opened);
        }
    }
    for relation in stored.relations {
        let opened = sealer.open_relation(relation.clone())?;
        if sealer.seal_relation(&opened)? != relation {
            stale.stored_relations.push(relation);
            stale.relations.push(opened);
        }
    }
    Ok(stale)
}

/// Creates `entities` (at most [`MAX_GRAPH_BATCH`]) in the new form, in order. An entity holds
/// at most `MAX_GRAPH_BATCH` observations per call, the rest added after it; one that exists
/// in the new form already (an interrupted rewrite, or an older form of the same name) gets
/// the observations it lacks.
async fn recreate<S: AgentMemory>(layer: &Encrypted<S>, entities: &[Entity]) -> Result<()> {
    let heads: Vec<Entity> = entities
        .iter()
        .map(|e| Entity {
            observations: e
                .observations
                .iter()
                .take(MAX_GRAPH_BATCH)
                .cloned()
                .collect(),
            ..e.clone()
        })
        .collect();
    let created = layer.create_sealed_entities(&heads).await?;
    let mut fresh: HashSet<String> = created.into_iter().map(|e| e.name).collect();
    let mut additions = Vec::new();
    for entity in entities {
        let held = if fresh.remove(&entity.name) {
            MAX_GRAPH_BATCH
        } else {
            0
        };
        let rest = entity.observations.get(held..).unwrap_or_default();
        additions.extend(
            rest.chunks(MAX_GRAPH_BATCH)
                .map(|contents| ObservationAddition {
                    entity_name: entity.name.clone(),
                    contents: contents.to_vec(),
                }),
        );
    }
    for chunk in additions.chunks(MAX_GRAPH_BATCH) {
        layer.add_sealed_observations(chunk).await?;
    }
    Ok(())
}
