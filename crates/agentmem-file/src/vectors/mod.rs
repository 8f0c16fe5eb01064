//! Embedding vectors ([`VectorStore`]): one log a store, `vectors/vectors.log`, an append-only
//! binary log of puts and deletes (`record.rs`: about 1.5 KB a vector, so not JSON), replayed
//! into a cached [`VectorMap`], which applies the contract's rules.
//!
//! - Every operation holds the vectors' in-process mutex (a fair queue of this process's tasks)
//!   and runs on a blocking thread. A write takes the exclusive `flock` on
//!   `vectors/vectors.lock` (other processes), catches the cache up with what others appended
//!   (the file's identity and length tell, as for the other logs), applies its change to the
//!   cache and appends its records in one write, fsynced under
//!   [`Durability::Fsync`](crate::Durability::Fsync). A clear rewrites the log as a header
//!   alone.
//! - A read answers from the cache after one `stat` shows the log unchanged; otherwise it
//!   catches up under the lock first.
//! - The log is compacted (rewritten as the live vectors, by a rename) when it holds many more
//!   records than vectors (`replay.rs`); other handles see another file and read it afresh.
//!   A torn end is cut away; a record that cannot be read is set aside, with what follows it,
//!   in `vectors/quarantine/`; [`FileStore::check_vectors`] finds (and, asked to, repairs)
//!   that damage without waiting for the next use.

mod record;
mod replay;

pub(crate) use replay::VectorSlot;

use agentmem_core::vector::{check_vectors, VectorMap};
use agentmem_core::{async_trait, Result, StoredVector, VectorKey, VectorStore};

use crate::fsutil::{open_lock_file, stat, FileLockGuard};
use crate::locking::blocking;
use crate::repair::{Findings, RepairReport};
use crate::store::{FileStore, Inner, BACKEND};
use record::Record;
use replay::VectorCtx;

impl Inner {
    fn vector_ctx(&self) -> VectorCtx<'_> {
        VectorCtx {
            layout: &self.layout,
            paths: self.layout.vectors(),
            durability: self.durability,
        }
    }
}

/// Runs `op` on the slot with the vectors' exclusive file lock held.
fn with_lock<T>(
    ctx: &VectorCtx<'_>,
    slot: &mut VectorSlot,
    op: impl FnOnce(&mut VectorSlot) -> Result<T>,
) -> Result<T> {
    let path = &ctx.paths.lock;
    let lock = match slot.lock_file.take() {
        Some(file) => file,
        None => open_lock_file(path)?,
    };
    let result = FileLockGuard::exclusive(&lock, path).and_then(|_held| op(slot));
    slot.lock_file = Some(lock);
    result
}

/// Runs `op` with the exclusive file lock held, after bringing the cache up to date with the
/// log; records what was repaired.
fn locked<T>(
    inner: &Inner,
    ctx: &VectorCtx<'_>,
    slot: &mut VectorSlot,
    op: impl FnOnce(&mut VectorSlot) -> Result<T>,
) -> Result<T> {
    let mut findings = Findings::new(true);
    let result = with_lock(ctx, slot, |slot| {
        ctx.sync(slot, &mut findings)?;
        op(slot)
    });
    inner.repairs.extend(&findings);
    result
}

/// A write's change to the log.
enum Change {
    /// Nothing changed.
    None,
    /// These records, appended.
    Append(Vec<Record>),
    /// The log rewritten from the cache.
    Rewrite,
}

