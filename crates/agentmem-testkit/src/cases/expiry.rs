//! Session expiry: an expired session is gone for every reader at once, a write to its id
//! starts afresh, writes keep the expiry, and purge sweeps what the server did not.

use std::time::Duration;

use agentmem_core::{
    AgentMemory, ErrorKind, Message, MessageQuery, RetentionPolicy, Rewind, SessionId,
    SessionPatch, SessionQuery,
};
use chrono::Utc;

use super::{
    assert_kind, assert_no_archives, assert_no_session, assert_update_not_found, load_some, must,
    numbered, sid,
};

/// A moment already past (whole seconds, which every server's expiry keeps).
fn past() -> chrono::DateTime<Utc> {
    agentmem_core::now() - chrono::Duration::seconds(5)
}

/// Sets session `id` to have expired, not checking the answer: a server may expire the
/// session as the call returns, and say `NotFound`.
async fn expire(store: &dyn AgentMemory, id: &SessionId) {
    let _ = store
        .update_session(id, &SessionPatch::default().expire_at(past()))
        .await;
}

/// A session whose expiry has passed is gone for every reader: `load` gives `None`, listings,
/// lookups and searches leave it out, it has no archives, and `update_session`, `rewind`,
/// `compact` and a fork from it say `NotFound`. Other sessions are untouched.
pub async fn expired_session_is_gone_for_every_reader(store: &dyn AgentMemory) {
    let (gone, kept) = (sid("expired"), sid("alive"));
    let by_ada = SessionPatch::default().owner("ada");
    must::append(store, &gone, &[Message::user("ephemeral walrus")]).await;
    must::compact(store, &gone, &[Message::user("ephemeral summary")]).await;
    must::update_session(store, &gone, &by_ada).await;
    must::labelled_session(store, &kept, &[Message::user("lasting walrus")], &by_ada).await;

    let expiring = SessionPatch::default().expire_at(past());
    // The session may be gone as the call returns (the server expires it at once): both
    // answers are right.
    if let Err(e) = store.update_session(&gone, &expiring).await {
        assert_eq!(e.kind(), ErrorKind::NotFound, "expiring a session: {e}");
    }

    assert_no_session(store, &gone, "an expired session").await;
    assert_no_archives(store, &gone, "an expired session").await;
    let listed = must::list_sessions(store).await;
    assert_eq!(
        listed.len(),
        1,
        "list_sessions leaves the expired session out: {listed:?}"
    );
    assert_eq!(listed[0].id, kept);
    let found = must::find_sessions(store, &SessionQuery::default().owner("ada")).await;
    assert_eq!(
        found.sessions.len(),
        1,
        "find_sessions leaves it out: {found:?}"
    );
    let hits = must::search_messages(store, "walrus", &MessageQuery::default()).await;
    assert_eq!(hits.len(), 1, "search leaves its messages out: {hits:?}");
    assert_eq!(hits[0].session, kept);

    assert_update_not_found(store, &gone, "update of an expired session").await;
    assert_kind(
        store.rewind(&gone, &Rewind::Last(1)).await,
        ErrorKind::NotFound,
        "rewind of an expired session",
    );
    assert_kind(
        store.compact(&gone, &[]).await,
        ErrorKind::NotFound,
        "compact of an expired session",
    );
    assert_kind(
        store.fork(&gone, &sid("from_expired"), None).await,
        ErrorKind::NotFound,
        "fork of an expired session",
    );
    assert_no_session(store, &sid("from_expired"), "a refused fork").await;
}

/// A session given a time to live is there until it runs out and gone after.
pub async fn session_expires_after_its_time_to_live(store: &dyn AgentMemory) {
    let id = sid("short_lived");
    let ttl = SessionPatch::default().expire_in(Duration::from_secs(2));
    let info = must::labelled_session(store, &id, &numbered("m", 2), &ttl).await;
    let expires_at = info
        .expires_at
        .expect("update_session returns the expiry set");
    assert!(
        expires_at > agentmem_core::now(),
        "a TTL ahead expires ahead"
    );
    assert_eq!(
        load_some(store, &id, None, "before its expiry")
            .await
            .expires_at,
        Some(expires_at)
    );
    // Waits for the deadline itself (plus a margin for the server's clock), not a duration.
    while agentmem_core::now() < expires_at + chrono::Duration::milliseconds(300) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_no_session(store, &id, "a session past its time to live").await;
    assert!(must::list_sessions(store).await.is_empty());
}

