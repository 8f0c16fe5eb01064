//! Session labels (title, owner, tags) and lookup by them: filtered, paged by id with a cursor.

use agentmem_core::{
    AgentMemory, ErrorKind, Message, SessionId, SessionLabels, SessionPatch, SessionQuery,
};

use super::{
    assert_kind, assert_no_session, assert_update_not_found, load_some, must, numbered, pause, sid,
};

/// `update_session` sets and removes a title, an owner and tags; `load`, `list_sessions` and
/// the summary it returns all show them; a missing session is `NotFound`, not created.
pub async fn update_session_sets_and_removes_labels(store: &dyn AgentMemory) {
    let id = sid("labelled");
    let patch = SessionPatch::default()
        .title("Trip to Kyoto")
        .owner("ada")
        .tag("project", "kyoto")
        .tag("tier", "gold");
    let info = must::labelled_session(store, &id, &[Message::user("hi")], &patch).await;
    let expected = SessionLabels {
        title: Some("Trip to Kyoto".into()),
        owner: Some("ada".into()),
        tags: [("project", "kyoto"), ("tier", "gold")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    };
    assert_eq!(
        info.labels, expected,
        "update_session returns the labels set"
    );
    assert_eq!(info.message_count, 1);
    assert_eq!(
        load_some(store, &id, Some(0), "labelled").await.labels,
        expected
    );
    assert_eq!(must::list_sessions(store).await[0].labels, expected);

    let mut patch = SessionPatch::default()
        .untag("tier")
        .tag("project", "osaka");
    patch.title = Some(None);
    let info = must::update_session(store, &id, &patch).await;
    assert_eq!(info.labels.title, None, "the title is removed");
    assert_eq!(
        info.labels.owner.as_deref(),
        Some("ada"),
        "the owner is untouched"
    );
    assert_eq!(info.labels.tags.len(), 1);
    assert_eq!(info.labels.tags["project"], "osaka");
    assert_eq!(
        load_some(store, &id, None, "relabelled").await.labels,
        info.labels
    );

    let missing = sid("unlabelled");
    assert_update_not_found(store, &missing, "update_session of a missing session").await;
    assert_no_session(store, &missing, "a refused update creates nothing").await;
}

/// Labels survive appends, `save_session`, compaction and rewinds; deleting the session drops
/// them (a new session under the id starts bare).
pub async fn labels_survive_writes(store: &dyn AgentMemory) {
    let id = sid("kept_labels");
    let patch = SessionPatch::default().owner("bo").tag("a", "1");
    let info = must::labelled_session(store, &id, &numbered("m", 3), &patch).await;
    must::append(store, &id, &[Message::user("more")]).await;
    must::save_session(store, &id, &numbered("n", 2), &Default::default()).await;
    must::compact(store, &id, &[Message::system("summary")]).await;
    must::rewind(store, &id, &agentmem_core::Rewind::Last(1)).await;
    assert_eq!(
        load_some(store, &id, None, "written").await.labels,
        info.labels
    );
    store.delete_session(&id).await.expect("delete");
    must::append(store, &id, &[Message::user("again")]).await;
    assert!(load_some(store, &id, None, "recreated")
        .await
        .labels
        .is_empty());
}

/// Sessions whose labels hold characters that mean something to a backend (quotes, globs,
/// `$`, dots, `%`, non-ASCII) are stored and matched literally.
pub async fn hostile_labels_match_literally(store: &dyn AgentMemory) {
    let odd = sid("odd_labels");
    let plain = sid("plain_labels");
    must::append(store, &odd, &[Message::user("x")]).await;
    must::append(store, &plain, &[Message::user("y")]).await;
    let owner = "o'; DROP TABLE s; -- *?[a] $gt %_ 名前";
    let patch = SessionPatch::default()
        .owner(owner)
        .title("\"quoted\" {json} \\ back")
        .tag("$where", "1")
        .tag("a.b", "*")
        .tag("k:*", "v?");
    must::update_session(store, &odd, &patch).await;
    must::update_session(
        store,
        &plain,
        &SessionPatch::default().owner("o").tag("a", "b"),
    )
    .await;
    let loaded = load_some(store, &odd, Some(0), "odd").await;
    assert_eq!(loaded.labels.owner.as_deref(), Some(owner));
    assert_eq!(loaded.labels.tags.len(), 3);
    for query in [
        SessionQuery::default().owner(owner),
        SessionQuery::default().tag("$where", "1"),
        SessionQuery::default().tag("a.b", "*"),
        SessionQuery::default().tag("k:*", "v?"),
    ] {
        let page = must::find_sessions(store, &query).await;
        assert_eq!(
            ids_of(&page.sessions),
            ["odd_labels"],
            "{query:?} matches literally"
        );
    }
    for query in [
        SessionQuery::default().owner("*"),
        SessionQuery::default().owner("o%"),
        SessionQuery::default().tag("a", "*"),
        SessionQuery::default().tag("k:*", "v"),
    ] {
        let found = must::find_sessions(store, &query).await.sessions;
        assert!(found.is_empty(), "{query:?} is no pattern: {found:?}");
    }
}

fn ids_of(sessions: &[agentmem_core::SessionInfo]) -> Vec<&str> {
    sessions.iter().map(|s| s.id.as_str()).collect()
}

/// `find_sessions` lists exactly the sessions with the owner and every tag asked for, ordered
/// by id, with their labels; with no filter, every session.
pub async fn find_sessions_filters_by_owner_and_tags(store: &dyn AgentMemory) {
    for (name, owner, tags) in [
        ("s1", Some("ada"), vec![("project", "kyoto")]),
        ("s2", Some("ada"), vec![("project", "osaka")]),
        ("s3", Some("bo"), vec![("project", "kyoto"), ("lang", "ja")]),
        ("s4", None, vec![]),
        (
            "s5",
            Some("ada"),
            vec![("project", "kyoto"), ("lang", "ja")],
        ),
    ] {
        let id = sid(name);
        must::append(store, &id, &[Message::user(name)]).await;
        let mut patch = SessionPatch::default();
        if let Some(owner) = owner {
            patch = patch.owner(owner);
        }
        for (k, v) in tags {
            patch = patch.tag(k, v);
        }
        if !patch.is_empty() {
            must::update_session(store, &id, &patch).await;
        }
    }
    let find = |query: SessionQuery| async move {
        let page = must::find_sessions(store, &query).await;
        assert_eq!(page.next, None, "{query:?}: one page holds every match");
        ids_of(&page.sessions)
            .into_iter()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        find(SessionQuery::default().owner("ada")).await,
        ["s1", "s2", "s5"]
    );
    assert_eq!(
        find(SessionQuery::default().tag("project", "kyoto")).await,
        ["s1", "s3", "s5"]
    );
    assert_eq!(
        find(
            SessionQuery::default()
                .tag("project", "kyoto")
                .tag("lang", "ja")
        )
        .await,
        ["s3", "s5"]
    );
    assert_eq!(
        find(SessionQuery::default().owner("ada").tag("lang", "ja")).await,
        ["s5"]
    );
    assert!(find(SessionQuery::default().owner("nobody"))
        .await
        .is_empty());
    assert!(find(SessionQuery::default().tag("project", "nara"))
        .await
        .is_empty());
    assert_eq!(
        find(SessionQuery::default()).await,
        ["s1", "s2", "s3", "s4", "s5"]
    );
    let page = must::find_sessions(store, &SessionQuery::default().owner("bo")).await;
    assert_eq!(
        page.sessions[0].labels.tags.len(),
        2,
        "listed with its labels"
    );
    assert_eq!(page.sessions[0].message_count, 1, "listed with its count");
}

/// Pages of `limit` sessions follow each other through the cursor, in id order, without
/// repeating or skipping one; the last page has no cursor.
pub async fn find_sessions_pages_with_a_cursor(store: &dyn AgentMemory) {
    let mut all = Vec::new();
    for i in 0..7 {
        let id: SessionId = sid(&format!("page_{i:02}"));
        must::append(store, &id, &[Message::user("x")]).await;
        if i % 2 == 0 {
            must::update_session(store, &id, &SessionPatch::default().tag("even", "yes")).await;
        }
        all.push(id);
    }
    let mut seen = Vec::new();
    let mut query = SessionQuery::default().limit(3);
    let mut pages = 0;
    loop {
        let page = must::find_sessions(store, &query).await;
        pages += 1;
        assert!(page.sessions.len() <= 3, "a page holds at most the limit");
        seen.extend(page.sessions.iter().map(|s| s.id.clone()));
        match page.next {
            Some(next) => query = query.after(next),
            None => break,
        }
        assert!(pages < 10, "the cursor must end");
    }
    assert_eq!(seen, all, "the pages hold every session once, in id order");
    assert_eq!(pages, 3, "7 sessions in pages of 3 take 3 pages");

    let first =
        must::find_sessions(store, &SessionQuery::default().tag("even", "yes").limit(2)).await;
    assert_eq!(ids_of(&first.sessions), ["page_00", "page_02"]);
    let next = first.next.expect("a second page of tagged sessions");
    let second = SessionQuery::default()
        .tag("even", "yes")
        .limit(2)
        .after(next);
    let second = must::find_sessions(store, &second).await;
    assert_eq!(ids_of(&second.sessions), ["page_04", "page_06"]);
}

/// `updated_since` keeps sessions written at or after a time, `updated_before` those last
/// written before it.
pub async fn find_sessions_filters_by_update_time(store: &dyn AgentMemory) {
    let (old, new) = (sid("written_before"), sid("written_after"));
    must::append(store, &old, &[Message::user("old")]).await;
    pause().await;
    let old_info = load_some(store, &old, Some(0), "old").await;
    pause().await;
    must::append(store, &new, &[Message::user("new")]).await;
    let new_info = load_some(store, &new, Some(0), "new").await;
    assert!(new_info.updated_at > old_info.updated_at);
    let since = SessionQuery {
        updated_since: Some(new_info.updated_at),
        ..SessionQuery::default()
    };
    let before = SessionQuery {
        updated_before: Some(new_info.updated_at),
        ..SessionQuery::default()
    };
    for (query, expected) in [(since, "written_after"), (before, "written_before")] {
        assert_eq!(
            ids_of(&must::find_sessions(store, &query).await.sessions),
            [expected],
            "{query:?}"
        );
    }
}

/// Labels a listing could not show, and pages of no size, are refused as `InvalidInput`.
pub async fn invalid_labels_are_refused(store: &dyn AgentMemory) {
    let id = sid("refused_labels");
    must::append(store, &id, &[Message::user("x")]).await;
    for patch in [
        SessionPatch::default().tag("a=b", "c"),
        SessionPatch::default().tag("", "c"),
        SessionPatch::default().owner("new\nline"),
    ] {
        assert_kind(
            store.update_session(&id, &patch).await,
            ErrorKind::InvalidInput,
            "a bad label",
        );
    }
    assert!(load_some(store, &id, Some(0), "unchanged")
        .await
        .labels
        .is_empty());
    assert_kind(
        store.find_sessions(&SessionQuery::default().limit(0)).await,
        ErrorKind::InvalidInput,
        "a page of 0",
    );
}
