//! Group commit: durable appends to one session share `fdatasync`s.
//!
//! Under [`Durability::Fsync`](crate::Durability::Fsync) an append writes its line with the
//! session's locks held, takes a ticket, leaves the locks and waits until a sync covers its
//! ticket. The session's syncer (a blocking thread, started by the first ticket and running
//! while tickets keep coming) syncs the log for every append written so far, again and again,
//! so appends written during one sync are covered by the next. Before each sync it gives the
//! writers the previous sync acknowledged a moment to write again (half a sync, 2 ms at most),
//! so that `n` busy writers share one sync per round instead of falling into two groups that
//! take turns. Writers in other processes, not queued behind a sync under the file lock,
//! share the file system's journal commits.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use agentmem_core::{Error, Result};

/// The longest a sync waits for the writers it just acknowledged to write again.
const MAX_GATHER: Duration = Duration::from_millis(2);

/// One session's group commit; shared by the session's slot and the appends waiting on it.
#[derive(Debug, Default)]
pub(crate) struct GroupCommit {
    state: Mutex<State>,
    /// Notified after each sync: waiters check whether it covered them.
    synced: tokio::sync::Notify,
    /// Signalled when the writers acknowledged by the last sync have all written again.
    returned: Condvar,
    /// A syncer runs (or is about to). Changed with `state` locked, except by a syncer dropped
    /// before it ran, which may be dropped where `state` is locked.
    syncing: AtomicBool,
}

#[derive(Debug, Default)]
struct State {
    /// Appends written so far; an append's ticket is this count just after its write.
    written: u64,
    /// Every append with a ticket up to this one is on disk.
    synced: u64,
    /// Every append with a ticket up to this one was in a sync that failed: whether it reached
    /// the disk is unknown, so it is never acknowledged.
    failed: u64,
    /// The log the latest append wrote to, and its path (for errors).
    file: Option<(Arc<File>, PathBuf)>,
    /// How many of the appends the last sync acknowledged have not been followed by another
    /// append since: their writers are probably about to write again.
    returning: u64,
    /// How long the last sync took.
    last_sync: Duration,
    /// A sync failed since the session's state was last reloaded.
    stale: bool,
    /// Why the latest failed sync failed.
    error: Option<(std::io::ErrorKind, String)>,
}

impl State {
    /// The error of an append whose sync failed.
    fn failure(&self) -> Error {
        let (kind, why) = self
            .error
            .clone()
            .unwrap_or((std::io::ErrorKind::Other, "unknown".into()));
        let path = self.file.as_ref().map(|(_, p)| p.display().to_string());
        Error::io(
            format!(
                "cannot fsync {} (this append may or may not be in the session)",
                path.as_deref().unwrap_or("the session log")
            ),
            std::io::Error::new(kind, why),
        )
    }
}

/// What an append waits for: its place in the session's group commit.
#[derive(Debug)]
pub(crate) struct Ticket {
    group: Arc<GroupCommit>,
    number: u64,
}

impl GroupCommit {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records an append just written to `log` (at `path`) and makes sure a syncer runs.
    /// Called with the session's locks held, so tickets follow the order of the lines in the
    /// log.
    pub(crate) fn written(self: &Arc<Self>, log: &Arc<File>, path: &Path) -> Ticket {
        let mut state = self.state();
        state.written += 1;
        if state.returning > 0 {
            state.returning -= 1;
            if state.returning == 0 {
                self.returned.notify_one();
            }
        }
        let same = state
            .file
            .as_ref()
            .is_some_and(|(file, _)| Arc::ptr_eq(file, log));
        if !same {
            // A rewrite replaced the log: what was written to the old file is in the new one
            // (synced by the rewrite) or was replaced with it, so syncing the latest file
            // covers every earlier ticket.
            state.file = Some((log.clone(), path.to_path_buf()));
        }
        let number = state.written;
        if !self.syncing.load(Ordering::SeqCst) {
            self.start_syncer(&mut state);
        }
        Ticket {
            group: self.clone(),
            number,
        }
    }

    /// Starts the syncer: a blocking thread that syncs while appends keep coming, so no
    /// waiter has to wake up to take the next sync over. If no thread can be had, every
    /// append written so far fails (it is not known to be on disk).
    fn start_syncer(self: &Arc<Self>, state: &mut State) {
        self.syncing.store(true, Ordering::SeqCst);
        let syncer = Syncer {
            group: self.clone(),
            ran: false,
        };
        let started = match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn_blocking(move || syncer.run());
                Ok(())
            }
            Err(_) => std::thread::Builder::new()
                .name("agentmem-file-sync".into())
                .spawn(move || syncer.run())
                .map(drop),
        };
        if let Err(e) = started {
            self.syncing.store(false, Ordering::SeqCst);
            state.failed = state.written;
            state.stale = true;
            state.error = Some((e.kind(), format!("no thread to sync on: {e}")));
            self.synced.notify_waiters();
        }
    }

    /// Syncs the log until every append written so far is covered (run with `syncing` set,
    /// which it clears when done).
    fn sync_while_behind(&self) {
        let mut state = self.state();
        while state.written > state.synced.max(state.failed) {
            // Writers that the last sync acknowledged are usually writing again right now:
            // give them a moment (half a sync at most) to join this sync rather than start it
            // without them and leave them the next one, so that concurrent writers share one
            // sync each round instead of alternating in two groups.
            let deadline = Instant::now() + (state.last_sync / 2).min(MAX_GATHER);
            while state.returning > 0 {
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                state = self
                    .returned
                    .wait_timeout(state, deadline - now)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            state.returning = 0;
            state = self.sync_once(state);
        }
        self.syncing.store(false, Ordering::SeqCst);
        drop(state);
    }

    /// One `fdatasync` of the latest log for every append written so far, made without the
    /// state's lock; wakes the waiters. Returns the state locked again.
    fn sync_once<'a>(&'a self, mut state: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        let target = state.written;
        let result = match state.file.clone() {
            Some((file, _)) => {
                drop(state);
                let began = Instant::now();
                let result = file.sync_data();
                state = self.state();
                state.last_sync = began.elapsed();
                result
            }
            None => Err(std::io::Error::other("no session log to fsync")),
        };
        match result {
            Ok(()) => {
                // Each acknowledged append has a writer waiting for it.
                state.returning = target.saturating_sub(state.synced.max(state.failed));
                state.synced = state.synced.max(target);
            }
            Err(e) => {
                state.failed = state.failed.max(target);
                state.stale = true;
                state.error = Some((e.kind(), e.to_string()));
            }
        }
        self.synced.notify_waiters();
        state
    }

    /// Whether a sync failed and the session's state was not reloaded since.
    pub(crate) fn is_stale(&self) -> bool {
        self.state().stale
    }

    /// Whether a sync failed since the last call: then the session's cached state is reloaded
    /// from the files before the next operation.
    pub(crate) fn take_stale(&self) -> bool {
        std::mem::take(&mut self.state().stale)
    }
}

