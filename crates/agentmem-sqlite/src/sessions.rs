//! Sessions and their live messages: save, append, load, list, delete.
//!
//! Every message row carries a per-session sequence number `seq`, handed out from the
//! session's `next_seq` inside the same `IMMEDIATE` transaction that inserts the rows. SQLite
//! admits one writer at a time (across processes too), so sequence numbers follow commit
//! order exactly and a batch gets a contiguous run. Compaction moves rows out of the live set
//! by setting `archive_id`; `seq` keeps growing, so live rows always sort after archived ones.

use agentmem_core::{history, Message, Metadata, Session, SessionId, SessionInfo};
use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};

use crate::error::{corrupt, SqlResult};
use crate::rows::{self, RawMessage, MESSAGE_COLUMNS};

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

/// Creates the session when missing and stamps it written now; returns its row id and the
/// next free sequence number.
fn touch(tx: &Transaction<'_>, name: &str) -> SqlResult<(i64, i64)> {
    let now = rows::micros(agentmem_core::now());
    // MAX keeps `updated_at` from going backwards when clocks of two processes disagree.
    Ok(tx
        .prepare_cached(
            "INSERT INTO agentmem_sessions (name, created_at, updated_at) VALUES (?1, ?2, ?2)
             ON CONFLICT (name) DO UPDATE SET updated_at = MAX(updated_at, excluded.updated_at)
             RETURNING id, next_seq",
        )?
        .query_row(params![name, now], |row| Ok((row.get(0)?, row.get(1)?)))?)
}

/// Inserts `messages` as live rows of session `rowid` from sequence number `first_seq`, and
/// records the new `next_seq` and `message_count`.
pub(crate) fn insert_live(
    tx: &Transaction<'_>,
    rowid: i64,
    first_seq: i64,
    messages: &[Message],
    replace_count: bool,
) -> SqlResult<()> {
    let mut insert = tx.prepare_cached(
        "INSERT INTO agentmem_messages
             (session_id, seq, message_id, role, content, timestamp, tool_call_id, tool_name, metadata)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    let mut seq = first_seq;
    for m in messages {
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
        seq += 1;
    }
    let added = rows::sql_int(messages.len());
    let sql = match replace_count {
        true => "UPDATE agentmem_sessions SET next_seq = ?2, message_count = ?3 WHERE id = ?1",
        false => {
            "UPDATE agentmem_sessions SET next_seq = ?2, message_count = message_count + ?3 WHERE id = ?1"
        }
    };
    tx.prepare_cached(sql)?
        .execute(params![rowid, seq, added])?;
    Ok(())
}

/// Appends `messages` in one short transaction.
pub(crate) fn append(conn: &mut Connection, name: &str, messages: &[Message]) -> SqlResult<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let (rowid, next_seq) = touch(&tx, name)?;
    insert_live(&tx, rowid, next_seq, messages, false)?;
    tx.commit()?;
    Ok(())
}

/// Makes the session exactly `history` with `metadata`, in one transaction.
pub(crate) fn save(
    conn: &mut Connection,
    name: &str,
    history: &[Message],
    metadata: &Metadata,
) -> SqlResult<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let (rowid, next_seq) = touch(&tx, name)?;
    let metadata = serde_json::to_string(metadata).map_err(agentmem_core::Error::from)?;
    tx.execute(
        "UPDATE agentmem_sessions SET metadata = ?2 WHERE id = ?1",
        params![rowid, metadata],
    )?;
    tx.execute(
        "DELETE FROM agentmem_messages WHERE session_id = ?1 AND archive_id IS NULL",
        [rowid],
    )?;
    insert_live(&tx, rowid, next_seq, history, true)?;
    tx.commit()?;
    Ok(())
}

/// Loads a session (all live messages, or the last `limit`) from one snapshot.
pub(crate) fn load(
    conn: &mut Connection,
    id: &SessionId,
    limit: Option<usize>,
) -> SqlResult<Option<Session>> {
    // A read transaction: the session row and its messages come from the same snapshot.
    let tx = conn.transaction()?;
    let Some(row) = find(&tx, id.as_str())? else {
        return Ok(None);
    };
    let total = rows::count(row.message_count)?;
    let messages = match limit {
        None => live_messages(&tx, row.rowid)?,
        Some(limit) => {
            let mut window: Vec<Message> = tx
                .prepare_cached(&format!(
                    "SELECT {MESSAGE_COLUMNS} FROM agentmem_messages m
                     WHERE m.session_id = ?1 AND m.archive_id IS NULL
                     ORDER BY m.seq DESC LIMIT ?2"
                ))?
                .query_map(params![row.rowid, rows::sql_int(limit)], |r| {
                    RawMessage::read(r, 0)
                })?
                .map(|raw| raw?.decode())
                .collect::<SqlResult<_>>()?;
            window.reverse();
            let whole = u64::try_from(limit).map_or(true, |limit| limit >= total);
            history::trim_orphans(window, whole)
        }
    };
    tx.finish()?;
    Ok(Some(Session {
        id: id.clone(),
        messages,
        metadata: rows::metadata(row.metadata.as_deref())?,
        created_at: rows::time(row.created_at)?,
        updated_at: rows::time(row.updated_at)?,
        total_messages: total,
    }))
}

/// Every live message of session `rowid`, oldest first.
fn live_messages(conn: &Connection, rowid: i64) -> SqlResult<Vec<Message>> {
    conn.prepare_cached(&format!(
        "SELECT {MESSAGE_COLUMNS} FROM agentmem_messages m
         WHERE m.session_id = ?1 AND m.archive_id IS NULL ORDER BY m.seq"
    ))?
    .query_map([rowid], |r| RawMessage::read(r, 0))?
    .map(|raw| raw?.decode())
    .collect()
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
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let deleted = tx.execute("DELETE FROM agentmem_sessions WHERE name = ?1", [name])?;
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
            format!(
                "SELECT {MESSAGE_COLUMNS} FROM agentmem_messages m
                 WHERE m.session_id = ?1 AND m.archive_id IS NULL ORDER BY m.seq DESC LIMIT ?2"
            ),
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
