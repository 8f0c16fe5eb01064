//! Context for prompts (B9), retention (C9), schema version (C8) and capabilities, with each
//! optional data kind kept or refused.

use std::time::Duration;

use agentmem_core::{
    AgentMemory, ErrorKind, MemoryFilter, MemoryItem, MemoryKind, RetentionPolicy, SessionId,
};

use super::{
    assert_kind, assert_no_archives, assert_no_session, assert_no_sessions, must, numbered, pause,
    sid,
};

// Whether a store keeps each optional data kind or refuses all of it runs on every store, so
// these cases are in this area; they live beside the helpers of their data kind.
pub use super::checkpoints::checkpoints_are_kept_or_refused;
pub use super::graph::graph_is_kept_or_refused;
pub use super::vectors::vectors_are_kept_or_refused;

/// The lines of `context`, sorted, to compare regardless of rank.
fn lines(context: &str) -> Vec<&str> {
    let mut v: Vec<&str> = context.lines().collect();
    v.sort_unstable();
    v
}

/// Purges with a `max_sessions` of `keep` (and no `max_age`), returning how many sessions
/// the purge reports deleted.
async fn purge_sessions_beyond(store: &dyn AgentMemory, keep: usize) -> u64 {
    let policy = RetentionPolicy {
        max_age: None,
        max_sessions: Some(keep),
        ..RetentionPolicy::default()
    };
    store
        .purge(&policy)
        .await
        .unwrap_or_else(|e| panic!("purge({policy:?}) failed: {e}"))
        .sessions_deleted
}

/// An empty store gives an empty context, with and without a query.
pub async fn get_context_of_empty_store_is_empty(store: &dyn AgentMemory) {
    assert_eq!(
        store.get_context(None).await.expect("get_context(None)"),
        ""
    );
    assert_eq!(
        store
            .get_context(Some("anything at all"))
            .await
            .expect("get_context(query)"),
        ""
    );
    assert_eq!(
        store
            .get_context(Some("   "))
            .await
            .expect("get_context(blank)"),
        ""
    );
}

/// With a query, the context is the matching items, one `- text` line each, and nothing else.
pub async fn get_context_with_query_lists_matching_items(store: &dyn AgentMemory) {
    let texts = [
        "The user prefers dark mode",
        "The user lives in Lisbon",
        "The project uses Rust and Tokio",
    ];
    must::store_memories(store, MemoryKind::LongTerm, texts).await;
    assert_eq!(
        store
            .get_context(Some("Lisbon"))
            .await
            .expect("get_context"),
        "- The user lives in Lisbon"
    );
    let context = store
        .get_context(Some("dark rust"))
        .await
        .expect("get_context");
    assert_eq!(
        lines(&context),
        [
            "- The project uses Rust and Tokio",
            "- The user prefers dark mode"
        ]
    );
    assert_eq!(
        store
            .get_context(Some("volleyball"))
            .await
            .expect("get_context"),
        "",
        "no match gives an empty context"
    );
}

/// Without a query, the context lists the 20 most recent items, one `- text` line each.
pub async fn get_context_without_query_lists_recent_items(store: &dyn AgentMemory) {
    let texts = |range: std::ops::Range<usize>| range.map(|i| format!("fact number {i:02}"));
    must::store_memories(store, MemoryKind::Fact, texts(0..5)).await;
    // Items 0-4 are the oldest; they must be the ones left out.
    pause().await;
    must::store_memories(store, MemoryKind::Fact, texts(5..25)).await;
    let context = store.get_context(None).await.expect("get_context");
    let expected: Vec<String> = (5..25).map(|i| format!("- fact number {i:02}")).collect();
    assert_eq!(lines(&context), expected, "the 20 most recent items");
}

/// `max_sessions` keeps the N sessions written most recently (by `updated_at`, so an old
/// session appended to last is kept) and deletes the rest with their archives; memory items
/// are untouched; `max_sessions: 0` deletes every session.
pub async fn purge_max_sessions_keeps_the_newest(store: &dyn AgentMemory) {
    let names: Vec<SessionId> = (1..=5).map(|i| sid(&format!("s{i}"))).collect();
    for id in &names {
        must::append(store, id, &numbered(id.as_str(), 2)).await;
        if id.as_str() == "s2" {
            must::compact(store, id, &[]).await;
        }
        pause().await;
    }
    let s2_archive = must::list_archives(store, &names[1]).await[0].id.clone();
    must::append(store, &names[0], &numbered("touched", 1)).await;
    let item = must::store_memory(store, MemoryKind::LongTerm, "survives purges").await;
    assert_eq!(
        purge_sessions_beyond(store, 2).await,
        3,
        "three sessions deleted"
    );
    let left: Vec<String> = must::list_sessions(store)
        .await
        .into_iter()
        .map(|i| i.id.into_string())
        .collect();
    assert_eq!(
        left,
        ["s1", "s5"],
        "the two most recently written sessions are kept"
    );
    assert_no_archives(store, &names[1], "archives of purged sessions are gone").await;
    assert_kind(
        store.load_archive(&names[1], &s2_archive).await,
        ErrorKind::NotFound,
        "archive of a purged session",
    );
    assert_eq!(
        store.get_memory(&item.id).await.expect("get_memory"),
        Some(item),
        "purge leaves memory items alone"
    );
    assert_eq!(
        purge_sessions_beyond(store, 0).await,
        2,
        "max_sessions: 0 deletes the two left"
    );
    assert_no_sessions(store, "max_sessions: 0").await;
}

