//! `Agent` through the public API: history injection, auto-save, workspace-scoped sessions,
//! manual memory and auto-memory, on `InMemory` and the file store.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use agentmem_agent::{Agent, AgentConfig};
use agentmem_core::backend::Registry;
use agentmem_core::Layered;
use agentmem_core::{
    async_trait, AgentMemory, AgentMemoryExt, Archive, ArchiveId, ArchiveInfo, Capabilities,
    ErrorKind, InMemory, MemoryFilter, MemoryHit, MemoryItem, MemoryKind, Message, MessageHit,
    MessageQuery, Metadata, PurgeReport, Result, RetentionPolicy, Role, Session, SessionId,
    SessionInfo,
};
use agentmem_workspace::{session_id, WorkspaceId};

/// The backends `from_config` may open here: the file backend.
fn registry() -> Registry {
    Registry::new().with::<agentmem_file::FileConfig>()
}

/// History scoped by `workspace`, whatever `AGENTMEM_GLOBAL_SESSIONS` says in this shell.
fn history_config(workspace: &Path) -> AgentConfig {
    AgentConfig::default()
        .with_history(true)
        .with_workspace_dir(workspace)
        .with_global_sessions(false)
}

/// One agent run: build the context, "answer", and save.
async fn run(agent: &Agent, user: &str, answer: &str) -> Vec<Message> {
    let turn = vec![Message::user(user)];
    let context = agent.context_for_turn(&turn).await.expect("context");
    let mut conversation = context.messages("You are helpful.", &turn);
    conversation.push(Message::assistant(answer));
    agent.after_turn(&conversation).await.expect("after turn");
    conversation
}

#[tokio::test]
async fn a_second_run_in_the_same_workspace_sees_the_history() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store: Arc<dyn AgentMemory> = Arc::new(InMemory::new());

    let first =
        Agent::new(history_config(dir.path()), store.clone(), Some("assistant")).expect("memory");
    run(&first, "My name is Alice", "Hello Alice").await;

    let second =
        Agent::new(history_config(dir.path()), store.clone(), Some("assistant")).expect("memory");
    assert_eq!(second.history_session(), first.history_session());
    let real = std::fs::canonicalize(dir.path()).expect("real path");
    let expected = session_id(&WorkspaceId::Dir(real), Some("assistant"));
    assert_eq!(second.history_session(), Some(&expected));

    let context = second
        .context_for_turn(&[Message::user("What's my name?")])
        .await
        .expect("context");
    let history: Vec<_> = context.history.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(history, ["My name is Alice", "Hello Alice"]);
}

#[tokio::test]
async fn other_workspaces_and_other_agents_start_fresh() {
    let a = tempfile::tempdir().expect("temp dir");
    let b = tempfile::tempdir().expect("temp dir");
    let store: Arc<dyn AgentMemory> = Arc::new(InMemory::new());
    let in_a =
        Agent::new(history_config(a.path()), store.clone(), Some("assistant")).expect("memory");
    run(&in_a, "secret project A", "noted").await;

    let in_b =
        Agent::new(history_config(b.path()), store.clone(), Some("assistant")).expect("memory");
    assert_ne!(in_b.history_session(), in_a.history_session());
    let context = in_b
        .context_for_turn(&[Message::user("hi")])
        .await
        .expect("context");
    assert!(
        context.history.is_empty(),
        "history leaked across workspaces"
    );

    let reviewer =
        Agent::new(history_config(a.path()), store.clone(), Some("reviewer")).expect("memory");
    assert!(reviewer
        .context_for_turn(&[])
        .await
        .expect("context")
        .history
        .is_empty());
}

#[tokio::test]
async fn an_explicit_session_id_wins_and_is_not_scoped() {
    let a = tempfile::tempdir().expect("temp dir");
    let b = tempfile::tempdir().expect("temp dir");
    let store: Arc<dyn AgentMemory> = Arc::new(InMemory::new());
    let config = |dir: &Path| history_config(dir).with_session_id("user_123");
    let in_a = Agent::new(config(a.path()), store.clone(), Some("assistant")).expect("memory");
    assert_eq!(
        in_a.history_session().map(SessionId::as_str),
        Some("user_123")
    );
    assert_eq!(in_a.workspace(), None);
    run(&in_a, "remember the blue door", "ok").await;

    let in_b = Agent::new(config(b.path()), store.clone(), Some("other")).expect("memory");
    let context = in_b.context_for_turn(&[]).await.expect("context");
    assert_eq!(
        context.history.len(),
        2,
        "the explicit session is shared everywhere"
    );
}

#[tokio::test]
async fn name_only_sessions_from_before_are_not_adopted() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store: Arc<dyn AgentMemory> = Arc::new(InMemory::new());
    let legacy: SessionId = "assistant".parse().expect("name");
    store
        .append_one(&legacy, Message::user("old global history"))
        .await
        .expect("append");
    let agent =
        Agent::new(history_config(dir.path()), store.clone(), Some("assistant")).expect("memory");
    assert!(agent
        .context_for_turn(&[])
        .await
        .expect("context")
        .history
        .is_empty());
}

