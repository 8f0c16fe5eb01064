//! Sessions: saving, missing and empty sessions, listing, deleting, and names.

use agentmem_core::{
    AgentMemory, AgentMemoryExt, ArchiveId, ErrorKind, Message, Metadata, SessionId,
};
use serde_json::json;

use super::{
    assert_kind, assert_no_archives, assert_no_session, assert_no_sessions, contents, first_listed,
    load_some, metadata, must, numbered, pause, sid,
};

/// A session that was never written loads as `None` under every limit (not an error), has
/// no archives, is not listed, and `AgentMemoryExt` reports it empty and absent.
pub async fn missing_session_loads_as_none(store: &dyn AgentMemory) {
    let id = sid("never_written");
    for limit in [None, Some(0), Some(5)] {
        assert!(
            store.load(&id, limit).await.expect("load").is_none(),
            "load({limit:?}) of a missing session must be None"
        );
    }
    assert!(store.messages(&id).await.expect("messages").is_empty());
    assert!(store
        .last_messages(&id, 3)
        .await
        .expect("last_messages")
        .is_empty());
    assert!(!store.session_exists(&id).await.expect("session_exists"));
    assert_no_archives(store, &id, "a missing session").await;
    assert_no_sessions(store, "an empty store").await;
}

/// `save_session` with no messages creates an empty session: it loads as `Some` with 0
/// messages (under a limit too), exists, and is listed with a count of 0.
pub async fn saving_empty_history_creates_empty_session(store: &dyn AgentMemory) {
    let id = sid("empty_saved");
    let meta = metadata(json!({"purpose": "placeholder"}));
    must::save_session(store, &id, &[], &meta).await;
    for limit in [None, Some(0), Some(10)] {
        let session = load_some(store, &id, limit, "empty session").await;
        assert!(
            session.messages.is_empty(),
            "an empty session has no messages"
        );
        assert_eq!(session.total_messages, 0);
        assert_eq!(
            session.metadata, meta,
            "metadata of an empty session is kept"
        );
    }
    assert!(store.session_exists(&id).await.expect("session_exists"));
    let listed = must::list_sessions(store).await;
    assert_eq!(listed.len(), 1, "the empty session is listed");
    assert_eq!(listed[0].message_count, 0);
}

/// Appending no messages does nothing: it creates no session, and leaves an existing one
/// unchanged, `updated_at` included.
pub async fn appending_nothing_changes_nothing(store: &dyn AgentMemory) {
    let id = sid("append_nothing");
    must::append(store, &id, &[]).await;
    assert_no_session(store, &id, "append([]) to a missing session").await;
    assert_no_sessions(store, "append([]) to a missing session").await;
    must::append(store, &id, &numbered("m", 2)).await;
    let before = load_some(store, &id, None, "append nothing").await;
    pause().await;
    must::append(store, &id, &[]).await;
    let after = load_some(store, &id, None, "append nothing").await;
    assert_eq!(
        after, before,
        "append([]) must leave the session exactly as it was"
    );
}

/// `save_session` replaces the messages and the metadata entirely (no merge of old keys),
/// keeps `created_at`, and does not move `updated_at` backwards.
pub async fn save_session_replaces_messages_and_metadata(store: &dyn AgentMemory) {
    let id = sid("replace");
    let first = numbered("first", 4);
    let meta1 = metadata(json!({"old": 1, "shared": "old"}));
    must::save_session(store, &id, &first, &meta1).await;
    let one = load_some(store, &id, None, "replace").await;
    pause().await;
    let second = vec![Message::system("summary"), Message::user("second")];
    let meta2 = metadata(json!({"new": 2, "shared": "new"}));
    must::save_session(store, &id, &second, &meta2).await;
    let two = load_some(store, &id, None, "replace").await;
    assert_eq!(
        two.messages, second,
        "save_session must replace all messages"
    );
    assert_eq!(
        two.metadata, meta2,
        "save_session must replace metadata, not merge it"
    );
    assert_eq!(two.total_messages, 2);
    assert_eq!(
        two.created_at, one.created_at,
        "save_session must keep created_at"
    );
    assert!(
        two.updated_at >= one.updated_at,
        "updated_at must not move backwards"
    );
    must::save_session(store, &id, &[], &Metadata::new()).await;
    let three = load_some(store, &id, None, "replace").await;
    assert!(
        three.messages.is_empty() && three.metadata.is_empty(),
        "saving empty history and metadata empties the session"
    );
}

