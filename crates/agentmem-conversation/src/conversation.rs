//! The conversation: in-memory history with write-through to any store, preload, compaction
//! and automatic compression.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use agentmem_core::search::rank;
use agentmem_core::{
    AgentMemory, AgentName, ArchiveInfo, ErrorKind, Message, MessageHit, MessageQuery, Result,
    Role, SessionId, SessionStore,
};

use crate::builder::ConversationBuilder;
use crate::compressor::Compressor;
use crate::history::{Counted, History};
use crate::preload::{load_preload, preload_message, Preload, DEFAULT_PRELOAD_WINDOW};
use crate::summarizer::SummaryRequest;
use crate::templates::{self, summary_text, SUMMARY_PREFIX};
use crate::tokens::{context_length_for_model, TokenEncoding};

/// How many of the newest stored messages are read to check whether a failed append landed
/// (a window, not one, so appends racing from other processes do not hide it).
const RECONCILE_WINDOW: usize = 16;

/// What a compaction did.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Compaction {
    /// The archive holding the transcript it replaced; `None` when nothing was stored yet
    /// (or the conversation is not persisting), so there was nothing to archive.
    pub archive: Option<ArchiveInfo>,
    /// The summary system message that now follows the system prompt and rules.
    pub summary: Message,
    /// Tokens in the prompt string before.
    pub tokens_before: usize,
    /// Tokens in the prompt string after.
    pub tokens_after: usize,
}

/// A Swarms-style conversation for one agent, over any [`AgentMemory`] store.
///
/// - Ephemeral by default: nothing touches the store.
/// - Persistent: the agent name is the session id; on build, the stored memory is preloaded as
///   one system message after the system prompt, rules and custom rules; every added
///   message is appended to the store at once; [`compact`](Self::compact) archives the
///   stored transcript and replaces it with a summary in one atomic store call.
///
/// All methods take `&self`: share it as `Arc<Conversation>` between tasks. Adds are
/// serialized by one async lock held across the store append, so the in-memory order is the
/// stored order.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use agentmem_conversation::Conversation;
/// use agentmem_core::{AgentMemory, MemoryStore, SessionStore, AgentMemoryExt, InMemoryStore, Role};
///
/// let store: Arc<dyn AgentMemory> = Arc::new(InMemoryStore::new());
/// let convo = Conversation::builder("ResearchAgent".parse()?)
///     .system_prompt("You are a research assistant.")
///     .persistent(true)
///     .store(store.clone())
///     .build()
///     .await?;
/// convo.add(Role::User, "Compare BigQuery and AlloyDB.").await?;
/// assert_eq!(convo.messages().len(), 2);
/// assert_eq!(store.messages(convo.session_id()).await?.len(), 1); // the prompt is not stored
/// # Ok::<(), agentmem_core::Error>(())
/// # }).unwrap();
/// ```
pub struct Conversation {
    agent: AgentName,
    session: SessionId,
    /// The store; `Some` only when the conversation was built persistent.
    store: Option<Arc<dyn AgentMemory>>,
    /// Cleared by `stop_persisting`.
    persisting: AtomicBool,
    /// System prompt, rules and custom rules: rebuilt after compaction, never stored.
    preamble: Vec<Message>,
    preloaded: Option<Preload>,
    /// The history, preamble included, with a running bound of its tokens. A std mutex, held
    /// only briefly and never across an await, so reads are synchronous.
    history: Mutex<History>,
    /// Serializes every write (add, compact, load) across its store call, so the in-memory
    /// order is the stored order and a compaction never interleaves with an add.
    writer: tokio::sync::Mutex<()>,
    context_length: usize,
    encoding: TokenEncoding,
    compressor: Compressor,
    workspace_dir: PathBuf,
    memory_file: Option<PathBuf>,
    /// How many times the whole history was rendered and tokenized (`token_count`).
    #[cfg(test)]
    exact_counts: std::sync::atomic::AtomicUsize,
}

impl std::fmt::Debug for Conversation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conversation")
            .field("agent", &self.agent)
            .field("store", &self.store.as_ref().map(|s| s.backend()))
            .field("persisting", &self.is_persisting())
            .field("messages", &self.lock_history().messages().len())
            .field("context_length", &self.context_length)
            .field("encoding", &self.encoding)
            .finish_non_exhaustive()
    }
}

