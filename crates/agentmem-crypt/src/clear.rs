//! What both layers of this crate share, written once: the types their operations name and
//! the operations they pass to the store inside them unchanged.

/// The types the signatures of the store's operations name: both layers write operations of
/// the same trait (and `layered_store_passing_the_clear!` names them unqualified).
pub(crate) mod store_types {
    pub(crate) use agentmem_core::backend::BackendInfo;
    pub(crate) use agentmem_core::layer::{Layer, LayeredStore};
    pub(crate) use agentmem_core::{
        async_trait, AddedObservations, AgentMemory, Archive, ArchiveId, ArchiveInfo, Capabilities,
        ChannelBlob, Checkpoint, CheckpointId, CheckpointKey, CheckpointNs, CheckpointPrune,
        CheckpointQuery, CheckpointTuple, Entity, Error, GraphQuery, KnowledgeGraph, MemoryFilter,
        MemoryHit, MemoryId, MemoryItem, Message, MessageHit, MessageId, MessageQuery, Metadata,
        ObservationAddition, ObservationDeletion, Operation, PendingWrite, PropertyChange,
        PurgeReport, Relation, Result, RetentionPolicy, Rewind, Session, SessionId, SessionInfo,
        SessionPage, SessionPatch, SessionQuery, StoredVector, ThreadId, ThreadInfo, VectorKey,
    };
}

/// Implements [`LayeredStore`](agentmem_core::layer::LayeredStore) for `$store<S>` (a layer's
/// store, holding the store inside it in `inner`): the operations written in the invocation,
/// and those that read or write nothing encrypted, passed through as they are: `backend`,
/// `schema_version`, `list_sessions`, `delete_session`, `list_archives`, `purge`,
/// `update_session` and `find_sessions` (labels and the expiry time are kept in the clear: they
/// are lookup keys, see the crate README), `list_threads`, `delete_thread`,
/// `delete_run_checkpoints` and `prune_checkpoints` (thread ids, checkpoint ids and metadata
/// are kept in the clear, and a delete writes nothing), `clear_vectors` (it takes no key and
/// writes nothing), `memory_revision` (a counter of writes), and `store_property` and
/// `set_store_property` (the marker is read and written through them). (`delete_memory` is not among them: the
/// encryption layer maps the id to the forms it is stored under.)
///
/// The knowledge graph's operations, and the other vector operations, are written in each
/// invocation: the encryption layer seals every graph string and every vector (and maps vector
/// keys), and `NoKeyLayer` refuses graph and vector writes and reads on an encrypted store.
///
/// Each passed-through operation in the `checked` table first calls the invoking layer's
/// `check_store(Operation)`, which checks the store's encryption marker (see `marker.rs`);
/// `backend`, `schema_version` and the two property operations do not.
///
/// The types their signatures name are those of the invoking module's imports (see
/// `store_types`).
///
/// No operation is forwarded by default (`clippy::missing_trait_methods` is denied): an
/// operation added to the store must be looked at for what it could write or show in the
/// clear, and then written in each invocation or, if it carries nothing encrypted, here.
macro_rules! layered_store_passing_the_clear {
    ($store:ident; $($operations:tt)*) => {
        layered_store_passing_the_clear! {
            @impl $store;
            // Checked, then passed through: operation(arguments) -> output: its `Operation`.
            checked {
                list_sessions() -> Vec<SessionInfo>: ListSessions;
                delete_session(session: &SessionId) -> bool: DeleteSession;
                list_archives(session: &SessionId) -> Vec<ArchiveInfo>: ListArchives;
                purge(policy: &RetentionPolicy) -> PurgeReport: Purge;
                update_session(session: &SessionId, patch: &SessionPatch) -> SessionInfo:
                    UpdateSession;
                find_sessions(query: &SessionQuery) -> SessionPage: FindSessions;
                list_threads() -> Vec<ThreadInfo>: ListThreads;
                delete_thread(thread: &ThreadId) -> bool: DeleteThread;
                delete_run_checkpoints(run_ids: &[String]) -> u64: DeleteRunCheckpoints;
                prune_checkpoints(threads: &[ThreadId], keep: CheckpointPrune) -> u64:
                    PruneCheckpoints;
                clear_vectors() -> u64: ClearVectors;
                memory_revision() -> Option<u64>: MemoryRevision;
            }
            $($operations)*
        }
    };
    (
        @impl $store:ident;
        checked { $($name:ident($($arg:ident: $ty:ty),*) -> $output:ty: $op:ident;)* }
        $($operations:tt)*
    ) => {
        #[deny(clippy::missing_trait_methods)]
        #[async_trait]
        impl<S: AgentMemory> LayeredStore for $store<S> {
            type Inner = S;

            fn inner(&self) -> &S {
                &self.inner
            }

            fn backend(&self) -> &'static BackendInfo {
                self.inner.backend()
            }

            async fn schema_version(&self) -> Result<u32> {
                self.inner.schema_version().await
            }

            $(
                async fn $name(&self, $($arg: $ty),*) -> Result<$output> {
                    self.check_store(Operation::$op).await?;
                    self.inner.$name($($arg),*).await
                }
            )*

            async fn store_property(&self, name: &str) -> Result<Option<String>> {
                self.inner.store_property(name).await
            }

            async fn set_store_property(&self, change: &PropertyChange<'_>) -> Result<bool> {
                self.inner.set_store_property(change).await
            }

            $($operations)*
        }
    };
}
