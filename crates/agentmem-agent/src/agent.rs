//! [`Agent`]: one agent's memory layer, tying its configuration, its store and its name together.

use agentmem_recall::{Recall, SearchMode};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agentmem_core::backend::Registry;
use agentmem_core::layer::{Layer, RetainLayer};

use crate::backend::Backend;
use agentmem_core::{
    AgentMemory, ContextStore, Error, MemoryFilter, MemoryItem, MemoryKind, MemoryScope,
    MemoryStore, Message, MessageId, Operation, Result, Role, ScopeFilter, SessionId, SessionStore,
};
use agentmem_workspace::{global_sessions_requested, session_id, workspace_id_with, WorkspaceId};

use crate::auto_memory::Fact;
use crate::config::{AgentConfig, StoreSpec};
use crate::context::{join_prompt, TurnContext};
use crate::learning::{insight_category, insight_count, Insight, InsightCategory};
use crate::protocol::refused;
use crate::text::stable_hash;

mod turn;

/// How many facts, insights and notes of each kind the memory block shows at most.
const FACTS_SHOWN: usize = 30;
const INSIGHTS_SHOWN: usize = 10;
const NOTES_SHOWN: usize = 10;

/// What [`Agent::after_turn`] did.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct TurnReport {
    /// Messages saved that the session did not hold yet, summed over the history and auto-save
    /// sessions (for a [`ContextStore`]: messages new since the last `save_session`).
    pub saved: usize,
    /// Facts extracted and stored by auto-memory.
    pub facts: Vec<Fact>,
    /// Insights recorded by learning (a message already counted is not listed again).
    pub insights: Vec<Insight>,
}

/// Where an agent keeps its memory.
enum Memory {
    /// A full store: every feature of the agent.
    Store(Arc<dyn AgentMemory>),
    /// A store with only the seed protocol ([`ContextStore`]): context before a turn, the
    /// conversation saved after it.
    Protocol(Arc<dyn ContextStore>),
}

/// One agent's memory layer: its [`AgentConfig`], its store and its name.
///
/// Before a turn, [`context_for_turn`](Self::context_for_turn) returns what to inject; after
/// it, [`after_turn`](Self::after_turn) saves what is new (history and auto-save) and runs
/// auto-memory and learning. [`store_memory`](Self::store_memory) stores notes by hand, and
/// [`system_prompt`](Self::system_prompt) builds a prompt carrying the stored context.
///
/// The stored context is, by default, the agent's memory block, rendered from the store's
/// memory items in sections: facts about the user, insights seen often enough, long-term
/// notes (those matching the query first), current-task notes, under `# Memory`. With
/// [`AgentConfig::store_context`] on, it is instead what the store's
/// [`get_context_in`](ContextStore::get_context_in) returns for the turn's last user message
/// and the items visible from the agent's [`memory_scope`](Self::memory_scope), as it is.
/// Either way the agent reads only its own items, its workspace's and the shared ones: never
/// another agent's.
///
/// A store with only the [`ContextStore`] protocol plugs in through
/// [`with_context_store`](Self::with_context_store).
///
/// The history session is the explicit `session_id` when one is configured (not scoped), else
/// `history_` + hash of the workspace and agent name (see [`agentmem_workspace`]), fixed
/// when the agent is built. Shared between tasks by reference: every method takes `&self`.
pub struct Agent {
    config: AgentConfig,
    memory: Memory,
    name: Option<String>,
    workspace: Option<WorkspaceId>,
    /// The scope of the memory items it stores and reads.
    memory_scope: MemoryScope,
    history_session: Option<SessionId>,
    auto_save_session: Option<SessionId>,
    state: Mutex<State>,
    /// Held across claiming new messages and appending them, so concurrent `after_turn` calls
    /// store messages in conversation order (a later call cannot append before an earlier
    /// one's append has landed).
    save_order: tokio::sync::Mutex<()>,
    /// Recall by meaning for the long-term notes a turn's context shows ([`with_recall`](Self::with_recall)).
    recall: Option<Recall>,
}

