//! Compaction: archive plus replacement in one step (A6), archive listing and lookup.

use std::collections::HashSet;

use agentmem_core::{AgentMemory, ArchiveId, ErrorKind, Message};
use serde_json::json;

use super::{
    assert_kind, assert_no_archives, assert_no_session, assert_no_sessions, contents, load_some,
    metadata, must, numbered, pause, sid,
};

/// After `compact`, the new archive holds exactly the old messages, the session holds
/// exactly the replacement, the session's metadata and `created_at` are kept, and the
/// returned `ArchiveInfo` is what `list_archives` and `load_archive` report.
pub async fn compact_moves_messages_to_archive(store: &dyn AgentMemory) {
    let id = sid("compacted");
    let old = vec![
        Message::user("question"),
        Message::tool_call("c1", "search", "{}"),
        Message::tool_result("c1", "search", "found"),
        Message::assistant("answer"),
    ];
    let meta = metadata(json!({"agent": "ResearchAgent"}));
    must::save_session(store, &id, &old, &meta).await;
    let before = load_some(store, &id, None, "compact").await;
    let replacement = vec![Message::system(
        "[Compressed Memory Summary] asked and answered",
    )];
    let info = must::compact(store, &id, &replacement).await;
    assert_eq!(info.session, id, "ArchiveInfo names the session");
    assert_eq!(
        info.message_count, 4,
        "ArchiveInfo counts the archived messages"
    );
    let session = load_some(store, &id, None, "compact").await;
    assert_eq!(
        session.messages, replacement,
        "the session holds exactly the replacement"
    );
    assert_eq!(session.total_messages, 1);
    assert_eq!(
        session.metadata, meta,
        "compaction keeps the session's metadata"
    );
    assert_eq!(
        session.created_at, before.created_at,
        "compaction keeps created_at"
    );
    assert_eq!(
        must::list_archives(store, &id).await,
        std::slice::from_ref(&info),
        "list_archives reports the archive"
    );
    let archive = store
        .load_archive(&id, &info.id)
        .await
        .expect("load_archive");
    assert_eq!(archive.info, info, "load_archive reports the same info");
    assert_eq!(
        archive.messages, old,
        "the archive holds exactly the old messages"
    );
}

/// Compacting with an empty replacement leaves an existing, empty session.
pub async fn compact_with_empty_replacement_leaves_empty_session(store: &dyn AgentMemory) {
    let id = sid("emptied");
    must::append(store, &id, &numbered("m", 3)).await;
    let info = must::compact(store, &id, &[]).await;
    let session = load_some(store, &id, None, "empty replacement").await;
    assert!(
        session.messages.is_empty() && session.total_messages == 0,
        "the session is empty but exists"
    );
    assert_eq!(
        store
            .load_archive(&id, &info.id)
            .await
            .expect("load_archive")
            .messages
            .len(),
        3
    );
    must::append(store, &id, &numbered("next", 1)).await;
    assert_eq!(
        contents(
            &load_some(store, &id, None, "empty replacement")
                .await
                .messages
        ),
        ["next 0"]
    );
}

/// Archives are listed oldest first, each holding what the session held at its compaction.
pub async fn archives_are_listed_oldest_first(store: &dyn AgentMemory) {
    let id = sid("archived");
    let mut expected = Vec::new();
    for round in 0..3 {
        let msgs = numbered(&format!("round {round}"), round + 1);
        must::append(store, &id, &msgs).await;
        let info = must::compact(store, &id, &[]).await;
        expected.push((info, msgs));
        pause().await;
    }
    let listed = must::list_archives(store, &id).await;
    let infos: Vec<_> = expected.iter().map(|(info, _)| info.clone()).collect();
    assert_eq!(listed, infos, "archives must be listed oldest first");
    for window in listed.windows(2) {
        assert!(
            window[0].created_at <= window[1].created_at,
            "archive times must not go backwards"
        );
    }
    for (info, msgs) in &expected {
        let archive = store
            .load_archive(&id, &info.id)
            .await
            .expect("load_archive");
        assert_eq!(
            archive.messages, *msgs,
            "archive {} holds its round's messages",
            info.id
        );
    }
}

/// Twelve compactions in quick succession (most within one second) get twelve distinct ids,
/// all survive with their own messages, and are listed in the order they were made (so a
/// backend must not order `…_10` before `…_2` by comparing ids as strings).
pub async fn compactions_in_one_second_all_survive(store: &dyn AgentMemory) {
    const ROUNDS: usize = 12;
    let id = sid("rapid");
    let mut made = Vec::new();
    for round in 0..ROUNDS {
        let msg = Message::user(format!("round {round}"));
        must::append(store, &id, std::slice::from_ref(&msg)).await;
        made.push((must::compact(store, &id, &[]).await, msg));
    }
    let distinct: HashSet<&ArchiveId> = made.iter().map(|(info, _)| &info.id).collect();
    assert_eq!(
        distinct.len(),
        ROUNDS,
        "every compaction gets its own archive id"
    );
    // One naming rule everywhere: Swarms' `history_<second>` for the first archive of a
    // second, then `_2`, `_3`, … for the next ones within it.
    let mut in_second: Vec<(String, usize)> = Vec::new();
    for (info, _) in &made {
        let base = agentmem_core::support::archive_id_base(info.created_at);
        let k = match in_second.last_mut() {
            Some((b, k)) if *b == base => {
                *k += 1;
                *k
            }
            _ => {
                in_second.push((base.clone(), 0));
                0
            }
        };
        let expected = if k == 0 {
            base
        } else {
            format!("{base}_{}", k + 1)
        };
        assert_eq!(info.id.as_str(), expected, "archive {k} of its second");
    }
    let listed = must::list_archives(store, &id).await;
    let listed_rounds: Vec<String> = {
        let mut v = Vec::new();
        for info in &listed {
            let archive = store
                .load_archive(&id, &info.id)
                .await
                .expect("load_archive");
            v.push(contents(&archive.messages).join(","));
        }
        v
    };
    let expected: Vec<String> = (0..ROUNDS).map(|r| format!("round {r}")).collect();
    assert_eq!(
        listed_rounds, expected,
        "all archives survive, listed in the order they were made"
    );
}

