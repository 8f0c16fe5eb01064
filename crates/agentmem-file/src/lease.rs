//! Leases: a busy session keeps its file lock between operations.
//!
//! Taking the cross-process `flock` and checking the files for other processes' writes cost
//! more than a small buffered append itself. So under
//! [`Durability::Buffered`](crate::Durability::Buffered), after an operation this process
//! keeps the session's lock (a lease) instead of dropping it. While the lease lasts no other
//! process can have written, so the next operations skip the lock and the checks, and an
//! append runs on the calling task's thread without a hop to the blocking pool.
//!
//! A lease ends [`LEASE_IDLE`] after the last operation (ended by the store's lease thread) or
//! after the first operation past [`LEASE_MAX`] from its start, whichever comes first, so
//! another process waits for a busy session at most about [`LEASE_MAX`], and for an idle one
//! about [`LEASE_IDLE`]. Durable appends take no lease: they leave the lock before their
//! `fdatasync`, so that other processes' appends share it (see `commit.rs`).

use std::sync::{OnceLock, Weak};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// How long a lease outlives its session's last operation.
pub(crate) const LEASE_IDLE: Duration = Duration::from_millis(2);
/// How long one lease may last while operations keep coming.
pub(crate) const LEASE_MAX: Duration = Duration::from_millis(20);

/// This process holds the session's file lock between operations since `since`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lease {
    since: Instant,
    last: Instant,
}

impl Lease {
    pub(crate) fn new(now: Instant) -> Self {
        Lease {
            since: now,
            last: now,
        }
    }

    /// Whether another operation may still run under this lease.
    pub(crate) fn is_fresh(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.since) < LEASE_MAX
    }

    /// Whether the session has been idle long enough for the lease to end.
    pub(crate) fn is_idle(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.last) >= LEASE_IDLE
    }

    /// Notes an operation at `now`.
    pub(crate) fn touch(&mut self, now: Instant) {
        self.last = now;
    }
}

/// The thread that ends a store's idle leases. Started with the first lease; it holds the
/// store weakly, and exits once the store is gone (dropping the store closes the lock files,
/// which releases their locks anyway).
#[derive(Debug, Default)]
pub(crate) struct LeaseThread {
    thread: OnceLock<Option<Thread>>,
}

impl LeaseThread {
    /// Wakes the thread (starting it the first time) because a lease began; `false` when no
    /// thread could be started, and then the lease must end with its operation. `end_idle`
    /// ends the idle leases of `store` and says whether any lease is left.
    pub(crate) fn lease_started<T: Send + Sync + 'static>(
        &self, store: Weak<T>, end_idle: fn(&T) -> bool,
    ) -> bool {
        let thread = self.thread.get_or_init(|| {
            std::thread::Builder::new()
                .name("agentmem-file-leases".into())
                .spawn(move || run(store, end_idle))
                .map(|handle| handle.thread().clone())
                .inspect_err(|e| tracing::warn!(error = %e, "cannot start the file lease thread"))
                .ok()
        });
        match thread {
            Some(thread) => {
                thread.unpark();
                true
            }
            None => false,
        }
    }

    /// Wakes the thread so that it sees its store is gone.
    pub(crate) fn store_dropped(&self) {
        if let Some(Some(thread)) = self.thread.get() {
            thread.unpark();
        }
    }
}

fn run<T>(store: Weak<T>, end_idle: fn(&T) -> bool) {
    loop {
        let Some(strong) = store.upgrade() else {
            return;
        };
        let leases_left = end_idle(&strong);
        drop(strong);
        if leases_left {
            std::thread::park_timeout(LEASE_IDLE);
        } else {
            // Until the next lease starts (an unpark made before this park returns at once).
            std::thread::park();
        }
    }
}