#[derive(Default)]
struct State {
    /// Per session written by auto-save or history: ids known to be stored there (`None`
    /// until the session has been read once).
    stored: HashMap<SessionId, HashSet<MessageId>>,
    /// Ids of messages auto-memory and learning have seen (or that came from the store, and
    /// so were seen by an earlier run).
    processed: HashSet<MessageId>,
    /// Per session saved whole through a [`ContextStore`]: the ids of the last save, in order.
    saved_whole: HashMap<SessionId, Vec<MessageId>>,
    /// Sessions this agent has labelled with its owner.
    owned: HashSet<SessionId>,
}

impl fmt::Debug for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Agent")
            .field("config", &self.config)
            .field(
                "backend",
                &self.store().map_or("context_store", |s| s.backend().name),
            )
            .field("name", &self.name)
            .field("history_session", &self.history_session)
            .field("auto_save_session", &self.auto_save_session)
            .finish_non_exhaustive()
    }
}

/// The sessions an agent writes, resolved from its config and name.
struct Sessions {
    workspace: Option<WorkspaceId>,
    history: Option<SessionId>,
    auto_save: Option<SessionId>,
}

impl Sessions {
    /// Resolves the sessions; without an explicit session id, the history session is
    /// workspace-scoped when `scoped`, else there is none. Blocking: a workspace-scoped history
    /// session reads the file system (git discovery and the root-commit walk).
    fn resolve(config: &AgentConfig, name: Option<&str>, scoped: bool) -> Result<Sessions> {
        // The workspace scopes the history session and, unless the config gives a scope, the
        // memory items; an explicit session id scopes neither.
        let needs_workspace =
            config.session_id.is_none() && (scoped || config.memory_scope.is_none());
        let workspace = needs_workspace.then(|| {
            let global = config
                .global_sessions
                .unwrap_or_else(global_sessions_requested);
            match &config.workspace_dir {
                Some(dir) => workspace_id_with(dir, global),
                None => match std::env::current_dir() {
                    Ok(dir) => workspace_id_with(&dir, global),
                    Err(_) => WorkspaceId::Global,
                },
            }
        });
        let history = match (&config.session_id, scoped) {
            (Some(id), _) => Some(SessionId::new(id.clone())?),
            (None, true) => workspace.as_ref().map(|ws| session_id(ws, name)),
            (None, false) => None,
        };
        let auto_save = config
            .auto_save
            .as_ref()
            .map(|name| SessionId::new(name.clone()))
            .transpose()?;
        Ok(Sessions {
            workspace,
            history,
            auto_save,
        })
    }
}

impl Agent {
    /// The agent named `name` (unnamed agents share the name `agent`) on `store`.
    ///
    /// With history on and no explicit session id, the workspace of
    /// [`config.workspace_dir`](AgentConfig::workspace_dir) (else the current directory) is
    /// resolved now, honouring [`global_sessions`](AgentConfig::global_sessions) (by default
    /// `AGENTMEM_GLOBAL_SESSIONS`). That reads the file system (git discovery and the
    /// root-commit walk) on the calling thread: in async code prefer
    /// [`from_config`](Self::from_config), which does it on tokio's blocking pool.
    /// `InvalidInput` when a session name in the config is not a valid [`SessionId`].
    pub fn new(
        config: AgentConfig, store: Arc<dyn AgentMemory>, name: Option<&str>,
    ) -> Result<Agent> {
        Agent::build(config, Memory::Store(store), name)
    }

