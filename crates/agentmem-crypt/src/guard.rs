//! [`NoKeyLayer`]: what a program wears when no key is configured, so an encrypted store is
//! refused with a clear error instead of showing envelopes.

use std::future::Future;
use std::sync::Arc;

use crate::checkpoints::tuple_key;
use crate::cipher::{envelope_key_id, CryptoError, METADATA_KEY};
use crate::clear::store_types::*;
use crate::graph::graph_key;
use crate::key::KeyId;
use crate::marker::{read_marker, Access, MarkerCache};
use crate::vectors::vector_key_id;

/// The layer for a store opened without a key (the CLI wears it when neither
/// `AGENTMEM_ENCRYPTION_KEY` nor a key file is given).
///
/// A store marked encrypted (see [`StoreMarker`](crate::StoreMarker)) is refused with
/// [`CryptoError::NoKey`] (`InvalidInput`) before anything is read or written, for every
/// write and every read of records; listing ids, labels and archive summaries and deleting
/// stay allowed (see the crate README). On an unmarked store plaintext passes through
/// untouched and any encrypted record read is refused the same way. Writes are decided from
/// the marker alone, never by reading the records they join: a store encrypted before markers
/// existed is marked by its next write with the key (or `rekey`), and until then only its
/// encrypted records are refused, not plaintext written beside them.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoKeyLayer;

impl<S: AgentMemory> Layer<S> for NoKeyLayer {
    type Store = NoKey<S>;
    fn layer(&self, inner: S) -> NoKey<S> {
        NoKey {
            inner,
            marker: Arc::default(),
        }
    }
}

/// A store wearing [`NoKeyLayer`]. Dereferences to the store inside it.
#[derive(Debug, Clone)]
pub struct NoKey<S> {
    inner: S,
    /// What the store's encryption marker was found to be, shared by clones.
    marker: Arc<MarkerCache>,
}

agentmem_core::holds_inner_store!(NoKey);

fn metadata_key(metadata: &Metadata) -> Option<crate::KeyId> {
    metadata
        .get(METADATA_KEY)
        .and_then(|v| v.as_str())
        .and_then(envelope_key_id)
}

fn message_key(m: &Message) -> Option<crate::KeyId> {
    envelope_key_id(&m.content).or_else(|| metadata_key(&m.metadata))
}

fn item_key(item: &MemoryItem) -> Option<crate::KeyId> {
    envelope_key_id(&item.text)
        .or_else(|| item.key.as_deref().and_then(envelope_key_id))
        .or_else(|| metadata_key(&item.metadata))
}

fn refuse(found: Option<crate::KeyId>, op: Operation, what: String) -> Result<()> {
    match found {
        Some(found) => Err(Error::new(
            CryptoError::NoKey { found }.kind(),
            format!("cannot read {what}"),
        )
        .with_source(CryptoError::NoKey { found })
        .with_operation(op)),
        None => Ok(()),
    }
}

fn check_session(session: &Session, op: Operation) -> Result<()> {
    let found =
        metadata_key(&session.metadata).or_else(|| session.messages.iter().find_map(message_key));
    refuse(found, op, format!("session `{}`", session.id))
}

fn check_items<'a>(items: impl IntoIterator<Item = &'a MemoryItem>, op: Operation) -> Result<()> {
    for item in items {
        refuse(item_key(item), op, format!("memory item `{}`", item.id))?;
    }
    Ok(())
}

/// Refuses the first of `tuples` with a sealed value (body, channel value or pending write).
fn check_tuples<'a>(
    tuples: impl IntoIterator<Item = &'a CheckpointTuple>, op: Operation,
) -> Result<()> {
    for tuple in tuples {
        let key = &tuple.checkpoint.key;
        let what = format!(
            "checkpoint {:?} of thread {:?} (namespace {:?})",
            key.id.as_str(),
            key.thread.as_str(),
            key.ns.as_str()
        );
        refuse(tuple_key(tuple), op, what)?;
    }
    Ok(())
}

/// The error for an operation refused because the store is marked encrypted with `found`;
/// its source says how to give the key.
fn encrypted_store(found: KeyId, op: Operation) -> Error {
    let why = CryptoError::NoKey { found };
    Error::new(why.kind(), "the store is encrypted")
        .with_source(why)
        .with_operation(op)
}