#[tokio::test]
async fn history_is_limited_and_never_injected_twice() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store: Arc<dyn AgentMemory> = Arc::new(InMemory::new());
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
        agent.after_turn(&conversation).await.expect("after turn");
    }
    let session = agent.history_session().expect("history session").clone();
    assert_eq!(
        store.messages(&session).await.expect("messages").len(),
        10,
        "each message once"
    );

    let context = agent
        .context_for_turn(&[Message::user("next")])
        .await
        .expect("context");
    let history: Vec<_> = context.history.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(
        history,
        ["question 3", "answer 3", "question 4", "answer 4"]
    );

    // The caller passes the whole conversation: nothing of it comes back as history.
    let context = agent
        .context_for_turn(&conversation)
        .await
        .expect("context");
    assert!(context.history.is_empty(), "{:?}", context.history);

    // Same role and content under other ids (a rebuilt conversation) are not injected either.
    let rebuilt = vec![Message::user("question 4"), Message::assistant("answer 4")];
    let context = agent.context_for_turn(&rebuilt).await.expect("context");
    let history: Vec<_> = context.history.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(history, ["question 3", "answer 3"]);
    let messages = context.messages("sys", &rebuilt);
    assert_eq!(messages.len(), 5);
    assert_eq!(messages[0].role, Role::System);
}

#[tokio::test]
async fn injected_history_never_starts_with_an_orphaned_tool_result() {
    let store: Arc<dyn AgentMemory> = Arc::new(InMemory::new());
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
    let context = agent.context_for_turn(&[]).await.expect("context");
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
    let context = agent.context_for_turn(&[call]).await.expect("context");
    let contents: Vec<_> = context.history.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(contents, ["weather?", "It is sunny."]);
}

/// A store that counts whole-session rewrites and appends, delegating everything.
#[derive(Debug)]
struct Spy {
    inner: Layered<InMemory>,
    saves: AtomicUsize,
    appends: AtomicUsize,
    /// Delays the first append, so a concurrent later one could overtake it.
    slow_first_append: AtomicBool,
}

impl Spy {
    fn new(slow_first_append: bool) -> Spy {
        Spy {
            inner: InMemory::new(),
            saves: AtomicUsize::new(0),
            appends: AtomicUsize::new(0),
            slow_first_append: AtomicBool::new(slow_first_append),
        }
    }
}

#[async_trait]
impl AgentMemory for Spy {
    fn backend(&self) -> &'static str {
        "spy"
    }
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }
    async fn schema_version(&self) -> Result<u32> {
        self.inner.schema_version().await
    }
    async fn save_session(&self, s: &SessionId, h: &[Message], m: &Metadata) -> Result<()> {
        self.saves.fetch_add(1, Ordering::SeqCst);
        self.inner.save_session(s, h, m).await
    }
    async fn append(&self, s: &SessionId, messages: &[Message]) -> Result<()> {
        self.appends.fetch_add(1, Ordering::SeqCst);
        if self.slow_first_append.swap(false, Ordering::SeqCst) {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        self.inner.append(s, messages).await
    }
    async fn load(&self, s: &SessionId, limit: Option<usize>) -> Result<Option<Session>> {
        self.inner.load(s, limit).await
    }
    async fn list_sessions(&self) -> Result<Vec<SessionInfo>> {
        self.inner.list_sessions().await
    }
    async fn delete_session(&self, s: &SessionId) -> Result<bool> {
        self.inner.delete_session(s).await
    }
    async fn compact(&self, s: &SessionId, r: &[Message]) -> Result<ArchiveInfo> {
        self.inner.compact(s, r).await
    }
    async fn list_archives(&self, s: &SessionId) -> Result<Vec<ArchiveInfo>> {
        self.inner.list_archives(s).await
    }
    async fn load_archive(&self, s: &SessionId, a: &ArchiveId) -> Result<Archive> {
        self.inner.load_archive(s, a).await
    }
    async fn put_memory(&self, item: &MemoryItem) -> Result<MemoryItem> {
        self.inner.put_memory(item).await
    }
    async fn get_memory(&self, id: &str) -> Result<Option<MemoryItem>> {
        self.inner.get_memory(id).await
    }
    async fn list_memories(&self, f: &MemoryFilter) -> Result<Vec<MemoryItem>> {
        self.inner.list_memories(f).await
    }
    async fn search_memories(&self, q: &str, f: &MemoryFilter) -> Result<Vec<MemoryHit>> {
        self.inner.search_memories(q, f).await
    }
    async fn delete_memory(&self, id: &str) -> Result<bool> {
        self.inner.delete_memory(id).await
    }
    async fn search_messages(&self, q: &str, s: &MessageQuery) -> Result<Vec<MessageHit>> {
        self.inner.search_messages(q, s).await
    }
    async fn purge(&self, p: &RetentionPolicy) -> Result<PurgeReport> {
        self.inner.purge(p).await
    }
}

