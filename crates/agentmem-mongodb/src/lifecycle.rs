//! The session lifecycle operations: `fork`, `rewind`, `update_session`, `find_sessions`, and
//! the purge sweep of expired sessions.
//!
//! - **fork**: with transactions, one transaction reads the source (its document, head and
//!   messages, from one snapshot) and writes the target (document, head, messages). Without,
//!   the target's head and messages are written under a fresh epoch that no reader follows,
//!   then one insert of the target's session document makes it appear whole (a duplicate key
//!   is the `Conflict`, and the fresh epoch is deleted again); the source is read like `load`
//!   reads, re-checking its epoch afterwards.
//! - **rewind**: with transactions, one transaction reads the messages and deletes exactly
//!   the tail. Without, an epoch switch like compaction's: the kept messages are copied under
//!   a fresh epoch, the session is switched to it only if no append reserved a position since
//!   it was read (else undo and retry), and the old epoch is deleted. Readers see the whole
//!   session before or after, never a part; the price is a copy of the kept messages.
//! - **update_session**: a compare-and-set on the session document's label revision `rev`
//!   (read, apply the patch, write if `rev` is unchanged, else retry), then, when the expiry
//!   changed, `expires_at` on the session's other documents (see
//!   [`MongoStore::settle_expiry`]).
//! - **find_sessions**: one query on `sessions` (owner and every tag with `$eq`, never a
//!   pattern; `_id > after` ascending, `limit + 1`) and one aggregation counting the page's
//!   messages.

use agentmem_core::support::{fork_end, fork_target_exists, micros, rewind_keep};
use agentmem_core::{
    now, Message, MessageId, Result, Rewind, SessionId, SessionInfo, SessionLabels, SessionPage,
    SessionPatch, SessionQuery,
};
use chrono::{DateTime, Utc};
use mongodb::bson::{doc, Bson, Document};
use mongodb::ClientSession;

use crate::codec::{all_docs, int_field, message_from, metadata_to_bson, str_field};
use crate::error::{server_code, ResultExt, DUPLICATE_KEY};
use crate::retry::{retry, Step};
use crate::rewrite::{changed_during, Archived, Switch};
use crate::sessions::{
    encode_all, label_fields, len_i64, live_filter, new_epoch, not_found, placed, session_infos,
    ArchiveEntry, Epoch, SessionDoc,
};
use crate::store::MongoStore;
use crate::transaction::{in_transaction, TxError};

/// The session document of a new session `id` at `epoch` holding `next` messages, created at
/// `t`, with `labels` and no expiry.
fn new_session_doc(
    id: &SessionId, epoch: Epoch, next: i64, t: DateTime<Utc>, labels: &SessionLabels,
) -> Document {
    let mut d = doc! {
        "_id": id.as_str(), "epoch": epoch.to_hex(), "next": next,
        "created": micros(t), "updated": micros(t),
    };
    d.extend(label_fields(labels, None).0);
    d
}

/// The summary of a fork just created.
fn fork_info(
    target: &SessionId, count: usize, t: DateTime<Utc>, labels: SessionLabels,
) -> SessionInfo {
    let mut info = SessionInfo::new(target.clone(), count as u64, t, t);
    info.labels = labels;
    info
}

fn decode_all(docs: &[Document]) -> Result<Vec<Message>> {
    docs.iter().map(message_from).collect()
}

/// Whether a driver error is a duplicate key.
fn is_duplicate(e: &mongodb::error::Error) -> bool {
    server_code(e) == Some(DUPLICATE_KEY)
}

impl MongoStore {
    /// `fork` (see the module docs).
    pub(crate) async fn fork_session(
        &self, source: &SessionId, target: &SessionId, at: Option<&MessageId>,
    ) -> Result<SessionInfo> {
        // An expired target is gone: deleted first, so that its id is free.
        self.clear_expired(target).await?;
        if self.session_doc(target).await?.is_some() {
            return Err(fork_target_exists(target));
        }
        if self.features().transactions {
            in_transaction!(self, |s| {
                self.fork_in_transaction(s, source, target, at).await
            })
        } else {
            self.fork_by_insert(source, target, at).await
        }
    }

