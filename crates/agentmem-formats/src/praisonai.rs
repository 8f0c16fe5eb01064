//! praisonaiagents session files (`{session_id}.json`), both directions.
//!
//! The file PraisonAI's default session store writes:
//!
//! ```text
//! { "session_id": "…",
//!   "messages": [ { "role", "content", "timestamp": <float epoch seconds>, "metadata": {},
//!                   "tool_calls"?: [ {"id", "type": "function", "function": {"name", "arguments"}} ],
//!                   "tool_call_id"?: "…" } ],
//!   "created_at": "<ISO, UTC>", "updated_at": "<ISO, UTC>", "agent_name", "user_id",
//!   "metadata": {}, "gateway_session_id", "agent_id", "runtime_state": {},
//!   "archived_messages": [ …messages… ], "last_compaction"?: {…} }
//! ```
//!
//! # Mapping
//!
//! - A message becomes one agentmem message with the same role, content, time (to the
//!   microsecond), metadata and `tool_call_id`. A tool result's `tool_name` is the name of the
//!   call it answers.
//! - An assistant message with `tool_calls` becomes one agentmem tool-call message per call
//!   (content = the call's `arguments`, `tool_call_id` = its `id`, `tool_name` = its function
//!   name), the first carrying the message's metadata. Export groups consecutive tool calls
//!   of one role back into one message.
//! - `archived_messages` become one archive (several when the file came from agentmem, which
//!   records the split in `metadata.agentmem.archives`).
//! - What agentmem has no field for is kept so that an export of an import gives the same file
//!   content: unknown message fields, non-text content and group boundaries under the
//!   message metadata key `praisonai`; the session's times, agent, user, compaction checkpoint
//!   and unknown fields under the session metadata key `praisonai`. Going the other way,
//!   agentmem ids that cannot be derived again and other agentmem-only fields are written under
//!   a metadata key `agentmem`, which PraisonAI keeps untouched.
//! - PraisonAI keeps no message ids: imported ids are derived from the session id, the list,
//!   the position and the call index, so re-importing a file adds nothing.
//! - Times finer than a microsecond are rounded to the microsecond.
//!
//! ```
//! use agentmem_core::Message;
//! use agentmem_formats::{praisonai, ExportDocument, SessionExport};
//!
//! let mut session = SessionExport::new("chat_1".parse()?);
//! session.messages = vec![
//!     Message::user("What is the weather?"),
//!     Message::tool_call("call_1", "weather", r#"{"city": "Paris"}"#),
//!     Message::tool_result("call_1", "weather", "Sunny"),
//! ];
//! // One file per session: the assistant's tool calls become one message with `tool_calls`.
//! let text = praisonai::render(&session)?;
//! let file: serde_json::Value = serde_json::from_str(&text)?;
//! assert_eq!(file["messages"][1]["tool_calls"][0]["function"]["name"], "weather");
//! assert_eq!(praisonai::parse(&text, "chat_1.json", None)?.messages, session.messages);
//!
//! // A folder of session files, one per session of a document.
//! let dir = tempfile::tempdir()?;
//! let mut doc = ExportDocument::new();
//! doc.sessions.push(session);
//! praisonai::export(&doc, dir.path())?;
//! let back = praisonai::import(dir.path())?;
//! assert_eq!(back.sessions[0].messages, doc.sessions[0].messages);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use agentmem_core::{Error, Message, MessageId, Metadata, Result, Role, SessionId};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::document::{derived_id, read_sessions, session_id_from};
use crate::fs::{create_dir_all, list_dir, read_text, read_to_string, write_all, write_atomic};
use crate::time::{isoformat, parse_iso_time};
use crate::{ArchiveExport, ExportDocument, Format, SessionExport};

/// The metadata key holding what PraisonAI has and agentmem has no field for.
pub const PRAISONAI_KEY: &str = "praisonai";
/// The metadata key holding what agentmem has and PraisonAI has no field for.
pub const AGENTMEM_KEY: &str = "agentmem";
/// Session metadata PraisonAI also copies to the top level of the file.
const PROMOTED_KEYS: [&str; 6] = [
    "model",
    "llm",
    "total_tokens",
    "token_count",
    "cost",
    "source",
];
const MESSAGES: &str = "messages";
const ARCHIVED: &str = "archived_messages";

