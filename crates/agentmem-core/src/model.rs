//! The data model: messages, sessions, archives and memory items.
//!
//! Timestamps are UTC with microsecond precision everywhere ([`now`] truncates), so every
//! backend can store them exactly and a round trip compares equal.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, SubsecRound, Utc};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::lifecycle::SessionLabels;
use crate::name::{ArchiveId, MemoryId, MessageId, SessionId};
use crate::scope::MemoryScope;

/// Free-form metadata attached to messages, sessions and memory items.
pub type Metadata = serde_json::Map<String, serde_json::Value>;

/// The `with_metadata` builder method of a type with a `metadata` map, the same on messages and
/// memory items.
macro_rules! metadata_builder {
    () => {
        /// Adds one metadata entry.
        pub fn with_metadata(
            mut self, key: impl Into<String>, value: impl Into<serde_json::Value>,
        ) -> Self {
            self.metadata.insert(key.into(), value.into());
            self
        }
    };
}

/// The current time, truncated to microseconds (the precision every backend keeps).
pub fn now() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(6)
}

/// Who said a message.
///
/// Serialized as a lowercase string (`"system"`, `"user"`, `"assistant"`, `"tool"`); any
/// other string is an agent's own name, as Swarms writes `### ResearchAgent — …`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Role {
    /// System prompt, rules, summaries and preloaded memory.
    System,
    /// The human (or calling program).
    User,
    /// The model's reply.
    Assistant,
    /// A tool's result, paired with the call by [`Message::tool_call_id`].
    Tool,
    /// An agent speaking under its own name.
    Agent(String),
}

impl Role {
    /// The role as stored: `system`, `user`, `assistant`, `tool`, or the agent's name.
    pub fn as_str(&self) -> &str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::Agent(name) => name,
        }
    }

    /// The role as Swarms prints it in `MEMORY.md` headings: `System`, `User`, `Assistant`,
    /// `Tool`, or the agent's name unchanged.
    pub fn display_name(&self) -> &str {
        match self {
            Role::System => "System",
            Role::User => "User",
            Role::Assistant => "Assistant",
            Role::Tool => "Tool",
            Role::Agent(name) => name,
        }
    }

    /// Parses a stored role; the four standard roles match case-insensitively, anything else
    /// is an agent name (which must be non-empty, at most 128 bytes, without control characters
    /// or surrounding whitespace, since it is printed into Markdown headings).
    pub fn parse(value: &str) -> Result<Self> {
        Ok(match value.to_ascii_lowercase().as_str() {
            "system" => Role::System,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            _ => {
                if value.is_empty()
                    || value.len() > crate::name::MAX_NAME_BYTES
                    || value.trim() != value
                    || value.chars().any(char::is_control)
                {
                    return Err(Error::invalid_input(format!(
                        "invalid role {value:?}: a role is system, user, assistant, tool or an agent name (1-128 bytes, no control characters or surrounding spaces)"
                    )));
                }
                Role::Agent(value.to_string())
            }
        })
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Role {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Role::parse(s)
    }
}

