//! Locking of the graph: every operation holds the graph's in-process mutex (a fair queue of
//! this process's tasks) and runs on a blocking thread (see `replayed.rs`). A write takes the
//! exclusive `flock` on `graph/graph.lock` (other processes), catches the cache up with the
//! log, applies its rule and appends its record. A read answers from the cache when one `stat`
//! shows the log as the cache read it, and otherwise catches up under the lock as a write does.

use agentmem_core::{GraphState, Result};

use super::record::Record;
use super::replay::GraphLog;
use crate::repair::RepairReport;
use crate::store::FileStore;

impl FileStore {
    /// Checks the knowledge graph's log (`graph/graph.jsonl`) from scratch (not trusting what
    /// this process cached), reading it whole, and returns what is damaged: a torn last line
    /// ([`RepairKind::TornTail`](crate::RepairKind::TornTail)), complete lines that do not
    /// parse ([`RepairKind::Quarantined`](crate::RepairKind::Quarantined)), temporary files
    /// left by interrupted rewrites ([`RepairKind::TempFile`](crate::RepairKind::TempFile)).
    /// Without `repair`, nothing is changed on disk. With `repair`, damage is repaired as on
    /// the graph's next use (and also recorded in [`FileStore::repairs`]): the torn line is
    /// truncated away, unreadable lines are set aside in `graph/quarantine/` (never deleted)
    /// and the log keeps its readable records. A log of a newer version than this build reads
    /// is an `Unsupported` error, and left alone. No graph yet: nothing to report.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use std::io::Write;
    /// use agentmem_core::{Entity, GraphStore};
    /// use agentmem_file::{FileConfig, FileStore, RepairKind};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let store = FileStore::connect_with(FileConfig::new(dir.path())).await?;
    /// store.create_entities(&[Entity::new("Alice", "person")]).await?;
    /// // A crash in the middle of an append leaves half a line at the end of the log.
    /// let log = dir.path().join("graph").join("graph.jsonl");
    /// std::fs::OpenOptions::new().append(true).open(&log)?.write_all(b"{\"op\":\"cr")?;
    ///
    /// let found = store.check_graph(false).await?; // reports, changes nothing
    /// assert_eq!((found[0].kind, found[0].repaired), (RepairKind::TornTail, false));
    /// assert!(store.check_graph(true).await?[0].repaired); // repairs
    /// assert!(store.check_graph(false).await?.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn check_graph(&self, repair: bool) -> Result<Vec<RepairReport>> {
        self.check_log::<GraphLog>(repair).await
    }

    /// Answers `read` from the graph as it is now, catching the cache up with the log first
    /// when another process (or handle) changed it.
    pub(crate) async fn graph_read<T, F>(&self, read: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&GraphState) -> T + Send + 'static,
    {
        self.log_read::<GraphLog, _, _>(read).await
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
        self.log_write::<GraphLog, _, _>(move |ctx, slot| {
            let (answer, record) = op(&mut slot.state)?;
            if let Some(record) = record {
                ctx.commit(slot, &[record])?;
            }
            Ok(answer)
        })
        .await
    }
}