/// A write to an expired session's id starts a new session: no old messages, archives, labels
/// or expiry.
pub async fn write_to_expired_session_starts_afresh(store: &dyn AgentMemory) {
    let (appended, saved) = (sid("expired_then_appended"), sid("expired_then_saved"));
    for id in [&appended, &saved] {
        must::append(store, id, &numbered("old", 3)).await;
        must::compact(store, id, &[Message::system("old summary")]).await;
        let patch = SessionPatch::default().owner("ada").tag("t", "1");
        must::update_session(store, id, &patch).await;
        expire(store, id).await;
    }
    must::append(store, &appended, &[Message::user("new")]).await;
    must::save_session(store, &saved, &[Message::user("new")], &Default::default()).await;
    for id in [&appended, &saved] {
        let session = load_some(store, id, None, "rewritten after expiry").await;
        assert_eq!(
            super::contents(&session.messages),
            ["new"],
            "{id}: only the new message"
        );
        assert!(session.labels.is_empty(), "{id}: no old labels");
        assert_eq!(session.expires_at, None, "{id}: no old expiry");
        assert_no_archives(store, id, "rewritten after expiry").await;
    }
}

/// Writes keep a session's expiry (it does not slide); it can be moved or cleared; a fork
/// into an expired session's id succeeds.
pub async fn writes_keep_the_expiry_and_it_can_be_cleared(store: &dyn AgentMemory) {
    let id = sid("keeps_expiry");
    let at = agentmem_core::now() + chrono::Duration::hours(1);
    let expiring = SessionPatch::default().expire_at(at);
    must::labelled_session(store, &id, &[Message::user("a")], &expiring).await;
    must::append(store, &id, &[Message::user("b")]).await;
    must::save_session(store, &id, &numbered("c", 2), &Default::default()).await;
    must::compact(store, &id, &[]).await;
    assert_eq!(
        load_some(store, &id, Some(0), "written").await.expires_at,
        Some(at),
        "writes keep the expiry exactly"
    );
    assert_eq!(must::list_sessions(store).await[0].expires_at, Some(at));
    let info = must::update_session(store, &id, &SessionPatch::default().persist()).await;
    assert_eq!(info.expires_at, None, "persist clears the expiry");
    assert_eq!(
        load_some(store, &id, Some(0), "persisted").await.expires_at,
        None
    );

    let (source, target) = (sid("fork_over_expired_source"), sid("fork_over_expired"));
    must::append(store, &source, &[Message::user("source")]).await;
    must::append(store, &target, &[Message::user("stale")]).await;
    expire(store, &target).await;
    must::fork(store, &source, &target, None).await;
    let forked = load_some(store, &target, None, "fork over an expired id").await;
    assert_eq!(super::contents(&forked.messages), ["source"]);
}

/// `purge` deletes expired sessions whatever the policy (where the server has not already),
/// and leaves live ones.
pub async fn purge_sweeps_expired_sessions(store: &dyn AgentMemory) {
    let (gone, kept) = (sid("swept"), sid("not_swept"));
    must::append(store, &gone, &[Message::user("x")]).await;
    must::append(store, &kept, &[Message::user("y")]).await;
    expire(store, &gone).await;
    let report = store
        .purge(&RetentionPolicy::default())
        .await
        .expect("purge");
    assert!(
        report.sessions_deleted <= 1,
        "only the expired session may be deleted: {report:?}"
    );
    if !store.capabilities().native_expiry {
        assert_eq!(
            report.sessions_deleted, 1,
            "purge sweeps the expired session"
        );
    }
    assert_no_session(store, &gone, "a swept session").await;
    assert_eq!(
        load_some(store, &kept, None, "live").await.messages.len(),
        1
    );
    let listed = must::list_sessions(store).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
}
