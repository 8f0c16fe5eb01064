//! Order of appends and last-N windows that keep tool calls with their results (C7).

use agentmem_core::{history, AgentMemory, AgentMemoryExt, Message, SessionId};

use super::{contents, first_listed, load_some, must, numbered, sid};
use crate::tool_calls::{self, first_orphaned_result};

/// Sequential appends, one by one and in a batch, keep their order.
pub async fn append_preserves_order(store: &dyn AgentMemory) {
    let id = sid("ordered");
    let msgs = numbered("m", 20);
    for m in &msgs[..10] {
        store.append_one(&id, m.clone()).await.expect("append");
    }
    store.append(&id, &msgs[10..]).await.expect("batch append");
    assert_eq!(store.messages(&id).await.expect("load"), msgs);
}

/// A limit returns the last N messages, oldest first, with the session's total count.
pub async fn last_n_returns_the_tail(store: &dyn AgentMemory) {
    let id = sid("tail");
    let msgs = numbered("m", 10);
    store.append(&id, &msgs).await.expect("append");
    for n in [1usize, 3, 9, 10] {
        let session = load_some(store, &id, Some(n), "last n").await;
        assert_eq!(session.messages, msgs[10 - n..], "last {n}");
        assert_eq!(session.total_messages, 10, "total_messages under limit {n}");
    }
    assert_eq!(
        store.last_messages(&id, 2).await.expect("last_messages"),
        msgs[8..]
    );
}

/// A limit larger than the session returns the whole session.
pub async fn last_n_larger_than_session_returns_all(store: &dyn AgentMemory) {
    let id = sid("short");
    let msgs = numbered("m", 3);
    store.append(&id, &msgs).await.expect("append");
    for n in [4usize, 100, usize::MAX] {
        assert_eq!(
            load_some(store, &id, Some(n), "large limit").await.messages,
            msgs,
            "limit {n}"
        );
    }
}

/// A limit of 0 returns the session (metadata, times, total) with no messages.
pub async fn last_n_zero_returns_no_messages(store: &dyn AgentMemory) {
    let id = sid("zero");
    store.append(&id, &numbered("m", 4)).await.expect("append");
    let whole = load_some(store, &id, None, "limit 0").await;
    let session = load_some(store, &id, Some(0), "limit 0").await;
    assert!(
        session.messages.is_empty(),
        "limit 0 returns no messages, got {:?}",
        contents(&session.messages)
    );
    assert_eq!(session.total_messages, 4, "limit 0 still reports the total");
    assert_eq!(
        (session.created_at, session.updated_at),
        (whole.created_at, whole.updated_at)
    );
}

/// Appends `msgs` to session `id`, then checks the window of every limit: exactly
/// `history::tail(msgs, limit)` (all fields), never more than the limit, and no tool result
/// in it without its call before it.
async fn assert_windows_keep_tool_calls(store: &dyn AgentMemory, id: &SessionId, msgs: &[Message]) {
    must::append(store, id, msgs).await;
    for n in 0..=msgs.len() + 1 {
        let window = load_some(store, id, Some(n), "tool calls").await.messages;
        let expected = history::tail(msgs, n);
        assert_eq!(
            contents(&window),
            contents(expected),
            "window of the last {n} messages"
        );
        assert_eq!(
            window, expected,
            "window of the last {n} messages (all fields)"
        );
        assert!(
            window.len() <= n,
            "a window never holds more than the limit"
        );
        if let Some(j) = first_orphaned_result(&window) {
            panic!(
                "the last {n} hold the result {:?} without its call",
                window[j].content
            );
        }
    }
}

/// No window starts with a tool result whose call was cut off: for every limit, the window
/// is exactly `history::tail(messages, limit)` (results dropped with their call, so fewer
/// than `limit` may come back), including a call with two results and back-to-back calls.
pub async fn last_n_never_starts_with_orphaned_tool_result(store: &dyn AgentMemory) {
    let msgs = tool_calls::part(tool_calls::SEQUENTIAL);
    assert_windows_keep_tool_calls(store, &sid("tools"), &msgs).await;
}

/// Parallel tool calls (two calls, then their two results, as OpenAI and the PraisonAI
/// importer write them), interleaved ones and results without an id: for every limit the
/// window is exactly `history::tail`, and no tool result in it has lost its call, wherever
/// the edge falls.
pub async fn last_n_keeps_parallel_tool_calls_whole(store: &dyn AgentMemory) {
    let msgs = tool_calls::part(tool_calls::PARALLEL.start..tool_calls::INTERLEAVED.end);
    assert_windows_keep_tool_calls(store, &sid("parallel_tools"), &msgs).await;
    // The window: the last five would start at call_osaka and hold result_kyoto.
    let first = tool_calls::part(tool_calls::PARALLEL);
    let id = sid("parallel_tools_short");
    must::append(store, &id, &first).await;
    let window = load_some(store, &id, Some(5), "parallel tool calls")
        .await
        .messages;
    assert_eq!(contents(&window), contents(&first[5..]), "last 5 of 7");
}

/// `total_messages` counts the whole session under any limit, and after a compaction only
/// the messages now in the session (archived ones are not counted).
pub async fn total_messages_counts_the_whole_session(store: &dyn AgentMemory) {
    let id = sid("totals");
    store.append(&id, &numbered("m", 7)).await.expect("append");
    for limit in [None, Some(0), Some(2), Some(50)] {
        assert_eq!(
            load_some(store, &id, limit, "totals").await.total_messages,
            7,
            "limit {limit:?}"
        );
    }
    must::compact(store, &id, &numbered("summary", 2)).await;
    must::append(store, &id, &numbered("new", 1)).await;
    let session = load_some(store, &id, Some(1), "totals").await;
    assert_eq!(
        session.total_messages, 3,
        "after compaction only the replacement and new messages count"
    );
    assert_eq!(contents(&session.messages), ["new 0"]);
    assert_eq!(
        first_listed(store, "totals").await.message_count,
        3,
        "list_sessions counts like total_messages"
    );
}
