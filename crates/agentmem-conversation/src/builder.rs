//! Building a [`Conversation`]: the agent, its static prompt, persistence and compression.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentmem_core::{AgentMemory, AgentName, Result, SessionStore};

use crate::compressor::Compressor;
use crate::conversation::Conversation;
use crate::tokens::{context_length_for_model, TokenEncoding, DEFAULT_CONTEXT_LENGTH};

/// The environment variable naming the workspace folder when none is configured.
pub const WORKSPACE_DIR_ENV: &str = "WORKSPACE_DIR";

/// The workspace folder when neither the builder nor `WORKSPACE_DIR` names one (relative to
/// the current directory), as Swarms'.
pub const DEFAULT_WORKSPACE_DIR: &str = "agent_workspace";

/// The workspace folder named by `WORKSPACE_DIR`, when set and not blank.
pub fn workspace_dir_from_env() -> Option<PathBuf> {
    std::env::var_os(WORKSPACE_DIR_ENV)
        .filter(|v| !v.to_string_lossy().trim().is_empty())
        .map(PathBuf::from)
}

/// The workspace folder of a conversation: `configured`, else `WORKSPACE_DIR`, else
/// [`DEFAULT_WORKSPACE_DIR`].
///
/// ```
/// use agentmem_conversation::resolve_workspace_dir;
/// assert_eq!(resolve_workspace_dir(Some("/srv/agents".into())), std::path::Path::new("/srv/agents"));
/// ```
pub fn resolve_workspace_dir(configured: Option<PathBuf>) -> PathBuf {
    configured
        .or_else(workspace_dir_from_env)
        .unwrap_or_else(|| Path::new(DEFAULT_WORKSPACE_DIR).to_path_buf())
}

/// Builds a [`Conversation`]; start with [`Conversation::builder`].
///
/// Persistence is off by default: without [`persistent(true)`](Self::persistent) the
/// store is never called, not even to preload.
#[must_use = "a builder does nothing until `build` is awaited"]
pub struct ConversationBuilder {
    pub(crate) agent: AgentName,
    pub(crate) system_prompt: Option<String>,
    pub(crate) rules: Option<String>,
    pub(crate) custom_rules_prompt: Option<String>,
    pub(crate) persistent: bool,
    pub(crate) store: Option<Arc<dyn AgentMemory>>,
    pub(crate) workspace_dir: Option<PathBuf>,
    pub(crate) memory_file: Option<PathBuf>,
    pub(crate) model_name: Option<String>,
    pub(crate) context_length: Option<usize>,
    pub(crate) encoding: Option<TokenEncoding>,
    pub(crate) compressor: Compressor,
    pub(crate) preload_token_budget: Option<usize>,
    pub(crate) preload_window: Option<usize>,
}

impl fmt::Debug for ConversationBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConversationBuilder")
            .field("agent", &self.agent)
            .field("persistent", &self.persistent)
            .field("store", &self.store.as_ref().map(|s| s.backend()))
            .field("workspace_dir", &self.workspace_dir)
            .field("model_name", &self.model_name)
            .field("context_length", &self.context_length)
            .finish_non_exhaustive()
    }
}

impl ConversationBuilder {
    pub(crate) fn new(agent: AgentName) -> Self {
        ConversationBuilder {
            agent,
            system_prompt: None,
            rules: None,
            custom_rules_prompt: None,
            persistent: false,
            store: None,
            workspace_dir: None,
            memory_file: None,
            model_name: None,
            context_length: None,
            encoding: None,
            compressor: Compressor::default(),
            preload_token_budget: None,
            preload_window: None,
        }
    }

