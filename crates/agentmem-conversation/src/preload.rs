//! Preloading stored memory into a new conversation, within a token budget.

use agentmem_core::{Message, Role, Session};
use agentmem_formats::swarms::{render_block, render_header};
use chrono::{DateTime, Utc};

use crate::templates::{preload_text, SUMMARY_PREFIX};
use crate::tokens::TokenEncoding;

/// What a conversation preloaded from the store.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Preload {
    /// The text of the preload system message.
    pub text: String,
    /// How many stored messages with content are in it.
    pub kept: usize,
    /// How many were left out (the oldest, after a leading summary) to fit the budget.
    pub dropped: usize,
}

/// The blocks of `session` as `MEMORY.md` renders them; empty when no message has content
/// (nothing to remember).
pub(crate) fn memory_blocks(session: &Session) -> Vec<String> {
    session.messages.iter().filter_map(render_block).collect()
}

/// Whether the session starts with a compaction summary (then it is the foundation of the
/// memory, and preload keeps it whenever it fits).
fn starts_with_summary(session: &Session) -> bool {
    session
        .messages
        .iter()
        .find(|m| !m.content.trim().is_empty())
        .is_some_and(|m| m.role == Role::System && m.content.starts_with(SUMMARY_PREFIX))
}

/// The preload message for `session`: the Swarms preamble, then the session rendered as
/// `MEMORY.md` (the header with `memory_created`, then `blocks`), keeping only the newest
/// blocks that fit in `budget` tokens, whole message text included.
///
/// A compaction summary at the start of the session is kept first when it fits, and the
/// newest blocks fill the rest: dropping the summary in favour of the turns after it would
/// forget everything before the last compaction. `None` when there are no blocks or not
/// even one fits.
pub(crate) fn preload(
    session: &Session,
    blocks: &[String],
    memory_created: DateTime<Utc>,
    budget: usize,
    encoding: TokenEncoding,
) -> Option<Preload> {
    if blocks.is_empty() {
        return None;
    }
    let head = preload_text(&render_header(session.id.as_str(), memory_created));
    let pinned = usize::from(
        starts_with_summary(session) && encoding.count(&(head.clone() + &blocks[0])) <= budget,
    );
    let assemble =
        |start: usize| head.clone() + &blocks[..pinned].concat() + &blocks[start..].concat();
    let mut used = encoding.count(&assemble(blocks.len()));
    // Walk back from the newest block; per-block counts are nearly additive (blocks start
    // with `###` after a blank line, where BPE merges rarely cross), and the exact count of
    // the assembled text is checked below.
    let mut start = blocks.len();
    while start > pinned {
        let cost = encoding.count(&blocks[start - 1]);
        if used + cost > budget {
            break;
        }
        used += cost;
        start -= 1;
    }
    let mut text = assemble(start);
    while start < blocks.len() && encoding.count(&text) > budget {
        start += 1;
        text = assemble(start);
    }
    let kept = pinned + blocks.len() - start;
    if kept == 0 {
        tracing::warn!(
            session = session.id.as_str(),
            budget,
            "preload budget too small for even the newest memory block; nothing preloaded"
        );
        return None;
    }
    let dropped = blocks.len() - kept;
    if dropped > 0 {
        tracing::info!(
            session = session.id.as_str(),
            kept,
            dropped,
            budget,
            "preloaded memory cut to the newest blocks that fit the token budget"
        );
    }
    Some(Preload {
        text,
        kept,
        dropped,
    })
}

/// The system message that carries a preload.
pub(crate) fn preload_message(preload: &Preload) -> Message {
    Message::system(preload.text.clone())
}
