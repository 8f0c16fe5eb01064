//! The knowledge graph ([`GraphStore`]): one a store, in `graph/graph.jsonl`, an append-only
//! log of the writes that changed it (`record.rs`), replayed into a cached
//! [`GraphState`](agentmem_core::GraphState), which applies every rule of the contract.
//!
//! - A write holds the graph's in-process mutex and exclusive `flock` (`locking.rs`, on the
//!   machinery shared with the vector log in `../replayed.rs`), catches the cache up with what
//!   other processes appended (the file's identity and length tell), applies its rule to the
//!   cache and appends one line of what changed (nothing when nothing did), fsynced under
//!   [`Durability::Fsync`](crate::Durability::Fsync): its cost does not grow with the graph,
//!   and a crash that tears the line takes the whole write with it.
//! - A read answers from the cache after one `stat` shows the log unchanged, cloning only what
//!   the query selects; otherwise it catches up under the lock first.
//! - The log is compacted (rewritten as the graph alone, by a rename) when it holds many more
//!   records than the graph needs (`../replayed.rs`); other handles see another file and read
//!   it afresh. A torn last line is cut away, unreadable lines are set aside in
//!   `graph/quarantine/`, as for the other logs; [`FileStore::check_graph`] finds (and, asked
//!   to, repairs) that damage without waiting for the graph's next use.

mod locking;
mod record;
mod replay;

pub(crate) use replay::GraphSlot;

use agentmem_core::{
    async_trait, AddedObservations, Entity, GraphQuery, GraphState, GraphStore, KnowledgeGraph,
    ObservationAddition, ObservationDeletion, Relation, Result,
};

use crate::store::FileStore;
use record::Record;

/// The answer of a write and, when `changed`, the record of what changed.
fn logged<T>(answer: T, changed: bool, record: impl FnOnce() -> Record) -> (T, Option<Record>) {
    let record = changed.then(record);
    (answer, record)
}

impl FileStore {
    /// Creates what of `items` is new by `create` (which answers it, as stored), recording
    /// what it created with `record` when it created something.
    async fn graph_create<T>(
        &self, items: &[T], create: fn(&mut GraphState, &[T]) -> Vec<T>,
        record: fn(Vec<T>) -> Record,
    ) -> Result<Vec<T>>
    where
        T: Clone + Send + 'static,
    {
        let items = items.to_vec();
        self.graph_write(move |state| {
            let created = create(state, &items);
            let new = created.clone();
            Ok(logged(created, !new.is_empty(), || record(new)))
        })
        .await
    }

    /// Deletes what `items` name by `delete` (which answers how much went), recording `items`
    /// with `record` when something went.
    async fn graph_delete<T>(
        &self, items: &[T], delete: fn(&mut GraphState, &[T]) -> u64, record: fn(Vec<T>) -> Record,
    ) -> Result<u64>
    where
        T: Clone + Send + 'static,
    {
        let items = items.to_vec();
        self.graph_write(move |state| {
            let removed = delete(state, &items);
            Ok(logged(removed, removed > 0, || record(items)))
        })
        .await
    }
}

#[async_trait]
impl GraphStore for FileStore {
    async fn create_entities(&self, entities: &[Entity]) -> Result<Vec<Entity>> {
        let record = |entities| Record::CreateEntities { entities };
        self.graph_create(entities, GraphState::create_entities, record)
            .await
    }

    async fn create_relations(&self, relations: &[Relation]) -> Result<Vec<Relation>> {
        let record = |relations| Record::CreateRelations { relations };
        self.graph_create(relations, GraphState::create_relations, record)
            .await
    }

    async fn add_observations(
        &self, additions: &[ObservationAddition],
    ) -> Result<Vec<AddedObservations>> {
        let additions = additions.to_vec();
        self.graph_write(move |state| {
            // Refused as a whole, changing nothing, when an entity is missing.
            let results = state.add_observations(&additions)?;
            let added: Vec<AddedObservations> = results
                .iter()
                .filter(|a| !a.added_observations.is_empty())
                .cloned()
                .collect();
            Ok(logged(results, !added.is_empty(), || {
                Record::AddObservations { added }
            }))
        })
        .await
    }

    async fn delete_entities(&self, names: &[String]) -> Result<u64> {
        let names = names.to_vec();
        self.graph_write(move |state| {
            let before = state.len();
            let removed = state.delete_entities(&names);
            // Relations naming a missing entity go too: a change to record.
            let changed = state.len() != before;
            Ok(logged(removed, changed, || Record::DeleteEntities {
                names,
            }))
        })
        .await
    }

    async fn delete_observations(&self, deletions: &[ObservationDeletion]) -> Result<u64> {
        let record = |deletions| Record::DeleteObservations { deletions };
        self.graph_delete(deletions, GraphState::delete_observations, record)
            .await
    }

    async fn delete_relations(&self, relations: &[Relation]) -> Result<u64> {
        let record = |relations| Record::DeleteRelations { relations };
        self.graph_delete(relations, GraphState::delete_relations, record)
            .await
    }

    async fn read_graph(&self, query: &GraphQuery) -> Result<KnowledgeGraph> {
        let query = query.clone();
        self.graph_read(move |state| state.read(&query)).await
    }
}
