//! Whole-session rewrites: `save_session` and compaction, each with a transaction where the
//! server has them and as a two-phase epoch switch where it does not (see the crate docs),
//! and reading archives back.

use std::collections::HashSet;
use std::time::Duration;

use agentmem_core::{
    now, Archive, ArchiveId, ArchiveInfo, Error, Message, Metadata, Result, SessionId,
};
use chrono::{DateTime, Utc};
use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};
use mongodb::options::ReturnDocument;
use mongodb::ClientSession;

use crate::codec::{check_size, int_field, message_fields, message_from, metadata_to_bson, micros};
use crate::error::ResultExt;
use crate::sessions::{
    encode_all, len_i64, new_epoch, not_found, placed, session_doc, ArchiveEntry, Epoch, Head,
};
use crate::store::{backoff, in_transaction, MongoMemory, TxError, MAX_RETRIES};

/// How long a non-transactional compaction waits for appends that reserved positions but
/// have not written their messages yet, before treating those positions as failed appends.
const IN_FLIGHT_WAIT: Duration = Duration::from_secs(2);

fn archive_info(session: &SessionId, entry: &ArchiveEntry) -> Result<ArchiveInfo> {
    Ok(ArchiveInfo {
        id: ArchiveId::new(entry.id.clone())
            .map_err(|e| Error::corrupt(format!("stored archive id: {}", e.message())))?,
        session: session.clone(),
        created_at: entry.created,
        message_count: u64::try_from(entry.count).unwrap_or(0),
    })
}

/// `history_%Y-%m-%d_%H-%M-%S` as the file backend names archives, with `_2`, `_3`, … when
/// one of that second exists already.
fn new_archive_id(at: DateTime<Utc>, existing: &[ArchiveEntry]) -> Result<ArchiveId> {
    let base = format!("history_{}", at.format("%Y-%m-%d_%H-%M-%S"));
    let taken: HashSet<&str> = existing.iter().map(|a| a.id.as_str()).collect();
    let mut candidate = base.clone();
    let mut n = 2;
    while taken.contains(candidate.as_str()) {
        candidate = format!("{base}_{n}");
        n += 1;
    }
    ArchiveId::new(candidate)
}

/// The documents of archive `id` (of `epoch`) for `current`, message documents of `messages`.
fn archive_docs(
    session: &SessionId,
    epoch: Epoch,
    id: &ArchiveId,
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
            a.extend(message_fields(&m)?);
            Ok(a)
        })
        .collect()
}

impl MongoMemory {
    pub(crate) async fn save_session_impl(
        &self,
        session: &SessionId,
        history: &[Message],
        metadata: &Metadata,
    ) -> Result<()> {
        let fields = encode_all(history)?;
        let meta = metadata_to_bson(metadata)?;
        // The metadata lives in the head document: refuse it before anything is written.
        check_size("the session metadata", &doc! {"metadata": &meta})?;
        let t = micros(now());
        if self.features().transactions {
            // The session document exists (with its epoch) before the transaction, which then
            // writes only the head and the messages.
            let (_, epoch) = self.reserve(session, 0).await?;
            in_transaction!(self, |s| {
                self.save_in_transaction(s, session, epoch, &fields, &meta)
                    .await
            })?;
            self.touch(session, t).await
        } else {
            self.save_by_epoch_flip(session, &fields, &meta, t).await
        }
    }