/// `load_archive` of an unknown id is `NotFound`, for an existing and a missing session, and
/// an archive of one session cannot be loaded through another session.
pub async fn unknown_archive_is_not_found(store: &dyn AgentMemory) {
    let (a, b) = (sid("owner"), sid("other"));
    must::append(store, &a, &numbered("m", 1)).await;
    must::append(store, &b, &numbered("m", 1)).await;
    let info = must::compact(store, &a, &[]).await;
    let unknown = ArchiveId::new("history_1999-01-01_00-00-00").expect("valid archive id");
    assert_kind(
        store.load_archive(&a, &unknown).await,
        ErrorKind::NotFound,
        "load_archive of an unknown id",
    );
    assert_kind(
        store.load_archive(&sid("missing"), &unknown).await,
        ErrorKind::NotFound,
        "load_archive in a missing session",
    );
    assert_kind(
        store.load_archive(&b, &info.id).await,
        ErrorKind::NotFound,
        "load_archive of another session's archive",
    );
    assert_no_archives(store, &b, "a session never compacted").await;
    assert_no_archives(store, &sid("missing"), "a missing session").await;
}

/// `compact` of a missing session is `NotFound` and creates nothing.
pub async fn compact_missing_session_is_not_found(store: &dyn AgentMemory) {
    let id = sid("absent");
    assert_kind(
        store.compact(&id, &numbered("summary", 1)).await,
        ErrorKind::NotFound,
        "compact of a missing session",
    );
    assert_no_session(store, &id, "a failed compact must not create the session").await;
    assert_no_archives(store, &id, "a failed compact must not archive").await;
    assert_no_sessions(store, "a failed compact must not list a session").await;
}

/// `replace_archive` rewrites one archive's messages in place: the same id, place and creation
/// time, the new count, the messages exactly as given; the other archive and the session's
/// current messages are untouched. A missing archive or session is `NotFound`, changing nothing.
pub async fn replace_archive_rewrites_one_archive_in_place(store: &dyn AgentMemory) {
    let id = sid("rewritten_archives");
    let first = numbered("first", 3);
    let second = numbered("second", 2);
    must::append(store, &id, &first).await;
    let a1 = must::compact(store, &id, &second).await;
    pause().await;
    let a2 = must::compact(store, &id, &[Message::system("summary")]).await;
    let current = load_some(store, &id, None, "before").await.messages;

    // Same ids (as a re-encryption keeps them), other content and one more message.
    let mut replacement: Vec<Message> = first
        .iter()
        .map(|m| {
            let mut m = m.clone();
            m.content = format!("rewritten {}", m.content);
            m
        })
        .collect();
    replacement.push(Message::assistant("added"));
    let info = store
        .replace_archive(&id, &a1.id, &replacement)
        .await
        .unwrap_or_else(|e| panic!("replace_archive({id}, {}) failed: {e}", a1.id));
    assert_eq!(info.id, a1.id, "the archive keeps its id");
    assert_eq!(info.created_at, a1.created_at, "and its creation time");
    assert_eq!(info.message_count, 4, "the summary counts the new messages");
    let loaded = store.load_archive(&id, &a1.id).await.expect("load_archive");
    assert_eq!(
        loaded.messages, replacement,
        "the archive holds exactly the new messages"
    );
    assert_eq!(loaded.info, info);
    assert_eq!(
        must::list_archives(store, &id).await,
        vec![info.clone(), a2.clone()],
        "the archives keep their order"
    );
    let other = store.load_archive(&id, &a2.id).await.expect("load_archive");
    assert_eq!(other.messages, second, "the other archive is untouched");
    assert_eq!(load_some(store, &id, None, "after").await.messages, current);

    assert_kind(
        store
            .replace_archive(
                &id,
                &ArchiveId::new("history_1999-01-01_00-00-00").expect("id"),
                &[],
            )
            .await,
        ErrorKind::NotFound,
        "replace_archive of an unknown archive",
    );
    let missing = sid("no_archives_here");
    assert_kind(
        store.replace_archive(&missing, &a1.id, &[]).await,
        ErrorKind::NotFound,
        "replace_archive in a missing session",
    );
    assert_no_session(store, &missing, "a refused replace_archive creates nothing").await;
}
