//! Channel values of checkpoints (blobs), one document each in `checkpoint_blobs`, keyed by
//! (thread, ns, channel, version): written before the checkpoint that reads them, read for
//! tuples, and deleted when no checkpoint reads them, without transactions.
//!
//! A put holds its blobs while it writes the checkpoint: each upsert adds 1 to the blob's
//! `pending` count and to its revision `rev`, and the put takes 1 off `pending` once the
//! checkpoint is written. Deleting unread blobs ([`MongoStore::collect_blobs`]) reads the
//! blobs nobody holds with their revisions, *then* what the thread's checkpoints read, then
//! deletes each unread blob only if its revision is unchanged and nobody holds it. A put
//! that upserted a blob after that first read changed its revision; one that upserted it
//! before still holds it, unless it has released it, and then its checkpoint was written before
//! the references were read. So a blob a stored checkpoint reads is never deleted, and a
//! reader never sees a checkpoint without its blobs. A put that dies between the two steps
//! leaves its blobs held: kept, never lost.

use std::collections::{BTreeMap, HashMap, HashSet};

use agentmem_core::{Result, TypedBytes};
use mongodb::bson::{doc, Bson, Document};

use crate::checkpoint_codec::{blob_value, versions_from};
use crate::codec::{all_docs, str_field};
use crate::error::{from_driver, server_code, ResultExt, DUPLICATE_KEY};
use crate::retry::{retry, Step};
use crate::store::MongoStore;

/// How many keys one query or delete names at most (`$or` and `$in` lists).
pub(crate) const KEYS_PER_QUERY: usize = 256;

/// A blob's place: (thread, ns, channel, version).
pub(crate) type BlobKey = (String, String, String, String);

/// The blob values found, by key (`None`: the channel was emptied at that version).
pub(crate) type BlobValues = HashMap<BlobKey, Option<TypedBytes>>;

/// `{channel, version}` of each of `keys`, for an `$or`.
fn channel_versions(keys: &[(String, String)]) -> Vec<Document> {
    keys.iter()
        .map(|(c, v)| doc! {"channel": c, "version": v})
        .collect()
}

impl MongoStore {
    /// Upserts each blob `(channel, version, fields)` of (`thread`, `ns`) and holds it (see the
    /// module docs). On failure the blobs held so far are released again.
    pub(crate) async fn hold_blobs(
        &self, thread: &str, ns: &str, blobs: &[(String, String, Document)],
    ) -> Result<()> {
        for (i, (channel, version, fields)) in blobs.iter().enumerate() {
            let filter = doc! {"thread": thread, "ns": ns, "channel": channel, "version": version};
            let update = doc! {"$set": fields.clone(), "$inc": {"rev": 1_i64, "pending": 1_i64}};
            if let Err(e) = self.upsert(&filter, &update, true).await {
                let held: Vec<(String, String)> = blobs[..i]
                    .iter()
                    .map(|(c, v, _)| (c.clone(), v.clone()))
                    .collect();
                self.release_blobs(thread, ns, &held).await;
                return Err(e);
            }
        }
        Ok(())
    }

    /// Releases the blobs `keys` (channel, version) of (`thread`, `ns`) that a put held. A
    /// failure only leaves them held (kept until a later collection finds them released), so
    /// it is logged, not returned: the put it follows has succeeded or failed already.
    pub(crate) async fn release_blobs(&self, thread: &str, ns: &str, keys: &[(String, String)]) {
        for chunk in keys.chunks(KEYS_PER_QUERY) {
            let filter = doc! {"thread": thread, "ns": ns, "$or": channel_versions(chunk)};
            let released = self
                .checkpoint_blobs()
                .update_many(filter, doc! {"$inc": {"pending": -1_i64}})
                .await;
            if let Err(e) = released {
                tracing::warn!(
                    error = %e,
                    "could not release checkpoint blobs; they stay until collected again"
                );
            }
        }
    }

