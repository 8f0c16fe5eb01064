//! Fork and rewind: copying a session's history up to a message into a new session, and
//! taking messages off a session's end; each one atomic step.

use agentmem_core::{AgentMemory, ErrorKind, Message, MessageQuery, Rewind, SessionPatch};
use serde_json::json;

use super::{
    assert_kind, assert_no_archives, assert_no_session, contents, ids, load_some, metadata, mid,
    must, numbered, sid,
};

/// A fork at a message holds exactly the messages up to and including it (ids, timestamps and
/// fields as written), the source's metadata and labels, and no archive or expiry; the source
/// is unchanged, and later writes to either do not reach the other.
pub async fn fork_copies_history_up_to_the_message(store: &dyn AgentMemory) {
    let (source, target) = (sid("fork_source"), sid("fork_target"));
    let meta = metadata(json!({"agent": "planner", "n": 1}));
    let history: Vec<Message> = numbered("turn", 5)
        .into_iter()
        .map(|m| m.with_metadata("k", json!("v")))
        .collect();
    must::save_session(store, &source, &history, &meta).await;
    must::update_session(
        store,
        &source,
        &SessionPatch::default().owner("ada").tag("p", "k"),
    )
    .await;
    must::compact(store, &source, &history).await;
    must::update_session(
        store,
        &source,
        &SessionPatch::default().expire_in(std::time::Duration::from_secs(3600)),
    )
    .await;

    let info = must::fork(store, &source, &target, Some(&history[2].id)).await;
    assert_eq!(info.id, target, "fork returns the new session's summary");
    assert_eq!(info.message_count, 3, "a fork at the 3rd message holds 3");
    assert_eq!(info.expires_at, None, "a fork does not copy the expiry");

    let forked = load_some(store, &target, None, "the fork").await;
    assert_eq!(
        forked.messages,
        history[..3],
        "the fork holds the first 3 messages exactly"
    );
    assert_eq!(
        forked.metadata, meta,
        "the fork carries the source's metadata"
    );
    assert_eq!(
        forked.labels.owner.as_deref(),
        Some("ada"),
        "the fork carries the labels"
    );
    assert_eq!(forked.labels.tags.get("p").map(String::as_str), Some("k"));
    assert_eq!(forked.total_messages, 3);
    assert_no_archives(store, &target, "a fork").await;

    let source_now = load_some(store, &source, None, "the fork's source").await;
    assert_eq!(source_now.messages, history, "the source is unchanged");
    assert!(
        source_now.expires_at.is_some(),
        "the source keeps its expiry"
    );

    must::append(store, &target, &[Message::user("only in the fork")]).await;
    must::append(store, &source, &[Message::user("only in the source")]).await;
    let forked = load_some(store, &target, None, "the fork").await;
    let source_now = load_some(store, &source, None, "the source").await;
    assert_eq!(contents(&forked.messages)[3], "only in the fork");
    assert_eq!(forked.messages.len(), 4);
    assert_eq!(contents(&source_now.messages)[5], "only in the source");
    assert_eq!(source_now.messages.len(), 6);
    let listed: Vec<_> = must::list_sessions(store).await;
    assert_eq!(listed.len(), 2, "both sessions are listed: {listed:?}");
}

/// A fork without a message copies the whole session; a fork of an empty session is empty.
pub async fn fork_without_message_copies_everything(store: &dyn AgentMemory) {
    let (source, target) = (sid("whole_source"), sid("whole_target"));
    let history = numbered("m", 4);
    must::append(store, &source, &history).await;
    let info = must::fork(store, &source, &target, None).await;
    assert_eq!(info.message_count, 4);
    assert_eq!(
        load_some(store, &target, None, "whole fork").await.messages,
        history
    );

    let (empty, empty_fork) = (sid("empty_source"), sid("empty_fork"));
    must::save_session(store, &empty, &[], &Default::default()).await;
    let info = must::fork(store, &empty, &empty_fork, None).await;
    assert_eq!(info.message_count, 0);
    let loaded = load_some(store, &empty_fork, None, "fork of an empty session").await;
    assert!(loaded.messages.is_empty());
}

/// A fork into an existing session is a `Conflict` that leaves it alone; from a missing
/// session, or at a message the source does not hold now (unknown, or archived), `NotFound`,
/// creating nothing.
pub async fn fork_refuses_existing_target_and_unknown_message(store: &dyn AgentMemory) {
    let (source, taken, fresh) = (sid("src"), sid("taken"), sid("fresh"));
    let old = numbered("old", 2);
    must::append(store, &source, &old).await;
    must::compact(store, &source, &[Message::system("summary")]).await;
    must::append(store, &source, &numbered("new", 2)).await;
    must::append(store, &taken, &[Message::user("mine")]).await;

    assert_kind(
        store.fork(&source, &taken, None).await,
        ErrorKind::Conflict,
        "fork into an existing session",
    );
    assert_eq!(
        contents(&load_some(store, &taken, None, "target").await.messages),
        ["mine"]
    );
    assert_kind(
        store.fork(&source, &source, None).await,
        ErrorKind::Conflict,
        "fork into itself",
    );

    assert_kind(
        store.fork(&sid("nothing"), &fresh, None).await,
        ErrorKind::NotFound,
        "fork of a missing session",
    );
    assert_kind(
        store
            .fork(&source, &fresh, Some(&mid("no-such-message")))
            .await,
        ErrorKind::NotFound,
        "fork at an unknown message",
    );
    assert_kind(
        store.fork(&source, &fresh, Some(&old[0].id)).await,
        ErrorKind::NotFound,
        "fork at an archived message",
    );
    assert_no_session(store, &fresh, "a refused fork creates nothing").await;
    assert_eq!(
        load_some(store, &source, None, "source")
            .await
            .messages
            .len(),
        3
    );
}