/// The syncer's job, as handed to its thread.
struct Syncer {
    group: Arc<GroupCommit>,
    ran: bool,
}

impl Syncer {
    fn run(mut self) {
        self.ran = true;
        self.group.sync_while_behind();
    }
}

impl Drop for Syncer {
    fn drop(&mut self) {
        if !self.ran {
            // Dropped without running (its runtime shut down first): let a waiter start
            // another rather than wait for this one.
            self.group.syncing.store(false, Ordering::SeqCst);
            self.group.synced.notify_waiters();
        }
    }
}

impl Ticket {
    /// Waits until the append is on disk (the syncer started by [`GroupCommit::written`]
    /// makes the sync); call without the session's locks.
    pub(crate) async fn wait(self) -> Result<()> {
        let group = &self.group;
        loop {
            // Registered before the state is read, so a sync that ends in between wakes it.
            let synced = group.synced.notified();
            tokio::pin!(synced);
            synced.as_mut().enable();
            {
                let mut state = group.state();
                if state.failed >= self.number {
                    return Err(state.failure());
                }
                if state.synced >= self.number {
                    return Ok(());
                }
                if !group.syncing.load(Ordering::SeqCst) {
                    // Only a syncer dropped before it ran leaves an append uncovered.
                    group.start_syncer(&mut state);
                }
            }
            synced.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log() -> (tempfile::TempDir, Arc<File>, PathBuf) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("session.jsonl");
        let file = File::create(&path).expect("create");
        (dir, Arc::new(file), path)
    }

    #[tokio::test]
    async fn waiters_all_return_once_synced() {
        let (_dir, file, path) = log();
        let group = Arc::new(GroupCommit::default());
        let tickets: Vec<Ticket> = (0..8).map(|_| group.written(&file, &path)).collect();
        for ticket in tickets.into_iter().rev() {
            ticket.wait().await.expect("synced");
        }
        assert_eq!(group.state().synced, 8);
        assert!(!group.take_stale());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_writers_share_syncs() {
        let (_dir, file, path) = log();
        let group = Arc::new(GroupCommit::default());
        let writers: Vec<_> = (0..8)
            .map(|_| {
                let (group, file, path) = (group.clone(), file.clone(), path.clone());
                tokio::spawn(async move {
                    for _ in 0..20 {
                        group.written(&file, &path).wait().await.expect("synced");
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.await.expect("writer");
        }
        let state = group.state();
        assert_eq!((state.written, state.synced, state.failed), (160, 160, 0));
    }

    #[tokio::test]
    async fn a_syncer_dropped_before_it_ran_is_replaced_by_a_waiter() {
        let (_dir, file, path) = log();
        let group = Arc::new(GroupCommit::default());
        {
            let mut state = group.state();
            state.written = 1;
            state.file = Some((file.clone(), path.clone()));
        }
        group.syncing.store(true, Ordering::SeqCst);
        drop(Syncer {
            group: group.clone(),
            ran: false,
        });
        assert!(!group.syncing.load(Ordering::SeqCst));
        let ticket = Ticket {
            group: group.clone(),
            number: 1,
        };
        ticket
            .wait()
            .await
            .expect("synced by a syncer the waiter started");
        assert_eq!(group.state().synced, 1);
    }

    #[tokio::test]
    async fn a_ticket_in_a_failed_sync_is_never_acknowledged() {
        let (_dir, file, path) = log();
        let group = Arc::new(GroupCommit::default());
        {
            // As a failed fdatasync leaves it, with the syncer between two rounds.
            let mut state = group.state();
            group.syncing.store(true, Ordering::SeqCst);
            state.written = 1;
            state.failed = 1;
            state.stale = true;
            state.error = Some((std::io::ErrorKind::Other, "EIO".into()));
            state.file = Some((file.clone(), path.clone()));
        }
        let ticket = Ticket {
            group: group.clone(),
            number: 1,
        };
        let err = ticket.wait().await.expect_err("refused");
        let text = err.to_string();
        assert!(
            text.contains("may or may not") && text.contains("EIO"),
            "{text}"
        );
        assert!(group.take_stale());
        assert!(!group.take_stale(), "taken once");
        // A later append is synced afresh, by a new syncer.
        group.syncing.store(false, Ordering::SeqCst);
        group
            .written(&file, &path)
            .wait()
            .await
            .expect("later append synced");
    }
}