impl Conversation {
    /// Starts building a conversation for `agent` (whose name is also the session id, as
    /// Swarms keys memory by agent name).
    pub fn builder(agent: AgentName) -> ConversationBuilder {
        ConversationBuilder::new(agent)
    }

    /// The conversation `b` describes, in the resolved `workspace_dir`.
    pub(crate) async fn from_builder(
        b: ConversationBuilder, workspace_dir: PathBuf,
    ) -> Result<Self> {
        let session = SessionId::from(b.agent.clone());
        let context_length = b.resolved_context_length();
        let encoding = b
            .encoding
            .or_else(|| b.model_name.as_deref().map(TokenEncoding::for_model))
            .unwrap_or_default();
        let mut preamble = Vec::new();
        if let Some(p) = b.system_prompt {
            preamble.push(Message::system(p));
        }
        if let Some(r) = b.rules {
            preamble.push(Message::user(r));
        }
        if let Some(r) = b.custom_rules_prompt {
            preamble.push(Message::user(r));
        }
        let store = if b.persistent { b.store } else { None };
        let mut history = preamble.clone();
        let mut preloaded = None;
        if let Some(store) = &store {
            let budget = b.preload_token_budget.unwrap_or(context_length / 2);
            let window = b.preload_window.unwrap_or(DEFAULT_PRELOAD_WINDOW);
            preloaded = load_preload(store, &session, window, budget, encoding).await?;
            if let Some(p) = &preloaded {
                history.push(preload_message(p));
            }
        }
        Ok(Conversation {
            agent: b.agent,
            session,
            store,
            persisting: AtomicBool::new(b.persistent),
            preamble,
            preloaded,
            history: Mutex::new(History::new(history, encoding)),
            writer: tokio::sync::Mutex::new(()),
            context_length,
            encoding,
            compressor: b.compressor,
            workspace_dir,
            memory_file: if b.persistent { b.memory_file } else { None },
            #[cfg(test)]
            exact_counts: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// The agent's name.
    pub fn agent_name(&self) -> &AgentName {
        &self.agent
    }

    /// The session the conversation is stored under: the agent name.
    pub fn session_id(&self) -> &SessionId {
        &self.session
    }

    /// The role the agent's own replies carry (`### {agent name} — …` in `MEMORY.md`).
    pub fn agent_role(&self) -> Role {
        Role::parse(self.agent.as_str()).unwrap_or(Role::Assistant)
    }

    /// The store, when the conversation was built persistent.
    pub fn store(&self) -> Option<&Arc<dyn AgentMemory>> {
        self.store.as_ref()
    }

    /// Whether added messages are written to the store now (persistent and not stopped).
    pub fn is_persisting(&self) -> bool {
        self.store.is_some() && self.persisting.load(Ordering::SeqCst)
    }

    /// The workspace folder: as configured, else `WORKSPACE_DIR` at build time, else
    /// [`DEFAULT_WORKSPACE_DIR`](crate::DEFAULT_WORKSPACE_DIR). A persistent conversation
    /// built without a store keeps its memory there, in `agents/<agent name>/MEMORY.md`.
    pub fn workspace_dir(&self) -> &Path {
        &self.workspace_dir
    }

    /// The context length in tokens.
    pub fn context_length(&self) -> usize {
        self.context_length
    }

    /// The encoding tokens are counted with.
    pub fn token_encoding(&self) -> TokenEncoding {
        self.encoding
    }

    /// The compressor.
    pub fn compressor(&self) -> &Compressor {
        &self.compressor
    }

    /// Replaces the compressor (Swarms lets an agent swap it after construction).
    pub fn set_compressor(&mut self, compressor: Compressor) -> Result<()> {
        compressor.validate()?;
        self.compressor = compressor;
        Ok(())
    }

    /// Sets the context length in tokens.
    pub fn set_context_length(&mut self, tokens: usize) {
        self.context_length = tokens;
    }

    /// Sets the context length and token encoding to `model`'s (see
    /// [`context_length_for_model`] and [`TokenEncoding::for_model`]).
    pub fn set_model(&mut self, model: &str) {
        self.context_length = context_length_for_model(model);
        self.encoding = TokenEncoding::for_model(model);
        self.history
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .recount(self.encoding);
    }

    /// What was preloaded from the store on build, if anything.
    pub fn preloaded(&self) -> Option<&Preload> {
        self.preloaded.as_ref()
    }

    /// How many messages the system prompt, rules and custom rules make (they start the
    /// history and are never stored).
    pub fn preamble_len(&self) -> usize {
        self.preamble.len()
    }

    /// Path of the active memory file: the one given to the builder's `memory_file`,
    /// while persisting; `None` when not persistent, after [`stop_persisting`](Self::stop_persisting),
    /// or when no path was given (backends without files).
    pub fn memory_path(&self) -> Option<PathBuf> {
        if self.is_persisting() {
            self.memory_file.clone()
        } else {
            None
        }
    }

    /// Stops writing to the store from now on; the in-memory history goes on and the
    /// stored memory is left as it is. Waits for a write in progress, so nothing is written
    /// after this returns.
    pub async fn stop_persisting(&self) {
        let _writer = self.writer.lock().await;
        self.persisting.store(false, Ordering::SeqCst);
    }

    fn lock_history(&self) -> MutexGuard<'_, History> {
        // No code panics while holding the lock, so poisoning cannot leave a torn history;
        // recover rather than propagate a panic.
        self.history
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn active_store(&self) -> Option<&Arc<dyn AgentMemory>> {
        self.store
            .as_ref()
            .filter(|_| self.persisting.load(Ordering::SeqCst))
    }

    /// Adds a message from `role`: to the store first when persisting, then to memory.
    /// The message is created (id, timestamp) under the write lock, so timestamps follow the
    /// history order. Returns the message as added.
    ///
    /// If the store fails, the error is returned, and memory follows the store: the message is
    /// added to memory only if the store holds it despite the error (checked by reading the
    /// session back). If the future is dropped while the store call runs, the message may be
    /// stored without being in memory.
    pub async fn add(&self, role: Role, content: impl Into<String>) -> Result<Message> {
        let content = content.into();
        let _writer = self.writer.lock().await;
        let message = Message::new(role, content);
        self.push_locked(message.clone()).await?;
        Ok(message)
    }

    /// Adds a reply from this agent, under its own name as the role.
    pub async fn add_agent_reply(&self, content: impl Into<String>) -> Result<Message> {
        self.add(self.agent_role(), content).await
    }

    /// Adds a message as given (id, timestamp, tool pairing, metadata kept); see
    /// [`add`](Self::add).
    pub async fn add_message(&self, message: Message) -> Result<()> {
        message.validate()?;
        let _writer = self.writer.lock().await;
        self.push_locked(message).await
    }

    async fn push_locked(&self, message: Message) -> Result<()> {
        // Counted before the store call, so the history's lock is never held while tokenizing.
        let counted = Counted::new(message, self.encoding);
        if let Some(store) = self.active_store() {
            let message = counted.message();
            if let Err(e) = store
                .append(&self.session, std::slice::from_ref(message))
                .await
            {
                // A failed write may still have landed (an acknowledgement lost on the way
                // back, an error after the commit): memory follows what the store holds.
                if self
                    .store_holds(store, &message.id, Some(RECONCILE_WINDOW))
                    .await
                {
                    self.lock_history().push(counted);
                }
                return Err(e);
            }
        }
        self.lock_history().push(counted);
        Ok(())
    }

    /// Whether the stored session holds message `id` (among its last `window` messages),
    /// after a write reported failure. `false` when that cannot be read either: then the
    /// write is taken as not done, as the error said.
    async fn store_holds(
        &self, store: &Arc<dyn AgentMemory>, id: &str, window: Option<usize>,
    ) -> bool {
        match store.load(&self.session, window).await {
            Ok(Some(session)) => session.messages.iter().any(|m| m.id == id),
            Ok(None) => false,
            Err(e) => {
                tracing::warn!(
                    agent = self.agent.as_str(),
                    error = %e,
                    "cannot check whether a failed write landed; taking it as not done"
                );
                false
            }
        }
    }

    /// The history as structured messages, preamble and preload included.
    pub fn messages(&self) -> Vec<Message> {
        self.lock_history().messages().to_vec()
    }

    /// How many messages the history holds.
    pub fn len(&self) -> usize {
        self.lock_history().messages().len()
    }

    /// Whether the history is empty (no system prompt, rules or messages).
    pub fn is_empty(&self) -> bool {
        self.lock_history().messages().is_empty()
    }

    /// The history as a prompt string: `[{timestamp}] {role}: {content}` per message,
    /// joined by blank lines, as Swarms' `return_history_as_string`.
    pub fn prompt_string(&self) -> String {
        templates::prompt_string(self.lock_history().messages())
    }

    /// Tokens in the prompt string: exact, so it renders and tokenizes the whole history.
    pub fn token_count(&self) -> usize {
        #[cfg(test)]
        self.exact_counts.fetch_add(1, Ordering::SeqCst);
        self.encoding.count(&self.prompt_string())
    }

    /// The content of the last message, `None` when the history is empty.
    pub fn last_content(&self) -> Option<String> {
        self.lock_history()
            .messages()
            .last()
            .map(|m| m.content.clone())
    }

    /// Replaces the whole in-memory history with `messages`, without storing them (loading
    /// an export, as Swarms' `load` does). Returns how many there are.
    pub(crate) async fn replace_history(&self, messages: Vec<Message>) -> usize {
        let _writer = self.writer.lock().await;
        let n = messages.len();
        let history = History::new(messages, self.encoding);
        *self.lock_history() = history;
        n
    }

    /// Compacts memory: the stored transcript moves to an archive and is replaced by one
    /// system message, `[Compressed Memory Summary]` and the Swarms preamble then `summary`,
    /// in one atomic store call; then the in-memory history becomes the system prompt, rules,
    /// custom rules and that summary.
    ///
    /// Backends make `compact` atomic, so on error the store is in its old state or its new
    /// one; the error is returned and memory follows the store (it takes the new state only
    /// if the summary is found stored). Not persisting, only memory is rebuilt.
    pub async fn compact(&self, summary: &str) -> Result<Compaction> {
        let _writer = self.writer.lock().await;
        self.compact_locked(summary, self.token_count()).await
    }

    /// Compacts; `tokens_before` is the exact [`token_count`](Self::token_count) of the
    /// history now (the caller holds the writer lock, so it cannot change meanwhile).
    async fn compact_locked(&self, summary: &str, tokens_before: usize) -> Result<Compaction> {
        let summary = Message::system(summary_text(summary));
        let archive = match self.active_store() {
            None => None,
            Some(store) => match self.store_compact(store, &summary).await {
                Ok(archive) => archive,
                Err(e) => {
                    // As for appends: if the compaction landed despite the error, memory
                    // takes the new state too. The summary's id is unique, so finding it
                    // in the stored session proves the compaction happened.
                    if self.store_holds(store, &summary.id, None).await {
                        self.rebuild_with(summary);
                    }
                    return Err(e);
                }
            },
        };
        self.rebuild_with(summary.clone());
        let tokens_after = self.token_count();
        tracing::info!(
            agent = self.agent.as_str(),
            tokens_before,
            tokens_after,
            archive = archive.as_ref().map(|a| a.id.as_str()),
            "conversation compacted"
        );
        Ok(Compaction {
            archive,
            summary,
            tokens_before,
            tokens_after,
        })
    }

    /// The store's side of a compaction: one atomic `compact`, or, when nothing was ever
    /// stored (nothing to archive), an append that starts the session with the summary.
    async fn store_compact(
        &self, store: &Arc<dyn AgentMemory>, summary: &Message,
    ) -> Result<Option<ArchiveInfo>> {
        match store
            .compact(&self.session, std::slice::from_ref(summary))
            .await
        {
            Ok(info) => Ok(Some(info)),
            Err(e) if e.kind() == ErrorKind::NotFound => {
                store
                    .append(&self.session, std::slice::from_ref(summary))
                    .await?;
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Memory after a compaction: system prompt, rules, custom rules, then the summary.
    fn rebuild_with(&self, summary: Message) {
        let mut messages = self.preamble.clone();
        messages.push(summary);
        let history = History::new(messages, self.encoding);
        *self.lock_history() = history;
    }

    /// Compacts when the prompt string has reached the compressor's threshold × context
    /// length; call it at the top of each agent loop iteration. `Ok(None)` when
    /// compression is off, the context length is 0, the prompt is under the threshold, or
    /// there is nothing to compress (only the preamble, or only a summary, after it).
    ///
    /// The check is cheap: the conversation keeps a running upper bound of the prompt's
    /// tokens, updated as the history changes, so under the threshold nothing is rendered or
    /// tokenized; only when that bound reaches it is the exact count taken, and the exact
    /// count decides, as [`token_count`](Self::token_count) would.
    ///
    /// The summarizer sees everything after the preamble, preload and earlier summaries
    /// included. If it fails, its error is returned and nothing changed. Adds wait while it
    /// runs, so none can slip between the summary and the compaction.
    pub async fn maybe_compress(&self) -> Result<Option<Compaction>> {
        if !self.compressor.enabled || self.context_length == 0 {
            return Ok(None);
        }
        let _writer = self.writer.lock().await;
        let trigger = self.compressor.trigger_tokens(self.context_length);
        // O(1): the running figure bounds the exact count from above (see `History`), so
        // under the trigger the exact count is too; only at or over it is the whole history
        // rendered and counted, and that exact count decides.
        if self.lock_history().tokens_bound() < trigger {
            return Ok(None);
        }
        let tokens = self.token_count();
        if tokens < trigger {
            return Ok(None);
        }
        let transcript: Vec<Message> =
            self.lock_history().messages()[self.preamble.len()..].to_vec();
        let only_summary = transcript.len() == 1
            && transcript[0].role == Role::System
            && transcript[0].content.starts_with(SUMMARY_PREFIX);
        if transcript.is_empty() || only_summary {
            tracing::warn!(
                agent = self.agent.as_str(),
                tokens,
                context_length = self.context_length,
                "prompt is over the compression threshold but holds nothing left to compress"
            );
            return Ok(None);
        }
        let request = SummaryRequest::new(
            transcript,
            self.compressor.summary_budget(self.context_length),
        )
        .with_temperature(self.compressor.temperature)
        .with_encoding(self.encoding);
        let summary = self.compressor.summarizer.summarize(&request).await?;
        self.compact_locked(&summary, tokens).await.map(Some)
    }

    /// Messages matching any word of `query`, best first: through the store's ranked
    /// search, scoped to this session, while persisting; otherwise BM25 over the in-memory
    /// history.
    pub async fn search(&self, query: &str, limit: usize) -> Result<Vec<MessageHit>> {
        if let Some(store) = self.active_store() {
            let scope = MessageQuery {
                session: Some(self.session.clone()),
                limit,
            };
            return store.search_messages(query, &scope).await;
        }
        let history = self.messages();
        Ok(
            rank(query, history.iter().map(|m| m.content.as_str()), limit)
                .into_iter()
                .map(|(i, score)| MessageHit {
                    session: self.session.clone(),
                    message: history[i].clone(),
                    score,
                })
                .collect(),
        )
    }

    /// Messages of the in-memory history whose content contains `keyword`, compared
    /// case-insensitively as an exact substring, oldest first. An empty keyword
    /// matches nothing.
    pub fn search_keyword(&self, keyword: &str) -> Vec<Message> {
        if keyword.is_empty() {
            return Vec::new();
        }
        let needle = keyword.to_lowercase();
        self.lock_history()
            .messages()
            .iter()
            .filter(|m| m.content.to_lowercase().contains(&needle))
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::summarizer::ExtractiveSummarizer;

    /// Builds an ephemeral conversation with the extractive summarizer at `threshold`.
    async fn conversation(context_length: usize, threshold: f64) -> Conversation {
        Conversation::builder("Counter".parse().unwrap())
            .system_prompt("You are terse.")
            .rules("Cite sources.")
            .context_length(context_length)
            .compressor(
                Compressor::new(Arc::new(ExtractiveSummarizer::new())).with_threshold(threshold),
            )
            .build()
            .await
            .unwrap()
    }

    /// Exact tokens of the prompt string, as the check counted them before (without
    /// touching the counter).
    fn exact(c: &Conversation) -> usize {
        c.encoding.count(&c.prompt_string())
    }

    /// The running figure (the lock is released before the caller locks again).
    fn bound(c: &Conversation) -> usize {
        c.lock_history().tokens_bound()
    }

    fn exact_counts(c: &Conversation) -> usize {
        c.exact_counts.load(Ordering::SeqCst)
    }

    #[tokio::test]
    async fn check_under_the_trigger_never_counts_the_history_and_fires_where_exact_does() {
        const CONTENTS: &[&str] = &[
            "Compare BigQuery and AlloyDB.",
            "",
            "Sure:\n- cost\n- latency\n\n",
            "trailing spaces   ",
            "東京の天気は晴れです。",
            "emoji 🎉",
            "ok",
            "[2025-01-01T00:00:00.000000Z] User: quoted line?",
            "numbers 1234567 and a paren)",
        ];
        let c = conversation(600, 0.9).await;
        let trigger = c.compressor.trigger_tokens(c.context_length);
        let (mut cheap_checks, mut compactions) = (0, 0);
        for (i, text) in CONTENTS.iter().cycle().take(300).enumerate() {
            let role = if i % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            };
            c.add(role, *text).await.unwrap();
            let exact_before = exact(&c);
            let figure = bound(&c);
            assert!(
                figure >= exact_before,
                "step {i}: {figure} < {exact_before}"
            );

            let counted = exact_counts(&c);
            let result = c.maybe_compress().await.unwrap();
            let counted = exact_counts(&c) - counted;
            if exact_before < trigger {
                // The decision an exact count makes: no compression.
                assert!(result.is_none(), "step {i}");
                if figure < trigger {
                    // O(1): the history was neither rendered nor tokenized.
                    assert_eq!(counted, 0, "step {i}");
                    cheap_checks += 1;
                } else {
                    assert_eq!(counted, 1, "step {i}: confirmed once");
                }
            } else {
                let done = result.unwrap_or_else(|| panic!("step {i}: no compression"));
                assert_eq!(done.tokens_before, exact_before, "step {i}");
                assert_eq!(done.tokens_after, exact(&c), "step {i}");
                // One exact count to confirm, one for the size after; none repeated.
                assert_eq!(counted, 2, "step {i}");
                compactions += 1;
            }
            // The figure is in step after every change.
            assert!(bound(&c) >= exact(&c), "step {i}");
        }
        assert!(compactions >= 2, "{compactions} compactions");
        assert!(cheap_checks > 200, "{cheap_checks} cheap checks");
    }

    #[tokio::test]
    async fn bound_over_the_trigger_is_confirmed_by_the_exact_count() {
        // Threshold 1: the trigger is the context length.
        let mut c = conversation(16_000, 1.0).await;
        // A line ending in a letter: the figure counts its separator, one token over.
        c.add(Role::User, "hello").await.unwrap();
        let exact_now = exact(&c);
        let figure = bound(&c);
        assert!(figure > exact_now, "{figure} vs {exact_now}");

        // The figure reaches the trigger, the exact count does not: counted once, no compaction.
        c.set_context_length(figure);
        let before = exact_counts(&c);
        assert!(c.maybe_compress().await.unwrap().is_none());
        assert_eq!(exact_counts(&c) - before, 1);

        // Under the trigger: not counted at all.
        c.set_context_length(figure + 1);
        let before = exact_counts(&c);
        assert!(c.maybe_compress().await.unwrap().is_none());
        assert_eq!(exact_counts(&c), before);

        // At the exact count: compacts, as before.
        c.set_context_length(exact_now);
        let done = c.maybe_compress().await.unwrap().unwrap();
        assert_eq!(done.tokens_before, exact_now);
    }

    #[tokio::test]
    async fn every_change_of_the_history_keeps_the_figure_in_step() {
        let mut c = conversation(16_000, 0.9).await;
        let fresh = |c: &Conversation| History::new(c.messages(), c.encoding).tokens_bound();
        assert_eq!(bound(&c), fresh(&c));
        c.add(Role::User, "Grüße aus München…").await.unwrap();
        c.add_message(Message::assistant("ok.\n")).await.unwrap();
        assert_eq!(bound(&c), fresh(&c));

        c.replace_history(vec![Message::user("a"), Message::user("")])
            .await;
        assert_eq!(bound(&c), fresh(&c));

        c.compact("all of it").await.unwrap();
        assert_eq!(c.messages().len(), c.preamble_len() + 1);
        assert_eq!(bound(&c), fresh(&c));

        c.set_model("gpt-4");
        assert_eq!(c.token_encoding(), TokenEncoding::Cl100kBase);
        assert_eq!(bound(&c), fresh(&c));
        assert!(bound(&c) >= exact(&c));
    }
}
