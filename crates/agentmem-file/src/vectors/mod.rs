//! Embedding vectors ([`VectorStore`]): one log a store, `vectors/vectors.log`, an append-only
//! binary log of puts and deletes (`record.rs`: about 1.5 KB a vector, so not JSON), replayed
//! into a cached [`VectorMap`], which applies the contract's rules.
//!
//! - Every operation holds the vectors' in-process mutex (a fair queue of this process's tasks)
//!   and runs on a blocking thread (the machinery shared with the graph's log is in
//!   `replayed.rs`). A write takes the exclusive `flock` on
//!   `vectors/vectors.lock` (other processes), catches the cache up with what others appended
//!   (the file's identity and length tell, as for the other logs), applies its change to the
//!   cache and appends its records in one write, fsynced under
//!   [`Durability::Fsync`](crate::Durability::Fsync). A clear rewrites the log as a header
//!   alone.
//! - A read answers from the cache after one `stat` shows the log unchanged; otherwise it
//!   catches up under the lock first.
//! - The log is compacted (rewritten as the live vectors, by a rename) when it holds many more
//!   records than vectors (`../replayed.rs`); other handles see another file and read it
//!   afresh. A torn end is cut away; a record that cannot be read is set aside, with what
//!   follows it, in `vectors/quarantine/`; [`FileStore::check_vectors`] finds (and, asked to,
//!   repairs) that damage without waiting for the next use.

mod record;
mod replay;

pub(crate) use replay::VectorSlot;

use agentmem_core::vector::{check_vectors, VectorMap};
use agentmem_core::{async_trait, Result, StoredVector, VectorKey, VectorStore};

use crate::repair::RepairReport;
use crate::store::FileStore;
use record::Record;
use replay::VectorLog;

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
        self.check_log::<VectorLog>(repair).await
    }

    /// Answers `read` from the vectors as they are now, catching the cache up with the log
    /// first when another process (or handle) changed it.
    async fn vector_read<T, F>(&self, read: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&VectorMap) -> T + Send + 'static,
    {
        self.log_read::<VectorLog, _, _>(read).await
    }

    /// Runs the write `op` on the vectors as they are now, with the exclusive lock held, and
    /// writes the change it returns to the log.
    async fn vector_write<T, F>(&self, op: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut VectorMap) -> (T, Change) + Send + 'static,
    {
        self.log_write::<VectorLog, _, _>(move |ctx, slot| {
            let (answer, change) = op(&mut slot.state);
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
        .await
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
