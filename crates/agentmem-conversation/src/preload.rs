//! Preloading stored memory into a new conversation, within a token budget, from a window of
//! the session's newest messages (never a whole load of a long session).

use std::sync::Arc;

use agentmem_core::{AgentMemory, Message, Result, Role, Session, SessionId};
use agentmem_formats::swarms::{render_block, render_header};
use chrono::{DateTime, Utc};

use crate::templates::{preload_text, SUMMARY_PREFIX};
use crate::tokens::TokenEncoding;

/// How many of the newest stored messages a build reads for its preload by default (see
/// [`ConversationBuilder::preload_window`](crate::ConversationBuilder::preload_window)).
pub const DEFAULT_PRELOAD_WINDOW: usize = 1_000;

/// What a conversation preloaded from the store.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Preload {
    /// The text of the preload system message.
    pub text: String,
    /// How many stored messages with content are in it.
    pub kept: usize,
    /// How many were left out (the oldest, after a leading summary) to fit the budget. The
    /// messages older than the window the build read are counted too, with content or not.
    pub dropped: usize,
}

/// The preload of `session` from the newest `window` messages of `store` and more, within
/// `budget` tokens: the window doubles while its blocks do not fill the budget, until it
/// holds the whole session. `None` when the session is missing or nothing fits.
///
/// The result is what preloading the whole session gives whenever the window read holds the
/// whole session. Beyond it the newest blocks are the same (the budget was filled within the
/// window), but a compaction summary at the session's start is pinned only when the window
/// reaches it: the start of a longer session is not read.
pub(crate) async fn load_preload(
    store: &Arc<dyn AgentMemory>, session: &SessionId, window: usize, budget: usize,
    encoding: TokenEncoding,
) -> Result<Option<Preload>> {
    let mut limit = window.max(1);
    let mut memory_created = None;
    loop {
        let Some(stored) = store.load(session, Some(limit)).await? else {
            return Ok(None);
        };
        let whole = u64::try_from(limit).map_or(true, |l| l >= stored.total_messages);
        let unread = usize::try_from(stored.total_messages)
            .unwrap_or(usize::MAX)
            .saturating_sub(stored.messages.len());
        let blocks = memory_blocks(&stored);
        if !blocks.is_empty() && memory_created.is_none() {
            // `MEMORY.md` restarts at each compaction, and its header says when: the last
            // archive's time, else the session's creation.
            memory_created = Some(
                store
                    .list_archives(session)
                    .await?
                    .last()
                    .map_or(stored.created_at, |a| a.created_at),
            );
        }
        let created = memory_created.unwrap_or(stored.created_at);
        let pin = whole && starts_with_summary(&stored);
        let (preloaded, filled) = preload(&stored, &blocks, pin, created, budget, encoding);
        if whole || filled {
            return Ok(preloaded.map(|p| Preload {
                dropped: p.dropped + unread,
                ..p
            }));
        }
        limit = limit.saturating_mul(2);
    }
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
/// blocks that fit in `budget` tokens, whole message text included; and whether the budget
/// was filled before the oldest block (then older blocks would change nothing).
///
/// With `pin` (the session starts with a compaction summary, `blocks[0]`), the summary is
/// kept first when it fits, and the newest blocks fill the rest: dropping the summary in
/// favour of the turns after it would forget everything before the last compaction. `None`
/// when there are no blocks or not even one fits.
pub(crate) fn preload(
    session: &Session, blocks: &[String], pin: bool, memory_created: DateTime<Utc>, budget: usize,
    encoding: TokenEncoding,
) -> (Option<Preload>, bool) {
    if blocks.is_empty() {
        return (None, false);
    }
    let head = preload_text(&render_header(session.id.as_str(), memory_created));
    let pinned = usize::from(pin && encoding.count(&(head.clone() + &blocks[0])) <= budget);
    let assemble =
        |start: usize| head.clone() + &blocks[..pinned].concat() + &blocks[start..].concat();
    let mut used = encoding.count(&assemble(blocks.len()));
    // Walk back from the newest block; per-block counts are nearly additive (blocks start
    // with `###` after a blank line, where BPE merges rarely cross), and the exact count of
    // the assembled text is checked below.
    let mut start = blocks.len();
    let mut filled = false;
    while start > pinned {
        let cost = encoding.count(&blocks[start - 1]);
        if used + cost > budget {
            filled = true;
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
        return (None, filled);
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
    let preloaded = Preload {
        text,
        kept,
        dropped,
    };
    (Some(preloaded), filled)
}

/// The system message that carries a preload.
pub(crate) fn preload_message(preload: &Preload) -> Message {
    Message::system(preload.text.clone())
}
