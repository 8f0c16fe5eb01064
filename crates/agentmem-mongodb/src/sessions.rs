//! Sessions: the stored model, appends, loads, listing, deletion and retention (saves and
//! compaction are in `rewrite`).
//!
//! A session is one document in `sessions`, `{_id: <session id>, epoch, next, created,
//! updated}`, written by appends; one document in `heads` per epoch,
//! `{_id: <epoch>, session, low, metadata, archives: [...]}`, written only by `save_session`
//! and compaction; and its messages in `messages`, keyed by `(session, epoch, seq)` and read in
//! `seq` order. Appends reserve positive seqs from `next`; `save_session` and compaction (with
//! transactions) take seqs *below* `low`, so their messages sort before any append that was
//! racing with them. `epoch` names the session's current generation: messages and heads of
//! any other epoch are invisible garbage (left by a deleted incarnation, or by a
//! non-transactional save or compaction that lost a race or crashed), so readers need no
//! cleanup to be correct.
//!
//! The session document also carries the session's labels (`title`, `owner`, `tags` as an
//! array of `{k, v}` so that no caller text is ever a field name) with a revision `rev` that
//! `update_session` compares and increments, and its expiry: `expires` (microseconds, exact)
//! and `expires_at` (a date, rounded up to the millisecond, for the TTL indexes). Every other
//! document of an expiring session (messages, archived messages, heads) carries the same
//! `expires_at`, so a server with TTL indexes deletes all of it; readers check `expires`
//! themselves, since a TTL monitor runs only now and then.

use std::collections::HashMap;

use agentmem_core::history::trim_orphans;
use agentmem_core::support::{micros, stored_session_id};
use agentmem_core::{
    now, Error, Message, Metadata, Result, RetentionPolicy, Session, SessionId, SessionInfo,
    SessionLabels,
};
use chrono::{DateTime, Utc};
use futures_util::TryStreamExt;
use mongodb::bson::{doc, oid::ObjectId, Bson, Document};
use mongodb::options::ReturnDocument;
use mongodb::ClientSession;

use crate::codec::{
    all_docs, archived_message_fields, int_field, message_fields, message_from, metadata_field,
    opt_str_field, opt_time_field, str_field, time_field, without_terms,
};
use crate::error::{from_driver, is_transient, server_code, ResultExt, DUPLICATE_KEY};
use crate::retry::{retry, Step, MAX_RETRIES};
use crate::store::MongoStore;
use crate::transaction::TxError;

/// A session generation: a fresh ObjectId, unique across processes. Stored as its hex string
/// because some MongoDB-compatible servers cannot match ObjectId values in filters.
pub(crate) type Epoch = ObjectId;

pub(crate) fn new_epoch() -> Epoch {
    ObjectId::new()
}

/// The session document, decoded.
pub(crate) struct SessionDoc {
    pub(crate) epoch: Epoch,
    pub(crate) next: i64,
    pub(crate) created: DateTime<Utc>,
    pub(crate) updated: DateTime<Utc>,
    pub(crate) labels: SessionLabels,
    pub(crate) expires: Option<DateTime<Utc>>,
    /// The labels' revision (0 when never labelled), for `update_session`'s compare-and-set.
    pub(crate) rev: i64,
}

impl SessionDoc {
    /// Whether the session has expired at `at` (then it is gone for every reader).
    pub(crate) fn is_expired_at(&self, at: DateTime<Utc>) -> bool {
        self.expires.is_some_and(|e| e <= at)
    }

    /// The summary of this session with `count` messages.
    pub(crate) fn info(&self, id: &SessionId, count: u64) -> SessionInfo {
        SessionInfo {
            id: id.clone(),
            message_count: count,
            created_at: self.created,
            updated_at: self.updated,
            labels: self.labels.clone(),
            expires_at: self.expires,
        }
    }
}

/// The filter for sessions not expired at `at` (microseconds): no `expires` (`null` matches an
/// absent field), or a later one.
pub(crate) fn live_filter(at: i64) -> Document {
    doc! {"$or": [{"expires": Bson::Null}, {"expires": {"$gt": at}}]}
}

/// `expires_at` as the TTL indexes read it: a date, rounded *up* to the millisecond so that
/// the server never deletes before the exact expiry.
pub(crate) fn ttl_date(at: DateTime<Utc>) -> Bson {
    let us = micros(at);
    let ms = us.div_euclid(1000) + i64::from(us.rem_euclid(1000) != 0);
    Bson::DateTime(mongodb::bson::DateTime::from_millis(ms))
}