    async fn save_in_transaction(
        &self,
        s: &mut ClientSession,
        session: &SessionId,
        epoch: Epoch,
        fields: &[Document],
        meta: &Bson,
    ) -> std::result::Result<(), TxError> {
        let k = len_i64(fields.len())?;
        let h = self.head_in(s, epoch).await?;
        self.messages()
            .delete_many(doc! {"session": session.as_str(), "epoch": epoch.to_hex()})
            .session(&mut *s)
            .await?;
        // Taking seqs below `low` (rather than restarting at 0) keeps them below any append
        // racing with this save, whose message then lands after the new history.
        if k > 0 {
            self.messages()
                .insert_many(placed(session, epoch, h.low - k, fields))
                .session(&mut *s)
                .await?;
        }
        self.heads()
            .update_one(
                doc! {"_id": epoch.to_hex()},
                doc! {"$set": {"session": session.as_str(), "low": h.low - k, "metadata": meta.clone()}},
            )
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
    async fn save_by_epoch_flip(
        &self,
        session: &SessionId,
        fields: &[Document],
        meta: &Bson,
        t: i64,
    ) -> Result<()> {
        let archives = match self.session_doc(session).await? {
            Some(sd) => self.head(sd.epoch).await?.archives,
            None => Vec::new(),
        };
        let epoch = new_epoch();
        if !fields.is_empty() {
            self.messages()
                .insert_many(placed(session, epoch, 0, fields))
                .await
                .mapped()?;
        }
        self.heads()
            .insert_one(doc! {
                "_id": epoch.to_hex(), "session": session.as_str(), "low": 0i64, "metadata": meta.clone(),
                "archives": archives.iter().map(ArchiveEntry::to_bson).collect::<Vec<_>>(),
            })
            .await
            .mapped()?;
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
        Ok(())
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

    pub(crate) async fn compact_impl(
        &self,
        session: &SessionId,
        replacement: &[Message],
    ) -> Result<ArchiveInfo> {
        let fields = encode_all(replacement)?;
        if self.features().transactions {
            let info = in_transaction!(self, |s| {
                self.compact_in_transaction(s, session, &fields).await
            })?;
            self.touch(session, micros(info.created_at)).await?;
            Ok(info)
        } else {
            self.compact_by_epoch_flip(session, &fields).await
        }
    }

    /// The transaction reads the session and its messages from one snapshot, archives exactly
    /// those, deletes exactly those, puts the replacement below `low`, and records the archive
    /// in the head. It writes nothing appends write (only new keys and the head), so appends
    /// never wait for it; an append whose message lands after the snapshot stays, after the
    /// replacement. Two compactions of one session conflict on the head and one retries.
    async fn compact_in_transaction(
        &self,
        s: &mut ClientSession,
        session: &SessionId,
        fields: &[Document],
    ) -> std::result::Result<ArchiveInfo, TxError> {
        let k = len_i64(fields.len())?;
        let t = now();
        let sd = self
            .sessions()
            .find_one(doc! {"_id": session.as_str()})
            .session(&mut *s)
            .await?
            .ok_or_else(|| not_found(session))?;
        let epoch = session_doc(&sd)?.epoch;
        let h = self.head_in(s, epoch).await?;
        let mut cursor = self
            .messages()
            .find(doc! {"session": session.as_str(), "epoch": epoch.to_hex()})
            .sort(doc! {"seq": 1})
            .session(&mut *s)
            .await?;
        let current: Vec<Document> = cursor.stream(&mut *s).try_collect().await?;
        let id = new_archive_id(t, &h.archives)?;
        let docs = archive_docs(session, epoch, &id, &current)?;
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
        if k > 0 {
            self.messages()
                .insert_many(placed(session, epoch, h.low - k, fields))
                .session(&mut *s)
                .await?;
        }
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
                doc! {"$set": {
                    "session": session.as_str(),
                    "low": h.low - k,
                    "archives": h.archives.iter().chain(std::iter::once(&entry)).map(ArchiveEntry::to_bson).collect::<Vec<_>>(),
                }},
            )
            .upsert(true)
            .session(&mut *s)
            .await?;
        Ok(archive_info(session, &entry)?)
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
    async fn compact_by_epoch_flip(
        &self,
        session: &SessionId,
        fields: &[Document],
    ) -> Result<ArchiveInfo> {
        let mut attempt = 0;
        loop {
            let sd = self
                .session_doc(session)
                .await?
                .ok_or_else(|| not_found(session))?;
            let h = self.head(sd.epoch).await?;
            let expected = sd.next - h.low;
            let started = tokio::time::Instant::now();
            let current: Vec<Document> = loop {
                let docs: Vec<Document> = self
                    .messages()
                    .find(doc! {"session": session.as_str(), "epoch": sd.epoch.to_hex()})
                    .sort(doc! {"seq": 1})
                    .await
                    .mapped()?
                    .try_collect()
                    .await
                    .mapped()?;
                if docs.len() as i64 >= expected || started.elapsed() >= IN_FLIGHT_WAIT {
                    break docs;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            };
            let t = now();
            let id = new_archive_id(t, &h.archives)?;
            // Leftovers of an earlier attempt that crashed are garbage.
            let garbage = doc! {"session": session.as_str(), "epoch": sd.epoch.to_hex(), "archive": id.as_str()};
            self.archived()
                .delete_many(garbage.clone())
                .await
                .mapped()?;
            let docs = archive_docs(session, sd.epoch, &id, &current)?;
            if !docs.is_empty() {
                self.archived().insert_many(docs).await.mapped()?;
            }
            let entry = ArchiveEntry {
                id: id.to_string(),
                epoch: sd.epoch,
                created: t,
                count: len_i64(current.len())?,
            };
            let epoch = new_epoch();
            if !fields.is_empty() {
                self.messages()
                    .insert_many(placed(session, epoch, 0, fields))
                    .await
                    .mapped()?;
            }
            let mut archives: Vec<Bson> = h.archives.iter().map(ArchiveEntry::to_bson).collect();
            archives.push(entry.to_bson());
            self.heads()
                .insert_one(doc! {
                    "_id": epoch.to_hex(), "session": session.as_str(), "low": 0i64,
                    "metadata": metadata_to_bson(&h.metadata)?, "archives": archives,
                })
                .await
                .mapped()?;
            let switched = self
                .sessions()
                .update_one(
                    doc! {"_id": session.as_str(), "epoch": sd.epoch.to_hex(), "next": sd.next},
                    doc! {
                        "$set": {"epoch": epoch.to_hex(), "next": len_i64(fields.len())?},
                        "$max": {"updated": micros(t)},
                    },
                )
                .await
                .mapped()?;
            if switched.matched_count == 1 {
                self.drop_epoch(session, sd.epoch).await?;
                return archive_info(session, &entry);
            }
            // An append (or another compaction) got in between: undo and start over.
            self.drop_epoch(session, epoch).await?;
            self.archived().delete_many(garbage).await.mapped()?;
            if attempt >= MAX_RETRIES {
                return Err(Error::conflict(format!(
                    "session `{session}` kept changing during compaction; try again"
                )));
            }
            backoff(attempt).await;
            attempt += 1;
        }
    }

    /// The session's epoch and head, when it exists.
    async fn current_head(&self, session: &SessionId) -> Result<Option<Head>> {
        match self.session_doc(session).await? {
            Some(sd) => Ok(Some(self.head(sd.epoch).await?)),
            None => Ok(None),
        }
    }

    pub(crate) async fn list_archives_impl(&self, session: &SessionId) -> Result<Vec<ArchiveInfo>> {
        let Some(h) = self.current_head(session).await? else {
            return Ok(Vec::new());
        };
        h.archives
            .iter()
            .map(|a| archive_info(session, a))
            .collect()
    }

    pub(crate) async fn load_archive_impl(
        &self,
        session: &SessionId,
        archive: &ArchiveId,
    ) -> Result<Archive> {
        let missing = || {
            Error::not_found(format!(
                "archive `{archive}` of session `{session}` does not exist"
            ))
        };
        let h = self.current_head(session).await?.ok_or_else(missing)?;
        let entry = h
            .archives
            .iter()
            .find(|a| a.id == archive.as_str())
            .ok_or_else(missing)?;
        let docs: Vec<Document> = self
            .archived()
            .find(doc! {"session": session.as_str(), "epoch": entry.epoch.to_hex(), "archive": archive.as_str()})
            .sort(doc! {"pos": 1})
            .await
            .mapped()?
            .try_collect()
            .await
            .mapped()?;
        let messages: Vec<Message> = docs.iter().map(message_from).collect::<Result<_>>()?;
        if messages.len() as i64 != entry.count {
            return Err(Error::corrupt(format!(
                "archive `{archive}` lists {} messages but {} are stored",
                entry.count,
                messages.len()
            )));
        }
        Ok(Archive {
            info: archive_info(session, entry)?,
            messages,
        })
    }
}
