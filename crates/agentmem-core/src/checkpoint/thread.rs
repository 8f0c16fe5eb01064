//! [`ThreadCheckpoints`]: one thread's checkpoints, blobs and pending writes as plain data, with
//! every [`CheckpointStore`](crate::CheckpointStore) rule applied to it. The in-memory store
//! keeps one per thread; a backend that reads a whole thread at once (the file backend's one
//! file a thread) loads it, changes it and writes it back.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{
    merge_write, sort_writes, ChannelBlob, Checkpoint, CheckpointKey, CheckpointPrune,
    CheckpointQuery, CheckpointTuple, PendingWrite, TypedBytes,
};
use crate::error::Error;
use crate::name::{CheckpointId, CheckpointNs, ThreadId};

/// One thread's checkpoints by namespace, as plain data (serializable: the file backend
/// stores it as it is).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadCheckpoints {
    namespaces: BTreeMap<CheckpointNs, Namespace>,
}

/// One namespace of a thread: its checkpoints by id, the pending writes made after each (kept
/// apart: LangGraph may write them before the checkpoint's own put lands) and its channel
/// values by channel and version.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Namespace {
    checkpoints: BTreeMap<CheckpointId, Checkpoint>,
    #[serde(default)]
    writes: BTreeMap<CheckpointId, Vec<PendingWrite>>,
    /// channel → version → value (`None`: emptied at that version).
    blobs: BTreeMap<String, BTreeMap<String, Option<TypedBytes>>>,
}

impl Namespace {
    fn tuple(&self, checkpoint: &Checkpoint) -> CheckpointTuple {
        let blobs = checkpoint
            .channel_versions
            .iter()
            .filter_map(|(channel, version)| {
                let value = self.blobs.get(channel)?.get(version)?;
                Some(ChannelBlob {
                    channel: channel.clone(),
                    version: version.clone(),
                    value: value.clone(),
                })
            })
            .collect();
        let mut writes = self
            .writes
            .get(&checkpoint.key.id)
            .cloned()
            .unwrap_or_default();
        sort_writes(&mut writes);
        CheckpointTuple {
            checkpoint: checkpoint.clone(),
            blobs,
            writes,
        }
    }

    /// Drops the blobs no checkpoint of the namespace reads any more.
    fn drop_unread_blobs(&mut self) {
        let read: BTreeSet<(&String, &String)> = self
            .checkpoints
            .values()
            .flat_map(|c| c.channel_versions.iter())
            .collect();
        let mut kept = BTreeMap::new();
        for (channel, versions) in &self.blobs {
            let versions: BTreeMap<String, Option<TypedBytes>> = versions
                .iter()
                .filter(|(version, _)| read.contains(&(channel, *version)))
                .map(|(version, value)| (version.clone(), value.clone()))
                .collect();
            if !versions.is_empty() {
                kept.insert(channel.clone(), versions);
            }
        }
        self.blobs = kept;
    }
}

impl ThreadCheckpoints {
    /// Whether the thread holds no checkpoint (blobs and writes alone do not count).
    pub fn is_empty(&self) -> bool {
        self.namespaces.values().all(|ns| ns.checkpoints.is_empty())
    }

    /// Whether the thread holds nothing at all: no checkpoint, no write made ahead of one, no
    /// channel value (what an empty thread is, to a store deciding whether to keep it).
    pub fn holds_nothing(&self) -> bool {
        self.namespaces.is_empty()
    }

    /// How many checkpoints the thread holds, over all namespaces.
    pub fn len(&self) -> u64 {
        let count: usize = self
            .namespaces
            .values()
            .map(|ns| ns.checkpoints.len())
            .sum();
        u64::try_from(count).unwrap_or(u64::MAX)
    }

    /// When its newest checkpoint was written.
    pub fn updated_at(&self) -> Option<DateTime<Utc>> {
        self.namespaces
            .values()
            .flat_map(|ns| ns.checkpoints.values())
            .map(|c| c.created_at)
            .max()
    }

    /// Stores `checkpoint` (replacing one with its key; the writes made after it stay) and
    /// `blobs`.
    pub fn put(&mut self, checkpoint: &Checkpoint, blobs: &[ChannelBlob]) {
        let ns = self
            .namespaces
            .entry(checkpoint.key.ns.clone())
            .or_default();
        for blob in blobs {
            ns.blobs
                .entry(blob.channel.clone())
                .or_default()
                .insert(blob.version.clone(), blob.value.clone());
        }
        ns.checkpoints
            .insert(checkpoint.key.id.clone(), checkpoint.clone());
    }

    /// Stores pending writes made after checkpoint `at` (see [`merge_write`]), whether or not
    /// that checkpoint is stored yet: they are returned with it once it is.
    pub fn put_writes(&mut self, at: &CheckpointKey, writes: &[PendingWrite]) {
        if writes.is_empty() {
            return;
        }
        let stored = self
            .namespaces
            .entry(at.ns.clone())
            .or_default()
            .writes
            .entry(at.id.clone())
            .or_default();
        for write in writes {
            merge_write(stored, write);
        }
    }

