//! Sessions, their messages and archives, and message hits: what the scripts are given and
//! how their replies (and the pipelines' replies) are read back. The operations themselves
//! are the `AgentMemory` methods in `store.rs`.

use agentmem_core::history::trim_orphans;
use agentmem_core::support::{micros, parse_micros, stored_archive_id, stored_session_id};
use agentmem_core::{
    Archive, ArchiveId, ArchiveInfo, Error, Message, MessageHit, Metadata, Result, Session,
    SessionId, SessionInfo,
};
use chrono::{DateTime, Utc};
use redis::{Script, ScriptInvocation};

use crate::error::{corrupt_json, encode_json};
use crate::keys::Keys;
use crate::search::{parse_score, BatchIndex};

/// How many sessions one purge script deletes before handing control back to the server.
pub(crate) const PURGE_BATCH: u32 = 128;

/// What the `load` pipeline returns: the meta hash's `created`, `updated` and `metadata`,
/// the number of messages, and the window of them asked for.
pub(crate) type LoadReply = (Vec<Option<String>>, u64, Vec<Vec<u8>>);

/// An invocation of `script`, which writes `messages` to `session` at `at`: ARGV is the
/// prefix, the session, the time, `extra`, the messages' index (their word count, the number
/// of distinct terms, then each term and its postings; see [`BatchIndex`]), then the
/// messages.
/// Every message is encoded before anything is sent (the Validate layer has checked them).
pub(crate) fn write_messages<'s>(
    script: &'s Script,
    keys: &Keys,
    session: &SessionId,
    at: DateTime<Utc>,
    extra: &[&str],
    messages: &[Message],
) -> Result<ScriptInvocation<'s>> {
    let encoded = messages
        .iter()
        .map(|m| serde_json::to_string(m).map_err(|e| encode_json("a message", e)))
        .collect::<Result<Vec<String>>>()?;
    let mut inv = keys.invoke(script);
    inv.arg(session.as_str()).arg(micros(at));
    for value in extra {
        inv.arg(*value);
    }
    let index = BatchIndex::new(messages.iter().map(|m| m.content.as_str()));
    inv.arg(index.words).arg(index.postings.len());
    for (term, postings) in &index.postings {
        inv.arg(term).arg(postings);
    }
    for json in &encoded {
        inv.arg(json);
    }
    Ok(inv)
}

fn parse_messages(raw: Vec<Vec<u8>>) -> Result<Vec<Message>> {
    raw.iter()
        .map(|bytes| serde_json::from_slice(bytes).map_err(|e| corrupt_json("message", e)))
        .collect()
}

/// The `LRANGE` indexes (inclusive, from the end) of the last `limit` messages; all when
/// `None`. `(1, 0)` is an empty range.
pub(crate) fn window(limit: Option<usize>) -> (i64, i64) {
    match limit {
        None => (0, -1),
        Some(0) => (1, 0),
        Some(n) => (-(i64::try_from(n).unwrap_or(i64::MAX)), -1),
    }
}

/// The session `load` read; `None` when it has no meta hash (it does not exist).
pub(crate) fn session_from(session: &SessionId, reply: LoadReply) -> Result<Option<Session>> {
    let (fields, total, raw) = reply;
    let mut fields = fields.into_iter();
    let (Some(created), updated, metadata) = (
        fields.next().flatten(),
        fields.next().flatten(),
        fields.next().flatten(),
    ) else {
        return Ok(None);
    };
    let (created_at, updated_at) = times(&created, updated)?;
    let metadata: Metadata = match metadata {
        Some(json) => {
            serde_json::from_str(&json).map_err(|e| corrupt_json("session metadata", e))?
        }
        None => Metadata::new(),
    };
    let whole = raw.len() as u64 >= total;
    let messages = trim_orphans(parse_messages(raw)?, whole);
    Ok(Some(Session {
        // TODO(issue 21): stored labels and expiry.
        labels: Default::default(),
        expires_at: None,
        id: session.clone(),
        messages,
        metadata,
        created_at,
        updated_at,
        total_messages: total,
    }))
}

