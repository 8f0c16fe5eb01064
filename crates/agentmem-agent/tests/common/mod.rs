//! What several test files share: [`Spy`], a store that records what the agent asks of it, and
//! the calls every test makes with an answer it must get.

#![allow(
    dead_code,
    reason = "shared by several test binaries, each using part of it"
)]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agentmem_agent::{Agent, AgentConfig, TurnContext, TurnReport};
use agentmem_core::backend::{BackendInfo, Registry};
use agentmem_core::layer::LayeredStore;
use agentmem_core::Layered;
use agentmem_core::{
    async_trait, AgentMemory, InMemoryStore, MemoryStore, Message, Metadata, Result, Session,
    SessionId, SessionStore,
};

/// The backends `Agent::from_config` may open here: the file backend.
pub fn registry() -> Registry {
    Registry::new().with::<agentmem_file::FileConfig>()
}

/// What `Agent::from_config` makes of `config` for agent `name` with [`registry`], which must
/// not fail: `None` when the config turns nothing on.
pub async fn from_config(config: AgentConfig, name: Option<&str>) -> Option<Agent> {
    Agent::from_config(config, name, &registry())
        .await
        .expect("from config")
}

/// An empty in-memory store, as the agent takes it.
pub fn in_memory() -> Arc<dyn AgentMemory> {
    Arc::new(InMemoryStore::new())
}

/// The messages' contents, in order.
pub fn contents(messages: &[Message]) -> Vec<&str> {
    messages.iter().map(|m| m.content.as_str()).collect()
}

/// What `agent` injects for `turn`, which must build.
pub async fn turn_context(agent: &Agent, turn: &[Message]) -> TurnContext {
    agent.context_for_turn(turn).await.expect("context")
}

/// What `agent` keeps of `conversation` after a turn, which must succeed.
pub async fn after_turn(agent: &Agent, conversation: &[Message]) -> TurnReport {
    agent.after_turn(conversation).await.expect("after turn")
}

/// A store that counts whole-session rewrites and appends, delegating everything; with
/// [`Spy::with_context`], its `get_context` answers its own text instead.
#[derive(Debug)]
pub struct Spy {
    inner: Layered<InMemoryStore>,
    pub saves: AtomicUsize,
    pub appends: AtomicUsize,
    /// Delays the first append, so a concurrent later one could overtake it.
    slow_first_append: AtomicBool,
    /// `get_context`'s own answer (`{query}` stands for the query); the inner store's when
    /// `None`.
    context: Option<String>,
    /// The queries `get_context` was asked, in order.
    queries: Mutex<Vec<Option<String>>>,
}

impl Spy {
    pub fn new(slow_first_append: bool) -> Spy {
        Spy {
            inner: InMemoryStore::new(),
            saves: AtomicUsize::new(0),
            appends: AtomicUsize::new(0),
            slow_first_append: AtomicBool::new(slow_first_append),
            context: None,
            queries: Mutex::new(Vec::new()),
        }
    }

    /// Whether `get_context` was asked about `query`.
    pub fn asked(&self, query: &str) -> bool {
        let queries = self.queries.lock().unwrap_or_else(|e| e.into_inner());
        queries.contains(&Some(query.to_string()))
    }

    /// A spy whose `get_context` answers `text`, with `{query}` replaced by the query.
    pub fn with_context(text: &str) -> Spy {
        Spy {
            context: Some(text.to_string()),
            ..Spy::new(false)
        }
    }
}

/// The spy names itself as its backend.
static SPY: BackendInfo = BackendInfo::new("spy");

/// Counts saves and appends, and may answer `get_context` itself; the rest goes through.
#[async_trait]
impl LayeredStore for Spy {
    type Inner = Layered<InMemoryStore>;
    fn inner(&self) -> &Layered<InMemoryStore> {
        &self.inner
    }
    fn backend(&self) -> &'static BackendInfo {
        &SPY
    }
    async fn save_session(&self, s: &SessionId, h: &[Message], m: &Metadata) -> Result<()> {
        self.saves.fetch_add(1, Ordering::SeqCst);
        SessionStore::save_session(&self.inner, s, h, m).await
    }
    async fn append(&self, s: &SessionId, messages: &[Message]) -> Result<()> {
        self.appends.fetch_add(1, Ordering::SeqCst);
        if self.slow_first_append.swap(false, Ordering::SeqCst) {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        SessionStore::append(&self.inner, s, messages).await
    }
    async fn get_context(&self, query: Option<&str>) -> Result<String> {
        (self.queries.lock().unwrap_or_else(|e| e.into_inner())).push(query.map(str::to_string));
        match &self.context {
            Some(text) => Ok(text.replace("{query}", query.unwrap_or("none"))),
            None => MemoryStore::get_context(&self.inner, query).await,
        }
    }
}

/// A store that forwards everything to `inner` and records the limit of every `load`
/// (`None`: a whole-session load).
#[derive(Debug)]
pub struct Counting {
    inner: Arc<dyn AgentMemory>,
    loads: Mutex<Vec<Option<usize>>>,
}

impl Counting {
    pub fn new(inner: Arc<dyn AgentMemory>) -> Counting {
        Counting {
            inner,
            loads: Mutex::new(Vec::new()),
        }
    }

    /// The store it forwards to (reading through it records nothing).
    pub fn inner(&self) -> &Arc<dyn AgentMemory> {
        &self.inner
    }

    /// The limits of the loads so far, in order; forgets them.
    pub fn take_loads(&self) -> Vec<Option<usize>> {
        std::mem::take(&mut *self.loads.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Records the limit of every load; the rest goes through.
#[async_trait]
impl LayeredStore for Counting {
    type Inner = Arc<dyn AgentMemory>;
    fn inner(&self) -> &Arc<dyn AgentMemory> {
        &self.inner
    }
    async fn load(&self, s: &SessionId, limit: Option<usize>) -> Result<Option<Session>> {
        (self.loads.lock().unwrap_or_else(|e| e.into_inner())).push(limit);
        SessionStore::load(&self.inner, s, limit).await
    }
}
