//! Locking of the graph: every operation holds the graph's in-process mutex (a fair queue of
//! this process's tasks) and runs on a blocking thread. A write takes the exclusive `flock` on
//! `graph/graph.lock` (other processes), catches the cache up with the log, applies its rule
//! and appends its record. A read answers from the cache when one `stat` shows the log as the
//! cache read it, and otherwise catches up under the lock as a write does.

use agentmem_core::{GraphState, Result};

use super::record::Record;
use super::replay::{GraphCtx, GraphSlot};
use crate::fsutil::{open_lock_file, FileLockGuard};
use crate::locking::blocking;
use crate::repair::Findings;
use crate::store::{FileStore, Inner};

impl Inner {
    fn graph_ctx(&self) -> GraphCtx<'_> {
        GraphCtx {
            layout: &self.layout,
            paths: self.layout.graph(),
            durability: self.durability,
        }
    }
}

/// Runs `op` on the slot with the graph's exclusive file lock held, after bringing the cache up
/// to date with the log; records what was repaired.
fn locked<T>(
    inner: &Inner,
    ctx: &GraphCtx<'_>,
    slot: &mut GraphSlot,
    op: impl FnOnce(&mut GraphSlot) -> Result<T>,
) -> Result<T> {
    let path = &ctx.paths.lock;
    let lock = match slot.lock_file.take() {
        Some(file) => file,
        None => open_lock_file(path)?,
    };
    let mut findings = Findings::new(true);
    let result = FileLockGuard::exclusive(&lock, path).and_then(|_held| {
        ctx.sync(slot, &mut findings)?;
        op(slot)
    });
    slot.lock_file = Some(lock);
    inner.repairs.extend(&findings);
    result
}

impl FileStore {
    /// Answers `read` from the graph as it is now, catching the cache up with the log first
    /// when another process (or handle) changed it.
    pub(crate) async fn graph_read<T, F>(&self, read: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&GraphState) -> T + Send + 'static,
    {
        let mut guard = self.inner.graph.clone().lock_owned().await;
        let inner = self.inner.clone();
        blocking(move || {
            let ctx = inner.graph_ctx();
            let slot = &mut *guard;
            if ctx.is_current(slot)? {
                return Ok(read(&slot.state));
            }
            locked(&inner, &ctx, slot, |slot| Ok(read(&slot.state)))
        })
        .await?
    }

    /// Runs the write `op` on the graph as it is now, with the exclusive lock held, and appends
    /// the record it returns (the record of what it changed; none when it changed nothing).
    /// `op` changes the graph only when it succeeds (a refused `add_observations` changes
    /// nothing), so an error leaves the cache right.
    pub(crate) async fn graph_write<T, F>(&self, op: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut GraphState) -> Result<(T, Option<Record>)> + Send + 'static,
    {
        let mut guard = self.inner.graph.clone().lock_owned().await;
        let inner = self.inner.clone();
        blocking(move || {
            let ctx = inner.graph_ctx();
            ctx.ensure_dir()?;
            locked(&inner, &ctx, &mut guard, |slot| {
                let (answer, record) = op(&mut slot.state)?;
                if let Some(record) = record {
                    ctx.commit(slot, &record)?;
                }
                Ok(answer)
            })
        })
        .await?
    }
}
