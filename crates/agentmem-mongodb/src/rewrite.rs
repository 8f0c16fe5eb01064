//! Whole-session rewrites: `save_session` and compaction, each with a transaction where the
//! server has them and as a two-phase epoch switch where it does not (see the crate docs),
//! and reading archives back.

use std::collections::HashSet;
use std::time::Duration;

use agentmem_core::support::{archive_not_found, free_archive_id, micros, stored_archive_id};
use agentmem_core::{now, ArchiveId, ArchiveInfo, Error, Result, SessionId};
use chrono::{DateTime, Utc};
use mongodb::bson::{doc, Bson, Document};
use mongodb::options::ReturnDocument;
use mongodb::ClientSession;

use crate::codec::{
    all_docs, archived_message_fields, int_field, message_fields, message_from, metadata_to_bson,
    without_terms,
};
use crate::error::ResultExt;
use crate::retry::{retry, Step};
use crate::sessions::{
    len_i64, new_epoch, not_found, placed, session_doc, stamp, ArchiveEntry, Epoch, Head,
    SessionDoc,
};
use crate::store::MongoStore;
use crate::transaction::TxError;

/// `d` with `expires_at` added when the session expires (see [`stamp`]).
pub(crate) fn stamped(mut d: Document, expires: Option<DateTime<Utc>>) -> Document {
    stamp(&mut d, expires);
    d
}

/// How long a non-transactional compaction waits for appends that reserved positions but
/// have not written their messages yet, before treating those positions as failed appends.
const IN_FLIGHT_WAIT: Duration = Duration::from_secs(2);

pub(crate) fn archive_info(session: &SessionId, entry: &ArchiveEntry) -> Result<ArchiveInfo> {
    Ok(ArchiveInfo {
        id: stored_archive_id(entry.id.clone())?,
        session: session.clone(),
        created_at: entry.created,
        message_count: u64::try_from(entry.count).unwrap_or(0),
    })
}

/// A new archive id for a compaction at `at` (see [`free_archive_id`]).
fn new_archive_id(at: DateTime<Utc>, existing: &[ArchiveEntry]) -> Result<ArchiveId> {
    let taken: HashSet<&str> = existing.iter().map(|a| a.id.as_str()).collect();
    ArchiveId::new(free_archive_id(at, |candidate| taken.contains(candidate)))
}

/// The documents of archive `id` (of `epoch`, of a session expiring at `expires`) for
/// `current`, message documents of `messages`.
fn archive_docs(
    session: &SessionId, (epoch, expires): (Epoch, Option<DateTime<Utc>>), id: &ArchiveId,
    current: &[Document],
) -> Result<Vec<Document>> {
    current
        .iter()
        .enumerate()
        .map(|(pos, d)| {
            let m = message_from(d)?;
            let mut a = doc! {
                "session": session.as_str(), "epoch": epoch.to_hex(), "archive": id.as_str(), "pos": pos as i64,
            };
            a.extend(archived_message_fields(&m)?);
            stamp(&mut a, expires);
            Ok(a)
        })
        .collect()
}

/// For replacing archive `archive` (of `existing`, a head's entries) with the message
/// documents `fields`: the new `archives` list, the new entry (same id, place and creation
/// time, a fresh tag for its messages, the new count) and the tag of the old messages.
/// `NotFound` when the head lists no such archive.
fn replaced_entries(
    session: &SessionId, archive: &ArchiveId, existing: &[ArchiveEntry], fields: &[Document],
) -> Result<(Vec<Bson>, ArchiveEntry, Epoch)> {
    let found = existing
        .iter()
        .find(|a| a.id == archive.as_str())
        .ok_or_else(|| archive_not_found(session, archive))?;
    let entry = ArchiveEntry {
        id: found.id.clone(),
        epoch: new_epoch(),
        created: found.created,
        count: len_i64(fields.len())?,
    };
    let archives = existing
        .iter()
        .map(|a| {
            if a.id == entry.id {
                entry.to_bson()
            } else {
                a.to_bson()
            }
        })
        .collect();
    Ok((archives, entry, found.epoch))
}

/// Switching a session to a new epoch written for a rewrite (see
/// [`MongoStore::switch_epoch`]).
pub(crate) struct Switch<'a> {
    /// The session document as read before the rewrite.
    pub(crate) from: &'a SessionDoc,
    /// The new epoch, written.
    pub(crate) to: Epoch,
    /// How many messages the new epoch holds.
    pub(crate) next: usize,
    /// The time `updated` is raised to, if any.
    pub(crate) touched: Option<i64>,
    /// Archived messages that lose, besides the losing epoch.
    pub(crate) archived: Archived,
}

