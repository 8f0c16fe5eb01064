//! `Agent` through the public API: history injection, auto-save, workspace-scoped sessions,
//! manual memory and auto-memory, on `InMemoryStore` and the file store.

mod common;

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use agentmem_agent::{Agent, AgentConfig};
use agentmem_core::{
    AgentMemory, AgentMemoryExt, ErrorKind, MemoryFilter, MemoryKind, MemoryStore, Message, Role,
    Session, SessionId, SessionStore,
};
use agentmem_workspace::{session_id, WorkspaceId};
use common::{after_turn, contents, from_config, in_memory, turn_context, Spy};

/// History scoped by `workspace`, whatever `AGENTMEM_GLOBAL_SESSIONS` says in this shell.
fn history_config(workspace: &Path) -> AgentConfig {
    AgentConfig::default()
        .with_history(true)
        .with_workspace_dir(workspace)
        .with_global_sessions(false)
}

/// An agent named `name` on `store`, with history scoped by `workspace` ([`history_config`]).
fn scoped_agent(workspace: &Path, store: &Arc<dyn AgentMemory>, name: &str) -> Agent {
    Agent::new(history_config(workspace), store.clone(), Some(name)).expect("memory")
}

/// One agent run: build the context, "answer", and save.
async fn run(agent: &Agent, user: &str, answer: &str) -> Vec<Message> {
    let turn = vec![Message::user(user)];
    let context = turn_context(agent, &turn).await;
    let mut conversation = context.messages("You are helpful.", &turn);
    conversation.push(Message::assistant(answer));
    after_turn(agent, &conversation).await;
    conversation
}

#[tokio::test]
async fn a_second_run_in_the_same_workspace_sees_the_history() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = in_memory();

    let first = scoped_agent(dir.path(), &store, "assistant");
    run(&first, "My name is Alice", "Hello Alice").await;

    let second = scoped_agent(dir.path(), &store, "assistant");
    assert_eq!(second.history_session(), first.history_session());
    let real = std::fs::canonicalize(dir.path()).expect("real path");
    let expected = session_id(&WorkspaceId::Dir(real), Some("assistant"));
    assert_eq!(second.history_session(), Some(&expected));

    let context = turn_context(&second, &[Message::user("What's my name?")]).await;
    assert_eq!(
        contents(&context.history),
        ["My name is Alice", "Hello Alice"]
    );
}

#[tokio::test]
async fn other_workspaces_and_other_agents_start_fresh() {
    let a = tempfile::tempdir().expect("temp dir");
    let b = tempfile::tempdir().expect("temp dir");
    let store = in_memory();
    let in_a = scoped_agent(a.path(), &store, "assistant");
    run(&in_a, "secret project A", "noted").await;

    let fresh = [
        (
            scoped_agent(b.path(), &store, "assistant"),
            "another workspace",
        ),
        (scoped_agent(a.path(), &store, "reviewer"), "another agent"),
    ];
    for (agent, who) in &fresh {
        assert_ne!(agent.history_session(), in_a.history_session(), "{who}");
        let context = turn_context(agent, &[Message::user("hi")]).await;
        assert!(context.history.is_empty(), "history leaked to {who}");
    }
}

#[tokio::test]
async fn an_explicit_session_id_wins_and_is_not_scoped() {
    let a = tempfile::tempdir().expect("temp dir");
    let b = tempfile::tempdir().expect("temp dir");
    let store = in_memory();
    let config = |dir: &Path| history_config(dir).with_session_id("user_123");
    let in_a = Agent::new(config(a.path()), store.clone(), Some("assistant")).expect("memory");
    assert_eq!(
        in_a.history_session().map(SessionId::as_str),
        Some("user_123")
    );
    assert_eq!(in_a.workspace(), None);
    run(&in_a, "remember the blue door", "ok").await;

    let in_b = Agent::new(config(b.path()), store.clone(), Some("other")).expect("memory");
    let context = turn_context(&in_b, &[]).await;
    assert_eq!(
        context.history.len(),
        2,
        "the explicit session is shared everywhere"
    );
}

#[tokio::test]
async fn name_only_sessions_from_before_are_not_adopted() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = in_memory();
    let legacy: SessionId = "assistant".parse().expect("name");
    store
        .append_one(&legacy, Message::user("old global history"))
        .await
        .expect("append");
    let agent = scoped_agent(dir.path(), &store, "assistant");
    assert!(turn_context(&agent, &[]).await.history.is_empty());
}