    agentmem_core::setters! {
        /// The system prompt: the first message, a system message, never persisted.
        pub fn system_prompt(prompt: impl Into<String>) { self.system_prompt = Some(prompt.into()) }

        /// Rules: a user message after the system prompt, never persisted.
        pub fn rules(rules: impl Into<String>) { self.rules = Some(rules.into()) }

        /// A custom rules prompt: a user message after the rules, never persisted.
        pub fn custom_rules_prompt(prompt: impl Into<String>) {
            self.custom_rules_prompt = Some(prompt.into())
        }

        /// Whether memory is preloaded from and written through to the store; off by default.
        pub fn persistent(on: bool) { self.persistent = on }

        /// The store memory lives in (any backend); never called unless persistent. A persistent
        /// conversation without one opens the file backend in the
        /// [workspace folder](Self::workspace_dir) (feature `file`, on by default), so memory is
        /// `<workspace>/agents/<agent name>/MEMORY.md` as in Swarms.
        pub fn store(store: Arc<dyn AgentMemory>) { self.store = Some(store) }

        /// The workspace folder; when not set, `WORKSPACE_DIR` is read at build time, else
        /// [`DEFAULT_WORKSPACE_DIR`] is used ([`resolve_workspace_dir`]). A persistent
        /// conversation without a [store](Self::store) keeps its memory there; with one, the
        /// folder is only reported ([`Conversation::workspace_dir`]).
        pub fn workspace_dir(dir: impl Into<PathBuf>) { self.workspace_dir = Some(dir.into()) }

        /// The path of the active memory file, reported by [`Conversation::memory_path`] while
        /// persisting (for the file backend, `FileStore::memory_md_path(&session)`, which is the
        /// default when the conversation opens the workspace's file store itself).
        pub fn memory_file(path: impl Into<PathBuf>) { self.memory_file = Some(path.into()) }

        /// The model the conversation is for: sets the context length (unless
        /// [`context_length`](Self::context_length) is given) and the token encoding (unless
        /// [`token_encoding`](Self::token_encoding) is given).
        pub fn model_name(model: impl Into<String>) { self.model_name = Some(model.into()) }

        /// The context length in tokens, overriding the model's; 16,000 when neither is known.
        pub fn context_length(tokens: usize) { self.context_length = Some(tokens) }

        /// The encoding tokens are counted with, overriding the model's (`o200k_base` by default).
        pub fn token_encoding(encoding: TokenEncoding) { self.encoding = Some(encoding) }

        /// The context compressor; by default the extractive summarizer at threshold 0.9, on.
        pub fn compressor(compressor: Compressor) { self.compressor = compressor }

        /// The most tokens preloaded memory may take (the newest blocks that fit are kept); by
        /// default half the context length.
        pub fn preload_token_budget(tokens: usize) { self.preload_token_budget = Some(tokens) }

        /// How many of the newest stored messages the build reads for the preload, at least
        /// ([`DEFAULT_PRELOAD_WINDOW`](crate::DEFAULT_PRELOAD_WINDOW) by default): more,
        /// doubling, only while their blocks do not fill the
        /// [budget](Self::preload_token_budget), so a build costs the same on a session of any
        /// length. A session no longer than the window is preloaded as if read whole; in a
        /// longer one the newest blocks are the same, but a compaction summary at its start is
        /// kept first only if the window reaches it.
        pub fn preload_window(messages: usize) { self.preload_window = Some(messages) }
    }

    /// The context length this builder resolves to: the explicit one, else the model's,
    /// else 16,000.
    pub fn resolved_context_length(&self) -> usize {
        self.context_length
            .or_else(|| self.model_name.as_deref().map(context_length_for_model))
            .unwrap_or(DEFAULT_CONTEXT_LENGTH)
    }

    /// Builds the conversation: seeds the system prompt, rules and custom rules, and, when
    /// persistent, preloads the stored memory from the newest messages of the session (see
    /// [`preload_window`](Self::preload_window); usually one store read, never a whole load
    /// of a session longer than the window).
    ///
    /// Errors: `InvalidInput` with unusable compressor settings, or when persistent without a
    /// store and without feature `file`; the file store's error when the workspace folder
    /// cannot be opened; the store's error when the preload read fails.
    pub async fn build(mut self) -> Result<Conversation> {
        self.compressor.validate()?;
        let workspace = resolve_workspace_dir(self.workspace_dir.take());
        if self.persistent && self.store.is_none() {
            self.open_workspace_store(&workspace).await?;
        }
        Conversation::from_builder(self, workspace).await
    }

    /// Opens the file store in the workspace folder as the conversation's store.
    #[cfg(feature = "file")]
    async fn open_workspace_store(&mut self, workspace: &Path) -> Result<()> {
        let store =
            agentmem_file::FileStore::connect_with(agentmem_file::FileConfig::new(workspace))
                .await?;
        let session = agentmem_core::SessionId::from(self.agent.clone());
        self.memory_file
            .get_or_insert_with(|| store.memory_md_path(&session));
        self.store = Some(Arc::new(store));
        Ok(())
    }

    /// Without the file backend there is no store to open.
    #[cfg(not(feature = "file"))]
    async fn open_workspace_store(&mut self, _workspace: &Path) -> Result<()> {
        Err(agentmem_core::Error::invalid_input(format!(
            "agent {:?} is persistent but has no store: pass one with `.store(...)` \
             (or build with feature `file` to keep it in the workspace folder)",
            self.agent.as_str()
        )))
    }
}
