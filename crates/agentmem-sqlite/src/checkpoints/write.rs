//! Writing checkpoints with their blobs, and pending writes: one `IMMEDIATE` transaction each.

use agentmem_core::checkpoint::write_replaces;
use agentmem_core::{ChannelBlob, Checkpoint, CheckpointKey, Error, PendingWrite};
use rusqlite::{params, Connection};

use crate::error::SqlResult;
use crate::rows;
use crate::tx::Tx;

/// Stores `checkpoint` and `blobs` in one transaction, so no reader sees the checkpoint
/// without its blobs. A checkpoint at the same key is replaced; the pending writes made after
/// it are keyed apart and stay. A blob at the same key is replaced; of two in `blobs` with
/// one key, the later wins.
pub(super) fn put(
    conn: &mut Connection, checkpoint: &Checkpoint, blobs: &[ChannelBlob],
) -> SqlResult<()> {
    let key = &checkpoint.key;
    let versions = serde_json::to_string(&checkpoint.channel_versions).map_err(Error::from)?;
    let metadata = serde_json::to_string(&checkpoint.metadata).map_err(Error::from)?;
    let tx = Tx::immediate(conn)?;
    tx.prepare_cached(
        "INSERT INTO agentmem_checkpoints (thread, ns, checkpoint_id, parent_id, body_type, body,
             channel_versions, metadata, run_id, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
         ON CONFLICT (thread, ns, checkpoint_id) DO UPDATE SET
             parent_id = excluded.parent_id, body_type = excluded.body_type,
             body = excluded.body, channel_versions = excluded.channel_versions,
             metadata = excluded.metadata, run_id = excluded.run_id,
             created_at = excluded.created_at",
    )?
    .execute(params![
        key.thread.as_str(),
        key.ns.as_str(),
        key.id.as_str(),
        checkpoint.parent.as_ref().map(|p| p.as_str()),
        checkpoint.body.type_tag,
        checkpoint.body.bytes,
        versions,
        metadata,
        checkpoint.run_id().map(str::as_bytes),
        rows::micros(checkpoint.created_at),
    ])?;
    {
        let mut put_blob = tx.prepare_cached(
            "INSERT INTO agentmem_checkpoint_blobs (thread, ns, channel, version, value_type, value)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (thread, ns, channel, version) DO UPDATE SET
                 value_type = excluded.value_type, value = excluded.value",
        )?;
        for blob in blobs {
            put_blob.execute(params![
                key.thread.as_str(),
                key.ns.as_str(),
                blob.channel,
                blob.version,
                blob.value.as_ref().map(|v| v.type_tag.as_str()),
                blob.value.as_ref().map(|v| v.bytes.as_slice()),
            ])?;
        }
    }
    tx.commit()?;
    Ok(())
}

/// Stores the pending writes made after checkpoint `at`, all or none, in one transaction,
/// whether or not that checkpoint is stored (LangGraph may put them first; they are keyed by
/// its key, not its row, and show once it is stored). An ordinary write (index ≥ 0) is
/// inserted unless its (task id, index) is stored; a special one (index < 0) replaces it.
pub(super) fn put_writes(
    conn: &mut Connection, at: &CheckpointKey, writes: &[PendingWrite],
) -> SqlResult<()> {
    if writes.is_empty() {
        return Ok(());
    }
    let tx = Tx::immediate(conn)?;
    {
        const INSERT: &str = "INSERT INTO agentmem_checkpoint_writes
                (thread, ns, checkpoint_id, task_id, idx, channel, value_type, value, task_path)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
            ON CONFLICT (thread, ns, checkpoint_id, task_id, idx) DO";
        let mut keep = tx.prepare_cached(&format!("{INSERT} NOTHING"))?;
        let mut replace = tx.prepare_cached(&format!(
            "{INSERT} UPDATE SET channel = excluded.channel, value_type = excluded.value_type,
                 value = excluded.value, task_path = excluded.task_path"
        ))?;
        for write in writes {
            let stmt = match write_replaces(write) {
                true => &mut replace,
                false => &mut keep,
            };
            stmt.execute(params![
                at.thread.as_str(),
                at.ns.as_str(),
                at.id.as_str(),
                write.task_id,
                write.idx,
                write.channel,
                write.value.type_tag,
                write.value.bytes,
                write.task_path,
            ])?;
        }
    }
    tx.commit()?;
    Ok(())
}
