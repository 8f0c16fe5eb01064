//! The indexer: embeds, in batches, every text of the store that has no vector yet.
//!
//! Its durable state is the store's vectors themselves: a text is done when its key
//! ([`vector_key`]) holds a vector, and each batch is stored as soon as it is embedded. A run
//! cut short (a crash, a dead server) leaves every stored batch in place, and the next run
//! embeds exactly what is still missing: nothing twice, nothing skipped.
//!
//! The background indexer's rounds ([`Recall::index_changes`]) add marks kept in memory
//! ([`IndexMarks`]): how each session stood when last read, and which keys are known to hold
//! a vector. A round then reads only the sessions written since (only the appended tail when
//! a session just grew) and asks the store only about keys not known, so its cost follows the
//! writes, not the size of the store.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use agentmem_core::vector::{encode_vector, MAX_VECTOR_BATCH, MODEL_PROPERTY};
use agentmem_core::{
    MemoryFilter, Message, MessageId, ModelIdentity, PropertyChange, Result, Session, SessionId,
    SessionInfo, StoredVector, VectorKey,
};
use chrono::{DateTime, Utc};
use serde::Serialize;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::cache::{unit, UnitVector};
use crate::recall::Recall;
use crate::similarity::vector_key;

/// Where an indexing run stands, reported after each stored batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct IndexProgress {
    /// Texts embedded and stored so far by this run.
    pub embedded: u64,
    /// Texts this run set out to embed.
    pub pending: u64,
}

/// What an indexing run did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct IndexReport {
    /// Distinct texts in the store that are embedded (memory items, and messages when asked).
    pub texts: u64,
    /// Of them, embedded by this run.
    pub embedded: u64,
}

/// What [`Recall::update_index`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IndexUpdate {
    /// What was indexed.
    pub report: IndexReport,
    /// Whether every text was embedded anew (asked for, or another model's vectors).
    pub anew: bool,
    /// The model the vectors now come from.
    pub model: ModelIdentity,
    /// The model the store's vectors came from before, when it was another.
    pub previous_model: Option<ModelIdentity>,
}

/// How far the vectors lag behind the store's texts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IndexLag {
    /// Distinct texts that are embedded when indexed.
    pub texts: u64,
    /// Of them, texts with no vector yet.
    pub pending: u64,
    /// The model the store's vectors come from (`None` before the first indexing).
    pub model: Option<ModelIdentity>,
}

/// The least time between the starts of two rounds of the background indexer: writes that
/// come faster are embedded together, so its own store writes (one per round) do not contend
/// with every append.
pub const ROUND_GAP: Duration = Duration::from_millis(100);

/// A round of [`Recall::index_changes`] out of this many reads the whole store again, as
/// [`Recall::index`] does: the marks cannot see vectors another process removed (`reindex`
/// with the same model, `rekey`) or a session rewritten in place to the same length.
pub const WHOLE_ROUND_EVERY: u32 = 64;

/// What the background indexer remembers between rounds (shared by a `Recall`'s clones): a
/// cache of what the store's vectors already say, never the durable state. A new process
/// starts without it; [`Recall::index`] and every [`WHOLE_ROUND_EVERY`]-th round rebuild it.
#[derive(Debug, Default)]
pub(crate) struct IndexMarks {
    /// Keys known to hold a vector: read from the store, or stored by a round.
    embedded: HashSet<VectorKey>,
    /// How each session stood when a round last read it.
    sessions: HashMap<SessionId, SessionMark>,
    /// Rounds of `index_changes` since the last whole one.
    rounds_since_whole: u32,
}

/// How a session stood when a round read it: a listing that shows the same time and count
/// shows the same session (every write moves its time).
#[derive(Debug, Clone, PartialEq)]
struct SessionMark {
    updated_at: DateTime<Utc>,
    count: u64,
    /// Its last message then: a session that only grew still has it at the same position.
    tail: Option<MessageId>,
}

