//! A session's life besides appends: fork, rewind, labels (`update_session`,
//! `find_sessions`) and expiry. The operations are the `AgentMemory` methods in `store.rs`
//! (`fork`'s transaction is written there, on the helpers here; the others call the methods
//! here); each runs as one transaction (one statement for `find_sessions`).
//!
//! Expiry is enforced by every statement that reads a session (`expires_at <= now` is gone),
//! on the client's clock, the one `updated_at` is written with. A write to an expired
//! session finds its row skipped by the upsert's `WHERE` (but locked), deletes it with
//! everything it held, and writes again, in one transaction
//! ([`PostgresStore::write_fresh`]). `purge` deletes expired sessions; PostgreSQL itself
//! never does.

use agentmem_core::support::message_not_found;
use agentmem_core::{
    now, Error, Message, Result, Rewind, SessionId, SessionInfo, SessionLabels, SessionPage,
    SessionPatch, SessionQuery,
};
use chrono::{DateTime, Utc};
use deadpool_postgres::{Object, Transaction};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Error as PgError, Row};

use crate::codec::{count, get, numbered_messages};
use crate::sessions::session_info;
use crate::sql::Sql;
use crate::statements::{Exec, Stmt};
use crate::store::{PostgresStore, READ_RETRIES};

/// The error for a session that does not exist (or has expired).
pub(crate) fn session_not_found(session: &SessionId) -> Error {
    Error::not_found(format!("session `{session}` does not exist"))
}

/// The error for a write that found the session expired twice in a row (someone set its
/// expiry in the past between the two tries): nothing was written.
pub(crate) fn expired_meanwhile(session: &SessionId) -> Error {
    Error::conflict(format!(
        "session `{session}` expired again while it was being rewritten; nothing was written"
    ))
}

/// A transaction on `client` in which `lock` (parameters: session id, time) has locked
/// session `id`, with the row `lock` returned; `None` (the transaction rolled back) when the
/// session does not exist or has expired at `at`.
pub(crate) async fn lock_live_session<'c>(
    client: &'c mut Object, lock: &Stmt, id: &str, at: DateTime<Utc>,
) -> std::result::Result<Option<(Transaction<'c>, Row)>, PgError> {
    let tx = client.transaction().await?;
    let row = tx.query_opt_st(lock, &[&id, &at]).await?;
    Ok(row.map(|row| (tx, row)))
}

/// Deletes session `id` in `tx` (when `expired_at` is given, only if it has expired then) with
/// its messages, archives, archived messages and tags. Whether there was such a session.
pub(crate) async fn delete_session_in(
    sql: &Sql, tx: &Transaction<'_>, id: &str, expired_at: Option<DateTime<Utc>>,
) -> std::result::Result<bool, PgError> {
    let deleted = match expired_at {
        None => tx.execute_st(&sql.sessions.delete_session, &[&id]).await?,
        Some(at) => {
            tx.execute_st(&sql.sessions.delete_expired_session, &[&id, &at])
                .await?
        }
    };
    if deleted == 0 {
        return Ok(false);
    }
    // The dependents go in a later statement than the row, so its snapshot holds every write
    // made before the row's lock.
    tx.execute_st(&sql.sessions.delete_dependents, &[&vec![id]])
        .await?;
    Ok(true)
}

/// The summary of session `id` just written, from a `row` that starts with its message
/// count, creation and last write times.
pub(crate) fn written_session(
    id: &SessionId, row: &Row, labels: SessionLabels, expires_at: Option<DateTime<Utc>>,
) -> Result<SessionInfo> {
    Ok(SessionInfo {
        id: id.clone(),
        message_count: count(get(row, 0)?)?,
        created_at: get(row, 1)?,
        updated_at: get(row, 2)?,
        labels,
        expires_at,
    })
}

impl PostgresStore {
    /// Runs `st` (`append` or `save`: returns 1 when it wrote, 0 when the session has expired)
    /// for `session` in a transaction of its own. When the session has expired (its row is
    /// then locked), deletes it with its messages, archives and tags, and runs `st` again,
    /// which starts a new session; then runs `after` (with the session id) and commits. An
    /// error when the session expired again meanwhile, and nothing was written.
    pub(crate) async fn write_fresh(
        &self, session: &SessionId, st: &Stmt, params: &[&(dyn ToSql + Sync)], after: Option<&Stmt>,
    ) -> Result<()> {
        let id = session.as_str();
        let written = run!(self, 0, |client| async {
            let tx = client.transaction().await?;
            let wrote = |row: Row| Ok::<_, PgError>(row.try_get::<_, i64>(0)? == 1);
            if !wrote(tx.query_one_st(st, params).await?)? {
                delete_session_in(&self.sql, &tx, id, None).await?;
                if !wrote(tx.query_one_st(st, params).await?)? {
                    return Ok(false);
                }
            }
            if let Some(after) = after {
                tx.execute_st(after, &[&id]).await?;
            }
            tx.commit().await?;
            Ok(true)
        })?;
        if !written {
            return Err(expired_meanwhile(session));
        }
        Ok(())
    }

