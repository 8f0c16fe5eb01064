//! Sessions and their messages (append, save, load, list, delete): reading back what the
//! statements return. The operations are the `AgentMemory` methods in `store.rs`.
//!
//! Ordering: every session row carries `next_seq`. An append is one statement whose first
//! part upserts the session row, adding the batch size to `next_seq` and returning where the
//! batch starts, and whose second part inserts the batch there. The upsert takes the row's
//! lock until commit, so concurrent writers to one session are serialized in the order they
//! get the lock, each batch gets a contiguous range, and nothing waits on other sessions.

use agentmem_core::history::trim_orphans;
use agentmem_core::support::stored_session_id;
use agentmem_core::{Metadata, Result, Session, SessionId, SessionInfo};
use tokio_postgres::types::Json;
use tokio_postgres::Row;

use crate::codec::{count, get, numbered_messages};

/// The session the `load` statement read for a window of `limit` messages (all when
/// `None`); `None` when it returned no row (the session does not exist).
pub(crate) fn session_from(
    session: &SessionId,
    rows: &[Row],
    limit: Option<usize>,
) -> Result<Option<Session>> {
    let Some(first) = rows.first() else {
        return Ok(None);
    };
    let metadata: Json<Metadata> = get(first, 0)?;
    let created_at = get(first, 1)?;
    let updated_at = get(first, 2)?;
    let total = count(get(first, 3)?)?;
    // The LEFT JOIN yields one row of NULLs for a session without messages. Rows come newest
    // first from the index; they are sorted rather than trusting join order.
    let window = numbered_messages(rows, 4)?;
    let whole = window.len() as u64 >= total;
    let messages = match limit {
        Some(_) => trim_orphans(window, whole),
        None => window,
    };
    Ok(Some(Session {
        // TODO(issue 21): stored labels and expiry.
        labels: Default::default(),
        expires_at: None,
        id: session.clone(),
        messages,
        metadata: metadata.0,
        created_at,
        updated_at,
        total_messages: total,
    }))
}

/// A row of the `list_sessions` statement.
pub(crate) fn session_info(row: &Row) -> Result<SessionInfo> {
    Ok(SessionInfo {
        // TODO(issue 21): stored labels and expiry.
        labels: Default::default(),
        expires_at: None,
        id: stored_session_id(get::<String>(row, 0)?)?,
        message_count: count(get(row, 1)?)?,
        created_at: get(row, 2)?,
        updated_at: get(row, 3)?,
    })
}