/// A session's creation and update times as its meta hash holds them (no `updated` yet:
/// the creation time).
fn times(created: &str, updated: Option<String>) -> Result<(DateTime<Utc>, DateTime<Utc>)> {
    let created_at = parse_micros(created, "creation time")?;
    let updated_at = match updated {
        Some(u) => parse_micros(&u, "update time")?,
        None => created_at,
    };
    Ok((created_at, updated_at))
}

/// The sessions `list_sessions.lua` returns (id, created, updated, message count), by id.
pub(crate) fn session_infos(
    rows: Vec<(String, Option<String>, Option<String>, u64)>,
) -> Result<Vec<SessionInfo>> {
    let mut sessions = rows
        .into_iter()
        .map(|(id, created, updated, count)| {
            let created = created.ok_or_else(|| {
                Error::corrupt(format!("session {id:?} is listed but has no meta"))
            })?;
            let (created_at, updated_at) = times(&created, updated)?;
            Ok(SessionInfo {
                // TODO(issue 21): stored labels and expiry.
                labels: Default::default(),
                expires_at: None,
                id: stored_session_id(id)?,
                message_count: count,
                created_at,
                updated_at,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    sessions.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(sessions)
}

/// The archive a compaction of `session` at `at` made, from the script's reply (the new id
/// and how many messages it took); `NotFound` when the session does not exist.
pub(crate) fn compacted(
    session: &SessionId,
    at: DateTime<Utc>,
    archived: Option<(String, u64)>,
) -> Result<ArchiveInfo> {
    let (id, count) =
        archived.ok_or_else(|| Error::not_found(format!("session `{session}` does not exist")))?;
    Ok(ArchiveInfo {
        id: ArchiveId::new(id)
            .map_err(|e| Error::corrupt(format!("new archive id is invalid: {e}")))?,
        session: session.clone(),
        created_at: at,
        message_count: count,
    })
}

/// The archives `list_archives.lua` returns (id, created, message count), oldest first.
pub(crate) fn archive_infos(
    session: &SessionId,
    rows: Vec<(String, Option<String>, u64)>,
) -> Result<Vec<ArchiveInfo>> {
    rows.into_iter()
        .map(|(id, created, count)| {
            let created = created
                .ok_or_else(|| Error::corrupt(format!("archive {id:?} has no creation time")))?;
            Ok(ArchiveInfo {
                id: stored_archive_id(id)?,
                session: session.clone(),
                created_at: parse_micros(&created, "archive creation time")?,
                message_count: count,
            })
        })
        .collect()
}

/// The archive the `load_archive` pipeline read (its creation time, its messages);
/// `NotFound` when it has no creation time (it does not exist).
pub(crate) fn archive_from(
    session: &SessionId,
    archive: &ArchiveId,
    (created, raw): (Option<String>, Vec<Vec<u8>>),
) -> Result<Archive> {
    let created = created.ok_or_else(|| {
        Error::not_found(format!(
            "archive `{archive}` of session `{session}` does not exist"
        ))
    })?;
    let messages = parse_messages(raw)?;
    Ok(Archive {
        info: ArchiveInfo {
            id: archive.clone(),
            session: session.clone(),
            created_at: parse_micros(&created, "archive creation time")?,
            message_count: messages.len() as u64,
        },
        messages,
    })
}

/// The hits `search_messages.lua` returns (session, message JSON, score), best first.
pub(crate) fn message_hits(
    rows: Vec<(String, Option<Vec<u8>>, String)>,
) -> Result<Vec<MessageHit>> {
    rows.into_iter()
        .map(|(session, json, score)| {
            let json = json.ok_or_else(|| {
                Error::corrupt(format!(
                    "search index of session {session:?} points past its messages"
                ))
            })?;
            Ok(MessageHit {
                session: stored_session_id(session)?,
                message: serde_json::from_slice(&json).map_err(|e| corrupt_json("message", e))?,
                score: parse_score(&score)?,
            })
        })
        .collect()
}
