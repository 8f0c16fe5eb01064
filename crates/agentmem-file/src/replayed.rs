//! What the store-wide replayed logs (the knowledge graph's, `graph/`, and the vectors',
//! `vectors/`) share: a [`Slot`] caching the log's replay behind an in-process mutex, the
//! exclusive `flock` taken before catching up with what other processes appended, appending a
//! write's records (the log created whole, by a rename, on the first), compaction when the log
//! holds many more records than live items, and the repair plumbing of `check_*`. Each kind
//! ([`LogKind`]) keeps its own record format and its own reading of new records
//! ([`LogKind::sync`]).

use std::fmt;
use std::fs::File;
use std::marker::PhantomData;
use std::sync::Arc;

use agentmem_core::Result;

use crate::config::Durability;
use crate::cursor::{clean_temp_files, LogCursor};
use crate::fsutil::{create_dirs, open_lock_file, stat, sync_dir, FileLockGuard};
use crate::layout::{Layout, LogPaths};
use crate::locking::blocking;
use crate::repair::{Findings, RepairReport};
use crate::store::{FileStore, Inner, BACKEND};

/// Compaction is considered once the log holds more records than this (and more than
/// [`LogKind::COMPACT_RECORDS_PER_ITEM`] a live item); it is done when the log is more than
/// [`COMPACT_MIN_SHRINK`] times what its rewrite would be.
const COMPACT_MIN_RECORDS: u64 = 1_000;
/// See [`COMPACT_MIN_RECORDS`].
const COMPACT_MIN_SHRINK: u64 = 2;

/// One kind of store-wide log replayed into a cached state.
pub(crate) trait LogKind: Sized + Send + 'static {
    /// What the log's records leave.
    type State: Default + fmt::Debug + Send;
    /// One record of the log.
    type Record;
    /// The log's name in messages ("graph log").
    const NAME: &'static str;
    /// What left a temporary file in the log's folder, as findings say.
    const INTERRUPTED: &'static str;
    /// See [`COMPACT_MIN_RECORDS`].
    const COMPACT_RECORDS_PER_ITEM: u64;

    /// The log's slot in the store.
    fn slot(inner: &Inner) -> &Arc<tokio::sync::Mutex<Slot<Self>>>;
    /// The log's paths under the store's root.
    fn paths(layout: &Layout) -> LogPaths;
    /// How many items `state` holds: the records of its rewrite.
    fn live(state: &Self::State) -> u64;
    /// The header of a log this build writes.
    fn header() -> Result<Vec<u8>>;
    /// Writes `record` as the log stores it to `out`.
    fn push(record: &Self::Record, out: &mut Vec<u8>) -> Result<()>;
    /// The log rewritten as `state` alone, header included.
    fn encode_log(state: &Self::State) -> Result<Vec<u8>>;
    /// The length of [`encode_log`](Self::encode_log)'s answer.
    fn encoded_len(state: &Self::State) -> Result<u64> {
        Self::encode_log(state).map(|bytes| bytes.len() as u64)
    }
    /// Brings the cache up to date with the log, repairing (when `f.fix`) the damage found.
    /// On failure the cache is forgotten.
    fn sync(ctx: &LogCtx<'_, Self>, slot: &mut Slot<Self>, f: &mut Findings) -> Result<()>;
}

/// The cached replay of a log. Guarded by its in-process mutex.
#[derive(Debug)]
pub(crate) struct Slot<K: LogKind> {
    /// The log's lock file, kept open between operations.
    pub(crate) lock_file: Option<File>,
    /// How far the log was read (`lines`: the header and the records).
    pub(crate) cursor: LogCursor,
    /// The record count below which compaction is not considered again, after a look found
    /// the log mostly live (0: none yet).
    pub(crate) next_check: u64,
    /// What the log's records leave.
    pub(crate) state: K::State,
}

impl<K: LogKind> Default for Slot<K> {
    fn default() -> Self {
        Slot {
            lock_file: None,
            cursor: LogCursor::default(),
            next_check: 0,
            state: K::State::default(),
        }
    }
}

impl<K: LogKind> Slot<K> {
    /// Forgets everything read: the next sync reads the log afresh.
    pub(crate) fn reset(&mut self) {
        self.cursor = LogCursor::default();
        self.next_check = 0;
        self.state = K::State::default();
    }
}

/// Operations on a log. Every one that changes a file runs on a blocking thread with the
/// log's in-process mutex and exclusive file lock held.
pub(crate) struct LogCtx<'a, K> {
    pub(crate) layout: &'a Layout,
    pub(crate) paths: LogPaths,
    pub(crate) durability: Durability,
    kind: PhantomData<K>,
}

