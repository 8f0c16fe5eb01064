//! Checkpoints ([`CheckpointStore`]): one folder a thread, `threads/<key>/` (`key` the hex
//! SHA-256 of the thread id, see `layout.rs`), holding `checkpoints.jsonl`, an append-only
//! log of the thread's writes (`record.rs`) replayed into a cached
//! [`ThreadCheckpoints`](agentmem_core::checkpoint::ThreadCheckpoints), which applies every
//! rule of the contract.
//!
//! - `put_checkpoint` and `put_writes` append one line each (O(1) on a long thread): a
//!   checkpoint with its blobs, or a batch of writes, is all or nothing even when a crash tears
//!   the line, and a torn line is cut away on the next access (never acknowledged).
//! - Pending writes need not find their checkpoint (LangGraph may write them first): they are
//!   kept in the log, and a thread holding only writes has a log but is not listed
//!   (`ThreadCheckpoints` counts checkpoints only).
//! - `delete_thread` removes the log (writes without a checkpoint too); pruning, deleting runs
//!   and copying write the thread's new state whole (a temporary file, fsync, rename), so a
//!   crash leaves the old log or the new one; the log goes when nothing at all is left.
//! - Every operation holds the thread's in-process mutex and `flock` (`locking.rs`) and reads
//!   what other processes appended since it last looked (the file's identity and length tell),
//!   so several processes writing one thread lose nothing. Appends are fsynced under
//!   [`Durability::Fsync`](crate::Durability::Fsync).
//! - Listing without a thread walks `threads/`; each log's header holds the exact thread id.

mod locking;
mod record;
mod thread;

pub(crate) use locking::ThreadSlots;

use agentmem_core::checkpoint::{missing_thread, newest_first, thread_exists, ThreadCheckpoints};
use agentmem_core::{
    async_trait, ChannelBlob, Checkpoint, CheckpointId, CheckpointKey, CheckpointNs,
    CheckpointPrune, CheckpointQuery, CheckpointStore, CheckpointTuple, PendingWrite, Result,
    ThreadId, ThreadInfo,
};

use crate::store::FileStore;
use locking::Missing;
use record::RecordRef;
use thread::{ThreadCtx, ThreadSlot};

/// Applies `edit` to a copy of the thread's state and, when that changed it, makes the copy
/// the thread's (the log rewritten whole, or removed when nothing is left: a thread left with
/// pending writes alone keeps its log). Returns what `edit` returns (how many checkpoints
/// went).
fn change(
    ctx: &ThreadCtx<'_>, slot: &mut ThreadSlot, edit: impl FnOnce(&mut ThreadCheckpoints) -> u64,
) -> Result<u64> {
    let Some(thread) = slot.thread().cloned() else {
        return Ok(0); // No log: nothing to change.
    };
    let mut state = slot.state.clone();
    let gone = edit(&mut state);
    if state != slot.state {
        ctx.replace(slot, &thread, state)?;
    }
    Ok(gone)
}

#[async_trait]
impl CheckpointStore for FileStore {
    async fn put_checkpoint(&self, checkpoint: &Checkpoint, blobs: &[ChannelBlob]) -> Result<()> {
        let (checkpoint, blobs) = (checkpoint.clone(), blobs.to_vec());
        let thread = checkpoint.key.thread.clone();
        self.on_thread(&thread.clone(), Missing::Create, move |ctx, slot| {
            slot.state.put(&checkpoint, &blobs);
            let record = RecordRef::Put {
                checkpoint: &checkpoint,
                blobs: &blobs,
            };
            ctx.append(slot, &thread, &record)
        })
        .await
    }

    async fn put_writes(&self, at: &CheckpointKey, writes: &[PendingWrite]) -> Result<()> {
        if writes.is_empty() {
            return Ok(()); // Nothing to store: no log to create.
        }
        let (at, writes) = (at.clone(), writes.to_vec());
        // Whether or not the checkpoint is stored (yet): a thread without a log gets one.
        self.on_thread(&at.thread.clone(), Missing::Create, move |ctx, slot| {
            slot.state.put_writes(&at, &writes);
            let record = RecordRef::Writes {
                at: &at,
                writes: &writes,
            };
            ctx.append(slot, &at.thread, &record)
        })
        .await
    }

