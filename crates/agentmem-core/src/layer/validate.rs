//! [`Validated`]: what is storable is decided here, once, for every backend.

use async_trait::async_trait;

use crate::checkpoint::{
    ChannelBlob, Checkpoint, CheckpointKey, CheckpointQuery, CheckpointTuple, PendingWrite,
};
use crate::error::Result;
use crate::graph::{
    self, AddedObservations, Entity, GraphQuery, KnowledgeGraph, ObservationAddition,
    ObservationDeletion, Relation,
};
use crate::layer::LayeredStore;
use crate::lifecycle::{SessionPage, SessionPatch, SessionQuery};
use crate::model::{check_metadata_depth, ArchiveInfo, MemoryItem, Message, Metadata, SessionInfo};
use crate::name::{ArchiveId, SessionId};
use crate::property::PropertyChange;
use crate::property::{check_property_name, check_property_value};
use crate::store::{AgentMemory, MemoryFilter, MemoryHit};
use crate::vector::{self, StoredVector, VectorKey};

/// Checks that every message can be stored and read back; the first bad one fails the batch,
/// before anything is written.
pub fn check_messages(messages: &[Message]) -> Result<()> {
    messages.iter().try_for_each(Message::validate)
}

/// Checks that a memory item can be stored and read back.
pub fn check_memory_item(item: &MemoryItem) -> Result<()> {
    item.validate()
}

/// Refuses session metadata nested deeper than [`MAX_METADATA_DEPTH`](crate::MAX_METADATA_DEPTH),
/// the rule messages and memory items follow. Stores keep session metadata as it comes; a layer
/// that must parse it back (the encryption layer seals it as one JSON document) checks it here.
pub fn check_session_metadata(metadata: &Metadata) -> Result<()> {
    check_metadata_depth("session metadata", metadata)
}

layer_and_store! {
    /// The layer that refuses what a store could not read back, before the backend sees it, and
    /// answers the trivial cases (appending nothing) without a round trip.
    ///
    /// Backends may therefore assume every message and memory item they are given passed
    /// [`Message::validate`] / [`MemoryItem::validate`], and that an append is never empty.
    ValidateLayer;
    /// A store wearing [`ValidateLayer`]. Dereferences to the store inside it.
    Validated
}

#[async_trait]
impl<S: AgentMemory> LayeredStore for Validated<S> {
    type Inner = S;

    fn inner(&self) -> &S {
        &self.inner
    }

    async fn save_session(
        &self, id: &SessionId, history: &[Message], meta: &Metadata,
    ) -> Result<()> {
        check_messages(history)?;
        self.inner.save_session(id, history, meta).await
    }

    async fn append(&self, session: &SessionId, messages: &[Message]) -> Result<()> {
        if messages.is_empty() {
            return Ok(());
        }
        check_messages(messages)?;
        self.inner.append(session, messages).await
    }

    async fn compact(&self, session: &SessionId, replacement: &[Message]) -> Result<ArchiveInfo> {
        check_messages(replacement)?;
        self.inner.compact(session, replacement).await
    }

    async fn store_property(&self, name: &str) -> Result<Option<String>> {
        check_property_name(name)?;
        self.inner.store_property(name).await
    }

    async fn update_session(
        &self, session: &SessionId, patch: &SessionPatch,
    ) -> Result<SessionInfo> {
        patch.validate()?;
        self.inner.update_session(session, patch).await
    }

    async fn find_sessions(&self, query: &SessionQuery) -> Result<SessionPage> {
        query.validate()?;
        self.inner.find_sessions(query).await
    }

    async fn replace_archive(
        &self, session: &SessionId, archive: &ArchiveId, messages: &[Message],
    ) -> Result<ArchiveInfo> {
        check_messages(messages)?;
        self.inner.replace_archive(session, archive, messages).await
    }

    async fn put_memory(&self, item: &MemoryItem) -> Result<MemoryItem> {
        check_memory_item(item)?;
        self.inner.put_memory(item).await
    }

    async fn list_memories(&self, filter: &MemoryFilter) -> Result<Vec<MemoryItem>> {
        // A scope no item can have selects nothing; refusing it says why.
        filter.scope.validate()?;
        self.inner.list_memories(filter).await
    }

    async fn search_memories(&self, query: &str, filter: &MemoryFilter) -> Result<Vec<MemoryHit>> {
        filter.scope.validate()?;
        self.inner.search_memories(query, filter).await
    }

    async fn put_checkpoint(&self, checkpoint: &Checkpoint, blobs: &[ChannelBlob]) -> Result<()> {
        checkpoint.validate()?;
        blobs.iter().try_for_each(ChannelBlob::validate)?;
        self.inner.put_checkpoint(checkpoint, blobs).await
    }

    async fn put_writes(&self, at: &CheckpointKey, writes: &[PendingWrite]) -> Result<()> {
        writes.iter().try_for_each(PendingWrite::validate)?;
        self.inner.put_writes(at, writes).await
    }

    async fn list_checkpoints(&self, query: &CheckpointQuery) -> Result<Vec<CheckpointTuple>> {
        query.validate()?;
        self.inner.list_checkpoints(query).await
    }

    async fn create_entities(&self, entities: &[Entity]) -> Result<Vec<Entity>> {
        graph::check_entities(entities)?;
        self.inner.create_entities(entities).await
    }

    async fn create_relations(&self, relations: &[Relation]) -> Result<Vec<Relation>> {
        graph::check_relations(relations)?;
        self.inner.create_relations(relations).await
    }

    async fn add_observations(
        &self, additions: &[ObservationAddition],
    ) -> Result<Vec<AddedObservations>> {
        graph::check_additions(additions)?;
        self.inner.add_observations(additions).await
    }

    async fn delete_entities(&self, names: &[String]) -> Result<u64> {
        graph::check_names(names)?;
        self.inner.delete_entities(names).await
    }

    async fn delete_observations(&self, deletions: &[ObservationDeletion]) -> Result<u64> {
        graph::check_deletions(deletions)?;
        self.inner.delete_observations(deletions).await
    }

    async fn delete_relations(&self, relations: &[Relation]) -> Result<u64> {
        graph::check_relations(relations)?;
        self.inner.delete_relations(relations).await
    }

    async fn read_graph(&self, query: &GraphQuery) -> Result<KnowledgeGraph> {
        query.validate()?;
        self.inner.read_graph(query).await
    }

    async fn put_vectors(&self, vectors: &[StoredVector]) -> Result<()> {
        vector::check_vectors(vectors)?;
        self.inner.put_vectors(vectors).await
    }

    async fn get_vectors(&self, keys: &[VectorKey]) -> Result<Vec<StoredVector>> {
        vector::check_batch(keys.len())?;
        self.inner.get_vectors(keys).await
    }

    async fn delete_vectors(&self, keys: &[VectorKey]) -> Result<u64> {
        vector::check_batch(keys.len())?;
        self.inner.delete_vectors(keys).await
    }

    async fn set_store_property(&self, change: &PropertyChange<'_>) -> Result<bool> {
        check_property_name(change.name)?;
        check_property_value(change.value)?;
        self.inner.set_store_property(change).await
    }
}