    /// The agent named `name` on a store that implements only the [`ContextStore`] protocol,
    /// as a minimal custom backend does (PraisonAI's `AgentMemoryProtocol`).
    ///
    /// Before a turn the agent injects what [`get_context_in`](ContextStore::get_context_in)
    /// returns for the turn's last user message and the agent's
    /// [`memory_scope`](Self::memory_scope) (by default the store's
    /// [`get_context`](ContextStore::get_context); a full store passed here lists only the
    /// items visible from that scope); after it, [`after_turn`](Self::after_turn) saves the
    /// conversation (without system messages: the prompt is rebuilt every turn) through
    /// [`save_session`](ContextStore::save_session) under the
    /// [`history_session`](Self::history_session), and under the auto-save session when one is
    /// configured. The history session is the explicit `session_id` when one is configured,
    /// else workspace-scoped as with history on (resolved now, as [`new`](Self::new) does).
    /// A store that has only these two methods can neither read sessions back nor keep memory
    /// items: each save replaces the session with the conversation passed to `after_turn`,
    /// and [`store_memory`](Self::store_memory) is refused (`Unsupported`); such an agent has
    /// no full [`store`](Self::store).
    ///
    /// `Unsupported`, naming the features, when the config turns on what needs more than the
    /// protocol: `history` (loading the last messages of the session), `auto_memory` (facts
    /// kept as memory items) or `learn` (insights kept and counted as memory items).
    /// `InvalidInput` when a session name in the config is not a valid [`SessionId`].
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use agentmem_agent::{Agent, AgentConfig};
    /// use agentmem_core::{async_trait, ContextStore, ErrorKind, Message, Metadata, Result,
    ///     SessionId};
    ///
    /// /// Remembers one preference, and how many messages each save held.
    /// #[derive(Debug, Default)]
    /// struct Preferences {
    ///     saves: Mutex<Vec<usize>>,
    /// }
    ///
    /// #[async_trait]
    /// impl ContextStore for Preferences {
    ///     async fn get_context(&self, _query: Option<&str>) -> Result<String> {
    ///         Ok("User prefers Python".to_string())
    ///     }
    ///     async fn save_session(&self, _: &SessionId, h: &[Message], _: &Metadata) -> Result<()> {
    ///         self.saves.lock().unwrap().push(h.len());
    ///         Ok(())
    ///     }
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let store = Arc::new(Preferences::default());
    /// let config = AgentConfig::default().with_session_id("my_chat");
    /// let agent = Agent::with_context_store(config, store.clone(), Some("assistant"))?;
    ///
    /// let turn = vec![Message::user("Which language should I use?")];
    /// let context = agent.context_for_turn(&turn).await?;
    /// assert_eq!(context.system_prompt("Be helpful."), "Be helpful.\n\nUser prefers Python");
    /// let mut conversation = context.messages("Be helpful.", &turn);
    /// conversation.push(Message::assistant("Python."));
    /// agent.after_turn(&conversation).await?;
    /// assert_eq!(*store.saves.lock().unwrap(), [2]); // the user's message and the answer
    ///
    /// // History needs a store that can load sessions: refused, not ignored.
    /// let history = AgentConfig::default().with_history(true);
    /// let err = Agent::with_context_store(history, store, None).unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::Unsupported);
    /// # Ok::<(), agentmem_core::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn with_context_store(
        config: AgentConfig, store: Arc<dyn ContextStore>, name: Option<&str>,
    ) -> Result<Agent> {
        refuse_beyond_protocol(&config)?;
        Agent::build(config, Memory::Protocol(store), name)
    }

    /// [`new`](Self::new) and [`with_context_store`](Self::with_context_store): the history
    /// session of a protocol-only agent is resolved whether history is on or not.
    fn build(config: AgentConfig, memory: Memory, name: Option<&str>) -> Result<Agent> {
        config.validate()?;
        let name = name.filter(|a| !a.is_empty()).map(str::to_string);
        let scoped = config.history || matches!(memory, Memory::Protocol(_));
        let sessions = Sessions::resolve(&config, name.as_deref(), scoped)?;
        Ok(Agent::assemble(config, memory, name, sessions))
    }

    fn assemble(
        config: AgentConfig, memory: Memory, name: Option<String>, sessions: Sessions,
    ) -> Agent {
        let memory_scope = config.memory_scope.clone().unwrap_or_else(|| MemoryScope {
            agent: name.as_deref().map(scope_agent_name),
            workspace: sessions
                .workspace
                .as_ref()
                .and_then(WorkspaceId::scope_name),
            owner: config.owner.clone(),
        });
        let memory = match (memory, &config.retention) {
            (Memory::Store(store), Some(retention)) => {
                Memory::Store(Arc::new(RetainLayer::new(retention.clone()).layer(store)))
            }
            (memory, _) => memory,
        };
        Agent {
            config,
            memory,
            name,
            workspace: sessions.workspace,
            memory_scope,
            history_session: sessions.history,
            auto_save_session: sessions.auto_save,
            state: Mutex::new(State::default()),
            save_order: tokio::sync::Mutex::new(()),
            recall: None,
        }
    }

    /// Opens the configured store through `registry` and builds the agent named `name`;
    /// `Ok(None)` when nothing in `config` is on, without opening, creating or connecting to
    /// anything. Without a backend in the config the store is the file backend under the
    /// agentmem home (see [`StoreSpec::url`]), so `registry` must hold that backend.
    ///
    /// The workspace (see [`new`](Self::new)) is resolved on tokio's blocking pool while the
    /// store opens, never on the executor thread. The store is encrypted with
    /// [`AgentConfig::encryption_key`] when set (else with the key its URL names, if any; a
    /// registry with encryption refuses an encrypted store opened without a key).
    /// `Unsupported` when `registry` holds no backend for the store's URL; otherwise what
    /// opening the store returns.
    ///
    /// ```
    /// use agentmem_agent::{Agent, AgentConfig};
    /// use agentmem_core::backend::Registry;
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let registry = Registry::new(); // no backend: `agentmem::registry()` has them all
    /// let off = Agent::from_config(AgentConfig::default(), Some("assistant"), &registry).await?;
    /// assert!(off.is_none(), "nothing on: nothing opened");
    /// let config = AgentConfig::default().with_url("sqlite://agent.db").with_history(true);
    /// let err = Agent::from_config(config, None, &registry).await.unwrap_err();
    /// assert_eq!(err.kind(), agentmem_core::ErrorKind::Unsupported);
    /// # Ok::<(), agentmem_core::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn from_config(
        config: AgentConfig, name: Option<&str>, registry: &Registry,
    ) -> Result<Option<Agent>> {
        if !config.is_enabled() {
            return Ok(None);
        }
        config.validate()?;
        let name = name.filter(|a| !a.is_empty()).map(str::to_string);
        let url = config
            .backend
            .clone()
            .unwrap_or(StoreSpec::Kind(Backend::File))
            .url()?;
        let resolving = {
            let config = config.clone();
            let name = name.clone();
            tokio::task::spawn_blocking(move || {
                Sessions::resolve(&config, name.as_deref(), config.history)
            })
        };
        let opening = async {
            match &config.encryption_key {
                Some(key) => registry.open_with_key(&url, key).await,
                None => registry.open(&url).await,
            }
        };
        let (store, sessions) = tokio::join!(opening, resolving);
        let sessions = match sessions {
            Ok(sessions) => sessions?,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => {
                return Err(
                    Error::unavailable("resolving the workspace was cancelled").with_source(e)
                )
            }
        };
        Ok(Some(Agent::assemble(
            config,
            Memory::Store(store?),
            name,
            sessions,
        )))
    }

    /// The configuration.
    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    /// The agent with recall by meaning: the long-term notes of a turn's context are found by
    /// hybrid search (keyword and vector ranks fused) for the last user message instead of by
    /// keyword alone, so a note is found when the question words it differently. The vectors
    /// come from the recall's indexer (run [`Recall::spawn_indexer`] beside the agent); notes
    /// not embedded yet are still found by keyword.
    pub fn with_recall(mut self, recall: Recall) -> Self {
        self.recall = Some(recall);
        self
    }

    /// The store; `None` for an agent built [`with_context_store`](Self::with_context_store),
    /// whose store has only the seed protocol.
    pub fn store(&self) -> Option<&Arc<dyn AgentMemory>> {
        match &self.memory {
            Memory::Store(store) => Some(store),
            Memory::Protocol(_) => None,
        }
    }

    /// The full store, for `op`; `Unsupported` naming `op` for a protocol-only agent.
    pub(crate) fn full(&self, op: Operation) -> Result<&Arc<dyn AgentMemory>> {
        self.store().ok_or_else(|| refused(op))
    }

    /// The agent's name, when one was given.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The workspace the history session and the memory items are scoped by (`None` with an
    /// explicit session id, or with history off and a memory scope in the config).
    pub fn workspace(&self) -> Option<&WorkspaceId> {
        self.workspace.as_ref()
    }

    /// The scope of the memory items the agent stores (auto-memory facts, insights, notes) and
    /// of those its memory block reads (the items visible from it, see [`MemoryScope::sees`]):
    /// [`AgentConfig::memory_scope`] when set, else the agent's name, its workspace and
    /// [`AgentConfig::owner`].
    pub fn memory_scope(&self) -> &MemoryScope {
        &self.memory_scope
    }

    /// The session history is loaded from and kept in (`None` with history off and no
    /// explicit session id); for an agent built [`with_context_store`](Self::with_context_store),
    /// the session its conversation is saved as.
    pub fn history_session(&self) -> Option<&SessionId> {
        self.history_session.as_ref()
    }

    /// The auto-save session, when configured.
    pub fn auto_save_session(&self) -> Option<&SessionId> {
        self.auto_save_session.as_ref()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // The state is a cache of ids; a panic elsewhere cannot leave it inconsistent in a way
        // that matters more than losing it, so a poisoned lock is simply reused.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The context to inject before a turn whose messages so far are `turn`.
    ///
    /// `memory` holds the stored context for the last user message in `turn` (see [`Agent`]:
    /// the agent's sections of facts, insights and notes, or the store's `get_context_in` for
    /// the agent's scope with [`store_context`](AgentConfig::store_context) on). With history
    /// on, `history` holds the last `history_limit` messages of the history session (the
    /// store's limited load never starts with a tool result whose call was cut off), minus
    /// every message already in `turn`, by id or by role and content, so nothing is injected
    /// twice even if the caller passes the whole conversation.
    pub async fn context_for_turn(&self, turn: &[Message]) -> Result<TurnContext> {
        let query = turn
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .map(|m| m.content.as_str());
        let memory = self.stored_context(query).await?;
        let mut history = Vec::new();
        if self.config.history {
            if let Some(session) = &self.history_session {
                let loaded = self
                    .full(Operation::Load)?
                    .load(session, Some(self.config.history_limit))
                    .await?
                    .map(|s| s.messages)
                    .unwrap_or_default();
                {
                    // Messages read from the store were processed by the run that wrote them.
                    let mut state = self.state();
                    state.processed.extend(loaded.iter().map(|m| m.id.clone()));
                }
                history = without_duplicates(loaded, turn);
            }
        }
        Ok(TurnContext { memory, history })
    }

    /// `base` with the stored context for no query appended (see [`Agent`]): the store's
    /// `get_context_in` for no query and the agent's scope, or facts, insights and the newest
    /// notes.
    pub async fn system_prompt(&self, base: &str) -> Result<String> {
        Ok(join_prompt(base, &self.stored_context(None).await?))
    }

    /// The stored context for `query`, of the items visible from the agent's scope: the
    /// protocol store's `get_context_in`, the full store's with
    /// [`store_context`](AgentConfig::store_context) on, else the agent's memory block. A blank
    /// answer is no context.
    async fn stored_context(&self, query: Option<&str>) -> Result<String> {
        let context_store: &dyn ContextStore = match &self.memory {
            Memory::Protocol(store) => &**store,
            Memory::Store(store) if self.config.store_context => store,
            Memory::Store(_) => return self.memory_block(query).await,
        };
        // The items the memory block would read, and no others: never another agent's.
        let visible = ScopeFilter::VisibleFrom(self.memory_scope.clone());
        let text = context_store.get_context_in(query, &visible).await?;
        Ok(if text.trim().is_empty() {
            String::new()
        } else {
            text
        })
    }

    /// Stores `text` as a memory item of `kind` ([`MemoryKind::ShortTerm`] for the task at
    /// hand, expiring after [`short_term_ttl`](AgentConfig::short_term_ttl);
    /// [`MemoryKind::LongTerm`] to keep) in the agent's [`memory_scope`](Self::memory_scope);
    /// it appears in later contexts.
    /// `InvalidInput` when `text` is blank.
    pub async fn store_memory(&self, text: &str, kind: MemoryKind) -> Result<MemoryItem> {
        let text = text.trim();
        if text.is_empty() {
            return Err(Error::invalid_input("a memory needs some text"));
        }
        let item = MemoryItem::new(kind, text).in_scope(self.memory_scope.clone());
        self.full(Operation::PutMemory)?
            .put_memory(&self.with_ttl(item))
            .await
    }

    /// `item` expiring as the config says for its kind: after
    /// [`short_term_ttl`](AgentConfig::short_term_ttl) for short-term items, after
    /// [`memory_ttl`](AgentConfig::memory_ttl) for the others; unchanged when that is `None`.
    fn with_ttl(&self, item: MemoryItem) -> MemoryItem {
        let ttl = match item.kind {
            MemoryKind::ShortTerm => self.config.short_term_ttl,
            _ => self.config.memory_ttl,
        };
        match ttl {
            Some(ttl) => item.expiring_in(ttl),
            None => item,
        }
    }

    /// The items of `kind` the agent's memory block reads: those visible from its scope.
    fn visible(&self, kind: MemoryKind) -> MemoryFilter {
        MemoryFilter::kind(kind).visible_from(self.memory_scope.clone())
    }

    /// The stored context as a Markdown block; empty when nothing is stored.
    async fn memory_block(&self, query: Option<&str>) -> Result<String> {
        let facts = self
            .full(Operation::ListMemories)?
            .list_memories(&self.visible(MemoryKind::Fact).with_limit(FACTS_SHOWN))
            .await?;
        let mut insights: Vec<MemoryItem> = self
            .full(Operation::ListMemories)?
            .list_memories(&self.visible(MemoryKind::Insight))
            .await?
            .into_iter()
            .filter(|item| {
                insight_count(item) >= insight_category(item).map_or(1, InsightCategory::min_count)
            })
            .collect();
        // Most repeated first; the newest first among equals (the list is oldest first).
        insights.reverse();
        insights.sort_by_key(|item| std::cmp::Reverse(insight_count(item)));
        insights.truncate(INSIGHTS_SHOWN);

        // Long-term notes: those matching the query first, then the newest.
        let mut notes: Vec<MemoryItem> = Vec::new();
        if let Some(q) = query.map(str::trim).filter(|q| !q.is_empty()) {
            let filter = self.visible(MemoryKind::LongTerm).with_limit(NOTES_SHOWN);
            match &self.recall {
                Some(recall) => notes.extend(
                    recall
                        .search_memories(q, &filter, SearchMode::Hybrid)
                        .await?
                        .into_iter()
                        .map(|h| h.item),
                ),
                None => notes.extend(
                    self.full(Operation::SearchMemories)?
                        .search_memories(q, &filter)
                        .await?
                        .into_iter()
                        .map(|h| h.item),
                ),
            }
        }
        let newest = self
            .full(Operation::ListMemories)?
            .list_memories(&self.visible(MemoryKind::LongTerm).with_limit(NOTES_SHOWN))
            .await?;
        for item in newest.into_iter().rev() {
            if notes.len() >= NOTES_SHOWN {
                break;
            }
            if !notes.iter().any(|n| n.id == item.id) {
                notes.push(item);
            }
        }
        let short = self
            .full(Operation::ListMemories)?
            .list_memories(&self.visible(MemoryKind::ShortTerm).with_limit(NOTES_SHOWN))
            .await?;

        let mut block = String::new();
        let mut section = |title: &str, lines: Vec<String>| {
            if lines.is_empty() {
                return;
            }
            if !block.is_empty() {
                block.push('\n');
            }
            block.push_str(title);
            block.push('\n');
            for line in lines {
                block.push_str("- ");
                block.push_str(line.trim());
                block.push('\n');
            }
        };
        section(
            "Known about the user:",
            facts.iter().map(|f| f.text.clone()).collect(),
        );
        section(
            "Learned from past conversations:",
            insights.iter().map(describe_insight).collect(),
        );
        section(
            "Long-term memory:",
            notes.iter().map(|n| n.text.clone()).collect(),
        );
        section(
            "Current task memory:",
            short.iter().map(|n| n.text.clone()).collect(),
        );
        if block.is_empty() {
            return Ok(block);
        }
        Ok(format!("# Memory\n\n{}", block.trim_end()))
    }
}

