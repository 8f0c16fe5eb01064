//! The background indexer's rounds read only what changed: an unchanged session is not
//! loaded, a grown one is loaded from its old last message on, a rewritten one whole; and
//! the periodic whole round finds what the marks cannot see.
use std::sync::{Arc, Mutex};

use agentmem_core::layer::LayeredStore;
use agentmem_core::{
    async_trait, AgentMemory, Embedder, InMemoryStore, Message, Result, Session, SessionId,
    SessionStore, VectorStore,
};
use agentmem_recall::{Recall, RecallOptions, WHOLE_ROUND_EVERY};
use agentmem_testkit::recall::ConceptEmbedder;

/// Records every `load`: the session and the window asked for.
#[derive(Debug, Default)]
struct Loads {
    inner: InMemoryStore,
    seen: Mutex<Vec<(String, Option<usize>)>>,
}

impl Loads {
    fn take(&self) -> Vec<(String, Option<usize>)> {
        std::mem::take(&mut *self.seen.lock().unwrap())
    }
}

#[async_trait]
impl LayeredStore for Loads {
    type Inner = InMemoryStore;

    fn inner(&self) -> &InMemoryStore {
        &self.inner
    }

    async fn load(&self, session: &SessionId, limit: Option<usize>) -> Result<Option<Session>> {
        self.seen
            .lock()
            .unwrap()
            .push((session.as_str().to_owned(), limit));
        self.inner.load(session, limit).await
    }
}

fn sid(name: &str) -> SessionId {
    name.parse().unwrap()
}

async fn append(store: &Loads, id: &str, texts: &[&str]) {
    let messages: Vec<Message> = texts.iter().map(|t| Message::user(*t)).collect();
    SessionStore::append(store, &sid(id), &messages)
        .await
        .unwrap();
}

fn recall(store: &Arc<Loads>) -> Recall {
    let store: Arc<dyn AgentMemory> = store.clone();
    let embedder: Arc<dyn Embedder> = Arc::new(ConceptEmbedder::default());
    Recall::new(
        store,
        embedder,
        RecallOptions::default().with_embed_messages(true),
    )
}

async fn round(recall: &Recall) -> u64 {
    recall.index_changes(&mut |_| {}).await.unwrap().embedded
}

#[tokio::test]
async fn a_round_loads_only_the_sessions_written_and_only_their_new_tail() {
    let store = Arc::new(Loads::default());
    append(&store, "quiet", &["We repainted the kitchen blue"]).await;
    append(&store, "busy", &["The train was late", "The dog ran"]).await;
    let recall = recall(&store);
    assert_eq!(round(&recall).await, 3);
    let mut first = store.take();
    first.sort();
    assert_eq!(
        first,
        [("busy".into(), None), ("quiet".into(), None)],
        "the first round reads every session whole"
    );

    append(&store, "busy", &["Breakfast was toast", "The museum opens"]).await;
    assert_eq!(round(&recall).await, 2);
    assert_eq!(
        store.take(),
        [("busy".into(), Some(3))],
        "the grown session from its old last message on; the quiet one not at all"
    );
    assert_eq!(round(&recall).await, 0);
    assert!(store.take().is_empty(), "no write, no load");

    // Rewritten to the same length: read whole (nothing says it only grew).
    let rewritten = [Message::user("Plants need water")];
    SessionStore::save_session(&*store, &sid("quiet"), &rewritten, &Default::default())
        .await
        .unwrap();
    assert_eq!(round(&recall).await, 1);
    assert_eq!(store.take(), [("quiet".into(), None)]);
    // Rewritten longer: the window shows its old last message gone, so it is read whole.
    let longer: Vec<Message> = ["Taxes are due", "Plants need sun", "Toast again"]
        .iter()
        .map(|t| Message::user(*t))
        .collect();
    SessionStore::save_session(&*store, &sid("quiet"), &longer, &Default::default())
        .await
        .unwrap();
    assert_eq!(round(&recall).await, 3);
    assert_eq!(
        store.take(),
        [("quiet".into(), Some(3)), ("quiet".into(), None)]
    );
}

#[tokio::test]
async fn the_periodic_whole_round_finds_vectors_removed_behind_the_marks() {
    let store = Arc::new(Loads::default());
    append(&store, "s", &["The train was late", "The dog ran"]).await;
    let recall = recall(&store);
    assert_eq!(round(&recall).await, 2);
    // Another process clears the vectors (a reindex with the same model, cut short): the
    // marks still say embedded, so rounds skip them until the whole round.
    VectorStore::clear_vectors(&*store).await.unwrap();
    for _ in 1..WHOLE_ROUND_EVERY {
        assert_eq!(round(&recall).await, 0);
    }
    assert_eq!(round(&recall).await, 2, "the whole round re-embeds them");
    assert_eq!(recall.lag().await.unwrap().pending, 0);
    // `index` always reads the whole store.
    VectorStore::clear_vectors(&*store).await.unwrap();
    assert_eq!(recall.index(&mut |_| {}).await.unwrap().embedded, 2);
}