#[tokio::test]
async fn auto_save_appends_what_is_new_and_never_rewrites() {
    let spy = Arc::new(Spy::new(false));
    let config = AgentConfig::default().with_auto_save("my_chat");
    let agent = Agent::new(config, spy.clone(), Some("assistant")).expect("memory");
    assert_eq!(agent.history_session(), None);
    let mut conversation = vec![Message::system("You are helpful."), Message::user("Hello!")];
    conversation.push(Message::assistant("Hi there!"));
    assert_eq!(
        agent.after_turn(&conversation).await.expect("save").saved,
        2
    );
    conversation.push(Message::user("Remember my name is John"));
    conversation.push(Message::assistant("Got it, John!"));
    assert_eq!(
        agent.after_turn(&conversation).await.expect("save").saved,
        2
    );
    assert_eq!(
        agent.after_turn(&conversation).await.expect("save").saved,
        0
    );

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
    let contents: Vec<_> = stored.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(
        contents,
        [
            "Hello!",
            "Hi there!",
            "Remember my name is John",
            "Got it, John!"
        ],
        "system messages are not saved; order is kept"
    );

    // A restarted agent passing the same conversation appends nothing again.
    let again = Agent::new(
        AgentConfig::default().with_auto_save("my_chat"),
        spy.clone(),
        None,
    )
    .expect("memory");
    assert_eq!(
        again.after_turn(&conversation).await.expect("save").saved,
        0
    );
    assert_eq!(spy.messages(&session).await.expect("messages").len(), 4);
}

#[tokio::test]
async fn stored_memories_go_into_the_system_prompt() {
    let store: Arc<dyn AgentMemory> = Arc::new(InMemory::new());
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
    let store: Arc<dyn AgentMemory> = Arc::new(InMemory::new());
    let config = AgentConfig::default().with_auto_memory(true);
    let agent = Agent::new(config, store.clone(), None).expect("memory");
    let report = agent
        .after_turn(&[
            Message::user("My name is Alice and I use Rust"),
            Message::assistant("Hi"),
        ])
        .await
        .expect("after turn");
    assert_eq!(report.facts.len(), 2);
    agent
        .after_turn(&[Message::user("Sorry, my name is Bob.")])
        .await
        .expect("after turn");
    let facts = store
        .list_memories(&MemoryFilter::kind(MemoryKind::Fact))
        .await
        .expect("list");
    let texts: Vec<_> = facts.iter().map(|f| f.text.as_str()).collect();
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert!(texts.contains(&"The user's name is Bob."), "{texts:?}");
    assert!(!texts.iter().any(|t| t.contains("Alice")), "{texts:?}");
    let context = agent
        .context_for_turn(&[Message::user("who am I?")])
        .await
        .expect("context");
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
    let agent = Agent::from_config(AgentConfig::default(), Some("assistant"), &registry())
        .await
        .expect("from config");
    assert!(agent.is_none());
    let off = AgentConfig::default().with_history_limit(50);
    assert!(Agent::from_config(off, None, &registry())
        .await
        .expect("from config")
        .is_none());
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
        let agent = Agent::from_config(config(), Some("assistant"), &registry())
            .await
            .expect("open")
            .expect("enabled");
        assert_eq!(agent.store().backend(), "file");
        run(&agent, "My name is Alice", "Hello Alice").await;
    }
    let agent = Agent::from_config(config(), Some("assistant"), &registry())
        .await
        .expect("open")
        .expect("enabled");
    let context = agent
        .context_for_turn(&[Message::user("name?")])
        .await
        .expect("context");
    assert_eq!(context.history.len(), 2);
    assert_eq!(context.history[0].content, "My name is Alice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_saves_of_one_conversation_store_each_message_once() {
    let store: Arc<dyn AgentMemory> = Arc::new(InMemory::new());
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
            tokio::spawn(async move { agent.after_turn(&prefix).await.expect("after turn").saved })
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
    let contents: Vec<_> = stored.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(
        contents,
        [
            "first question",
            "first answer",
            "second question",
            "second answer"
        ]
    );
}

/// `with_global_sessions` decides over the environment: global gives one history per agent
/// name in every workspace, scoped gives one per workspace.
#[tokio::test]
async fn the_config_decides_global_sessions_over_the_environment() {
    let a = tempfile::tempdir().expect("temp dir");
    let b = tempfile::tempdir().expect("temp dir");
    let store: Arc<dyn AgentMemory> = Arc::new(InMemory::new());
    let global = |dir: &Path| history_config(dir).with_global_sessions(true);
    let in_a = Agent::new(global(a.path()), store.clone(), Some("assistant")).expect("memory");
    let in_b = Agent::new(global(b.path()), store.clone(), Some("assistant")).expect("memory");
    let expected = session_id(&WorkspaceId::Global, Some("assistant"));
    assert_eq!(in_a.history_session(), Some(&expected));
    assert_eq!(in_b.history_session(), Some(&expected));

    let scoped = Agent::new(history_config(a.path()), store, Some("assistant")).expect("memory");
    assert_ne!(scoped.history_session(), Some(&expected));
}
