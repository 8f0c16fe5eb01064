//! Turning messages and memory items into statement parameters and rows back into them.

use std::borrow::Cow;

use agentmem_core::{Error, Message, MessageId, Metadata, Result, Role};
use chrono::{DateTime, Utc};
use tokio_postgres::types::{Json, ToSql};
use tokio_postgres::Row;

use crate::search::tsvector_literal;

/// The columns every message row starts with, in this order (see [`message_from_row`]).
pub(crate) const MESSAGE_COLUMNS: &str =
    "id, role, content, content_raw, ts, tool_call_id, tool_name, metadata";

/// Text as a PostgreSQL `text` value plus, when it contains NUL (which `text` cannot hold),
/// its exact bytes for the `*_raw` column.
pub(crate) fn storable_text(text: &str) -> (Cow<'_, str>, Option<&[u8]>) {
    if text.contains('\0') {
        (
            Cow::Owned(text.replace('\0', "\u{fffd}")),
            Some(text.as_bytes()),
        )
    } else {
        (Cow::Borrowed(text), None)
    }
}

/// Messages laid out column by column, written at one time: the parameters of one
/// multi-row `unnest` insert (see [`params`](Self::params)).
pub(crate) struct MessageColumns<'a> {
    /// When they are written.
    pub at: DateTime<Utc>,
    /// How many there are.
    pub n: i64,
    pub ids: Vec<&'a str>,
    pub roles: Vec<&'a str>,
    pub contents: Vec<Cow<'a, str>>,
    pub raws: Vec<Option<&'a [u8]>>,
    pub timestamps: Vec<DateTime<Utc>>,
    pub tool_call_ids: Vec<Option<&'a str>>,
    pub tool_names: Vec<Option<&'a str>>,
    pub metadata: Vec<Option<Json<&'a Metadata>>>,
    pub tsvs: Vec<String>,
}

impl<'a> MessageColumns<'a> {
    /// Lays `messages`, written at `at`, out, refusing what PostgreSQL `text` cannot hold;
    /// fails before anything is sent. (The validate layer has already checked each message.)
    pub(crate) fn new(messages: &'a [Message], at: DateTime<Utc>) -> Result<Self> {
        Self::laid_out(messages, at, true)
    }

    /// Like [`new`](Self::new), for an archive's messages, which are not searched: no
    /// tsvector is built (`tsvs` stays empty). See [`archived_params`](Self::archived_params).
    pub(crate) fn archived(messages: &'a [Message], at: DateTime<Utc>) -> Result<Self> {
        Self::laid_out(messages, at, false)
    }

    /// `messages` laid out, with their tsvectors when `indexed`.
    fn laid_out(messages: &'a [Message], at: DateTime<Utc>, indexed: bool) -> Result<Self> {
        let n = messages.len();
        let mut c = MessageColumns {
            at,
            n: n as i64,
            ids: Vec::with_capacity(n),
            roles: Vec::with_capacity(n),
            contents: Vec::with_capacity(n),
            raws: Vec::with_capacity(n),
            timestamps: Vec::with_capacity(n),
            tool_call_ids: Vec::with_capacity(n),
            tool_names: Vec::with_capacity(n),
            metadata: Vec::with_capacity(n),
            tsvs: Vec::with_capacity(if indexed { n } else { 0 }),
        };
        for m in messages {
            // Tool ids and names hold no NUL (PostgreSQL text cannot): `Message::validate`.
            let (content, raw) = storable_text(&m.content);
            c.ids.push(&m.id);
            c.roles.push(m.role.as_str());
            c.contents.push(content);
            c.raws.push(raw);
            c.timestamps.push(m.timestamp);
            c.tool_call_ids.push(m.tool_call_id.as_deref());
            c.tool_names.push(m.tool_name.as_deref());
            c.metadata
                .push((!m.metadata.is_empty()).then_some(Json(&m.metadata)));
            if indexed {
                c.tsvs.push(tsvector_literal(&m.content));
            }
        }
        Ok(c)
    }

