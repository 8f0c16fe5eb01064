//! Reading checkpoints: one by key, listings newest first, the threads.

use agentmem_core::checkpoint::sort_writes;
use agentmem_core::{
    ChannelBlob, Checkpoint, CheckpointId, CheckpointKey, CheckpointNs, CheckpointQuery,
    CheckpointTuple, PendingWrite, ThreadId, ThreadInfo,
};
use rusqlite::types::ToSql;
use rusqlite::{params, Connection, OptionalExtension};

use super::{complete, head, name, typed, COLUMNS};
use crate::error::{corrupt, SqlResult};
use crate::rows;
use crate::tx::Tx;

/// The order of every listing: greatest id first, then thread and namespace (the model's
/// `newest_first`). The indexes `agentmem_checkpoints_newest (checkpoint_id DESC, thread, ns)`
/// and `agentmem_checkpoints_thread_newest (thread, checkpoint_id DESC, ns)` yield it as they
/// are walked, so a listing streams and stops at its limit without sorting.
const NEWEST_FIRST: &str = "ORDER BY c.checkpoint_id DESC, c.thread, c.ns";

/// The checkpoint `id` of `thread` in `ns` (the greatest id there without one), with its
/// blobs and writes, read from one snapshot.
pub(super) fn get(
    conn: &mut Connection, thread: &ThreadId, ns: &CheckpointNs, id: Option<&CheckpointId>,
) -> SqlResult<Option<CheckpointTuple>> {
    let tx = Tx::deferred(conn)?;
    let found = {
        let mut stmt;
        let mut rows = match id {
            Some(id) => {
                stmt = tx.prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM agentmem_checkpoints c
                     WHERE c.thread = ?1 AND c.ns = ?2 AND c.checkpoint_id = ?3"
                ))?;
                stmt.query(params![thread.as_str(), ns.as_str(), id.as_str()])?
            }
            None => {
                stmt = tx.prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM agentmem_checkpoints c
                     WHERE c.thread = ?1 AND c.ns = ?2
                     ORDER BY c.checkpoint_id DESC LIMIT 1"
                ))?;
                stmt.query(params![thread.as_str(), ns.as_str()])?
            }
        };
        match rows.next()? {
            Some(row) => {
                let mut checkpoint = head(row)?;
                complete(row, &mut checkpoint)?;
                Some(checkpoint)
            }
            None => None,
        }
    };
    let tuple = found.map(|checkpoint| tuple(&tx, checkpoint)).transpose()?;
    tx.commit()?;
    Ok(tuple)
}

/// The checkpoints `query` selects, newest first, read from one snapshot.
///
/// The key filters (thread, namespace, id, `before`) are exact in SQL, and so is the
/// metadata's `run_id` when the filter asks for a string (the `run_id` column holds exactly
/// the metadata's string `run_id`). The metadata filter itself is decided by
/// [`CheckpointQuery::matches`] on each candidate row, in order, and the limit counts only
/// the rows that pass; a rejected row's body is never read.
pub(super) fn list(
    conn: &mut Connection, query: &CheckpointQuery,
) -> SqlResult<Vec<CheckpointTuple>> {
    let limit = query.limit.unwrap_or(usize::MAX);
    if limit == 0 {
        return Ok(Vec::new());
    }
    let thread = query.thread.as_ref().map(ThreadId::as_str);
    let ns = query.ns.as_ref().map(CheckpointNs::as_str);
    let id = query.id.as_ref().map(CheckpointId::as_str);
    let before = query.before.as_ref().map(CheckpointId::as_str);
    let run = query
        .metadata
        .get("run_id")
        .and_then(|v| v.as_str())
        .map(str::as_bytes);
    let mut conditions = Vec::new();
    let mut values: Vec<&dyn ToSql> = Vec::new();
    let filters: [(&str, Option<&dyn ToSql>); 5] = [
        ("c.thread =", thread.as_ref().map(|v| v as &dyn ToSql)),
        ("c.ns =", ns.as_ref().map(|v| v as &dyn ToSql)),
        ("c.checkpoint_id =", id.as_ref().map(|v| v as &dyn ToSql)),
        (
            "c.checkpoint_id <",
            before.as_ref().map(|v| v as &dyn ToSql),
        ),
        ("c.run_id =", run.as_ref().map(|v| v as &dyn ToSql)),
    ];
    for (test, value) in filters {
        if let Some(value) = value {
            values.push(value);
            conditions.push(format!("{test} ?{}", values.len()));
        }
    }
    let condition = match conditions.is_empty() {
        true => "1".to_string(),
        false => conditions.join(" AND "),
    };
    let sql = listing_sql(&condition);
    let tx = Tx::deferred(conn)?;
    let mut found = Vec::new();
    {
        let mut stmt = tx.prepare_cached(&sql)?;
        let mut rows = stmt.query(values.as_slice())?;
        while found.len() < limit {
            let Some(row) = rows.next()? else { break };
            let mut checkpoint = head(row)?;
            if query.matches(&checkpoint) {
                complete(row, &mut checkpoint)?;
                found.push(checkpoint);
            }
        }
    }
    let tuples = found
        .into_iter()
        .map(|checkpoint| tuple(&tx, checkpoint))
        .collect::<SqlResult<Vec<_>>>()?;
    tx.commit()?;
    Ok(tuples)
}

