//! Sessions, their messages and archives, and message hits: what the scripts are given and
//! how their replies (and the pipelines' replies) are read back. The operations themselves
//! are the `AgentMemory` methods in `store.rs`.

use agentmem_core::history::trim_orphans;
use agentmem_core::support::{micros, parse_micros, stored_archive_id, stored_session_id};
use agentmem_core::{
    Archive, ArchiveId, ArchiveInfo, Error, Message, MessageHit, MessageId, Metadata, Result,
    Session, SessionId, SessionInfo, SessionLabels,
};
use chrono::{DateTime, Utc};
use redis::{Script, ScriptInvocation};

use crate::error::{corrupt_json, encode_json};
use crate::keys::Keys;
use crate::search::{parse_score, BatchIndex};
use crate::store::sorted_rows;

/// How many sessions one purge script deletes before handing control back to the server.
pub(crate) const PURGE_BATCH: u32 = 128;

/// What the `load` pipeline returns: the meta hash's `created`, `updated`, `metadata`,
/// `title`, `owner`, `tags` and `expires`, the number of messages, and the window of them
/// asked for.
pub(crate) type LoadReply = (Vec<Option<String>>, u64, Vec<Vec<u8>>);

/// The meta fields `load` reads, in the order [`session_from`] expects.
pub(crate) const LOAD_FIELDS: [&str; 7] = [
    "created", "updated", "metadata", "title", "owner", "tags", "expires",
];

/// A session's summary as the scripts return it (`info_row` in `prelude.lua`): id, message
/// count, then the meta's `created`, `updated`, `title`, `owner`, `tags` (JSON) and
/// `expires`.
pub(crate) type InfoRow = (
    String,
    u64,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

/// The labels stored in a session's meta hash (`tags` is a JSON object of strings).
fn labels_from(
    title: Option<String>, owner: Option<String>, tags: Option<String>,
) -> Result<SessionLabels> {
    let tags = match tags {
        Some(json) => serde_json::from_str(&json).map_err(|e| corrupt_json("session tags", e))?,
        None => Default::default(),
    };
    Ok(SessionLabels { title, owner, tags })
}

/// A stored expiry time (microseconds), if any.
fn expiry_from(expires: Option<String>) -> Result<Option<DateTime<Utc>>> {
    expires.map(|e| parse_micros(&e, "expiry time")).transpose()
}

/// A session's summary from a script's row (see [`InfoRow`]).
pub(crate) fn info_from(row: InfoRow) -> Result<SessionInfo> {
    let (id, count, created, updated, title, owner, tags, expires) = row;
    let created = created
        .ok_or_else(|| Error::corrupt(format!("session {id:?} is listed but has no meta")))?;
    let (created_at, updated_at) = times(&created, updated)?;
    Ok(SessionInfo {
        labels: labels_from(title, owner, tags)?,
        expires_at: expiry_from(expires)?,
        id: stored_session_id(id)?,
        message_count: count,
        created_at,
        updated_at,
    })
}

/// A script's reply of one [`InfoRow`] (a `redis::Value`), read as a summary.
pub(crate) fn info_from_value(value: redis::Value) -> Result<SessionInfo> {
    let row: InfoRow = redis::from_redis_value(value)
        .map_err(|e| Error::corrupt(format!("unreadable session summary from Redis: {e}")))?;
    info_from(row)
}

/// An invocation of `script`, which writes `messages` to `session` at `at`: ARGV is the
/// prefix, the session, the time, `extra`, the messages' index (see [`push_index`]), then
/// the messages.
/// Every message is encoded before anything is sent (the Validate layer has checked them).
pub(crate) fn write_messages<'s>(
    script: &'s Script, keys: &Keys, session: &SessionId, at: DateTime<Utc>, extra: &[&str],
    messages: &[Message],
) -> Result<ScriptInvocation<'s>> {
    let index = BatchIndex::new(messages.iter().map(|m| m.content.as_str()));
    write_indexed(script, keys, session, at, extra, messages, &index)
}

/// [`write_messages`] with the messages' index given (tests write the index of older schema
/// versions with it).
pub(crate) fn write_indexed<'s>(
    script: &'s Script, keys: &Keys, session: &SessionId, at: DateTime<Utc>, extra: &[&str],
    messages: &[Message], index: &BatchIndex,
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
    push_index(&mut inv, index);
    for json in &encoded {
        inv.arg(json);
    }
    Ok(inv)
}

/// Adds a batch's index as `index_batch` in `prelude.lua` reads it: the term count (every
/// occurrence), the number of distinct terms, then each term and its postings.
pub(crate) fn push_index(inv: &mut ScriptInvocation<'_>, index: &BatchIndex) {
    inv.arg(index.words).arg(index.postings.len());
    for (term, postings) in &index.postings {
        inv.arg(term).arg(postings);
    }
}

/// The start of every stored message with id `id`: serde writes a message's id first, so its
/// JSON begins `{"id":"…",` (the scripts find a message by this prefix).
pub(crate) fn id_prefix(id: &MessageId) -> Result<String> {
    let id = serde_json::to_string(id).map_err(|e| encode_json("a message id", e))?;
    Ok(format!("{{\"id\":{id},"))
}

/// Messages as stored (JSON), read back.
pub(crate) fn parse_messages(raw: Vec<Vec<u8>>) -> Result<Vec<Message>> {
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

/// The session `load` read; `None` when it has no meta hash (it does not exist) or has
/// expired at `at`.
pub(crate) fn session_from(
    session: &SessionId, reply: LoadReply, at: DateTime<Utc>,
) -> Result<Option<Session>> {
    let (fields, total, raw) = reply;
    let mut fields = fields.into_iter();
    let mut next = || fields.next().flatten();
    let (Some(created), updated, metadata, title, owner, tags, expires) =
        (next(), next(), next(), next(), next(), next(), next())
    else {
        return Ok(None);
    };
    let expires_at = expiry_from(expires)?;
    if expires_at.is_some_and(|t| t <= at) {
        return Ok(None);
    }
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
        labels: labels_from(title, owner, tags)?,
        expires_at,
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

/// The sessions `list_sessions.lua` returns (see [`InfoRow`]), by id.
pub(crate) fn session_infos(rows: Vec<InfoRow>) -> Result<Vec<SessionInfo>> {
    sorted_rows(rows, info_from, |s| &s.id)
}

/// The archive a compaction of `session` at `at` made, from the script's reply (the new id
/// and how many messages it took); `NotFound` when the session does not exist.
pub(crate) fn compacted(
    session: &SessionId, at: DateTime<Utc>, archived: Option<(String, u64)>,
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
    session: &SessionId, rows: Vec<(String, Option<String>, u64)>,
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
    session: &SessionId, archive: &ArchiveId, (created, raw): (Option<String>, Vec<Vec<u8>>),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_messages_start_with_their_id_prefix() {
        // The fork and rewind scripts find a message by this prefix, so serde must write the
        // id first, escaped as `id_prefix` escapes it.
        for id in ["m1", "quote\"back\\slash/ü", "a b"] {
            let message = Message::user("x").with_id(MessageId::new(id).expect("valid id"));
            let json = serde_json::to_string(&message).expect("encodes");
            let prefix = id_prefix(&message.id).expect("encodes");
            assert!(json.starts_with(&prefix), "{json} / {prefix}");
        }
    }
}
