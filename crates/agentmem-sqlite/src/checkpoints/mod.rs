//! Checkpoints ([`CheckpointStore`]): LangGraph's checkpointer model in three tables.
//!
//! - `agentmem_checkpoints`: one row per (thread, namespace, checkpoint id), with the parent,
//!   the opaque body (type tag and bytes), the channel versions and the metadata (JSON text,
//!   exactly as serialized), the metadata's `run_id` when it is a string (bytes, for the run
//!   index) and the creation time (microseconds).
//! - `agentmem_checkpoint_blobs`: channel values by (thread, namespace, channel, version); a
//!   `NULL` type tag is a channel emptied at that version.
//! - `agentmem_checkpoint_writes`: pending writes by (thread, namespace, checkpoint id, task
//!   id, index), with no link to the checkpoint row: LangGraph may write them before it puts
//!   the checkpoint, and they show once it is stored. Deletes, prunes and copies take them
//!   along explicitly (see `maintain`).
//!
//! Keys are compared with SQLite's BINARY collation, byte by byte, as the model orders them;
//! thread ids and namespaces are bound values, never spliced into SQL, so any text is safe.
//! Every write is one `IMMEDIATE` transaction (SQLite's single writer, across processes too);
//! every read is one deferred transaction, so a tuple's checkpoint, blobs and writes come from
//! one snapshot.

mod maintain;
mod read;
mod write;

use std::collections::BTreeMap;

use agentmem_core::{
    async_trait, ChannelBlob, Checkpoint, CheckpointId, CheckpointKey, CheckpointNs,
    CheckpointPrune, CheckpointQuery, CheckpointStore, CheckpointTuple, PendingWrite, Result,
    ThreadId, ThreadInfo, TypedBytes,
};
use rusqlite::Row;

use crate::error::{corrupt, SqlResult};
use crate::rows;
use crate::store::SqliteStore;

#[async_trait]
impl CheckpointStore for SqliteStore {
    async fn put_checkpoint(&self, checkpoint: &Checkpoint, blobs: &[ChannelBlob]) -> Result<()> {
        let (checkpoint, blobs) = (checkpoint.clone(), blobs.to_vec());
        self.pool()
            .write(move |conn| write::put(conn, &checkpoint, &blobs))
            .await
    }

    async fn put_writes(&self, at: &CheckpointKey, writes: &[PendingWrite]) -> Result<()> {
        let (at, writes) = (at.clone(), writes.to_vec());
        self.pool()
            .write(move |conn| write::put_writes(conn, &at, &writes))
            .await
    }

    async fn get_checkpoint(
        &self, thread: &ThreadId, ns: &CheckpointNs, id: Option<&CheckpointId>,
    ) -> Result<Option<CheckpointTuple>> {
        let (thread, ns, id) = (thread.clone(), ns.clone(), id.cloned());
        self.pool()
            .read(move |conn| read::get(conn, &thread, &ns, id.as_ref()))
            .await
    }

    async fn list_checkpoints(&self, query: &CheckpointQuery) -> Result<Vec<CheckpointTuple>> {
        let query = query.clone();
        self.pool().read(move |conn| read::list(conn, &query)).await
    }

    async fn list_threads(&self) -> Result<Vec<ThreadInfo>> {
        self.pool().read(read::threads).await
    }

    async fn delete_thread(&self, thread: &ThreadId) -> Result<bool> {
        let thread = thread.clone();
        self.pool()
            .write(move |conn| maintain::delete_thread(conn, &thread))
            .await
    }

    async fn delete_run_checkpoints(&self, run_ids: &[String]) -> Result<u64> {
        self.write_slice(run_ids, maintain::delete_runs).await
    }

    async fn copy_thread(&self, source: &ThreadId, target: &ThreadId) -> Result<u64> {
        let (source, target) = (source.clone(), target.clone());
        self.pool()
            .write(move |conn| maintain::copy_thread(conn, &source, &target))
            .await
    }

    async fn prune_checkpoints(&self, threads: &[ThreadId], keep: CheckpointPrune) -> Result<u64> {
        let threads = threads.to_vec();
        self.pool()
            .write(move |conn| maintain::prune(conn, &threads, keep))
            .await
    }
}

/// Checkpoint columns, in the order [`head`] and [`complete`] read them: what the filters need
/// first, then the body and channel versions, decoded only for the rows that pass.
const COLUMNS: &str = "c.thread, c.ns, c.checkpoint_id, c.parent_id, c.metadata, \
                       c.created_at, c.body_type, c.body, c.channel_versions";

/// What [`CheckpointQuery::matches`] looks at (key, parent, metadata, creation time), with an
/// empty body and no channel versions yet.
fn head(row: &Row<'_>) -> SqlResult<Checkpoint> {
    let metadata = row
        .get_ref(4)?
        .as_str()
        .map_err(|e| corrupt(format!("checkpoint metadata ({e})")))?;
    let checkpoint = Checkpoint {
        key: CheckpointKey {
            thread: name(row.get(0)?, "thread id", ThreadId::new)?,
            ns: name(row.get(1)?, "checkpoint namespace", CheckpointNs::new)?,
            id: name(row.get(2)?, "checkpoint id", CheckpointId::new)?,
        },
        parent: row
            .get::<_, Option<String>>(3)?
            .map(|p| name(p, "parent checkpoint id", CheckpointId::new))
            .transpose()?,
        body: TypedBytes::new(String::new(), Vec::new()),
        channel_versions: BTreeMap::new(),
        metadata: rows::metadata(Some(metadata))?,
        created_at: rows::time(row.get(5)?)?,
    };
    Ok(checkpoint)
}

/// Fills in the body and channel versions of a checkpoint [`head`] read from `row`.
fn complete(row: &Row<'_>, checkpoint: &mut Checkpoint) -> SqlResult<()> {
    checkpoint.body = TypedBytes::new(row.get::<_, String>(6)?, row.get::<_, Vec<u8>>(7)?);
    let versions = row
        .get_ref(8)?
        .as_str()
        .map_err(|e| corrupt(format!("channel versions ({e})")))?;
    checkpoint.channel_versions =
        serde_json::from_str(versions).map_err(|e| corrupt(format!("channel versions ({e})")))?;
    Ok(())
}

/// A stored key, validated again as it is read back (`CorruptData` when it no longer is one).
fn name<T>(
    value: String, what: &str, make: impl FnOnce(String) -> agentmem_core::Result<T>,
) -> SqlResult<T> {
    make(value).map_err(|e| corrupt(format!("{what}: {e}")))
}

/// A stored opaque value: a type tag and bytes, both present (a pending write, or a channel
/// value with a tag), `None` for a `NULL` tag (a channel emptied), `CorruptData` for bytes
/// missing beside a tag.
fn typed(type_tag: Option<String>, bytes: Option<Vec<u8>>) -> SqlResult<Option<TypedBytes>> {
    match (type_tag, bytes) {
        (None, _) => Ok(None),
        (Some(tag), Some(bytes)) => Ok(Some(TypedBytes::new(tag, bytes))),
        (Some(tag), None) => Err(corrupt(format!("value of type {tag:?} without bytes"))),
    }
}

#[cfg(test)]
mod tests;
