//! The recall cases: semantic and hybrid search ([`agentmem_recall::Recall`]) over any store
//! with any embedder. Backends run them with the real local model (the facade's
//! `tests/recall_backends.rs`); [`ConceptEmbedder`] stands in for it where no model is
//! installed. Each case takes a fresh, empty store and panics naming the violated rule.
//!
//! The paraphrase queries share no word (nor stem) with the texts they must find, so a keyword
//! search cannot find them on any backend.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agentmem_core::{
    async_trait, AgentMemory, Embedder, Error, ErrorKind, MemoryFilter, MemoryItem, MemoryKind,
    Message, MessageQuery, ModelIdentity, Result, SessionId,
};
use agentmem_recall::{MessageRecall, Recall, RecallOptions, SearchMode};

use crate::cases::assert_kind;

/// The memory item a paraphrase query must find, and the others around it.
pub const ADOPTION: &str = "I contacted my mentor for adoption advice";
/// A query meaning [`ADOPTION`] without sharing a word with it.
pub const ADOPTION_QUERY: &str = "looking into becoming a foster parent";
/// The message a paraphrase query must find.
pub const TRIP: &str = "I finally booked the flights for our trip to Japan";
/// A query meaning [`TRIP`] without sharing a word with it.
pub const TRIP_QUERY: &str = "travel plans overseas";

const OTHER_FACTS: [&str; 4] = [
    "We repainted the kitchen blue last weekend",
    "The quarterly tax filing is due in April",
    "My dog loves running on the beach at sunrise",
    "The train to Berlin was delayed by two hours",
];

const OTHER_MESSAGES: [&str; 3] = [
    "Can you remind me to water the plants?",
    "The meeting moved to Thursday afternoon",
    "I burned the toast again this morning",
];

fn ok<T>(result: Result<T>, call: &str) -> T {
    result.unwrap_or_else(|e| panic!("{call} failed: {e}"))
}

fn sid(name: &str) -> SessionId {
    name.parse().expect("a valid session id")
}

fn fact(text: &str) -> MemoryItem {
    MemoryItem::new(MemoryKind::Fact, text)
}

fn recall(store: &Arc<dyn AgentMemory>, embedder: &Arc<dyn Embedder>, messages: bool) -> Recall {
    let options = RecallOptions::default().with_embed_messages(messages);
    Recall::new(Arc::clone(store), Arc::clone(embedder), options)
}

async fn put_facts(store: &Arc<dyn AgentMemory>, texts: &[&str]) {
    for text in texts {
        ok(store.put_memory(&fact(text)).await, "put_memory");
    }
}

async fn index(recall: &Recall) -> u64 {
    ok(recall.index(&mut |_| {}).await, "index").embedded
}

async fn memory_texts(
    recall: &Recall, query: &str, filter: &MemoryFilter, mode: SearchMode,
) -> Vec<String> {
    let hits = ok(
        recall.search_memories(query, filter, mode).await,
        "search_memories",
    );
    hits.into_iter().map(|h| h.item.text).collect()
}

/// The messages in `scope` a search for [`TRIP_QUERY`] finds, best first.
async fn trip_hits(recall: &Recall, scope: &MessageQuery, mode: SearchMode) -> Vec<MessageRecall> {
    ok(
        recall.search_messages(TRIP_QUERY, scope, mode).await,
        "search_messages",
    )
}

