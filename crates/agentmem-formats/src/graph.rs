//! The knowledge graph in exports: the checks an import makes before writing anything.
//!
//! A document carries the graph as [`read_graph`](agentmem_core::GraphStore::read_graph)
//! returns it: entities in creation order with their observations, then relations. It is not
//! deduplicated: an import merges it by the graph's rules (the first of two entities of one
//! name wins, observations and relations held already are skipped), so a file written by
//! another tool (the MCP reference server's, say) imports whatever quirks it has.

use agentmem_core::graph::{check_entity, check_relation};
use agentmem_core::{Error, KnowledgeGraph, Result};

/// Checks every text of `graph` as a store's validation would (sizes, no NUL), so that an
/// import refuses the document before writing anything; errors are `CorruptData` naming
/// `source` and the entity or relation. How many items there are is not limited: an import
/// writes them in calls of the sizes a store takes.
pub(crate) fn validate_graph(graph: &KnowledgeGraph, source: &str) -> Result<()> {
    for entity in &graph.entities {
        check_entity(entity).map_err(|e| {
            Error::corrupt(format!(
                "{source}: entity {:?}: {}",
                entity.name,
                e.message()
            ))
        })?;
    }
    for relation in &graph.relations {
        check_relation(relation).map_err(|e| {
            Error::corrupt(format!(
                "{source}: relation {:?} -{:?}-> {:?}: {}",
                relation.from,
                relation.relation_type,
                relation.to,
                e.message()
            ))
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentmem_core::graph::MAX_GRAPH_NAME_BYTES;
    use agentmem_core::{Entity, Relation};

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

    #[test]
    fn a_document_graph_may_leave_either_list_out() {
        let only_entities = r#"{"agentmem_export":1,"graph":{"entities":[
            {"name":"Alice","entityType":"person","observations":[]}]}}"#;
        let doc = crate::json::parse(only_entities, "f").unwrap();
        assert_eq!(doc.graph.entities, [Entity::new("Alice", "person")]);
        assert!(doc.graph.relations.is_empty());
        let only_relations = r#"{"agentmem_export":1,"graph":{"relations":[
            {"from":"a","to":"b","relationType":"r"}]}}"#;
        let doc = crate::json::parse(only_relations, "f").unwrap();
        assert_eq!(doc.graph.relations, [Relation::new("a", "b", "r")]);
        assert!(doc.graph.entities.is_empty());
    }
}
