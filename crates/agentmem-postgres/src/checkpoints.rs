//! [`CheckpointStore`] for [`PostgresStore`]: checkpoints, their channel values (blobs) and
//! pending writes in three tables (`schema.rs`, version 5), with the statements of
//! `sql/checkpoints.rs` and the rows of `checkpoint_rows.rs`.
//!
//! Atomicity and concurrency:
//! - `put_checkpoint` is one statement (checkpoint and blobs), `put_writes` one statement.
//! - Every read is one statement, so one snapshot: the checkpoints with the blobs they read and
//!   their writes, never a checkpoint without the blobs written with it.
//! - Pending writes are rows of their own, keyed by (thread, namespace, checkpoint id, task
//!   id, index), with no link to the checkpoint's row: they may come before it (LangGraph
//!   puts both from background threads) and show with it once it is stored.
//! - Each thread has an advisory lock (transaction-scoped, so it works behind PgBouncer in
//!   transaction mode). Puts of checkpoints and of writes take it shared as the first step of
//!   their statement, so they never wait for each other. `delete_thread`,
//!   `delete_run_checkpoints`, `prune_checkpoints` and `copy_thread` take it exclusive first
//!   (several threads in one sorted order, so they do not deadlock), then work in later
//!   statements, whose snapshots hold every put that committed before: they decide which
//!   blobs no checkpoint reads any more, and which writes go with the checkpoints, without a
//!   put adding one meanwhile. A put either committed before (and what it wrote is deleted or
//!   copied with the rest) or waits and comes after (and stays): a write a reader saw beside
//!   its checkpoint never outlives that checkpoint's delete.

use agentmem_core::checkpoint::{missing_thread, newest_first, thread_exists};
use agentmem_core::{
    ChannelBlob, Checkpoint, CheckpointId, CheckpointKey, CheckpointNs, CheckpointPrune,
    CheckpointQuery, CheckpointStore, CheckpointTuple, Metadata, PendingWrite, Result, ThreadId,
    ThreadInfo,
};
use async_trait::async_trait;
use deadpool_postgres::Transaction;
use tokio_postgres::types::{Json, ToSql};
use tokio_postgres::Error as PgError;

use crate::checkpoint_rows::{
    filter_column, lock_key, lock_keys, prefilter, thread_info, BlobColumns, TupleRows,
    WriteColumns,
};
use crate::sql::checkpoints::CheckpointSql;
use crate::statements::{Exec, Stmt};
use crate::store::{PostgresStore, READ_RETRIES};

/// What a delete of checkpoints in some threads runs: `delete` with its parameters, then
/// `clean` (`clean_threads` or `clean_blobs`) on the threads.
struct Delete<'a> {
    delete: &'a Stmt,
    params: &'a [&'a (dyn ToSql + Sync)],
    clean: &'a Stmt,
}

/// In `tx`: locks `threads` (their `keys`) exclusively, then runs `d`. Returns how many
/// checkpoints its delete removed.
async fn delete_locked(
    sql: &CheckpointSql, tx: &Transaction<'_>, keys: &[i32], threads: &[&str], d: Delete<'_>,
) -> std::result::Result<u64, PgError> {
    tx.execute_st(&sql.lock_threads, &[&keys]).await?;
    let deleted = tx.execute_st(d.delete, d.params).await?;
    tx.execute_st(d.clean, &[&threads]).await?;
    Ok(deleted)
}

impl PostgresStore {
    /// One run of a listing statement: the checkpoints of `query`'s thread (every thread's
    /// when `None`) passing its conditions and the `jsonb` pre-filter `filter`, at most
    /// `limit` (all when `None`).
    async fn list_once(
        &self, query: &CheckpointQuery, filter: &Option<Json<Metadata>>, limit: Option<i64>,
    ) -> Result<TupleRows> {
        let sql = &self.sql.checkpoints;
        let thread = query.thread.as_ref().map(ThreadId::as_str);
        let ns = query.ns.as_ref().map(CheckpointNs::as_str);
        let id = query.id.as_ref().map(CheckpointId::as_str);
        let before = query.before.as_ref().map(CheckpointId::as_str);
        let st = match thread {
            Some(_) => &sql.list_thread,
            None => &sql.list_all,
        };
        let params: [&(dyn ToSql + Sync); 6] = [&thread, &ns, &id, &before, filter, &limit];
        let rows = run!(self, READ_RETRIES, |client| async {
            client.query_st(st, &params).await
        })?;
        TupleRows::read(&rows)
    }