/// A paraphrase that shares no word with a memory item or a message is missed by keyword
/// search and found first by semantic and hybrid search.
pub async fn meaning_finds_what_keywords_miss(
    store: Arc<dyn AgentMemory>, embedder: Arc<dyn Embedder>,
) {
    put_facts(
        &store,
        &[
            OTHER_FACTS[0],
            ADOPTION,
            OTHER_FACTS[1],
            OTHER_FACTS[2],
            OTHER_FACTS[3],
        ],
    )
    .await;
    let session = sid("chat");
    let mut messages: Vec<Message> = OTHER_MESSAGES.iter().map(|t| Message::user(*t)).collect();
    messages.insert(1, Message::user(TRIP));
    ok(store.append(&session, &messages).await, "append");
    let recall = recall(&store, &embedder, true);
    assert_eq!(index(&recall).await, 9, "every distinct text embedded once");

    let filter = MemoryFilter::default();
    let keyword = memory_texts(&recall, ADOPTION_QUERY, &filter, SearchMode::Keyword).await;
    assert!(
        !keyword.iter().any(|t| t == ADOPTION),
        "keyword search cannot find a paraphrase"
    );
    for mode in [SearchMode::Semantic, SearchMode::Hybrid] {
        let found = memory_texts(&recall, ADOPTION_QUERY, &filter, mode).await;
        assert_eq!(
            found.first().map(String::as_str),
            Some(ADOPTION),
            "{mode} finds the item by meaning first"
        );
    }
    let scope = MessageQuery {
        session: None,
        limit: 3,
    };
    for mode in [SearchMode::Semantic, SearchMode::Hybrid] {
        let hits = trip_hits(&recall, &scope, mode).await;
        assert_eq!(
            hits.first().map(|h| h.message.content.as_str()),
            Some(TRIP),
            "{mode} finds the message by meaning first"
        );
        assert_eq!(hits[0].session, session);
        assert!(hits[0].similarity.is_some() && hits[0].semantic_rank == Some(1));
    }
    let keyword = trip_hits(&recall, &scope, SearchMode::Keyword).await;
    assert!(
        keyword.is_empty(),
        "keyword search finds no message for the paraphrase"
    );
}

/// Scope and kind filters apply before ranking: a better match outside the filter is never
/// returned and never crowds out the matches inside it; a session scope keeps to its session.
pub async fn scope_applies_before_ranking(
    store: Arc<dyn AgentMemory>, embedder: Arc<dyn Embedder>,
) {
    // The exact query text, but of another kind: the best match, outside the filter.
    for _ in 0..3 {
        ok(
            store
                .put_memory(&MemoryItem::new(MemoryKind::Insight, ADOPTION_QUERY))
                .await,
            "put_memory",
        );
    }
    put_facts(&store, &[ADOPTION, OTHER_FACTS[1]]).await;
    let elsewhere = sid("elsewhere");
    ok(
        store
            .append(
                &elsewhere,
                &[Message::user(TRIP_QUERY), Message::user(TRIP)],
            )
            .await,
        "append",
    );
    let here = sid("here");
    ok(
        store
            .append(
                &here,
                &[
                    Message::user(OTHER_MESSAGES[0]),
                    Message::user(OTHER_MESSAGES[1]),
                ],
            )
            .await,
        "append",
    );
    let recall = recall(&store, &embedder, true);
    index(&recall).await;

    let facts = MemoryFilter {
        limit: Some(1),
        ..MemoryFilter::kind(MemoryKind::Fact)
    };
    for mode in [SearchMode::Semantic, SearchMode::Hybrid] {
        let found = memory_texts(&recall, ADOPTION_QUERY, &facts, mode).await;
        assert_eq!(
            found,
            [ADOPTION],
            "{mode}: the best fact, not the better insight"
        );
    }
    let scope = MessageQuery {
        session: Some(here.clone()),
        limit: 10,
    };
    for mode in [SearchMode::Semantic, SearchMode::Hybrid] {
        let hits = trip_hits(&recall, &scope, mode).await;
        assert!(
            !hits.is_empty(),
            "{mode}: the session's messages are ranked"
        );
        assert!(
            hits.iter().all(|h| h.session == here),
            "{mode}: only the scoped session"
        );
    }
}