/// `append` keeps the metadata set by `save_session`; a session created by `append` has
/// empty metadata.
pub async fn append_keeps_session_metadata(store: &dyn AgentMemory) {
    let id = sid("meta_kept");
    let meta = metadata(json!({"agent": "ResearchAgent"}));
    must::save_session(store, &id, &numbered("saved", 1), &meta).await;
    must::append(store, &id, &numbered("appended", 2)).await;
    let session = load_some(store, &id, None, "metadata kept").await;
    assert_eq!(
        session.metadata, meta,
        "append must not change session metadata"
    );
    assert_eq!(
        contents(&session.messages),
        ["saved 0", "appended 0", "appended 1"]
    );
    let fresh = sid("meta_fresh");
    must::append(store, &fresh, &numbered("m", 1)).await;
    assert!(load_some(store, &fresh, None, "fresh")
        .await
        .metadata
        .is_empty());
}

/// `list_sessions` is ordered by id in byte (code point) order, as Rust orders `str`
/// (so `B` < `a` < `é`; a database must not sort by a locale collation), with correct
/// message counts and `created_at <= updated_at`.
pub async fn list_sessions_ordered_by_id_with_counts(store: &dyn AgentMemory) {
    let names = [
        "b", "a", "B", "a.b", "a_b", "é", "Z", "a b", "a-b", "10", "9",
    ];
    for (i, name) in names.iter().enumerate() {
        must::append(store, &sid(name), &numbered(name, i + 1)).await;
    }
    let listed = must::list_sessions(store).await;
    let mut expected: Vec<&str> = names.to_vec();
    expected.sort_unstable();
    let got: Vec<&str> = listed.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(
        got, expected,
        "sessions must be listed in byte order of their ids"
    );
    for info in &listed {
        let i = names
            .iter()
            .position(|n| *n == info.id.as_str())
            .expect("known name");
        assert_eq!(
            info.message_count,
            i as u64 + 1,
            "message count of {}",
            info.id
        );
        assert!(
            info.created_at <= info.updated_at,
            "created_at <= updated_at for {}",
            info.id
        );
    }
}

/// `updated_at` moves forward on every append and on `save_session`, `created_at` stays,
/// and `load` and `list_sessions` report the same times.
pub async fn updated_at_moves_forward_on_writes(store: &dyn AgentMemory) {
    let id = sid("times");
    store.append(&id, &numbered("a", 1)).await.expect("append");
    let first = load_some(store, &id, Some(0), "times").await;
    pause().await;
    store.append(&id, &numbered("b", 1)).await.expect("append");
    let second = load_some(store, &id, Some(0), "times").await;
    assert_eq!(
        second.created_at, first.created_at,
        "append must keep created_at"
    );
    assert!(
        second.updated_at > first.updated_at,
        "append must move updated_at forward: {} then {}",
        first.updated_at,
        second.updated_at
    );
    pause().await;
    must::save_session(store, &id, &numbered("c", 1), &Metadata::new()).await;
    let third = load_some(store, &id, Some(0), "times").await;
    assert!(
        third.updated_at > second.updated_at,
        "save_session must move updated_at forward"
    );
    assert_eq!(
        third.created_at, first.created_at,
        "save_session must keep created_at"
    );
    let info = first_listed(store, "times").await;
    assert_eq!(
        (info.created_at, info.updated_at),
        (third.created_at, third.updated_at),
        "list and load agree"
    );
}

