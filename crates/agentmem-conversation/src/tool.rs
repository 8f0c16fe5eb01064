//! Memory search as a tool an agent can call.

use std::fmt::Write as _;
use std::sync::Arc;

use chrono::SecondsFormat;
use serde_json::{json, Value};

use agentmem_core::{
    AgentMemory, Error, MessageHit, MessageQuery, Result, SessionId, SessionStore,
};

use crate::conversation::Conversation;

/// The most results one call returns, whatever the model asks for.
const MAX_LIMIT: usize = 50;
/// Longest message text shown per result, in chars; longer text is cut with `…`.
const MAX_SHOWN_CHARS: usize = 1_000;

/// What a [`MemorySearchTool`] searches.
#[derive(Debug, Clone)]
enum Source {
    Conversation(Arc<Conversation>),
    Store {
        store: Arc<dyn AgentMemory>,
        session: Option<SessionId>,
    },
}

/// Exposes memory search as a tool: a name, a description, JSON-schema parameters, and an
/// async call that takes the model's arguments and returns text for the model to read.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use agentmem_conversation::{Conversation, MemorySearchTool};
/// use agentmem_core::Role;
/// let convo = Arc::new(Conversation::builder("Scout".parse()?).build().await?);
/// convo.add(Role::User, "The launch window opens on Friday.").await?;
/// let tool = MemorySearchTool::new(convo);
/// assert_eq!(tool.name(), "search_memory");
/// let text = tool.call(serde_json::json!({"query": "launch"})).await?;
/// assert!(text.contains("The launch window opens on Friday."));
/// # Ok::<(), agentmem_core::Error>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct MemorySearchTool {
    source: Source,
    default_limit: usize,
}

impl MemorySearchTool {
    /// The tool's name.
    pub const NAME: &'static str = "search_memory";

    /// Searches one conversation (see [`Conversation::search`]).
    pub fn new(conversation: Arc<Conversation>) -> Self {
        MemorySearchTool {
            source: Source::Conversation(conversation),
            default_limit: 5,
        }
    }

    /// Searches a store's messages directly: one session, or all when `session` is `None`.
    pub fn over_store(store: Arc<dyn AgentMemory>, session: Option<SessionId>) -> Self {
        MemorySearchTool {
            source: Source::Store { store, session },
            default_limit: 5,
        }
    }

    /// Sets how many results a call returns when the model gives no `limit` (5 by default).
    pub fn with_default_limit(mut self, limit: usize) -> Self {
        self.default_limit = limit.clamp(1, MAX_LIMIT);
        self
    }

    /// The tool's name: `search_memory`.
    pub fn name(&self) -> &'static str {
        Self::NAME
    }

    /// What the tool does, for the model.
    pub fn description(&self) -> &'static str {
        "Search this agent's memory of earlier conversation for messages containing any of \
         the given words; returns the best matches with their time and speaker."
    }

    /// The JSON schema of the arguments: `query` (required) and `limit`.
    pub fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "Words to look for in memory."
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_LIMIT,
                    "description": "How many results to return at most."
                }
            },
            "required": ["query"],
            "additionalProperties": false
        })
    }

    /// The tool as an OpenAI-compatible chat-completions tool definition.
    pub fn definition(&self) -> Value {
        json!({
            "type": "function",
            "function": {
                "name": self.name(),
                "description": self.description(),
                "parameters": self.parameters(),
            }
        })
    }

    /// Runs a search with the model's arguments: an object `{"query": …, "limit": …}`, or
    /// that object as a JSON string (as chat-completions APIs deliver arguments). Returns the
    /// results as numbered lines `[{time}] {role}: {text}`, or a sentence saying nothing
    /// matched. `InvalidInput` when the arguments are unusable.
    pub async fn call(&self, args: Value) -> Result<String> {
        let args = match args {
            Value::String(s) => serde_json::from_str(&s).map_err(|e| {
                Error::invalid_input(format!("{}: arguments are not a JSON object", Self::NAME))
                    .with_source(e)
            })?,
            other => other,
        };
        let query = args
            .get("query")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|q| !q.is_empty())
            .ok_or_else(|| {
                Error::invalid_input(format!(
                    "{}: `query` must be a non-empty string",
                    Self::NAME
                ))
            })?;
        let limit = match args.get("limit") {
            None | Some(Value::Null) => self.default_limit,
            Some(v) => v
                .as_u64()
                .filter(|&n| n >= 1)
                .map(|n| usize::try_from(n).unwrap_or(MAX_LIMIT).min(MAX_LIMIT))
                .ok_or_else(|| {
                    Error::invalid_input(format!(
                        "{}: `limit` must be an integer from 1 to {MAX_LIMIT}",
                        Self::NAME
                    ))
                })?,
        };
        let hits = match &self.source {
            Source::Conversation(c) => c.search(query, limit).await?,
            Source::Store { store, session } => {
                let scope = MessageQuery {
                    session: session.clone(),
                    limit,
                };
                store.search_messages(query, &scope).await?
            }
        };
        Ok(render_hits(query, &hits))
    }
}

fn render_hits(query: &str, hits: &[MessageHit]) -> String {
    if hits.is_empty() {
        return format!("No memory matches {query:?}.");
    }
    let mut out = format!("{} result(s) for {query:?}:", hits.len());
    for (i, hit) in hits.iter().enumerate() {
        let m = &hit.message;
        let mut text: String = m.content.chars().take(MAX_SHOWN_CHARS).collect();
        if text.len() < m.content.len() {
            text.push('…');
        }
        // Writing to a String cannot fail.
        let _ = write!(
            out,
            "\n{}. [{}] {}: {}",
            i + 1,
            m.timestamp.to_rfc3339_opts(SecondsFormat::Secs, true),
            m.role.display_name(),
            text
        );
    }
    out
}