impl<'a, K: LogKind> LogCtx<'a, K> {
    fn new(inner: &'a Inner) -> Self {
        LogCtx {
            layout: &inner.layout,
            paths: K::paths(&inner.layout),
            durability: inner.durability,
            kind: PhantomData,
        }
    }

    /// Whether the cache holds the log as it is now (one `stat`, no lock): then a read can be
    /// answered from it. An append is acknowledged only once written, so a log of the length
    /// read holds no acknowledged write the cache lacks. With no log, the state is empty (a
    /// log comes into being whole, by a rename): the cache is emptied and holds it.
    fn is_current(&self, slot: &mut Slot<K>) -> Result<bool> {
        match stat(&self.paths.log)? {
            Some(meta) => Ok(slot.cursor.holds(&meta)),
            None => {
                slot.reset();
                Ok(true)
            }
        }
    }

    /// Creates the log's folder when missing, its entry synced, so that the log written in it
    /// survives a crash of the machine.
    fn ensure_dir(&self) -> Result<()> {
        if stat(&self.paths.dir)?.is_some() {
            return Ok(());
        }
        create_dirs(&self.paths.dir)?;
        sync_dir(&self.layout.root)
    }

    /// Removes the temporary files interrupted rewrites left in the log's folder.
    pub(crate) fn clean_temp_files(&self, f: &mut Findings) -> Result<()> {
        clean_temp_files(&self.paths.dir, K::INTERRUPTED, f)
    }

    /// Runs `op` on the slot with the log's exclusive file lock held.
    fn with_lock<T>(
        &self, slot: &mut Slot<K>, op: impl FnOnce(&mut Slot<K>) -> Result<T>,
    ) -> Result<T> {
        let path = &self.paths.lock;
        let lock = match slot.lock_file.take() {
            Some(file) => file,
            None => open_lock_file(path)?,
        };
        let result = FileLockGuard::exclusive(&lock, path).and_then(|_held| op(slot));
        slot.lock_file = Some(lock);
        result
    }

    /// Runs `op` on the slot with the exclusive file lock held, after bringing the cache up
    /// to date with the log; records what was repaired.
    fn locked<T>(
        &self, inner: &Inner, slot: &mut Slot<K>, op: impl FnOnce(&mut Slot<K>) -> Result<T>,
    ) -> Result<T> {
        let mut findings = Findings::new(true);
        let result = self.with_lock(slot, |slot| {
            K::sync(self, slot, &mut findings)?;
            op(slot)
        });
        inner.repairs.extend(&findings);
        result
    }

    /// Reads the whole log afresh, not trusting the cache, as a first use would, and finds
    /// what is damaged. When fixing, the cache `slot` is read afresh and the damage repaired
    /// as a sync does; otherwise a scratch cache reads the log and nothing on disk changes.
    /// A log of a newer version is `Unsupported`, left alone.
    fn check(&self, slot: &mut Slot<K>, f: &mut Findings) -> Result<()> {
        if stat(&self.paths.log)?.is_none() {
            // The first write of a log interrupted before its rename leaves a temporary file
            // and no log (which a sync would not look past).
            slot.reset();
            return self.clean_temp_files(f);
        }
        if f.fix {
            slot.reset();
            K::sync(self, slot, f)
        } else {
            K::sync(self, &mut Slot::default(), f)
        }
    }

