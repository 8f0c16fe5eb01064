//! [`SessionStore`] and [`MemoryStore`] (so [`AgentMemory`](crate::AgentMemory)) for `Arc<T>`, `Box<T>` and
//! `&'static T`: one macro forwards every method, so a shared or boxed store (including
//! `Arc<dyn AgentMemory>`) is a store itself and can wear more layers.

use std::sync::Arc;

use crate::error::Result;
use crate::model::SessionInfo;
use crate::model::{Archive, ArchiveId, ArchiveInfo, MemoryItem, Message, Metadata, Session};
use crate::name::SessionId;
use crate::store::{
    Capabilities, MemoryFilter, MemoryHit, MemoryStore, MessageHit, MessageQuery, PurgeReport,
    RetentionPolicy, SessionStore,
};

/// Writes an `#[async_trait] impl … SessionStore for …` (or `MemoryStore`) whose named methods
/// forward to `$inner` (an expression of the receiver), followed by the impl's own items;
/// `sessions` and `memories` name every method of the one trait or the other.
///
/// The forwarded methods are spelled out before `async_trait` sees the impl (it cannot see
/// into macro calls inside it), hence the accumulator.
macro_rules! forward_store {
    ({ $($head:tt)* } |$this:ident| $inner:expr; sessions { $($own:tt)* }) => {
        forward_store!({ $($head)* } |$this| $inner; [backend capabilities schema_version
            save_session append load list_sessions delete_session compact list_archives
            load_archive search_messages purge fork rewind update_session find_sessions replace_archive] { $($own)* });
    };
    ({ $($head:tt)* } |$this:ident| $inner:expr; memories { $($own:tt)* }) => {
        forward_store!({ $($head)* } |$this| $inner; [get_context put_memory get_memory
            list_memories search_memories delete_memory] { $($own)* });
    };
    ({ $($head:tt)* } |$this:ident| $inner:expr; [$($method:ident)*] { $($own:tt)* }) => {
        forward_store!(@munch { $($head)* } |$this| $inner; [$($method)*] [] { $($own)* });
    };
    (@munch {$($head:tt)*} |$this:ident| $inner:expr; [] [$($acc:tt)*] {$($own:tt)*}) => {
        #[$crate::async_trait]
        $($head)* { $($acc)* $($own)* }
    };
    (@munch {$($head:tt)*} |$this:ident| $inner:expr; [backend $($rest:ident)*] [$($acc:tt)*] {$($own:tt)*}) => {
        forward_store!(@munch {$($head)*} |$this| $inner; [$($rest)*] [$($acc)*
            fn backend(&$this) -> &'static str { $inner.backend() }
        ] {$($own)*});
    };
    (@munch {$($head:tt)*} |$this:ident| $inner:expr; [capabilities $($rest:ident)*] [$($acc:tt)*] {$($own:tt)*}) => {
        forward_store!(@munch {$($head)*} |$this| $inner; [$($rest)*] [$($acc)*
            fn capabilities(&$this) -> Capabilities { $inner.capabilities() }
        ] {$($own)*});
    };
    (@munch {$($head:tt)*} |$this:ident| $inner:expr; [schema_version $($rest:ident)*] [$($acc:tt)*] {$($own:tt)*}) => {
        forward_store!(@munch {$($head)*} |$this| $inner; [$($rest)*] [$($acc)*
            async fn schema_version(&$this) -> Result<u32> { $inner.schema_version().await }
        ] {$($own)*});
    };
    (@munch {$($head:tt)*} |$this:ident| $inner:expr; [get_context $($rest:ident)*] [$($acc:tt)*] {$($own:tt)*}) => {
        forward_store!(@munch {$($head)*} |$this| $inner; [$($rest)*] [$($acc)*
            async fn get_context(&$this, query: Option<&str>) -> Result<String> {
            $inner.get_context(query).await
        }
        ] {$($own)*});
    };
    (@munch {$($head:tt)*} |$this:ident| $inner:expr; [save_session $($rest:ident)*] [$($acc:tt)*] {$($own:tt)*}) => {
        forward_store!(@munch {$($head)*} |$this| $inner; [$($rest)*] [$($acc)*
            async fn save_session(&$this, session: &SessionId, history: &[Message], metadata: &Metadata) -> Result<()> {
            $inner.save_session(session, history, metadata).await
        }
        ] {$($own)*});
    };
    (@munch {$($head:tt)*} |$this:ident| $inner:expr; [append $($rest:ident)*] [$($acc:tt)*] {$($own:tt)*}) => {
        forward_store!(@munch {$($head)*} |$this| $inner; [$($rest)*] [$($acc)*
            async fn append(&$this, session: &SessionId, messages: &[Message]) -> Result<()> {
            $inner.append(session, messages).await
        }
        ] {$($own)*});
    };
    (@munch {$($head:tt)*} |$this:ident| $inner:expr; [load $($rest:ident)*] [$($acc:tt)*] {$($own:tt)*}) => {
        forward_store!(@munch {$($head)*} |$this| $inner; [$($rest)*] [$($acc)*
            async fn load(&$this, session: &SessionId, limit: Option<usize>) -> Result<Option<Session>> {
            $inner.load(session, limit).await
        }
        ] {$($own)*});
    };
    (@munch {$($head:tt)*} |$this:ident| $inner:expr; [list_sessions $($rest:ident)*] [$($acc:tt)*] {$($own:tt)*}) => {
        forward_store!(@munch {$($head)*} |$this| $inner; [$($rest)*] [$($acc)*
            async fn list_sessions(&$this) -> Result<Vec<SessionInfo>> { $inner.list_sessions().await }
        ] {$($own)*});
    };
    (@munch {$($head:tt)*} |$this:ident| $inner:expr; [delete_session $($rest:ident)*] [$($acc:tt)*] {$($own:tt)*}) => {
        forward_store!(@munch {$($head)*} |$this| $inner; [$($rest)*] [$($acc)*
            async fn delete_session(&$this, session: &SessionId) -> Result<bool> {
            $inner.delete_session(session).await
        }
        ] {$($own)*});
    };
    (@munch {$($head:tt)*} |$this:ident| $inner:expr; [compact $($rest:ident)*] [$($acc:tt)*] {$($own:tt)*}) => {
        forward_store!(@munch {$($head)*} |$this| $inner; [$($rest)*] [$($acc)*
            async fn compact(&$this, session: &SessionId, replacement: &[Message]) -> Result<ArchiveInfo> {
            $inner.compact(session, replacement).await
        }
        ] {$($own)*});
    };
    (@munch {$($head:tt)*} |$this:ident| $inner:expr; [list_archives $($rest:ident)*] [$($acc:tt)*] {$($own:tt)*}) => {
        forward_store!(@munch {$($head)*} |$this| $inner; [$($rest)*] [$($acc)*
            async fn list_archives(&$this, session: &SessionId) -> Result<Vec<ArchiveInfo>> {
            $inner.list_archives(session).await
        }
        ] {$($own)*});
    };
    (@munch {$($head:tt)*} |$this:ident| $inner:expr; [load_archive $($rest:ident)*] [$($acc:tt)*] {$($own:tt)*}) => {
        forward_store!(@munch {$($head)*} |$this| $inner; [$($rest)*] [$($acc)*
            async fn load_archive(&$this, session: &SessionId, archive: &ArchiveId) -> Result<Archive> {
            $inner.load_archive(session, archive).await
        }
        ] {$($own)*});
    };
    (@munch {$($head:tt)*} |$this:ident| $inner:expr; [put_memory $($rest:ident)*] [$($acc:tt)*] {$($own:tt)*}) => {
        forward_store!(@munch {$($head)*} |$this| $inner; [$($rest)*] [$($acc)*
            async fn put_memory(&$this, item: &MemoryItem) -> Result<MemoryItem> {
            $inner.put_memory(item).await
        }
        ] {$($own)*});
    };
    (@munch {$($head:tt)*} |$this:ident| $inner:expr; [get_memory $($rest:ident)*] [$($acc:tt)*] {$($own:tt)*}) => {
        forward_store!(@munch {$($head)*} |$this| $inner; [$($rest)*] [$($acc)*
            async fn get_memory(&$this, id: &$crate::MemoryId) -> Result<Option<MemoryItem>> {
            $inner.get_memory(id).await
        }
        ] {$($own)*});
    };
    (@munch {$($head:tt)*} |$this:ident| $inner:expr; [list_memories $($rest:ident)*] [$($acc:tt)*] {$($own:tt)*}) => {
        forward_store!(@munch {$($head)*} |$this| $inner; [$($rest)*] [$($acc)*
            async fn list_memories(&$this, filter: &MemoryFilter) -> Result<Vec<MemoryItem>> {
            $inner.list_memories(filter).await
        }
        ] {$($own)*});
    };
    (@munch {$($head:tt)*} |$this:ident| $inner:expr; [search_memories $($rest:ident)*] [$($acc:tt)*] {$($own:tt)*}) => {
        forward_store!(@munch {$($head)*} |$this| $inner; [$($rest)*] [$($acc)*
            async fn search_memories(&$this, query: &str, filter: &MemoryFilter) -> Result<Vec<MemoryHit>> {
            $inner.search_memories(query, filter).await
        }
        ] {$($own)*});
    };
    (@munch {$($head:tt)*} |$this:ident| $inner:expr; [delete_memory $($rest:ident)*] [$($acc:tt)*] {$($own:tt)*}) => {
        forward_store!(@munch {$($head)*} |$this| $inner; [$($rest)*] [$($acc)*
            async fn delete_memory(&$this, id: &$crate::MemoryId) -> Result<bool> {
            $inner.delete_memory(id).await
        }
        ] {$($own)*});
    };
    (@munch {$($head:tt)*} |$this:ident| $inner:expr; [search_messages $($rest:ident)*] [$($acc:tt)*] {$($own:tt)*}) => {
        forward_store!(@munch {$($head)*} |$this| $inner; [$($rest)*] [$($acc)*
            async fn search_messages(&$this, query: &str, scope: &MessageQuery) -> Result<Vec<MessageHit>> {
            $inner.search_messages(query, scope).await
        }
        ] {$($own)*});
    };
    (@munch {$($head:tt)*} |$this:ident| $inner:expr; [fork $($rest:ident)*] [$($acc:tt)*] {$($own:tt)*}) => {
        forward_store!(@munch {$($head)*} |$this| $inner; [$($rest)*] [$($acc)*
            async fn fork(&$this, source: &SessionId, target: &SessionId, at: Option<&$crate::MessageId>) -> Result<SessionInfo> {
            $inner.fork(source, target, at).await
        }
        ] {$($own)*});
    };
    (@munch {$($head:tt)*} |$this:ident| $inner:expr; [rewind $($rest:ident)*] [$($acc:tt)*] {$($own:tt)*}) => {
        forward_store!(@munch {$($head)*} |$this| $inner; [$($rest)*] [$($acc)*
            async fn rewind(&$this, session: &SessionId, to: &$crate::Rewind) -> Result<Vec<Message>> {
            $inner.rewind(session, to).await
        }
        ] {$($own)*});
    };
    (@munch {$($head:tt)*} |$this:ident| $inner:expr; [update_session $($rest:ident)*] [$($acc:tt)*] {$($own:tt)*}) => {
        forward_store!(@munch {$($head)*} |$this| $inner; [$($rest)*] [$($acc)*
            async fn update_session(&$this, session: &SessionId, patch: &$crate::SessionPatch) -> Result<SessionInfo> {
            $inner.update_session(session, patch).await
        }
        ] {$($own)*});
    };
    (@munch {$($head:tt)*} |$this:ident| $inner:expr; [find_sessions $($rest:ident)*] [$($acc:tt)*] {$($own:tt)*}) => {
        forward_store!(@munch {$($head)*} |$this| $inner; [$($rest)*] [$($acc)*
            async fn find_sessions(&$this, query: &$crate::SessionQuery) -> Result<$crate::SessionPage> {
            $inner.find_sessions(query).await
        }
        ] {$($own)*});
    };
    (@munch {$($head:tt)*} |$this:ident| $inner:expr; [replace_archive $($rest:ident)*] [$($acc:tt)*] {$($own:tt)*}) => {
        forward_store!(@munch {$($head)*} |$this| $inner; [$($rest)*] [$($acc)*
            async fn replace_archive(&$this, session: &SessionId, archive: &ArchiveId, messages: &[Message]) -> Result<ArchiveInfo> {
            $inner.replace_archive(session, archive, messages).await
        }
        ] {$($own)*});
    };
    (@munch {$($head:tt)*} |$this:ident| $inner:expr; [purge $($rest:ident)*] [$($acc:tt)*] {$($own:tt)*}) => {
        forward_store!(@munch {$($head)*} |$this| $inner; [$($rest)*] [$($acc)*
            async fn purge(&$this, policy: &RetentionPolicy) -> Result<PurgeReport> {
            $inner.purge(policy).await
        }
        ] {$($own)*});
    };
}

pub(crate) use forward_store;

forward_store!({ impl<T: SessionStore + ?Sized> SessionStore for Arc<T> } |self| (**self); sessions {});
forward_store!({ impl<T: MemoryStore + ?Sized> MemoryStore for Arc<T> } |self| (**self); memories {});
forward_store!({ impl<T: SessionStore + ?Sized> SessionStore for Box<T> } |self| (**self); sessions {});
forward_store!({ impl<T: MemoryStore + ?Sized> MemoryStore for Box<T> } |self| (**self); memories {});
forward_store!({ impl<T: SessionStore + ?Sized> SessionStore for &'static T } |self| (**self); sessions {});
forward_store!({ impl<T: MemoryStore + ?Sized> MemoryStore for &'static T } |self| (**self); memories {});
