//! Deleting, copying and pruning threads: one `IMMEDIATE` transaction each. Pending writes
//! have no link to their checkpoint's row (they may come before it), so every path here names
//! the writes it takes along; channel values no remaining checkpoint reads go with the
//! checkpoints that read them.

use std::collections::{BTreeSet, HashSet};

use agentmem_core::checkpoint::{missing_thread, thread_exists};
use agentmem_core::{CheckpointPrune, Error, ThreadId};
use rusqlite::{params, Connection};

use crate::error::{corrupt, SqlResult};
use crate::tx::Tx;

/// Deletes a thread's checkpoints, blobs and pending writes (those made ahead of a checkpoint
/// not stored too) in every namespace; whether it held a checkpoint.
pub(super) fn delete_thread(conn: &mut Connection, thread: &ThreadId) -> SqlResult<bool> {
    let tx = Tx::immediate(conn)?;
    let deleted = delete_all(&tx, thread.as_str())?;
    tx.commit()?;
    Ok(deleted > 0)
}

/// Deletes the checkpoints whose metadata `run_id` is one of `run_ids` (found by the run
/// index), with their writes (and no other writes), then the blobs no checkpoint left in
/// their namespaces reads; how many checkpoints went.
pub(super) fn delete_runs(conn: &mut Connection, run_ids: &[String]) -> SqlResult<u64> {
    if run_ids.is_empty() {
        return Ok(0);
    }
    let tx = Tx::immediate(conn)?;
    let mut touched = BTreeSet::new();
    let mut deleted = 0;
    for run in run_ids {
        let run = run.as_bytes();
        let keys = {
            let mut stmt = tx.prepare_cached(
                "SELECT thread, ns, checkpoint_id FROM agentmem_checkpoints WHERE run_id = ?1",
            )?;
            let found = stmt.query_map([run], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, String>(2)?,
                ))
            })?;
            found.collect::<rusqlite::Result<Vec<_>>>()?
        };
        // Each checkpoint's writes by their primary key's prefix.
        let mut drop_writes = tx.prepare_cached(
            "DELETE FROM agentmem_checkpoint_writes
             WHERE thread = ?1 AND ns = ?2 AND checkpoint_id = ?3",
        )?;
        for (thread, ns, id) in keys {
            drop_writes.execute(params![thread, ns, id])?;
            touched.insert((thread, ns));
        }
        deleted += tx
            .prepare_cached("DELETE FROM agentmem_checkpoints WHERE run_id = ?1")?
            .execute([run])?;
    }
    for (thread, ns) in &touched {
        drop_unread_blobs(&tx, thread, Some(ns))?;
    }
    tx.commit()?;
    Ok(count(deleted))
}

/// Copies every checkpoint of `source` (all namespaces), its blobs and the writes made after
/// its checkpoints (not those made ahead of a checkpoint not stored) to the new thread
/// `target`, in three `INSERT … SELECT`s; how many checkpoints. `NotFound` when `source`
/// holds no checkpoint, `Conflict` when `target` holds one.
pub(super) fn copy_thread(
    conn: &mut Connection, source: &ThreadId, target: &ThreadId,
) -> SqlResult<u64> {
    let tx = Tx::immediate(conn)?;
    let holds = |thread: &str| -> SqlResult<bool> {
        Ok(tx
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM agentmem_checkpoints WHERE thread = ?1)")?
            .query_row([thread], |row| row.get(0))?)
    };
    if !holds(source.as_str())? {
        return Err(missing_thread(source).into());
    }
    if holds(target.as_str())? {
        return Err(thread_exists(target).into());
    }
    // The target becomes exactly a copy: no channel value or pending write of its own (made
    // ahead of a checkpoint never stored there) survives.
    for table in ["agentmem_checkpoint_blobs", "agentmem_checkpoint_writes"] {
        tx.prepare_cached(&format!("DELETE FROM {table} WHERE thread = ?1"))?
            .execute([target.as_str()])?;
    }
    let copied = tx
        .prepare_cached(
            "INSERT INTO agentmem_checkpoints (thread, ns, checkpoint_id, parent_id, body_type,
                 body, channel_versions, metadata, run_id, created_at)
             SELECT ?2, ns, checkpoint_id, parent_id, body_type, body, channel_versions,
                 metadata, run_id, created_at
             FROM agentmem_checkpoints WHERE thread = ?1",
        )?
        .execute([source.as_str(), target.as_str()])?;
    tx.prepare_cached(
        "INSERT INTO agentmem_checkpoint_blobs (thread, ns, channel, version, value_type, value)
         SELECT ?2, ns, channel, version, value_type, value
         FROM agentmem_checkpoint_blobs WHERE thread = ?1",
    )?
    .execute([source.as_str(), target.as_str()])?;
    tx.prepare_cached(COPY_WRITES)?
        .execute([source.as_str(), target.as_str()])?;
    tx.commit()?;
    Ok(count(copied))
}