    /// Writes `records` (whose change the cached state already holds) at the end of the log
    /// in one append, creating the log (with its header, by a rename) when there is none;
    /// fsynced under fsync durability. Then compacts the log when it holds much more than the
    /// state. On failure the log is cut back and the cache forgotten.
    pub(crate) fn commit(&self, slot: &mut Slot<K>, records: &[K::Record]) -> Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        if let Err(e) = self.append(slot, records) {
            slot.reset();
            return Err(e);
        }
        // The records are written and acknowledged; a failed compaction only leaves the log
        // longer, so it is logged rather than reported as a failure of this write.
        if let Err(e) = self.maybe_compact(slot) {
            tracing::warn!(
                error = %e,
                "cannot compact the {}; will retry on a later write",
                K::NAME
            );
            slot.reset();
        }
        Ok(())
    }

    fn append(&self, slot: &mut Slot<K>, records: &[K::Record]) -> Result<()> {
        let mut bytes = Vec::new();
        for record in records {
            K::push(record, &mut bytes)?;
        }
        let n = records.len() as u64;
        if !slot.cursor.is_open() {
            let mut whole = K::header()?;
            whole.extend_from_slice(&bytes);
            return self.replace(slot, &whole, 1 + n);
        }
        // The cursor counts the append as one line.
        slot.cursor
            .append(&self.paths.log, &bytes, self.durability)?;
        slot.cursor.lines += n - 1;
        Ok(())
    }

    /// Rewrites the log as the state alone when it holds many more records than live items
    /// and its rewrite would be much smaller. The look costs a pass over the state, so after a
    /// look that keeps the log it waits until the log has doubled: its cost stays a constant
    /// share of the writes.
    fn maybe_compact(&self, slot: &mut Slot<K>) -> Result<()> {
        let records = slot.cursor.lines.saturating_sub(1);
        let live = K::live(&slot.state);
        if records <= COMPACT_MIN_RECORDS
            || records <= K::COMPACT_RECORDS_PER_ITEM * live
            || slot.cursor.lines < slot.next_check
        {
            return Ok(());
        }
        if K::encoded_len(&slot.state)? * COMPACT_MIN_SHRINK > slot.cursor.len {
            slot.next_check = slot.cursor.lines * 2;
            return Ok(());
        }
        tracing::debug!(records, live, "compacting the {}", K::NAME);
        self.rewrite(slot)
    }

    /// Rewrites the log as the cached state (compaction, after damage was set aside, or after
    /// a clear).
    pub(crate) fn rewrite(&self, slot: &mut Slot<K>) -> Result<()> {
        let bytes = K::encode_log(&slot.state)?;
        let lines = 1 + K::live(&slot.state);
        self.replace(slot, &bytes, lines)
    }

    /// Replaces the log, whole, by `bytes` (`lines` lines, the cached state's): a temporary
    /// file, fsync, rename, fsync of the folder. Other handles and processes see another file
    /// at their next `stat` and read it afresh.
    fn replace(&self, slot: &mut Slot<K>, bytes: &[u8], lines: u64) -> Result<()> {
        let paths = &self.paths;
        slot.cursor.replace(&paths.dir, &paths.log, bytes, lines)?;
        slot.next_check = 0;
        Ok(())
    }
}

impl FileStore {
    /// Checks the log of kind `K` from scratch (not trusting what this process cached),
    /// reading it whole, and returns what is damaged; with `repair`, repairs it as its next
    /// use would (and records that in [`FileStore::repairs`]). No log folder: nothing.
    pub(crate) async fn check_log<K: LogKind>(&self, repair: bool) -> Result<Vec<RepairReport>> {
        let mut guard = K::slot(&self.inner).clone().lock_owned().await;
        let inner = self.inner.clone();
        blocking(move || {
            let ctx = LogCtx::<K>::new(&inner);
            if stat(&ctx.paths.dir)?.is_none() {
                return Ok(Vec::new());
            }
            let mut findings = Findings::new(repair);
            findings.deep = true;
            let result = ctx.with_lock(&mut guard, |slot| ctx.check(slot, &mut findings));
            inner.repairs.extend(&findings);
            result.map(|()| findings.list)
        })
        .await?
        // `check_*` are no trait's methods, so no layer labels their errors.
        .map_err(|e| e.with_backend(BACKEND))
    }

    /// Answers `read` from the state of the log of kind `K` as it is now, catching the cache
    /// up with the log first when another process (or handle) changed it.
    pub(crate) async fn log_read<K, T, F>(&self, read: F) -> Result<T>
    where
        K: LogKind,
        T: Send + 'static,
        F: FnOnce(&K::State) -> T + Send + 'static,
    {
        let mut guard = K::slot(&self.inner).clone().lock_owned().await;
        let inner = self.inner.clone();
        blocking(move || {
            let ctx = LogCtx::<K>::new(&inner);
            let slot = &mut *guard;
            if ctx.is_current(slot)? {
                return Ok(read(&slot.state));
            }
            ctx.locked(&inner, slot, |slot| Ok(read(&slot.state)))
        })
        .await?
    }

    /// Runs the write `op` on the log of kind `K` as it is now, its folder created and the
    /// exclusive lock held, the cache caught up; `op` writes its change with
    /// [`LogCtx::commit`] (or [`LogCtx::rewrite`]).
    pub(crate) async fn log_write<K, T, F>(&self, op: F) -> Result<T>
    where
        K: LogKind,
        T: Send + 'static,
        F: FnOnce(&LogCtx<'_, K>, &mut Slot<K>) -> Result<T> + Send + 'static,
    {
        let mut guard = K::slot(&self.inner).clone().lock_owned().await;
        let inner = self.inner.clone();
        blocking(move || {
            let ctx = LogCtx::<K>::new(&inner);
            ctx.ensure_dir()?;
            ctx.locked(&inner, &mut guard, |slot| op(&ctx, slot))
        })
        .await?
    }
}