/// Adds `expires_at` to a document of a session that expires at `expires`.
pub(crate) fn stamp(d: &mut Document, expires: Option<DateTime<Utc>>) {
    if let Some(at) = expires {
        d.insert("expires_at", ttl_date(at));
    }
}

/// The stored fields of `labels` and `expires`, for `$set`, and the absent ones, for `$unset`.
pub(crate) fn label_fields(
    labels: &SessionLabels, expires: Option<DateTime<Utc>>,
) -> (Document, Document) {
    let (mut set, mut unset) = (doc! {}, doc! {});
    for (field, value) in [("title", &labels.title), ("owner", &labels.owner)] {
        match value {
            Some(v) => set.insert(field, v.as_str()),
            None => unset.insert(field, ""),
        };
    }
    // Ordered by key (a BTreeMap): one stored form per set of tags.
    let tags: Vec<Bson> = labels
        .tags
        .iter()
        .map(|(k, v)| Bson::Document(doc! {"k": k.as_str(), "v": v.as_str()}))
        .collect();
    if tags.is_empty() {
        unset.insert("tags", "");
    } else {
        set.insert("tags", tags);
    }
    match expires {
        Some(at) => {
            set.insert("expires", micros(at));
            set.insert("expires_at", ttl_date(at));
        }
        None => {
            unset.insert("expires", "");
            unset.insert("expires_at", "");
        }
    }
    (set, unset)
}

fn labels_of(d: &Document) -> Result<SessionLabels> {
    let mut labels = SessionLabels {
        title: opt_str_field(d, "title")?,
        owner: opt_str_field(d, "owner")?,
        ..Default::default()
    };
    match d.get("tags") {
        None | Some(Bson::Null) => {}
        Some(Bson::Array(items)) => {
            for item in items {
                let Bson::Document(t) = item else {
                    return Err(Error::corrupt("session `tags` holds a non-document"));
                };
                labels.tags.insert(
                    str_field(t, "k")?.to_string(),
                    str_field(t, "v")?.to_string(),
                );
            }
        }
        Some(_) => return Err(Error::corrupt("session field `tags` is not an array")),
    }
    Ok(labels)
}

/// The head of an epoch, decoded (defaults when it has none yet).
#[derive(Default)]
pub(crate) struct Head {
    pub(crate) low: i64,
    pub(crate) metadata: Metadata,
    pub(crate) archives: Vec<ArchiveEntry>,
}

/// One entry of a head's `archives` array: the archive's summary and the epoch its
/// messages were stored under.
pub(crate) struct ArchiveEntry {
    pub(crate) id: String,
    pub(crate) epoch: Epoch,
    pub(crate) created: DateTime<Utc>,
    pub(crate) count: i64,
}

impl ArchiveEntry {
    pub(crate) fn to_bson(&self) -> Bson {
        Bson::Document(doc! {
            "id": &self.id, "epoch": self.epoch.to_hex(), "created": micros(self.created), "count": self.count,
        })
    }
}

fn epoch_field(d: &Document, field: &str) -> Result<Epoch> {
    let hex = str_field(d, field)?;
    ObjectId::parse_str(hex)
        .map_err(|_| Error::corrupt(format!("field `{field}` is not an epoch: {hex:?}")))
}

pub(crate) fn session_doc(d: &Document) -> Result<SessionDoc> {
    Ok(SessionDoc {
        epoch: epoch_field(d, "epoch")?,
        next: int_field(d, "next")?,
        created: time_field(d, "created")?,
        updated: time_field(d, "updated")?,
        labels: labels_of(d)?,
        expires: opt_time_field(d, "expires")?,
        rev: match d.get("rev") {
            None | Some(Bson::Null) => 0,
            Some(_) => int_field(d, "rev")?,
        },
    })
}

