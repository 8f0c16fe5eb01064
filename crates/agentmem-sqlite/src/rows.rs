//! Converting model values to columns and back.
//!
//! Timestamps are integer microseconds since the Unix epoch (the model's precision, so a round
//! trip is exact); metadata is JSON text (`NULL` when empty); roles and kinds are their stored
//! names; a memory item's scope is its [stored form](MemoryScope::stored_form) (`''` for the
//! global scope) and a missing expiry time is `NULL`; a session's tags are rows of their own,
//! read back as one JSON object. A malformed value becomes a typed
//! `CorruptData` error, never a conversion panic.

use std::collections::BTreeMap;

use agentmem_core::{MemoryId, MemoryItem, MemoryScope, Message, MessageId, Metadata, Role};
use chrono::{DateTime, Utc};
use rusqlite::{Row, Rows};
use serde::de::DeserializeOwned;

use crate::error::{corrupt, SqlResult};

/// Message columns, in the order [`message`] expects.
pub(crate) const MESSAGE_COLUMNS: &str =
    "m.message_id, m.role, m.content, m.timestamp, m.tool_call_id, m.tool_name, m.metadata";

/// Memory item columns, in the order [`RawMemory::read`] expects.
pub(crate) const MEMORY_COLUMNS: &str =
    "m.item_id, m.kind, m.key, m.text, m.metadata, m.created_at, m.updated_at, m.scope, m.expires_at";

/// A time as stored.
pub(crate) use agentmem_core::support::micros;

/// A stored time.
pub(crate) fn time(micros: i64) -> SqlResult<DateTime<Utc>> {
    DateTime::from_timestamp_micros(micros).ok_or_else(|| corrupt(format!("timestamp {micros}")))
}

/// Metadata as stored: `None` (SQL `NULL`) when empty.
pub(crate) fn metadata_text(metadata: &Metadata) -> SqlResult<Option<String>> {
    if metadata.is_empty() {
        return Ok(None);
    }
    Ok(Some(
        serde_json::to_string(metadata).map_err(agentmem_core::Error::from)?,
    ))
}

/// Stored metadata.
pub(crate) fn metadata(text: Option<&str>) -> SqlResult<Metadata> {
    json_or_empty(text, "metadata")
}

/// A session's tags, read from the JSON object SQLite's `json_group_object` builds from its
/// tag rows (`NULL` or `{}` without tags).
pub(crate) fn tags(text: Option<&str>) -> SqlResult<BTreeMap<String, String>> {
    json_or_empty(text, "session tags")
}

/// A JSON column holding `what`: empty (the default) when `NULL`, `CorruptData` quoting the
/// start of the text when it does not parse.
fn json_or_empty<T: DeserializeOwned + Default>(text: Option<&str>, what: &str) -> SqlResult<T> {
    match text {
        None => Ok(T::default()),
        Some(text) => serde_json::from_str(text).map_err(|e| {
            corrupt(format!(
                "{what} ({e}): {}",
                text.chars().take(60).collect::<String>()
            ))
        }),
    }
}

/// The message whose [`MESSAGE_COLUMNS`] start at column `at`, decoded straight from the row:
/// the role and metadata are read in place, not copied into `String`s first.
pub(crate) fn message(row: &Row<'_>, at: usize) -> SqlResult<Message> {
    let role = row
        .get_ref(at + 1)?
        .as_str()
        .map_err(|e| corrupt(format!("role ({e})")))?;
    let role = Role::parse(role).map_err(|_| corrupt(format!("role {role:?}")))?;
    let metadata_text = row
        .get_ref(at + 6)?
        .as_str_or_null()
        .map_err(|e| corrupt(format!("metadata ({e})")))?;
    let metadata = metadata(metadata_text)?;
    let id: String = row.get(at)?;
    Ok(Message {
        id: MessageId::new(id).map_err(|e| corrupt(format!("message id: {e}")))?,
        role,
        content: row.get(at + 2)?,
        timestamp: time(row.get(at + 3)?)?,
        tool_call_id: row.get(at + 4)?,
        tool_name: row.get(at + 5)?,
        metadata,
    })
}

/// Every row of `rows`, decoded by `decode`, into a vector first sized for `expected` rows
/// (capped, so a damaged count cannot make it reserve absurd amounts).
pub(crate) fn collect<T>(
    mut rows: Rows<'_>, expected: usize, mut decode: impl FnMut(&Row<'_>) -> SqlResult<T>,
) -> SqlResult<Vec<T>> {
    let mut out = Vec::with_capacity(expected.min(1 << 20));
    while let Some(row) = rows.next()? {
        out.push(decode(row)?);
    }
    Ok(out)
}

/// A memory item row before decoding.
pub(crate) struct RawMemory {
    id: String,
    kind: String,
    key: Option<String>,
    text: String,
    metadata: Option<String>,
    created_at: i64,
    updated_at: i64,
    scope: String,
    expires_at: Option<i64>,
}

impl RawMemory {
    /// Reads [`MEMORY_COLUMNS`] starting at column `at`.
    pub(crate) fn read(row: &Row<'_>, at: usize) -> rusqlite::Result<RawMemory> {
        Ok(RawMemory {
            id: row.get(at)?,
            kind: row.get(at + 1)?,
            key: row.get(at + 2)?,
            text: row.get(at + 3)?,
            metadata: row.get(at + 4)?,
            created_at: row.get(at + 5)?,
            updated_at: row.get(at + 6)?,
            scope: row.get(at + 7)?,
            expires_at: row.get(at + 8)?,
        })
    }

    /// The memory item.
    pub(crate) fn decode(self) -> SqlResult<MemoryItem> {
        Ok(MemoryItem {
            kind: self
                .kind
                .parse()
                .map_err(|_| corrupt(format!("memory kind {:?}", self.kind)))?,
            metadata: metadata(self.metadata.as_deref())?,
            created_at: time(self.created_at)?,
            updated_at: time(self.updated_at)?,
            expires_at: self.expires_at.map(time).transpose()?,
            scope: MemoryScope::from_stored_form(&self.scope)
                .map_err(|_| corrupt(format!("memory scope {:?}", self.scope)))?,
            id: MemoryId::new(self.id).map_err(|e| corrupt(format!("memory id: {e}")))?,
            key: self.key,
            text: self.text,
        })
    }
}

/// A count or limit as SQLite's signed integer (saturating; SQLite treats a negative
/// `LIMIT` as none, so saturation never wraps into "no limit" by accident).
pub(crate) fn sql_int(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A stored count.
pub(crate) fn count(n: i64) -> SqlResult<u64> {
    u64::try_from(n).map_err(|_| corrupt(format!("count {n}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip_exactly() {
        let t = agentmem_core::now();
        assert_eq!(time(micros(t)).unwrap(), t);
        assert!(time(i64::MAX).is_err());
    }

    #[test]
    fn metadata_round_trips_and_empty_is_null() {
        assert_eq!(metadata_text(&Metadata::new()).unwrap(), None);
        let mut m = Metadata::new();
        m.insert("k".into(), serde_json::json!({"a": [1, "ü"]}));
        let text = metadata_text(&m).unwrap();
        assert_eq!(metadata(text.as_deref()).unwrap(), m);
        assert!(metadata(Some("{")).is_err());
        assert!(metadata(Some("[1]")).is_err());
    }
}
