//! agentmem messages as a PraisonAI message list ([`render`](super::render)): consecutive
//! tool calls of one role grouped back into one message with `tool_calls`, what the import
//! kept under `praisonai` put back, and what agentmem has and PraisonAI has not (ids that
//! cannot be derived again, times, call metadata) recorded under `agentmem`.

use std::collections::HashMap;

use agentmem_core::{Message, Metadata, Role, SessionId};
use serde_json::{json, Map, Value};

use super::{derived_message_id, take_object, to_epoch, MessageFile, AGENTMEM_KEY, PRAISONAI_KEY};

/// The PraisonAI messages of `messages` (the list named `list_name`, for derived ids). `names`
/// maps the call ids written so far to their tool names, so that a tool result whose tool is
/// the one its call names needs no record.
pub(super) fn export_list(
    messages: &[Message], session: &SessionId, list_name: &str, names: &mut HashMap<String, String>,
) -> Vec<MessageFile> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        let index = out.len();
        let derived = |k: usize| derived_message_id(session, list_name, index, k);
        let first = &messages[i];
        let head = Head::of(first);
        if first.is_tool_call() && head.keep.get("bare_tool_call_id") != Some(&Value::Bool(true)) {
            let end = group_end(messages, i, &head.keep);
            out.push(export_calls(&messages[i..end], head, derived, names));
            i = end;
        } else {
            out.push(export_plain(first, head, derived, names));
            i += 1;
        }
    }
    out
}

/// What a PraisonAI message takes from its first agentmem message.
struct Head {
    /// Its metadata without the `praisonai` key.
    metadata: Metadata,
    /// Its `metadata.praisonai`: what the import kept.
    keep: Map<String, Value>,
    /// Its time as epoch seconds; none when the imported message had none.
    timestamp: Option<f64>,
    /// The PraisonAI message's unknown fields, as imported.
    extra: Map<String, Value>,
}

impl Head {
    fn of(first: &Message) -> Head {
        let mut metadata = first.metadata.clone();
        let keep = take_object(&mut metadata, PRAISONAI_KEY);
        let timestamp = if keep.get("no_timestamp") == Some(&Value::Bool(true)) {
            None
        } else {
            Some(to_epoch(first.timestamp))
        };
        let extra = match keep.get("extra") {
            Some(Value::Object(o)) => o.clone(),
            _ => Map::new(),
        };
        Head {
            metadata,
            keep,
            timestamp,
            extra,
        }
    }

    /// The PraisonAI message of `role` with `content`, this head's time, unknown fields and
    /// metadata, and under `agentmem` the record `agentmem` (left out when empty); without
    /// tool calls or a call id, which the caller sets.
    fn message(self, role: &Role, content: Value, agentmem: Map<String, Value>) -> MessageFile {
        let mut metadata = self.metadata;
        if !agentmem.is_empty() {
            metadata.insert(AGENTMEM_KEY.into(), Value::Object(agentmem));
        }
        MessageFile {
            role: role.as_str().to_string(),
            content,
            timestamp: self.timestamp,
            metadata,
            tool_calls: None,
            tool_call_id: None,
            extra: self.extra,
        }
    }
}

/// Where the group of tool calls starting at `messages[i]` ends: consecutive tool calls of one
/// role, as many as the import's marker (`keep.calls`) says, none that starts a group of its
/// own.
fn group_end(messages: &[Message], i: usize, keep: &Map<String, Value>) -> usize {
    let first = &messages[i];
    let cap = keep
        .get("calls")
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(usize::MAX);
    let mut end = i + 1;
    while end < messages.len()
        && end - i < cap
        && messages[end].is_tool_call()
        && messages[end].role == first.role
        && !messages[end]
            .metadata
            .get(PRAISONAI_KEY)
            .is_some_and(|p| p.get("calls").is_some() || p.get("bare_tool_call_id").is_some())
    {
        end += 1;
    }
    end
}