    /// Deletes checkpoints of `threads` with `delete` (its one parameter is the threads) and
    /// then every pending write but those of a checkpoint left (`clean_threads`), in one
    /// transaction; how many checkpoints went.
    async fn delete_in_threads(&self, threads: &[&str], delete: &Stmt) -> Result<u64> {
        if threads.is_empty() {
            return Ok(0);
        }
        let keys = lock_keys(self.schema(), threads);
        let sql = &self.sql.checkpoints;
        run!(self, 0, |client| async {
            let tx = client.transaction().await?;
            let d = Delete {
                delete,
                params: &[&threads],
                clean: &sql.clean_threads,
            };
            let deleted = delete_locked(sql, &tx, &keys, threads, d).await?;
            tx.commit().await?;
            Ok(deleted)
        })
    }
}

#[async_trait]
impl CheckpointStore for PostgresStore {
    async fn put_checkpoint(&self, checkpoint: &Checkpoint, blobs: &[ChannelBlob]) -> Result<()> {
        let key = &checkpoint.key;
        let lock = lock_key(self.schema(), key.thread.as_str());
        let (thread, ns, id) = (key.thread.as_str(), key.ns.as_str(), key.id.as_str());
        let parent = checkpoint.parent.as_ref().map(CheckpointId::as_str);
        let body_type = checkpoint.body.type_tag.as_str();
        let body = checkpoint.body.bytes.as_slice();
        let channels: Vec<&str> = checkpoint
            .channel_versions
            .keys()
            .map(String::as_str)
            .collect();
        let versions: Vec<&str> = checkpoint
            .channel_versions
            .values()
            .map(String::as_str)
            .collect();
        let metadata = Json(&checkpoint.metadata);
        let filter = filter_column(&checkpoint.metadata);
        let run_id = checkpoint.run_id().map(str::as_bytes);
        let b = BlobColumns::new(blobs);
        let params: [&(dyn ToSql + Sync); 17] = [
            &lock,
            &thread,
            &ns,
            &id,
            &parent,
            &body_type,
            &body,
            &channels,
            &versions,
            &metadata,
            &filter,
            &run_id,
            &checkpoint.created_at,
            &b.channels,
            &b.versions,
            &b.type_tags,
            &b.bytes,
        ];
        run!(self, 0, |client| async {
            client.execute_st(&self.sql.checkpoints.put, &params).await
        })?;
        Ok(())
    }

    async fn put_writes(&self, at: &CheckpointKey, writes: &[PendingWrite]) -> Result<()> {
        if writes.is_empty() {
            return Ok(());
        }
        let lock = lock_key(self.schema(), at.thread.as_str());
        let (thread, ns, id) = (at.thread.as_str(), at.ns.as_str(), at.id.as_str());
        let w = WriteColumns::new(writes);
        let params: [&(dyn ToSql + Sync); 10] = [
            &lock,
            &thread,
            &ns,
            &id,
            &w.task_ids,
            &w.idxs,
            &w.channels,
            &w.type_tags,
            &w.bytes,
            &w.task_paths,
        ];
        run!(self, 0, |client| async {
            client
                .execute_st(&self.sql.checkpoints.put_writes, &params)
                .await
        })?;
        Ok(())
    }

    async fn get_checkpoint(
        &self, thread: &ThreadId, ns: &CheckpointNs, id: Option<&CheckpointId>,
    ) -> Result<Option<CheckpointTuple>> {
        let sql = &self.sql.checkpoints;
        let (thread, ns) = (thread.as_str(), ns.as_str());
        let rows = match id {
            None => run!(self, READ_RETRIES, |client| async {
                client.query_st(&sql.get_latest, &[&thread, &ns]).await
            })?,
            Some(id) => {
                let id = id.as_str();
                run!(self, READ_RETRIES, |client| async {
                    client.query_st(&sql.get_by_id, &[&thread, &ns, &id]).await
                })?
            }
        };
        Ok(TupleRows::read(&rows)?.tuples(|_| true).into_iter().next())
    }

