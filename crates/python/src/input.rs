//! Data from Python, in agentmem's shape, and data back to Python.
//!
//! Messages arrive as dicts with `role` and `content` and, optionally, `id`, `timestamp`
//! (RFC 3339), `tool_call_id`, `tool_name` and `metadata`: the serde shape of
//! [`Message`], with the id and time filled in when absent. The rules of what is storable are
//! the store's own (its validation layer); this module only reads the shape.

use std::collections::BTreeMap;

use agentmem::{
    MemoryFilter, MemoryKind, MemoryScope, Message, MessageId, Metadata, Role, ScopeFilter,
    SessionId,
};
use chrono::{DateTime, Utc};
use pyo3::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::{invalid, to_py};

/// A message as Python hands it over.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewMessage {
    #[serde(default)]
    id: Option<MessageId>,
    role: Role,
    content: String,
    #[serde(default)]
    timestamp: Option<DateTime<Utc>>,
    #[serde(default)]
    tool_call_id: Option<String>,
    #[serde(default)]
    tool_name: Option<String>,
    #[serde(default)]
    metadata: Option<Metadata>,
}

impl NewMessage {
    fn into_message(self) -> Message {
        let mut message = Message::new(self.role, self.content);
        if let Some(id) = self.id {
            message = message.with_id(id);
        }
        if let Some(timestamp) = self.timestamp {
            message = message.with_timestamp(timestamp);
        }
        message.tool_call_id = self.tool_call_id;
        message.tool_name = self.tool_name;
        message.metadata = self.metadata.unwrap_or_default();
        message
    }
}

/// The messages of a Python list of dicts.
pub fn messages(list: &Bound<'_, PyAny>) -> PyResult<Vec<Message>> {
    let new: Vec<NewMessage> = pythonize::depythonize(list).map_err(|e| invalid("messages", e))?;
    Ok(new.into_iter().map(NewMessage::into_message).collect())
}

/// Any serde value from Python (a dict or list in the value's serde shape).
pub fn value<T: for<'de> Deserialize<'de>>(what: &str, obj: &Bound<'_, PyAny>) -> PyResult<T> {
    pythonize::depythonize(obj).map_err(|e| invalid(what, e))
}

/// A value as plain Python data (dicts, lists, strings, numbers; times as RFC 3339 strings).
pub fn to_python<'py, T: Serialize + ?Sized>(
    py: Python<'py>, value: &T,
) -> PyResult<Bound<'py, PyAny>> {
    pythonize::pythonize(py, value)
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))
}

/// A session id, checked as every store checks it.
pub fn session_id(id: &str) -> PyResult<SessionId> {
    id.parse().map_err(to_py)
}

/// A message id, checked.
pub fn message_id(id: &str) -> PyResult<MessageId> {
    MessageId::new(id).map_err(to_py)
}

/// A memory kind by name (`short_term`, `long_term`, `fact`, `insight`).
pub fn memory_kind(name: &str) -> PyResult<MemoryKind> {
    name.parse().map_err(to_py)
}

/// A serde value from Python when given.
pub fn optional<T: for<'de> Deserialize<'de>>(
    what: &str, obj: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<T>> {
    obj.filter(|o| !o.is_none())
        .map(|o| value(what, o))
        .transpose()
}

/// Which scopes a listing reads: every item without a scope (`ScopeFilter::All`); with one
/// (`{agent, workspace, owner}`), what an agent there sees, or exactly that scope when `exact`.
pub fn scope_filter(scope: Option<&Bound<'_, PyAny>>, exact: bool) -> PyResult<ScopeFilter> {
    Ok(match (optional::<MemoryScope>("scope", scope)?, exact) {
        (None, _) => ScopeFilter::All,
        (Some(scope), true) => ScopeFilter::Exactly(scope),
        (Some(scope), false) => ScopeFilter::VisibleFrom(scope),
    })
}

/// The memory items a listing or search reads: of `kind` (any when `None`), in the scopes
/// [`scope_filter`] reads, at most `limit`.
pub fn memory_filter(
    kind: Option<&str>, scope: Option<&Bound<'_, PyAny>>, exact: bool, limit: Option<usize>,
) -> PyResult<MemoryFilter> {
    Ok(MemoryFilter {
        kind: kind.map(memory_kind).transpose()?,
        scope: scope_filter(scope, exact)?,
        limit,
    })
}

/// Tags as Python gives them, for session queries and patches.
pub type Tags = BTreeMap<String, String>;