/// A message without tool calls (or a tool call the import found without a call list).
fn export_plain(
    first: &Message, head: Head, derived: impl Fn(usize) -> agentmem_core::MessageId,
    names: &HashMap<String, String>,
) -> MessageFile {
    let mut agentmem = Map::new();
    if first.id != derived(0) {
        agentmem.insert("id".into(), Value::String(first.id.to_string()));
    }
    if first.role == Role::Tool {
        let paired = first.tool_call_id.as_ref().and_then(|id| names.get(id));
        if first.tool_name.is_some() && first.tool_name.as_ref() != paired {
            agentmem.insert("tool_name".into(), json!(first.tool_name));
        }
    }
    let content = head
        .keep
        .get("content")
        .cloned()
        .unwrap_or_else(|| Value::String(first.content.clone()));
    MessageFile {
        tool_call_id: first.tool_call_id.clone(),
        ..head.message(&first.role, content, agentmem)
    }
}

/// A group of tool calls: one message with `tool_calls`. Records each call's id with its
/// tool name in `names`.
fn export_calls(
    group: &[Message], head: Head, derived: impl Fn(usize) -> agentmem_core::MessageId,
    names: &mut HashMap<String, String>,
) -> MessageFile {
    let first = &group[0];
    let mut tool_calls = Vec::new();
    let mut call_metadata = Vec::new();
    for (k, m) in group.iter().enumerate() {
        let mut meta = m.metadata.clone();
        let own = if k == 0 {
            head.keep.clone()
        } else {
            take_object(&mut meta, PRAISONAI_KEY)
        };
        tool_calls.push(export_call(m, &own, names));
        if k > 0 {
            call_metadata.push(Value::Object(meta));
        }
    }
    let mut agentmem = Map::new();
    let ids: Vec<&str> = group.iter().map(|m| m.id.as_str()).collect();
    if ids.iter().enumerate().any(|(k, id)| derived(k) != *id) {
        agentmem.insert("ids".into(), json!(ids));
    }
    if group.iter().any(|m| m.timestamp != first.timestamp) {
        let times: Vec<String> = group
            .iter()
            .map(|m| {
                m.timestamp
                    .to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
            })
            .collect();
        agentmem.insert("timestamps".into(), json!(times));
    }
    if call_metadata
        .iter()
        .any(|m| m.as_object().is_some_and(|o| !o.is_empty()))
    {
        agentmem.insert("call_metadata".into(), Value::Array(call_metadata));
    }
    let content = head
        .keep
        .get("content")
        .or_else(|| head.keep.get("text"))
        .cloned()
        .unwrap_or(Value::String(String::new()));
    MessageFile {
        tool_calls: Some(tool_calls),
        ..head.message(&first.role, content, agentmem)
    }
}

/// The `tool_calls` entry of one tool-call message, in OpenAI's field order (`id`, `type`,
/// `function`), with what the import kept of it (`own`) put back.
fn export_call(
    m: &Message, own: &Map<String, Value>, names: &mut HashMap<String, String>,
) -> Value {
    let mut call = match own.get("call") {
        Some(Value::Object(o)) => o.clone(),
        _ => Map::new(),
    };
    let mut function = match call.remove("function") {
        Some(Value::Object(f)) => f,
        _ => Map::new(),
    };
    let name = m.tool_name.clone().unwrap_or_default();
    function.insert("name".into(), Value::String(name.clone()));
    if own.get("no_arguments") != Some(&Value::Bool(true)) {
        let args = if own.get("arguments_json") == Some(&Value::Bool(true)) {
            serde_json::from_str(&m.content).unwrap_or(Value::String(m.content.clone()))
        } else {
            Value::String(m.content.clone())
        };
        function.insert("arguments".into(), args);
    }
    let call_id = m.tool_call_id.clone().unwrap_or_default();
    names.insert(call_id.clone(), name);
    let mut ordered = Map::new();
    ordered.insert("id".into(), Value::String(call_id));
    ordered.insert(
        "type".into(),
        call.remove("type")
            .unwrap_or(Value::String("function".into())),
    );
    ordered.insert("function".into(), Value::Object(function));
    ordered.extend(call);
    Value::Object(ordered)
}