    /// One statement with the limit, the metadata filter pre-applied in the server and decided
    /// here; only when that rejected some and the limit may have cut matches off, once more
    /// without the limit.
    async fn list_checkpoints(&self, query: &CheckpointQuery) -> Result<Vec<CheckpointTuple>> {
        if query.limit == Some(0) {
            return Ok(Vec::new());
        }
        let filter = prefilter(&query.metadata).map(Json);
        let limit = query.limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX));
        let read = self.list_once(query, &filter, limit).await?;
        let fetched = read.len();
        let mut found = read.tuples(|c| query.matches(c));
        let cut_off = query.limit.is_some_and(|l| fetched == l && found.len() < l);
        if cut_off {
            found = self
                .list_once(query, &filter, None)
                .await?
                .tuples(|c| query.matches(c));
        }
        newest_first(&mut found, query.limit);
        Ok(found)
    }

    async fn list_threads(&self) -> Result<Vec<ThreadInfo>> {
        let rows = run!(self, READ_RETRIES, |client| async {
            client
                .query_st(&self.sql.checkpoints.list_threads, &[])
                .await
        })?;
        rows.iter().map(thread_info).collect()
    }

    async fn delete_thread(&self, thread: &ThreadId) -> Result<bool> {
        let deleted = self
            .delete_in_threads(&[thread.as_str()], &self.sql.checkpoints.delete_threads)
            .await?;
        Ok(deleted > 0)
    }

    async fn delete_run_checkpoints(&self, run_ids: &[String]) -> Result<u64> {
        if run_ids.is_empty() {
            return Ok(0);
        }
        let runs: Vec<&[u8]> = run_ids.iter().map(|r| r.as_bytes()).collect();
        let sql = &self.sql.checkpoints;
        run!(self, 0, |client| async {
            let tx = client.transaction().await?;
            // Only the threads found here are locked and deleted from: a checkpoint of these
            // runs put later in another thread comes after this delete.
            let threads: Vec<String> = tx.column_st(&sql.run_threads, &[&runs]).await?;
            if threads.is_empty() {
                return Ok(0);
            }
            let threads: Vec<&str> = threads.iter().map(String::as_str).collect();
            let keys = lock_keys(self.schema(), &threads);
            // The delete takes the runs' writes with it; other writes (made ahead of a
            // checkpoint not stored yet) stay.
            let d = Delete {
                delete: &sql.delete_runs,
                params: &[&runs, &threads],
                clean: &sql.clean_blobs,
            };
            let deleted = delete_locked(sql, &tx, &keys, &threads, d).await?;
            tx.commit().await?;
            Ok(deleted)
        })
    }

    async fn copy_thread(&self, source: &ThreadId, target: &ThreadId) -> Result<u64> {
        let (src, dst) = (source.as_str(), target.as_str());
        let keys = lock_keys(self.schema(), &[src, dst]);
        let sql = &self.sql.checkpoints;
        let copied = run!(self, 0, |client| async {
            let tx = client.transaction().await?;
            tx.execute_st(&sql.lock_threads, &[&keys]).await?;
            let held = tx.query_one_st(&sql.threads_held, &[&src, &dst]).await?;
            if !held.try_get::<_, bool>(0)? {
                return Ok(Err(missing_thread(source)));
            }
            if held.try_get::<_, bool>(1)? {
                return Ok(Err(thread_exists(target)));
            }
            // A target without checkpoints may still hold pending writes made ahead of a
            // checkpoint: the copy replaces them (as in the in-memory store, which replaces
            // the whole thread), so it inserts into empty space.
            tx.execute_st(&sql.clean_threads, &[&vec![dst]]).await?;
            let copied: i64 = tx
                .query_one_st(&sql.copy_thread, &[&src, &dst])
                .await?
                .try_get(0)?;
            tx.commit().await?;
            Ok(Ok(copied))
        })??;
        crate::codec::count(copied)
    }

    async fn prune_checkpoints(&self, threads: &[ThreadId], keep: CheckpointPrune) -> Result<u64> {
        let threads: Vec<&str> = threads.iter().map(ThreadId::as_str).collect();
        let sql = &self.sql.checkpoints;
        let delete = match keep {
            CheckpointPrune::KeepLatest => &sql.delete_older,
            CheckpointPrune::DeleteAll => &sql.delete_threads,
            // A rule this build does not know must not delete anything by accident.
            other => {
                return Err(agentmem_core::Error::unsupported(format!(
                    "prune rule {other:?} is not supported by the postgres store"
                )))
            }
        };
        self.delete_in_threads(&threads, delete).await
    }
}