/// A `max_age` of an hour (or far more) deletes nothing just written; the default policy
/// deletes nothing at all.
pub async fn purge_max_age_of_an_hour_deletes_nothing(store: &dyn AgentMemory) {
    for i in 0..3 {
        must::append(store, &sid(&format!("fresh{i}")), &numbered("m", 1)).await;
    }
    for policy in [
        RetentionPolicy {
            max_age: Some(Duration::from_secs(3600)),
            max_sessions: None,
            ..RetentionPolicy::default()
        },
        RetentionPolicy {
            max_age: Some(Duration::from_secs(u64::MAX)),
            max_sessions: Some(10),
            ..RetentionPolicy::default()
        },
        RetentionPolicy::default(),
    ] {
        let report = store.purge(&policy).await.expect("purge");
        assert_eq!(report.sessions_deleted, 0, "{policy:?} deletes nothing");
    }
    assert_eq!(must::list_sessions(store).await.len(), 3);
}

/// A `max_age` of zero deletes every session last written before now, with its archives,
/// and leaves memory items alone.
pub async fn purge_max_age_zero_deletes_everything_older(store: &dyn AgentMemory) {
    for i in 0..3 {
        let id = sid(&format!("old{i}"));
        must::append(store, &id, &numbered("m", 2)).await;
        must::compact(store, &id, &numbered("summary", 1)).await;
    }
    let item = must::store_memory(store, MemoryKind::Fact, "kept").await;
    pause().await;
    let report = store
        .purge(&RetentionPolicy {
            max_age: Some(Duration::ZERO),
            max_sessions: None,
            ..RetentionPolicy::default()
        })
        .await
        .expect("purge");
    assert_eq!(report.sessions_deleted, 3);
    assert_no_sessions(store, "every session is gone").await;
    for i in 0..3 {
        let id = sid(&format!("old{i}"));
        assert_no_session(store, &id, "a purged session").await;
        assert_no_archives(store, &id, "archives are purged too").await;
    }
    assert_eq!(
        must::list_memories(store, &MemoryFilter::default()).await,
        [item],
        "purge leaves memory items alone"
    );
}

/// The schema version is at least 1 and the same on every call.
pub async fn schema_version_is_positive_and_stable(store: &dyn AgentMemory) {
    let first = store.schema_version().await.expect("schema_version");
    assert!(first >= 1, "schema version must be at least 1, got {first}");
    must::append(store, &sid("after_write"), &numbered("m", 1)).await;
    assert_eq!(
        store.schema_version().await.expect("schema_version"),
        first,
        "the schema version is stable"
    );
}

/// `backend()` describes the backend (a short lowercase name, lowercase schemes, a system
/// name) and `capabilities()` answers consistently.
pub async fn backend_name_and_capabilities(store: &dyn AgentMemory) {
    let backend = store.backend();
    let name = backend.name;
    assert!(
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_'),
        "backend name {name:?}"
    );
    assert!(!backend.db_system.is_empty(), "{backend:?}");
    assert!(
        backend
            .schemes
            .iter()
            .all(|s| !s.is_empty() && *s == s.to_ascii_lowercase()),
        "{backend:?}"
    );
    assert_eq!(
        store.capabilities(),
        store.capabilities(),
        "capabilities are stable"
    );
}

/// A purge deletes every expired memory item whatever the policy, and with `max_memory_age`
/// the items not updated for longer; it reports how many, and keeps the rest.
pub async fn purge_deletes_expired_and_old_memories(store: &dyn AgentMemory) {
    let at = agentmem_core::now();
    let expired = MemoryItem::new(MemoryKind::ShortTerm, "expired")
        .expiring_at(at - chrono::Duration::seconds(1));
    let mut old = MemoryItem::new(MemoryKind::LongTerm, "untouched for two days");
    old.created_at = at - chrono::Duration::days(2);
    old.updated_at = old.created_at;
    let fresh =
        MemoryItem::new(MemoryKind::LongTerm, "fresh").expiring_at(at + chrono::Duration::hours(1));
    for item in [&expired, &old, &fresh] {
        must::put_memory(store, item).await;
    }
    let report = store
        .purge(&RetentionPolicy::default())
        .await
        .expect("purge");
    assert_eq!(
        (report.memories_deleted, report.sessions_deleted),
        (1, 0),
        "the default policy deletes the expired item only"
    );
    let day = RetentionPolicy {
        max_memory_age: Some(Duration::from_secs(86_400)),
        ..RetentionPolicy::default()
    };
    let report = store.purge(&day).await.expect("purge");
    assert_eq!(report.memories_deleted, 1, "an item older than a day goes");
    assert_eq!(
        must::list_memories(store, &MemoryFilter::default()).await,
        [fresh],
        "the fresh item stays"
    );
    assert!(must::get_memory(store, &old.id).await.is_none());
}