impl SessionMark {
    fn of(session: &Session) -> Self {
        SessionMark {
            updated_at: session.updated_at,
            count: session.total_messages,
            tail: session.messages.last().map(|m| m.id.clone()),
        }
    }

    fn holds(&self, info: &SessionInfo) -> bool {
        self.updated_at == info.updated_at && self.count == info.message_count
    }
}

/// Distinct texts to embed, in the order first seen, with their keys.
#[derive(Default)]
struct Texts {
    seen: HashSet<VectorKey>,
    list: Vec<(VectorKey, String)>,
}

impl Texts {
    fn add(&mut self, text: String) {
        if !text.trim().is_empty() {
            let key = vector_key(&text);
            if self.seen.insert(key) {
                self.list.push((key, text));
            }
        }
    }
}

impl Recall {
    /// The distinct texts the indexer embeds (memory items oldest first, then, when messages
    /// are embedded, those of the sessions that changed since `marks`: every session when it
    /// is empty), and the sessions' new marks.
    async fn gather(
        &self, marks: &HashMap<SessionId, SessionMark>,
    ) -> Result<(Texts, HashMap<SessionId, SessionMark>)> {
        let mut texts = Texts::default();
        for item in self.store.list_memories(&MemoryFilter::default()).await? {
            texts.add(item.text);
        }
        let sessions = if self.options.embed_messages {
            self.add_changed_sessions(marks, &mut texts).await?
        } else {
            HashMap::new()
        };
        Ok((texts, sessions))
    }

    /// Adds the messages of every session that changed since `marks` to `texts`, and returns
    /// the sessions' new marks: an unchanged session is not read, one that only grew is read
    /// from its old last message on, any other is read whole.
    async fn add_changed_sessions(
        &self, marks: &HashMap<SessionId, SessionMark>, texts: &mut Texts,
    ) -> Result<HashMap<SessionId, SessionMark>> {
        let mut next = HashMap::new();
        for info in self.store.list_sessions().await? {
            let old = marks.get(&info.id);
            if let Some(mark) = old.filter(|mark| mark.holds(&info)) {
                next.insert(info.id, mark.clone());
                continue;
            }
            let grown = match old {
                Some(mark) if info.message_count > mark.count => {
                    self.appended_since(&info, mark).await?
                }
                _ => None,
            };
            let (mark, messages) = match grown {
                Some(grown) => grown,
                None => match self.store.load(&info.id, None).await? {
                    Some(session) => (SessionMark::of(&session), session.messages),
                    None => continue, // deleted since it was listed
                },
            };
            for message in messages {
                texts.add(message.content);
            }
            next.insert(info.id, mark);
        }
        Ok(next)
    }

    /// The messages appended to a session since `mark`, and its new mark, when it only grew:
    /// the message at the old last position is still the old last message, and the session
    /// holds exactly those plus the appended ones. `None` when that is not so (compacted,
    /// rewound, replaced, or written again meanwhile): the caller reads it whole.
    async fn appended_since(
        &self, info: &SessionInfo, mark: &SessionMark,
    ) -> Result<Option<(SessionMark, Vec<Message>)>> {
        let Some(tail) = &mark.tail else {
            return Ok(None);
        };
        let window = usize::try_from(info.message_count - mark.count + 1).unwrap_or(usize::MAX);
        let Some(session) = self.store.load(&info.id, Some(window)).await? else {
            return Ok(None);
        };
        let anchored = session.messages.first().map(|m| &m.id) == Some(tail)
            && session.total_messages == mark.count + session.messages.len() as u64 - 1;
        if !anchored {
            return Ok(None);
        }
        let mark = SessionMark::of(&session);
        let mut messages = session.messages;
        messages.remove(0);
        Ok(Some((mark, messages)))
    }