    /// The checkpoint `id` in `ns`, or the newest there.
    pub fn get(&self, ns: &CheckpointNs, id: Option<&CheckpointId>) -> Option<CheckpointTuple> {
        let namespace = self.namespaces.get(ns)?;
        let checkpoint = match id {
            Some(id) => namespace.checkpoints.get(id)?,
            None => namespace.checkpoints.values().next_back()?,
        };
        Some(namespace.tuple(checkpoint))
    }

    /// The checkpoints of this thread `query` selects, newest first within each namespace; at
    /// most `query.limit` of each namespace (see [`newest_first`] for merging them).
    pub fn select(&self, query: &CheckpointQuery) -> Vec<CheckpointTuple> {
        let limit = query.limit.unwrap_or(usize::MAX);
        let mut found = Vec::new();
        for namespace in self.namespaces.values() {
            let matching = namespace
                .checkpoints
                .values()
                .rev()
                .filter(|c| query.matches(c))
                .take(limit);
            found.extend(matching.map(|c| namespace.tuple(c)));
        }
        found
    }

    /// Deletes the checkpoints written by one of `run_ids`, with their writes; how many went.
    pub fn delete_runs(&mut self, run_ids: &[String]) -> u64 {
        let mut deleted = 0;
        for namespace in self.namespaces.values_mut() {
            let gone: Vec<CheckpointId> = namespace
                .checkpoints
                .values()
                .filter(|c| {
                    c.run_id()
                        .is_some_and(|run| run_ids.iter().any(|r| r == run))
                })
                .map(|c| c.key.id.clone())
                .collect();
            if gone.is_empty() {
                continue;
            }
            for id in &gone {
                namespace.checkpoints.remove(id);
                namespace.writes.remove(id);
            }
            deleted += gone.len();
            namespace.drop_unread_blobs();
        }
        self.namespaces
            .retain(|_, ns| !ns.checkpoints.is_empty() || !ns.writes.is_empty());
        u64::try_from(deleted).unwrap_or(u64::MAX)
    }

    /// Prunes as `keep` says; how many checkpoints went.
    pub fn prune(&mut self, keep: CheckpointPrune) -> u64 {
        let before = self.len();
        match keep {
            CheckpointPrune::DeleteAll => self.namespaces.clear(),
            CheckpointPrune::KeepLatest => {
                for namespace in self.namespaces.values_mut() {
                    // The writes of every other checkpoint go, those made ahead of a
                    // checkpoint not stored yet too: a prune leaves the latest state alone.
                    let newest = namespace.checkpoints.keys().next_back().cloned();
                    namespace
                        .checkpoints
                        .retain(|id, _| Some(id) == newest.as_ref());
                    namespace.writes.retain(|id, _| Some(id) == newest.as_ref());
                    namespace.drop_unread_blobs();
                }
                self.namespaces.retain(|_, ns| !ns.checkpoints.is_empty());
            }
        }
        before - self.len()
    }

    /// The same checkpoints with their blobs and writes in thread `target` (writes made ahead
    /// of a checkpoint not stored are not copied).
    pub fn copied_to(&self, target: &ThreadId) -> ThreadCheckpoints {
        let mut copy = self.clone();
        for namespace in copy.namespaces.values_mut() {
            for checkpoint in namespace.checkpoints.values_mut() {
                checkpoint.key.thread = target.clone();
            }
            let checkpoints = &namespace.checkpoints;
            namespace
                .writes
                .retain(|id, _| checkpoints.contains_key(id));
        }
        copy.namespaces.retain(|_, ns| !ns.checkpoints.is_empty());
        copy
    }

    /// Every checkpoint with its blobs and writes, namespace by namespace, oldest first: what
    /// a copy or an export writes, one `put` and `put_writes` each.
    pub fn tuples(&self) -> Vec<CheckpointTuple> {
        self.namespaces
            .values()
            .flat_map(|ns| ns.checkpoints.values().map(|c| ns.tuple(c)))
            .collect()
    }
}

/// The error for a copy from a thread that holds no checkpoint.
pub fn missing_thread(thread: &ThreadId) -> Error {
    Error::not_found(format!("thread {:?} holds no checkpoint", thread.as_str()))
}

/// The error for a copy onto a thread that holds checkpoints.
pub fn thread_exists(thread: &ThreadId) -> Error {
    Error::conflict(format!(
        "thread {:?} holds checkpoints already",
        thread.as_str()
    ))
}

/// Orders tuples from several threads as [`list_checkpoints`](crate::CheckpointStore::list_checkpoints)
/// returns them (newest id first, then thread and namespace) and keeps the first `limit`.
pub fn newest_first(tuples: &mut Vec<CheckpointTuple>, limit: Option<usize>) {
    tuples.sort_by(|a, b| {
        let (a, b) = (&a.checkpoint.key, &b.checkpoint.key);
        b.id.cmp(&a.id)
            .then_with(|| a.thread.cmp(&b.thread))
            .then_with(|| a.ns.cmp(&b.ns))
    });
    if let Some(limit) = limit {
        tuples.truncate(limit);
    }
}
