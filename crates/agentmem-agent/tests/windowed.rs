//! A turn reads windows of the session, never the whole of it (issue 20): a turn of a fresh
//! agent on a long session costs the same as on a short one, and stores what it stored before.

mod common;

use std::collections::HashSet;
use std::sync::Arc;

use agentmem_agent::{Agent, AgentConfig};
use agentmem_core::{AgentMemory, AgentMemoryExt, Message, SessionId, SessionStore};
use common::{after_turn, contents, in_memory, turn_context, Counting};

/// Appends `n` generated messages to `session`, 1,000 at a time.
async fn fill(store: &dyn AgentMemory, session: &SessionId, prefix: &str, n: usize) {
    for start in (0..n).step_by(1_000) {
        let batch: Vec<Message> = (start..(start + 1_000).min(n))
            .map(|i| Message::user(format!("{prefix} {i}")))
            .collect();
        store.append(session, &batch).await.expect("fill");
    }
}

/// A fresh agent (as a new process builds it) with history and auto-save on `session`.
fn agent(store: &Arc<Counting>, session: &SessionId) -> Agent {
    let config = AgentConfig::default()
        .with_session_id(session.as_str())
        .with_history(true)
        .with_auto_save(session.as_str());
    Agent::new(config, store.clone(), Some("assistant")).expect("agent")
}

/// A fresh agent with auto-save (and nothing else) on `session`.
fn auto_saving(store: &Arc<Counting>, session: &str) -> Agent {
    let config = AgentConfig::default().with_auto_save(session);
    Agent::new(config, store.clone(), None).expect("agent")
}

/// A counting in-memory store whose session `name` holds a greeting (`hello`, `hi`), the
/// session's id and the greeting.
async fn greeted(name: &str) -> (Arc<Counting>, SessionId, Vec<Message>) {
    let store = Arc::new(Counting::new(in_memory()));
    let session: SessionId = name.parse().expect("name");
    let greeting = vec![Message::user("hello"), Message::assistant("hi")];
    store.append(&session, &greeting).await.expect("append");
    (store, session, greeting)
}

/// Three turns, each by a fresh agent, on a session of `n` messages in `inner`: each injects
/// the last ten stored messages and stores its own two, reading only windows.
async fn turns_on_a_long_session(inner: Arc<dyn AgentMemory>, n: usize) {
    let store = Arc::new(Counting::new(inner));
    let session: SessionId = "long".parse().expect("name");
    fill(&*store, &session, "old", n).await;
    let mut expected: Vec<String> = Vec::new();
    for t in 0..3 {
        let agent = agent(&store, &session);
        let user = [Message::user(format!("question {t}"))];
        let context = turn_context(&agent, &user).await;
        let stored = store.inner().messages(&session).await.expect("messages");
        assert_eq!(
            contents(&context.history),
            contents(&stored[stored.len() - 10..]),
            "turn {t}: the last ten stored messages"
        );
        let mut conversation = context.messages("You are terse.", &user);
        conversation.push(Message::assistant(format!("answer {t}")));
        assert_eq!(after_turn(&agent, &conversation).await.saved, 2, "turn {t}");
        expected.extend([format!("question {t}"), format!("answer {t}")]);

        // The history window, then the window of the conversation's twelve messages to save.
        assert_eq!(store.take_loads(), [Some(10), Some(12)], "turn {t}");
    }
    let stored = store.inner().messages(&session).await.expect("messages");
    assert_eq!(stored.len(), n + 6);
    assert_eq!(contents(&stored[n..]), expected);
    assert_eq!(stored[n - 1].content, format!("old {}", n - 1));
}

#[tokio::test]
async fn a_turn_on_a_long_session_never_loads_it_whole_in_memory() {
    turns_on_a_long_session(in_memory(), 20_000).await;
}

#[tokio::test]
async fn a_turn_on_a_long_session_never_loads_it_whole_on_the_file_backend() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = agentmem_file::FileStore::connect_with(
        agentmem_file::FileConfig::new(dir.path())
            .with_durability(agentmem_file::Durability::Buffered),
    )
    .await
    .expect("file store");
    turns_on_a_long_session(Arc::new(store), 20_000).await;
}

#[tokio::test]
async fn a_resumed_conversation_is_found_behind_other_writers_messages() {
    let store = Arc::new(Counting::new(in_memory()));
    let session: SessionId = "shared".parse().expect("name");
    fill(&*store, &session, "before", 500).await;
    let earlier: Vec<Message> = (0..30)
        .map(|i| Message::user(format!("mine {i}")))
        .collect();
    store.append(&session, &earlier).await.expect("append");
    fill(&*store, &session, "other writer", 10).await;

    // A fresh agent resumes its conversation (30 stored messages, with 10 of another writer
    // stored after them) and adds one: only that one is new.
    let agent = auto_saving(&store, "shared");
    let mut conversation = vec![Message::system("You are terse.")];
    conversation.extend(earlier.iter().cloned());
    conversation.push(Message::user("and now?"));
    store.take_loads();
    assert_eq!(after_turn(&agent, &conversation).await.saved, 1);
    // The first window (31) holds only the newest 21 of them; the second holds them all.
    assert_eq!(store.take_loads(), [Some(31), Some(62)]);

    let stored = store.messages(&session).await.expect("messages");
    assert_eq!(stored.len(), 500 + 30 + 10 + 1);
    assert_eq!(stored[stored.len() - 1].content, "and now?");
    let ids: HashSet<&str> = stored.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids.len(), stored.len(), "nothing stored twice");
}

#[tokio::test]
async fn a_session_shorter_than_the_window_is_read_whole_as_before() {
    let (store, session, earlier) = greeted("short").await;
    // More messages to save than the session holds: the window is the whole session.
    let agent = auto_saving(&store, "short");
    let mut conversation = earlier.clone();
    conversation.extend([Message::user("again"), Message::assistant("sure")]);
    assert_eq!(after_turn(&agent, &conversation).await.saved, 2);
    assert_eq!(store.take_loads(), [Some(4)]);
    let stored = store.messages(&session).await.expect("messages");
    assert_eq!(contents(&stored), ["hello", "hi", "again", "sure"]);
}

/// The documented limit: a conversation whose stored messages all lie further back than the
/// window (here 100 messages of another writer came after them) is taken as new.
#[tokio::test]
async fn stored_messages_older_than_the_window_count_as_new() {
    let (store, session, earlier) = greeted("buried").await;
    fill(&*store, &session, "other writer", 100).await;
    let agent = auto_saving(&store, "buried");
    let mut conversation = earlier.clone();
    conversation.push(Message::user("again"));
    assert_eq!(after_turn(&agent, &conversation).await.saved, 3);
    assert_eq!(store.take_loads(), [Some(3)]);
}
