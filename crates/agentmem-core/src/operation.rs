//! [`Operation`]: what a store was doing, named once for spans and error labels.

use std::fmt;

/// A store operation: every [`AgentMemory`](crate::AgentMemory) method, opening a store, and
/// the whole-store transfers built on them.
///
/// Spans (`op` field) and errors ([`Error::operation`](crate::Error::operation)) name
/// operations with this enum, so a typo cannot invent a new operation name.
///
/// ```
/// use agentmem_core::Operation;
/// assert_eq!(Operation::SaveSession.as_str(), "save_session");
/// assert_eq!(Operation::Append.to_string(), "append");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Operation {
    /// Opening or connecting to a store (and migrating it).
    Open,
    /// [`AgentMemory::schema_version`](crate::AgentMemory::schema_version).
    SchemaVersion,
    /// [`ContextStore::get_context`](crate::AgentMemory::get_context).
    GetContext,
    /// [`AgentMemory::save_session`](crate::AgentMemory::save_session).
    SaveSession,
    /// [`AgentMemory::append`](crate::AgentMemory::append).
    Append,
    /// [`AgentMemory::load`](crate::AgentMemory::load).
    Load,
    /// [`AgentMemory::list_sessions`](crate::AgentMemory::list_sessions).
    ListSessions,
    /// [`AgentMemory::delete_session`](crate::AgentMemory::delete_session).
    DeleteSession,
    /// [`AgentMemory::compact`](crate::AgentMemory::compact).
    Compact,
    /// [`AgentMemory::list_archives`](crate::AgentMemory::list_archives).
    ListArchives,
    /// [`AgentMemory::load_archive`](crate::AgentMemory::load_archive).
    LoadArchive,
    /// [`AgentMemory::put_memory`](crate::AgentMemory::put_memory).
    PutMemory,
    /// [`AgentMemory::get_memory`](crate::AgentMemory::get_memory).
    GetMemory,
    /// [`AgentMemory::list_memories`](crate::AgentMemory::list_memories).
    ListMemories,
    /// [`AgentMemory::search_memories`](crate::AgentMemory::search_memories).
    SearchMemories,
    /// [`AgentMemory::delete_memory`](crate::AgentMemory::delete_memory).
    DeleteMemory,
    /// [`AgentMemory::search_messages`](crate::AgentMemory::search_messages).
    SearchMessages,
    /// [`AgentMemory::purge`](crate::AgentMemory::purge).
    Purge,
    /// Exporting sessions or memory items to a file or stream.
    Export,
    /// Importing sessions or memory items from a file or stream.
    Import,
}

impl Operation {
    /// The operation's stable snake_case name, as spans and error messages show it.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Open => "open",
            Operation::SchemaVersion => "schema_version",
            Operation::GetContext => "get_context",
            Operation::SaveSession => "save_session",
            Operation::Append => "append",
            Operation::Load => "load",
            Operation::ListSessions => "list_sessions",
            Operation::DeleteSession => "delete_session",
            Operation::Compact => "compact",
            Operation::ListArchives => "list_archives",
            Operation::LoadArchive => "load_archive",
            Operation::PutMemory => "put_memory",
            Operation::GetMemory => "get_memory",
            Operation::ListMemories => "list_memories",
            Operation::SearchMemories => "search_memories",
            Operation::DeleteMemory => "delete_memory",
            Operation::SearchMessages => "search_messages",
            Operation::Purge => "purge",
            Operation::Export => "export",
            Operation::Import => "import",
        }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
