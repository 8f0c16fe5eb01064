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
    py: Python<'py>,
    value: &T,
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

/// The scope of an agent, workspace and owner (global when all are `None`).
pub fn scope(
    agent: Option<String>,
    workspace: Option<String>,
    owner: Option<String>,
) -> MemoryScope {
    let mut scope = MemoryScope::global();
    if let Some(agent) = agent {
        scope = scope.with_agent(agent);
    }
    if let Some(workspace) = workspace {
        scope = scope.with_workspace(workspace);
    }
    if let Some(owner) = owner {
        scope = scope.with_owner(owner);
    }
    scope
}

/// A memory listing's filter: a kind, then what the scope arguments select. With no scope
/// argument every item is read (`ScopeFilter::All`); with one, what an agent there sees, or
/// exactly that scope when `exact`.
pub fn memory_filter(
    kind: Option<&str>,
    agent: Option<String>,
    workspace: Option<String>,
    owner: Option<String>,
    exact: bool,
    limit: Option<usize>,
) -> PyResult<MemoryFilter> {
    let any_scope = agent.is_some() || workspace.is_some() || owner.is_some();
    let scope = scope(agent, workspace, owner);
    let scope = match (any_scope, exact) {
        (false, false) => ScopeFilter::All,
        (_, true) => ScopeFilter::Exactly(scope),
        (true, false) => ScopeFilter::VisibleFrom(scope),
    };
    Ok(MemoryFilter {
        kind: kind.map(memory_kind).transpose()?,
        scope,
        limit,
    })
}

/// Tags as Python gives them, for session queries and patches.
pub type Tags = BTreeMap<String, String>;
