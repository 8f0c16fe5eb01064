//! Sessions and their messages: append, save, load, list, delete.
//!
//! Ordering: every session row carries `next_seq`. An append is one statement whose first
//! part upserts the session row, adding the batch size to `next_seq` and returning where the
//! batch starts, and whose second part inserts the batch there. The upsert takes the row's
//! lock until commit, so concurrent writers to one session are serialized in the order they
//! get the lock, each batch gets a contiguous range, and nothing waits on other sessions.

use agentmem_core::history::trim_orphans;
use agentmem_core::{now, Error, Message, Metadata, Result, Session, SessionId, SessionInfo};
use chrono::{DateTime, Utc};
use tokio_postgres::types::{Json, ToSql};

use crate::codec::{count, get, message_from_row, MessageColumns};
use crate::store::{PostgresMemory, READ_RETRIES};

/// The bind parameters `$1`..`$12` of the append-shaped statements.
pub(crate) fn message_params<'a>(
    session: &'a &'a str,
    at: &'a DateTime<Utc>,
    n: &'a i64,
    c: &'a MessageColumns<'_>,
) -> [&'a (dyn ToSql + Sync); 12] {
    [
        session as &(dyn ToSql + Sync),
        at,
        n,
        &c.ids,
        &c.roles,
        &c.contents,
        &c.raws,
        &c.timestamps,
        &c.tool_call_ids,
        &c.tool_names,
        &c.metadata,
        &c.tsvs,
    ]
}

impl PostgresMemory {
    pub(crate) async fn append_impl(
        &self,
        session: &SessionId,
        messages: &[Message],
    ) -> Result<()> {
        let columns = MessageColumns::new(messages)?;
        let n = columns.len();
        let at = now();
        let id = session.as_str();
        let params = message_params(&id, &at, &n, &columns);
        run!(self, 0, |client| async {
            let st = client.prepare_cached(&self.sql.append).await?;
            client.execute(&st, &params).await
        })?;
        Ok(())
    }

    pub(crate) async fn save_session_impl(
        &self,
        session: &SessionId,
        history: &[Message],
        metadata: &Metadata,
    ) -> Result<()> {
        let columns = MessageColumns::new(history)?;
        let n = columns.len();
        let at = now();
        let id = session.as_str();
        let base = message_params(&id, &at, &n, &columns);
        let meta = Json(metadata);
        let mut params: Vec<&(dyn ToSql + Sync)> = base.to_vec();
        params.push(&meta);
        run!(self, 0, |client| async {
            let tx = client.transaction().await?;
            // First take the session row's lock while writing the new messages after the old
            // ones; only then delete the old ones, in a statement whose snapshot is taken
            // after the lock, so an append that committed just before is deleted too rather
            // than left behind.
            let save = tx.prepare_cached(&self.sql.save).await?;
            tx.execute(&save, &params).await?;
            let delete = tx.prepare_cached(&self.sql.delete_before_first).await?;
            tx.execute(&delete, &[&id]).await?;
            tx.commit().await
        })
    }

    pub(crate) async fn load_impl(
        &self,
        session: &SessionId,
        limit: Option<usize>,
    ) -> Result<Option<Session>> {
        let id = session.as_str();
        // NULL means no LIMIT.
        let limit = limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX));
        let rows = run!(self, READ_RETRIES, |client| async {
            let st = client.prepare_cached(&self.sql.load).await?;
            client.query(&st, &[&id, &limit]).await
        })?;
        let Some(first) = rows.first() else {
            return Ok(None);
        };
        let metadata: Json<Metadata> = get(first, 0)?;
        let created_at = get(first, 1)?;
        let updated_at = get(first, 2)?;
        let total = count(get(first, 3)?)?;
        let mut numbered = Vec::with_capacity(rows.len());
        for row in &rows {
            // The LEFT JOIN yields one row of NULLs for a session without messages.
            if let Some(seq) = get::<Option<i64>>(row, 4)? {
                numbered.push((seq, message_from_row(row, 5)?));
            }
        }
        // Rows come newest first from the index; sort rather than trust join order.
        numbered.sort_unstable_by_key(|(seq, _)| *seq);
        let window: Vec<Message> = numbered.into_iter().map(|(_, m)| m).collect();
        let whole = window.len() as u64 >= total;
        let messages = match limit {
            Some(_) => trim_orphans(window, whole),
            None => window,
        };
        Ok(Some(Session {
            id: session.clone(),
            messages,
            metadata: metadata.0,
            created_at,
            updated_at,
            total_messages: total,
        }))
    }

    pub(crate) async fn list_sessions_impl(&self) -> Result<Vec<SessionInfo>> {
        let rows = run!(self, READ_RETRIES, |client| async {
            let st = client.prepare_cached(&self.sql.list_sessions).await?;
            client.query(&st, &[]).await
        })?;
        rows.iter()
            .map(|row| {
                let id: String = get(row, 0)?;
                Ok(SessionInfo {
                    id: SessionId::new(id).map_err(|e| {
                        Error::corrupt(format!("stored session id is invalid: {e}"))
                    })?,
                    message_count: count(get(row, 1)?)?,
                    created_at: get(row, 2)?,
                    updated_at: get(row, 3)?,
                })
            })
            .collect()
    }

    pub(crate) async fn delete_session_impl(&self, session: &SessionId) -> Result<bool> {
        let ids = vec![session.as_str()];
        run!(self, 0, |client| async {
            let tx = client.transaction().await?;
            // Delete (and so lock) the session row first; the dependents' delete then runs
            // with a snapshot that includes every append committed before the lock.
            let st = tx.prepare_cached(&self.sql.delete_session).await?;
            let deleted = tx.execute(&st, &[&ids[0]]).await?;
            if deleted == 0 {
                return Ok(false);
            }
            let st = tx.prepare_cached(&self.sql.delete_dependents).await?;
            tx.execute(&st, &[&ids]).await?;
            tx.commit().await?;
            Ok(true)
        })
    }
}