    /// The texts among `texts` that have no vector, and the keys of those that have one.
    async fn split_missing(
        &self, texts: Vec<(VectorKey, String)>,
    ) -> Result<(Vec<(VectorKey, String)>, HashSet<VectorKey>)> {
        let keys: Vec<VectorKey> = texts.iter().map(|(k, _)| *k).collect();
        let mut present = HashSet::new();
        for batch in keys.chunks(MAX_VECTOR_BATCH) {
            present.extend(
                self.store
                    .get_vectors(batch)
                    .await?
                    .into_iter()
                    .map(|v| v.key),
            );
        }
        let missing = texts
            .into_iter()
            .filter(|(k, _)| !present.contains(k))
            .collect();
        Ok((missing, present))
    }

    /// How many of the store's texts have no vector yet (what `doctor` shows).
    pub async fn lag(&self) -> Result<IndexLag> {
        let texts = self.gather(&HashMap::new()).await?.0.list;
        let total = texts.len() as u64;
        let pending = self.split_missing(texts).await?.0.len() as u64;
        Ok(IndexLag {
            texts: total,
            pending,
            model: self.stored_model().await?,
        })
    }

    /// Embeds every text that has no vector, a batch at a time (the embedder's batch size),
    /// storing each batch before the next; `progress` hears after each. Records the model in
    /// a store that has none; `Conflict` when the store's vectors come from another model.
    ///
    /// Reads the whole store; the background indexer's rounds read only what changed
    /// ([`index_changes`](Self::index_changes)).
    pub async fn index(
        &self, progress: &mut (dyn FnMut(IndexProgress) + Send),
    ) -> Result<IndexReport> {
        self.index_round(true, progress).await
    }

    /// One round of the background indexer ([`spawn_indexer`](Self::spawn_indexer)): what
    /// [`index`](Self::index) does, reading only what changed since the last round of this
    /// `Recall` or its clones. A session whose listing shows the time and count it had then is
    /// not read; one that only grew is read from its old last message on; the store is asked
    /// only about texts not known to have a vector. The first round, and every
    /// [`WHOLE_ROUND_EVERY`]-th, reads the whole store. The report's `texts` counts the texts
    /// this round looked at.
    pub async fn index_changes(
        &self, progress: &mut (dyn FnMut(IndexProgress) + Send),
    ) -> Result<IndexReport> {
        self.index_round(false, progress).await
    }

    async fn index_round(
        &self, whole: bool, progress: &mut (dyn FnMut(IndexProgress) + Send),
    ) -> Result<IndexReport> {
        self.check_model(true).await?;
        // Held for the round: rounds of one process do not embed the same texts side by side.
        let mut marks = self.marks.lock().await;
        let whole = whole || marks.rounds_since_whole >= WHOLE_ROUND_EVERY;
        if whole {
            *marks = IndexMarks::default();
        }
        let (texts, sessions) = self.gather(&marks.sessions).await?;
        let total = texts.list.len() as u64;
        let unknown: Vec<(VectorKey, String)> = texts
            .list
            .into_iter()
            .filter(|(key, _)| !marks.embedded.contains(key))
            .collect();
        let (missing, present) = self.split_missing(unknown).await?;
        marks.embedded.extend(present);
        let pending = missing.len() as u64;
        let mut embedded = 0u64;
        for batch in missing.chunks(self.embedder.batch_size().clamp(1, MAX_VECTOR_BATCH)) {
            let strings: Vec<String> = batch.iter().map(|(_, t)| t.clone()).collect();
            let vectors = self.embed(&strings).await?;
            let stored: Vec<StoredVector> = batch
                .iter()
                .zip(&vectors)
                .map(|((key, _), v)| StoredVector {
                    key: *key,
                    data: encode_vector(v),
                })
                .collect();
            self.store.put_vectors(&stored).await?;
            marks.embedded.extend(batch.iter().map(|(key, _)| *key));
            let units: Vec<(VectorKey, UnitVector)> = batch
                .iter()
                .zip(&vectors)
                .map(|((key, _), v)| (*key, unit(v)))
                .collect();
            self.cache.insert_many(units.iter().map(|(k, v)| (k, v)));
            embedded += batch.len() as u64;
            progress(IndexProgress { embedded, pending });
        }
        // Only now: a round cut short leaves the old marks, and the next reads those
        // sessions again.
        marks.sessions = sessions;
        marks.rounds_since_whole = if whole {
            0
        } else {
            marks.rounds_since_whole + 1
        };
        Ok(IndexReport {
            texts: total,
            embedded,
        })
    }

