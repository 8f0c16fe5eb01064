//! Group commit: durable appends to one session share `fdatasync`s.
//!
//! Under [`Durability::Fsync`](crate::Durability::Fsync) an append writes its line with the
//! session's locks held, then leaves them and waits here until its line is on disk. The first
//! waiter syncs the log for every append written so far; appends written while that sync runs
//! are covered by the next one, made by one of them. So `n` writers of one process pay about
//! two `fdatasync`s between them instead of `n`, and writers in other processes, no longer
//! queued behind a sync under the file lock, share the file system's journal commits.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use agentmem_core::{Error, Result};

use crate::fsutil::io_error;

/// One session's group commit; shared by the session's slot and the appends waiting on it.
#[derive(Debug, Default)]
pub(crate) struct GroupCommit {
    state: Mutex<State>,
    synced: Condvar,
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
    /// A waiter is running `fdatasync`.
    syncing: bool,
    /// A sync failed since the session's state was last reloaded.
    stale: bool,
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

    /// Records an append just written to `log` (at `path`). Called with the session's locks
    /// held, so tickets follow the order of the lines in the log.
    pub(crate) fn written(self: &Arc<Self>, log: &Arc<File>, path: &Path) -> Ticket {
        let mut state = self.state();
        state.written += 1;
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
        Ticket {
            group: self.clone(),
            number: state.written,
        }
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

impl Ticket {
    /// Blocks until the append is on disk: syncs the log itself (for every append written so
    /// far) unless a sync that covers it is already running. Call from a blocking thread,
    /// without the session's locks.
    pub(crate) fn wait(self) -> Result<()> {
        let group = &self.group;
        let mut state = group.state();
        loop {
            if state.failed >= self.number {
                return Err(Error::backend(
                    "an fsync of the session log failed; this append may or may not be in \
                     the session",
                ));
            }
            if state.synced >= self.number {
                return Ok(());
            }
            if state.syncing {
                state = group
                    .synced
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            let Some((file, path)) = state.file.clone() else {
                return Err(Error::backend("no session log to fsync"));
            };
            let target = state.written;
            state.syncing = true;
            drop(state);
            let result = file.sync_data();
            state = group.state();
            state.syncing = false;
            match &result {
                Ok(()) => state.synced = state.synced.max(target),
                Err(_) => {
                    state.failed = state.failed.max(target);
                    state.stale = true;
                }
            }
            group.synced.notify_all();
            if let Err(e) = result {
                return Err(io_error(&path, "cannot fsync", e));
            }
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

    #[test]
    fn one_sync_covers_every_append_written_before_it() {
        let (_dir, file, path) = log();
        let group = Arc::new(GroupCommit::default());
        let first = group.written(&file, &path);
        let second = group.written(&file, &path);
        second.wait().expect("sync");
        // The sync made for the second append covered the first: it does not sync again.
        assert_eq!(group.state().synced, 2);
        first.wait().expect("already synced");
        assert!(!group.take_stale());
    }

    #[test]
    fn concurrent_waiters_all_return_once_synced() {
        let (_dir, file, path) = log();
        let group = Arc::new(GroupCommit::default());
        let tickets: Vec<Ticket> = (0..8).map(|_| group.written(&file, &path)).collect();
        let handles: Vec<_> = tickets
            .into_iter()
            .map(|t| std::thread::spawn(move || t.wait()))
            .collect();
        for h in handles {
            h.join().expect("thread").expect("synced");
        }
        assert_eq!(group.state().synced, 8);
    }

    #[test]
    fn a_ticket_in_a_failed_sync_is_never_acknowledged() {
        let (_dir, file, path) = log();
        let group = Arc::new(GroupCommit::default());
        let ticket = group.written(&file, &path);
        group.state().failed = 1; // as a failed fdatasync leaves it
        group.state().stale = true;
        let err = ticket.wait().expect_err("refused");
        assert!(err.to_string().contains("may or may not"), "{err}");
        assert!(group.take_stale());
        assert!(!group.take_stale(), "taken once");
        // A later append is synced afresh.
        group
            .written(&file, &path)
            .wait()
            .expect("later append synced");
    }
}
