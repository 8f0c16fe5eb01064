//! Locking: every operation on a session holds its in-process mutex (a fair queue of this
//! process's tasks, one slot per session) and then its exclusive `flock` (other processes),
//! on a blocking thread. Under a lease (see `lease.rs`) the file lock outlives the operation;
//! a buffered or uncontended durable append runs inline, without the hop to the blocking pool.
//! The memory log has one slot and lock of its own.

use std::sync::Arc;
use std::time::Instant;

use agentmem_core::{Error, Message, Result, SessionId};

use crate::commit::Ticket;
use crate::config::Durability;
use crate::fsutil::{io_error, open_lock_file, FileLockGuard};
use crate::lease::Lease;
use crate::memories::{MemoryCtx, MemorySlot};
use crate::repair::Findings;
use crate::session::{SessionCtx, SessionSlot};
use crate::store::{FileStore, Inner};

/// Session slots kept before unused ones are dropped. Each holds up to three open files, so
/// this bounds the descriptors a store keeps (well under the usual limit of 1,024).
const MAX_IDLE_SLOTS: usize = 128;

impl Inner {
    /// Where session `id` lives, for one operation.
    pub(crate) fn session_ctx<'a>(
        &self, id: &'a SessionId, slot: &mut SessionSlot,
    ) -> SessionCtx<'a> {
        let paths = slot
            .paths
            .get_or_insert_with(|| Arc::new(self.layout.session(id)))
            .clone();
        SessionCtx {
            id,
            paths,
            durability: self.durability,
            ignores_case: self.ignores_case,
        }
    }

    /// Ends the leases idle for [`LEASE_IDLE`](crate::lease::LEASE_IDLE); says whether any
    /// lease is left. A session in use keeps its lease: its operation notes itself on it.
    pub(crate) fn end_idle_leases(&self) -> bool {
        let slots: Vec<_> = self
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect();
        let now = Instant::now();
        let mut left = false;
        for slot in slots {
            let Ok(mut slot) = slot.try_lock() else {
                left = true;
                continue;
            };
            match slot.lease {
                Some(lease) if lease.is_idle(now) => end_lease(&mut slot),
                Some(_) => left = true,
                None => {}
            }
        }
        left
    }
}

impl FileStore {
    /// The session's slot, its in-process mutex held (queued fairly behind this process's
    /// other operations on it).
    pub(crate) async fn lock_slot(
        &self, session: &SessionId,
    ) -> tokio::sync::OwnedMutexGuard<SessionSlot> {
        self.slot(session).lock_owned().await
    }

    fn slot(&self, session: &SessionId) -> Arc<tokio::sync::Mutex<SessionSlot>> {
        let mut map = self
            .inner
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(slot) = map.get(session) {
            return slot.clone();
        }
        if map.len() >= MAX_IDLE_SLOTS {
            // Drop slots nobody is using, closing their files; a slot in use is shared
            // (count > 1) and stays, so one session never has two in-process mutexes.
            map.retain(|_, slot| Arc::strong_count(slot) > 1);
        }
        let slot = Arc::new(tokio::sync::Mutex::new(SessionSlot::default()));
        map.insert(session.clone(), slot.clone());
        slot
    }