    async fn fork_in_transaction(
        &self, s: &mut ClientSession, source: &SessionId, target: &SessionId,
        at: Option<&MessageId>,
    ) -> std::result::Result<SessionInfo, TxError> {
        let t = now();
        let sd = self.live_session_in(s, source, t).await?;
        let h = self.head_in(s, sd.epoch).await?;
        let docs = self.current_docs_in(s, source, sd.epoch).await?;
        let messages = decode_all(&docs)?;
        let end = fork_end(&messages, source, at)?;
        let fields = encode_all(&messages[..end])?;
        let epoch = new_epoch();
        let created = self
            .sessions()
            .insert_one(new_session_doc(target, epoch, len_i64(end)?, t, &sd.labels))
            .session(&mut *s)
            .await;
        match created {
            Ok(_) => {}
            Err(e) if is_duplicate(&e) => return Err(fork_target_exists(target).into()),
            Err(e) => return Err(e.into()),
        }
        self.heads()
            .insert_one(doc! {
                "_id": epoch.to_hex(), "session": target.as_str(), "low": 0i64,
                "metadata": metadata_to_bson(&h.metadata)?, "archives": [],
            })
            .session(&mut *s)
            .await?;
        if !fields.is_empty() {
            self.messages()
                .insert_many(placed(target, epoch, 0, &fields, None))
                .session(&mut *s)
                .await?;
        }
        Ok(fork_info(target, end, t, sd.labels))
    }

    /// Without transactions: the copy goes under a fresh epoch, then one insert of the
    /// session document publishes it.
    async fn fork_by_insert(
        &self, source: &SessionId, target: &SessionId, at: Option<&MessageId>,
    ) -> Result<SessionInfo> {
        let (sd, metadata, messages) = retry(|_| async move {
            let sd = self
                .live_session_doc(source)
                .await?
                .ok_or_else(|| not_found(source))?;
            let (h, messages) = futures_util::try_join!(
                self.head(sd.epoch),
                self.read_messages(source, sd.epoch, sd.next, None)
            )?;
            // A save or compaction may have switched epochs and deleted the one read.
            Ok(match self.session_doc(source).await? {
                Some(again) if again.epoch == sd.epoch => Step::Done((sd, h.metadata, messages)),
                _ => changed_during(source, "during the fork"),
            })
        })
        .await?;
        let end = fork_end(&messages, source, at)?;
        let fields = encode_all(&messages[..end])?;
        let t = now();
        let head = (metadata_to_bson(&metadata)?, Vec::new());
        let epoch = self.write_epoch(target, &fields, head, None).await?;
        let created = self
            .sessions()
            .insert_one(new_session_doc(target, epoch, len_i64(end)?, t, &sd.labels))
            .await;
        match created {
            Ok(_) => Ok(fork_info(target, end, t, sd.labels)),
            Err(e) => {
                self.drop_epoch(target, epoch).await?;
                if is_duplicate(&e) {
                    Err(fork_target_exists(target))
                } else {
                    Err(crate::error::from_driver(e))
                }
            }
        }
    }

    /// `rewind` (see the module docs).
    pub(crate) async fn rewind_session(
        &self, session: &SessionId, to: &Rewind,
    ) -> Result<Vec<Message>> {
        if !self.features().transactions {
            return self.rewind_by_epoch_flip(session, to).await;
        }
        let removed = in_transaction!(self, |s| {
            self.rewind_in_transaction(s, session, to).await
        })?;
        if !removed.is_empty() {
            self.touch(session, micros(now())).await?;
        }
        Ok(removed)
    }

    async fn rewind_in_transaction(
        &self, s: &mut ClientSession, session: &SessionId, to: &Rewind,
    ) -> std::result::Result<Vec<Message>, TxError> {
        let sd = self.live_session_in(s, session, now()).await?;
        let docs = self.current_docs_in(s, session, sd.epoch).await?;
        let messages = decode_all(&docs)?;
        let keep = rewind_keep(&messages, session, to)?;
        let tail = docs.get(keep..).unwrap_or_default();
        if !tail.is_empty() {
            let seqs: Vec<Bson> = tail
                .iter()
                .map(|d| int_field(d, "seq").map(Bson::Int64))
                .collect::<Result<_>>()?;
            self.messages()
                .delete_many(doc! {
                    "session": session.as_str(), "epoch": sd.epoch.to_hex(), "seq": {"$in": seqs},
                })
                .session(&mut *s)
                .await?;
        }
        Ok(messages.into_iter().skip(keep).collect())
    }

    /// Rewind without transactions, as an epoch switch (see the module docs).
    async fn rewind_by_epoch_flip(&self, session: &SessionId, to: &Rewind) -> Result<Vec<Message>> {
        retry(|_| async move {
            let (sd, h, docs) = self.read_for_rewrite(session).await?;
            let mut messages = decode_all(&docs)?;
            let keep = rewind_keep(&messages, session, to)?;
            if keep >= messages.len() {
                return Ok(Step::Done(Vec::new()));
            }
            let removed = messages.split_off(keep);
            let archives = h.archives.iter().map(ArchiveEntry::to_bson).collect();
            let head = (metadata_to_bson(&h.metadata)?, archives);
            let epoch = self
                .write_epoch(session, &encode_all(&messages)?, head, sd.expires)
                .await?;
            let switch = Switch {
                from: &sd,
                to: epoch,
                next: keep,
                touched: Some(micros(now())),
                archived: Archived::default(),
            };
            if self.switch_epoch(session, switch).await? {
                return Ok(Step::Done(removed));
            }
            // An append (or another rewrite) got in between: start over.
            Ok(changed_during(session, "during the rewind"))
        })
        .await
    }