/// Copies the writes of thread `?1` made after a checkpoint stored there to thread `?2`: not
/// those made ahead of a checkpoint not stored, which the copy would not show.
pub(super) const COPY_WRITES: &str = "INSERT INTO agentmem_checkpoint_writes
        (thread, ns, checkpoint_id, task_id, idx, channel, value_type, value, task_path)
    SELECT ?2, w.ns, w.checkpoint_id, w.task_id, w.idx, w.channel, w.value_type, w.value,
        w.task_path
    FROM agentmem_checkpoint_writes w
    WHERE w.thread = ?1 AND EXISTS (SELECT 1 FROM agentmem_checkpoints c
        WHERE c.thread = w.thread AND c.ns = w.ns AND c.checkpoint_id = w.checkpoint_id)";

/// After a `KeepLatest` prune of thread `?1`, deletes every write but the kept checkpoint's
/// of each namespace: those of the deleted checkpoints and those made ahead of a checkpoint
/// not stored (older or newer) go. A namespace without checkpoints has no greatest id
/// (`NULL`, which `IS NOT` tells apart from every id): all its writes go.
pub(super) const PRUNE_WRITES: &str = "DELETE FROM agentmem_checkpoint_writes
    WHERE thread = ?1 AND checkpoint_id IS NOT (
        SELECT max(c.checkpoint_id) FROM agentmem_checkpoints c
        WHERE c.thread = agentmem_checkpoint_writes.thread
            AND c.ns = agentmem_checkpoint_writes.ns)";

/// Prunes each of `threads` as `keep` says, in one transaction; how many checkpoints went.
pub(super) fn prune(
    conn: &mut Connection, threads: &[ThreadId], keep: CheckpointPrune,
) -> SqlResult<u64> {
    let tx = Tx::immediate(conn)?;
    let mut pruned = 0;
    for thread in threads {
        let thread = thread.as_str();
        pruned += match keep {
            CheckpointPrune::DeleteAll => delete_all(&tx, thread)?,
            CheckpointPrune::KeepLatest => {
                let deleted = tx
                    .prepare_cached(
                        "DELETE FROM agentmem_checkpoints
                         WHERE thread = ?1 AND checkpoint_id < (
                             SELECT max(newest.checkpoint_id) FROM agentmem_checkpoints newest
                             WHERE newest.thread = agentmem_checkpoints.thread
                                 AND newest.ns = agentmem_checkpoints.ns)",
                    )?
                    .execute([thread])?;
                tx.prepare_cached(PRUNE_WRITES)?.execute([thread])?;
                drop_unread_blobs(&tx, thread, None)?;
                deleted
            }
            other => {
                return Err(Error::unsupported(format!(
                    "the sqlite store does not know the prune mode {other:?}"
                ))
                .into())
            }
        };
    }
    tx.commit()?;
    Ok(count(pruned))
}

/// Deletes every checkpoint, blob and pending write of `thread`; how many checkpoints.
fn delete_all(tx: &Connection, thread: &str) -> SqlResult<usize> {
    let deleted = tx
        .prepare_cached("DELETE FROM agentmem_checkpoints WHERE thread = ?1")?
        .execute([thread])?;
    for table in ["agentmem_checkpoint_blobs", "agentmem_checkpoint_writes"] {
        tx.prepare_cached(&format!("DELETE FROM {table} WHERE thread = ?1"))?
            .execute([thread])?;
    }
    Ok(deleted)
}

/// Deletes the blobs of `thread` (in namespace `ns`, or in all of them) that no checkpoint
/// there reads any more: the channel versions of the remaining checkpoints are gathered, then
/// every blob outside them goes, by row id.
fn drop_unread_blobs(tx: &Connection, thread: &str, ns: Option<&str>) -> SqlResult<()> {
    let mut read: HashSet<(String, String, String)> = HashSet::new();
    {
        let mut stmt = tx.prepare_cached(
            "SELECT ns, channel_versions FROM agentmem_checkpoints
             WHERE thread = ?1 AND (?2 IS NULL OR ns = ?2)",
        )?;
        let mut rows = stmt.query(params![thread, ns])?;
        while let Some(row) = rows.next()? {
            let ns: String = row.get(0)?;
            let text = row
                .get_ref(1)?
                .as_str()
                .map_err(|e| corrupt(format!("channel versions ({e})")))?;
            let versions: std::collections::BTreeMap<String, String> =
                serde_json::from_str(text)
                    .map_err(|e| corrupt(format!("channel versions ({e})")))?;
            read.extend(
                versions
                    .into_iter()
                    .map(|(channel, version)| (ns.clone(), channel, version)),
            );
        }
    }
    let unread = {
        let mut stmt = tx.prepare_cached(
            "SELECT rowid, ns, channel, version FROM agentmem_checkpoint_blobs
             WHERE thread = ?1 AND (?2 IS NULL OR ns = ?2)",
        )?;
        let mut rows = stmt.query(params![thread, ns])?;
        let mut unread: Vec<i64> = Vec::new();
        while let Some(row) = rows.next()? {
            let place = (row.get(1)?, row.get(2)?, row.get(3)?);
            if !read.contains(&place) {
                unread.push(row.get(0)?);
            }
        }
        unread
    };
    let mut delete = tx.prepare_cached("DELETE FROM agentmem_checkpoint_blobs WHERE rowid = ?1")?;
    for rowid in unread {
        delete.execute([rowid])?;
    }
    Ok(())
}

/// A number of rows as the API counts them.
fn count(rows: usize) -> u64 {
    u64::try_from(rows).unwrap_or(u64::MAX)
}
