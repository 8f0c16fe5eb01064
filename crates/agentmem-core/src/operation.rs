//! [`Operation`], and the one list of store operations that everything mechanical is made from.
//!
//! [`for_each_operation!`] holds every [`SessionStore`](crate::SessionStore),
//! [`MemoryStore`](crate::MemoryStore), [`CheckpointStore`](crate::CheckpointStore),
//! [`GraphStore`](crate::GraphStore) and [`VectorStore`](crate::VectorStore) operation once: its variant, signature and what its span
//! records. From it come the [`Operation`] enum, the forwarding base
//! [`LayeredStore`](crate::layer::LayeredStore) (every operation forwarded by default), the
//! store impls every layer gets from it, and the trace layer. Adding an operation is: the trait
//! method, one entry here, each backend's implementation, and its conformance cases.

use std::fmt;

/// Hands the list of operations to `$callback!`, in this form (one group per store trait, one
/// entry per operation):
///
/// ```text
/// stores {
///     $( Trait { $( Variant => fn name(arg: Type, ...) -> Output
///                   { session: expr, writes: expr?, reads: closure? }; )* } )*
/// }
/// others { $( #[doc] Variant => name; )* }
/// ```
///
/// `Trait` is the store trait the operation belongs to (`SessionStore`, `MemoryStore`, …),
/// `session` is the session the operation is about (for the span), `writes` the number of
/// messages it writes and `reads` counts the messages in its output. Types are named by
/// `crate::` paths, so the callbacks live in this crate.
macro_rules! for_each_operation {
    ($callback:ident) => {
        $callback! {
            stores {
                SessionStore {
                    SchemaVersion => fn schema_version() -> u32 { session: None };
                    SaveSession => fn save_session(
                        id: &crate::SessionId, history: &[crate::Message], meta: &crate::Metadata
                    ) -> () { session: Some(id), writes: history.len() };
                    Append => fn append(session: &crate::SessionId, messages: &[crate::Message]) -> ()
                        { session: Some(session), writes: messages.len() };
                    Load => fn load(session: &crate::SessionId, limit: Option<usize>)
                        -> Option<crate::Session>
                        { session: Some(session), reads: |s: &Option<crate::Session>| {
                            s.as_ref().map_or(0, |s| s.messages.len())
                        } };
                    ListSessions => fn list_sessions() -> Vec<crate::SessionInfo> { session: None };
                    DeleteSession => fn delete_session(session: &crate::SessionId) -> bool
                        { session: Some(session) };
                    Compact => fn compact(session: &crate::SessionId, replacement: &[crate::Message])
                        -> crate::ArchiveInfo
                        { session: Some(session), writes: replacement.len() };
                    ListArchives => fn list_archives(session: &crate::SessionId)
                        -> Vec<crate::ArchiveInfo> { session: Some(session) };
                    LoadArchive => fn load_archive(session: &crate::SessionId, archive: &crate::ArchiveId)
                        -> crate::Archive
                        { session: Some(session), reads: |a: &crate::Archive| a.messages.len() };
                    SearchMessages => fn search_messages(query: &str, scope: &crate::MessageQuery)
                        -> Vec<crate::MessageHit>
                        { session: scope.session.as_ref(), reads: |hits: &Vec<_>| hits.len() };
                    Purge => fn purge(policy: &crate::RetentionPolicy) -> crate::PurgeReport
                        { session: None };
                    // The span names the new session: it is the one written.
                    Fork => fn fork(
                        source: &crate::SessionId, target: &crate::SessionId,
                        at: Option<&crate::MessageId>
                    ) -> crate::SessionInfo
                        { session: Some(target), reads: |info: &crate::SessionInfo| {
                            usize::try_from(info.message_count).unwrap_or(usize::MAX)
                        } };
                    Rewind => fn rewind(session: &crate::SessionId, to: &crate::Rewind)
                        -> Vec<crate::Message>
                        { session: Some(session), reads: |removed: &Vec<_>| removed.len() };
                    UpdateSession => fn update_session(
                        session: &crate::SessionId, patch: &crate::SessionPatch
                    ) -> crate::SessionInfo { session: Some(session) };
                    FindSessions => fn find_sessions(query: &crate::SessionQuery)
                        -> crate::SessionPage { session: None };
                    ReplaceArchive => fn replace_archive(
                        session: &crate::SessionId, archive: &crate::ArchiveId,
                        messages: &[crate::Message]
                    ) -> crate::ArchiveInfo { session: Some(session), writes: messages.len() };
                    StoreProperty => fn store_property(name: &str) -> Option<String>
                        { session: None };
                    SetStoreProperty => fn set_store_property(change: &crate::PropertyChange<'_>)
                        -> bool { session: None };
                }
                MemoryStore {
                    GetContext => fn get_context(query: Option<&str>) -> String { session: None };
                    PutMemory => fn put_memory(item: &crate::MemoryItem) -> crate::MemoryItem
                        { session: None };
                    GetMemory => fn get_memory(id: &crate::MemoryId) -> Option<crate::MemoryItem>
                        { session: None };
                    ListMemories => fn list_memories(filter: &crate::MemoryFilter)
                        -> Vec<crate::MemoryItem> { session: None };
                    SearchMemories => fn search_memories(query: &str, filter: &crate::MemoryFilter)
                        -> Vec<crate::MemoryHit> { session: None };
                    DeleteMemory => fn delete_memory(id: &crate::MemoryId) -> bool { session: None };
                    MemoryRevision => fn memory_revision() -> Option<u64> { session: None };
                }
                CheckpointStore {
                    PutCheckpoint => fn put_checkpoint(
                        checkpoint: &crate::Checkpoint, blobs: &[crate::ChannelBlob]
                    ) -> () { session: None };
                    PutWrites => fn put_writes(
                        at: &crate::CheckpointKey, writes: &[crate::PendingWrite]
                    ) -> () { session: None };
                    GetCheckpoint => fn get_checkpoint(
                        thread: &crate::ThreadId, ns: &crate::CheckpointNs,
                        id: Option<&crate::CheckpointId>
                    ) -> Option<crate::CheckpointTuple> { session: None };
                    ListCheckpoints => fn list_checkpoints(query: &crate::CheckpointQuery)
                        -> Vec<crate::CheckpointTuple> { session: None };
                    ListThreads => fn list_threads() -> Vec<crate::ThreadInfo> { session: None };
                    DeleteThread => fn delete_thread(thread: &crate::ThreadId) -> bool
                        { session: None };
                    DeleteRunCheckpoints => fn delete_run_checkpoints(run_ids: &[String]) -> u64
                        { session: None };
                    CopyThread => fn copy_thread(source: &crate::ThreadId, target: &crate::ThreadId)
                        -> u64 { session: None };
                    PruneCheckpoints => fn prune_checkpoints(
                        threads: &[crate::ThreadId], keep: crate::CheckpointPrune
                    ) -> u64 { session: None };
                }
                GraphStore {
                    CreateEntities => fn create_entities(entities: &[crate::Entity])
                        -> Vec<crate::Entity> { session: None };
                    CreateRelations => fn create_relations(relations: &[crate::Relation])
                        -> Vec<crate::Relation> { session: None };
                    AddObservations => fn add_observations(
                        additions: &[crate::ObservationAddition]
                    ) -> Vec<crate::AddedObservations> { session: None };
                    DeleteEntities => fn delete_entities(names: &[String]) -> u64 { session: None };
                    DeleteObservations => fn delete_observations(
                        deletions: &[crate::ObservationDeletion]
                    ) -> u64 { session: None };
                    DeleteRelations => fn delete_relations(relations: &[crate::Relation]) -> u64
                        { session: None };
                    ReadGraph => fn read_graph(query: &crate::GraphQuery) -> crate::KnowledgeGraph
                        { session: None };
                }
                VectorStore {
                    PutVectors => fn put_vectors(vectors: &[crate::StoredVector]) -> ()
                        { session: None };
                    GetVectors => fn get_vectors(keys: &[crate::VectorKey])
                        -> Vec<crate::StoredVector> { session: None };
                    DeleteVectors => fn delete_vectors(keys: &[crate::VectorKey]) -> u64
                        { session: None };
                    ClearVectors => fn clear_vectors() -> u64 { session: None };
                }
            }
            others {
                /// Opening or connecting to a store (and migrating it).
                Open => open;
                /// Exporting sessions or memory items to a file or stream.
                Export => export;
                /// Importing sessions or memory items from a file or stream.
                Import => import;
            }
        }
    };
}
pub(crate) use for_each_operation;

/// The [`Operation`] enum: one variant per entry, named in spans and errors by its method.
macro_rules! operation_enum {
    (
        stores { $($trait:ident { $($v:ident => fn $n:ident $args:tt -> $out:ty { $($span:tt)* };)* })* }
        others { $($(#[$odoc:meta])* $ov:ident => $on:ident;)* }
    ) => {
        /// A store operation: every [`AgentMemory`](crate::AgentMemory) method, opening a
        /// store, and the whole-store transfers built on them.
        ///
        /// Spans (`op` field) and errors ([`Error::operation`](crate::Error::operation)) name
        /// operations with this enum, so a typo cannot invent a new operation name.
        ///
        /// ```
        /// use agentmem_core::Operation;
        /// assert_eq!(Operation::SaveSession.as_str(), "save_session");
        /// assert_eq!(Operation::Append.to_string(), "append");
        /// assert!(Operation::ALL.contains(&Operation::Fork));
        /// ```
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Operation {
            $($(
                #[doc = concat!(
                    "[`", stringify!($trait), "::", stringify!($n), "`](crate::",
                    stringify!($trait), "::", stringify!($n), ")."
                )]
                $v,
            )*)*
            $($(#[$odoc])* $ov,)*
        }

        impl Operation {
            /// Every operation: the store methods in trait order, then the others.
            pub const ALL: &'static [Operation] =
                &[$($(Operation::$v,)*)* $(Operation::$ov,)*];

            /// The operation's stable snake_case name, as spans and error messages show it:
            /// the name of its store method.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($(Operation::$v => stringify!($n),)*)*
                    $(Operation::$ov => stringify!($on),)*
                }
            }
        }
    };
}

for_each_operation!(operation_enum);

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::Operation;

    #[test]
    fn names_are_unique_snake_case() {
        let mut names: Vec<&str> = Operation::ALL.iter().map(|op| op.as_str()).collect();
        assert!(names
            .iter()
            .all(|n| n.chars().all(|c| c.is_ascii_lowercase() || c == '_')));
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count, "an operation name is used twice");
        assert_eq!(Operation::ReplaceArchive.as_str(), "replace_archive");
        assert_eq!(Operation::GetContext.as_str(), "get_context");
    }
}
