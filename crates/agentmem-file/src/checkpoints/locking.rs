//! Locking of checkpoint threads: every operation on a thread holds its in-process mutex (one
//! slot per thread, a fair queue of this process's tasks) and then its exclusive `flock`
//! (other processes), on a blocking thread, and starts by bringing the cached thread up to date
//! with the log. A copy holds two threads' locks, each pair taken in key order.

use std::collections::HashMap;
use std::sync::Arc;

use agentmem_core::{Result, ThreadId};

use super::thread::{ThreadCtx, ThreadSlot};
use crate::fsutil::{io_error, list_dir};
use crate::layout::{is_thread_key, thread_key};
use crate::locking::blocking;
use crate::repair::Findings;
use crate::store::{FileStore, Inner};

/// Thread slots kept before unused ones are dropped. Each holds up to two open files and a
/// thread's checkpoints, so this bounds both the descriptors and the memory a store keeps.
const MAX_IDLE_SLOTS: usize = 128;

/// One thread's slot behind its in-process mutex.
pub(crate) type SharedSlot = Arc<tokio::sync::Mutex<ThreadSlot>>;

/// The slots of the threads this store has used, by [`thread_key`].
pub(crate) type ThreadSlots = std::sync::Mutex<HashMap<String, SharedSlot>>;

/// What an operation does with a thread whose log does not exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Missing {
    /// Answers from an empty thread, without creating or locking anything: reads, deletions,
    /// prunes. A log comes into being whole and goes by an unlink, so at the instant of the
    /// `stat` the thread held nothing.
    Empty,
    /// Creates the thread's folder and takes its lock: the operation may create the log
    /// (`put_checkpoint`, `put_writes`).
    Create,
}

impl Inner {
    fn thread_ctx<'a>(&'a self, key: &'a str) -> ThreadCtx<'a> {
        ThreadCtx {
            layout: &self.layout,
            paths: self.layout.thread(key),
            key,
            durability: self.durability,
        }
    }
}

/// Runs `op` on the thread of `ctx` with its file lock held and its cache synced (or, for a
/// missing log under [`Missing::Empty`], on an empty thread without the lock).
fn locked<T>(
    ctx: &ThreadCtx<'_>, slot: &mut ThreadSlot, expected: Option<&ThreadId>, missing: Missing,
    f: &mut Findings, op: impl FnOnce(&mut ThreadSlot) -> Result<T>,
) -> Result<T> {
    match missing {
        Missing::Empty if !ctx.log_exists()? => {
            slot.reset();
            return op(slot);
        }
        Missing::Empty => {}
        Missing::Create => ctx.ensure_dir()?,
    }
    slot.lock(&ctx.paths)?;
    let result = ctx.sync(slot, expected, f).and_then(|()| op(slot));
    slot.unlock();
    result
}

impl FileStore {
    fn thread_slot(&self, key: &str) -> SharedSlot {
        let mut map = self.inner.threads.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(slot) = map.get(key) {
            return slot.clone();
        }
        if map.len() >= MAX_IDLE_SLOTS {
            // Drop slots nobody is using, closing their files; a slot in use is shared
            // (count > 1) and stays, so one thread never has two in-process mutexes.
            map.retain(|_, slot| Arc::strong_count(slot) > 1);
        }
        let slot = SharedSlot::default();
        map.insert(key.to_owned(), slot.clone());
        slot
    }

    /// Runs `op` on `thread` (see [`thread_op`](Self::thread_op)).
    pub(crate) async fn on_thread<T, F>(
        &self, thread: &ThreadId, missing: Missing, op: F,
    ) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&ThreadCtx<'_>, &mut ThreadSlot) -> Result<T> + Send + 'static,
    {
        self.thread_op(thread_key(thread), Some(thread.clone()), missing, op)
            .await
    }