#[tokio::test]
async fn history_is_limited_and_never_injected_twice() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = in_memory();
    let agent = Agent::new(
        history_config(dir.path()).with_history_limit(4),
        store.clone(),
        None,
    )
    .expect("memory");
    let mut conversation = Vec::new();
    for i in 0..5 {
        conversation.push(Message::user(format!("question {i}")));
        conversation.push(Message::assistant(format!("answer {i}")));
        after_turn(&agent, &conversation).await;
    }
    let session = agent.history_session().expect("history session").clone();
    assert_eq!(
        store.messages(&session).await.expect("messages").len(),
        10,
        "each message once"
    );

    let context = turn_context(&agent, &[Message::user("next")]).await;
    assert_eq!(
        contents(&context.history),
        ["question 3", "answer 3", "question 4", "answer 4"]
    );

    // The caller passes the whole conversation: nothing of it comes back as history.
    let context = turn_context(&agent, &conversation).await;
    assert!(context.history.is_empty(), "{:?}", context.history);

    // Same role and content under other ids (a rebuilt conversation) are not injected either.
    let rebuilt = vec![Message::user("question 4"), Message::assistant("answer 4")];
    let context = turn_context(&agent, &rebuilt).await;
    assert_eq!(contents(&context.history), ["question 3", "answer 3"]);
    let messages = context.messages("sys", &rebuilt);
    assert_eq!(messages.len(), 5);
    assert_eq!(messages[0].role, Role::System);
}

#[tokio::test]
async fn injected_history_never_starts_with_an_orphaned_tool_result() {
    let store = in_memory();
    let session: SessionId = "tools".parse().expect("name");
    store
        .append(
            &session,
            &[
                Message::user("weather?"),
                Message::tool_call("c1", "weather", "{}"),
                Message::tool_result("c1", "weather", "sunny"),
                Message::assistant("It is sunny."),
            ],
        )
        .await
        .expect("append");
    let config = AgentConfig::default()
        .with_history(true)
        .with_session_id("tools")
        .with_history_limit(2);
    let agent = Agent::new(config, store.clone(), None).expect("memory");
    let context = turn_context(&agent, &[]).await;
    assert!(
        context.history.iter().all(|m| !m.is_tool_result()),
        "{:?}",
        context.history
    );
    assert_eq!(context.history.len(), 1);

    // The call is in the turn already: its result alone is not injected.
    let config = AgentConfig::default()
        .with_history(true)
        .with_session_id("tools");
    let agent = Agent::new(config, store.clone(), None).expect("memory");
    let call = store.messages(&session).await.expect("messages")[1].clone();
    let context = turn_context(&agent, &[call]).await;
    assert_eq!(contents(&context.history), ["weather?", "It is sunny."]);
}

#[tokio::test]
async fn auto_save_appends_what_is_new_and_never_rewrites() {
    let spy = Arc::new(Spy::new(false));
    let config = AgentConfig::default().with_auto_save("my_chat");
    let agent = Agent::new(config, spy.clone(), Some("assistant")).expect("memory");
    assert_eq!(agent.history_session(), None);
    let mut conversation = vec![Message::system("You are helpful."), Message::user("Hello!")];
    conversation.push(Message::assistant("Hi there!"));
    assert_eq!(after_turn(&agent, &conversation).await.saved, 2);
    conversation.push(Message::user("Remember my name is John"));
    conversation.push(Message::assistant("Got it, John!"));
    assert_eq!(after_turn(&agent, &conversation).await.saved, 2);
    assert_eq!(after_turn(&agent, &conversation).await.saved, 0);

    assert_eq!(
        spy.saves.load(Ordering::SeqCst),
        0,
        "no whole-session rewrite"
    );
    assert_eq!(
        spy.appends.load(Ordering::SeqCst),
        2,
        "one append per turn with news"
    );
    let session: SessionId = "my_chat".parse().expect("name");
    let stored = spy.messages(&session).await.expect("messages");
    assert_eq!(
        contents(&stored),
        contents(&conversation[1..]),
        "system messages are not saved; order is kept"
    );

    // A restarted agent passing the same conversation appends nothing again.
    let again = Agent::new(
        AgentConfig::default().with_auto_save("my_chat"),
        spy.clone(),
        None,
    )
    .expect("memory");
    assert_eq!(after_turn(&again, &conversation).await.saved, 0);
    assert_eq!(spy.messages(&session).await.expect("messages").len(), 4);
}

