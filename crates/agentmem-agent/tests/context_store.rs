//! The `get_context` / `save_session` protocol in the agent layer: with `store_context` the
//! store's listing of the agent's scope is injected, and a store with only those two methods
//! ([`ContextStore`]) plugs into an `Agent`.

mod common;

use std::sync::{Arc, Mutex, MutexGuard};

use agentmem_agent::{Agent, AgentConfig};
use agentmem_core::{
    async_trait, AgentMemoryExt, ContextStore, ErrorKind, InMemoryStore, MemoryKind, Message,
    Metadata, Operation, Result, Role, SessionId,
};
use agentmem_workspace::{session_id, WorkspaceId};
use common::{after_turn, contents, in_memory, turn_context, Spy};

/// A store with only the protocol: a fixed context, and a record of every call.
#[derive(Debug, Default)]
struct Recorder {
    context: String,
    queries: Mutex<Vec<Option<String>>>,
    saves: Mutex<Vec<(SessionId, Vec<Message>, Metadata)>>,
}

impl Recorder {
    fn new(context: &str) -> Arc<Recorder> {
        Arc::new(Recorder {
            context: context.to_string(),
            ..Recorder::default()
        })
    }

    fn queries(&self) -> MutexGuard<'_, Vec<Option<String>>> {
        self.queries.lock().expect("lock")
    }

    fn saves(&self) -> MutexGuard<'_, Vec<(SessionId, Vec<Message>, Metadata)>> {
        self.saves.lock().expect("lock")
    }
}

#[async_trait]
impl ContextStore for Recorder {
    async fn get_context(&self, query: Option<&str>) -> Result<String> {
        self.queries().push(query.map(str::to_string));
        Ok(self.context.clone())
    }

    async fn save_session(&self, id: &SessionId, history: &[Message], m: &Metadata) -> Result<()> {
        self.saves().push((id.clone(), history.to_vec(), m.clone()));
        Ok(())
    }
}

#[tokio::test]
async fn store_context_injects_the_store_listing_of_the_agents_scope_only() {
    let spy = Arc::new(Spy::with_context("Context for {query}"));
    let config = AgentConfig::enabled()
        .with_history(true)
        .with_session_id("chat")
        .with_store_context(true);
    let agent = Agent::new(config, spy.clone(), Some("assistant")).expect("agent");
    let bob = Agent::new(AgentConfig::enabled(), spy.clone(), Some("bob")).expect("agent");
    agent
        .store_memory("User prefers dark mode", MemoryKind::LongTerm)
        .await
        .expect("store");
    bob.store_memory("Bob's user prefers light mode", MemoryKind::LongTerm)
        .await
        .expect("store");
    after_turn(
        &agent,
        &[Message::user("earlier"), Message::assistant("noted")],
    )
    .await;

    // The store's listing, as `- text` lines, of the items the agent sees: not bob's.
    let turn = vec![Message::user("Which mode?")];
    let context = turn_context(&agent, &turn).await;
    assert_eq!(context.memory, "- User prefers dark mode");
    assert_eq!(
        context.system_prompt("Base."),
        "Base.\n\n- User prefers dark mode"
    );
    assert_eq!(
        contents(&context.history),
        ["earlier", "noted"],
        "history still works on a full store"
    );
    assert_eq!(
        agent.system_prompt("Base.").await.expect("prompt"),
        "Base.\n\n- User prefers dark mode"
    );
    // The store's own get_context sees no scope, so it could show bob's items: not asked.
    assert!(!spy.asked("Which mode?"));

    // Nothing visible is no context.
    let empty = Agent::new(
        AgentConfig::enabled().with_store_context(true),
        in_memory(),
        None,
    )
    .expect("agent");
    assert_eq!(empty.system_prompt("Base.").await.expect("prompt"), "Base.");
}

#[tokio::test]
async fn without_store_context_the_agent_renders_its_memory_block() {
    // A store overriding get_context: its answer is not used unless asked for.
    let spy = Arc::new(Spy::with_context("Context for {query}"));
    let agent = Agent::new(AgentConfig::enabled(), spy.clone(), None).expect("agent");
    agent
        .store_memory("User prefers dark mode", MemoryKind::LongTerm)
        .await
        .expect("store");
    let context = turn_context(&agent, &[Message::user("dark mode?")]).await;
    assert_eq!(
        context.memory,
        "# Memory\n\nLong-term memory:\n- User prefers dark mode"
    );
    assert!(
        !spy.asked("dark mode?"),
        "the store's get_context was not called"
    );
}