/// A store records the model its vectors come from; searching or indexing with another model
/// is a `Conflict` (keyword search still works) until a reindex with the new model.
pub async fn another_model_is_refused_until_reindex(
    store: Arc<dyn AgentMemory>, embedder: Arc<dyn Embedder>,
) {
    put_facts(&store, &[ADOPTION, OTHER_FACTS[0]]).await;
    let first = recall(&store, &embedder, false);
    index(&first).await;
    let model = ok(first.stored_model().await, "stored_model").expect("the model is recorded");
    assert_eq!(&model, embedder.model());

    let other: Arc<dyn Embedder> = Arc::new(Renamed::new(Arc::clone(&embedder), "another-model"));
    let second = recall(&store, &other, false);
    let filter = MemoryFilter::default();
    for mode in [SearchMode::Semantic, SearchMode::Hybrid] {
        assert_kind(
            second.search_memories(ADOPTION_QUERY, &filter, mode).await,
            ErrorKind::Conflict,
            &format!("{mode} search with another model"),
        );
    }
    assert_kind(
        second.index(&mut |_| {}).await,
        ErrorKind::Conflict,
        "indexing with another model",
    );
    ok(
        second
            .search_memories("kitchen", &filter, SearchMode::Keyword)
            .await,
        "keyword search with another model",
    );

    let report = ok(second.reindex(&mut |_| {}).await, "reindex");
    assert_eq!(report.embedded, 2, "reindex embeds everything again");
    assert_eq!(
        ok(second.stored_model().await, "stored_model").as_ref(),
        Some(other.model())
    );
    let found = memory_texts(&second, ADOPTION_QUERY, &filter, SearchMode::Semantic).await;
    assert_eq!(found.first().map(String::as_str), Some(ADOPTION));
    assert_kind(
        first
            .search_memories(ADOPTION_QUERY, &filter, SearchMode::Semantic)
            .await,
        ErrorKind::Conflict,
        "the old model after reindex",
    );
}

/// An indexing run cut short keeps what it stored; the next run embeds exactly what is
/// missing: every text once, none skipped.
pub async fn indexer_resumes_after_a_crash(
    store: Arc<dyn AgentMemory>, embedder: Arc<dyn Embedder>,
) {
    let texts: Vec<String> = (0..7)
        .map(|i| format!("{} (note {i})", OTHER_FACTS[i % 4]))
        .collect();
    for text in &texts {
        ok(store.put_memory(&fact(text)).await, "put_memory");
    }
    let counting = Arc::new(Counting::new(Arc::clone(&embedder), 2));
    counting.fail_after_calls(2);
    let dyn_counting: Arc<dyn Embedder> = counting.clone();
    let recall = recall(&store, &dyn_counting, false);
    let err = recall
        .index(&mut |_| {})
        .await
        .expect_err("the third batch fails");
    assert_eq!(
        err.kind(),
        ErrorKind::Unavailable,
        "the embedder's error: {err}"
    );
    assert_eq!(
        ok(recall.lag().await, "lag").pending,
        3,
        "two batches of two were stored"
    );

    counting.fail_after_calls(usize::MAX);
    let report = ok(recall.index(&mut |_| {}).await, "index again");
    assert_eq!(
        (report.texts, report.embedded),
        (7, 3),
        "the rest, and only the rest"
    );
    assert_eq!(ok(recall.lag().await, "lag").pending, 0);
    let counts = counting.counts();
    assert_eq!(counts.len(), 7, "every text embedded");
    assert!(
        counts.values().all(|&n| n == 1),
        "no text embedded twice: {counts:?}"
    );
    assert_eq!(
        ok(recall.index(&mut |_| {}).await, "index a third time").embedded,
        0
    );
}

/// What is not embedded yet is found by keyword in hybrid search; a deleted item is never
/// found; a changed text is ranked by its new words and has no vector until indexed.
pub async fn hybrid_covers_the_unembedded_tail(
    store: Arc<dyn AgentMemory>, embedder: Arc<dyn Embedder>,
) {
    put_facts(&store, &[ADOPTION, OTHER_FACTS[0]]).await;
    let recall = recall(&store, &embedder, false);
    index(&recall).await;
    let late = fact("The zeppelin museum opens on Sunday");
    ok(store.put_memory(&late).await, "put_memory");
    let filter = MemoryFilter::default();
    let hits = ok(
        recall
            .search_memories("zeppelin", &filter, SearchMode::Hybrid)
            .await,
        "search_memories",
    );
    let hit = hits
        .iter()
        .find(|h| h.item.id == late.id)
        .expect("the new item is found by keyword");
    assert_eq!((hit.keyword_rank, hit.similarity), (Some(1), None));
    assert_eq!(ok(recall.lag().await, "lag").pending, 1);

    let adoption = ok(store.list_memories(&filter).await, "list_memories")
        .into_iter()
        .find(|item| item.text == ADOPTION)
        .expect("the item");
    ok(store.delete_memory(&adoption.id).await, "delete_memory");
    for mode in [SearchMode::Semantic, SearchMode::Hybrid] {
        let found = memory_texts(&recall, ADOPTION_QUERY, &filter, mode).await;
        assert!(
            !found.iter().any(|t| t == ADOPTION),
            "{mode}: a deleted item is not found"
        );
    }
}