pub(crate) fn head(d: &Document) -> Result<Head> {
    let archives = match d.get("archives") {
        None | Some(Bson::Null) => Vec::new(),
        Some(Bson::Array(items)) => items
            .iter()
            .map(|item| {
                let Bson::Document(a) = item else {
                    return Err(Error::corrupt("head `archives` holds a non-document"));
                };
                Ok(ArchiveEntry {
                    id: str_field(a, "id")?.to_string(),
                    epoch: epoch_field(a, "epoch")?,
                    created: time_field(a, "created")?,
                    count: int_field(a, "count")?,
                })
            })
            .collect::<Result<_>>()?,
        Some(_) => return Err(Error::corrupt("head field `archives` is not an array")),
    };
    Ok(Head {
        low: int_field(d, "low")?,
        metadata: metadata_field(d, "metadata")?,
        archives,
    })
}

pub(crate) fn not_found(session: &SessionId) -> Error {
    Error::not_found(format!("session `{session}` does not exist"))
}

/// Message documents for `messages` at seqs `first..`, under `session` and `epoch`, of a
/// session that expires at `expires`.
pub(crate) fn placed(
    session: &SessionId, epoch: Epoch, first: i64, fields: &[Document],
    expires: Option<DateTime<Utc>>,
) -> Vec<Document> {
    fields
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let mut d = doc! {"session": session.as_str(), "epoch": epoch.to_hex(), "seq": first + i as i64};
            d.extend(f.clone());
            stamp(&mut d, expires);
            d
        })
        .collect()
}

/// The fields of `messages` for `messages` (with their search terms).
pub(crate) fn encode_all(messages: &[Message]) -> Result<Vec<Document>> {
    messages.iter().map(message_fields).collect()
}

/// The fields of `messages` for an archive (without search terms, which no search reads).
pub(crate) fn encode_archived(messages: &[Message]) -> Result<Vec<Document>> {
    messages.iter().map(archived_message_fields).collect()
}

/// Runs a find on `messages` and decodes the messages.
async fn collect_messages(
    find: impl std::future::IntoFuture<Output = mongodb::error::Result<mongodb::Cursor<Document>>>,
) -> Result<Vec<Message>> {
    all_docs(find).await?.iter().map(message_from).collect()
}

/// The sessions of `docs` (session documents, in id order), with the message counts
/// `counted` holds (`{_id: session, n}` per session with messages in its current epoch).
pub(crate) fn session_infos(docs: &[Document], counted: &[Document]) -> Result<Vec<SessionInfo>> {
    let mut counts: HashMap<&str, i64> = HashMap::new();
    for c in counted {
        if let Ok(s) = c.get_str("_id") {
            counts.insert(s, int_field(c, "n")?);
        }
    }
    docs.iter()
        .map(|d| {
            let id = stored_session_id(str_field(d, "_id")?)?;
            let sd = session_doc(d)?;
            let n = counts.get(id.as_str()).copied().unwrap_or(0);
            Ok(sd.info(&id, u64::try_from(n).unwrap_or(0)))
        })
        .collect()
}

/// The sessions a purge deletes under `policy`: of `docs` (`_id` and `updated`, newest
/// first), those last written before `cutoff` (microseconds) and all after the first
/// `max_sessions`.
pub(crate) fn expired(
    docs: &[Document], policy: &RetentionPolicy, cutoff: Option<i64>,
) -> Result<Vec<SessionId>> {
    let mut doomed = Vec::new();
    for (rank, d) in docs.iter().enumerate() {
        let too_old = cutoff.is_some_and(|c| int_field(d, "updated").is_ok_and(|u| u < c));
        let too_many = policy.max_sessions.is_some_and(|max| rank >= max);
        if too_old || too_many {
            doomed.push(stored_session_id(str_field(d, "_id")?)?);
        }
    }
    Ok(doomed)
}

pub(crate) fn len_i64(n: usize) -> Result<i64> {
    i64::try_from(n).map_err(|_| Error::invalid_input("too many messages in one call"))
}

impl MongoStore {
    pub(crate) async fn session_doc(&self, session: &SessionId) -> Result<Option<SessionDoc>> {
        let found = self
            .sessions()
            .find_one(doc! {"_id": session.as_str()})
            .await
            .mapped()?;
        found.map(|d| session_doc(&d)).transpose()
    }

    pub(crate) async fn head(&self, epoch: Epoch) -> Result<Head> {
        let found = self
            .heads()
            .find_one(doc! {"_id": epoch.to_hex()})
            .await
            .mapped()?;
        Ok(found.map(|d| head(&d)).transpose()?.unwrap_or_default())
    }