impl FileStore {
    /// Checks the vector log (`vectors/vectors.log`) from scratch (not trusting what this
    /// process cached), reading it whole, and returns what is damaged: a torn end
    /// ([`RepairKind::TornTail`](crate::RepairKind::TornTail)), a record that cannot be read
    /// and what follows it ([`RepairKind::Quarantined`](crate::RepairKind::Quarantined)), a
    /// file that is not a vector log
    /// ([`RepairKind::QuarantinedFile`](crate::RepairKind::QuarantinedFile)), temporary files
    /// left by interrupted rewrites ([`RepairKind::TempFile`](crate::RepairKind::TempFile)).
    /// Without `repair`, nothing is changed on disk. With `repair`, damage is repaired as on
    /// the next use (and also recorded in [`FileStore::repairs`]): the torn end is truncated
    /// away, what cannot be read is set aside in `vectors/quarantine/` (never deleted). A log
    /// of a newer version than this build reads is an `Unsupported` error, and left alone. No
    /// vectors yet: nothing to report.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use std::io::Write;
    /// use agentmem_core::{StoredVector, VectorKey, VectorStore};
    /// use agentmem_file::{FileConfig, FileStore, RepairKind};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let store = FileStore::connect_with(FileConfig::new(dir.path())).await?;
    /// store.put_vectors(&[StoredVector::new(VectorKey([1; 32]), &[0.6, 0.8])]).await?;
    /// // A crash in the middle of an append leaves part of a record at the end of the log.
    /// let log = dir.path().join("vectors").join("vectors.log");
    /// std::fs::OpenOptions::new().append(true).open(&log)?.write_all(&[1, 2, 3])?;
    ///
    /// let found = store.check_vectors(false).await?; // reports, changes nothing
    /// assert_eq!((found[0].kind, found[0].repaired), (RepairKind::TornTail, false));
    /// assert!(store.check_vectors(true).await?[0].repaired); // repairs
    /// assert!(store.check_vectors(false).await?.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn check_vectors(&self, repair: bool) -> Result<Vec<RepairReport>> {
        let mut guard = self.inner.vectors.clone().lock_owned().await;
        let inner = self.inner.clone();
        blocking(move || {
            let ctx = inner.vector_ctx();
            if stat(&ctx.paths.dir)?.is_none() {
                return Ok(Vec::new());
            }
            let mut findings = Findings::new(repair);
            findings.deep = true;
            let result = with_lock(&ctx, &mut guard, |slot| ctx.check(slot, &mut findings));
            inner.repairs.extend(&findings);
            result.map(|()| findings.list)
        })
        .await?
        // `check_vectors` is not a `VectorStore` method, so no layer labels its errors.
        .map_err(|e| e.with_backend(BACKEND))
    }

    /// Answers `read` from the vectors as they are now, catching the cache up with the log
    /// first when another process (or handle) changed it.
    async fn vector_read<T, F>(&self, read: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&VectorMap) -> T + Send + 'static,
    {
        let mut guard = self.inner.vectors.clone().lock_owned().await;
        let inner = self.inner.clone();
        blocking(move || {
            let ctx = inner.vector_ctx();
            let slot = &mut *guard;
            if ctx.is_current(slot)? {
                return Ok(read(&slot.map));
            }
            locked(&inner, &ctx, slot, |slot| Ok(read(&slot.map)))
        })
        .await?
    }

    /// Runs the write `op` on the vectors as they are now, with the exclusive lock held, and
    /// writes the change it returns to the log.
    async fn vector_write<T, F>(&self, op: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut VectorMap) -> (T, Change) + Send + 'static,
    {
        let mut guard = self.inner.vectors.clone().lock_owned().await;
        let inner = self.inner.clone();
        blocking(move || {
            let ctx = inner.vector_ctx();
            ctx.ensure_dir()?;
            locked(&inner, &ctx, &mut guard, |slot| {
                let (answer, change) = op(&mut slot.map);
                match change {
                    Change::None => {}
                    Change::Append(records) => ctx.commit(slot, &records)?,
                    Change::Rewrite => {
                        if let Err(e) = ctx.rewrite(slot) {
                            slot.reset();
                            return Err(e);
                        }
                    }
                }
                Ok(answer)
            })
        })
        .await?
    }
}

#[async_trait]
impl VectorStore for FileStore {
    async fn put_vectors(&self, vectors: &[StoredVector]) -> Result<()> {
        // The validate layer checks this already; the raw store (reached through `Deref`)
        // checks again, since a record of another size would not read back.
        check_vectors(vectors)?;
        let vectors = vectors.to_vec();
        self.vector_write(move |map| {
            map.put(&vectors);
            let records = vectors.into_iter().map(Record::Put).collect();
            ((), Change::Append(records))
        })
        .await
    }

    async fn get_vectors(&self, keys: &[VectorKey]) -> Result<Vec<StoredVector>> {
        let keys = keys.to_vec();
        self.vector_read(move |map| map.get(&keys)).await
    }

    async fn delete_vectors(&self, keys: &[VectorKey]) -> Result<u64> {
        let keys = keys.to_vec();
        self.vector_write(move |map| {
            // One record a vector that went (a repeated or missing key writes nothing).
            let gone: Vec<Record> = keys
                .iter()
                .filter(|key| map.delete(std::slice::from_ref(key)) == 1)
                .map(|key| Record::Delete(*key))
                .collect();
            (gone.len() as u64, Change::Append(gone))
        })
        .await
    }

    async fn clear_vectors(&self) -> Result<u64> {
        self.vector_write(|map| match map.clear() {
            0 => (0, Change::None),
            removed => (removed, Change::Rewrite),
        })
        .await
    }
}
