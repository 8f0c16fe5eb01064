//! [`CheckpointStore`] for [`RedisStore`]: each operation is one Lua script on the store's
//! slot (`lua/cp_*.lua`, on top of `lua/checkpoint.lua`), so a checkpoint and its blobs, a
//! batch of pending writes, a thread's deletion, copy or pruning each happen in one atomic
//! step, also on a Redis Cluster (every key starts with the store's root). Pending writes are
//! kept per checkpoint id whether or not that checkpoint is stored (LangGraph may write them
//! first), each thread indexing its write hashes so deleting or pruning it leaves none behind.
//! Listing is the one operation that may take several calls: see
//! [`RedisStore::list_checkpoints`].

use agentmem_core::checkpoint::{missing_thread, newest_first, thread_exists};
use agentmem_core::{
    async_trait, ChannelBlob, Checkpoint, CheckpointId, CheckpointKey, CheckpointNs,
    CheckpointPrune, CheckpointQuery, CheckpointStore, CheckpointTuple, Error, PendingWrite,
    Result, ThreadId, ThreadInfo,
};

use crate::checkpoint_codec::{
    blob_field, blob_value, checkpoint_fields, created_score, filter_fields, thread_info,
    tuple_from, write_field, write_value, Row, ThreadRow, LIST_BUDGET,
};
use crate::store::{sorted_rows, RedisStore};

/// `'1'` and the value when given, `'0'` and `""` when not (the scripts' optional arguments).
fn optional(value: Option<&str>) -> (&'static str, &str) {
    match value {
        Some(v) => ("1", v),
        None => ("0", ""),
    }
}

impl RedisStore {
    /// One `cp_list.lua` call: the rows of at most about `limit` checkpoints `query` selects,
    /// walking newest first from `cursor`, and the cursor to go on from (`None` at the end).
    async fn list_batch(
        &self, query: &CheckpointQuery, limit: Option<usize>, cursor: Option<&[u8]>,
    ) -> Result<(Vec<Row>, Option<Vec<u8>>)> {
        let mut inv = self.keys.invoke(&self.scripts.cp_list);
        let thread = optional(query.thread.as_ref().map(ThreadId::as_str));
        let ns = optional(query.ns.as_ref().map(CheckpointNs::as_str));
        let id = optional(query.id.as_ref().map(CheckpointId::as_str));
        let before = optional(query.before.as_ref().map(CheckpointId::as_str));
        for (flag, value) in [thread, ns, id, before] {
            inv.arg(flag).arg(value);
        }
        inv.arg(limit.map(|l| l.to_string()).unwrap_or_default())
            .arg(cursor.unwrap_or_default())
            .arg(LIST_BUDGET);
        let filter = filter_fields(&query.metadata);
        inv.arg(filter.len());
        for (field, value) in &filter {
            inv.arg(field.as_slice()).arg(value.as_str());
        }
        self.invoke(&inv).await
    }
}

#[async_trait]
impl CheckpointStore for RedisStore {
    async fn put_checkpoint(&self, checkpoint: &Checkpoint, blobs: &[ChannelBlob]) -> Result<()> {
        checkpoint.validate()?;
        blobs.iter().try_for_each(ChannelBlob::validate)?;
        let key = &checkpoint.key;
        let fields = checkpoint_fields(checkpoint)?;
        let mut inv = self.keys.invoke(&self.scripts.cp_put);
        let run = optional(checkpoint.run_id());
        inv.arg(key.thread.as_str())
            .arg(key.ns.as_str())
            .arg(key.id.as_str())
            .arg(created_score(checkpoint.created_at))
            .arg(run.0)
            .arg(run.1)
            .arg(fields.len());
        for (field, value) in &fields {
            inv.arg(field.as_slice()).arg(value.as_slice());
        }
        for blob in blobs {
            inv.arg(blob_field(&blob.channel, &blob.version)?)
                .arg(blob_value(blob.value.as_ref())?);
        }
        let _: i64 = self.invoke(&inv).await?;
        Ok(())
    }

    async fn put_writes(&self, at: &CheckpointKey, writes: &[PendingWrite]) -> Result<()> {
        writes.iter().try_for_each(PendingWrite::validate)?;
        let mut inv = self.keys.invoke(&self.scripts.cp_writes);
        inv.arg(at.thread.as_str())
            .arg(at.ns.as_str())
            .arg(at.id.as_str());
        for write in writes {
            let mode = if write.idx < 0 { "r" } else { "n" };
            inv.arg(write_field(write)?)
                .arg(write_value(write)?)
                .arg(mode);
        }
        let _: i64 = self.invoke(&inv).await?;
        Ok(())
    }

