//! Reading one whole session (with its archives) from a store, and bringing a store's copy of a
//! session up to date with another copy: the one write path of import and migration.

use agentmem_core::{AgentMemory, Error, Message, Result, SessionId, SessionLabels, SessionPatch};
use agentmem_formats::{canonical_session, ArchiveExport, SessionExport};

/// Reads a whole session: metadata, current messages and every archive; `None` when missing.
/// Metadata keys come back sorted ([`canonical_session`]).
pub async fn read_session(
    store: &dyn AgentMemory, id: &SessionId,
) -> Result<Option<SessionExport>> {
    let Some(session) = store.load(id, None).await? else {
        return Ok(None);
    };
    let mut export = SessionExport::new(id.clone());
    export.metadata = session.metadata;
    export.messages = session.messages;
    export.labels = session.labels;
    export.expires_at = session.expires_at;
    export.created_at = Some(session.created_at);
    export.updated_at = Some(session.updated_at);
    for info in store.list_archives(id).await? {
        let archive = store.load_archive(id, &info.id).await?;
        export.archives.push(ArchiveExport {
            messages: archive.messages,
            info: Some(archive.info),
        });
    }
    canonical_session(&mut export);
    Ok(Some(export))
}

/// How to write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SyncOptions {
    /// At most this many messages per write (`None`: each step in one write).
    pub batch: Option<usize>,
    /// Plan only: report what would be written, write nothing.
    pub dry_run: bool,
}

/// What a sync wrote (or, in a dry run, would write).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SyncReport {
    /// The session did not exist at the destination.
    pub created: bool,
    /// Messages written (archived ones included).
    pub messages_written: u64,
    /// Compactions replayed (archives created).
    pub archives_written: u64,
    /// The session's metadata was (re)written.
    pub metadata_written: bool,
    /// The session's labels or expiry were (re)written.
    pub labels_written: bool,
}

impl SyncReport {
    /// Whether nothing needed writing.
    pub fn is_noop(&self) -> bool {
        !self.created
            && self.messages_written == 0
            && self.archives_written == 0
            && !self.metadata_written
            && !self.labels_written
    }
}

fn ids(messages: &[Message]) -> impl Iterator<Item = &str> {
    messages.iter().map(|m| m.id.as_str())
}

fn conflict(id: &SessionId, why: impl std::fmt::Display) -> Error {
    Error::conflict(format!(
        "session {:?} already exists at the destination and differs: {why}; delete it there first to replace it",
        id.as_str()
    ))
}