    /// `update_session` (see the module docs).
    pub(crate) async fn patch_session(
        &self, session: &SessionId, patch: &SessionPatch,
    ) -> Result<SessionInfo> {
        patch.validate()?;
        retry(|_| async move {
            let t = now();
            let sd: SessionDoc = self
                .session_doc(session)
                .await?
                .filter(|sd| !sd.is_expired_at(t))
                .ok_or_else(|| not_found(session))?;
            let (mut labels, mut expires) = (sd.labels.clone(), sd.expires);
            patch.apply(&mut labels, &mut expires)?;
            let (set, unset) = label_fields(&labels, expires);
            let mut filter = doc! {
                "_id": session.as_str(),
                "rev": if sd.rev == 0 { Bson::Null } else { Bson::Int64(sd.rev) },
            };
            filter.extend(live_filter(micros(t)));
            let mut update = doc! {"$inc": {"rev": 1i64}};
            if !set.is_empty() {
                update.insert("$set", set);
            }
            if !unset.is_empty() {
                update.insert("$unset", unset);
            }
            let written = self.sessions().update_one(filter, update).await.mapped()?;
            if written.matched_count == 1 {
                if expires != sd.expires {
                    // The session's other documents carry the expiry for the TTL indexes (set
                    // even if the session is gone by now: an expiry in the past, which a TTL
                    // monitor may already have acted on).
                    self.restamp(session, expires).await?;
                    self.settle_expiry(session, Some(expires)).await?;
                }
                let count = self.count_messages(session, sd.epoch).await?;
                let mut info = sd.info(session, count);
                info.labels = labels;
                info.expires_at = expires;
                return Ok(Step::Done(info));
            }
            // Changed (labelled, expired or deleted) since it was read: read it again.
            Ok(changed_during(session, "during update_session"))
        })
        .await
    }

    /// `find_sessions` (see the module docs).
    pub(crate) async fn query_sessions(&self, query: &SessionQuery) -> Result<SessionPage> {
        query.validate()?;
        let mut all = vec![live_filter(micros(now()))];
        if let Some(owner) = &query.owner {
            all.push(doc! {"owner": {"$eq": owner.as_str()}});
        }
        for (k, v) in &query.tags {
            all.push(
                doc! {"tags": {"$elemMatch": {"k": {"$eq": k.as_str()}, "v": {"$eq": v.as_str()}}}},
            );
        }
        if let Some(since) = query.updated_since {
            all.push(doc! {"updated": {"$gte": micros(since)}});
        }
        if let Some(before) = query.updated_before {
            all.push(doc! {"updated": {"$lt": micros(before)}});
        }
        if let Some(after) = &query.after {
            all.push(doc! {"_id": {"$gt": after.as_str()}});
        }
        let limit = i64::try_from(query.limit.saturating_add(1)).unwrap_or(i64::MAX);
        let docs = all_docs(
            self.sessions()
                .find(doc! {"$and": all})
                .sort(doc! {"_id": 1})
                .limit(limit),
        )
        .await?;
        let counted = if docs.is_empty() {
            Vec::new()
        } else {
            let epochs: Vec<&str> = docs
                .iter()
                .map(|d| str_field(d, "epoch"))
                .collect::<Result<_>>()?;
            all_docs(self.messages().aggregate(vec![
                doc! {"$match": {"epoch": {"$in": epochs}}},
                doc! {"$group": {"_id": "$session", "n": {"$sum": 1}}},
            ]))
            .await?
        };
        Ok(query.page(session_infos(&docs, &counted)?))
    }

    /// Deletes every expired session (what the TTL monitor has not yet); how many.
    pub(crate) async fn sweep_expired(&self) -> Result<u64> {
        let expired = all_docs(
            self.sessions()
                .find(doc! {"expires": {"$lte": micros(now())}})
                .projection(doc! {"_id": 1}),
        )
        .await?;
        let mut deleted = 0;
        for d in &expired {
            let id = agentmem_core::support::stored_session_id(str_field(d, "_id")?)?;
            if self.clear_expired(&id).await? {
                deleted += 1;
            }
        }
        Ok(deleted)
    }
}
