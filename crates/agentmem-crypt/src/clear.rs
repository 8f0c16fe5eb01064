//! The operations both layers of this crate pass to the store inside them unchanged, written
//! once.

/// Implements [`LayeredStore`](agentmem_core::layer::LayeredStore) for `$store<S>` (a layer's
/// store, holding the store inside it in `inner`): the operations written in the invocation,
/// and those that read or write nothing encrypted, passed through as they are: `backend`,
/// `schema_version`, `list_sessions`, `delete_session`, `list_archives`, `purge`,
/// `update_session` and `find_sessions` (labels and the expiry time are kept in the clear: they
/// are lookup keys, see the crate README), and `delete_memory`.
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
                self.inner.list_sessions().await
            }

            async fn delete_session(&self, session: &SessionId) -> Result<bool> {
                self.inner.delete_session(session).await
            }

            async fn list_archives(&self, session: &SessionId) -> Result<Vec<ArchiveInfo>> {
                self.inner.list_archives(session).await
            }

            async fn purge(&self, policy: &RetentionPolicy) -> Result<PurgeReport> {
                self.inner.purge(policy).await
            }

            async fn update_session(
                &self,
                session: &SessionId,
                patch: &SessionPatch,
            ) -> Result<SessionInfo> {
                self.inner.update_session(session, patch).await
            }

            async fn find_sessions(&self, query: &SessionQuery) -> Result<SessionPage> {
                self.inner.find_sessions(query).await
            }

            async fn delete_memory(&self, id: &MemoryId) -> Result<bool> {
                self.inner.delete_memory(id).await
            }

            $($operations)*
        }
};
}