    pub(crate) async fn head_in(
        &self, s: &mut ClientSession, epoch: Epoch,
    ) -> std::result::Result<Head, TxError> {
        let found = self
            .heads()
            .find_one(doc! {"_id": epoch.to_hex()})
            .session(&mut *s)
            .await?;
        Ok(found.map(|d| head(&d)).transpose()?.unwrap_or_default())
    }

    /// The session document read in the transaction `s`; `NotFound` when the session is
    /// missing or has expired at `at`.
    pub(crate) async fn live_session_in(
        &self, s: &mut ClientSession, session: &SessionId, at: DateTime<Utc>,
    ) -> std::result::Result<SessionDoc, TxError> {
        let found = self
            .sessions()
            .find_one(doc! {"_id": session.as_str()})
            .session(&mut *s)
            .await?
            .ok_or_else(|| not_found(session))?;
        let sd = session_doc(&found)?;
        if sd.is_expired_at(at) {
            return Err(not_found(session).into());
        }
        Ok(sd)
    }

    /// The message documents of `epoch` read in the transaction `s`, in seq order.
    pub(crate) async fn current_docs_in(
        &self, s: &mut ClientSession, session: &SessionId, epoch: Epoch,
    ) -> std::result::Result<Vec<Document>, TxError> {
        let mut cursor = self
            .messages()
            .find(doc! {"session": session.as_str(), "epoch": epoch.to_hex()})
            .projection(without_terms())
            .sort(doc! {"seq": 1})
            .session(&mut *s)
            .await?;
        Ok(cursor.stream(&mut *s).try_collect().await?)
    }

    /// Creates the session document when missing (no-op when it exists).
    ///
    /// A separate insert rather than an upsert with `$setOnInsert`, which some
    /// MongoDB-compatible servers ignore in `findAndModify`; it costs two round trips (the
    /// miss and the insert), only the first time a session is written.
    pub(crate) async fn ensure_session(&self, session: &SessionId, t: i64) -> Result<()> {
        let created = self
            .sessions()
            .insert_one(doc! {
                "_id": session.as_str(), "epoch": new_epoch().to_hex(), "next": 0i64,
                "created": t, "updated": t,
            })
            .await;
        match created {
            Ok(_) => Ok(()),
            Err(e) if server_code(&e) == Some(DUPLICATE_KEY) => Ok(()),
            Err(e) => Err(from_driver(e)),
        }
    }

    /// Reserves `n` positions at the end of the session (creating it when missing, and anew
    /// when expired) and returns the first, the session's epoch and its expiry: one
    /// `findAndModify` with `$inc`, which the server applies atomically, so concurrent
    /// appenders get disjoint, ordered ranges.
    pub(crate) async fn reserve(
        &self, session: &SessionId, n: i64,
    ) -> Result<(i64, Epoch, Option<DateTime<Utc>>)> {
        let t = micros(now());
        retry(|attempt| async move {
            let mut filter = doc! {"_id": session.as_str()};
            filter.extend(live_filter(t));
            let result = self
                .sessions()
                .find_one_and_update(filter, doc! {"$inc": {"next": n}, "$max": {"updated": t}})
                .return_document(ReturnDocument::After)
                .await;
            match result {
                Ok(Some(d)) => {
                    let h = session_doc(&d)?;
                    Ok(Step::Done((h.next - n, h.epoch, h.expires)))
                }
                Ok(None) => {
                    if attempt < MAX_RETRIES {
                        // Missing, or expired: an expired session is deleted first, and the
                        // next try starts a new one (not done when no try is left).
                        self.clear_expired(session).await?;
                        self.ensure_session(session, t).await?;
                    }
                    Ok(Step::RetryNow(Err(Error::conflict(format!(
                        "session `{session}` keeps being deleted while appending"
                    )))))
                }
                // A write conflict: safe to retry.
                Err(e) if is_transient(&e) => Ok(Step::Retry(Err(from_driver(e)))),
                Err(e) => Err(from_driver(e)),
            }
        })
        .await
    }

    /// The session document, unless the session is missing or has expired.
    pub(crate) async fn live_session_doc(&self, session: &SessionId) -> Result<Option<SessionDoc>> {
        Ok(self
            .session_doc(session)
            .await?
            .filter(|sd| !sd.is_expired_at(now())))
    }