impl<S: AgentMemory> NoKey<S> {
    /// Refuses `op` when the store is marked encrypted (see `marker.rs`), before anything is
    /// read or written. Allowed on a marked store: store properties, listing session ids,
    /// labels, archive summaries and checkpoint threads (kept in the clear), and deleting
    /// sessions, items, checkpoints and graph entries (`delete_session`, `delete_memory`,
    /// `purge`, `delete_thread`, `delete_run_checkpoints`, `prune_checkpoints`,
    /// `delete_entities`, `delete_observations`, `delete_relations`, `delete_vectors`,
    /// `clear_vectors`): a delete writes
    /// nothing that could mix plaintext into the store, and removing data must not need the
    /// key.
    ///
    /// Cost: the marker is read once per store handle for reads; before each write it is read
    /// again until the store is seen marked (another process may mark it at any time, and a
    /// plaintext write into a store marked a moment ago is what this layer exists to refuse).
    /// One small read per write: `cargo bench -p agentmem-crypt --bench crypt` measures
    /// `append_one/no-key` against `append_one/plain`.
    async fn check_store(&self, op: Operation) -> Result<()> {
        let access = Access::of(op);
        if matches!(access, Access::Property | Access::Listing | Access::Delete) {
            return Ok(());
        }
        if let Some(found) = self.marker.marked() {
            return Err(encrypted_store(found, op));
        }
        if self.marker.seen_unmarked() && !access.writes() {
            return Ok(());
        }
        let marker = read_marker(&self.inner).await?.map(|(_, marker)| marker);
        self.marker.seen(marker.as_ref());
        match marker {
            Some(marker) => Err(encrypted_store(marker.key.key, op)),
            None => Ok(()),
        }
    }

    /// Reads with `read` after [`check_store`](Self::check_store) (the read is not even
    /// started before), then refuses what it read when `refuse_sealed` finds anything
    /// encrypted in it.
    async fn read_refusing<T, F: Future<Output = Result<T>>>(
        &self, op: Operation, read: impl FnOnce() -> F,
        refuse_sealed: impl FnOnce(&T) -> Result<()>,
    ) -> Result<T> {
        self.check_store(op).await?;
        let value = read().await?;
        refuse_sealed(&value)?;
        Ok(value)
    }

    /// Refuses to go on when `session` holds anything encrypted, as [`load`](SessionStore::load)
    /// would (one extra read of the whole session).
    async fn check_readable(&self, session: &SessionId, op: Operation) -> Result<()> {
        if let Some(stored) = self.inner.load(session, None).await? {
            check_session(&stored, op)?;
        }
        Ok(())
    }
}