/// The background indexer's rounds ([`Recall::index_changes`]) embed what each write added,
/// each text once: appended messages, a compaction's summary, a session saved anew, a new
/// memory item; a round after no write embeds nothing, and nothing is left unembedded.
pub async fn indexer_rounds_embed_each_write_once(
    store: Arc<dyn AgentMemory>, embedder: Arc<dyn Embedder>,
) {
    let counting = Arc::new(Counting::new(Arc::clone(&embedder), 64));
    let dyn_counting: Arc<dyn Embedder> = counting.clone();
    let recall = recall(&store, &dyn_counting, true);
    let (a, b) = (sid("rounds-a"), sid("rounds-b"));
    let append = |id: &SessionId, texts: &[&str]| {
        let messages: Vec<Message> = texts.iter().map(|t| Message::user(*t)).collect();
        let (store, id) = (Arc::clone(&store), id.clone());
        async move { ok(store.append(&id, &messages).await, "append") }
    };
    let round = || async { ok(recall.index_changes(&mut |_| {}).await, "index_changes").embedded };

    append(&a, &OTHER_MESSAGES[..2]).await;
    append(&b, &[TRIP]).await;
    assert_eq!(round().await, 3, "the first round embeds every message");
    assert_eq!(round().await, 0, "no write, nothing to embed");

    append(&a, &[OTHER_MESSAGES[2]]).await;
    ok(store.put_memory(&fact(ADOPTION)).await, "put_memory");
    assert_eq!(round().await, 2, "the appended message and the new item");

    let summary = "Summary: plants, a meeting and burned toast";
    ok(
        store.compact(&a, &[Message::system(summary)]).await,
        "compact",
    );
    append(&a, &["After the summary, a question about dinner"]).await;
    assert_eq!(round().await, 2, "the summary and the message after it");

    let saved = [Message::user("The flights to Japan are booked for May")];
    ok(
        store.save_session(&b, &saved, &Default::default()).await,
        "save_session",
    );
    assert_eq!(round().await, 1, "the session saved anew");
    assert_eq!(round().await, 0, "no write, nothing to embed");

    assert_eq!(ok(recall.lag().await, "lag").pending, 0, "nothing skipped");
    let counts = counting.counts();
    assert_eq!(counts.len(), 8, "every text embedded: {counts:?}");
    assert!(
        counts.values().all(|&n| n == 1),
        "no text embedded twice: {counts:?}"
    );
}

/// An embedder that reports another model name (for model-mismatch cases).
#[derive(Debug)]
pub struct Renamed {
    inner: Arc<dyn Embedder>,
    model: ModelIdentity,
}

impl Renamed {
    /// `inner` under the model name `id`.
    pub fn new(inner: Arc<dyn Embedder>, id: &str) -> Self {
        let model = ModelIdentity {
            id: id.to_owned(),
            ..inner.model().clone()
        };
        Renamed { inner, model }
    }
}

#[async_trait]
impl Embedder for Renamed {
    fn model(&self) -> &ModelIdentity {
        &self.model
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        self.inner.embed(texts).await
    }
}

/// An embedder that counts what it embeds per text, with a batch size of its own, and can be
/// told to fail (`Unavailable`) after a number of calls (a crash mid-indexing).
#[derive(Debug)]
pub struct Counting {
    inner: Arc<dyn Embedder>,
    batch: usize,
    calls: AtomicUsize,
    fail_after: AtomicUsize,
    counts: Mutex<HashMap<String, usize>>,
}

impl Counting {
    /// `inner`, embedding `batch` texts per call.
    pub fn new(inner: Arc<dyn Embedder>, batch: usize) -> Self {
        Counting {
            inner,
            batch,
            calls: AtomicUsize::new(0),
            fail_after: AtomicUsize::new(usize::MAX),
            counts: Mutex::new(HashMap::new()),
        }
    }