    async fn get_checkpoint(
        &self, thread: &ThreadId, ns: &CheckpointNs, id: Option<&CheckpointId>,
    ) -> Result<Option<CheckpointTuple>> {
        let (ns, id) = (ns.clone(), id.cloned());
        self.on_thread(thread, Missing::Empty, move |_, slot| {
            Ok(slot.state.get(&ns, id.as_ref()))
        })
        .await
    }

    async fn list_checkpoints(&self, query: &CheckpointQuery) -> Result<Vec<CheckpointTuple>> {
        let mut found = match &query.thread {
            Some(thread) => {
                let q = query.clone();
                self.on_thread(thread, Missing::Empty, move |_, slot| {
                    Ok(slot.state.select(&q))
                })
                .await?
            }
            None => {
                let mut found = Vec::new();
                for key in self.thread_keys().await? {
                    let q = query.clone();
                    let selected = self
                        .thread_op(key, None, Missing::Empty, move |_, slot| {
                            Ok(slot.state.select(&q))
                        })
                        .await?;
                    found.extend(selected);
                }
                found
            }
        };
        newest_first(&mut found, query.limit);
        Ok(found)
    }

    async fn list_threads(&self) -> Result<Vec<ThreadInfo>> {
        let mut threads = Vec::new();
        for key in self.thread_keys().await? {
            let info = self
                .thread_op(key, None, Missing::Empty, |_, slot| {
                    let thread = slot.thread().cloned();
                    let updated_at = slot.state.updated_at();
                    Ok(thread
                        .zip(updated_at)
                        .map(|(thread, updated_at)| ThreadInfo {
                            thread,
                            checkpoints: slot.state.len(),
                            updated_at,
                        }))
                })
                .await?;
            threads.extend(info);
        }
        threads.sort_by(|a, b| a.thread.cmp(&b.thread));
        Ok(threads)
    }

    async fn delete_thread(&self, thread: &ThreadId) -> Result<bool> {
        let id = thread.clone();
        self.on_thread(thread, Missing::Empty, move |ctx, slot| {
            // `true` only when it held a checkpoint, but pending writes alone go too.
            let held = !slot.state.is_empty();
            if slot.thread().is_some() {
                ctx.replace(slot, &id, ThreadCheckpoints::default())?;
            }
            Ok(held)
        })
        .await
    }

    async fn delete_run_checkpoints(&self, run_ids: &[String]) -> Result<u64> {
        let mut deleted = 0;
        for key in self.thread_keys().await? {
            let run_ids = run_ids.to_vec();
            deleted += self
                .thread_op(key, None, Missing::Empty, move |ctx, slot| {
                    change(ctx, slot, |state| state.delete_runs(&run_ids))
                })
                .await?;
        }
        Ok(deleted)
    }

    async fn copy_thread(&self, source: &ThreadId, target: &ThreadId) -> Result<u64> {
        if source == target {
            // It holds checkpoints (a conflict) or it does not (nothing to copy).
            let id = source.clone();
            return self
                .on_thread(source, Missing::Empty, move |_, slot| {
                    Err(if slot.state.is_empty() {
                        missing_thread(&id)
                    } else {
                        thread_exists(&id)
                    })
                })
                .await;
        }
        let (s_id, t_id) = (source.clone(), target.clone());
        let absent = source.clone();
        self.with_two_threads(
            source,
            target,
            move || missing_thread(&absent),
            move |_, s_slot, t_ctx, t_slot| {
                if s_slot.state.is_empty() {
                    return Err(missing_thread(&s_id));
                }
                if !t_slot.state.is_empty() {
                    return Err(thread_exists(&t_id));
                }
                let copy = s_slot.state.copied_to(&t_id);
                let copied = copy.len();
                t_ctx.replace(t_slot, &t_id, copy)?;
                Ok(copied)
            },
        )
        .await
    }

    async fn prune_checkpoints(&self, threads: &[ThreadId], keep: CheckpointPrune) -> Result<u64> {
        let mut pruned = 0;
        for thread in threads {
            pruned += self
                .on_thread(thread, Missing::Empty, move |ctx, slot| {
                    change(ctx, slot, |state| state.prune(keep))
                })
                .await?;
        }
        Ok(pruned)
    }
}