    /// The bind parameters `$1`..`$12` of the append-shaped statements, for `session`: the
    /// session, time and count, the eight message arrays, then the tsvectors.
    pub(crate) fn params<'p>(&'p self, session: &'p &'p str) -> Vec<&'p (dyn ToSql + Sync)> {
        let head: [&(dyn ToSql + Sync); 3] = [session, &self.at, &self.n];
        [&head[..], &self.message_arrays(), &[&self.tsvs]].concat()
    }

    /// The bind parameters `$1`..`$11` of `fill_archive`: `session`, `archive`, the first
    /// position `first`, then the eight message arrays (no tsvectors).
    pub(crate) fn archived_params<'p>(
        &'p self, session: &'p &'p str, archive: &'p &'p str, first: &'p i64,
    ) -> Vec<&'p (dyn ToSql + Sync)> {
        let head: [&(dyn ToSql + Sync); 3] = [session, archive, first];
        [&head[..], &self.message_arrays()].concat()
    }

    /// The eight message arrays, in the order of the statements' `unnest`.
    fn message_arrays(&self) -> [&(dyn ToSql + Sync); 8] {
        [
            &self.ids,
            &self.roles,
            &self.contents,
            &self.raws,
            &self.timestamps,
            &self.tool_call_ids,
            &self.tool_names,
            &self.metadata,
        ]
    }
}

/// Reads text stored by [`storable_text`].
pub(crate) fn text_from(text: String, raw: Option<Vec<u8>>) -> Result<String> {
    match raw {
        None => Ok(text),
        Some(bytes) => {
            String::from_utf8(bytes).map_err(|_| Error::corrupt("stored text is not valid UTF-8"))
        }
    }
}

/// A column value, with undecodable data reported as corrupt rather than as a driver error.
pub(crate) fn get<'r, T: tokio_postgres::types::FromSql<'r>>(
    row: &'r Row, index: usize,
) -> Result<T> {
    row.try_get(index)
        .map_err(|e| Error::corrupt(format!("column {index} does not decode: {e}")).with_source(e))
}

/// The message in `row`, whose columns from `start` on are [`MESSAGE_COLUMNS`].
pub(crate) fn message_from_row(row: &Row, start: usize) -> Result<Message> {
    // Borrowed from the row: the role only needs parsing, not a copy.
    let role: &str = get(row, start + 1)?;
    let role = Role::parse(role)
        .map_err(|e| Error::corrupt(format!("stored role does not parse: {e}")))?;
    let content = text_from(get(row, start + 2)?, get(row, start + 3)?)?;
    let metadata: Option<Json<Metadata>> = get(row, start + 7)?;
    let id: String = get(row, start)?;
    Ok(Message {
        id: MessageId::new(id)
            .map_err(|e| Error::corrupt(format!("stored message id is invalid: {e}")))?,
        role,
        content,
        timestamp: get(row, start + 4)?,
        tool_call_id: get(row, start + 5)?,
        tool_name: get(row, start + 6)?,
        metadata: metadata.map(|Json(m)| m).unwrap_or_default(),
    })
}

/// The messages in `rows` (a LEFT JOIN: a row without one has NULL in `seq_column`), whose
/// position is in column `seq_column` and whose [`MESSAGE_COLUMNS`] start at `seq_column + 1`,
/// in position order whatever order the rows came in.
pub(crate) fn numbered_messages(rows: &[Row], seq_column: usize) -> Result<Vec<Message>> {
    let mut seqs = Vec::with_capacity(rows.len());
    let mut messages = Vec::with_capacity(rows.len());
    for row in rows {
        if let Some(seq) = get::<Option<i64>>(row, seq_column)? {
            seqs.push(seq);
            messages.push(message_from_row(row, seq_column + 1)?);
        }
    }
    // Rows read in (reverse) index order need no sort, nor a move into a second vector.
    if seqs.windows(2).all(|w| w[0] < w[1]) {
        return Ok(messages);
    }
    if seqs.windows(2).all(|w| w[0] > w[1]) {
        messages.reverse();
        return Ok(messages);
    }
    let mut numbered: Vec<(i64, Message)> = seqs.into_iter().zip(messages).collect();
    numbered.sort_unstable_by_key(|(seq, _)| *seq);
    Ok(numbered.into_iter().map(|(_, m)| m).collect())
}

/// A stored count as `u64`.
pub(crate) fn count(value: i64) -> Result<u64> {
    u64::try_from(value).map_err(|_| Error::corrupt(format!("negative count {value}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_is_kept_aside_exactly() {
        let (text, raw) = storable_text("a\0b");
        assert_eq!(text, "a\u{fffd}b");
        assert_eq!(raw, Some("a\0b".as_bytes()));
        assert!(storable_text("plain").1.is_none());
    }
}