/// Makes `dest`'s copy of `source.id` hold what `source` holds.
///
/// When the session did not exist and a write fails midway, the partial session is deleted
/// (best effort) before the error is returned, so a failed import leaves nothing behind.
///
/// # Recreating archives
///
/// The [`AgentMemory`] trait has no call that writes an archive directly: archives only come
/// from [`SessionStore::compact`](agentmem_core::SessionStore::compact), which moves the
/// session's current messages into a new archive and replaces them. So a session with archives A₁…Aₙ and current messages C is
/// rebuilt by replaying its compactions:
///
/// ```text
/// save_session(A₁, metadata)        session = A₁
/// compact(A₂)                       archive 1 = A₁, session = A₂
/// …
/// compact(C)                        archive n = Aₙ, session = C
/// ```
///
/// The archives' messages, order and ids are exact; their ids and times are the destination's
/// (every backend names archives itself). With a batch size, each step writes its first
/// batch and appends the rest, so no single write is larger than the batch.
///
/// # Idempotence
///
/// A destination that already holds the session is compared by message ids: its archives must
/// match the source's first archives, and its current messages must be a prefix of the next
/// transcript (the source's next archive, or its current messages). Only what is missing is
/// appended and the remaining compactions replayed, so re-running an import or a migration, even
/// one interrupted midway, adds no duplicates. A destination that diverges is a
/// [`Conflict`](agentmem_core::ErrorKind::Conflict), and nothing is written.
pub async fn sync_session(
    dest: &dyn AgentMemory, source: &SessionExport, options: SyncOptions,
) -> Result<SyncReport> {
    let id = &source.id;
    let existing = read_session(dest, id).await?;
    let mut report = SyncReport::default();
    let resume = match &existing {
        None => {
            report.created = true;
            None
        }
        Some(have) => {
            let (m, n) = (have.archives.len(), source.archives.len());
            if m > n {
                return Err(conflict(id, format!("it has {m} archives, the source {n}")));
            }
            for (i, (a, b)) in have.archives.iter().zip(&source.archives).enumerate() {
                if !ids(&a.messages).eq(ids(&b.messages)) {
                    return Err(conflict(
                        id,
                        format!("archive {} holds other messages", i + 1),
                    ));
                }
            }
            let target = if m == n {
                &source.messages
            } else {
                &source.archives[m].messages
            };
            let done = have.messages.len();
            if done > target.len() || !ids(&have.messages).eq(ids(&target[..done])) {
                return Err(conflict(
                    id,
                    "its messages are not a prefix of the source's (matched by id)",
                ));
            }
            Some(Resume {
                transcript: m,
                done,
            })
        }
    };

    let mut wrote = false;
    let result = apply(dest, source, resume, options, &mut report, &mut wrote).await;
    if let Err(e) = result {
        if report.created && wrote {
            // Roll back a session this call created, so a failed import writes nothing.
            let _ = dest.delete_session(id).await;
        }
        return Err(e);
    }

    // Metadata: set by the first save of a new session; compared (cheaply) otherwise.
    let have_metadata = match (&existing, options.dry_run) {
        (Some(have), _) => Some(have.metadata.clone()),
        (None, true) => None,
        (None, false) => dest.load(id, Some(0)).await?.map(|s| s.metadata),
    };
    if let Some(have) = have_metadata {
        if have != source.metadata {
            report.metadata_written = true;
            if !options.dry_run {
                dest.save_session(id, &source.messages, &source.metadata)
                    .await?;
            }
        }
    }

    // Labels and expiry: one update when they differ from the destination's.
    let (have_labels, have_expiry) = match &existing {
        Some(have) => (have.labels.clone(), have.expires_at),
        None => (SessionLabels::default(), None),
    };
    if have_labels != source.labels || have_expiry != source.expires_at {
        report.labels_written = true;
        if !options.dry_run {
            let patch = SessionPatch {
                expires_at: Some(source.expires_at),
                ..SessionPatch::between(&have_labels, &source.labels)
            };
            dest.update_session(id, &patch).await?;
        }
    }
    Ok(report)
}

/// Where an existing copy stands: it holds the first `transcript` archives and the first
/// `done` messages of transcript number `transcript` (archive `transcript + 1`, or the current
/// messages when every archive is there).
#[derive(Debug, Clone, Copy)]
struct Resume {
    transcript: usize,
    done: usize,
}

async fn apply(
    dest: &dyn AgentMemory, source: &SessionExport, resume: Option<Resume>, options: SyncOptions,
    report: &mut SyncReport, wrote: &mut bool,
) -> Result<()> {
    let id = &source.id;
    let n = source.archives.len();
    let batch = options.batch.unwrap_or(usize::MAX).max(1);
    // The transcripts in order: archives, then the current messages.
    let transcript = |k: usize| -> &[Message] {
        if k < n {
            &source.archives[k].messages
        } else {
            &source.messages
        }
    };

    let (start, done) = match resume {
        None => {
            // A new session: the first transcript starts it, with the metadata.
            let first = transcript(0);
            let head = &first[..first.len().min(batch)];
            if !options.dry_run {
                dest.save_session(id, head, &source.metadata).await?;
                *wrote = true;
            }
            report.messages_written += head.len() as u64;
            (0, head.len())
        }
        Some(r) => (r.transcript, r.done),
    };
    append_rest(
        dest,
        id,
        &transcript(start)[done..],
        batch,
        options,
        report,
        wrote,
    )
    .await?;

    for k in start + 1..=n {
        let next = transcript(k);
        let head = &next[..next.len().min(batch)];
        if !options.dry_run {
            dest.compact(id, head).await?;
            *wrote = true;
        }
        report.archives_written += 1;
        report.messages_written += head.len() as u64;
        append_rest(dest, id, &next[head.len()..], batch, options, report, wrote).await?;
    }
    Ok(())
}

