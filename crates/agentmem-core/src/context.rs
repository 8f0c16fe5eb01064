//! [`ContextStore`]: the two methods an agent layer needs from memory.

use std::fmt::Debug;

use async_trait::async_trait;

use crate::error::Result;
use crate::model::{Message, Metadata};
use crate::name::SessionId;
use crate::scope::ScopeFilter;
use crate::store::{AgentMemory, MemoryStore, SessionStore};
use crate::support;

/// What an agent layer needs from memory: the context to inject before a turn, and a place to
/// save the conversation after it.
///
/// This is the protocol a minimal custom backend implements, as with PraisonAI's
/// `AgentMemoryProtocol`: a type with only these two methods plugs into the agent layer
/// (`agentmem_agent::Agent::with_context_store`), which injects what
/// [`get_context`](Self::get_context) returns into the system prompt and saves the conversation
/// through [`save_session`](Self::save_session) after every turn.
///
/// Every [`AgentMemory`] is a `ContextStore` too, answering with its own `get_context` and
/// `save_session`: every store, `dyn AgentMemory` and `Arc<dyn AgentMemory>` can be used where a
/// `ContextStore` is wanted. (With both traits in scope, a call such as `store.get_context(..)`
/// on an `AgentMemory` is ambiguous for the compiler; name the trait:
/// `MemoryStore::get_context(&store, ..)`. Both give the same answer.)
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use agentmem_core::{async_trait, AgentMemory, MemoryStore, SessionStore, ContextStore, InMemoryStore, Message, Metadata,
///     Result, SessionId};
///
/// /// A custom store: a fixed preference as context, and every saved conversation kept.
/// #[derive(Debug, Default)]
/// struct Preferences {
///     saved: Mutex<Vec<(SessionId, Vec<Message>)>>,
/// }
///
/// #[async_trait]
/// impl ContextStore for Preferences {
///     async fn get_context(&self, _query: Option<&str>) -> Result<String> {
///         Ok("User prefers Python".to_string())
///     }
///
///     async fn save_session(
///         &self,
///         session: &SessionId,
///         history: &[Message],
///         _metadata: &Metadata,
///     ) -> Result<()> {
///         let mut saved = self.saved.lock().unwrap();
///         saved.push((session.clone(), history.to_vec()));
///         Ok(())
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let mine = Arc::new(Preferences::default());
/// let store: Arc<dyn ContextStore> = mine.clone();
/// assert_eq!(store.get_context(Some("which language?")).await?, "User prefers Python");
/// let chat: SessionId = "chat".parse()?;
/// store.save_session(&chat, &[Message::user("hi")], &Metadata::new()).await?;
/// assert_eq!(mine.saved.lock().unwrap()[0].1[0].content, "hi");
///
/// // Every AgentMemory is a ContextStore: its own get_context and save_session.
/// let full: Arc<dyn AgentMemory> = Arc::new(InMemoryStore::new());
/// let store: Arc<dyn ContextStore> = Arc::new(full.clone());
/// store.save_session(&chat, &[Message::user("hello")], &Metadata::new()).await?;
/// assert_eq!(full.load(&chat, None).await?.unwrap().messages.len(), 1);
/// assert_eq!(store.get_context(None).await?, "");
/// # Ok::<(), agentmem_core::Error>(())
/// # }).unwrap();
/// ```
#[async_trait]
pub trait ContextStore: Debug + Send + Sync + 'static {
    /// The stored context relevant to `query`, as text for the system prompt (an agent passes
    /// the turn's last user message, `None` when there is none); empty when there is nothing to
    /// add.
    async fn get_context(&self, query: Option<&str>) -> Result<String>;

    /// The stored context relevant to `query` among the memory items in `scope` only: what an
    /// agent layer injects for an agent in a [`MemoryScope`](crate::MemoryScope) (its items,
    /// its workspace's and the shared ones, with [`ScopeFilter::VisibleFrom`]), so one agent's
    /// context never shows another agent's items.
    ///
    /// By default [`get_context`](Self::get_context): a store of its own making keeps no scoped
    /// items, so its answer is the same for every scope. Every [`AgentMemory`] answers with
    /// [`support::memory_context_in`]: the items in `scope` matching `query`, else the most
    /// recent ones, as its provided [`MemoryStore::get_context`] lists them; for
    /// [`ScopeFilter::All`], its own `get_context`. (A store's override of `get_context` sees
    /// no scope, so it answers only for [`ScopeFilter::All`].)
    ///
    /// ```
    /// use agentmem_core::{ContextStore, InMemoryStore, MemoryItem, MemoryKind, MemoryScope,
    ///     MemoryStore, ScopeFilter};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let store = InMemoryStore::new();
    /// let bobs = MemoryItem::new(MemoryKind::Fact, "Bob's user is Bob");
    /// store.put_memory(&bobs.in_scope(MemoryScope::agent("bob"))).await?;
    /// let alice = ScopeFilter::VisibleFrom(MemoryScope::agent("alice"));
    /// assert_eq!(ContextStore::get_context_in(&store, None, &alice).await?, "");
    /// let everything = ContextStore::get_context_in(&store, None, &ScopeFilter::All).await?;
    /// assert_eq!(everything, "- Bob's user is Bob");
    /// # Ok::<(), agentmem_core::Error>(())
    /// # }).unwrap();
    /// ```
    async fn get_context_in(&self, query: Option<&str>, _scope: &ScopeFilter) -> Result<String> {
        self.get_context(query).await
    }

    /// Saves `history` with metadata `meta` as the whole session `id`: afterwards the session
    /// is exactly `history`. An agent calls it after every turn with the conversation so far.
    async fn save_session(
        &self, id: &SessionId, history: &[Message], meta: &Metadata,
    ) -> Result<()>;
}

/// Every store answers the protocol with its own
/// [`MemoryStore::get_context`] and [`SessionStore::save_session`], and a scoped context with
/// [`support::memory_context_in`].
#[async_trait]
impl<T: AgentMemory + ?Sized> ContextStore for T {
    async fn get_context(&self, query: Option<&str>) -> Result<String> {
        MemoryStore::get_context(self, query).await
    }

    async fn get_context_in(&self, query: Option<&str>, scope: &ScopeFilter) -> Result<String> {
        match scope {
            ScopeFilter::All => MemoryStore::get_context(self, query).await,
            _ => support::memory_context_in(self, query, scope).await,
        }
    }

    async fn save_session(&self, id: &SessionId, history: &[Message], m: &Metadata) -> Result<()> {
        SessionStore::save_session(self, id, history, m).await
    }
}