    /// `rewind`: see `SessionStore::rewind`.
    pub(crate) async fn rewind_session(
        &self, session: &SessionId, to: &Rewind,
    ) -> Result<Vec<Message>> {
        let time = now();
        let id = session.as_str();
        let rows = run!(self, 0, |client| async {
            let lock = &self.sql.sessions.lock_session;
            let Some((tx, row)) = lock_live_session(&mut client, lock, id, time).await? else {
                return Ok(Err(session_not_found(session)));
            };
            let next: i64 = row.try_get(0)?;
            let total: i64 = row.try_get(1)?;
            // Messages from position `cut` on go.
            let cut = match to {
                Rewind::Last(n) => next - i64::try_from(*n).unwrap_or(i64::MAX).min(total.max(0)),
                Rewind::After(message) => {
                    let seq: Option<i64> = tx
                        .query_one_st(&self.sql.lifecycle.message_seq, &[&id, &message.as_str()])
                        .await?
                        .try_get(0)?;
                    match seq {
                        Some(seq) => seq + 1,
                        None => return Ok(Err(message_not_found(session, message))),
                    }
                }
                other => {
                    return Ok(Err(Error::unsupported(format!(
                        "agentmem-postgres cannot rewind to {other:?}"
                    ))))
                }
            };
            if cut >= next {
                // Nothing to remove (the transaction only held the lock).
                return Ok(Ok(Vec::new()));
            }
            let rows = tx
                .query_st(&self.sql.lifecycle.rewind, &[&id, &cut, &time])
                .await?;
            tx.commit().await?;
            Ok(Ok(rows))
        })??;
        numbered_messages(&rows, 0)
    }

    /// `update_session`: see `SessionStore::update_session`.
    pub(crate) async fn update_labels(
        &self, session: &SessionId, patch: &SessionPatch,
    ) -> Result<SessionInfo> {
        let time = now();
        let id = session.as_str();
        let removed: Vec<&str> = patch
            .tags
            .iter()
            .filter(|(_, value)| value.is_none())
            .map(|(key, _)| key.as_str())
            .collect();
        let (set_keys, set_values): (Vec<&str>, Vec<&str>) = patch
            .tags
            .iter()
            .filter_map(|(key, value)| Some((key.as_str(), value.as_deref()?)))
            .unzip();
        let (row, labels) = run!(self, 0, |client| async {
            let lock = &self.sql.sessions.lock_session;
            let Some((tx, row)) = lock_live_session(&mut client, lock, id, time).await? else {
                return Ok(Err(session_not_found(session)));
            };
            // Read after the lock: every change made before it is seen.
            let tags = tx
                .query_st(&self.sql.lifecycle.session_tags, &[&id])
                .await?;
            let mut labels = SessionLabels {
                title: row.try_get(2)?,
                owner: row.try_get(3)?,
                tags: tags
                    .iter()
                    .map(|t| Ok((t.try_get(0)?, t.try_get(1)?)))
                    .collect::<std::result::Result<_, PgError>>()?,
            };
            let mut expires_at: Option<DateTime<Utc>> = row.try_get(4)?;
            // Checks the resulting tag count; on failure nothing is written (rolled back).
            if let Err(e) = patch.apply(&mut labels, &mut expires_at) {
                return Ok(Err(e));
            }
            let params: [&(dyn ToSql + Sync); 7] = [
                &id,
                &labels.title,
                &labels.owner,
                &expires_at,
                &removed,
                &set_keys,
                &set_values,
            ];
            let row = tx
                .query_one_st(&self.sql.lifecycle.update_labels, &params)
                .await?;
            tx.commit().await?;
            Ok(Ok((row, labels)))
        })??;
        // The expiry as stored (to the microsecond).
        written_session(session, &row, labels, get(&row, 3)?)
    }

    /// `find_sessions`: see `SessionStore::find_sessions`.
    pub(crate) async fn find(&self, query: &SessionQuery) -> Result<SessionPage> {
        let time = now();
        // Ids are never empty, so every id sorts after `''`.
        let after = query.after.as_ref().map_or("", SessionId::as_str);
        let (keys, values): (Vec<&str>, Vec<&str>) = query
            .tags
            .iter()
            .map(|(key, value)| (key.as_str(), value.as_str()))
            .unzip();
        // One more than a page, to tell whether another follows.
        let limit = i64::try_from(query.limit.saturating_add(1)).unwrap_or(i64::MAX);
        let owner = query.owner.as_deref();
        let rows = run!(self, READ_RETRIES, |client| async {
            let params: [&(dyn ToSql + Sync); 8] = [
                &after,
                &time,
                &query.updated_since,
                &query.updated_before,
                &keys,
                &values,
                &limit,
                &owner,
            ];
            match owner {
                None => {
                    client
                        .query_st(&self.sql.lifecycle.find_sessions, &params[..7])
                        .await
                }
                Some(_) => {
                    client
                        .query_st(&self.sql.lifecycle.find_sessions_of_owner, &params)
                        .await
                }
            }
        })?;
        let sessions = rows.iter().map(session_info).collect::<Result<Vec<_>>>()?;
        Ok(query.page(sessions))
    }
}