impl Serialize for Role {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Role {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Role::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// A new random token (32 lowercase hex digits), for names that must not collide (temporary
/// files, for example). Messages and memory items take [`MessageId::random`] and
/// [`MemoryId::random`].
pub fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// How deep metadata may nest: a value inside the metadata map is level 1, a value inside that
/// level 2, and so on. JSON and BSON readers stop at 100-128 levels counted from the whole
/// record, so the limit leaves room for the record around the metadata.
pub const MAX_METADATA_DEPTH: usize = 64;

/// Refuses `text` when longer than `max` bytes or holding a NUL (PostgreSQL text cannot hold
/// one, and no backend keeps one in a key), naming `what`: one rule for every backend.
pub(crate) fn check_stored_text(what: &str, text: &str, max: usize) -> Result<()> {
    if text.len() > max {
        return Err(Error::invalid_input(format!(
            "{what} is {} bytes; at most {max} are stored",
            text.len()
        )));
    }
    if text.contains('\0') {
        return Err(Error::invalid_input(format!(
            "{what} contains a NUL character"
        )));
    }
    Ok(())
}

/// Refuses metadata nested deeper than [`MAX_METADATA_DEPTH`] (without recursing, so hostile
/// input cannot exhaust the stack here).
pub(crate) fn check_metadata_depth(what: &str, metadata: &Metadata) -> Result<()> {
    let mut stack: Vec<(&serde_json::Value, usize)> = metadata.values().map(|v| (v, 1)).collect();
    while let Some((value, depth)) = stack.pop() {
        if depth > MAX_METADATA_DEPTH {
            return Err(Error::invalid_input(format!(
                "{what} nests deeper than {MAX_METADATA_DEPTH} levels"
            )));
        }
        match value {
            serde_json::Value::Array(items) => stack.extend(items.iter().map(|v| (v, depth + 1))),
            serde_json::Value::Object(map) => stack.extend(map.values().map(|v| (v, depth + 1))),
            _ => {}
        }
    }
    Ok(())
}

/// One message of a conversation.
///
/// A tool call is a non-tool message with a [`tool_call_id`](Self::tool_call_id); its result
/// is a [`Role::Tool`] message with the same id. History limits never separate the two
/// (see [`crate::history`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Unique id, kept across backends (migration and de-duplication rely on it).
    pub id: MessageId,
    /// Who said it.
    pub role: Role,
    /// The text.
    pub content: String,
    /// When it was said (UTC, microseconds).
    #[serde(serialize_with = "crate::rfc3339::serialize")]
    pub timestamp: DateTime<Utc>,
    /// For a tool call and its result: the id that pairs them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For a tool call and its result: the tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// Anything else.
    #[serde(default, skip_serializing_if = "Metadata::is_empty")]
    pub metadata: Metadata,
}

impl Message {
    /// A message from `role` with `content`, a fresh id and the current time.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Message {
            id: MessageId::random(),
            role,
            content: content.into(),
            timestamp: now(),
            tool_call_id: None,
            tool_name: None,
            metadata: Metadata::new(),
        }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, content)
    }

    /// An assistant message that calls `tool` with `arguments` (usually JSON) under `call_id`.
    ///
    /// The arguments are the message's content; [`tool_result`](Self::tool_result) with the
    /// same `call_id` answers it.
    ///
    /// ```
    /// use agentmem_core::{Message, Role};
    /// let call = Message::tool_call("call_1", "weather", r#"{"city":"Oslo"}"#);
    /// assert_eq!(call.role, Role::Assistant);
    /// assert!(call.is_tool_call() && !call.is_tool_result());
    /// assert_eq!(call.tool_call_id.as_deref(), Some("call_1"));
    /// assert_eq!(call.tool_name.as_deref(), Some("weather"));
    /// assert_eq!(call.content, r#"{"city":"Oslo"}"#);
    /// ```
    pub fn tool_call(
        call_id: impl Into<String>, tool: impl Into<String>, arguments: impl Into<String>,
    ) -> Self {
        Self::of_tool(Role::Assistant, call_id.into(), tool.into(), arguments)
    }

    /// The result of the tool call `call_id`: a [`Role::Tool`] message paired with its call
    /// by the shared id.
    ///
    /// ```
    /// use agentmem_core::{Message, Role};
    /// let call = Message::tool_call("call_1", "weather", r#"{"city":"Oslo"}"#);
    /// let result = Message::tool_result("call_1", "weather", "sunny, 21 °C");
    /// assert_eq!(result.role, Role::Tool);
    /// assert!(result.is_tool_result() && !result.is_tool_call());
    /// // The shared id pairs them; history windows never keep the result without its call.
    /// assert_eq!(result.tool_call_id, call.tool_call_id);
    /// ```
    pub fn tool_result(
        call_id: impl Into<String>, tool: impl Into<String>, content: impl Into<String>,
    ) -> Self {
        Self::of_tool(Role::Tool, call_id.into(), tool.into(), content)
    }

    /// A message of a tool call (its call or its result) named by `call_id` and `tool`.
    fn of_tool(role: Role, call_id: String, tool: String, content: impl Into<String>) -> Self {
        let mut m = Self::new(role, content);
        m.tool_call_id = Some(call_id);
        m.tool_name = Some(tool);
        m
    }

    crate::setters! {
        /// Sets the id.
        pub fn with_id(id: MessageId) { self.id = id }

        /// Sets the timestamp (truncated to microseconds).
        pub fn with_timestamp(timestamp: DateTime<Utc>) { self.timestamp = timestamp.trunc_subsecs(6) }
    }

    metadata_builder!();

    /// Whether this is a tool's result (which must follow its call).
    pub fn is_tool_result(&self) -> bool {
        self.role == Role::Tool
    }

    /// Whether this message calls a tool.
    pub fn is_tool_call(&self) -> bool {
        self.role != Role::Tool && self.tool_call_id.is_some()
    }

    /// Checks that every backend can store this message and read it back equal: the one rule
    /// for what is storable, applied on the way in by the validation layer.
    ///
    /// The id was validated when the [`MessageId`] was built. An agent's name must be what
    /// [`Role::parse`] reads back as that agent: not empty, at most 128 bytes, no control
    /// characters or surrounding spaces, and not a standard role in another case (an agent
    /// called `User` would come back as [`Role::User`]). A tool call id and a tool name are at
    /// most 256 bytes without control characters (identifiers, and PostgreSQL text cannot hold
    /// a NUL). Metadata nests at most [`MAX_METADATA_DEPTH`] levels (deeper JSON is refused by
    /// the readers of JSON and BSON).
    pub fn validate(&self) -> Result<()> {
        for (what, value) in [
            ("tool_call_id", &self.tool_call_id),
            ("tool_name", &self.tool_name),
        ] {
            if let Some(v) = value {
                if v.len() > 256 || v.chars().any(char::is_control) {
                    return Err(Error::invalid_input(format!(
                        "invalid {what} {:?}: it must be at most 256 bytes without control characters",
                        v.chars().take(40).collect::<String>()
                    )));
                }
            }
        }
        if let Role::Agent(name) = &self.role {
            match Role::parse(name)? {
                Role::Agent(_) => {}
                standard => {
                    return Err(Error::invalid_input(format!(
                        "invalid role {name:?}: an agent may not be named after the standard role `{standard}`"
                    )))
                }
            }
        }
        check_metadata_depth("message metadata", &self.metadata)
    }
}

