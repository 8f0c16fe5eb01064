//! The knowledge graph ([`GraphStore`]): entities, their observations and relations, in three
//! tables.
//!
//! - `agentmem_graph_entities`: one row per entity, `name` unique, with its type.
//! - `agentmem_graph_observations`: one row per observation, unique per (entity, content),
//!   deleted with its entity by cascade.
//! - `agentmem_graph_relations`: one row per relation, unique per (from, to, type); its ends
//!   are names, so a relation may name entities that do not exist.
//!
//! Row ids are the order: SQLite gives a new row a larger id than every row in its table, so
//! reading `ORDER BY id` lists entities and relations in creation order and observations in
//! the order they were added, a re-created one last. Every write is one `IMMEDIATE`
//! transaction of `INSERT … ON CONFLICT DO NOTHING` and `DELETE` statements on keys (so the
//! unique indexes decide what is new, across processes too, and a write's cost does not grow
//! with the graph); every read is one deferred transaction (one snapshot). The reference
//! server's search rule (Unicode lowercase substring) is applied in Rust by
//! [`GraphQuery::entity_filter`], never by SQL `LIKE` or `lower()`.

mod read;
mod write;

use agentmem_core::{
    async_trait, AddedObservations, Entity, GraphQuery, GraphStore, KnowledgeGraph,
    ObservationAddition, ObservationDeletion, Relation, Result,
};

use crate::store::SqliteStore;

#[async_trait]
impl GraphStore for SqliteStore {
    async fn create_entities(&self, entities: &[Entity]) -> Result<Vec<Entity>> {
        self.write_slice(entities, write::create_entities).await
    }

    async fn create_relations(&self, relations: &[Relation]) -> Result<Vec<Relation>> {
        self.write_slice(relations, write::create_relations).await
    }

    async fn add_observations(
        &self, additions: &[ObservationAddition],
    ) -> Result<Vec<AddedObservations>> {
        self.write_slice(additions, write::add_observations).await
    }

    async fn delete_entities(&self, names: &[String]) -> Result<u64> {
        self.write_slice(names, write::delete_entities).await
    }

    async fn delete_observations(&self, deletions: &[ObservationDeletion]) -> Result<u64> {
        self.write_slice(deletions, write::delete_observations)
            .await
    }

    async fn delete_relations(&self, relations: &[Relation]) -> Result<u64> {
        self.write_slice(relations, write::delete_relations).await
    }

    async fn read_graph(&self, query: &GraphQuery) -> Result<KnowledgeGraph> {
        let query = query.clone();
        self.pool().read(move |conn| read::read(conn, &query)).await
    }
}

#[cfg(test)]
mod tests;