async fn append_rest(
    dest: &dyn AgentMemory, id: &SessionId, rest: &[Message], batch: usize, options: SyncOptions,
    report: &mut SyncReport, wrote: &mut bool,
) -> Result<()> {
    for chunk in rest.chunks(batch) {
        if !options.dry_run {
            dest.append(id, chunk).await?;
            *wrote = true;
        }
        report.messages_written += chunk.len() as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentmem_core::{
        AgentMemoryExt, ErrorKind, InMemoryStore, Layered, MessageId, SessionStore,
    };

    fn session(n_archives: usize, per: usize) -> SessionExport {
        let mut s = SessionExport::new("s".parse().unwrap());
        s.metadata.insert("k".into(), "v".into());
        let mut counter = 0;
        let mut next = |n: usize| -> Vec<Message> {
            (0..n)
                .map(|_| {
                    counter += 1;
                    Message::user(format!("m{counter}"))
                        .with_id(MessageId::new(format!("id{counter}")).expect("valid message id"))
                })
                .collect()
        };
        s.archives = (0..n_archives)
            .map(|_| ArchiveExport::new(next(per)))
            .collect();
        s.messages = next(per);
        s
    }

    /// An empty store, and a session with `n_archives` archives of `per` messages and `per`
    /// current messages to copy into it.
    fn store_and_session(n_archives: usize, per: usize) -> (Layered<InMemoryStore>, SessionExport) {
        (InMemoryStore::new(), session(n_archives, per))
    }

    /// [`sync_session`] with the default options.
    async fn sync_default(store: &dyn AgentMemory, s: &SessionExport) -> Result<SyncReport> {
        sync_session(store, s, SyncOptions::default()).await
    }

    async fn same(store: &dyn AgentMemory, s: &SessionExport) {
        let back = read_session(store, &s.id).await.unwrap().unwrap();
        assert_eq!(back.messages, s.messages);
        assert_eq!(back.metadata, s.metadata);
        let a: Vec<_> = back.archives.iter().map(|a| &a.messages).collect();
        let b: Vec<_> = s.archives.iter().map(|a| &a.messages).collect();
        assert_eq!(a, b);
    }

    #[tokio::test]
    async fn rebuilds_archives_in_batches_and_reruns_add_nothing() {
        let (store, s) = store_and_session(3, 5);
        let opts = SyncOptions {
            batch: Some(2),
            dry_run: false,
        };
        let r = sync_session(&store, &s, opts).await.unwrap();
        assert!(r.created);
        assert_eq!(r.messages_written, 20);
        assert_eq!(r.archives_written, 3);
        same(&store, &s).await;
        let again = sync_session(&store, &s, opts).await.unwrap();
        assert!(again.is_noop(), "{again:?}");
        same(&store, &s).await;
    }

    #[tokio::test]
    async fn resumes_an_interrupted_copy() {
        let (store, s) = store_and_session(2, 4);
        // As if interrupted after the first archive and two messages of the second.
        store
            .save_session(&s.id, &s.archives[0].messages, &s.metadata)
            .await
            .unwrap();
        store
            .compact(&s.id, &s.archives[1].messages[..2])
            .await
            .unwrap();
        let r = sync_default(&store, &s).await.unwrap();
        assert!(!r.created);
        assert_eq!(r.messages_written, 2 + 4);
        assert_eq!(r.archives_written, 1);
        same(&store, &s).await;
    }

    #[tokio::test]
    async fn diverging_destination_is_a_conflict_and_untouched() {
        let (store, s) = store_and_session(0, 3);
        store
            .append_one(
                &s.id,
                Message::user("other").with_id(MessageId::new("x").expect("valid message id")),
            )
            .await
            .unwrap();
        let err = sync_default(&store, &s).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Conflict);
        assert_eq!(store.messages(&s.id).await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn dry_run_writes_nothing() {
        let (store, s) = store_and_session(1, 3);
        let r = sync_session(
            &store,
            &s,
            SyncOptions {
                batch: None,
                dry_run: true,
            },
        )
        .await
        .unwrap();
        assert_eq!((r.messages_written, r.archives_written), (6, 1));
        assert!(store.load(&s.id, None).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn metadata_changes_are_written() {
        let (store, mut s) = store_and_session(0, 2);
        sync_default(&store, &s).await.unwrap();
        s.metadata.insert("k".into(), "w".into());
        let r = sync_default(&store, &s).await.unwrap();
        assert!(r.metadata_written && r.messages_written == 0);
        same(&store, &s).await;
    }
}