/// The archived messages (filters on `archived`) deleted after a switch, by its outcome.
#[derive(Default)]
pub(crate) struct Archived {
    /// Deleted once the session is switched (the old messages of a replaced archive).
    pub(crate) if_switched: Option<Document>,
    /// Deleted when it is not (the messages written for the new epoch).
    pub(crate) if_not: Option<Document>,
}

impl Archived {
    /// Only `written`, deleted when the switch is not made.
    pub(crate) fn undo(written: Document) -> Self {
        Archived {
            if_switched: None,
            if_not: Some(written),
        }
    }
}

/// The retry of a rewrite that found the session changed `when` (the conflict once the
/// tries are spent).
pub(crate) fn changed_during<T>(session: &SessionId, when: &str) -> Step<T> {
    Step::Retry(Err(Error::conflict(format!(
        "session `{session}` kept changing {when}; try again"
    ))))
}

impl MongoStore {
    /// Writes `fields` (the new messages) under `epoch` (of a session expiring at `expires`) at
    /// the seqs just below `low`, in the transaction `s`, and returns the new `low`. Taking seqs below `low` (rather than
    /// restarting at 0) keeps them below any append racing with the transaction, whose
    /// message then lands after them.
    async fn place_below(
        &self, s: &mut ClientSession, session: &SessionId,
        (epoch, expires): (Epoch, Option<DateTime<Utc>>), low: i64, fields: &[Document],
    ) -> std::result::Result<i64, TxError> {
        let k = len_i64(fields.len())?;
        if k > 0 {
            self.messages()
                .insert_many(placed(session, epoch, low - k, fields, expires))
                .session(&mut *s)
                .await?;
        }
        Ok(low - k)
    }

    /// `save_session` in one transaction on the session's current `epoch`: replaces its
    /// messages and metadata.
    pub(crate) async fn save_in_transaction(
        &self, s: &mut ClientSession, session: &SessionId,
        (epoch, expires): (Epoch, Option<DateTime<Utc>>), fields: &[Document], meta: &Bson,
    ) -> std::result::Result<(), TxError> {
        let h = self.head_in(s, epoch).await?;
        self.messages()
            .delete_many(doc! {"session": session.as_str(), "epoch": epoch.to_hex()})
            .session(&mut *s)
            .await?;
        let low = self
            .place_below(s, session, (epoch, expires), h.low, fields)
            .await?;
        let mut set = doc! {"session": session.as_str(), "low": low, "metadata": meta.clone()};
        stamp(&mut set, expires);
        self.heads()
            .update_one(doc! {"_id": epoch.to_hex()}, doc! {"$set": set})
            .upsert(true)
            .session(&mut *s)
            .await?;
        Ok(())
    }

    /// Without transactions: write the new history and head under a fresh epoch (invisible),
    /// then switch the session to it with one single-document update (atomic on every
    /// server), then delete the old epoch's messages. A crash in between leaves only invisible
    /// garbage. An append racing with it may land in the old epoch and be dropped: without
    /// transactions a whole-session replace cannot also keep racing appends.
    pub(crate) async fn save_by_epoch_flip(
        &self, session: &SessionId, fields: &[Document], meta: &Bson, t: i64,
    ) -> Result<()> {
        // An expired session is deleted first: the save starts a new one.
        let current = match self.session_doc(session).await? {
            Some(sd) if sd.is_expired_at(now()) => {
                self.clear_expired(session).await?;
                None
            }
            other => other,
        };
        let (archives, expires) = match current {
            Some(sd) => (self.head(sd.epoch).await?.archives, sd.expires),
            None => (Vec::new(), None),
        };
        let archives = archives.iter().map(ArchiveEntry::to_bson).collect();
        let epoch = self
            .write_epoch(session, fields, (meta.clone(), archives), expires)
            .await?;
        self.ensure_session(session, t).await?;
        let old = self
            .sessions()
            .find_one_and_update(
                doc! {"_id": session.as_str()},
                doc! {
                    "$set": {"epoch": epoch.to_hex(), "next": len_i64(fields.len())?},
                    "$max": {"updated": t},
                },
            )
            .return_document(ReturnDocument::Before)
            .await
            .mapped()?;
        if let Some(old) = old {
            self.drop_epoch(session, session_doc(&old)?.epoch).await?;
        }
        if expires.is_some() {
            self.settle_expiry(session, Some(expires)).await?;
        }
        Ok(())
    }

