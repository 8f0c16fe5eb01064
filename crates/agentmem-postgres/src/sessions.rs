//! Sessions and their messages (append, save, load, list, delete): reading back what the
//! statements return. The operations are the `AgentMemory` methods in `store.rs`.
//!
//! Ordering: every session row carries `next_seq`. An append is one statement whose first
//! part upserts the session row, adding the batch size to `next_seq` and returning where the
//! batch starts, and whose second part inserts the batch there. The upsert takes the row's
//! lock until commit, so concurrent writers to one session are serialized in the order they
//! get the lock, each batch gets a contiguous range, and nothing waits on other sessions.

use std::collections::BTreeMap;

use agentmem_core::history::trim_orphans;
use agentmem_core::support::stored_session_id;
use agentmem_core::{Error, Metadata, Result, Session, SessionId, SessionInfo, SessionLabels};
use tokio_postgres::types::Json;
use tokio_postgres::Row;

use crate::codec::{count, get, numbered_messages};

/// Labels from their stored columns: title, owner, and the tags as keys and values in two
/// arrays of the same length.
pub(crate) fn labels_from(
    title: Option<String>, owner: Option<String>, keys: Vec<String>, values: Vec<String>,
) -> Result<SessionLabels> {
    if keys.len() != values.len() {
        return Err(Error::corrupt(format!(
            "a session's tags read as {} keys and {} values",
            keys.len(),
            values.len()
        )));
    }
    Ok(SessionLabels {
        title,
        owner,
        tags: keys.into_iter().zip(values).collect::<BTreeMap<_, _>>(),
    })
}

/// The session the `load` statement read for a window of `limit` messages (all when
/// `None`); `None` when it returned no row (the session does not exist, or has expired).
pub(crate) fn session_from(
    session: &SessionId, rows: &[Row], limit: Option<usize>,
) -> Result<Option<Session>> {
    let Some(first) = rows.first() else {
        return Ok(None);
    };
    let metadata: Json<Metadata> = get(first, 0)?;
    let created_at = get(first, 1)?;
    let updated_at = get(first, 2)?;
    let total = count(get(first, 3)?)?;
    let expires_at = get(first, 4)?;
    // The labels are on one row only: the one whose tag keys are not NULL.
    let mut labels = None;
    for row in rows {
        if let Some(keys) = get::<Option<Vec<String>>>(row, 7)? {
            let values = get::<Option<Vec<String>>>(row, 8)?.unwrap_or_default();
            labels = Some(labels_from(get(row, 5)?, get(row, 6)?, keys, values)?);
            break;
        }
    }
    let labels =
        labels.ok_or_else(|| Error::corrupt("the session's labels were not read with it"))?;
    // The LEFT JOIN yields one row of NULLs for a session without messages. Rows come newest
    // first from the index; they are sorted rather than trusting join order.
    let mut window = numbered_messages(rows, 9)?;
    if let Some(n) = limit {
        // A window statement may read more than asked (its limit is rounded up): keep the
        // newest `n`.
        if window.len() > n {
            window.drain(..window.len() - n);
        }
    }
    let whole = window.len() as u64 >= total;
    let messages = match limit {
        Some(_) => trim_orphans(window, whole),
        None => window,
    };
    Ok(Some(Session {
        labels,
        expires_at,
        id: session.clone(),
        messages,
        metadata: metadata.0,
        created_at,
        updated_at,
        total_messages: total,
    }))
}

/// A session summary row (`session_info_columns` in `sql.rs`: `list_sessions`,
/// `find_sessions`).
pub(crate) fn session_info(row: &Row) -> Result<SessionInfo> {
    Ok(SessionInfo {
        id: stored_session_id(get::<String>(row, 0)?)?,
        message_count: count(get(row, 1)?)?,
        created_at: get(row, 2)?,
        updated_at: get(row, 3)?,
        labels: labels_from(get(row, 4)?, get(row, 5)?, get(row, 7)?, get(row, 8)?)?,
        expires_at: get(row, 6)?,
    })
}
