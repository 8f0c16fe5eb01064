//! The fixed texts Swarms puts in front of preloaded memory and compaction summaries, and the
//! prompt-string line format. They are byte-for-byte the Swarms ones, so prompts built by
//! agentmem read the same to a model as prompts built by Swarms.

use chrono::SecondsFormat;

use agentmem_core::Message;

/// What precedes the preloaded memory in its system message.
pub const PRELOAD_PREFIX: &str = "[Persistent Memory — MEMORY.md]\nThe following is this conversation's persistent memory from prior sessions. Use it to continue context coherently.\n\n";

/// What precedes a compaction summary in its system message.
pub const SUMMARY_PREFIX: &str = "[Compressed Memory Summary]\nThe following is a compressed summary of earlier conversation turns, replacing the raw transcript to stay within the context window.\n\n";

/// The text of the system message that carries a compaction summary.
///
/// ```
/// let text = agentmem_conversation::templates::summary_text("User prefers GCP.");
/// assert!(text.starts_with("[Compressed Memory Summary]\n"));
/// assert!(text.ends_with("window.\n\nUser prefers GCP."));
/// ```
pub fn summary_text(summary: &str) -> String {
    format!("{SUMMARY_PREFIX}{summary}")
}

/// The text of the system message that carries preloaded memory.
pub fn preload_text(memory_md: &str) -> String {
    format!("{PRELOAD_PREFIX}{memory_md}")
}

/// One message as a prompt-string line, as Swarms' `return_history_as_string` writes it:
/// `[{timestamp}] {role}: {content}`, the timestamp in RFC 3339 UTC with microseconds and the
/// role as `MEMORY.md` headings print it (`System`, `User`, `Assistant`, `Tool`, agent name).
pub fn prompt_line(message: &Message) -> String {
    format!(
        "[{}] {}: {}",
        message
            .timestamp
            .to_rfc3339_opts(SecondsFormat::Micros, true),
        message.role.display_name(),
        message.content
    )
}

/// What separates two [`prompt_line`]s in the prompt string: a blank line.
pub(crate) const PROMPT_SEPARATOR: &str = "\n\n";

/// The prompt string of `messages`: their [`prompt_line`]s joined by blank lines.
pub fn prompt_string<'a>(messages: impl IntoIterator<Item = &'a Message>) -> String {
    messages
        .into_iter()
        .map(prompt_line)
        .collect::<Vec<_>>()
        .join(PROMPT_SEPARATOR)
}