// Every operation is handled here or in the macro's list of those that pass through, none
// forwarded by default: an operation added to the store must be looked at for what it could
// write or show in the clear.
layered_store_passing_the_clear! {
    NoKey;

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    /// Refused on a marked store; on an unmarked one it replaces the whole session, so
    /// nothing encrypted is left to mix with: passed through.
    async fn save_session(
        &self, id: &SessionId, history: &[Message], meta: &Metadata,
    ) -> Result<()> {
        self.check_store(Operation::SaveSession).await?;
        self.inner.save_session(id, history, meta).await
    }

    async fn append(&self, session: &SessionId, messages: &[Message]) -> Result<()> {
        self.check_store(Operation::Append).await?;
        self.inner.append(session, messages).await
    }

    async fn load(&self, session: &SessionId, limit: Option<usize>) -> Result<Option<Session>> {
        let op = Operation::Load;
        self.read_refusing(op, || self.inner.load(session, limit), |loaded| {
            loaded.as_ref().map_or(Ok(()), |stored| check_session(stored, op))
        })
        .await
    }

    async fn compact(&self, session: &SessionId, replacement: &[Message]) -> Result<ArchiveInfo> {
        self.check_store(Operation::Compact).await?;
        self.inner.compact(session, replacement).await
    }

    async fn load_archive(&self, session: &SessionId, archive: &ArchiveId) -> Result<Archive> {
        let op = Operation::LoadArchive;
        self.read_refusing(op, || self.inner.load_archive(session, archive), |loaded| {
            let found = loaded.messages.iter().find_map(message_key);
            refuse(found, op, format!("archive `{archive}`"))
        })
        .await
    }

    /// The store's own search: an encrypted store's index holds no words, so it finds nothing
    /// there, and a hit that is encrypted is refused.
    async fn search_messages(&self, query: &str, scope: &MessageQuery) -> Result<Vec<MessageHit>> {
        let op = Operation::SearchMessages;
        self.read_refusing(op, || self.inner.search_messages(query, scope), |hits| {
            hits.iter().try_for_each(|hit| {
                let what = format!("a message of session `{}`", hit.session);
                refuse(message_key(&hit.message), op, what)
            })
        })
        .await
    }

    /// Refuses a `source` that `load` would refuse (it reads it first: a copy of ciphertext
    /// bound to another session could never be opened), then the store's own fork.
    async fn fork(
        &self, source: &SessionId, target: &SessionId, at: Option<&MessageId>,
    ) -> Result<SessionInfo> {
        self.check_store(Operation::Fork).await?;
        self.check_readable(source, Operation::Fork).await?;
        self.inner.fork(source, target, at).await
    }

    /// Refuses to put plaintext over an encrypted archive, as `load_archive` refuses to read one.
    async fn replace_archive(
        &self, session: &SessionId, archive: &ArchiveId, messages: &[Message],
    ) -> Result<ArchiveInfo> {
        self.check_store(Operation::ReplaceArchive).await?;
        LayeredStore::load_archive(self, session, archive).await?;
        self.inner.replace_archive(session, archive, messages).await
    }

    /// Refuses a session that `load` would refuse before removing anything (it reads it
    /// first), then the store's own rewind; removed messages that turn out encrypted (written
    /// in between) are refused as well.
    async fn rewind(&self, session: &SessionId, to: &Rewind) -> Result<Vec<Message>> {
        self.check_store(Operation::Rewind).await?;
        self.check_readable(session, Operation::Rewind).await?;
        let removed = self.inner.rewind(session, to).await?;
        let found = removed.iter().find_map(message_key);
        refuse(found, Operation::Rewind, format!("session `{session}`"))?;
        Ok(removed)
    }

    async fn get_context(&self, query: Option<&str>) -> Result<String> {
        let op = Operation::GetContext;
        self.read_refusing(op, || self.inner.get_context(query), |context| {
            let found = context
                .match_indices(crate::ENVELOPE_PREFIX)
                .find_map(|(at, _)| envelope_key_id(&context[at..]));
            refuse(found, op, "the context".into())
        })
        .await
    }

    async fn put_memory(&self, item: &MemoryItem) -> Result<MemoryItem> {
        self.check_store(Operation::PutMemory).await?;
        self.inner.put_memory(item).await
    }

    /// Passed through: without the key, an item whose id the encryption layer sealed is
    /// deleted by its id as stored (see the crate README).
    async fn delete_memory(&self, id: &MemoryId) -> Result<bool> {
        self.check_store(Operation::DeleteMemory).await?;
        self.inner.delete_memory(id).await
    }

    async fn get_memory(&self, id: &MemoryId) -> Result<Option<MemoryItem>> {
        let op = Operation::GetMemory;
        self.read_refusing(op, || self.inner.get_memory(id), |item| check_items(item, op))
            .await
    }

    async fn list_memories(&self, filter: &MemoryFilter) -> Result<Vec<MemoryItem>> {
        let op = Operation::ListMemories;
        self.read_refusing(op, || self.inner.list_memories(filter), |items| check_items(items, op))
            .await
    }

    async fn search_memories(&self, query: &str, filter: &MemoryFilter) -> Result<Vec<MemoryHit>> {
        let op = Operation::SearchMemories;
        self.read_refusing(op, || self.inner.search_memories(query, filter), |hits| {
            check_items(hits.iter().map(|h| &h.item), op)
        })
        .await
    }

    // Checkpoints: writes refused on a marked store, reads refuse any sealed value; listing
    // threads and deleting pass through (see the macro).

    async fn put_checkpoint(&self, checkpoint: &Checkpoint, blobs: &[ChannelBlob]) -> Result<()> {
        self.check_store(Operation::PutCheckpoint).await?;
        self.inner.put_checkpoint(checkpoint, blobs).await
    }

    async fn put_writes(&self, at: &CheckpointKey, writes: &[PendingWrite]) -> Result<()> {
        self.check_store(Operation::PutWrites).await?;
        self.inner.put_writes(at, writes).await
    }

    async fn get_checkpoint(
        &self, thread: &ThreadId, ns: &CheckpointNs, id: Option<&CheckpointId>,
    ) -> Result<Option<CheckpointTuple>> {
        let op = Operation::GetCheckpoint;
        self.read_refusing(op, || self.inner.get_checkpoint(thread, ns, id), |tuple| {
            check_tuples(tuple, op)
        })
        .await
    }

    async fn list_checkpoints(&self, query: &CheckpointQuery) -> Result<Vec<CheckpointTuple>> {
        let op = Operation::ListCheckpoints;
        self.read_refusing(op, || self.inner.list_checkpoints(query), |tuples| {
            check_tuples(tuples, op)
        })
        .await
    }

    /// Refuses a `source` holding a sealed value before anything is copied (it reads the whole
    /// thread first: a copy of ciphertext bound to another thread could never be opened), then
    /// the store's own copy.
    async fn copy_thread(&self, source: &ThreadId, target: &ThreadId) -> Result<u64> {
        self.check_store(Operation::CopyThread).await?;
        let all = CheckpointQuery::thread(source.clone());
        let tuples = self.inner.list_checkpoints(&all).await?;
        check_tuples(&tuples, Operation::CopyThread)?;
        self.inner.copy_thread(source, target).await
    }

    // The knowledge graph: writes refused on a marked store, a read refuses any sealed string;
    // deleting passes through (without the key, by the strings as stored: sealed).

    async fn create_entities(&self, entities: &[Entity]) -> Result<Vec<Entity>> {
        self.check_store(Operation::CreateEntities).await?;
        self.inner.create_entities(entities).await
    }

    async fn create_relations(&self, relations: &[Relation]) -> Result<Vec<Relation>> {
        self.check_store(Operation::CreateRelations).await?;
        self.inner.create_relations(relations).await
    }

    /// Refused on a marked store; on an unmarked one, an entity whose name was sealed is not
    /// found by its name in plaintext, so nothing is added to it.
    async fn add_observations(
        &self, additions: &[ObservationAddition],
    ) -> Result<Vec<AddedObservations>> {
        self.check_store(Operation::AddObservations).await?;
        self.inner.add_observations(additions).await
    }

    async fn delete_entities(&self, names: &[String]) -> Result<u64> {
        self.check_store(Operation::DeleteEntities).await?;
        self.inner.delete_entities(names).await
    }

    async fn delete_observations(&self, deletions: &[ObservationDeletion]) -> Result<u64> {
        self.check_store(Operation::DeleteObservations).await?;
        self.inner.delete_observations(deletions).await
    }

    async fn delete_relations(&self, relations: &[Relation]) -> Result<u64> {
        self.check_store(Operation::DeleteRelations).await?;
        self.inner.delete_relations(relations).await
    }

    async fn read_graph(&self, query: &GraphQuery) -> Result<KnowledgeGraph> {
        let op = Operation::ReadGraph;
        self.read_refusing(op, || self.inner.read_graph(query), |graph| {
            refuse(graph_key(graph), op, "the knowledge graph".into())
        })
        .await
    }

    // Embedding vectors: writes refused on a marked store, a read refuses any sealed vector;
    // deleting passes through (without the key, by the keys as stored: mapped), and so does
    // clearing (see the macro).

    async fn put_vectors(&self, vectors: &[StoredVector]) -> Result<()> {
        self.check_store(Operation::PutVectors).await?;
        self.inner.put_vectors(vectors).await
    }

    async fn get_vectors(&self, keys: &[VectorKey]) -> Result<Vec<StoredVector>> {
        let op = Operation::GetVectors;
        self.read_refusing(op, || self.inner.get_vectors(keys), |vectors| {
            let found = vectors.iter().find_map(|v| vector_key_id(&v.data));
            refuse(found, op, "a stored vector".into())
        })
        .await
    }

    async fn delete_vectors(&self, keys: &[VectorKey]) -> Result<u64> {
        self.check_store(Operation::DeleteVectors).await?;
        self.inner.delete_vectors(keys).await
    }
}
