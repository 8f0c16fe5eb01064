//! A build reads a window of the session, never the whole of it (issue 20): building on a
//! long session costs the same as on a short one, and preloads what a whole read preloaded.
mod common;

use std::sync::Arc;

use agentmem_conversation::templates::summary_text;
use agentmem_conversation::{Preload, DEFAULT_PRELOAD_WINDOW};
use agentmem_core::{AgentMemory, Message, SessionId, SessionStore};
use common::{built, in_memory, persisting, ScriptedStore};

/// Appends `entry(i)` for `i` in `range`, 1,000 at a time.
async fn fill(
    store: &dyn AgentMemory, session: &SessionId, range: std::ops::Range<usize>,
    entry: impl Fn(usize) -> Message,
) {
    let all: Vec<usize> = range.collect();
    for chunk in all.chunks(1_000) {
        let batch: Vec<Message> = chunk.iter().map(|&i| entry(i)).collect();
        store.append(session, &batch).await.unwrap();
    }
}

fn entry(i: usize) -> Message {
    Message::user(format!(
        "Entry {i}: the quick brown fox jumps over the lazy dog."
    ))
}

/// What `agent` preloads from `inner` when built with `configure`, and the limits of the
/// loads the build made.
async fn preload_of(
    inner: &Arc<dyn AgentMemory>, agent: &str,
    configure: impl FnOnce(
        agentmem_conversation::ConversationBuilder,
    ) -> agentmem_conversation::ConversationBuilder,
) -> (Option<Preload>, Vec<Option<usize>>) {
    let store = ScriptedStore::new(inner.clone(), None);
    let convo = built(configure(persisting(agent, store.clone()))).await;
    (convo.preloaded().cloned(), store.loads())
}

/// A build on a session of 20,000 messages in `inner` reads the default window once, and
/// preloads what reading the whole session preloads.
async fn build_on_a_long_session(inner: Arc<dyn AgentMemory>) {
    let session: SessionId = "Long".parse().unwrap();
    fill(&*inner, &session, 0..20_000, entry).await;
    let (windowed, loads) = preload_of(&inner, "Long", |b| b).await;
    assert_eq!(loads, [Some(DEFAULT_PRELOAD_WINDOW)]);
    let (whole, loads) = preload_of(&inner, "Long", |b| b.preload_window(usize::MAX)).await;
    assert_eq!(
        loads,
        [Some(usize::MAX)],
        "a window longer than the session"
    );
    let windowed = windowed.unwrap();
    assert_eq!(Some(&windowed), whole.as_ref());
    assert!(windowed.text.contains("Entry 19999:"));
    assert_eq!(windowed.kept + windowed.dropped, 20_000);
}

#[tokio::test]
async fn a_build_on_a_long_session_never_loads_it_whole_in_memory() {
    build_on_a_long_session(in_memory()).await;
}

#[tokio::test]
async fn a_build_on_a_long_session_never_loads_it_whole_on_the_file_backend() {
    let dir = tempfile::tempdir().unwrap();
    let store = agentmem_file::FileStore::connect_with(
        agentmem_file::FileConfig::new(dir.path())
            .with_durability(agentmem_file::Durability::Buffered),
    )
    .await
    .unwrap();
    build_on_a_long_session(Arc::new(store)).await;
}

#[tokio::test]
async fn a_window_whose_blocks_do_not_fill_the_budget_reads_further_back() {
    let inner = in_memory();
    let session: SessionId = "Sparse".parse().unwrap();
    fill(&*inner, &session, 0..1_000, entry).await;
    // 300 newest messages without content: no memory block.
    fill(&*inner, &session, 0..300, |_| Message::user(" ")).await;
    let budget = |b: agentmem_conversation::ConversationBuilder| b.preload_token_budget(300);
    let (windowed, loads) = preload_of(&inner, "Sparse", |b| budget(b).preload_window(50)).await;
    assert_eq!(loads, [Some(50), Some(100), Some(200), Some(400)]);
    let (whole, _) = preload_of(&inner, "Sparse", |b| budget(b).preload_window(usize::MAX)).await;
    let windowed = windowed.unwrap();
    assert_eq!(Some(&windowed), whole.as_ref());
    assert!(windowed.text.contains("Entry 999:"));
}

#[tokio::test]
async fn a_leading_summary_is_pinned_when_the_window_reaches_the_start_of_the_session() {
    let inner = in_memory();
    let session: SessionId = "Pinned".parse().unwrap();
    let summary = Message::system(summary_text("The user is Ada and prefers GCP."));
    inner
        .append(&session, std::slice::from_ref(&summary))
        .await
        .unwrap();
    fill(&*inner, &session, 0..60, entry).await;
    let budget = |b: agentmem_conversation::ConversationBuilder| b.preload_token_budget(400);

    // The window holds the whole session: preloaded as a whole read does, summary first.
    let (windowed, loads) = preload_of(&inner, "Pinned", |b| budget(b).preload_window(61)).await;
    assert_eq!(loads, [Some(61)]);
    let (whole, _) = preload_of(&inner, "Pinned", |b| budget(b).preload_window(usize::MAX)).await;
    let windowed = windowed.unwrap();
    assert_eq!(Some(&windowed), whole.as_ref());
    assert!(windowed.text.contains("The user is Ada"));

    // A shorter window does not reach it: the newest blocks only (documented).
    let (short, loads) = preload_of(&inner, "Pinned", |b| budget(b).preload_window(30)).await;
    assert_eq!(loads, [Some(30)]);
    let short = short.unwrap();
    assert!(!short.text.contains("The user is Ada"));
    assert!(short.text.contains("Entry 59:"));
    assert_eq!(short.kept + short.dropped, 61);
}