    async fn get_checkpoint(
        &self, thread: &ThreadId, ns: &CheckpointNs, id: Option<&CheckpointId>,
    ) -> Result<Option<CheckpointTuple>> {
        let mut inv = self.keys.invoke(&self.scripts.cp_get);
        let (flag, id) = optional(id.map(CheckpointId::as_str));
        inv.arg(thread.as_str()).arg(ns.as_str()).arg(flag).arg(id);
        let row: Option<Row> = self.invoke(&inv).await?;
        row.map(tuple_from).transpose()
    }

    /// Walks the narrowest index (the namespace's, the thread's or the store's) newest first
    /// in calls of at most `LIST_BUDGET` members each, so the server is never blocked for
    /// long. The script pre-checks the metadata filter on canonical JSON; every row is checked
    /// again here with [`CheckpointQuery::matches`], and calls continue until `limit` rows
    /// passed or the index ends. Each call is atomic; a listing of more than one call may
    /// see writes made between them.
    async fn list_checkpoints(&self, query: &CheckpointQuery) -> Result<Vec<CheckpointTuple>> {
        query.validate()?;
        if query.limit == Some(0) {
            return Ok(Vec::new());
        }
        let mut found = Vec::new();
        let mut cursor: Option<Vec<u8>> = None;
        loop {
            let remaining = query.limit.map(|l| l.saturating_sub(found.len()));
            let (rows, next) = self.list_batch(query, remaining, cursor.as_deref()).await?;
            for row in rows {
                let tuple = tuple_from(row)?;
                if query.matches(&tuple.checkpoint) {
                    found.push(tuple);
                }
            }
            let full = query.limit.is_some_and(|l| found.len() >= l);
            match next {
                Some(next) if !full => cursor = Some(next),
                _ => break,
            }
        }
        newest_first(&mut found, query.limit);
        Ok(found)
    }

    async fn list_threads(&self) -> Result<Vec<ThreadInfo>> {
        let inv = self.keys.invoke(&self.scripts.cp_threads);
        let rows: Vec<ThreadRow> = self.invoke(&inv).await?;
        sorted_rows(rows, thread_info, |t| &t.thread)
    }

    async fn delete_thread(&self, thread: &ThreadId) -> Result<bool> {
        let mut inv = self.keys.invoke(&self.scripts.cp_delete_thread);
        inv.arg(thread.as_str());
        let deleted: u64 = self.invoke(&inv).await?;
        Ok(deleted > 0)
    }

    async fn delete_run_checkpoints(&self, run_ids: &[String]) -> Result<u64> {
        if run_ids.is_empty() {
            return Ok(0);
        }
        let mut inv = self.keys.invoke(&self.scripts.cp_delete_runs);
        for run in run_ids {
            inv.arg(run.as_str());
        }
        self.invoke(&inv).await
    }

    async fn copy_thread(&self, source: &ThreadId, target: &ThreadId) -> Result<u64> {
        let mut inv = self.keys.invoke(&self.scripts.cp_copy);
        inv.arg(source.as_str()).arg(target.as_str());
        let copied: i64 = self.invoke(&inv).await?;
        match copied {
            -1 => Err(missing_thread(source)),
            -2 => Err(thread_exists(target)),
            n => u64::try_from(n)
                .map_err(|_| Error::corrupt(format!("unexpected reply {n} from copy_thread"))),
        }
    }

    async fn prune_checkpoints(&self, threads: &[ThreadId], keep: CheckpointPrune) -> Result<u64> {
        if threads.is_empty() {
            return Ok(0);
        }
        let mode = match keep {
            CheckpointPrune::DeleteAll => "all",
            CheckpointPrune::KeepLatest => "latest",
            other => {
                return Err(Error::unsupported(format!(
                    "prune mode {other:?} is not supported by the redis backend"
                )))
            }
        };
        let mut inv = self.keys.invoke(&self.scripts.cp_prune);
        inv.arg(mode);
        for thread in threads {
            inv.arg(thread.as_str());
        }
        self.invoke(&inv).await
    }
}