    /// Runs `op` on a blocking thread with the in-process mutex and the file lock of the thread
    /// whose folder is `key` held, after bringing its cache up to date with the log; `expected`
    /// is the thread asked for, when known (a walk of `threads/` learns it from the log).
    pub(crate) async fn thread_op<T, F>(
        &self, key: String, expected: Option<ThreadId>, missing: Missing, op: F,
    ) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&ThreadCtx<'_>, &mut ThreadSlot) -> Result<T> + Send + 'static,
    {
        let mut guard = self.thread_slot(&key).lock_owned().await;
        let inner = self.inner.clone();
        blocking(move || {
            let ctx = inner.thread_ctx(&key);
            let mut findings = Findings::new(true);
            let result = locked(
                &ctx,
                &mut guard,
                expected.as_ref(),
                missing,
                &mut findings,
                |slot| op(&ctx, slot),
            );
            inner.repairs.extend(&findings);
            result
        })
        .await?
    }

    /// Runs `op` with the locks of two distinct threads held, `source`'s log present (else
    /// `absent` is the answer) and `target`'s folder created: their in-process mutexes and then
    /// their file locks, each pair taken in key order, so that two operations on the same two
    /// threads (in this process or another) never wait for each other in a cycle.
    pub(crate) async fn with_two_threads<T, F>(
        &self, source: &ThreadId, target: &ThreadId,
        absent: impl FnOnce() -> agentmem_core::Error + Send + 'static, op: F,
    ) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&ThreadCtx<'_>, &mut ThreadSlot, &ThreadCtx<'_>, &mut ThreadSlot) -> Result<T>
            + Send
            + 'static,
    {
        let (s_key, t_key) = (thread_key(source), thread_key(target));
        let source_first = s_key < t_key;
        let (first, second) = if source_first {
            (&s_key, &t_key)
        } else {
            (&t_key, &s_key)
        };
        let first_guard = self.thread_slot(first).lock_owned().await;
        let second_guard = self.thread_slot(second).lock_owned().await;
        let (mut s_guard, mut t_guard) = if source_first {
            (first_guard, second_guard)
        } else {
            (second_guard, first_guard)
        };
        let inner = self.inner.clone();
        let (source, target) = (source.clone(), target.clone());
        blocking(move || {
            let (s_ctx, t_ctx) = (inner.thread_ctx(&s_key), inner.thread_ctx(&t_key));
            if !s_ctx.log_exists()? {
                s_guard.reset();
                return Err(absent());
            }
            t_ctx.ensure_dir()?;
            let (s, t) = (&mut *s_guard, &mut *t_guard);
            // File locks in key order; released in any order.
            if source_first {
                s.lock(&s_ctx.paths)?;
                if let Err(e) = t.lock(&t_ctx.paths) {
                    s.unlock();
                    return Err(e);
                }
            } else {
                t.lock(&t_ctx.paths)?;
                if let Err(e) = s.lock(&s_ctx.paths) {
                    t.unlock();
                    return Err(e);
                }
            }
            let mut findings = Findings::new(true);
            let result = s_ctx
                .sync(s, Some(&source), &mut findings)
                .and_then(|()| t_ctx.sync(t, Some(&target), &mut findings))
                .and_then(|()| op(&s_ctx, s, &t_ctx, t));
            s.unlock();
            t.unlock();
            inner.repairs.extend(&findings);
            result
        })
        .await?
    }

    /// The folder names of every thread under `threads/`, sorted.
    pub(crate) async fn thread_keys(&self) -> Result<Vec<String>> {
        let dir = self.inner.layout.threads.clone();
        blocking(move || {
            let Some(entries) = list_dir(&dir)? else {
                return Ok(Vec::new());
            };
            let mut keys = Vec::new();
            for entry in entries {
                let entry = entry.map_err(|e| io_error(&dir, "cannot list", e))?;
                if let Some(name) = entry.file_name().to_str().filter(|n| is_thread_key(n)) {
                    keys.push(name.to_owned());
                }
            }
            keys.sort();
            Ok(keys)
        })
        .await?
    }
}
