//! Fork, rewind, labels and lookup: each call one transaction (`IMMEDIATE` where it writes).
//!
//! Positions are found in SQL rather than by loading the session: a message id names the
//! live row with the highest sequence number carrying it (the last one, as
//! [`agentmem_core::support::fork_end`] and [`rewind_keep`](agentmem_core::support::rewind_keep)
//! pick), and whole ranges of rows are copied or deleted by sequence number. The full-text
//! index follows the inserted and deleted rows through its triggers.

use agentmem_core::support::{fork_target_exists, message_not_found};
use agentmem_core::{
    Error, Message, MessageId, Rewind, SessionId, SessionInfo, SessionLabels, SessionPage,
    SessionPatch, SessionQuery,
};
use rusqlite::types::Value;
use rusqlite::{params, params_from_iter, Connection};

use crate::error::SqlResult;
use crate::rows::{self, MESSAGE_COLUMNS};
use crate::sessions::{self, SESSION_COLUMNS};
use crate::tx::Tx;

/// The sequence number of the last live message of session `rowid` with id `id`, if any.
fn live_seq_of(tx: &Connection, rowid: i64, id: &MessageId) -> SqlResult<Option<i64>> {
    Ok(tx
        .prepare_cached(
            "SELECT max(seq) FROM agentmem_messages
             WHERE session_id = ?1 AND archive_id IS NULL AND message_id = ?2",
        )?
        .query_row(params![rowid, id.as_str()], |row| row.get(0))?)
}

/// Copies `source`'s live messages up to and including `at` (all when `None`), metadata and
/// labels into the new session `target`, in one `IMMEDIATE` transaction. An expired `target`
/// is deleted first; a live one is a `Conflict`.
pub(crate) fn fork(
    conn: &mut Connection, source: &SessionId, target: &SessionId, at: Option<&MessageId>,
) -> SqlResult<SessionInfo> {
    let tx = Tx::immediate(conn)?;
    let now = rows::micros(agentmem_core::now());
    if sessions::find_live(&tx, target.as_str(), now)?.is_some() {
        return Err(fork_target_exists(target).into());
    }
    sessions::drop_expired(&tx, target.as_str(), now)?;
    let from = sessions::find_live(&tx, source.as_str(), now)?
        .ok_or_else(|| sessions::not_found(source, "forked"))?;
    let end = match at {
        None => i64::MAX,
        Some(id) => {
            live_seq_of(&tx, from.rowid, id)?.ok_or_else(|| message_not_found(source, id))?
        }
    };
    // The copies keep their sequence numbers (unique and ordered, gaps do not matter), so
    // the source's `next_seq` is free in the fork too.
    let rowid: i64 = tx
        .prepare_cached(
            "INSERT INTO agentmem_sessions
                 (name, metadata, title, owner, created_at, updated_at, next_seq)
             VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6)
             RETURNING id",
        )?
        .query_row(
            params![
                target.as_str(),
                from.metadata,
                from.title,
                from.owner,
                now,
                from.next_seq
            ],
            |row| row.get(0),
        )?;
    let copied = tx
        .prepare_cached(
            "INSERT INTO agentmem_messages
                 (session_id, seq, message_id, role, content, timestamp, tool_call_id, tool_name,
                  metadata)
             SELECT ?1, seq, message_id, role, content, timestamp, tool_call_id, tool_name,
                    metadata
             FROM agentmem_messages
             WHERE session_id = ?2 AND archive_id IS NULL AND seq <= ?3
             ORDER BY seq",
        )?
        .execute(params![rowid, from.rowid, end])?;
    tx.prepare_cached("UPDATE agentmem_sessions SET message_count = ?2 WHERE id = ?1")?
        .execute(params![rowid, rows::sql_int(copied)])?;
    tx.prepare_cached(
        "INSERT INTO agentmem_session_tags (session_id, key, value)
         SELECT ?1, key, value FROM agentmem_session_tags WHERE session_id = ?2",
    )?
    .execute(params![rowid, from.rowid])?;
    let tags = sessions::tags(&tx, rowid)?;
    tx.commit()?;
    Ok(SessionInfo {
        id: target.clone(),
        message_count: copied as u64,
        created_at: rows::time(now)?,
        updated_at: rows::time(now)?,
        labels: SessionLabels {
            title: from.title,
            owner: from.owner,
            tags,
        },
        expires_at: None,
    })
}