/// A session file, fields in the order PraisonAI writes them.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct SessionFile {
    session_id: String,
    #[serde(default)]
    messages: Vec<MessageFile>,
    #[serde(default)]
    created_at: Option<String>,
    #[serde(default)]
    updated_at: Option<String>,
    #[serde(default)]
    agent_name: Option<String>,
    #[serde(default)]
    user_id: Option<String>,
    #[serde(default)]
    metadata: Metadata,
    #[serde(default)]
    gateway_session_id: Option<Value>,
    #[serde(default)]
    agent_id: Option<Value>,
    #[serde(default = "empty_object")]
    runtime_state: Value,
    #[serde(default)]
    archived_messages: Vec<MessageFile>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_compaction: Option<Value>,
    #[serde(flatten)]
    extra: Map<String, Value>,
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

/// One message of a session file.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct MessageFile {
    role: String,
    #[serde(default)]
    content: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    timestamp: Option<f64>,
    #[serde(default)]
    metadata: Metadata,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool_calls: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<String>,
    #[serde(flatten)]
    extra: Map<String, Value>,
}

fn corrupt(source: &str, why: impl std::fmt::Display) -> Error {
    Error::corrupt(format!("{source}: {why}"))
}

/// Epoch seconds as a UTC time, rounded to the microsecond.
fn from_epoch(seconds: f64) -> Option<DateTime<Utc>> {
    if !seconds.is_finite() {
        return None;
    }
    let micros = (seconds * 1e6).round();
    // Outside chrono's range (or i64's) is no time at all.
    if micros.abs() > 8.0e18 {
        return None;
    }
    DateTime::from_timestamp_micros(micros as i64)
}

/// A UTC time as epoch seconds.
fn to_epoch(time: DateTime<Utc>) -> f64 {
    time.timestamp_micros() as f64 / 1e6
}

/// A UTC time as Python's `datetime.now(timezone.utc).isoformat()` prints it.
fn python_iso(time: DateTime<Utc>) -> String {
    format!("{}+00:00", isoformat(time))
}

fn take_object(map: &mut Metadata, key: &str) -> Map<String, Value> {
    match map.remove(key) {
        Some(Value::Object(o)) => o,
        Some(other) => {
            // Not ours after all: put it back untouched.
            map.insert(key.to_string(), other);
            Map::new()
        }
        None => Map::new(),
    }
}

/// Parses a session file. `session` overrides the file's `session_id` (which must otherwise be
/// a valid agentmem session id); `source` names the file in errors. The messages are not
/// checked as a store would: [`import`] and [`ExportDocument::validate`] do that.
pub fn parse(text: &str, source: &str, session: Option<SessionId>) -> Result<SessionExport> {
    let mut file: SessionFile = serde_json::from_str(text).map_err(|e| corrupt(source, e))?;
    let id = match session {
        Some(id) => id,
        None => session_id_from(&file.session_id, source)?,
    };
    let created = file.created_at.as_deref().and_then(parse_iso_time);

    let mut bookkeeping = Map::new();
    for (key, value) in [
        ("created_at", file.created_at.take().map(Value::String)),
        ("updated_at", file.updated_at.take().map(Value::String)),
        ("agent_name", file.agent_name.take().map(Value::String)),
        ("user_id", file.user_id.take().map(Value::String)),
        ("gateway_session_id", file.gateway_session_id.take()),
        ("agent_id", file.agent_id.take()),
        ("last_compaction", file.last_compaction.take()),
    ] {
        if let Some(v) = value.filter(|v| !v.is_null()) {
            bookkeeping.insert(key.to_string(), v);
        }
    }
    if file.runtime_state != empty_object() {
        bookkeeping.insert("runtime_state".into(), file.runtime_state.clone());
    }
    // Keys PraisonAI copies from metadata are regenerated on export; others are kept.
    let extra: Map<String, Value> = file
        .extra
        .into_iter()
        .filter(|(k, v)| !(PROMOTED_KEYS.contains(&k.as_str()) && file.metadata.get(k) == Some(v)))
        .collect();
    if !extra.is_empty() {
        bookkeeping.insert("extra".into(), Value::Object(extra));
    }

    let mut metadata = file.metadata;
    let agentmem = take_object(&mut metadata, AGENTMEM_KEY);
    if !bookkeeping.is_empty() {
        metadata.insert(PRAISONAI_KEY.into(), Value::Object(bookkeeping));
    }

    let fallback = created.unwrap_or(DateTime::<Utc>::UNIX_EPOCH);
    let mut calls = std::collections::HashMap::new();
    let archived = import_list(
        &file.archived_messages,
        source,
        &id,
        ARCHIVED,
        fallback,
        &mut calls,
    )?;
    let messages = import_list(&file.messages, source, &id, MESSAGES, fallback, &mut calls)?;

    let mut export = SessionExport::new(id);
    export.metadata = metadata;
    export.messages = messages;
    export.archives = split_archives(archived, agentmem.get("archives"), source)?;
    export.created_at = created;
    Ok(export)
}