    /// One upsert on `checkpoints` (`blobs` when `blob`), retried when a concurrent upsert of
    /// the same key won the insert (duplicate key): the retry updates the winner's document.
    pub(crate) async fn upsert(
        &self, filter: &Document, update: &Document, blob: bool,
    ) -> Result<()> {
        let coll = if blob {
            self.checkpoint_blobs()
        } else {
            self.checkpoints()
        };
        retry(|_| {
            let coll = coll.clone();
            async move {
                match coll
                    .update_one(filter.clone(), update.clone())
                    .upsert(true)
                    .await
                {
                    Ok(_) => Ok(Step::Done(())),
                    Err(e) if server_code(&e) == Some(DUPLICATE_KEY) => {
                        Ok(Step::Retry(Err(from_driver(e))))
                    }
                    Err(e) => Err(from_driver(e)),
                }
            }
        })
        .await
    }

    /// The stored blobs among `wanted`, by key.
    pub(crate) async fn blob_values(&self, wanted: &[BlobKey]) -> Result<BlobValues> {
        let mut by_place: BTreeMap<(&str, &str), Vec<(String, String)>> = BTreeMap::new();
        for (thread, ns, channel, version) in wanted {
            by_place
                .entry((thread, ns))
                .or_default()
                .push((channel.clone(), version.clone()));
        }
        let mut found = HashMap::new();
        for ((thread, ns), keys) in by_place {
            for chunk in keys.chunks(KEYS_PER_QUERY) {
                let filter = doc! {"thread": thread, "ns": ns, "$or": channel_versions(chunk)};
                let projection = doc! {"channel": 1, "version": 1, "type": 1, "value": 1};
                let docs =
                    all_docs(self.checkpoint_blobs().find(filter).projection(projection)).await?;
                for d in &docs {
                    let key = (
                        thread.to_owned(),
                        ns.to_owned(),
                        str_field(d, "channel")?.to_owned(),
                        str_field(d, "version")?.to_owned(),
                    );
                    found.insert(key, blob_value(d)?);
                }
            }
        }
        Ok(found)
    }

    /// Deletes the blobs of `thread` that none of its checkpoints reads and no put holds, by
    /// the protocol of the module docs.
    pub(crate) async fn collect_blobs(&self, thread: &str) -> Result<()> {
        // First the unheld blobs with their revisions …
        let blob_docs = self.checkpoint_blobs();
        let unheld = blob_docs
            .find(doc! {"thread": thread, "pending": {"$lte": 0}})
            .projection(doc! {"ns": 1, "channel": 1, "version": 1, "rev": 1});
        let blobs = all_docs(unheld).await?;
        if blobs.is_empty() {
            return Ok(());
        }
        // … then what the checkpoints read …
        let checkpoints = self.checkpoints();
        let refs = checkpoints
            .find(doc! {"thread": thread})
            .projection(doc! {"ns": 1, "versions": 1});
        let mut read: HashSet<(String, String, String)> = HashSet::new();
        for d in all_docs(refs).await? {
            let ns = str_field(&d, "ns")?;
            for (channel, version) in versions_from(&d)? {
                read.insert((ns.to_owned(), channel, version));
            }
        }
        // … then each unread blob, unless a put upserted it since.
        let mut doomed = Vec::new();
        for b in &blobs {
            let place = (
                str_field(b, "ns")?.to_owned(),
                str_field(b, "channel")?.to_owned(),
                str_field(b, "version")?.to_owned(),
            );
            if let (false, Some(id)) = (read.contains(&place), b.get("_id")) {
                let rev = b.get("rev").cloned().unwrap_or(Bson::Null);
                doomed.push(doc! {"_id": id.clone(), "rev": rev});
            }
        }
        for chunk in doomed.chunks(KEYS_PER_QUERY) {
            self.checkpoint_blobs()
                .delete_many(doc! {"pending": {"$lte": 0}, "$or": chunk.to_vec()})
                .await
                .mapped()?;
        }
        Ok(())
    }
}