/// Removes the live messages after the rewind point and returns them, oldest first, in one
/// `IMMEDIATE` transaction.
pub(crate) fn rewind(
    conn: &mut Connection, session: &SessionId, to: &Rewind,
) -> SqlResult<Vec<Message>> {
    let tx = Tx::immediate(conn)?;
    let now = rows::micros(agentmem_core::now());
    let row = sessions::find_live(&tx, session.as_str(), now)?
        .ok_or_else(|| sessions::not_found(session, "rewound"))?;
    // The first sequence number removed; `None`: nothing is.
    let from: Option<i64> = match to {
        Rewind::Last(0) => None,
        Rewind::Last(n) => tx
            .prepare_cached(
                "SELECT min(seq) FROM (SELECT seq FROM agentmem_messages
                     WHERE session_id = ?1 AND archive_id IS NULL ORDER BY seq DESC LIMIT ?2)",
            )?
            .query_row(params![row.rowid, rows::sql_int(*n)], |r| r.get(0))?,
        Rewind::After(id) => {
            let kept =
                live_seq_of(&tx, row.rowid, id)?.ok_or_else(|| message_not_found(session, id))?;
            Some(kept.saturating_add(1))
        }
        other => {
            return Err(Error::unsupported(format!(
                "this build of the SQLite backend does not know the rewind {other:?}"
            ))
            .into())
        }
    };
    let Some(from) = from else {
        return Ok(Vec::new());
    };
    let removed = {
        let mut stmt = tx.prepare_cached(&format!(
            "SELECT {MESSAGE_COLUMNS} FROM agentmem_messages m
             WHERE m.session_id = ?1 AND m.archive_id IS NULL AND m.seq >= ?2 ORDER BY m.seq"
        ))?;
        let rows = stmt.query(params![row.rowid, from])?;
        rows::collect(rows, 0, |r| rows::message(r, 0))?
    };
    if !removed.is_empty() {
        tx.prepare_cached(
            "DELETE FROM agentmem_messages
             WHERE session_id = ?1 AND archive_id IS NULL AND seq >= ?2",
        )?
        .execute(params![row.rowid, from])?;
        // MAX keeps `updated_at` from going backwards when clocks of two processes disagree.
        tx.prepare_cached(
            "UPDATE agentmem_sessions
             SET message_count = message_count - ?2, updated_at = MAX(updated_at, ?3)
             WHERE id = ?1",
        )?
        .execute(params![row.rowid, rows::sql_int(removed.len()), now])?;
    }
    tx.commit()?;
    Ok(removed)
}

/// Applies `patch` to the session's labels and expiry in one `IMMEDIATE` transaction: reads
/// them, applies the patch as every backend does ([`SessionPatch::apply`], which refuses too
/// many tags), and writes the changed columns and tag rows.
pub(crate) fn update(
    conn: &mut Connection, session: &SessionId, patch: &SessionPatch,
) -> SqlResult<SessionInfo> {
    let tx = Tx::immediate(conn)?;
    let now = rows::micros(agentmem_core::now());
    let row = sessions::find_live(&tx, session.as_str(), now)?
        .ok_or_else(|| sessions::not_found(session, "updated"))?;
    let mut labels = SessionLabels {
        title: row.title,
        owner: row.owner,
        tags: sessions::tags(&tx, row.rowid)?,
    };
    let mut expires_at = row.expires_at.map(rows::time).transpose()?;
    patch.apply(&mut labels, &mut expires_at)?;
    let expires_at = expires_at.map(rows::micros);
    tx.prepare_cached(
        "UPDATE agentmem_sessions SET title = ?2, owner = ?3, expires_at = ?4 WHERE id = ?1",
    )?
    .execute(params![row.rowid, labels.title, labels.owner, expires_at])?;
    for (key, value) in &patch.tags {
        match value {
            Some(value) => tx
                .prepare_cached(
                    "INSERT INTO agentmem_session_tags (session_id, key, value) VALUES (?1, ?2, ?3)
                     ON CONFLICT (session_id, key) DO UPDATE SET value = excluded.value",
                )?
                .execute(params![row.rowid, key, value])?,
            None => tx
                .prepare_cached(
                    "DELETE FROM agentmem_session_tags WHERE session_id = ?1 AND key = ?2",
                )?
                .execute(params![row.rowid, key])?,
        };
    }
    tx.commit()?;
    Ok(SessionInfo {
        id: session.clone(),
        message_count: rows::count(row.message_count)?,
        created_at: rows::time(row.created_at)?,
        updated_at: rows::time(row.updated_at)?,
        labels,
        expires_at: expires_at.map(rows::time).transpose()?,
    })
}

/// The `SELECT` for `query`: one statement, its shape set by which filters are present and
/// every value a bound parameter (`?1` now, then the filters in the order [`find_params`]
/// binds them, the limit last). Keyset paging: `name > cursor ORDER BY name LIMIT limit + 1`.
fn find_sql(query: &SessionQuery) -> String {
    let mut sql = format!(
        "SELECT s.name, {SESSION_COLUMNS} FROM agentmem_sessions s
         WHERE (s.expires_at IS NULL OR s.expires_at > ?1)"
    );
    let mut n = 1;
    let mut next = || {
        n += 1;
        n
    };
    if query.owner.is_some() {
        sql += &format!(" AND s.owner = ?{}", next());
    }
    for _ in &query.tags {
        let (key, value) = (next(), next());
        sql += &format!(
            " AND EXISTS (SELECT 1 FROM agentmem_session_tags t
                 WHERE t.session_id = s.id AND t.key = ?{key} AND t.value = ?{value})"
        );
    }
    if query.updated_since.is_some() {
        sql += &format!(" AND s.updated_at >= ?{}", next());
    }
    if query.updated_before.is_some() {
        sql += &format!(" AND s.updated_at < ?{}", next());
    }
    if query.after.is_some() {
        sql += &format!(" AND s.name > ?{}", next());
    }
    sql += &format!(" ORDER BY s.name LIMIT ?{}", next());
    sql
}