    /// Runs `op` on the session as [`with_locked_slot`](Self::with_locked_slot) does,
    /// repairing what it finds.
    pub(crate) async fn session_op<T, F>(&self, session: &SessionId, op: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&SessionCtx<'_>, &mut SessionSlot, &mut Findings) -> Result<T> + Send + 'static,
    {
        self.with_locked_slot(self.lock_slot(session).await, session, true, op)
            .await
            .map(|(value, _)| value)
    }

    /// Runs `op` on a blocking thread with the session's in-process mutex (`guard`: the fair
    /// queue of this process's tasks) and its exclusive file lock (other processes) held. The
    /// lock is taken unless a lease kept it, and afterwards kept as a lease or released.
    pub(crate) async fn with_locked_slot<T, F>(
        &self, mut guard: tokio::sync::OwnedMutexGuard<SessionSlot>, session: &SessionId,
        fix: bool, op: F,
    ) -> Result<(T, Findings)>
    where
        T: Send + 'static,
        F: FnOnce(&SessionCtx<'_>, &mut SessionSlot, &mut Findings) -> Result<T> + Send + 'static,
    {
        let inner = self.inner.clone();
        let id = session.clone();
        let (result, findings, leased) = blocking(move || {
            let ctx = inner.session_ctx(&id, &mut guard);
            let mut findings = Findings::new(fix);
            let result = Self::locked(&ctx, &mut guard, |slot| op(&ctx, slot, &mut findings));
            inner.repairs.extend(&findings);
            let leased = Self::after_op(&inner, &mut guard, result.is_ok());
            (result, findings, leased)
        })
        .await?;
        if leased {
            self.lease_started();
        }
        result.map(|value| (value, findings))
    }

    /// Runs `op` with the session's file lock held: kept by a lease, or taken here (blocking).
    fn locked<T>(
        ctx: &SessionCtx<'_>, slot: &mut SessionSlot,
        op: impl FnOnce(&mut SessionSlot) -> Result<T>,
    ) -> Result<T> {
        if slot.group.take_stale() {
            // A durable append's fsync failed: trust nothing cached.
            slot.open = None;
        }
        if slot.lease.is_none() {
            let lock = match slot.lock_file.take() {
                Some(file) => file,
                None => open_lock_file(&ctx.paths.lock)?,
            };
            lock.lock()
                .map_err(|e| io_error(&ctx.paths.lock, "cannot lock", e))?;
            slot.lock_file = Some(lock);
        }
        op(slot)
    }

    /// After an operation on a session whose lock is held: keeps the lock as a lease when the
    /// operation succeeded, appends are buffered and the lease is not too old; else releases
    /// it. Says whether a new lease began.
    fn after_op(inner: &Arc<Inner>, slot: &mut SessionSlot, ok: bool) -> bool {
        let now = Instant::now();
        let keep = ok
            && inner.durability == Durability::Buffered
            && slot.open.is_some()
            && slot.lease.is_none_or(|lease| lease.is_fresh(now));
        if !keep {
            slot.lease = None;
            release_lock(slot);
            return false;
        }
        match &mut slot.lease {
            Some(lease) => {
                lease.touch(now);
                false
            }
            None => {
                slot.lease = Some(Lease::new(now));
                true
            }
        }
    }

    /// Makes sure the lease thread runs, since a lease began; without one, ends the leases.
    pub(crate) fn lease_started(&self) {
        let weak = Arc::downgrade(&self.inner);
        if !self
            .inner
            .leases
            .lease_started(weak, Inner::end_idle_leases)
        {
            // No thread to end idle leases: end them now rather than hold locks for good.
            for slot in self
                .inner
                .sessions
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .values()
            {
                if let Ok(mut slot) = slot.try_lock() {
                    end_lease(&mut slot);
                }
            }
        }
    }

    /// The append on the calling thread (which holds the session's in-process mutex), when
    /// this process holds the session's state: then the write is two small writes to open
    /// files, cheaper than a hop to the blocking pool. A buffered store needs its lease (no
    /// lock to take, nothing to check); a durable one takes the file lock without waiting and
    /// checks that no other process changed the files, then leaves the fsync to the caller
    /// (off this thread). `None` when this does not apply: the caller takes the blocking path,
    /// which also waits for the lock and reads what others wrote.
    pub(crate) fn append_inline(
        &self, session: &SessionId, slot: &mut SessionSlot, messages: &[Message],
    ) -> Option<Result<Option<Ticket>>> {
        slot.open.as_ref()?;
        if slot.expired_now() {
            // A write to an expired session starts a new one: the blocking path does that.
            return None;
        }
        let ctx = self.inner.session_ctx(session, slot);
        let result = match self.inner.durability {
            Durability::Buffered => {
                let now = Instant::now();
                let lease = slot.lease.as_mut()?;
                if !lease.is_fresh(now) {
                    return None;
                }
                lease.touch(now);
                let result = ctx.append_existing(slot, messages);
                if result.is_err() {
                    slot.open = None;
                    end_lease(slot);
                }
                result
            }
            Durability::Fsync => {
                if slot.lease.is_some() || slot.group.is_stale() {
                    return None;
                }
                slot.lock_file.as_ref()?.try_lock().ok()?;
                let result = match ctx.unchanged(slot) {
                    Ok(true) => ctx.append_existing(slot, messages),
                    Ok(false) => {
                        release_lock(slot);
                        return None;
                    }
                    Err(e) => Err(e),
                };
                if result.is_err() {
                    slot.open = None;
                }
                release_lock(slot);
                result
            }
        };
        Some(result)
    }

    /// Runs `op` with the locks of two distinct sessions held: their in-process mutexes and
    /// then their file locks, each pair taken in id order, so that two operations on the same
    /// two sessions (in this process or another) never wait for each other in a cycle. A
    /// lease this process kept on either is ended first, for the same reason.
    pub(crate) async fn with_two_sessions<T, F>(
        &self, a: &SessionId, b: &SessionId, op: F,
    ) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(
                &SessionCtx<'_>,
                &mut SessionSlot,
                &SessionCtx<'_>,
                &mut SessionSlot,
                &mut Findings,
            ) -> Result<T>
            + Send
            + 'static,
    {
        let a_first = a < b;
        let (first, second) = if a_first { (a, b) } else { (b, a) };
        let mut first_guard = self.lock_slot(first).await;
        let mut second_guard = self.lock_slot(second).await;
        let inner = self.inner.clone();
        let (first, second) = (first.clone(), second.clone());
        let (result, leased) = blocking(move || {
            let first_ctx = inner.session_ctx(&first, &mut first_guard);
            let second_ctx = inner.session_ctx(&second, &mut second_guard);
            end_lease(&mut first_guard);
            end_lease(&mut second_guard);
            let mut findings = Findings::new(true);
            let result = Self::locked(&first_ctx, &mut first_guard, |first_slot| {
                Self::locked(&second_ctx, &mut second_guard, |second_slot| {
                    let f = &mut findings;
                    if a_first {
                        op(&first_ctx, first_slot, &second_ctx, second_slot, f)
                    } else {
                        op(&second_ctx, second_slot, &first_ctx, first_slot, f)
                    }
                })
            });
            inner.repairs.extend(&findings);
            let ok = result.is_ok();
            let leased = Self::after_op(&inner, &mut second_guard, ok);
            let leased = Self::after_op(&inner, &mut first_guard, ok) || leased;
            (result, leased)
        })
        .await?;
        if leased {
            self.lease_started();
        }
        result
    }

    /// Runs `op` on the memory log with its in-process mutex and exclusive file lock held,
    /// after bringing the cached items up to date with the file (every operation starts from
    /// what other processes wrote).
    pub(crate) async fn memory_op<T, F>(&self, op: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&MemoryCtx<'_>, &mut MemorySlot) -> Result<T> + Send + 'static,
    {
        let mut guard = self.inner.memories.clone().lock_owned().await;
        let inner = self.inner.clone();
        blocking(move || {
            let ctx = MemoryCtx {
                layout: &inner.layout,
                durability: inner.durability,
            };
            let lock_path = &inner.layout.memories_lock;
            let lock = match guard.lock_file.take() {
                Some(file) => file,
                None => open_lock_file(lock_path)?,
            };
            let mut findings = Findings::new(true);
            let result = {
                let _held = FileLockGuard::exclusive(&lock, lock_path)?;
                ctx.sync(&mut guard, &mut findings)
                    .and_then(|()| op(&ctx, &mut guard))
            };
            guard.lock_file = Some(lock);
            inner.repairs.extend(&findings);
            result
        })
        .await?
    }
}

/// Ends the session's lease, releasing the file lock it kept.
fn end_lease(slot: &mut SessionSlot) {
    if slot.lease.take().is_some() {
        release_lock(slot);
    }
}

/// Releases the session's file lock (held by the caller).
fn release_lock(slot: &mut SessionSlot) {
    if let Some(file) = &slot.lock_file {
        // If unlocking fails the lock is released when the file is closed: close it.
        if let Err(e) = file.unlock() {
            tracing::warn!(error = %e, "cannot release a file lock");
            slot.lock_file = None;
        }
    }
}

/// Runs `work` on tokio's blocking pool (file I/O and `flock` block their thread).
pub(crate) async fn blocking<T, F>(work: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| Error::backend("a blocking file task failed").with_source(e))
}
