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
//! - Only sessions are carried: a session file has no place for memory items or checkpoints
//!   (an export leaves them out).
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

use agentmem_core::{Error, Message, MessageId, Metadata, Result, SessionId};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::document::{derived_id, read_sessions, session_id_from};
use crate::fs::{create_dir_all, find_in_dir, read_text, read_to_string, write_all, write_atomic};
use crate::time::{isoformat, parse_iso_time};
use crate::{ArchiveExport, ExportDocument, Format, SessionExport};

mod read_messages;
mod write_messages;

use read_messages::import_list;
use write_messages::export_list;

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

/// The id of the `k`-th agentmem message made from the PraisonAI message at `index` of
/// `list_name`: what import gives a message agentmem recorded no id for, and what export
/// compares an id with before recording it.
fn derived_message_id(session: &SessionId, list_name: &str, index: usize, k: usize) -> MessageId {
    derived_id(&[
        "praisonai",
        session.as_str(),
        list_name,
        &index.to_string(),
        &k.to_string(),
    ])
}

/// Takes the object under `key` out of `map`; an empty one when there is none (a value under
/// `key` that is not an object stays where it is).
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
    find_in_dir(
        path,
        |entry| {
            let p = entry.path();
            (p.extension().is_some_and(|e| e == "json") && p.is_file()).then_some(p)
        },
        || format!("{}: no *.json session files there", path.display()),
    )
}

/// Writes the session file ([`render`]) to `writer`.
pub fn write<W: Write>(writer: W, session: &SessionExport) -> Result<()> {
    write_all(writer, render(session)?.as_bytes())
}

/// Writes every session of `doc` as `dir/<session id>.json` ([`render`]), each whole (through
/// a temporary file and a rename) and readable by its owner only; [`import`] of `dir` reads
/// them back. PraisonAI session files have no place for memory items or checkpoints:
/// `doc.memories` and `doc.checkpoints` are not written.
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
    archived: Vec<Message>, sizes: Option<&Value>, source: &str,
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

#[cfg(test)]
mod tests {
    use super::*;
    use agentmem_core::Role;

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