/// The listing statement with `condition` (its filters, `?n`-numbered) as its `WHERE` clause.
pub(super) fn listing_sql(condition: &str) -> String {
    format!("SELECT {COLUMNS} FROM agentmem_checkpoints c WHERE {condition} {NEWEST_FIRST}")
}

/// Every thread holding a checkpoint, by id (byte order), with its count and newest time.
pub(super) fn threads(conn: &mut Connection) -> SqlResult<Vec<ThreadInfo>> {
    let mut stmt = conn.prepare_cached(
        "SELECT thread, count(*), max(created_at) FROM agentmem_checkpoints
         GROUP BY thread ORDER BY thread",
    )?;
    let rows = stmt.query([])?;
    rows::collect(rows, 0, |row| {
        Ok(ThreadInfo {
            thread: name(row.get(0)?, "thread id", ThreadId::new)?,
            checkpoints: rows::count(row.get(1)?)?,
            updated_at: rows::time(row.get(2)?)?,
        })
    })
}

/// `checkpoint` with the blobs its channel versions name and its writes.
fn tuple(conn: &Connection, checkpoint: Checkpoint) -> SqlResult<CheckpointTuple> {
    let blobs = blobs(conn, &checkpoint)?;
    let writes = writes(conn, &checkpoint.key)?;
    Ok(CheckpointTuple {
        checkpoint,
        blobs,
        writes,
    })
}

/// The stored blobs among `checkpoint`'s channel versions, by channel: one point lookup each
/// on the blobs' primary key.
fn blobs(conn: &Connection, checkpoint: &Checkpoint) -> SqlResult<Vec<ChannelBlob>> {
    let key = &checkpoint.key;
    let mut stmt = conn.prepare_cached(
        "SELECT value_type, value FROM agentmem_checkpoint_blobs
         WHERE thread = ?1 AND ns = ?2 AND channel = ?3 AND version = ?4",
    )?;
    let mut blobs = Vec::with_capacity(checkpoint.channel_versions.len());
    for (channel, version) in &checkpoint.channel_versions {
        let stored = stmt
            .query_row(
                params![key.thread.as_str(), key.ns.as_str(), channel, version],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()?;
        if let Some((type_tag, bytes)) = stored {
            blobs.push(ChannelBlob {
                channel: channel.clone(),
                version: version.clone(),
                value: typed(type_tag, bytes)?,
            });
        }
    }
    Ok(blobs)
}

/// The pending writes made after checkpoint (`?1`, `?2`, `?3`): a prefix of the writes'
/// primary key.
pub(super) const WRITES: &str = "SELECT task_id, idx, channel, value_type, value, task_path
    FROM agentmem_checkpoint_writes WHERE thread = ?1 AND ns = ?2 AND checkpoint_id = ?3
    ORDER BY task_path, task_id, idx";

/// The pending writes made after the checkpoint at `key`, sorted as readers get them.
fn writes(conn: &Connection, key: &CheckpointKey) -> SqlResult<Vec<PendingWrite>> {
    let mut stmt = conn.prepare_cached(WRITES)?;
    let rows = stmt.query(params![
        key.thread.as_str(),
        key.ns.as_str(),
        key.id.as_str()
    ])?;
    let mut writes = rows::collect(rows, 0, |row| {
        let value = typed(row.get(3)?, row.get(4)?)?
            .ok_or_else(|| corrupt("pending write without a type tag"))?;
        Ok(PendingWrite {
            task_id: row.get(0)?,
            idx: row.get(1)?,
            channel: row.get(2)?,
            value,
            task_path: row.get(5)?,
        })
    })?;
    // SQL's BINARY order is the model's byte order already; sorting again costs nothing and
    // leaves no doubt.
    sort_writes(&mut writes);
    Ok(writes)
}
