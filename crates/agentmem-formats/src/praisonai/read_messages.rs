//! A PraisonAI message list as agentmem messages ([`parse`](super::parse)): one message per
//! PraisonAI message, or one per call of a message with `tool_calls`; what agentmem has no
//! field for is kept under the message metadata key `praisonai`.

use std::collections::HashMap;

use agentmem_core::{Error, Message, MessageId, Metadata, Result, Role, SessionId};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use crate::time::parse_iso_time;

use super::{
    corrupt, derived_message_id, from_epoch, take_object, MessageFile, AGENTMEM_KEY, PRAISONAI_KEY,
};

/// The messages of `list` (named `list_name` in errors and derived ids). `fallback` is the time
/// of a message without one; `calls` maps the call ids seen so far to their tool names, so
/// that a tool result can name its tool.
pub(super) fn import_list(
    list: &[MessageFile], source: &str, session: &SessionId, list_name: &str,
    fallback: DateTime<Utc>, calls: &mut HashMap<String, String>,
) -> Result<Vec<Message>> {
    let mut out = Vec::new();
    for (index, p) in list.iter().enumerate() {
        let place = Place {
            source,
            session,
            list_name,
            index,
        };
        let entry = Entry::read(p, place, fallback)?;
        match p.tool_calls.as_deref() {
            Some(tool_calls) if !tool_calls.is_empty() => {
                // The next message also calls tools in the same role: without a marker,
                // export would merge the two into one.
                let merges_with_next = list.get(index + 1).is_some_and(|next| {
                    next.role == p.role && next.tool_calls.as_ref().is_some_and(|c| !c.is_empty())
                });
                import_calls(&entry, tool_calls, merges_with_next, calls, &mut out)?;
            }
            _ => out.push(import_plain(entry, p, calls)?),
        }
    }
    Ok(out)
}

/// Where a PraisonAI message sits: for its errors and its derived ids.
struct Place<'a> {
    source: &'a str,
    session: &'a SessionId,
    list_name: &'a str,
    index: usize,
}

impl Place<'_> {
    /// `CorruptData` naming the file and the message.
    fn at(&self, why: String) -> Error {
        corrupt(
            self.source,
            format!("{}[{}]: {why}", self.list_name, self.index),
        )
    }
}

/// One PraisonAI message, read: what every agentmem message made from it starts from.
struct Entry<'a> {
    place: Place<'a>,
    role: Role,
    /// Its metadata without the `agentmem` key.
    metadata: Metadata,
    /// Its `metadata.agentmem`: the ids, times and call metadata an export recorded.
    agentmem: Map<String, Value>,
    /// What agentmem has no field for, to keep under `praisonai`.
    keep: Map<String, Value>,
    /// Its time, or the fallback when it has none.
    timestamp: DateTime<Utc>,
    /// Its content as text (content that is not a string is also kept whole in `keep`).
    content: String,
}