    /// Deletes the session if it has expired (its document first, so that the id is free at
    /// once, then everything stored under it); whether it did.
    pub(crate) async fn clear_expired(&self, session: &SessionId) -> Result<bool> {
        let deleted = self
            .sessions()
            .find_one_and_delete(doc! {"_id": session.as_str(), "expires": {"$lte": micros(now())}})
            .await
            .mapped()?;
        match deleted {
            Some(d) => {
                self.remove_data(session, &d).await?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Deletes what a removed session document `d` of `session` listed: its archives, its
    /// current epoch's messages and head. Done by epoch, which never touches a new session of
    /// the same id that a write may create meanwhile (it gets a new epoch).
    pub(crate) async fn remove_data(&self, session: &SessionId, d: &Document) -> Result<()> {
        let epoch = session_doc(d)?.epoch;
        let h = self.head(epoch).await?;
        let mut epochs: Vec<ObjectId> = h.archives.iter().map(|a| a.epoch).collect();
        epochs.push(epoch);
        epochs.sort();
        epochs.dedup();
        self.archived()
            .delete_many(doc! {"session": session.as_str(), "epoch": {"$in": epochs.iter().map(|e| e.to_hex()).collect::<Vec<_>>()}})
            .await
            .mapped()?;
        self.drop_epoch(session, epoch).await
    }

    /// Makes `expires_at` on every document of the session (messages, archived messages,
    /// heads) match the session's expiry, after a write that stamped them with `stamped`, the
    /// expiry it read: re-reads the session and re-stamps until they agree, so that a
    /// concurrent `update_session` never leaves documents that the TTL indexes would delete
    /// before (or keep after) the session.
    pub(crate) async fn settle_expiry(
        &self, session: &SessionId, mut stamped: Option<Option<DateTime<Utc>>>,
    ) -> Result<()> {
        for _ in 0..MAX_RETRIES {
            let Some(sd) = self.session_doc(session).await? else {
                return Ok(());
            };
            if stamped == Some(sd.expires) {
                return Ok(());
            }
            self.restamp(session, sd.expires).await?;
            stamped = Some(sd.expires);
        }
        Ok(())
    }

    /// Sets `expires_at` for `expires` on every message, archived message and head of the
    /// session (removes it for `None`).
    pub(crate) async fn restamp(
        &self, session: &SessionId, expires: Option<DateTime<Utc>>,
    ) -> Result<()> {
        let update = match expires {
            Some(at) => doc! {"$set": {"expires_at": ttl_date(at)}},
            None => doc! {"$unset": {"expires_at": ""}},
        };
        let of_session = doc! {"session": session.as_str()};
        futures_util::try_join!(
            async {
                self.messages()
                    .update_many(of_session.clone(), update.clone())
                    .await
                    .mapped()
            },
            async {
                self.archived()
                    .update_many(of_session.clone(), update.clone())
                    .await
                    .mapped()
            },
            async {
                self.heads()
                    .update_many(of_session.clone(), update.clone())
                    .await
                    .mapped()
            },
        )?;
        Ok(())
    }

    /// Marks the session written at `t` (after a transaction, which leaves `sessions` alone
    /// so that it never blocks appends).
    pub(crate) async fn touch(&self, session: &SessionId, t: i64) -> Result<()> {
        self.sessions()
            .update_one(
                doc! {"_id": session.as_str()},
                doc! {"$max": {"updated": t}},
            )
            .await
            .mapped()?;
        Ok(())
    }

    /// The messages of `epoch`, all in seq order, or only the last `limit`. `next` is the
    /// session's next free position, as read with its epoch.
    pub(crate) async fn read_messages(
        &self, session: &SessionId, epoch: Epoch, next: i64, limit: Option<usize>,
    ) -> Result<Vec<Message>> {
        let filter = doc! {"session": session.as_str(), "epoch": epoch.to_hex()};
        let messages = self.messages();
        let Some(n) = limit else {
            return collect_messages(
                messages
                    .find(filter)
                    .projection(without_terms())
                    .sort(doc! {"seq": 1}),
            )
            .await;
        };
        // Fast path, one index range: the messages at positions `next - n` and above. When
        // there are at least `n`, the last `n` of them are the session's last `n`, whatever
        // gaps lie below. (Some servers sort rather than walk the index backwards for the
        // general query below.)
        let mut ranged = filter.clone();
        ranged.insert(
            "seq",
            doc! {"$gte": next.saturating_sub(i64::try_from(n).unwrap_or(i64::MAX))},
        );
        let window = collect_messages(
            messages
                .find(ranged)
                .projection(without_terms())
                .sort(doc! {"seq": 1}),
        )
        .await?;
        if window.len() >= n {
            let skip = window.len() - n;
            return Ok(window.into_iter().skip(skip).collect());
        }
        // A short session, or positions still being written: newest first on the
        // (session, epoch, seq) index, then back to oldest first.
        let mut window = collect_messages(
            messages
                .find(filter)
                .projection(without_terms())
                .sort(doc! {"seq": -1})
                .limit(i64::try_from(n).unwrap_or(i64::MAX)),
        )
        .await?;
        window.reverse();
        Ok(window)
    }

    pub(crate) async fn count_messages(&self, session: &SessionId, epoch: Epoch) -> Result<u64> {
        self.messages()
            .count_documents(doc! {"session": session.as_str(), "epoch": epoch.to_hex()})
            .await
            .mapped()
    }

    /// Loads the session as of `sd`, its document.
    pub(crate) async fn load_epoch(
        &self, session: &SessionId, limit: Option<usize>, sd: SessionDoc,
    ) -> Result<Session> {
        let messages = async {
            Ok::<_, Error>(match limit {
                None => {
                    let all = self.read_messages(session, sd.epoch, sd.next, None).await?;
                    let total = all.len() as u64;
                    (all, total)
                }
                Some(0) => (Vec::new(), self.count_messages(session, sd.epoch).await?),
                Some(n) => {
                    // The window and the count at once (one round trip less): the count is
                    // a separate read either way, and a short window is its own count.
                    let (window, counted) = futures_util::try_join!(
                        self.read_messages(session, sd.epoch, sd.next, Some(n)),
                        self.count_messages(session, sd.epoch)
                    )?;
                    let total = if window.len() < n {
                        window.len() as u64
                    } else {
                        counted
                    };
                    let whole = window.len() as u64 >= total;
                    (trim_orphans(window, whole), total)
                }
            })
        };
        let (head, (messages, total)) = futures_util::try_join!(self.head(sd.epoch), messages)?;
        Ok(Session {
            labels: sd.labels,
            expires_at: sd.expires,
            id: session.clone(),
            messages,
            metadata: head.metadata,
            created_at: sd.created,
            updated_at: sd.updated,
            total_messages: total,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_dates_round_up_to_the_millisecond() {
        let at = |us| DateTime::from_timestamp_micros(us).unwrap();
        let ms = |b: Bson| b.as_datetime().unwrap().timestamp_millis();
        assert_eq!(ms(ttl_date(at(1_000_000_000_000_001))), 1_000_000_000_001);
        assert_eq!(ms(ttl_date(at(1_000_000_000_000_000))), 1_000_000_000_000);
        assert_eq!(ms(ttl_date(at(-1))), 0);
    }

    #[test]
    fn labels_and_expiry_round_trip_as_values() {
        let mut labels = SessionLabels {
            title: Some("t".into()),
            owner: None,
            ..Default::default()
        };
        labels.tags.insert("$where".into(), "a.b".into());
        labels.tags.insert("k:*".into(), "v".into());
        let at = DateTime::from_timestamp_micros(1_750_000_000_123_456).unwrap();
        let (set, unset) = label_fields(&labels, Some(at));
        assert_eq!(unset, doc! {"owner": ""});
        let mut d = doc! {
            "_id": "s", "epoch": new_epoch().to_hex(), "next": 0i64, "created": 1i64, "updated": 2i64,
        };
        d.extend(set);
        let sd = session_doc(&d).unwrap();
        assert_eq!(sd.labels, labels);
        assert_eq!(sd.expires, Some(at));
        assert_eq!(sd.rev, 0);
        assert!(sd.is_expired_at(at) && !sd.is_expired_at(at - chrono::Duration::microseconds(1)));

        let (set, unset) = label_fields(&SessionLabels::default(), None);
        assert!(set.is_empty());
        assert_eq!(unset.len(), 5, "{unset:?}");
        d.insert("tags", "not an array");
        assert_eq!(
            session_doc(&d).err().unwrap().kind(),
            agentmem_core::ErrorKind::CorruptData
        );
    }
}