/// The agent part of a memory scope for the agent `name`: the name itself when it is a valid
/// scope part, else `agent-` + a stable hash of it (agent names are free text).
fn scope_agent_name(name: &str) -> String {
    if MemoryScope::agent(name).validate().is_ok() {
        name.to_string()
    } else {
        format!("agent-{}", stable_hash(name))
    }
}

/// `Unsupported`, naming them, when `config` turns on features a [`ContextStore`] cannot serve.
fn refuse_beyond_protocol(config: &AgentConfig) -> Result<()> {
    let needs = [
        (
            config.history,
            "history (it loads the last messages of the history session)",
        ),
        (
            config.auto_memory,
            "auto_memory (it keeps facts as memory items)",
        ),
        (
            config.learn,
            "learn (it keeps and counts insights as memory items)",
        ),
        (
            config.retention.is_some(),
            "retention (it purges sessions and memory items)",
        ),
    ];
    let refused: Vec<&str> = needs
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, feature)| *feature)
        .collect();
    if refused.is_empty() {
        return Ok(());
    }
    Err(Error::unsupported(format!(
        "the agent config turns on {}, but the store implements only get_context and \
         save_session (ContextStore): turn it off, or give the agent a full store (Agent::new)",
        refused.join(" and ")
    )))
}

fn describe_insight(item: &MemoryItem) -> String {
    let count = insight_count(item);
    match insight_category(item) {
        Some(InsightCategory::Request) => format!("Recurring request ({count}×): {}", item.text),
        Some(InsightCategory::Correction) => format!("The user corrected you: {}", item.text),
        _ if count > 1 => format!("{} (said {count}×)", item.text),
        _ => item.text.clone(),
    }
}

/// `history` without the messages already in `turn` (by id, or by role and content), and
/// without tool results whose call was among the removed ones (so no orphan is left).
fn without_duplicates(history: Vec<Message>, turn: &[Message]) -> Vec<Message> {
    let ids: HashSet<&str> = turn.iter().map(|m| m.id.as_str()).collect();
    let pairs: HashSet<(&str, &str)> = turn
        .iter()
        .map(|m| (m.role.as_str(), m.content.as_str()))
        .collect();
    let mut calls: HashSet<String> = HashSet::new();
    let mut kept = Vec::with_capacity(history.len());
    for m in history {
        let duplicate =
            ids.contains(m.id.as_str()) || pairs.contains(&(m.role.as_str(), m.content.as_str()));
        if duplicate {
            continue;
        }
        if m.is_tool_result() {
            let call_kept = m.tool_call_id.as_ref().is_some_and(|id| calls.contains(id));
            if !call_kept {
                continue;
            }
        } else if let Some(id) = &m.tool_call_id {
            calls.insert(id.clone());
        }
        kept.push(m);
    }
    kept
}