    /// Writes a fresh epoch, which readers do not see until the session is switched to it:
    /// `fields` (the new messages) from seq 0, and a head with `metadata` and `archives`; both
    /// stamped with the session's expiry `expires`. Returns the epoch.
    pub(crate) async fn write_epoch(
        &self, session: &SessionId, fields: &[Document], (metadata, archives): (Bson, Vec<Bson>),
        expires: Option<DateTime<Utc>>,
    ) -> Result<Epoch> {
        let epoch = new_epoch();
        if !fields.is_empty() {
            self.messages()
                .insert_many(placed(session, epoch, 0, fields, expires))
                .await
                .mapped()?;
        }
        let head = doc! {
            "_id": epoch.to_hex(), "session": session.as_str(), "low": 0i64,
            "metadata": metadata, "archives": archives,
        };
        self.heads()
            .insert_one(stamped(head, expires))
            .await
            .mapped()?;
        Ok(epoch)
    }

    /// Step 1 of a rewrite without transactions: the live session (`NotFound` when there is
    /// none), its head, and its messages (see [`current_docs_waiting`](Self::current_docs_waiting)).
    pub(crate) async fn read_for_rewrite(
        &self, session: &SessionId,
    ) -> Result<(SessionDoc, Head, Vec<Document>)> {
        let sd = self
            .live_session_doc(session)
            .await?
            .ok_or_else(|| not_found(session))?;
        let h = self.head(sd.epoch).await?;
        let current = self
            .current_docs_waiting(session, sd.epoch, sd.next - h.low)
            .await?;
        Ok((sd, h, current))
    }

    /// Makes `switch` in one single-document update of the session document that applies
    /// only if no append reserved a position and no rewrite switched epochs since `switch.from`
    /// was read, then deletes what lost (the old epoch, or the new one when the session
    /// changed meanwhile) and, when switched, settles the expiry. Whether it switched.
    pub(crate) async fn switch_epoch(
        &self, session: &SessionId, switch: Switch<'_>,
    ) -> Result<bool> {
        let Switch {
            from,
            to,
            next,
            touched,
            archived,
        } = switch;
        let mut update = doc! {"$set": {"epoch": to.to_hex(), "next": len_i64(next)?}};
        if let Some(t) = touched {
            update.insert("$max", doc! {"updated": t});
        }
        let switched = self
            .sessions()
            .update_one(
                doc! {"_id": session.as_str(), "epoch": from.epoch.to_hex(), "next": from.next},
                update,
            )
            .await
            .mapped()?
            .matched_count
            == 1;
        let (lost, archived) = if switched {
            (from.epoch, archived.if_switched)
        } else {
            (to, archived.if_not)
        };
        self.drop_epoch(session, lost).await?;
        if let Some(filter) = archived {
            self.archived().delete_many(filter).await.mapped()?;
        }
        if switched && from.expires.is_some() {
            self.settle_expiry(session, Some(from.expires)).await?;
        }
        Ok(switched)
    }

    /// Deletes the messages and head of an epoch no longer current.
    pub(crate) async fn drop_epoch(&self, session: &SessionId, epoch: Epoch) -> Result<()> {
        self.messages()
            .delete_many(doc! {"session": session.as_str(), "epoch": epoch.to_hex()})
            .await
            .mapped()?;
        self.heads()
            .delete_one(doc! {"_id": epoch.to_hex()})
            .await
            .mapped()?;
        Ok(())
    }