    /// Re-embeds the whole store with this embedder's model: deletes every vector, records
    /// the model (replacing another), then indexes. A run cut short is resumed by
    /// [`index`](Self::index) or another `reindex`.
    pub async fn reindex(
        &self, progress: &mut (dyn FnMut(IndexProgress) + Send),
    ) -> Result<IndexReport> {
        // Vectors go first: a crash before the model is recorded leaves no vector labelled
        // with the wrong model.
        self.learn_dimensions().await?;
        self.store.clear_vectors().await?;
        self.cache.clear();
        self.catalog.clear().await;
        *self.marks.lock().await = IndexMarks::default();
        let ours = self.embedder.model().to_property();
        loop {
            let current = self.store.store_property(MODEL_PROPERTY).await?;
            if current.as_deref() == Some(ours.as_str()) {
                break;
            }
            let change = PropertyChange::replace(MODEL_PROPERTY, current.as_deref(), &ours);
            if self.store.set_store_property(&change).await? {
                break;
            }
        }
        self.index(progress).await
    }

    /// Brings the vectors up to date as `agentmem reindex` does: [`reindex`](Self::reindex)
    /// with `anew` or when the store's vectors come from another model than this embedder's,
    /// else [`index`](Self::index).
    pub async fn update_index(
        &self, anew: bool, progress: &mut (dyn FnMut(IndexProgress) + Send),
    ) -> Result<IndexUpdate> {
        let model = self.model().await?;
        let previous_model = self.stored_model().await?.filter(|m| *m != model);
        let anew = anew || previous_model.is_some();
        let report = if anew {
            self.reindex(progress).await?
        } else {
            self.index(progress).await?
        };
        Ok(IndexUpdate {
            report,
            anew,
            model,
            previous_model,
        })
    }

    /// Runs [`index_changes`](Self::index_changes) in the background: at once, then whenever
    /// [`IndexerHandle::nudge`] is called (at most once every [`ROUND_GAP`]), and at least
    /// every `every`. Errors are logged (`tracing`) and retried on the next round. Stops when
    /// the handle is stopped or dropped.
    pub fn spawn_indexer(&self, every: Duration) -> IndexerHandle {
        let recall = self.clone();
        let nudge = Arc::new(Notify::new());
        let wake = Arc::clone(&nudge);
        let task = tokio::spawn(async move {
            loop {
                let started = tokio::time::Instant::now();
                match recall.index_changes(&mut |_| {}).await {
                    Ok(report) if report.embedded > 0 => {
                        tracing::debug!(embedded = report.embedded, "indexer embedded texts");
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "indexer round failed; retrying"),
                }
                tokio::select! {
                    _ = wake.notified() => {}
                    _ = tokio::time::sleep(every) => {}
                }
                tokio::time::sleep_until(started + ROUND_GAP).await;
            }
        });
        IndexerHandle { nudge, task }
    }
}

/// A background indexer ([`Recall::spawn_indexer`]); dropping it stops the indexer.
#[derive(Debug)]
pub struct IndexerHandle {
    nudge: Arc<Notify>,
    task: JoinHandle<()>,
}

impl IndexerHandle {
    /// Asks for a round (after writes): now, or once [`ROUND_GAP`] has passed since the last
    /// one began; rounds already asked for are merged.
    pub fn nudge(&self) {
        self.nudge.notify_one();
    }

    /// Stops the indexer (a batch being embedded is abandoned; what was stored stays).
    pub fn stop(self) {
        self.task.abort();
    }
}

impl Drop for IndexerHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}
