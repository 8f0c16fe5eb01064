//! [`CheckpointStore`] for [`MongoStore`], without transactions (the same on every server).
//!
//! - `checkpoints`: one document per checkpoint, unique on (`thread`, `ns`, `cid`), holding
//!   its pending writes in a `writes` array with a revision `wrev`. A put upserts every field
//!   but the writes (`$setOnInsert` starts them empty), so replacing a checkpoint keeps them;
//!   `put_writes` is a compare-and-set on `wrev` (read, merge, write if unchanged, else retry):
//!   one single-document update, so readers see all of a call's writes or none. Writes made
//!   ahead of their checkpoint get a document of their own at its key, without `stored`
//!   (one insert), which the checkpoint's put completes; readers select `stored: true`.
//! - `checkpoint_blobs`: the channel values, written before the checkpoint reading them and
//!   deleted only when no checkpoint reads them (see `checkpoint_blobs.rs`).
//!
//! Readers re-check a checkpoint whose blobs came back short: when it was replaced or deleted
//! meanwhile (its `stamp` changed), the read is made again.

use std::collections::BTreeMap;

use agentmem_core::checkpoint::{
    merge_write, missing_thread, newest_first, sort_writes, thread_exists,
};
use agentmem_core::{
    async_trait, ChannelBlob, Checkpoint, CheckpointId, CheckpointKey, CheckpointNs,
    CheckpointPrune, CheckpointQuery, CheckpointStore, CheckpointTuple, Error, PendingWrite,
    Result, ThreadId, ThreadInfo,
};
use futures_util::TryStreamExt;
use mongodb::bson::oid::ObjectId;
use mongodb::bson::{doc, Bson, Document};

use crate::checkpoint_blobs::{BlobKey, KEYS_PER_QUERY};
use crate::checkpoint_codec::{
    blob_fields, checkpoint_fields, checkpoint_from, filter_hashes, is_stored, key_filter,
    new_stamp, stored_key_filter, write_doc, writes_from, STORED,
};
use crate::codec::{all_docs, check_size, int_field, str_field, time_field};
use crate::error::{server_code, ResultExt, DUPLICATE_KEY};
use crate::retry::{retry, Step};
use crate::store::MongoStore;

/// Listings sort as `newest_first` does: greatest id first, then thread, then namespace
/// (MongoDB compares strings by their UTF-8 bytes).
fn newest_first_sort() -> Document {
    doc! {"cid": -1, "thread": 1, "ns": 1}
}

/// The blobs of `blobs` with one per (channel, version), the last given winning (as
/// successive puts of one key would), as (channel, version, stored fields).
fn blob_docs(blobs: &[ChannelBlob]) -> Result<Vec<(String, String, Document)>> {
    let mut last: BTreeMap<(&str, &str), &ChannelBlob> = BTreeMap::new();
    for b in blobs {
        last.insert((&b.channel, &b.version), b);
    }
    last.into_values()
        .map(|b| Ok((b.channel.clone(), b.version.clone(), blob_fields(b)?)))
        .collect()
}

/// The server-side selection of `query`: its place and ids exactly, and its metadata filter
/// by hash where that never drops a match (`filter_hashes`).
fn query_filter(query: &CheckpointQuery) -> Document {
    let mut filter = doc! {STORED: true};
    if let Some(thread) = &query.thread {
        filter.insert("thread", thread.as_str());
    }
    if let Some(ns) = &query.ns {
        filter.insert("ns", ns.as_str());
    }
    let mut cid = Document::new();
    if let Some(id) = &query.id {
        cid.insert("$eq", id.as_str());
    }
    if let Some(before) = &query.before {
        cid.insert("$lt", before.as_str());
    }
    if !cid.is_empty() {
        filter.insert("cid", cid);
    }
    let hashes = filter_hashes(&query.metadata);
    if !hashes.is_empty() {
        filter.insert("mkv", doc! {"$all": hashes});
    }
    filter
}