/// The parameters of [`find_sql`], in its order.
fn find_params(query: &SessionQuery, now: i64) -> Vec<Value> {
    let mut params = vec![Value::Integer(now)];
    if let Some(owner) = &query.owner {
        params.push(Value::Text(owner.clone()));
    }
    for (key, value) in &query.tags {
        params.push(Value::Text(key.clone()));
        params.push(Value::Text(value.clone()));
    }
    if let Some(since) = query.updated_since {
        params.push(Value::Integer(rows::micros(since)));
    }
    if let Some(before) = query.updated_before {
        params.push(Value::Integer(rows::micros(before)));
    }
    if let Some(after) = &query.after {
        params.push(Value::Text(after.to_string()));
    }
    params.push(Value::Integer(rows::sql_int(query.limit.saturating_add(1))));
    params
}

/// One page of the sessions matching `query`, in one statement (one snapshot), without
/// reading any message.
pub(crate) fn find(conn: &mut Connection, query: &SessionQuery) -> SqlResult<SessionPage> {
    let now = rows::micros(agentmem_core::now());
    let mut stmt = conn.prepare_cached(&find_sql(query))?;
    let matching = sessions::infos(stmt.query(params_from_iter(find_params(query, now)))?)?;
    Ok(query.page(matching))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{check_fts, count, fts_hits, migrated, query_plan as plan, with_session};

    #[test]
    fn lookups_walk_the_name_or_owner_index_without_sorting() {
        let conn = migrated();
        let by_cursor = SessionQuery::default().after("a".parse().unwrap());
        let plan_of = |q: &SessionQuery| plan(&conn, &find_sql(q));
        let p = plan_of(&by_cursor);
        assert!(!p.contains("TEMP B-TREE"), "{p}");
        assert!(p.contains("sqlite_autoindex_agentmem_sessions"), "{p}");
        let p = plan_of(&SessionQuery::default().owner("ada"));
        assert!(p.contains("agentmem_sessions_owner"), "{p}");
        assert!(!p.contains("TEMP B-TREE"), "{p}");
        let p = plan_of(&SessionQuery::default().tag("k", "v"));
        assert!(p.contains("agentmem_session_tags"), "{p}");
    }

    #[test]
    fn find_binds_every_value() {
        let mut query = SessionQuery::default()
            .owner("o'; --")
            .tag("a", "1")
            .tag("b", "2")
            .after("x".parse().unwrap());
        query.updated_since = Some(agentmem_core::now());
        query.updated_before = Some(agentmem_core::now());
        let sql = find_sql(&query);
        assert!(!sql.contains("o'"), "{sql}");
        let conn = migrated();
        let stmt = conn.prepare(&sql).unwrap();
        assert_eq!(stmt.parameter_count(), find_params(&query, 0).len());
    }

    #[test]
    fn rewind_and_fork_keep_the_full_text_index_in_step() {
        let batch = [Message::user("walrus"), Message::user("narwhal")];
        let (mut conn, id) = with_session(&batch);
        fork(&mut conn, &id, &"f".parse().unwrap(), Some(&batch[0].id)).unwrap();
        rewind(&mut conn, &id, &Rewind::Last(1)).unwrap();
        check_fts(&conn, "agentmem_messages_fts");
        assert_eq!(fts_hits(&conn, "agentmem_messages_fts", "narwhal"), 0);
        assert_eq!(fts_hits(&conn, "agentmem_messages_fts", "walrus"), 2);
    }

    #[test]
    fn reads_leave_out_expired_sessions_and_writes_start_afresh() {
        let (mut conn, id) = with_session(&[Message::user("old")]);
        update(
            &mut conn,
            &id,
            &SessionPatch::default()
                .tag("k", "v")
                .expire_at(agentmem_core::now() - chrono::Duration::seconds(1)),
        )
        .unwrap();
        assert!(sessions::load(&mut conn, &id, None).unwrap().is_none());
        assert!(sessions::load(&mut conn, &id, Some(5)).unwrap().is_none());
        assert!(sessions::list(&mut conn).unwrap().is_empty());
        assert!(find(&mut conn, &SessionQuery::default().tag("k", "v"))
            .unwrap()
            .sessions
            .is_empty());
        sessions::append(&mut conn, "s", &[Message::user("new")]).unwrap();
        let session = sessions::load(&mut conn, &id, Some(5)).unwrap().unwrap();
        assert_eq!(session.messages.len(), 1);
        assert!(session.labels.is_empty());
        assert_eq!(session.expires_at, None);
        let tags = count(&conn, "SELECT count(*) FROM agentmem_session_tags", []);
        assert_eq!(tags, 0, "the old session's tags went with it");
    }
}
