//! Sessions and their live messages: save, append, load, list, delete.
//!
//! A session whose `expires_at` (microseconds) is at or before now is gone: every read here
//! leaves it out (`expires_at IS NULL OR expires_at > now`, now from this process's clock),
//! and a write to its name deletes it first, in the write's own transaction, so the write
//! starts a new session.
//!
//! Every message row carries a per-session sequence number `seq`, handed out from the
//! session's `next_seq` inside the same `IMMEDIATE` transaction that inserts the rows. SQLite
//! admits one writer at a time (across processes too), so sequence numbers follow commit
//! order exactly and a batch gets a contiguous run. Compaction moves rows out of the live set
//! by setting `archive_id`; `seq` keeps growing, so live rows sort after archived ones (except
//! the rows a grown `replace_archive` adds past the archive's own numbers; every read filters
//! by `archive_id`, so order only matters within one archive or the live set).

use std::collections::BTreeMap;

use agentmem_core::{
    history, Error, Message, Metadata, Session, SessionId, SessionInfo, SessionLabels,
};
use rusqlite::types::ValueRef;
use rusqlite::{params, Connection, OptionalExtension, Row};

use crate::error::{corrupt, Failure, SqlResult};
use crate::rows::{self, MESSAGE_COLUMNS};
use crate::tx::Tx;

/// A session row.
pub(crate) struct SessionRow {
    pub(crate) rowid: i64,
    pub(crate) metadata: Option<String>,
    pub(crate) message_count: i64,
    pub(crate) next_seq: i64,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
    pub(crate) title: Option<String>,
    pub(crate) owner: Option<String>,
    pub(crate) expires_at: Option<i64>,
}

impl SessionRow {
    /// Whether the session has expired at `now` (microseconds).
    pub(crate) fn expired(&self, now: i64) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }
}

/// The session named `name`, if stored (expired or not).
pub(crate) fn find(tx: &Connection, name: &str) -> SqlResult<Option<SessionRow>> {
    Ok(tx
        .prepare_cached(
            "SELECT id, metadata, message_count, next_seq, created_at, updated_at,
                    title, owner, expires_at
             FROM agentmem_sessions WHERE name = ?1",
        )?
        .query_row([name], |row| {
            Ok(SessionRow {
                rowid: row.get(0)?,
                metadata: row.get(1)?,
                message_count: row.get(2)?,
                next_seq: row.get(3)?,
                created_at: row.get(4)?,
                updated_at: row.get(5)?,
                title: row.get(6)?,
                owner: row.get(7)?,
                expires_at: row.get(8)?,
            })
        })
        .optional()?)
}

/// The session named `name`, unless it is missing or has expired at `now` (microseconds).
pub(crate) fn find_live(tx: &Connection, name: &str, now: i64) -> SqlResult<Option<SessionRow>> {
    Ok(find(tx, name)?.filter(|row| !row.expired(now)))
}

/// The error for an operation on a session that is missing or has expired.
pub(crate) fn not_found(session: &SessionId, doing: &str) -> Failure {
    Error::not_found(format!(
        "session `{session}` does not exist, so it cannot be {doing}"
    ))
    .into()
}

/// Deletes the session named `name` if it has expired at `now` (its messages, archives and
/// tags go with it), so that a write in the same transaction starts a new session.
pub(crate) fn drop_expired(tx: &Connection, name: &str, now: i64) -> SqlResult<()> {
    tx.prepare_cached("DELETE FROM agentmem_sessions WHERE name = ?1 AND expires_at <= ?2")?
        .execute(params![name, now])?;
    Ok(())
}