impl MongoStore {
    /// Inserts the document of `writes` made ahead of checkpoint `at`; a retry when another
    /// writer inserted one at that key first (the next try merges into it).
    async fn insert_early_writes(
        &self, at: &CheckpointKey, writes: &[PendingWrite],
    ) -> Result<Step<()>> {
        let mut merged = Vec::new();
        for w in writes {
            merge_write(&mut merged, w);
        }
        let mut d = key_filter(at);
        d.insert("writes", merged.iter().map(write_doc).collect::<Vec<_>>());
        d.insert("wrev", 0_i64);
        check_size("the pending writes of one checkpoint", &d)?;
        match self.checkpoints().insert_one(d).await {
            Ok(_) => Ok(Step::Done(())),
            Err(e) if server_code(&e) == Some(DUPLICATE_KEY) => {
                Ok(Step::RetryNow(Err(crate::error::from_driver(e))))
            }
            Err(e) => Err(crate::error::from_driver(e)),
        }
    }

    /// The tuples of the checkpoint documents `found`, with their blobs and sorted writes, in
    /// the same order. `RetryNow` when a checkpoint whose blobs came back short was replaced
    /// or deleted since it was read (its blobs may have gone with that change).
    async fn tuples(
        &self, found: Vec<(Document, Checkpoint)>,
    ) -> Result<Step<Vec<CheckpointTuple>>> {
        let wanted: Vec<BlobKey> = found
            .iter()
            .flat_map(|(_, c)| {
                let (t, n) = (c.key.thread.as_str(), c.key.ns.as_str());
                c.channel_versions
                    .iter()
                    .map(move |(ch, v)| (t.to_owned(), n.to_owned(), ch.clone(), v.clone()))
            })
            .collect();
        let values = self.blob_values(&wanted).await?;
        let mut tuples = Vec::with_capacity(found.len());
        let mut short = Vec::new();
        for (d, checkpoint) in found {
            let (t, n) = (checkpoint.key.thread.as_str(), checkpoint.key.ns.as_str());
            let blobs: Vec<ChannelBlob> = checkpoint
                .channel_versions
                .iter()
                .filter_map(|(channel, version)| {
                    let key = (t.to_owned(), n.to_owned(), channel.clone(), version.clone());
                    values.get(&key).map(|value| ChannelBlob {
                        channel: channel.clone(),
                        version: version.clone(),
                        value: value.clone(),
                    })
                })
                .collect();
            if blobs.len() < checkpoint.channel_versions.len() {
                short.push(doc! {
                    "_id": d.get("_id").cloned().unwrap_or(Bson::Null),
                    "stamp": d.get("stamp").cloned().unwrap_or(Bson::Null),
                });
            }
            let mut writes = writes_from(&d)?;
            sort_writes(&mut writes);
            tuples.push(CheckpointTuple {
                checkpoint,
                blobs,
                writes,
            });
        }
        for chunk in short.chunks(KEYS_PER_QUERY) {
            let unchanged = self
                .checkpoints()
                .count_documents(doc! {"$or": chunk.to_vec()})
                .await
                .mapped()?;
            if unchanged < chunk.len() as u64 {
                return Ok(Step::RetryNow(Ok(tuples)));
            }
        }
        Ok(Step::Done(tuples))
    }

    /// The checkpoint documents `query` selects, newest first, decided by
    /// [`CheckpointQuery::matches`] and read only until `limit` of them are found.
    async fn select(&self, query: &CheckpointQuery) -> Result<Vec<(Document, Checkpoint)>> {
        let limit = query.limit.unwrap_or(usize::MAX);
        let mut found = Vec::new();
        if limit == 0 {
            return Ok(found);
        }
        let mut cursor = self
            .checkpoints()
            .find(query_filter(query))
            .sort(newest_first_sort())
            .await
            .mapped()?;
        while let Some(d) = cursor.try_next().await.mapped()? {
            let c = checkpoint_from(&d)?;
            if query.matches(&c) {
                found.push((d, c));
                if found.len() >= limit {
                    break;
                }
            }
        }
        Ok(found)
    }

    /// Deletes every checkpoint of `thread`, then the writes made ahead of a checkpoint, then
    /// its unread blobs; how many checkpoints went.
    async fn delete_thread_docs(&self, thread: &str) -> Result<u64> {
        let deleted = self
            .checkpoints()
            .delete_many(doc! {"thread": thread, STORED: true})
            .await
            .mapped()?
            .deleted_count;
        self.delete_early_writes(thread).await?;
        self.collect_blobs(thread).await?;
        Ok(deleted)
    }

