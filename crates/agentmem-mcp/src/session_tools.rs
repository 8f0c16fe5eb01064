//! agentmem's own tools: conversation sessions (`append_messages`, `load_session`,
//! `list_sessions`, `fork_session`, `rewind_session`) and memory items (`store_memory`,
//! `search_memory`, `get_context`). They read and write what the CLI and the libraries do:
//! the same session ids, and memory items of kind `long_term` (or `short_term`) in the scope
//! of the agent named, as the Python `store_memory(text, long_term, agent=…)` stores them.
//! `search_memory` searches by keyword, by meaning or both when the store URL names an
//! embedder (`mode`), and says how each hit was found.

use agentmem_core::{
    AgentMemory, ContextStore, Error, MemoryFilter, MemoryItem, MemoryKind, MemoryScope, Message,
    MessageId, Metadata, Result, Rewind, Role, ScopeFilter, SessionId,
};
use agentmem_recall::{MemoryRecall, Recall as Meaning, SearchMode};
use rmcp::model::{CallToolResult, JsonObject};
use serde::{Deserialize, Serialize};

use crate::args::{count, parse};
use crate::reply;

#[derive(Deserialize)]
struct NewMessage {
    role: String,
    content: String,
    tool_call_id: Option<String>,
    tool_name: Option<String>,
    metadata: Option<Metadata>,
}

#[derive(Deserialize)]
struct Append {
    session_id: String,
    messages: Vec<NewMessage>,
}

#[derive(Deserialize)]
struct Load {
    session_id: String,
    #[serde(default, deserialize_with = "count")]
    limit: Option<usize>,
}

#[derive(Deserialize)]
struct Remember {
    text: String,
    long_term: Option<bool>,
    agent: Option<String>,
    key: Option<String>,
}

#[derive(Deserialize)]
struct Recall {
    query: String,
    #[serde(default, deserialize_with = "count")]
    limit: Option<usize>,
    agent: Option<String>,
    mode: Option<String>,
}

#[derive(Deserialize)]
struct Context {
    query: Option<String>,
    agent: Option<String>,
}

#[derive(Deserialize)]
struct Fork {
    session_id: String,
    new_session_id: String,
    at_message_id: Option<String>,
}

#[derive(Deserialize)]
struct RewindArgs {
    session_id: String,
    #[serde(default, deserialize_with = "count")]
    last: Option<usize>,
    after_message_id: Option<String>,
}

/// What `append_messages` answers.
#[derive(Serialize)]
struct Appended<'a> {
    session_id: &'a SessionId,
    message_ids: Vec<&'a MessageId>,
}

/// What `load_session` answers.
#[derive(Serialize)]
struct Loaded<'a> {
    session_id: &'a SessionId,
    exists: bool,
    total_messages: u64,
    messages: &'a [Message],
}

/// What `rewind_session` answers.
#[derive(Serialize)]
struct Removed<'a> {
    session_id: &'a SessionId,
    removed: &'a [Message],
}

/// One hit of `search_memory`: the item, its score, and how it was found.
#[derive(Serialize)]
struct Found {
    item: MemoryItem,
    score: f64,
    /// `keyword`, `semantic` or `both`.
    found_by: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    keyword_rank: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    semantic_rank: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    similarity: Option<f32>,
}

impl From<MemoryRecall> for Found {
    fn from(hit: MemoryRecall) -> Self {
        Found {
            found_by: found_by(hit.keyword_rank, hit.semantic_rank),
            item: hit.item,
            score: hit.score,
            keyword_rank: hit.keyword_rank,
            semantic_rank: hit.semantic_rank,
            similarity: hit.similarity,
        }
    }
}

/// How a hit was found, from the rankings that placed it.
fn found_by(keyword: Option<usize>, semantic: Option<usize>) -> &'static str {
    match (keyword, semantic) {
        (Some(_), Some(_)) => "both",
        (None, Some(_)) => "semantic",
        _ => "keyword",
    }
}

/// Whether the tool `name` writes text the background indexer embeds.
pub(crate) fn adds_text(name: &str) -> bool {
    matches!(name, "store_memory" | "append_messages")
}

/// Runs agentmem's tool `name`; `None` when `name` is not one. `recall` is the store's recall
/// by meaning (`None`: the store names no embedder), for `search_memory`.
pub(crate) async fn call(
    store: &dyn AgentMemory, recall: Result<Option<Meaning>>, name: &str, args: JsonObject,
) -> Option<Result<CallToolResult>> {
    Some(match name {
        "append_messages" => append(store, parse(args)).await,
        "load_session" => load(store, parse(args)).await,
        "list_sessions" => list(store).await,
        "fork_session" => fork(store, parse(args)).await,
        "rewind_session" => rewind(store, parse(args)).await,
        "store_memory" => remember(store, parse(args)).await,
        "search_memory" => search(store, recall, parse(args)).await,
        "get_context" => context(store, parse(args)).await,
        _ => return None,
    })
}

fn session_id(id: &str) -> Result<SessionId> {
    id.parse()
}

fn message(given: NewMessage) -> Result<Message> {
    let mut message = Message::new(Role::parse(&given.role)?, given.content);
    message.tool_call_id = given.tool_call_id;
    message.tool_name = given.tool_name;
    message.metadata = given.metadata.unwrap_or_default();
    Ok(message)
}

