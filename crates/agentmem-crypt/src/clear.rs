//! The operations both layers of this crate pass to the store inside them unchanged, written
//! once.

/// Implements [`LayeredStore`](agentmem_core::layer::LayeredStore) for `$store<S>` (a layer's
/// store, holding the store inside it in `inner`): the operations written in the invocation,
/// and those that read or write nothing encrypted, passed through as they are: `backend`,
/// `schema_version`, `list_sessions`, `delete_session`, `list_archives`, `purge`,
/// `update_session` and `find_sessions` (labels and the expiry time are kept in the clear: they
/// are lookup keys, see the crate README), `list_threads`, `delete_thread`,
/// `delete_run_checkpoints` and `prune_checkpoints` (thread ids, checkpoint ids and metadata
/// are kept in the clear, and a delete writes nothing), `clear_vectors` (it takes no key and
/// writes nothing), and `store_property` and
/// `set_store_property` (the marker is read and written through them). (`delete_memory` is not among them: the
/// encryption layer maps the id to the forms it is stored under.)
///
/// The knowledge graph's operations, and the other vector operations, are written in each
/// invocation: the encryption layer seals every graph string and every vector (and maps vector
/// keys), and `NoKeyLayer` refuses graph and vector writes and reads on an encrypted store.
///
/// Each passed-through operation but the last three first calls the invoking layer's
/// `check_store(Operation)`, which checks the store's encryption marker (see `marker.rs`).
///
/// The types their signatures name are those of the invoking module's imports.
///
/// No operation is forwarded by default (`clippy::missing_trait_methods` is denied): an
/// operation added to the store must be looked at for what it could write or show in the
/// clear, and then written in each invocation or, if it carries nothing encrypted, here.
macro_rules! layered_store_passing_the_clear {
    ($store:ident; $($operations:tt)*) => {
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

            async fn list_sessions(&self) -> Result<Vec<SessionInfo>> {
                self.check_store(Operation::ListSessions).await?;
                self.inner.list_sessions().await
            }

            async fn delete_session(&self, session: &SessionId) -> Result<bool> {
                self.check_store(Operation::DeleteSession).await?;
                self.inner.delete_session(session).await
            }

            async fn list_archives(&self, session: &SessionId) -> Result<Vec<ArchiveInfo>> {
                self.check_store(Operation::ListArchives).await?;
                self.inner.list_archives(session).await
            }

            async fn purge(&self, policy: &RetentionPolicy) -> Result<PurgeReport> {
                self.check_store(Operation::Purge).await?;
                self.inner.purge(policy).await
            }

            async fn update_session(
                &self,
                session: &SessionId,
                patch: &SessionPatch,
            ) -> Result<SessionInfo> {
                self.check_store(Operation::UpdateSession).await?;
                self.inner.update_session(session, patch).await
            }

            async fn find_sessions(&self, query: &SessionQuery) -> Result<SessionPage> {
                self.check_store(Operation::FindSessions).await?;
                self.inner.find_sessions(query).await
            }

            async fn list_threads(&self) -> Result<Vec<ThreadInfo>> {
                self.check_store(Operation::ListThreads).await?;
                self.inner.list_threads().await
            }

            async fn delete_thread(&self, thread: &ThreadId) -> Result<bool> {
                self.check_store(Operation::DeleteThread).await?;
                self.inner.delete_thread(thread).await
            }

            async fn delete_run_checkpoints(&self, run_ids: &[String]) -> Result<u64> {
                self.check_store(Operation::DeleteRunCheckpoints).await?;
                self.inner.delete_run_checkpoints(run_ids).await
            }

            async fn prune_checkpoints(
                &self,
                threads: &[ThreadId],
                keep: CheckpointPrune,
            ) -> Result<u64> {
                self.check_store(Operation::PruneCheckpoints).await?;
                self.inner.prune_checkpoints(threads, keep).await
            }

            async fn clear_vectors(&self) -> Result<u64> {
                self.check_store(Operation::ClearVectors).await?;
                self.inner.clear_vectors().await
            }

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