    /// Deletes the documents of `thread` that hold only writes made ahead of a checkpoint.
    async fn delete_early_writes(&self, thread: &str) -> Result<()> {
        self.checkpoints()
            .delete_many(doc! {"thread": thread, STORED: {"$ne": true}})
            .await
            .mapped()?;
        Ok(())
    }

    /// Deletes the checkpoints with `_id` in `ids` (and matching `extra`); how many went.
    async fn delete_ids(&self, ids: &[Bson], extra: &Document) -> Result<u64> {
        let mut deleted = 0;
        for chunk in ids.chunks(KEYS_PER_QUERY) {
            let mut filter = doc! {"_id": {"$in": chunk.to_vec()}};
            filter.extend(extra.clone());
            deleted += self
                .checkpoints()
                .delete_many(filter)
                .await
                .mapped()?
                .deleted_count;
        }
        Ok(deleted)
    }

    /// Inserts `docs` (checkpoints of another thread) as checkpoints of `target`: same fields,
    /// new `_id`, `stamp` and write revision.
    async fn insert_copies(&self, docs: &[Document], target: &ThreadId) -> Result<()> {
        let copies: Vec<Document> = docs
            .iter()
            .map(|d| {
                let mut copy = d.clone();
                copy.insert("_id", ObjectId::new());
                copy.insert("thread", target.as_str());
                copy.insert("stamp", new_stamp());
                copy.insert("wrev", 0_i64);
                copy
            })
            .collect();
        let ids: Vec<Bson> = copies
            .iter()
            .filter_map(|d| d.get("_id").cloned())
            .collect();
        match self.checkpoints().insert_many(copies).await {
            Ok(_) => Ok(()),
            Err(e) => {
                // Whatever went in is taken out again: a copy is all or nothing.
                self.delete_ids(&ids, &Document::new()).await?;
                if server_code(&e) == Some(DUPLICATE_KEY) {
                    Err(thread_exists(target))
                } else {
                    Err(crate::error::from_driver(e))
                }
            }
        }
    }

    /// Keeps the greatest id of each namespace of `thread` with its writes; how many
    /// checkpoints went. Writes made ahead of a checkpoint go too (a prune leaves the latest
    /// state alone).
    async fn keep_latest(&self, thread: &str) -> Result<u64> {
        let checkpoints = self.checkpoints();
        let docs = checkpoints
            .find(doc! {"thread": thread})
            .projection(doc! {"ns": 1, "cid": 1, STORED: 1});
        let docs = all_docs(docs).await?;
        let mut newest: BTreeMap<&str, &str> = BTreeMap::new();
        for d in docs.iter().filter(|d| is_stored(d)) {
            let (ns, id) = (str_field(d, "ns")?, str_field(d, "cid")?);
            let slot = newest.entry(ns).or_insert(id);
            if id > *slot {
                *slot = id;
            }
        }
        let (mut doomed, mut early) = (Vec::new(), Vec::new());
        for d in &docs {
            let (ns, id) = (str_field(d, "ns")?, str_field(d, "cid")?);
            if newest.get(ns) != Some(&id) {
                let list = if is_stored(d) {
                    &mut doomed
                } else {
                    &mut early
                };
                list.extend(d.get("_id").cloned());
            }
        }
        let deleted = self.delete_ids(&doomed, &doc! {STORED: true}).await?;
        self.delete_ids(&early, &doc! {STORED: {"$ne": true}})
            .await?;
        self.collect_blobs(thread).await?;
        Ok(deleted)
    }
}

#[async_trait]
impl CheckpointStore for MongoStore {
    /// The blobs (held), then the checkpoint, then the blobs released.
    async fn put_checkpoint(&self, checkpoint: &Checkpoint, blobs: &[ChannelBlob]) -> Result<()> {
        // Encoded and size-checked before anything is written.
        let fields = checkpoint_fields(checkpoint)?;
        let blobs = blob_docs(blobs)?;
        let (thread, ns) = (checkpoint.key.thread.as_str(), checkpoint.key.ns.as_str());
        self.hold_blobs(thread, ns, &blobs).await?;
        let update = doc! {
            "$set": fields,
            "$setOnInsert": {"writes": [], "wrev": 0_i64},
        };
        let written = self
            .upsert(&key_filter(&checkpoint.key), &update, false)
            .await;
        let keys: Vec<(String, String)> = blobs.into_iter().map(|(c, v, _)| (c, v)).collect();
        self.release_blobs(thread, ns, &keys).await;
        written
    }