/// A session's summary, as listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// The session's id.
    pub id: SessionId,
    /// How many messages it holds now (archived ones not counted).
    pub message_count: u64,
    /// When it was first written.
    pub created_at: DateTime<Utc>,
    /// When it was last written.
    pub updated_at: DateTime<Utc>,
    /// Its title, owner and tags.
    #[serde(default, skip_serializing_if = "SessionLabels::is_empty")]
    pub labels: SessionLabels,
    /// When it expires (never when `None`); an expired session is gone for every reader.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
}

impl SessionInfo {
    /// A session summary without labels or expiry.
    pub fn new(
        id: SessionId, message_count: u64, created_at: DateTime<Utc>, updated_at: DateTime<Utc>,
    ) -> Self {
        SessionInfo {
            id,
            message_count,
            created_at,
            updated_at,
            labels: SessionLabels::default(),
            expires_at: None,
        }
    }

    /// Whether the session has expired at `now`.
    pub fn is_expired_at(&self, now: DateTime<Utc>) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }
}

/// A session: its messages (all, or the last N) and metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    /// The session's id.
    pub id: SessionId,
    /// The messages loaded, oldest first.
    pub messages: Vec<Message>,
    /// Session metadata, as last given to `save_session`.
    #[serde(default)]
    pub metadata: Metadata,
    /// When it was first written.
    pub created_at: DateTime<Utc>,
    /// When it was last written.
    pub updated_at: DateTime<Utc>,
    /// How many messages the session holds in all (more than `messages.len()` under a limit).
    pub total_messages: u64,
    /// Its title, owner and tags.
    #[serde(default, skip_serializing_if = "SessionLabels::is_empty")]
    pub labels: SessionLabels,
    /// When it expires (never when `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
}

impl Session {
    /// The summary of this session.
    pub fn info(&self) -> SessionInfo {
        SessionInfo {
            id: self.id.clone(),
            message_count: self.total_messages,
            created_at: self.created_at,
            updated_at: self.updated_at,
            labels: self.labels.clone(),
            expires_at: self.expires_at,
        }
    }
}

/// An archive's summary, as listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArchiveInfo {
    /// The archive's id, unique within its session.
    pub id: ArchiveId,
    /// The session it was compacted out of.
    pub session: SessionId,
    /// When the compaction happened.
    pub created_at: DateTime<Utc>,
    /// How many messages it holds.
    pub message_count: u64,
}

/// A transcript that compaction moved out of a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Archive {
    /// Its summary.
    pub info: ArchiveInfo,
    /// The messages as they were before compaction, oldest first.
    pub messages: Vec<Message>,
}

crate::name_enum! {
    /// What kind of memory an item is, stored by name: `short_term`, `long_term`, `fact`,
    /// `insight`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    #[non_exhaustive]
    pub enum MemoryKind {
        /// Working memory for the current task.
        ShortTerm = "short_term",
        /// Kept across sessions.
        LongTerm = "long_term",
        /// A fact extracted from conversation (auto-memory).
        Fact = "fact",
        /// A learned pattern or insight (learning).
        Insight = "insight",
    }
    from_str("memory kind");
}

/// One remembered item: a fact, an insight, or a note stored by hand.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryItem {
    /// Unique id.
    pub id: MemoryId,
    /// What kind of memory it is.
    pub kind: MemoryKind,
    /// Whose item it is (the global scope when unset): see [`MemoryScope`].
    #[serde(default, skip_serializing_if = "MemoryScope::is_global")]
    pub scope: MemoryScope,
    /// An optional key, unique per scope and kind: storing an item with the same scope, kind
    /// and key replaces the earlier one (so "my name is Bob" replaces "Alice").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The remembered text.
    pub text: String,
    /// Anything else (importance, source session, counts).
    #[serde(default, skip_serializing_if = "Metadata::is_empty")]
    pub metadata: Metadata,
    /// When it was first stored.
    pub created_at: DateTime<Utc>,
    /// When it was last replaced.
    pub updated_at: DateTime<Utc>,
    /// When it expires (never when `None`). From then on it is gone for every reader: `get`,
    /// listings and searches skip it, a put with its key starts afresh, and a purge deletes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
}