/// `delete_session` returns `true` once and then `false`; the session, its messages and its
/// archives are gone; other sessions (and their archives) are untouched; a session created
/// again under the same id starts empty, without the old archives.
pub async fn delete_session_removes_it_and_its_archives(store: &dyn AgentMemory) {
    let (a, b) = (sid("doomed"), sid("survivor"));
    for id in [&a, &b] {
        must::append(store, id, &numbered(id.as_str(), 3)).await;
        must::compact(store, id, &[Message::system("summary")]).await;
        must::append(store, id, &numbered("after", 1)).await;
    }
    let archive_a = must::list_archives(store, &a).await[0].id.clone();
    let b_before = load_some(store, &b, None, "delete").await;
    assert!(
        store.delete_session(&a).await.expect("delete"),
        "deleting an existing session returns true"
    );
    assert!(
        !store.delete_session(&a).await.expect("delete again"),
        "deleting it again returns false"
    );
    assert!(!store
        .delete_session(&sid("never_existed"))
        .await
        .expect("delete missing"));
    assert_no_session(store, &a, "a deleted session").await;
    assert_no_archives(store, &a, "archives are deleted with the session").await;
    assert_kind(
        store.load_archive(&a, &archive_a).await,
        ErrorKind::NotFound,
        "load_archive of a deleted session",
    );
    let listed: Vec<SessionId> = must::list_sessions(store)
        .await
        .into_iter()
        .map(|i| i.id)
        .collect();
    assert_eq!(
        listed,
        std::slice::from_ref(&b),
        "only the other session is listed"
    );
    assert_eq!(
        load_some(store, &b, None, "delete").await,
        b_before,
        "the other session is untouched"
    );
    assert_eq!(
        must::list_archives(store, &b).await.len(),
        1,
        "the other session keeps its archive"
    );
    must::append(store, &a, &numbered("reborn", 1)).await;
    assert_eq!(
        contents(&load_some(store, &a, None, "delete").await.messages),
        ["reborn 0"],
        "a re-created session starts empty"
    );
    assert_no_archives(store, &a, "old archives do not come back").await;
}

/// Distinct valid ids never collide, however similar (`a.b`, `a_b`, `a b`, `A.b`, `a-b`, …),
/// and the longest valid ids (128 bytes, ASCII or not) work.
pub async fn similar_names_do_not_collide(store: &dyn AgentMemory) {
    let long_ascii = "x".repeat(128);
    let long_unicode = "é".repeat(64);
    let names: Vec<&str> = vec![
        "a.b",
        "a_b",
        "a b",
        "A.b",
        "a-b",
        "a+b",
        "a@b",
        "ab",
        "A_B",
        "a.b.c",
        &long_ascii,
        &long_unicode,
        "エージェント",
    ];
    for name in &names {
        let message = Message::user(format!("content of {name}"));
        must::append(store, &sid(name), &[message]).await;
    }
    for name in &names {
        let session = load_some(store, &sid(name), None, "similar names").await;
        assert_eq!(
            contents(&session.messages),
            [format!("content of {name}")],
            "session {name:?} must hold only its own message"
        );
    }
    assert_eq!(
        must::list_sessions(store).await.len(),
        names.len(),
        "every id is a separate session"
    );
    must::compact(store, &sid("a_b"), &[]).await;
    assert_no_archives(
        store,
        &sid("a.b"),
        "archives do not leak between similar ids",
    )
    .await;
    assert!(store.delete_session(&sid("a.b")).await.expect("delete"));
    for name in names.iter().filter(|n| **n != "a.b") {
        assert!(
            store.load(&sid(name), None).await.expect("load").is_some(),
            "deleting a.b must not delete {name:?}"
        );
    }
}

/// Unsafe names are rejected by `SessionId::new` (and archive ids by `ArchiveId::new`) with
/// `InvalidInput`, whatever the backend: core validates once for all of them.
pub async fn invalid_names_are_rejected(store: &dyn AgentMemory) {
    let long = "x".repeat(10_000);
    for bad in [
        "../x", "..", "/abs", "a/b", "a\\b", "a\0b", "a\nb", "*", "key*", "a?", "[a]", "$x",
        "$where", ".hidden", "", " a", &long,
    ] {
        assert_kind(
            SessionId::new(bad),
            ErrorKind::InvalidInput,
            &format!(
                "SessionId::new({:?})",
                bad.chars().take(20).collect::<String>()
            ),
        );
        assert_kind(
            ArchiveId::new(bad),
            ErrorKind::InvalidInput,
            "ArchiveId::new of an unsafe name",
        );
    }
    assert_no_sessions(store, "nothing was written").await;
}