    /// A compare-and-set of the document's `writes` on `wrev`, or the insert of a document
    /// holding only them when their checkpoint is not stored yet.
    async fn put_writes(&self, at: &CheckpointKey, writes: &[PendingWrite]) -> Result<()> {
        if writes.is_empty() {
            return Ok(());
        }
        retry(|_| async move {
            let found = self.checkpoints().find_one(key_filter(at)).await.mapped()?;
            let Some(mut d) = found else {
                return self.insert_early_writes(at, writes).await;
            };
            let mut stored = writes_from(&d)?;
            let before = stored.clone();
            for w in writes {
                merge_write(&mut stored, w);
            }
            if stored == before {
                return Ok(Step::Done(()));
            }
            let wrev = int_field(&d, "wrev")?;
            let encoded: Vec<Document> = stored.iter().map(write_doc).collect();
            d.insert("writes", encoded.clone());
            check_size("the checkpoint with its pending writes", &d)?;
            let id = d.get("_id").cloned().unwrap_or(Bson::Null);
            let done = self
                .checkpoints()
                .update_one(
                    doc! {"_id": id, "wrev": wrev},
                    doc! {"$set": {"writes": encoded, "wrev": wrev + 1}},
                )
                .await
                .mapped()?;
            if done.matched_count == 1 {
                return Ok(Step::Done(()));
            }
            // Another call wrote first (or the document went: the next try inserts it).
            Ok(Step::Retry(Err(Error::conflict(format!(
                "the pending writes of checkpoint {:?} kept changing; try again",
                at.id.as_str()
            )))))
        })
        .await
    }

    async fn get_checkpoint(
        &self, thread: &ThreadId, ns: &CheckpointNs, id: Option<&CheckpointId>,
    ) -> Result<Option<CheckpointTuple>> {
        retry(|_| async move {
            let found = match id {
                Some(id) => {
                    let key = CheckpointKey {
                        thread: thread.clone(),
                        ns: ns.clone(),
                        id: id.clone(),
                    };
                    self.checkpoints().find_one(stored_key_filter(&key)).await
                }
                None => {
                    self.checkpoints()
                        .find_one(doc! {"thread": thread.as_str(), "ns": ns.as_str(), STORED: true})
                        .sort(doc! {"cid": -1})
                        .await
                }
            };
            let Some(d) = found.mapped()? else {
                return Ok(Step::Done(None));
            };
            let c = checkpoint_from(&d)?;
            Ok(match self.tuples(vec![(d, c)]).await? {
                Step::Done(mut t) => Step::Done(t.pop()),
                Step::Retry(t) => Step::Retry(t.map(|mut t| t.pop())),
                Step::RetryNow(t) => Step::RetryNow(t.map(|mut t| t.pop())),
            })
        })
        .await
    }

    async fn list_checkpoints(&self, query: &CheckpointQuery) -> Result<Vec<CheckpointTuple>> {
        retry(|_| async move {
            let found = self.select(query).await?;
            Ok(match self.tuples(found).await? {
                Step::Done(mut tuples) => {
                    // The server's order already; this makes it the contract's for certain.
                    newest_first(&mut tuples, query.limit);
                    Step::Done(tuples)
                }
                other => other,
            })
        })
        .await
    }

