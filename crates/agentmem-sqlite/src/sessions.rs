//! Sessions and their live messages: save, append, load, list, delete.
//!
//! Every message row carries a per-session sequence number `seq`, handed out from the
//! session's `next_seq` inside the same `IMMEDIATE` transaction that inserts the rows. SQLite
//! admits one writer at a time (across processes too), so sequence numbers follow commit
//! order exactly and a batch gets a contiguous run. Compaction moves rows out of the live set
//! by setting `archive_id`; `seq` keeps growing, so live rows always sort after archived ones.

use agentmem_core::{history, Message, Metadata, Session, SessionId, SessionInfo};
use rusqlite::types::ValueRef;
use rusqlite::{params, Connection, OptionalExtension, Row};

use crate::error::{corrupt, SqlResult};
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
}

/// The session named `name`, if stored.
pub(crate) fn find(tx: &Connection, name: &str) -> SqlResult<Option<SessionRow>> {
    Ok(tx
        .prepare_cached(
            "SELECT id, metadata, message_count, next_seq, created_at, updated_at
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
            })
        })
        .optional()?)
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
    let mut insert = tx.prepare_cached(
        "INSERT INTO agentmem_messages
             (session_id, seq, message_id, role, content, timestamp, tool_call_id, tool_name, metadata)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    for (seq, m) in (first_seq..).zip(messages) {
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
        ])?;
    }
    Ok(())
}