    /// Fails every call after the first `calls` (counted from now).
    pub fn fail_after_calls(&self, calls: usize) {
        self.calls.store(0, Ordering::SeqCst);
        self.fail_after.store(calls, Ordering::SeqCst);
    }

    /// How often each text was embedded.
    pub fn counts(&self) -> HashMap<String, usize> {
        self.counts.lock().map(|c| c.clone()).unwrap_or_default()
    }
}

#[async_trait]
impl Embedder for Counting {
    fn model(&self) -> &ModelIdentity {
        self.inner.model()
    }

    fn batch_size(&self) -> usize {
        self.batch
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        if self.calls.fetch_add(1, Ordering::SeqCst) >= self.fail_after.load(Ordering::SeqCst) {
            return Err(Error::unavailable(
                "the embedder went away (a test's crash)",
            ));
        }
        let vectors = self.inner.embed(texts).await?;
        if let Ok(mut counts) = self.counts.lock() {
            for text in texts {
                *counts.entry(text.clone()).or_default() += 1;
            }
        }
        Ok(vectors)
    }
}

/// A stand-in model for tests without the real one: one dimension per topic of the recall
/// cases' texts (adoption, travel, home, taxes, pets, trains, plants, meetings, breakfast,
/// museums) and one shared by all, so related words land close and unrelated ones apart.
#[derive(Debug)]
pub struct ConceptEmbedder {
    model: ModelIdentity,
}

impl Default for ConceptEmbedder {
    fn default() -> Self {
        ConceptEmbedder {
            model: ModelIdentity {
                id: "agentmem-test-concepts".into(),
                dimensions: TOPICS.len() + 1,
                normalized: true,
            },
        }
    }
}

const TOPICS: [&[&str]; 10] = [
    &["adopt", "foster", "parent", "mentor", "kid", "child"],
    &["flight", "trip", "japan", "travel", "overseas", "abroad"],
    &["kitchen", "repaint", "house"],
    &["tax", "filing"],
    &["dog", "beach"],
    &["train", "berlin"],
    &["plant", "water"],
    &["meeting", "thursday"],
    &["toast", "breakfast"],
    &["zeppelin", "museum"],
];

#[async_trait]
impl Embedder for ConceptEmbedder {
    fn model(&self) -> &ModelIdentity {
        &self.model
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        Ok(texts
            .iter()
            .map(|text| {
                let text = text.to_lowercase();
                let mut v: Vec<f32> = TOPICS
                    .iter()
                    .map(|words| words.iter().filter(|w| text.contains(*w)).count() as f32)
                    .collect();
                v.push(0.25);
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.iter().map(|x| x / norm).collect()
            })
            .collect())
    }
}

/// Every recall case, by name, for a harness that runs them all on one backend.
pub const RECALL_CASES: &[&str] = &[
    "meaning_finds_what_keywords_miss",
    "scope_applies_before_ranking",
    "another_model_is_refused_until_reindex",
    "indexer_resumes_after_a_crash",
    "hybrid_covers_the_unembedded_tail",
    "indexer_rounds_embed_each_write_once",
];

/// Runs the recall case `name` on `store` with `embedder`.
pub async fn run_recall_case(name: &str, store: Arc<dyn AgentMemory>, embedder: Arc<dyn Embedder>) {
    match name {
        "meaning_finds_what_keywords_miss" => {
            meaning_finds_what_keywords_miss(store, embedder).await
        }
        "scope_applies_before_ranking" => scope_applies_before_ranking(store, embedder).await,
        "another_model_is_refused_until_reindex" => {
            another_model_is_refused_until_reindex(store, embedder).await
        }
        "indexer_resumes_after_a_crash" => indexer_resumes_after_a_crash(store, embedder).await,
        "hybrid_covers_the_unembedded_tail" => {
            hybrid_covers_the_unembedded_tail(store, embedder).await
        }
        "indexer_rounds_embed_each_write_once" => {
            indexer_rounds_embed_each_write_once(store, embedder).await
        }
        other => panic!("no recall case {other}"),
    }
}