    async fn list_threads(&self) -> Result<Vec<ThreadInfo>> {
        let grouped = all_docs(self.checkpoints().aggregate(vec![
            doc! {"$match": {STORED: true}},
            doc! {"$group": {"_id": "$thread", "n": {"$sum": 1}, "updated": {"$max": "$created"}}},
        ]))
        .await?;
        let mut threads = grouped
            .iter()
            .map(|g| {
                let thread = str_field(g, "_id")?;
                Ok(ThreadInfo {
                    thread: ThreadId::new(thread).map_err(|e| {
                        Error::corrupt(format!("stored thread id: {}", e.message()))
                    })?,
                    checkpoints: u64::try_from(int_field(g, "n")?).unwrap_or(0),
                    updated_at: time_field(g, "updated")?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        threads.sort_by(|a, b| a.thread.cmp(&b.thread));
        Ok(threads)
    }

    async fn delete_thread(&self, thread: &ThreadId) -> Result<bool> {
        Ok(self.delete_thread_docs(thread.as_str()).await? > 0)
    }

    async fn delete_run_checkpoints(&self, run_ids: &[String]) -> Result<u64> {
        if run_ids.is_empty() {
            return Ok(0);
        }
        let in_runs = doc! {"run_id": {"$in": run_ids}, STORED: true};
        let checkpoints = self.checkpoints();
        let docs = checkpoints
            .find(in_runs.clone())
            .projection(doc! {"thread": 1});
        let docs = all_docs(docs).await?;
        let ids: Vec<Bson> = docs.iter().filter_map(|d| d.get("_id").cloned()).collect();
        // By id and run: a checkpoint replaced by another run meanwhile stays.
        let deleted = self.delete_ids(&ids, &in_runs).await?;
        let mut threads: Vec<&str> = docs
            .iter()
            .map(|d| str_field(d, "thread"))
            .collect::<Result<_>>()?;
        threads.sort_unstable();
        threads.dedup();
        for thread in threads {
            self.collect_blobs(thread).await?;
        }
        Ok(deleted)
    }

    /// Copies `source` to `target`: blobs (held), then the checkpoint documents in one insert
    /// (a duplicate key, from a writer that put into `target` meanwhile, undoes the insert and
    /// is the `Conflict`), then the blobs released. Writes made ahead of a checkpoint are not
    /// copied, and those of `target` are dropped: the copy is the whole target thread.
    async fn copy_thread(&self, source: &ThreadId, target: &ThreadId) -> Result<u64> {
        let checkpoints = self.checkpoints();
        let source_docs = checkpoints.find(doc! {"thread": source.as_str(), STORED: true});
        let docs = all_docs(source_docs).await?;
        if docs.is_empty() {
            return Err(missing_thread(source));
        }
        let taken = self
            .checkpoints()
            .find_one(doc! {"thread": target.as_str(), STORED: true})
            .projection(doc! {"_id": 1})
            .await
            .mapped()?;
        if taken.is_some() {
            return Err(thread_exists(target));
        }
        let blobs = all_docs(
            self.checkpoint_blobs()
                .find(doc! {"thread": source.as_str()}),
        )
        .await?;
        let mut by_ns: BTreeMap<String, Vec<(String, String, Document)>> = BTreeMap::new();
        for b in &blobs {
            let fields = doc! {
                "type": b.get("type").cloned().unwrap_or(Bson::Null),
                "value": b.get("value").cloned().unwrap_or(Bson::Null),
            };
            by_ns
                .entry(str_field(b, "ns")?.to_owned())
                .or_default()
                .push((
                    str_field(b, "channel")?.to_owned(),
                    str_field(b, "version")?.to_owned(),
                    fields,
                ));
        }
        let mut held = Vec::new();
        let mut outcome = Ok(());
        for (ns, blobs) in &by_ns {
            outcome = self.hold_blobs(target.as_str(), ns, blobs).await;
            if outcome.is_err() {
                break;
            }
            held.push((ns, blobs));
        }
        if outcome.is_ok() {
            outcome = self.delete_early_writes(target.as_str()).await;
        }
        if outcome.is_ok() {
            outcome = self.insert_copies(&docs, target).await;
        }
        for (ns, blobs) in held {
            let keys: Vec<(String, String)> = blobs
                .iter()
                .map(|(c, v, _)| (c.clone(), v.clone()))
                .collect();
            self.release_blobs(target.as_str(), ns, &keys).await;
        }
        outcome?;
        Ok(docs.len() as u64)
    }

    async fn prune_checkpoints(&self, threads: &[ThreadId], keep: CheckpointPrune) -> Result<u64> {
        let mut pruned = 0;
        for thread in threads {
            pruned += match keep {
                CheckpointPrune::KeepLatest => self.keep_latest(thread.as_str()).await?,
                CheckpointPrune::DeleteAll => self.delete_thread_docs(thread.as_str()).await?,
                // A mode added to the (non-exhaustive) enum later is refused, never guessed.
                other => {
                    return Err(Error::unsupported(format!(
                        "prune mode {other:?} is not supported by this build"
                    )))
                }
            };
        }
        Ok(pruned)
    }
}