async fn append(store: &dyn AgentMemory, args: Result<Append>) -> Result<CallToolResult> {
    let args = args?;
    let id = session_id(&args.session_id)?;
    let messages = args
        .messages
        .into_iter()
        .map(message)
        .collect::<Result<Vec<_>>>()?;
    store.append(&id, &messages).await?;
    let message_ids = messages.iter().map(|m| &m.id).collect();
    let appended = Appended {
        session_id: &id,
        message_ids,
    };
    Ok(reply::json(&appended, None))
}

async fn load(store: &dyn AgentMemory, args: Result<Load>) -> Result<CallToolResult> {
    let args = args?;
    let id = session_id(&args.session_id)?;
    let loaded = store.load(&id, args.limit).await?;
    let (total_messages, messages) = loaded
        .as_ref()
        .map(|s| (s.total_messages, s.messages.as_slice()))
        .unwrap_or_default();
    let shown = Loaded {
        session_id: &id,
        exists: loaded.is_some(),
        total_messages,
        messages,
    };
    Ok(reply::json(&shown, None))
}

async fn list(store: &dyn AgentMemory) -> Result<CallToolResult> {
    let mut sessions = store.list_sessions().await?;
    sessions.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(reply::json(&sessions, Some("sessions")))
}

async fn fork(store: &dyn AgentMemory, args: Result<Fork>) -> Result<CallToolResult> {
    let args = args?;
    let (source, target) = (
        session_id(&args.session_id)?,
        session_id(&args.new_session_id)?,
    );
    let at: Option<MessageId> = args.at_message_id.map(|id| id.parse()).transpose()?;
    let info = store.fork(&source, &target, at.as_ref()).await?;
    Ok(reply::json(&info, Some("session")))
}

async fn rewind(store: &dyn AgentMemory, args: Result<RewindArgs>) -> Result<CallToolResult> {
    let args = args?;
    let id = session_id(&args.session_id)?;
    let to = match (args.last, args.after_message_id) {
        (None, Some(after)) => Rewind::After(after.parse()?),
        (Some(last), None) => Rewind::Last(last),
        _ => {
            return Err(Error::invalid_input(
                "rewind_session needs exactly one of last and after_message_id",
            ))
        }
    };
    let removed = store.rewind(&id, &to).await?;
    let shown = Removed {
        session_id: &id,
        removed: &removed,
    };
    Ok(reply::json(&shown, None))
}

/// The scope of `agent`'s own items; the global scope without one.
fn scope_of(agent: Option<String>) -> MemoryScope {
    agent.map(MemoryScope::agent).unwrap_or_default()
}

/// What `agent` sees (its own items and the global ones); every item without one.
fn seen_by(agent: Option<String>) -> ScopeFilter {
    match agent {
        Some(agent) => ScopeFilter::VisibleFrom(MemoryScope::agent(agent)),
        None => ScopeFilter::All,
    }
}

async fn remember(store: &dyn AgentMemory, args: Result<Remember>) -> Result<CallToolResult> {
    let args = args?;
    let kind = match args.long_term {
        Some(false) => MemoryKind::ShortTerm,
        _ => MemoryKind::LongTerm,
    };
    let mut item = MemoryItem::new(kind, args.text).in_scope(scope_of(args.agent));
    item.key = args.key;
    let stored = store.put_memory(&item).await?;
    Ok(reply::json(&stored, Some("memory")))
}

/// `search_memory`: by keyword alone without an embedder; else in the mode asked for, hybrid
/// by default.
async fn search(
    store: &dyn AgentMemory, recall: Result<Option<Meaning>>, args: Result<Recall>,
) -> Result<CallToolResult> {
    let args = args?;
    let mut filter = MemoryFilter::default().with_scope(seen_by(args.agent));
    filter.limit = args.limit;
    let asked = args.mode.as_deref().map(str::parse).transpose()?;
    // An embedder that failed to build counts as named: the search then reports why.
    let mode = SearchMode::chosen(asked, !matches!(recall, Ok(None)));
    let found: Vec<Found> = if mode == SearchMode::Keyword {
        let hits = store.search_memories(&args.query, &filter).await?;
        hits.into_iter()
            .enumerate()
            .map(|(rank, hit)| Found {
                item: hit.item,
                score: hit.score,
                found_by: "keyword",
                keyword_rank: Some(rank + 1),
                semantic_rank: None,
                similarity: None,
            })
            .collect()
    } else {
        let recall = recall?.ok_or_else(|| {
            Error::invalid_input(format!(
                "search_memory mode {mode} needs an embedder: serve a store URL naming one \
                 (`embedder=local`, or `embedder=http&embed_url=…&embed_model=…`), or search \
                 with mode keyword"
            ))
        })?;
        let hits = recall.search_memories(&args.query, &filter, mode).await?;
        hits.into_iter().map(Found::from).collect()
    };
    Ok(reply::json(&found, Some("results")))
}

async fn context(store: &dyn AgentMemory, args: Result<Context>) -> Result<CallToolResult> {
    let args = args?;
    let scope = seen_by(args.agent);
    let text = ContextStore::get_context_in(store, args.query.as_deref(), &scope).await?;
    let structured = serde_json::Value::Object(serde_json::Map::from_iter([(
        "context".to_string(),
        serde_json::Value::String(text.clone()),
    )]));
    Ok(reply::with_text(text, structured))
}