/// Makes `messages` the live rows of session `rowid`, whose live rows are gone, from
/// sequence number `first_seq`: inserts them and records the new `next_seq` and
/// `message_count`, and `updated_at` as `now` (never backwards).
pub(crate) fn replace_live(
    tx: &Connection,
    rowid: i64,
    first_seq: i64,
    messages: &[Message],
    now: i64,
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
    conn: &mut Connection,
    name: &str,
    history: &[Message],
    metadata: &Metadata,
) -> SqlResult<()> {
    let tx = Tx::immediate(conn)?;
    let now = rows::micros(agentmem_core::now());
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

/// The last `?2` live messages of the session named `?1`, newest first, each row led by the
/// session's columns; one row of NULL messages for a session without live messages, none
/// for a session that does not exist.
const LOAD_WINDOW: &str = concat!(
    "SELECT s.metadata, s.message_count, s.created_at, s.updated_at, ",
    "m.message_id, m.role, m.content, m.timestamp, m.tool_call_id, m.tool_name, m.metadata ",
    "FROM agentmem_sessions s LEFT JOIN agentmem_messages m ",
    "ON m.session_id = s.id AND m.archive_id IS NULL ",
    "WHERE s.name = ?1 ORDER BY m.seq DESC LIMIT ?2"
);

/// Loads a session (all live messages, or the last `limit`) from one snapshot.
pub(crate) fn load(
    conn: &mut Connection,
    id: &SessionId,
    limit: Option<usize>,
) -> SqlResult<Option<Session>> {
    match limit {
        Some(limit) if limit > 0 => load_window(conn, id, limit),
        _ => load_all(conn, id, limit),
    }
}

/// Loads the session with its last `limit` (at least 1) messages, in one statement (so from
/// one snapshot, without a transaction of its own).
fn load_window(conn: &Connection, id: &SessionId, limit: usize) -> SqlResult<Option<Session>> {
    let mut stmt = conn.prepare_cached(LOAD_WINDOW)?;
    let mut rows = stmt.query(params![id.as_str(), rows::sql_int(limit)])?;
    let Some(first) = rows.next()? else {
        return Ok(None);
    };
    let head = SessionHead::read(first)?;
    let total = rows::count(head.message_count)?;
    let mut window = Vec::with_capacity(limit.min(usize::try_from(total).unwrap_or(usize::MAX)));
    // A NULL message id is the LEFT JOIN's row for a session without live messages.
    if first.get_ref(4)? != ValueRef::Null {
        window.push(rows::message(first, 4)?);
        while let Some(row) = rows.next()? {
            window.push(rows::message(row, 4)?);
        }
    }
    window.reverse();
    let whole = u64::try_from(limit).map_or(true, |limit| limit >= total);
    head.into_session(id, history::trim_orphans(window, whole), total)
}

/// Loads the session with all its live messages (`None`) or none (`Some(0)`), in a read
/// transaction, so the session row and its messages come from the same snapshot.
fn load_all(conn: &Connection, id: &SessionId, limit: Option<usize>) -> SqlResult<Option<Session>> {
    let tx = Tx::deferred(conn)?;
    let Some(row) = find(&tx, id.as_str())? else {
        return Ok(None);
    };
    let total = rows::count(row.message_count)?;
    let messages = match limit {
        None => live_messages(&tx, row.rowid, usize::try_from(total).unwrap_or(usize::MAX))?,
        Some(_) => history::trim_orphans(Vec::new(), total == 0),
    };
    tx.commit()?;
    let head = SessionHead {
        metadata: row.metadata,
        message_count: row.message_count,
        created_at: row.created_at,
        updated_at: row.updated_at,
    };
    head.into_session(id, messages, total)
}

/// The session columns of a load.
struct SessionHead {
    metadata: Option<String>,
    message_count: i64,
    created_at: i64,
    updated_at: i64,
}

impl SessionHead {
    /// Reads the first four columns of a [`LOAD_WINDOW`] row.
    fn read(row: &Row<'_>) -> rusqlite::Result<SessionHead> {
        Ok(SessionHead {
            metadata: row.get(0)?,
            message_count: row.get(1)?,
            created_at: row.get(2)?,
            updated_at: row.get(3)?,
        })
    }

    fn into_session(
        self,
        id: &SessionId,
        messages: Vec<Message>,
        total: u64,
    ) -> SqlResult<Option<Session>> {
        Ok(Some(Session {
            // TODO(issue 21): stored labels and expiry.
            labels: Default::default(),
            expires_at: None,
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

/// Every session, ordered by id (SQLite's binary collation orders UTF-8 as Rust does).
pub(crate) fn list(conn: &mut Connection) -> SqlResult<Vec<SessionInfo>> {
    let mut stmt = conn.prepare_cached(
        "SELECT name, message_count, created_at, updated_at FROM agentmem_sessions ORDER BY name",
    )?;
    let raw = stmt
        .query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, i64>(2)?,
                row.get::<_, i64>(3)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    raw.into_iter()
        .map(|(name, count, created, updated)| {
            Ok(SessionInfo {
                // TODO(issue 21): stored labels and expiry.
                labels: Default::default(),
                expires_at: None,
                id: SessionId::new(name.as_str())
                    .map_err(|_| corrupt(format!("session name {name:?}")))?,
                message_count: rows::count(count)?,
                created_at: rows::time(created)?,
                updated_at: rows::time(updated)?,
            })
        })
        .collect()
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
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::schema::query_plan as plan;

    #[test]
    fn last_n_and_full_loads_walk_the_live_index_without_sorting() {
        let mut conn = Connection::open_in_memory().unwrap();
        crate::schema::migrate(&mut conn, "m").unwrap();
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
        let mut conn = Connection::open_in_memory().unwrap();
        crate::schema::migrate(&mut conn, "m").unwrap();
        let batch: Vec<Message> = (0..3).map(|i| Message::user(format!("{i}"))).collect();
        append(&mut conn, "s", &batch).unwrap();
        append(&mut conn, "s", &batch[..1]).unwrap();
        let seqs: Vec<i64> = conn
            .prepare("SELECT seq FROM agentmem_messages ORDER BY seq")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(seqs, [1, 2, 3, 4]);
        let row = find(&conn, "s").unwrap().unwrap();
        assert_eq!((row.message_count, row.next_seq), (4, 5));
        save(&mut conn, "s", &batch[..2], &Metadata::new()).unwrap();
        let row = find(&conn, "s").unwrap().unwrap();
        // Sequence numbers are never reused, so live rows always sort after archived ones.
        assert_eq!((row.message_count, row.next_seq), (2, 7));
    }
}