impl MemoryItem {
    /// A new item of `kind` with `text`, a fresh id and the current time.
    pub fn new(kind: MemoryKind, text: impl Into<String>) -> Self {
        let t = now();
        MemoryItem {
            id: MemoryId::random(),
            kind,
            scope: MemoryScope::global(),
            key: None,
            text: text.into(),
            metadata: Metadata::new(),
            created_at: t,
            updated_at: t,
            expires_at: None,
        }
    }

    crate::setters! {
        /// Sets the scope (see [`MemoryItem::scope`]).
        pub fn in_scope(scope: MemoryScope) { self.scope = scope }

        /// Sets the expiry time (see [`MemoryItem::expires_at`]).
        pub fn expiring_at(at: DateTime<Utc>) { self.expires_at = Some(at) }
    }

    /// Makes the item expire `ttl` after its creation time; a time to live too long for a
    /// timestamp leaves it without expiry.
    pub fn expiring_in(mut self, ttl: std::time::Duration) -> Self {
        self.expires_at = chrono::Duration::from_std(ttl)
            .ok()
            .and_then(|ttl| self.created_at.checked_add_signed(ttl));
        self
    }

    /// Whether `other` holds the key this item would take: both have a key, and the same
    /// scope, kind and key (the upsert-by-key rule of
    /// [`MemoryStore::put_memory`](crate::MemoryStore::put_memory)).
    pub fn shares_key_with(&self, other: &MemoryItem) -> bool {
        self.key.is_some()
            && self.key == other.key
            && self.kind == other.kind
            && self.scope == other.scope
    }

    /// Whether the item has expired at `now`.
    pub fn is_expired_at(&self, now: DateTime<Utc>) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }

    /// Sets the key (see [`MemoryItem::key`]).
    pub fn with_key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    metadata_builder!();

    /// Checks the key (1-256 bytes, no control characters), the scope's parts (see
    /// [`MemoryScope::validate`]) and the metadata's depth (as for messages); the id was
    /// validated when the [`MemoryId`] was built.
    pub fn validate(&self) -> Result<()> {
        check_metadata_depth("memory metadata", &self.metadata)?;
        self.scope.validate()?;
        if let Some(key) = &self.key {
            if key.is_empty() || key.len() > 256 || key.chars().any(char::is_control) {
                return Err(Error::invalid_input(
                    "invalid memory key: it must be 1-256 bytes without control characters",
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_round_trip_as_strings() {
        for (role, s) in [
            (Role::System, "\"system\""),
            (Role::User, "\"user\""),
            (Role::Assistant, "\"assistant\""),
            (Role::Tool, "\"tool\""),
            (Role::Agent("ResearchAgent".into()), "\"ResearchAgent\""),
        ] {
            assert_eq!(serde_json::to_string(&role).unwrap(), s);
            assert_eq!(serde_json::from_str::<Role>(s).unwrap(), role);
        }
        assert_eq!(Role::parse("User").unwrap(), Role::User);
        assert!(Role::parse("bad\nrole").is_err());
        assert!(Role::parse("").is_err());
    }

    #[test]
    fn message_json_round_trip_is_exact() {
        let m = Message::tool_result("call_1", "search", "ünïcødé ✓\n---\n### x")
            .with_metadata("k", serde_json::json!({"nested": [1, 2]}));
        let json = serde_json::to_string(&m).unwrap();
        let back: Message = serde_json::from_str(&json).unwrap();
        assert_eq!(back, m);
        assert!(m.is_tool_result() && !m.is_tool_call());
        assert!(Message::tool_call("c", "t", "{}").is_tool_call());
    }

    #[test]
    fn memory_kind_parses_and_lists_valid_kinds() {
        assert_eq!("fact".parse::<MemoryKind>().unwrap(), MemoryKind::Fact);
        let err = "facts".parse::<MemoryKind>().unwrap_err();
        assert!(err
            .to_string()
            .contains("short_term, long_term, fact, insight"));
    }

    #[test]
    fn archive_ids_are_validated() {
        assert!(ArchiveId::new("history_2026-04-20_14-30-45").is_ok());
        assert!(ArchiveId::new("../x").is_err());
        assert!(serde_json::from_str::<ArchiveId>("\"a/b\"").is_err());
    }
}