/// The tags of session `rowid`.
pub(crate) fn tags(tx: &Connection, rowid: i64) -> SqlResult<BTreeMap<String, String>> {
    Ok(tx
        .prepare_cached("SELECT key, value FROM agentmem_session_tags WHERE session_id = ?1")?
        .query_map([rowid], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?)
}

/// Creates the session when missing and stamps it written at `now`; returns its row id and the
/// next free sequence number.
fn touch(tx: &Connection, name: &str, now: i64) -> SqlResult<(i64, i64)> {
    // MAX keeps `updated_at` from going backwards when clocks of two processes disagree.
    Ok(tx
        .prepare_cached(
            "INSERT INTO agentmem_sessions (name, created_at, updated_at) VALUES (?1, ?2, ?2)
             ON CONFLICT (name) DO UPDATE SET updated_at = MAX(updated_at, excluded.updated_at)
             RETURNING id, next_seq",
        )?
        .query_row(params![name, now], |row| Ok((row.get(0)?, row.get(1)?)))?)
}

/// Inserts `messages` as live rows of session `rowid` from sequence number `first_seq`.
fn insert_rows(tx: &Connection, rowid: i64, first_seq: i64, messages: &[Message]) -> SqlResult<()> {
    insert_rows_into(tx, rowid, None, first_seq.., messages)
}

/// Inserts `messages` as rows of session `rowid`, in archive `archive` (row id; `None`: live),
/// the `i`th with the `i`th of `seqs` (which must hold as many unused, ascending numbers).
pub(crate) fn insert_rows_into(
    tx: &Connection, rowid: i64, archive: Option<i64>, seqs: impl IntoIterator<Item = i64>,
    messages: &[Message],
) -> SqlResult<()> {
    let mut insert = tx.prepare_cached(
        "INSERT INTO agentmem_messages
             (session_id, seq, message_id, role, content, timestamp, tool_call_id, tool_name,
              metadata, archive_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?;
    for (seq, m) in seqs.into_iter().zip(messages) {
        insert.execute(params![
            rowid,
            seq,
            m.id.as_str(),
            m.role.as_str(),
            m.content,
            rows::micros(m.timestamp),
            m.tool_call_id,
            m.tool_name,
            rows::metadata_text(&m.metadata)?,
            archive,
        ])?;
    }
    Ok(())
}

/// Makes `messages` the live rows of session `rowid`, whose live rows are gone, from
/// sequence number `first_seq`: inserts them and records the new `next_seq` and
/// `message_count`, and `updated_at` as `now` (never backwards).
pub(crate) fn replace_live(
    tx: &Connection, rowid: i64, first_seq: i64, messages: &[Message], now: i64,
) -> SqlResult<()> {
    insert_rows(tx, rowid, first_seq, messages)?;
    tx.prepare_cached(
        "UPDATE agentmem_sessions
         SET next_seq = ?2, message_count = ?3, updated_at = MAX(updated_at, ?4)
         WHERE id = ?1",
    )?
    .execute(params![
        rowid,
        first_seq + rows::sql_int(messages.len()),
        rows::sql_int(messages.len()),
        now
    ])?;
    Ok(())
}

/// Appends `messages` in one short transaction.
///
/// One statement creates or stamps the session row and reserves the batch's sequence
/// numbers (adding to `next_seq` and `message_count` and returning where the batch starts);
/// the rows follow.
pub(crate) fn append(conn: &mut Connection, name: &str, messages: &[Message]) -> SqlResult<()> {
    let tx = Tx::immediate(conn)?;
    let now = rows::micros(agentmem_core::now());
    drop_expired(&tx, name, now)?;
    let added = rows::sql_int(messages.len());
    // MAX keeps `updated_at` from going backwards when clocks of two processes disagree.
    let (rowid, first_seq): (i64, i64) = tx
        .prepare_cached(
            "INSERT INTO agentmem_sessions (name, created_at, updated_at, next_seq, message_count)
             VALUES (?1, ?2, ?2, 1 + ?3, ?3)
             ON CONFLICT (name) DO UPDATE SET
                 updated_at = MAX(updated_at, excluded.updated_at),
                 next_seq = next_seq + excluded.message_count,
                 message_count = message_count + excluded.message_count
             RETURNING id, next_seq - ?3",
        )?
        .query_row(params![name, now, added], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })?;
    insert_rows(&tx, rowid, first_seq, messages)?;
    tx.commit()
}

/// Makes the session exactly `history` with `metadata`, in one transaction.
pub(crate) fn save(
    conn: &mut Connection, name: &str, history: &[Message], metadata: &Metadata,
) -> SqlResult<()> {
    let tx = Tx::immediate(conn)?;
    let now = rows::micros(agentmem_core::now());
    drop_expired(&tx, name, now)?;
    let (rowid, next_seq) = touch(&tx, name, now)?;
    let metadata = serde_json::to_string(metadata).map_err(agentmem_core::Error::from)?;
    tx.prepare_cached("UPDATE agentmem_sessions SET metadata = ?2 WHERE id = ?1")?
        .execute(params![rowid, metadata])?;
    tx.prepare_cached(
        "DELETE FROM agentmem_messages WHERE session_id = ?1 AND archive_id IS NULL",
    )?
    .execute([rowid])?;
    replace_live(&tx, rowid, next_seq, history, now)?;
    tx.commit()
}

/// The session columns every read of a session summary selects (from `s`, a row of
/// `agentmem_sessions`), in the order [`SessionHead::read`] expects, ending with the tags as
/// one JSON object (`{}` without tags).
pub(crate) const SESSION_COLUMNS: &str = concat!(
    "s.metadata, s.message_count, s.created_at, s.updated_at, s.title, s.owner, s.expires_at, ",
    "(SELECT json_group_object(t.key, t.value) FROM agentmem_session_tags t ",
    "WHERE t.session_id = s.id)"
);

/// How many columns [`SESSION_COLUMNS`] holds.
pub(crate) const SESSION_COLUMN_COUNT: usize = 8;

/// The last `?2` live messages of the session named `?1`, newest first, each row led by the
/// session's columns; one row of NULL messages for a session without live messages, none
/// for a session that does not exist or has expired at `?3`. The tags' subquery names the
/// session by `?1` rather than by the row, so SQLite runs it once, not once per message.
const LOAD_WINDOW: &str = concat!(
    "SELECT s.metadata, s.message_count, s.created_at, s.updated_at, s.title, s.owner, ",
    "s.expires_at, (SELECT json_group_object(t.key, t.value) FROM agentmem_session_tags t ",
    "WHERE t.session_id = (SELECT id FROM agentmem_sessions WHERE name = ?1)), ",
    "m.message_id, m.role, m.content, m.timestamp, m.tool_call_id, m.tool_name, m.metadata ",
    "FROM agentmem_sessions s LEFT JOIN agentmem_messages m ",
    "ON m.session_id = s.id AND m.archive_id IS NULL ",
    "WHERE s.name = ?1 AND (s.expires_at IS NULL OR s.expires_at > ?3) ",
    "ORDER BY m.seq DESC LIMIT ?2"
);

/// Loads a session (all live messages, or the last `limit`) from one snapshot; `None` when
/// it is missing or has expired.
pub(crate) fn load(
    conn: &mut Connection, id: &SessionId, limit: Option<usize>,
) -> SqlResult<Option<Session>> {
    let now = rows::micros(agentmem_core::now());
    match limit {
        Some(limit) if limit > 0 => load_window(conn, id, limit, now),
        _ => load_all(conn, id, limit, now),
    }
}

/// Loads the session with its last `limit` (at least 1) messages, in one statement (so from
/// one snapshot, without a transaction of its own).
fn load_window(
    conn: &Connection, id: &SessionId, limit: usize, now: i64,
) -> SqlResult<Option<Session>> {
    let mut stmt = conn.prepare_cached(LOAD_WINDOW)?;
    let mut rows = stmt.query(params![id.as_str(), rows::sql_int(limit), now])?;
    let Some(first) = rows.next()? else {
        return Ok(None);
    };
    let head = SessionHead::read(first, 0)?;
    let total = rows::count(head.message_count)?;
    let mut window = Vec::with_capacity(limit.min(usize::try_from(total).unwrap_or(usize::MAX)));
    // A NULL message id is the LEFT JOIN's row for a session without live messages.
    let at = SESSION_COLUMN_COUNT;
    if first.get_ref(at)? != ValueRef::Null {
        window.push(rows::message(first, at)?);
        while let Some(row) = rows.next()? {
            window.push(rows::message(row, at)?);
        }
    }
    window.reverse();
    let whole = u64::try_from(limit).map_or(true, |limit| limit >= total);
    head.into_session(id, history::trim_orphans(window, whole), total)
}

/// Loads the session with all its live messages (`None`) or none (`Some(0)`), in a read
/// transaction, so the session row, its tags and its messages come from the same snapshot.
fn load_all(
    conn: &Connection, id: &SessionId, limit: Option<usize>, now: i64,
) -> SqlResult<Option<Session>> {
    let tx = Tx::deferred(conn)?;
    let Some(row) = find_live(&tx, id.as_str(), now)? else {
        return Ok(None);
    };
    let total = rows::count(row.message_count)?;
    let messages = match limit {
        None => live_messages(&tx, row.rowid, usize::try_from(total).unwrap_or(usize::MAX))?,
        Some(_) => history::trim_orphans(Vec::new(), total == 0),
    };
    let tags = tags(&tx, row.rowid)?;
    tx.commit()?;
    let head = SessionHead {
        metadata: row.metadata,
        message_count: row.message_count,
        created_at: row.created_at,
        updated_at: row.updated_at,
        labels: SessionLabels {
            title: row.title,
            owner: row.owner,
            tags,
        },
        expires_at: row.expires_at,
    };
    head.into_session(id, messages, total)
}

/// The session columns of a load or listing.
pub(crate) struct SessionHead {
    metadata: Option<String>,
    message_count: i64,
    created_at: i64,
    updated_at: i64,
    labels: SessionLabels,
    expires_at: Option<i64>,
}

impl SessionHead {
    /// Reads [`SESSION_COLUMNS`] starting at column `at`.
    pub(crate) fn read(row: &Row<'_>, at: usize) -> SqlResult<SessionHead> {
        let tags = row
            .get_ref(at + 7)?
            .as_str_or_null()
            .map_err(|e| corrupt(format!("session tags ({e})")))?;
        Ok(SessionHead {
            metadata: row.get(at)?,
            message_count: row.get(at + 1)?,
            created_at: row.get(at + 2)?,
            updated_at: row.get(at + 3)?,
            labels: SessionLabels {
                title: row.get(at + 4)?,
                owner: row.get(at + 5)?,
                tags: rows::tags(tags)?,
            },
            expires_at: row.get(at + 6)?,
        })
    }

    /// The summary of session `id`.
    pub(crate) fn into_info(self, id: SessionId) -> SqlResult<SessionInfo> {
        Ok(SessionInfo {
            id,
            message_count: rows::count(self.message_count)?,
            created_at: rows::time(self.created_at)?,
            updated_at: rows::time(self.updated_at)?,
            labels: self.labels,
            expires_at: self.expires_at.map(rows::time).transpose()?,
        })
    }

    fn into_session(
        self, id: &SessionId, messages: Vec<Message>, total: u64,
    ) -> SqlResult<Option<Session>> {
        Ok(Some(Session {
            labels: self.labels,
            expires_at: self.expires_at.map(rows::time).transpose()?,
            id: id.clone(),
            messages,
            metadata: rows::metadata(self.metadata.as_deref())?,
            created_at: rows::time(self.created_at)?,
            updated_at: rows::time(self.updated_at)?,
            total_messages: total,
        }))
    }
}

/// Every live message of session `rowid` (`expected` of them), oldest first.
fn live_messages(conn: &Connection, rowid: i64, expected: usize) -> SqlResult<Vec<Message>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {MESSAGE_COLUMNS} FROM agentmem_messages m
         WHERE m.session_id = ?1 AND m.archive_id IS NULL ORDER BY m.seq"
    ))?;
    let messages = rows::collect(stmt.query([rowid])?, expected, |row| rows::message(row, 0))?;
    Ok(messages)
}