#[tokio::test]
async fn stored_memories_go_into_the_system_prompt() {
    let store = in_memory();
    let agent =
        Agent::new(AgentConfig::enabled(), store.clone(), Some("assistant")).expect("memory");
    assert_eq!(agent.system_prompt("Base.").await.expect("prompt"), "Base.");
    agent
        .store_memory("User prefers dark mode", MemoryKind::LongTerm)
        .await
        .expect("store");
    agent
        .store_memory("Current task: build a dashboard", MemoryKind::ShortTerm)
        .await
        .expect("store");
    let prompt = agent.system_prompt("Base.").await.expect("prompt");
    assert!(prompt.starts_with("Base.\n\n# Memory"), "{prompt}");
    assert!(
        prompt.contains("Long-term memory:\n- User prefers dark mode"),
        "{prompt}"
    );
    assert!(
        prompt.contains("Current task memory:\n- Current task: build a dashboard"),
        "{prompt}"
    );
    let err = agent
        .store_memory("   ", MemoryKind::LongTerm)
        .await
        .expect_err("blank");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
}

#[tokio::test]
async fn auto_memory_keeps_one_fact_per_key() {
    let store = in_memory();
    let config = AgentConfig::default().with_auto_memory(true);
    let agent = Agent::new(config, store.clone(), None).expect("memory");
    let report = after_turn(
        &agent,
        &[
            Message::user("My name is Alice and I use Rust"),
            Message::assistant("Hi"),
        ],
    )
    .await;
    assert_eq!(report.facts.len(), 2);
    after_turn(&agent, &[Message::user("Sorry, my name is Bob.")]).await;
    let facts = store
        .list_memories(&MemoryFilter::kind(MemoryKind::Fact))
        .await
        .expect("list");
    let texts: Vec<_> = facts.iter().map(|f| f.text.as_str()).collect();
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert!(texts.contains(&"The user's name is Bob."), "{texts:?}");
    assert!(!texts.iter().any(|t| t.contains("Alice")), "{texts:?}");
    let context = turn_context(&agent, &[Message::user("who am I?")]).await;
    assert!(
        context.memory.contains("Known about the user:\n- "),
        "{}",
        context.memory
    );
    assert!(
        context.memory.contains("- The user uses Rust."),
        "{}",
        context.memory
    );
    assert!(
        context.memory.contains("- The user's name is Bob."),
        "{}",
        context.memory
    );
    assert!(context.history.is_empty(), "history is off");
}

#[tokio::test]
async fn a_config_with_nothing_on_opens_nothing() {
    // Everything off: no store is opened at all (the default file store under the agentmem
    // home is not even created; memory_home_env.rs checks the folder on disk).
    assert!(from_config(AgentConfig::default(), Some("assistant"))
        .await
        .is_none());
    let off = AgentConfig::default().with_history_limit(50);
    assert!(from_config(off, None).await.is_none());
}

#[tokio::test]
async fn from_config_opens_a_file_store_that_keeps_history_across_runs() {
    let home = tempfile::tempdir().expect("temp dir");
    let workspace = tempfile::tempdir().expect("temp dir");
    let url = format!("file://{}", home.path().display());
    let config = || {
        AgentConfig::default()
            .with_url(url.clone())
            .with_history(true)
            .with_workspace_dir(workspace.path())
    };
    {
        let agent = from_config(config(), Some("assistant"))
            .await
            .expect("enabled");
        assert_eq!(agent.store().expect("a full store").backend(), "file");
        run(&agent, "My name is Alice", "Hello Alice").await;
    }
    let agent = from_config(config(), Some("assistant"))
        .await
        .expect("enabled");
    let context = turn_context(&agent, &[Message::user("name?")]).await;
    assert_eq!(context.history.len(), 2);
    assert_eq!(context.history[0].content, "My name is Alice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_saves_of_one_conversation_store_each_message_once() {
    let store = in_memory();
    let config = AgentConfig::default()
        .with_history(true)
        .with_session_id("shared")
        .with_auto_save("copy");
    let agent = Arc::new(Agent::new(config, store.clone(), None).expect("memory"));
    let conversation: Vec<Message> = (0..50)
        .map(|i| Message::user(format!("message {i}")))
        .collect();
    let tasks: Vec<_> = (0..8)
        .map(|k| {
            let agent = agent.clone();
            // Each task sees a growing prefix, as turns would.
            let prefix = conversation[..conversation.len() - k * 5].to_vec();
            tokio::spawn(async move { after_turn(&agent, &prefix).await.saved })
        })
        .collect();
    let mut saved = 0;
    for task in tasks {
        saved += task.await.expect("task");
    }
    assert_eq!(saved, 100, "50 messages in each of two sessions, once each");
    for name in ["shared", "copy"] {
        let session: SessionId = name.parse().expect("name");
        let stored = store.messages(&session).await.expect("messages");
        let mut ids: Vec<_> = stored.iter().map(|m| m.id.clone()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 50, "{name}: no duplicates, nothing lost");
    }
}

/// A turn saved while an earlier turn's append is still in flight lands after it: the store
/// keeps the conversation's order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_turns_are_stored_in_conversation_order() {
    let spy = Arc::new(Spy::new(true));
    let config = AgentConfig::default().with_auto_save("ordered");
    let agent = Arc::new(Agent::new(config, spy.clone(), None).expect("memory"));
    let conversation = vec![
        Message::user("first question"),
        Message::assistant("first answer"),
        Message::user("second question"),
        Message::assistant("second answer"),
    ];
    let first_turn = conversation[..2].to_vec();
    let earlier = {
        let agent = agent.clone();
        tokio::spawn(async move { agent.after_turn(&first_turn).await.expect("first turn") })
    };
    // Let the first call claim its messages and enter its (slow) append.
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    agent.after_turn(&conversation).await.expect("second turn");
    earlier.await.expect("task");

    let session: SessionId = "ordered".parse().expect("name");
    let stored = spy.messages(&session).await.expect("messages");
    assert_eq!(contents(&stored), contents(&conversation));
}