/// [`parse`]s everything `reader` yields (UTF-8 text).
pub fn read<R: Read>(reader: R, source: &str, session: Option<SessionId>) -> Result<SessionExport> {
    parse(&read_text(reader, source)?, source, session)
}

/// Reads a session file, or every `*.json` session file in a folder (in name order), each
/// as the session its `session_id` names, and checks the document as
/// [`ExportDocument::validate`] does.
pub fn import(path: impl AsRef<Path>) -> Result<ExportDocument> {
    Format::PraisonAi.import(path)
}

/// [`import`] without the final check; with `session`, `path` must be one session file, read
/// as that session.
pub(crate) fn read_files(path: &Path, session: Option<&SessionId>) -> Result<ExportDocument> {
    let files = session_files(path)?;
    read_sessions(path, files, "session files", session, |file| {
        let text = read_to_string(&file)?;
        parse(&text, &file.display().to_string(), session.cloned())
    })
}

/// A session file, or every `*.json` in a folder of them.
fn session_files(path: &Path) -> Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let files = list_dir(path, |entry| {
        let p = entry.path();
        (p.extension().is_some_and(|e| e == "json") && p.is_file()).then_some(p)
    })?;
    if files.is_empty() {
        return Err(Error::not_found(format!(
            "{}: no *.json session files there",
            path.display()
        )));
    }
    Ok(files)
}

/// Writes the session file ([`render`]) to `writer`.
pub fn write<W: Write>(writer: W, session: &SessionExport) -> Result<()> {
    write_all(writer, render(session)?.as_bytes())
}

/// Writes every session of `doc` as `dir/<session id>.json` ([`render`]), each whole (through
/// a temporary file and a rename) and readable by its owner only; [`import`] of `dir` reads
/// them back. PraisonAI session files have no place for memory items: `doc.memories` is not
/// written.
pub fn export(doc: &ExportDocument, dir: impl AsRef<Path>) -> Result<()> {
    let dir = dir.as_ref();
    create_dir_all(dir)?;
    for session in &doc.sessions {
        let path = dir.join(format!("{}.json", session.id.as_str()));
        write_atomic(&path, render(session)?.as_bytes())?;
    }
    Ok(())
}

/// Splits the archived messages into archives by the sizes agentmem recorded, else one.
fn split_archives(
    archived: Vec<Message>,
    sizes: Option<&Value>,
    source: &str,
) -> Result<Vec<ArchiveExport>> {
    let Some(sizes) = sizes else {
        return Ok(if archived.is_empty() {
            Vec::new()
        } else {
            vec![ArchiveExport::new(archived)]
        });
    };
    let bad = || {
        corrupt(source, "metadata.agentmem.archives must list the archive sizes, summing to the archived messages")
    };
    let sizes: Vec<usize> = sizes
        .as_array()
        .ok_or_else(bad)?
        .iter()
        .map(|n| {
            n.as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(bad)
        })
        .collect::<Result<_>>()?;
    let total = sizes.iter().try_fold(0usize, |sum, n| sum.checked_add(*n));
    if total != Some(archived.len()) {
        return Err(bad());
    }
    let mut rest = archived.into_iter();
    Ok(sizes
        .into_iter()
        .map(|n| ArchiveExport::new(rest.by_ref().take(n).collect()))
        .collect())
}