/// `rewind(Last(2))` on 5 messages removes and returns the last 2, oldest first, and leaves 3;
/// appends then follow the third, and a window reads the shorter session.
pub async fn rewind_last_removes_the_tail(store: &dyn AgentMemory) {
    let id = sid("rewind_last");
    let history = numbered("m", 5);
    must::append(store, &id, &history).await;
    let before = load_some(store, &id, Some(0), "before").await.updated_at;
    let removed = must::rewind(store, &id, &Rewind::Last(2)).await;
    assert_eq!(
        removed,
        history[3..],
        "rewind returns what it removed, oldest first"
    );
    let session = load_some(store, &id, None, "rewound").await;
    assert_eq!(session.messages, history[..3], "3 of 5 are left");
    assert_eq!(session.total_messages, 3);
    assert!(session.updated_at >= before, "updated_at never moves back");
    assert_eq!(must::list_sessions(store).await[0].message_count, 3);
    assert_eq!(
        ids(&load_some(store, &id, Some(2), "window").await.messages),
        ids(&history[1..3])
    );

    must::append(store, &id, &[Message::user("after")]).await;
    let session = load_some(store, &id, None, "appended").await;
    assert_eq!(contents(&session.messages), ["m 0", "m 1", "m 2", "after"]);
}

/// `rewind(After(id))` keeps that message and removes every later one; at the last message it
/// removes nothing; `Last(n)` beyond the length empties the session (which still exists);
/// `Last(0)` removes nothing.
pub async fn rewind_after_message_keeps_it(store: &dyn AgentMemory) {
    let id = sid("rewind_to");
    let history = numbered("m", 5);
    must::append(store, &id, &history).await;
    let removed = must::rewind(store, &id, &Rewind::After(history[1].id.clone())).await;
    assert_eq!(
        removed,
        history[2..],
        "everything after the 2nd message is removed"
    );
    assert_eq!(
        load_some(store, &id, None, "rewound").await.messages,
        history[..2]
    );

    let none = must::rewind(store, &id, &Rewind::After(history[1].id.clone())).await;
    assert!(
        none.is_empty(),
        "rewinding to the last message removes nothing: {none:?}"
    );
    let none = must::rewind(store, &id, &Rewind::Last(0)).await;
    assert!(none.is_empty(), "Last(0) removes nothing");

    let all = must::rewind(store, &id, &Rewind::Last(10)).await;
    assert_eq!(
        all,
        history[..2],
        "Last(n) beyond the length removes every message"
    );
    let session = load_some(store, &id, None, "emptied").await;
    assert!(session.messages.is_empty());
    assert_eq!(session.total_messages, 0);
}

/// Rewinding a missing session, or to a message it does not hold, is `NotFound` and removes
/// nothing (and creates nothing).
pub async fn rewind_refuses_missing_session_and_message(store: &dyn AgentMemory) {
    let missing = sid("rewind_missing");
    assert_kind(
        store.rewind(&missing, &Rewind::Last(1)).await,
        ErrorKind::NotFound,
        "rewind of a missing session",
    );
    assert_no_session(store, &missing, "a refused rewind creates nothing").await;
    let id = sid("rewind_unknown");
    must::append(store, &id, &numbered("m", 3)).await;
    assert_kind(
        store
            .rewind(&id, &Rewind::After(mid("no-such-message")))
            .await,
        ErrorKind::NotFound,
        "rewind to an unknown message",
    );
    assert_eq!(load_some(store, &id, None, "kept").await.messages.len(), 3);
}

/// Removed messages are gone for search too, and a rewound tool call takes nothing else with it.
pub async fn rewind_removes_messages_from_search(store: &dyn AgentMemory) {
    let id = sid("rewind_search");
    must::append(
        store,
        &id,
        &[
            Message::user("keep the walrus"),
            Message::assistant("forget the narwhal"),
        ],
    )
    .await;
    must::rewind(store, &id, &Rewind::Last(1)).await;
    let scope = MessageQuery::default();
    let hits = must::search_messages(store, "narwhal", &scope).await;
    assert!(hits.is_empty(), "a removed message is not found: {hits:?}");
    let hits = must::search_messages(store, "walrus", &scope).await;
    assert_eq!(hits.len(), 1, "the kept message is still found");
}
