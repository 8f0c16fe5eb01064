//! What an [`Agent`](crate::Agent) injects before a turn.

use agentmem_core::{Message, Role};

/// The context to inject before a turn: stored memories for the system prompt and, with
/// history on, past messages.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnContext {
    /// The stored context for the system prompt, of the items visible from the agent's scope:
    /// the store's `get_context_in` answer, or its memories as a Markdown block (facts,
    /// insights, notes); empty when none (see [`Agent`](crate::Agent)).
    pub memory: String,
    /// Past messages of the history session, oldest first: at most the history limit, never
    /// beginning with a tool result cut from its call, and none already in the turn.
    pub history: Vec<Message>,
}

impl TurnContext {
    /// Whether there is nothing to inject.
    pub fn is_empty(&self) -> bool {
        self.memory.is_empty() && self.history.is_empty()
    }

    /// `base` followed by the memory block (after a blank line), or `base` alone.
    pub fn system_prompt(&self, base: &str) -> String {
        join_prompt(base, &self.memory)
    }

    /// The messages to send: one system message ([`system_prompt`](Self::system_prompt) of
    /// `base`), the history, then the turn's own messages (its system messages, if any, are
    /// left out: the one system prompt replaces them).
    pub fn messages(&self, base: &str, turn: &[Message]) -> Vec<Message> {
        let mut out = Vec::with_capacity(1 + self.history.len() + turn.len());
        out.push(Message::system(self.system_prompt(base)));
        out.extend(self.history.iter().cloned());
        out.extend(turn.iter().filter(|m| m.role != Role::System).cloned());
        out
    }
}

/// `base` and `block` separated by a blank line; either may be empty.
pub(crate) fn join_prompt(base: &str, block: &str) -> String {
    match (base.trim_end().is_empty(), block.is_empty()) {
        (_, true) => base.to_string(),
        (true, false) => block.to_string(),
        (false, false) => format!("{}\n\n{block}", base.trim_end()),
    }
}