    /// The transaction reads the session and its messages from one snapshot, archives exactly
    /// those, deletes exactly those, puts the replacement below `low`, and records the archive
    /// in the head. It writes nothing appends write (only new keys and the head), so appends
    /// never wait for it; an append whose message lands after the snapshot stays, after the
    /// replacement. Two compactions of one session conflict on the head and one retries.
    pub(crate) async fn compact_in_transaction(
        &self, s: &mut ClientSession, session: &SessionId, fields: &[Document],
    ) -> std::result::Result<(ArchiveInfo, Option<DateTime<Utc>>), TxError> {
        let t = now();
        let sd = self.live_session_in(s, session, t).await?;
        let (epoch, expires) = (sd.epoch, sd.expires);
        let h = self.head_in(s, epoch).await?;
        let current = self.current_docs_in(s, session, epoch).await?;
        let id = new_archive_id(t, &h.archives)?;
        let docs = archive_docs(session, (epoch, expires), &id, &current)?;
        if !docs.is_empty() {
            self.archived().insert_many(docs).session(&mut *s).await?;
        }
        let seqs: Vec<Bson> = current
            .iter()
            .map(|d| int_field(d, "seq").map(Bson::Int64))
            .collect::<Result<_>>()?;
        self.messages()
            .delete_many(
                doc! {"session": session.as_str(), "epoch": epoch.to_hex(), "seq": {"$in": seqs}},
            )
            .session(&mut *s)
            .await?;
        let low = self
            .place_below(s, session, (epoch, expires), h.low, fields)
            .await?;
        let entry = ArchiveEntry {
            id: id.to_string(),
            epoch,
            created: t,
            count: len_i64(current.len())?,
        };
        self.heads()
            .update_one(
                doc! {"_id": epoch.to_hex()},
                // The whole list rather than `$push`, which some compatible servers store
                // wrongly; the transaction read it, so nothing is lost.
                doc! {"$set": stamped(doc! {
                    "session": session.as_str(),
                    "low": low,
                    "archives": h.archives.iter().chain(std::iter::once(&entry)).map(ArchiveEntry::to_bson).collect::<Vec<_>>(),
                }, expires)},
            )
            .upsert(true)
            .session(&mut *s)
            .await?;
        Ok((archive_info(session, &entry)?, expires))
    }

    /// Compaction without transactions, as a two-phase epoch switch:
    /// 1. read the session (epoch E, next), E's head (`low`, archives) and E's messages,
    ///    waiting briefly for appends that reserved positions but have not written yet;
    /// 2. copy the messages into the archive, and write the replacement and a new head (with
    ///    the archive listed) under a new epoch E′: all invisible to readers, who follow the
    ///    session document;
    /// 3. switch the session to E′ in one single-document update that applies only if no
    ///    append reserved a position since step 1 (else undo and retry);
    /// 4. delete E's messages and head.
    ///
    /// Readers see the old state until step 3 and the new one after, never a mix; a crash
    /// leaves garbage no reader sees. An append that reserved before step 1 but never wrote
    /// (it failed) is waited for at most [`IN_FLIGHT_WAIT`].
    pub(crate) async fn compact_by_epoch_flip(
        &self, session: &SessionId, fields: &[Document],
    ) -> Result<ArchiveInfo> {
        retry(|_| async move {
            let (sd, h, current) = self.read_for_rewrite(session).await?;
            let t = now();
            let id = new_archive_id(t, &h.archives)?;
            // Leftovers of an earlier attempt that crashed are garbage.
            let garbage = doc! {"session": session.as_str(), "epoch": sd.epoch.to_hex(), "archive": id.as_str()};
            self.archived()
                .delete_many(garbage.clone())
                .await
                .mapped()?;
            let docs = archive_docs(session, (sd.epoch, sd.expires), &id, &current)?;
            if !docs.is_empty() {
                self.archived().insert_many(docs).await.mapped()?;
            }
            let entry = ArchiveEntry {
                id: id.to_string(),
                epoch: sd.epoch,
                created: t,
                count: len_i64(current.len())?,
            };
            let mut archives: Vec<Bson> = h.archives.iter().map(ArchiveEntry::to_bson).collect();
            archives.push(entry.to_bson());
            let head = (metadata_to_bson(&h.metadata)?, archives);
            let epoch = self.write_epoch(session, fields, head, sd.expires).await?;
            let switch = Switch {
                from: &sd,
                to: epoch,
                next: fields.len(),
                touched: Some(micros(t)),
                archived: Archived::undo(garbage),
            };
            if self.switch_epoch(session, switch).await? {
                return Ok(Step::Done(archive_info(session, &entry)?));
            }
            // An append (or another compaction) got in between: start over.
            Ok(changed_during(session, "during compaction"))
        })
        .await
    }

    /// `replace_archive` in one transaction: reads the session and its head, writes the new
    /// messages of the archive under a fresh tag (an epoch no other document uses), deletes
    /// the old ones and points the head's entry at the new tag with the new count. Its id,
    /// place and creation time stay. Appends write nothing it writes, so they never wait for
    /// it; a compaction conflicts with it on the head and one retries.
    pub(crate) async fn replace_archive_in_transaction(
        &self, s: &mut ClientSession, session: &SessionId, archive: &ArchiveId, fields: &[Document],
    ) -> std::result::Result<(ArchiveInfo, Option<DateTime<Utc>>), TxError> {
        let sd = self.live_session_in(s, session, now()).await?;
        let h = self.head_in(s, sd.epoch).await?;
        let (archives, entry, old) = replaced_entries(session, archive, &h.archives, fields)?;
        let docs = archive_docs(session, (entry.epoch, sd.expires), archive, fields)?;
        if !docs.is_empty() {
            self.archived().insert_many(docs).session(&mut *s).await?;
        }
        self.archived()
            .delete_many(
                doc! {"session": session.as_str(), "epoch": old.to_hex(), "archive": archive.as_str()},
            )
            .session(&mut *s)
            .await?;
        self.heads()
            .update_one(
                doc! {"_id": sd.epoch.to_hex()},
                // The whole list, as compaction writes it (see there).
                doc! {"$set": stamped(doc! {"session": session.as_str(), "archives": archives}, sd.expires)},
            )
            .session(&mut *s)
            .await?;
        Ok((archive_info(session, &entry)?, sd.expires))
    }