#[tokio::test]
async fn a_protocol_only_store_has_its_context_injected_and_every_turn_saved() {
    let store = Recorder::new("User prefers Python");
    let config = AgentConfig::default().with_session_id("chat_1");
    let agent = Agent::with_context_store(config, store.clone(), Some("assistant")).expect("agent");
    assert_eq!(
        agent.history_session().map(SessionId::as_str),
        Some("chat_1")
    );
    // The seed protocol is all it has: no full store to reach around it.
    assert!(agent.store().is_none());
    assert!(store.queries().is_empty() && store.saves().is_empty());

    // Turn 1.
    let turn = vec![Message::user("My name is Ada")];
    let context = turn_context(&agent, &turn).await;
    assert_eq!(context.memory, "User prefers Python");
    assert!(context.history.is_empty());
    let mut conversation = context.messages("Be helpful.", &turn);
    assert_eq!(conversation[0].role, Role::System);
    assert_eq!(
        conversation[0].content,
        "Be helpful.\n\nUser prefers Python"
    );
    conversation.push(Message::assistant("Hello Ada"));
    let report = after_turn(&agent, &conversation).await;
    assert_eq!(report.saved, 2);

    // Turn 2: the caller passes the whole conversation.
    conversation.push(Message::user("Which language do I like?"));
    let context = turn_context(&agent, &conversation).await;
    assert_eq!(
        context.system_prompt("Be helpful."),
        "Be helpful.\n\nUser prefers Python"
    );
    conversation.push(Message::assistant("Python"));
    let report = after_turn(&agent, &conversation).await;
    assert_eq!(report.saved, 2, "two messages are new");

    assert_eq!(
        *store.queries(),
        [
            Some("My name is Ada".to_string()),
            Some("Which language do I like?".to_string())
        ]
    );
    {
        let saves = store.saves();
        assert_eq!(saves.len(), 2, "one save per turn");
        for (session, _, metadata) in saves.iter() {
            assert_eq!(session.as_str(), "chat_1");
            assert_eq!(metadata["agent"], "assistant");
        }
        assert_eq!(contents(&saves[0].1), ["My name is Ada", "Hello Ada"]);
        // The full history, in order, without the system prompt.
        assert_eq!(saves[1].1, conversation[1..].to_vec());
    }

    // Nothing new: not saved again.
    let report = after_turn(&agent, &conversation).await;
    assert_eq!(report.saved, 0);
    assert_eq!(store.saves().len(), 2);
}

#[tokio::test]
async fn the_workspace_session_and_auto_save_are_saved_through_the_protocol() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Recorder::new("");
    let config = AgentConfig::default()
        .with_workspace_dir(dir.path())
        .with_global_sessions(false)
        .with_auto_save("copy");
    let agent = Agent::with_context_store(config, store.clone(), Some("assistant")).expect("agent");
    let real = std::fs::canonicalize(dir.path()).expect("real path");
    let expected = session_id(&WorkspaceId::Dir(real), Some("assistant"));
    assert_eq!(agent.history_session(), Some(&expected));
    assert!(agent.workspace().is_some());

    let turn = vec![Message::user("hi")];
    let context = turn_context(&agent, &turn).await;
    assert!(context.is_empty(), "an empty context injects nothing");
    assert_eq!(context.system_prompt("Base."), "Base.");
    let mut conversation = context.messages("Base.", &turn);
    conversation.push(Message::assistant("hello"));
    let report = after_turn(&agent, &conversation).await;
    assert_eq!(report.saved, 4, "two messages in each of two sessions");
    let saves = store.saves();
    let sessions: Vec<_> = saves.iter().map(|(s, ..)| s.as_str()).collect();
    assert_eq!(sessions, [expected.as_str(), "copy"]);
    for (_, history, _) in saves.iter() {
        assert_eq!(contents(history), ["hi", "hello"]);
    }
}

#[tokio::test]
async fn features_beyond_the_protocol_are_refused_when_the_agent_is_built() {
    let store = Recorder::new("context");
    let base = || AgentConfig::default().with_session_id("s");
    for (config, feature) in [
        (base().with_history(true), "history"),
        (base().with_auto_memory(true), "auto_memory"),
        (base().with_learn(true), "learn"),
    ] {
        let err = Agent::with_context_store(config, store.clone(), None).expect_err(feature);
        assert_eq!(err.kind(), ErrorKind::Unsupported, "{feature}: {err}");
        assert!(err.to_string().contains(feature), "{feature}: {err}");
    }
    let both = base().with_history(true).with_learn(true);
    let err = Agent::with_context_store(both, store.clone(), None).expect_err("refused");
    assert!(
        err.to_string().contains("history") && err.to_string().contains("learn"),
        "{err}"
    );
    let bad = AgentConfig::default().with_session_id("no/slashes");
    let err = Agent::with_context_store(bad, store.clone(), None).expect_err("invalid");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);

    // What needs more than the protocol is refused when asked, not ignored.
    let agent = Agent::with_context_store(base(), store.clone(), None).expect("agent");
    let err = agent
        .store_memory("a note", MemoryKind::LongTerm)
        .await
        .expect_err("no memory items");
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    assert_eq!(err.operation(), Some(Operation::PutMemory));
    assert_eq!(err.backend_name(), Some("context_store"));
    assert!(agent.store().is_none());
    assert!(store.queries().is_empty() && store.saves().is_empty());
}

#[tokio::test]
async fn every_agent_memory_is_a_context_store() {
    let store = Arc::new(InMemoryStore::new());
    store
        .store_memory(MemoryKind::Fact, "The user's name is Ada")
        .await
        .expect("store");
    let config = AgentConfig::default().with_session_id("kept");
    let agent = Agent::with_context_store(config, store.clone(), None).expect("agent");
    let turn = vec![Message::user("Who is Ada?")];
    let context = turn_context(&agent, &turn).await;
    // The store's own (provided) get_context, as it is.
    assert_eq!(context.memory, "- The user's name is Ada");
    let mut conversation = context.messages("Base.", &turn);
    conversation.push(Message::assistant("You are."));
    after_turn(&agent, &conversation).await;
    let session: SessionId = "kept".parse().expect("name");
    let stored = store.messages(&session).await.expect("messages");
    assert_eq!(contents(&stored), ["Who is Ada?", "You are."]);
}
