//! The knowledge graph in exports: the checks an import makes before writing anything, and the
//! `graph` field of the JSON and YAML documents.
//!
//! A document carries the graph as [`read_graph`](agentmem_core::GraphStore::read_graph)
//! returns it: entities in creation order with their observations, then relations. It is not
//! deduplicated: an import merges it by the graph's rules (the first of two entities of one
//! name wins, observations and relations held already are skipped), so a file written by
//! another tool (the MCP reference server's, say) imports whatever quirks it has.

use agentmem_core::graph::{MAX_GRAPH_NAME_BYTES, MAX_OBSERVATION_BYTES};
use agentmem_core::{Entity, Error, KnowledgeGraph, Relation, Result};
use serde::{Deserialize, Deserializer};

/// Checks every text of `graph` as a store's validation would (sizes, no NUL), so that an
/// import refuses the document before writing anything; errors are `CorruptData` naming
/// `source` and the entity or relation. How many items there are is not limited: an import
/// writes them in calls of the sizes a store takes.
pub(crate) fn validate_graph(graph: &KnowledgeGraph, source: &str) -> Result<()> {
    for entity in &graph.entities {
        let bad =
            |why: String| Error::corrupt(format!("{source}: entity {:?}: {why}", entity.name));
        check("its name", &entity.name, MAX_GRAPH_NAME_BYTES).map_err(bad)?;
        check("its type", &entity.entity_type, MAX_GRAPH_NAME_BYTES).map_err(bad)?;
        for observation in &entity.observations {
            check("an observation", observation, MAX_OBSERVATION_BYTES).map_err(bad)?;
        }
    }
    for relation in &graph.relations {
        let bad = |why: String| {
            Error::corrupt(format!(
                "{source}: relation {:?} -{:?}-> {:?}: {why}",
                relation.from, relation.relation_type, relation.to
            ))
        };
        check("its start", &relation.from, MAX_GRAPH_NAME_BYTES).map_err(bad)?;
        check("its end", &relation.to, MAX_GRAPH_NAME_BYTES).map_err(bad)?;
        check("its type", &relation.relation_type, MAX_GRAPH_NAME_BYTES).map_err(bad)?;
    }
    Ok(())
}

/// What a store takes of one text: at most `max` bytes, no NUL.
fn check(what: &str, text: &str, max: usize) -> std::result::Result<(), String> {
    if text.len() > max {
        return Err(format!(
            "{what} is {} bytes; at most {max} are stored",
            text.len()
        ));
    }
    if text.contains('\0') {
        return Err(format!("{what} contains a NUL character"));
    }
    Ok(())
}

/// The `graph` of a JSON or YAML document, either list left out when empty.
#[derive(Deserialize)]
struct GraphFields {
    #[serde(default)]
    entities: Vec<Entity>,
    #[serde(default)]
    relations: Vec<Relation>,
}

/// Reads a document's `graph`, where `entities` or `relations` may be left out.
pub(crate) fn deserialize_graph<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<KnowledgeGraph, D::Error> {
    let fields = GraphFields::deserialize(d)?;
    Ok(KnowledgeGraph {
        entities: fields.entities,
        relations: fields.relations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oversized_and_nul_texts_are_refused_naming_the_item() {
        let ok = KnowledgeGraph {
            entities: vec![Entity::new("Alice", "person").with_observations(["likes tea"])],
            relations: vec![Relation::new("Alice", "Acme", "works_at")],
        };
        validate_graph(&ok, "f").unwrap();
        let mut nul = ok.clone();
        nul.entities[0].observations.push("a\0b".into());
        let err = validate_graph(&nul, "f").unwrap_err();
        assert_eq!(err.kind(), agentmem_core::ErrorKind::CorruptData);
        assert!(err.message().contains("entity \"Alice\""), "{err}");
        let mut long = ok;
        long.relations[0].relation_type = "x".repeat(MAX_GRAPH_NAME_BYTES + 1);
        let err = validate_graph(&long, "f").unwrap_err();
        assert!(err.message().contains("relation \"Alice\""), "{err}");
    }
}