    /// `replace_archive` without transactions, as compaction's two-phase epoch switch:
    /// 1. read the session (epoch E, next), E's head and E's messages (waiting for appends in
    ///    flight, as compaction does);
    /// 2. write the archive's new messages under a fresh tag, and a copy of the current
    ///    messages and a new head (whose entry for the archive names the new tag and count)
    ///    under a new epoch E′: all invisible to readers, who follow the session document;
    /// 3. switch the session to E′ in one single-document update that applies only if nothing
    ///    reserved a position or switched epochs since step 1 (else undo and retry);
    /// 4. delete E's messages and head and the archive's old messages.
    ///
    /// Readers see the old archive until step 3 and the new one after (`load_archive` re-reads
    /// when its entry changed under it); a crash leaves garbage no reader sees. Switching the
    /// whole session, rather than only its head, is what makes a compaction, rewind or save
    /// racing with it (which copy the head's archive list into a new epoch) retry instead of
    /// bringing back the old entry. The price is a copy of the current messages.
    pub(crate) async fn replace_archive_by_epoch_flip(
        &self, session: &SessionId, archive: &ArchiveId, fields: &[Document],
    ) -> Result<ArchiveInfo> {
        retry(|_| async move {
            let (sd, h, current) = self.read_for_rewrite(session).await?;
            let (archives, entry, old) = replaced_entries(session, archive, &h.archives, fields)?;
            let kept = current
                .iter()
                .map(|d| message_from(d).and_then(|m| message_fields(&m)))
                .collect::<Result<Vec<_>>>()?;
            let tag = doc! {"session": session.as_str(), "epoch": entry.epoch.to_hex(), "archive": archive.as_str()};
            let docs = archive_docs(session, (entry.epoch, sd.expires), archive, fields)?;
            if !docs.is_empty() {
                self.archived().insert_many(docs).await.mapped()?;
            }
            let head = (metadata_to_bson(&h.metadata)?, archives);
            let epoch = self.write_epoch(session, &kept, head, sd.expires).await?;
            let switch = Switch {
                from: &sd,
                to: epoch,
                next: kept.len(),
                touched: None,
                archived: Archived {
                    if_switched: Some(
                        doc! {"session": session.as_str(), "epoch": old.to_hex(), "archive": archive.as_str()},
                    ),
                    if_not: Some(tag),
                },
            };
            if self.switch_epoch(session, switch).await? {
                return Ok(Step::Done(archive_info(session, &entry)?));
            }
            // An append (or another rewrite) got in between: start over.
            Ok(changed_during(
                session,
                &format!("while archive `{archive}` was replaced"),
            ))
        })
        .await
    }

    /// The message documents of `epoch`, in seq order, once `expected` of them are there (the
    /// positions reserved, `next - low`), or after [`IN_FLIGHT_WAIT`]: appends that reserved
    /// positions but have not written yet are waited for, so that a rewrite of the session
    /// without transactions does not drop them.
    pub(crate) async fn current_docs_waiting(
        &self, session: &SessionId, epoch: Epoch, expected: i64,
    ) -> Result<Vec<Document>> {
        let started = tokio::time::Instant::now();
        loop {
            let docs = all_docs(
                self.messages()
                    .find(doc! {"session": session.as_str(), "epoch": epoch.to_hex()})
                    .projection(without_terms())
                    .sort(doc! {"seq": 1}),
            )
            .await?;
            if docs.len() as i64 >= expected || started.elapsed() >= IN_FLIGHT_WAIT {
                return Ok(docs);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The session's head, when it exists (and has not expired).
    pub(crate) async fn current_head(&self, session: &SessionId) -> Result<Option<Head>> {
        match self.live_session_doc(session).await? {
            Some(sd) => Ok(Some(self.head(sd.epoch).await?)),
            None => Ok(None),
        }
    }
}