fn import_list(
    list: &[MessageFile],
    source: &str,
    session: &SessionId,
    list_name: &str,
    fallback: DateTime<Utc>,
    calls: &mut std::collections::HashMap<String, String>,
) -> Result<Vec<Message>> {
    let mut out = Vec::new();
    for (index, p) in list.iter().enumerate() {
        let at = |why: String| corrupt(source, format!("{list_name}[{index}]: {why}"));
        let role = Role::parse(&p.role).map_err(|e| at(e.message().to_string()))?;
        let mut metadata = p.metadata.clone();
        let agentmem = take_object(&mut metadata, AGENTMEM_KEY);
        let mut keep = Map::new();
        let timestamp = match p.timestamp {
            Some(t) => from_epoch(t).ok_or_else(|| at(format!("timestamp {t} is not a time")))?,
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
        let position = index.to_string();
        let derived = |k: usize| {
            derived_id(&[
                "praisonai",
                session.as_str(),
                list_name,
                &position,
                &k.to_string(),
            ])
        };
        let stored_id = |k: usize| -> Result<MessageId> {
            match agentmem
                .get("ids")
                .and_then(|ids| ids.get(k))
                .or(if k == 0 { agentmem.get("id") } else { None })
            {
                Some(Value::String(id)) => MessageId::new(id.as_str())
                    .map_err(|e| at(format!("metadata.agentmem ids: {e}"))),
                Some(_) => Err(at("metadata.agentmem ids must be strings".into())),
                None => Ok(derived(k)),
            }
        };
        let stored_time = |k: usize| -> Result<DateTime<Utc>> {
            match agentmem.get("timestamps").and_then(|t| t.get(k)) {
                Some(Value::String(t)) => parse_iso_time(t)
                    .ok_or_else(|| at(format!("metadata.agentmem timestamp {t:?} is not a time"))),
                Some(_) => Err(at("metadata.agentmem timestamps must be strings".into())),
                None => Ok(timestamp),
            }
        };

        match p.tool_calls.as_deref() {
            Some(tool_calls) if !tool_calls.is_empty() => {
                let n = tool_calls.len();
                // The next message also calls tools in the same role: without a marker,
                // export would merge the two into one.
                let merges_with_next = list.get(index + 1).is_some_and(|next| {
                    next.role == p.role && next.tool_calls.as_ref().is_some_and(|c| !c.is_empty())
                });
                for (k, call) in tool_calls.iter().enumerate() {
                    let mut rest = call
                        .as_object()
                        .cloned()
                        .ok_or_else(|| at(format!("tool_calls[{k}] is not an object")))?;
                    let call_id = match rest.remove("id") {
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
                    let meta = if k == 0 {
                        let mut m = metadata.clone();
                        let mut first = keep.clone();
                        if merges_with_next {
                            first.insert("calls".into(), Value::from(n as u64));
                        }
                        if !content.is_empty() && !first.contains_key("content") {
                            first.insert("text".into(), Value::String(content.clone()));
                        }
                        first.extend(own);
                        if !first.is_empty() {
                            m.insert(PRAISONAI_KEY.into(), Value::Object(first));
                        }
                        m
                    } else {
                        let mut m = match agentmem.get("call_metadata").and_then(|c| c.get(k - 1)) {
                            Some(Value::Object(o)) => o.clone(),
                            _ => Metadata::new(),
                        };
                        if !own.is_empty() {
                            m.insert(PRAISONAI_KEY.into(), Value::Object(own));
                        }
                        m
                    };
                    calls.insert(call_id.clone(), name.clone());
                    let mut m = Message::new(role.clone(), arguments)
                        .with_id(stored_id(k)?)
                        .with_timestamp(stored_time(k)?);
                    m.tool_call_id = Some(call_id);
                    m.tool_name = Some(name);
                    m.metadata = meta;
                    out.push(m);
                }
            }
            _ => {
                let mut m = Message::new(role.clone(), content)
                    .with_id(stored_id(0)?)
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
                out.push(m);
            }
        }
    }
    Ok(out)
}

/// Renders a session as a PraisonAI session file (pretty JSON with a final newline).
pub fn render(session: &SessionExport) -> Result<String> {
    let mut metadata = session.metadata.clone();
    let bookkeeping = take_object(&mut metadata, PRAISONAI_KEY);
    let get_str = |k: &str| {
        bookkeeping
            .get(k)
            .and_then(Value::as_str)
            .map(str::to_string)
    };

    let all_messages = session.all_messages();
    let last_time = all_messages.clone().map(|m| m.timestamp).max();
    let first_time = all_messages.map(|m| m.timestamp).min();
    let created_at = get_str("created_at").unwrap_or_else(|| {
        python_iso(
            session
                .created_at
                .or(first_time)
                .unwrap_or(DateTime::<Utc>::UNIX_EPOCH),
        )
    });
    // The recorded update time, unless messages were added after it.
    let updated_at = match get_str("updated_at") {
        Some(u)
            if parse_iso_time(&u)
                .zip(last_time)
                .is_none_or(|(u, last)| u >= last) =>
        {
            u
        }
        _ => python_iso(
            session
                .updated_at
                .or(last_time)
                .unwrap_or(DateTime::<Utc>::UNIX_EPOCH),
        ),
    };

    let archive_sizes: Vec<usize> = session.archives.iter().map(|a| a.messages.len()).collect();
    if archive_sizes.len() > 1 || archive_sizes.first() == Some(&0) {
        let mut agentmem = take_object(&mut metadata, AGENTMEM_KEY);
        agentmem.insert("archives".into(), json!(archive_sizes));
        metadata.insert(AGENTMEM_KEY.into(), Value::Object(agentmem));
    }

    let mut extra = match bookkeeping.get("extra") {
        Some(Value::Object(o)) => o.clone(),
        _ => Map::new(),
    };
    for key in PROMOTED_KEYS {
        if let Some(v) = metadata.get(key) {
            extra.insert(key.to_string(), v.clone());
        }
    }

    let mut names = std::collections::HashMap::new();
    let archived: Vec<Message> = session
        .archives
        .iter()
        .flat_map(|a| a.messages.iter().cloned())
        .collect();
    let archived_messages = export_list(&archived, &session.id, ARCHIVED, &mut names);
    let messages = export_list(&session.messages, &session.id, MESSAGES, &mut names);

    let file = SessionFile {
        session_id: session.id.as_str().to_string(),
        messages,
        created_at: Some(created_at),
        updated_at: Some(updated_at),
        agent_name: get_str("agent_name"),
        user_id: get_str("user_id"),
        metadata,
        gateway_session_id: Some(
            bookkeeping
                .get("gateway_session_id")
                .cloned()
                .unwrap_or(Value::Null),
        ),
        agent_id: Some(bookkeeping.get("agent_id").cloned().unwrap_or(Value::Null)),
        runtime_state: bookkeeping
            .get("runtime_state")
            .cloned()
            .unwrap_or_else(empty_object),
        archived_messages,
        last_compaction: bookkeeping.get("last_compaction").cloned(),
        extra,
    };
    let mut text = serde_json::to_string_pretty(&file)
        .map_err(|e| Error::backend("cannot serialize the PraisonAI session").with_source(e))?;
    text.push('\n');
    Ok(text)
}

fn export_list(
    messages: &[Message],
    session: &SessionId,
    list_name: &str,
    names: &mut std::collections::HashMap<String, String>,
) -> Vec<MessageFile> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        let index = out.len().to_string();
        let derived = |k: usize| {
            derived_id(&[
                "praisonai",
                session.as_str(),
                list_name,
                &index,
                &k.to_string(),
            ])
        };
        let first = &messages[i];
        let mut metadata = first.metadata.clone();
        let keep = take_object(&mut metadata, PRAISONAI_KEY);
        let mut agentmem = Map::new();
        let timestamp = if keep.get("no_timestamp") == Some(&Value::Bool(true)) {
            None
        } else {
            Some(to_epoch(first.timestamp))
        };
        let extra = match keep.get("extra") {
            Some(Value::Object(o)) => o.clone(),
            _ => Map::new(),
        };

        if first.is_tool_call() && keep.get("bare_tool_call_id") != Some(&Value::Bool(true)) {
            // The group: consecutive tool calls of one role, as many as the marker says.
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
                && !messages[end].metadata.get(PRAISONAI_KEY).is_some_and(|p| {
                    p.get("calls").is_some() || p.get("bare_tool_call_id").is_some()
                })
            {
                end += 1;
            }
            let group = &messages[i..end];
            let mut tool_calls = Vec::new();
            let mut call_metadata = Vec::new();
            for (k, m) in group.iter().enumerate() {
                let mut meta = m.metadata.clone();
                let own = if k == 0 {
                    keep.clone()
                } else {
                    take_object(&mut meta, PRAISONAI_KEY)
                };
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
                // OpenAI's order: id, type, function.
                let mut ordered = Map::new();
                ordered.insert("id".into(), Value::String(call_id));
                ordered.insert(
                    "type".into(),
                    call.remove("type")
                        .unwrap_or(Value::String("function".into())),
                );
                ordered.insert("function".into(), Value::Object(function));
                ordered.extend(call);
                tool_calls.push(Value::Object(ordered));
                if k > 0 {
                    call_metadata.push(Value::Object(meta));
                }
            }
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
            let content = keep
                .get("content")
                .cloned()
                .or_else(|| keep.get("text").cloned())
                .unwrap_or(Value::String(String::new()));
            if !agentmem.is_empty() {
                metadata.insert(AGENTMEM_KEY.into(), Value::Object(agentmem));
            }
            out.push(MessageFile {
                role: first.role.as_str().to_string(),
                content,
                timestamp,
                metadata,
                tool_calls: Some(tool_calls),
                tool_call_id: None,
                extra,
            });
            i = end;
            continue;
        }

        if first.id != derived(0) {
            agentmem.insert("id".into(), Value::String(first.id.to_string()));
        }
        if first.role == Role::Tool {
            let paired = first.tool_call_id.as_ref().and_then(|id| names.get(id));
            if first.tool_name.is_some() && first.tool_name.as_ref() != paired {
                agentmem.insert("tool_name".into(), json!(first.tool_name));
            }
        }
        if !agentmem.is_empty() {
            metadata.insert(AGENTMEM_KEY.into(), Value::Object(agentmem));
        }
        let content = keep
            .get("content")
            .cloned()
            .unwrap_or_else(|| Value::String(first.content.clone()));
        out.push(MessageFile {
            role: first.role.as_str().to_string(),
            content,
            timestamp,
            metadata,
            tool_calls: None,
            tool_call_id: first.tool_call_id.clone(),
            extra,
        });
        i += 1;
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip_to_the_microsecond() {
        for micros in [
            0i64,
            1,
            1_776_700_000_123_456,
            1_776_700_000_999_999,
            -1_500_000,
        ] {
            let t = DateTime::from_timestamp_micros(micros).unwrap();
            assert_eq!(from_epoch(to_epoch(t)), Some(t), "{micros}");
        }
        assert_eq!(from_epoch(f64::NAN), None);
        assert_eq!(from_epoch(1e300), None);
    }

    #[test]
    fn native_session_round_trips_exactly() {
        let mut s = SessionExport::new("native".parse().unwrap());
        s.metadata.insert("model".into(), "gpt-4o".into());
        let call_a = Message::tool_call("c1", "search", "{\"q\":\"a\"}");
        let call_b = Message::tool_call("c2", "fetch", "{}").with_metadata("k", 1);
        let result_a = Message::tool_result("c1", "search", "A");
        let result_b = Message::tool_result("c2", "other-name", "B");
        s.archives = vec![
            ArchiveExport::new(vec![Message::user("old")]),
            ArchiveExport::new(vec![]),
        ];
        s.messages = vec![
            Message::user("hi"),
            call_a,
            call_b,
            result_a,
            result_b,
            Message::new(Role::Agent("Researcher".into()), "done"),
        ];
        let text = render(&s).unwrap();
        let file: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            file["messages"][1]["tool_calls"].as_array().unwrap().len(),
            2
        );
        assert_eq!(file["model"], "gpt-4o");
        let back = parse(&text, "f.json", None).unwrap();
        assert_eq!(back.messages, s.messages);
        assert_eq!(back.archives, s.archives);
        // PraisonAI's own session times are kept on import, beside the metadata.
        let mut meta = back.metadata.clone();
        let times = meta.remove(PRAISONAI_KEY).unwrap();
        assert_eq!(times.as_object().unwrap().len(), 2, "{times}");
        assert_eq!(meta, s.metadata);
        // And from there on, the file is stable.
        assert_eq!(render(&back).unwrap(), text);
    }

    #[test]
    fn call_groups_text_and_odd_fields_come_back() {
        let file = json!({
            "session_id": "g",
            "messages": [
                {"role": "assistant", "content": "Let me check.", "timestamp": 10.0, "metadata": {},
                 "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": {"x": 1}}, "index": 0}]},
                {"role": "assistant", "content": null, "timestamp": 11.0, "metadata": {},
                 "tool_calls": [{"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
                {"role": "tool", "content": "A", "timestamp": 12.0, "metadata": {}, "tool_call_id": "a"},
                {"role": "tool", "content": "B", "metadata": {}, "tool_call_id": "b", "name": "g"}
            ],
            "created_at": "2026-04-20T00:00:00+00:00",
            "updated_at": "2026-04-20T00:00:01+00:00",
            "agent_name": null, "user_id": null, "metadata": {},
            "gateway_session_id": null, "agent_id": null, "runtime_state": {},
            "archived_messages": [],
            "future_field": [1, 2]
        });
        let text = serde_json::to_string(&file).unwrap();
        let s = parse(&text, "g.json", None).unwrap();
        assert_eq!(s.messages.len(), 4);
        assert_eq!(s.messages[0].content, "{\"x\":1}");
        assert_eq!(s.messages[0].tool_name.as_deref(), Some("f"));
        assert_eq!(s.messages[3].tool_name.as_deref(), Some("g"));
        assert!(s.messages[0].is_tool_call() && s.messages[1].is_tool_call());
        let back: Value = serde_json::from_str(&render(&s).unwrap()).unwrap();
        assert_eq!(back, file);
        // Without the timestamp, the message takes the session's creation time.
        assert_eq!(
            s.messages[3].timestamp.to_rfc3339(),
            "2026-04-20T00:00:00+00:00"
        );
    }

    #[test]
    fn any_prefix_or_garbage_is_an_error_not_a_panic() {
        let mut s = SessionExport::new("p".parse().unwrap());
        s.archives = vec![
            ArchiveExport::new(vec![Message::user("a")]),
            ArchiveExport::new(vec![]),
        ];
        s.messages = vec![
            Message::tool_call("c", "t", "{\"x\": 1}"),
            Message::tool_result("c", "t", "r"),
        ];
        let text = render(&s).unwrap();
        for cut in (0..text.len()).filter(|c| text.is_char_boundary(*c)) {
            let _ = parse(&text[..cut], "f", None);
        }
        let huge = text.replacen(
            "\"archives\": [\n        1,\n        0\n      ]",
            "\"archives\": [18446744073709551615, 2]",
            1,
        );
        assert_ne!(huge, text, "the sizes are in the file");
        assert!(parse(&huge, "f", None).is_err());
        for bad in [
            "[]",
            "null",
            "{\"session_id\": 1}",
            "{\"session_id\": \"s\", \"messages\": [{\"role\": \"user\", \"timestamp\": 1e300}]}",
        ] {
            assert!(parse(bad, "f", None).is_err(), "{bad}");
        }
    }

    #[test]
    fn malformed_files_name_the_place() {
        for (text, what) in [
            ("{", "f.json"),
            ("{\"session_id\": \"a/b\"}", "--session"),
            ("{\"session_id\": \"s\", \"messages\": [{\"role\": \"\", \"content\": \"x\"}]}", "messages[0]"),
            ("{\"session_id\": \"s\", \"messages\": [{\"role\": \"assistant\", \"content\": \"\", \"tool_calls\": [{\"id\": 3}]}]}", "messages[0]"),
        ] {
            let err = parse(text, "f.json", None).unwrap_err();
            assert!(err.to_string().contains(what), "{what}: {err}");
        }
    }
}