/// Reads session summaries from rows of `s.name` followed by [`SESSION_COLUMNS`].
pub(crate) fn infos(rows: rusqlite::Rows<'_>) -> SqlResult<Vec<SessionInfo>> {
    rows::collect(rows, 0, |row| {
        let name = row
            .get_ref(0)?
            .as_str()
            .map_err(|e| corrupt(format!("session name ({e})")))?;
        let id = SessionId::new(name).map_err(|_| corrupt(format!("session name {name:?}")))?;
        SessionHead::read(row, 1)?.into_info(id)
    })
}

/// Every session not expired, ordered by id (SQLite's binary collation orders UTF-8 as Rust
/// does).
pub(crate) fn list(conn: &mut Connection) -> SqlResult<Vec<SessionInfo>> {
    let now = rows::micros(agentmem_core::now());
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT s.name, {SESSION_COLUMNS} FROM agentmem_sessions s
         WHERE s.expires_at IS NULL OR s.expires_at > ?1 ORDER BY s.name"
    ))?;
    let infos = infos(stmt.query([now])?)?;
    Ok(infos)
}

/// Deletes a session; its messages and archives go with it (foreign-key cascades).
pub(crate) fn delete(conn: &mut Connection, name: &str) -> SqlResult<bool> {
    let tx = Tx::immediate(conn)?;
    let deleted = tx
        .prepare_cached("DELETE FROM agentmem_sessions WHERE name = ?1")?
        .execute([name])?;
    tx.commit()?;
    Ok(deleted > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{migrated, query_plan as plan, rows};

    #[test]
    fn last_n_and_full_loads_walk_the_live_index_without_sorting() {
        let conn = migrated();
        for sql in [
            LOAD_WINDOW.to_string(),
            format!(
                "SELECT {MESSAGE_COLUMNS} FROM agentmem_messages m
                 WHERE m.session_id = ?1 AND m.archive_id IS NULL ORDER BY m.seq"
            ),
        ] {
            let plan = plan(&conn, &sql);
            assert!(plan.contains("agentmem_messages_live"), "{plan}");
            assert!(!plan.contains("TEMP B-TREE"), "{plan}");
        }
    }

    #[test]
    fn batches_get_contiguous_sequence_numbers_and_counts() {
        let mut conn = migrated();
        let batch: Vec<Message> = (0..3).map(|i| Message::user(format!("{i}"))).collect();
        append(&mut conn, "s", &batch).unwrap();
        append(&mut conn, "s", &batch[..1]).unwrap();
        let seqs: Vec<i64> = rows(
            &conn,
            "SELECT seq FROM agentmem_messages ORDER BY seq",
            [],
            |r| r.get(0),
        );
        assert_eq!(seqs, [1, 2, 3, 4]);
        let row = find(&conn, "s").unwrap().unwrap();
        assert_eq!((row.message_count, row.next_seq), (4, 5));
        save(&mut conn, "s", &batch[..2], &Metadata::new()).unwrap();
        let row = find(&conn, "s").unwrap().unwrap();
        // Sequence numbers are never reused, so live rows always sort after archived ones.
        assert_eq!((row.message_count, row.next_seq), (2, 7));
    }
}