impl<'a> Entry<'a> {
    fn read(p: &MessageFile, place: Place<'a>, fallback: DateTime<Utc>) -> Result<Entry<'a>> {
        let role = Role::parse(&p.role).map_err(|e| place.at(e.message().to_string()))?;
        let mut metadata = p.metadata.clone();
        let agentmem = take_object(&mut metadata, AGENTMEM_KEY);
        let mut keep = Map::new();
        let timestamp = match p.timestamp {
            Some(t) => {
                from_epoch(t).ok_or_else(|| place.at(format!("timestamp {t} is not a time")))?
            }
            None => {
                keep.insert("no_timestamp".into(), Value::Bool(true));
                fallback
            }
        };
        let content = match &p.content {
            Value::String(s) => s.clone(),
            other => {
                keep.insert("content".into(), other.clone());
                match other {
                    Value::Null => String::new(),
                    v => v.to_string(),
                }
            }
        };
        if !p.extra.is_empty() {
            keep.insert("extra".into(), Value::Object(p.extra.clone()));
        }
        Ok(Entry {
            place,
            role,
            metadata,
            agentmem,
            keep,
            timestamp,
            content,
        })
    }

    /// The id of the `k`-th agentmem message made from this one: the one an export recorded,
    /// else derived from its place.
    fn stored_id(&self, k: usize) -> Result<MessageId> {
        let recorded = self
            .agentmem
            .get("ids")
            .and_then(|ids| ids.get(k))
            .or(if k == 0 {
                self.agentmem.get("id")
            } else {
                None
            });
        match recorded {
            Some(Value::String(id)) => MessageId::new(id.as_str())
                .map_err(|e| self.place.at(format!("metadata.agentmem ids: {e}"))),
            Some(_) => Err(self
                .place
                .at("metadata.agentmem ids must be strings".into())),
            None => Ok(derived_message_id(
                self.place.session,
                self.place.list_name,
                self.place.index,
                k,
            )),
        }
    }

    /// The time of the `k`-th agentmem message made from this one: the one an export
    /// recorded, else the message's.
    fn stored_time(&self, k: usize) -> Result<DateTime<Utc>> {
        match self.agentmem.get("timestamps").and_then(|t| t.get(k)) {
            Some(Value::String(t)) => parse_iso_time(t).ok_or_else(|| {
                self.place
                    .at(format!("metadata.agentmem timestamp {t:?} is not a time"))
            }),
            Some(_) => Err(self
                .place
                .at("metadata.agentmem timestamps must be strings".into())),
            None => Ok(self.timestamp),
        }
    }
}

/// A message without tool calls: one agentmem message.
fn import_plain(
    entry: Entry<'_>, p: &MessageFile, calls: &HashMap<String, String>,
) -> Result<Message> {
    let id = entry.stored_id(0)?;
    let Entry {
        role,
        mut metadata,
        agentmem,
        mut keep,
        timestamp,
        content,
        ..
    } = entry;
    let mut m = Message::new(role.clone(), content)
        .with_id(id)
        .with_timestamp(timestamp);
    m.tool_call_id = p.tool_call_id.clone();
    if role == Role::Tool {
        m.tool_name = match agentmem.get("tool_name") {
            Some(Value::String(s)) => Some(s.clone()),
            _ => p
                .tool_call_id
                .as_ref()
                .and_then(|id| calls.get(id).cloned()),
        };
    } else if m.tool_call_id.is_some() {
        // A tool_call_id on a non-tool message without tool_calls: keep it, and
        // remember that no call list was written.
        keep.insert("bare_tool_call_id".into(), Value::Bool(true));
    }
    if !keep.is_empty() {
        metadata.insert(PRAISONAI_KEY.into(), Value::Object(keep));
    }
    m.metadata = metadata;
    Ok(m)
}

/// A message with tool calls: one agentmem tool-call message per call, pushed to `out`; each
/// call's id is recorded in `calls` with its tool name.
fn import_calls(
    entry: &Entry<'_>, tool_calls: &[Value], merges_with_next: bool,
    calls: &mut HashMap<String, String>, out: &mut Vec<Message>,
) -> Result<()> {
    for (k, call) in tool_calls.iter().enumerate() {
        let call = Call::parse(entry, k, call)?;
        let metadata = call_metadata(entry, k, tool_calls.len(), merges_with_next, call.own);
        calls.insert(call.id.clone(), call.name.clone());
        let mut m = Message::new(entry.role.clone(), call.arguments)
            .with_id(entry.stored_id(k)?)
            .with_timestamp(entry.stored_time(k)?);
        m.tool_call_id = Some(call.id);
        m.tool_name = Some(call.name);
        m.metadata = metadata;
        out.push(m);
    }
    Ok(())
}

/// One entry of `tool_calls`, taken apart.
struct Call {
    id: String,
    name: String,
    arguments: String,
    /// What agentmem has no field for: arguments that were not a string or were missing, and
    /// the call's other fields.
    own: Map<String, Value>,
}

impl Call {
    /// The `k`-th call of `entry`: `{"id", "type": "function", "function": {"name",
    /// "arguments"}}`, any other field kept.
    fn parse(entry: &Entry<'_>, k: usize, call: &Value) -> Result<Call> {
        let at = |why: String| entry.place.at(why);
        let mut rest = call
            .as_object()
            .cloned()
            .ok_or_else(|| at(format!("tool_calls[{k}] is not an object")))?;
        let id = match rest.remove("id") {
            Some(Value::String(s)) => s,
            _ => return Err(at(format!("tool_calls[{k}] has no string id"))),
        };
        let mut function = match rest.remove("function") {
            Some(Value::Object(f)) => f,
            _ => return Err(at(format!("tool_calls[{k}] has no function object"))),
        };
        let name = match function.remove("name") {
            Some(Value::String(s)) => s,
            _ => return Err(at(format!("tool_calls[{k}] has no function name"))),
        };
        let mut own = Map::new();
        let arguments = match function.remove("arguments") {
            Some(Value::String(s)) => s,
            Some(other) => {
                own.insert("arguments_json".into(), Value::Bool(true));
                other.to_string()
            }
            None => {
                own.insert("no_arguments".into(), Value::Bool(true));
                String::new()
            }
        };
        if rest.get("type") == Some(&Value::String("function".into())) {
            rest.remove("type");
        }
        if !function.is_empty() {
            rest.insert("function".into(), Value::Object(function));
        }
        if !rest.is_empty() {
            own.insert("call".into(), Value::Object(rest));
        }
        Ok(Call {
            id,
            name,
            arguments,
            own,
        })
    }
}

/// The metadata of the `k`-th of `n` calls of `entry`. The first carries the message's
/// metadata and what the message kept (the group's size when it `merges_with_next`, its
/// text); the others, the call metadata an export recorded. Each adds the call's `own`.
fn call_metadata(
    entry: &Entry<'_>, k: usize, n: usize, merges_with_next: bool, own: Map<String, Value>,
) -> Metadata {
    if k == 0 {
        let mut m = entry.metadata.clone();
        let mut first = entry.keep.clone();
        if merges_with_next {
            first.insert("calls".into(), Value::from(n as u64));
        }
        if !entry.content.is_empty() && !first.contains_key("content") {
            first.insert("text".into(), Value::String(entry.content.clone()));
        }
        first.extend(own);
        if !first.is_empty() {
            m.insert(PRAISONAI_KEY.into(), Value::Object(first));
        }
        m
    } else {
        let mut m = match entry
            .agentmem
            .get("call_metadata")
            .and_then(|c| c.get(k - 1))
        {
            Some(Value::Object(o)) => o.clone(),
            _ => Metadata::new(),
        };
        if !own.is_empty() {
            m.insert(PRAISONAI_KEY.into(), Value::Object(own));
        }
        m
    }
}
