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
    /// [`SessionStore::schema_version`](crate::SessionStore::schema_version).
    SchemaVersion,
    /// [`ContextStore::get_context`](crate::MemoryStore::get_context).
    GetContext,
    /// [`SessionStore::save_session`](crate::SessionStore::save_session).
    SaveSession,
    /// [`SessionStore::append`](crate::SessionStore::append).
    Append,
    /// [`SessionStore::load`](crate::SessionStore::load).
    Load,
    /// [`SessionStore::list_sessions`](crate::SessionStore::list_sessions).
    ListSessions,
    /// [`SessionStore::delete_session`](crate::SessionStore::delete_session).
    DeleteSession,
    /// [`SessionStore::compact`](crate::SessionStore::compact).
    Compact,
    /// [`SessionStore::list_archives`](crate::SessionStore::list_archives).
    ListArchives,
    /// [`SessionStore::load_archive`](crate::SessionStore::load_archive).
    LoadArchive,
    /// [`MemoryStore::put_memory`](crate::MemoryStore::put_memory).
    PutMemory,
    /// [`MemoryStore::get_memory`](crate::MemoryStore::get_memory).
    GetMemory,
    /// [`MemoryStore::list_memories`](crate::MemoryStore::list_memories).
    ListMemories,
    /// [`MemoryStore::search_memories`](crate::MemoryStore::search_memories).
    SearchMemories,
    /// [`MemoryStore::delete_memory`](crate::MemoryStore::delete_memory).
    DeleteMemory,
    /// [`SessionStore::search_messages`](crate::SessionStore::search_messages).
    SearchMessages,
    /// [`SessionStore::purge`](crate::SessionStore::purge).
    Purge,
    /// [`SessionStore::fork`](crate::SessionStore::fork).
    Fork,
    /// [`SessionStore::rewind`](crate::SessionStore::rewind).
    Rewind,
    /// [`SessionStore::update_session`](crate::SessionStore::update_session).
    UpdateSession,
    /// [`SessionStore::find_sessions`](crate::SessionStore::find_sessions).
    FindSessions,
    /// [`SessionStore::replace_archive`](crate::SessionStore::replace_archive).
    ReplaceArchive,
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
            Operation::Fork => "fork",
            Operation::Rewind => "rewind",
            Operation::UpdateSession => "update_session",
            Operation::FindSessions => "find_sessions",
            Operation::ReplaceArchive => "replace_archive",
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
