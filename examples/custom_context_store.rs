//! A custom memory backend with two methods, plugged into the agent layer.
//!
//! As with PraisonAI's `AgentMemoryProtocol`, a type with only `get_context` and `save_session`
//! ([`agentmem::ContextStore`]) is a memory backend: before each turn the agent injects what
//! `get_context` returns for the user's message, and after it saves the conversation through
//! `save_session`. Features that need more than those two methods (history loading,
//! auto-memory, learning) are refused when the agent is built, never silently ignored.
//!
//! ```text
//! cargo run --example custom_context_store
//! ```
//!
//! Runs offline (the "model" is a stand-in) and exits non-zero when the agent does not inject
//! the store's context or does not save the conversation through it.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agentmem::agent::{Agent, AgentConfig};
use agentmem::{async_trait, ContextStore, ErrorKind, Message, Metadata, Result, SessionId};

/// The user's own store: what it knows about the user, and the sessions the agent saved.
/// It implements nothing but the two methods of the protocol.
#[derive(Debug, Default)]
struct MyMemory {
    preferences: Vec<String>,
    sessions: Mutex<HashMap<SessionId, Vec<Message>>>,
}

impl MyMemory {
    fn sessions(&self) -> MutexGuard<'_, HashMap<SessionId, Vec<Message>>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The lowercase words of `text`.
fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

#[async_trait]
impl ContextStore for MyMemory {
    /// The preferences sharing a word with the query (all of them without a query).
    async fn get_context(&self, query: Option<&str>) -> Result<String> {
        let asked = query.map(words).unwrap_or_default();
        let lines: Vec<String> = self
            .preferences
            .iter()
            .filter(|p| asked.is_empty() || !words(p).is_disjoint(&asked))
            .map(|p| format!("- {p}"))
            .collect();
        if lines.is_empty() {
            return Ok(String::new());
        }
        Ok(format!("Known about the user:\n{}", lines.join("\n")))
    }

    /// Keeps the conversation as the session's whole content.
    async fn save_session(
        &self, session: &SessionId, history: &[Message], _metadata: &Metadata,
    ) -> Result<()> {
        self.sessions().insert(session.clone(), history.to_vec());
        Ok(())
    }
}

/// A stand-in for a model call: answers from the first preference in the system prompt.
fn fake_model(system_prompt: &str) -> String {
    match system_prompt.lines().find_map(|l| l.strip_prefix("- ")) {
        Some(preference) => format!("Going by what I know ({preference}): that one."),
        None => "I don't know your preferences yet.".to_string(),
    }
}

/// Fails the example (non-zero exit) unless `ok`.
fn check(ok: bool, what: &str) -> std::result::Result<(), String> {
    if ok {
        println!("ok: {what}");
        Ok(())
    } else {
        Err(format!("FAILED: {what}"))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let memory = Arc::new(MyMemory {
        preferences: vec![
            "Preferred language: Python".to_string(),
            "Preferred editor: Helix".to_string(),
        ],
        ..MyMemory::default()
    });
    let config = AgentConfig::default().with_session_id("my_chat");
    let agent = Agent::with_context_store(config, memory.clone(), Some("assistant"))?;

    let mut conversation: Vec<Message> = Vec::new();
    for (question, expected, other) in [
        ("Which language should I use?", "Python", "Helix"),
        ("And which editor?", "Helix", "Python"),
    ] {
        conversation.push(Message::user(question));
        // Before the turn: the store's get_context for the user's message.
        let context = agent.context_for_turn(&conversation).await?;
        let system = context.system_prompt("You are a helpful assistant.");
        let answer = fake_model(&system);
        println!("\n> {question}\n[system prompt]\n{system}\n< {answer}\n");
        check(
            system.contains(expected) && !system.contains(other),
            &format!("the prompt carries what get_context returned for {question:?}"),
        )?;
        conversation.push(Message::assistant(answer));
        // After the turn: the conversation so far, through save_session.
        let report = agent.after_turn(&conversation).await?;
        check(report.saved == 2, "the turn's two messages were saved")?;
    }

    let session: SessionId = "my_chat".parse()?;
    let saved = memory.sessions().get(&session).cloned().unwrap_or_default();
    println!("\nsaved session {session}:");
    for m in &saved {
        println!("  {}: {}", m.role, m.content);
    }
    check(
        saved == conversation,
        "save_session holds the whole conversation, in order",
    )?;

    // History injection needs a store that can load sessions: refused, not ignored.
    let history = AgentConfig::default().with_history(true);
    match Agent::with_context_store(history, memory.clone(), Some("assistant")) {
        Err(e) if e.kind() == ErrorKind::Unsupported => {
            println!("\nhistory refused: {e}");
        }
        other => return Err(format!("FAILED: history was not refused: {other:?}").into()),
    }
    Ok(())
}