/// `with_global_sessions` decides over the environment: global gives one history per agent
/// name in every workspace, scoped gives one per workspace.
#[tokio::test]
async fn the_config_decides_global_sessions_over_the_environment() {
    let a = tempfile::tempdir().expect("temp dir");
    let b = tempfile::tempdir().expect("temp dir");
    let store = in_memory();
    let global = |dir: &Path| history_config(dir).with_global_sessions(true);
    let in_a = Agent::new(global(a.path()), store.clone(), Some("assistant")).expect("memory");
    let in_b = Agent::new(global(b.path()), store.clone(), Some("assistant")).expect("memory");
    let expected = session_id(&WorkspaceId::Global, Some("assistant"));
    assert_eq!(in_a.history_session(), Some(&expected));
    assert_eq!(in_b.history_session(), Some(&expected));

    let scoped = scoped_agent(a.path(), &store, "assistant");
    assert_ne!(scoped.history_session(), Some(&expected));
}

/// An agent named `assistant` on `store` with `config`.
fn assistant(config: AgentConfig, store: &Arc<dyn AgentMemory>) -> Agent {
    Agent::new(config, store.clone(), Some("assistant")).expect("agent")
}

/// Saved session `id` through a window of none: its labels and expiry, without its messages.
async fn labelled(store: &dyn AgentMemory, id: &SessionId) -> Session {
    store.load(id, Some(0)).await.expect("load").expect("saved")
}

#[tokio::test]
async fn session_ttl_and_owner_label_the_sessions_the_agent_writes() {
    let store = in_memory();
    let ttl = std::time::Duration::from_secs(3600);
    let config = AgentConfig::default()
        .with_history(true)
        .with_session_id("ttl-chat")
        .with_owner("ada")
        .with_session_ttl(Some(ttl));
    let agent = assistant(config, &store);
    let before = agentmem_core::now();
    run(&agent, "hello", "hi").await;
    let id: SessionId = "ttl-chat".parse().expect("id");
    let session = labelled(&*store, &id).await;
    assert_eq!(session.labels.owner.as_deref(), Some("ada"));
    let expires = session.expires_at.expect("the session ttl sets an expiry");
    assert!(expires >= before + std::time::Duration::from_secs(3600));
    let page = store
        .find_sessions(&agentmem_core::SessionQuery::default().owner("ada"))
        .await
        .expect("find");
    assert_eq!(page.sessions.len(), 1);

    // A later saving turn moves the expiry on (it slides with use).
    run(&agent, "again", "sure").await;
    let later = labelled(&*store, &id).await;
    assert!(later.expires_at.expect("expiry") >= expires);
}

#[tokio::test]
async fn memory_ttl_expires_facts_and_notes_but_not_without_it() {
    let store = in_memory();
    let ttl = std::time::Duration::from_secs(60);
    let config = AgentConfig::default()
        .with_auto_memory(true)
        .with_memory_ttl(Some(ttl));
    let agent = assistant(config, &store);
    let note = agent
        .store_memory("The deploy key rotates monthly", MemoryKind::LongTerm)
        .await
        .expect("note");
    assert!(
        note.expires_at.is_some(),
        "memory_ttl expires long-term notes"
    );
    after_turn(&agent, &[Message::user("My name is Ada")]).await;
    let facts = store
        .list_memories(&MemoryFilter::kind(MemoryKind::Fact))
        .await
        .expect("facts");
    assert!(!facts.is_empty(), "auto-memory stored a fact");
    assert!(facts.iter().all(|f| f.expires_at.is_some()), "{facts:?}");

    let plain = Agent::new(AgentConfig::default(), store.clone(), None).expect("memory");
    let kept = plain
        .store_memory("Keep this", MemoryKind::LongTerm)
        .await
        .expect("note");
    assert_eq!(kept.expires_at, None, "no memory_ttl, no expiry");
}
