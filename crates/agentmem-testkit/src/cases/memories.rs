//! Memory items: put, get, list, delete, and upserts by id and by (kind, key).

use agentmem_core::{AgentMemory, AgentMemoryExt, MemoryFilter, MemoryItem, MemoryKind};
use chrono::{DateTime, Utc};
use serde_json::json;

use super::{metadata, pause};

fn texts(items: &[MemoryItem]) -> Vec<&str> {
    items.iter().map(|i| i.text.as_str()).collect()
}

/// A stored item comes back from `put_memory` and `get_memory` with the same id, kind, key,
/// text and metadata; unknown ids (even SQL-looking ones) give `None`, not an error.
pub async fn memory_item_round_trips(store: &dyn AgentMemory) {
    let item = MemoryItem::new(
        MemoryKind::LongTerm,
        "The user prefers\n- dark mode\n- ünïcödé ✓ 🦀",
    )
    .with_key("pref.ui")
    .with_metadata("importance", 0.8)
    .with_metadata("source", json!({"session": "s1", "turn": 4}));
    let stored = store.put_memory(&item).await.expect("put_memory");
    assert_eq!(
        (
            &stored.id,
            stored.kind,
            &stored.key,
            &stored.text,
            &stored.metadata
        ),
        (&item.id, item.kind, &item.key, &item.text, &item.metadata),
        "a new item is stored as given"
    );
    let got = store
        .get_memory(&item.id)
        .await
        .expect("get_memory")
        .expect("item exists");
    assert_eq!(got, stored, "get_memory returns the item as stored");
    let made = store
        .store_memory(MemoryKind::ShortTerm, "working note")
        .await
        .expect("store_memory");
    assert_eq!(
        store.get_memory(&made.id).await.expect("get_memory"),
        Some(made)
    );
    for missing in ["no-such-id", "'; DROP TABLE x; --", "{\"$ne\": null}", "*"] {
        assert!(
            store
                .get_memory(missing)
                .await
                .expect("get_memory of an unknown id")
                .is_none(),
            "{missing:?}"
        );
    }
}

/// A new item's `created_at` and `updated_at` are kept exactly as given (microseconds), so a
/// migration between backends (C5) preserves them.
pub async fn memory_item_timestamps_round_trip(store: &dyn AgentMemory) {
    let parse = |s: &str| {
        DateTime::parse_from_rfc3339(s)
            .map(|t| t.with_timezone(&Utc))
            .expect("test timestamp")
    };
    let mut item = MemoryItem::new(MemoryKind::Fact, "remembered long ago");
    item.created_at = parse("2001-02-03T04:05:06.123456Z");
    item.updated_at = parse("2002-03-04T05:06:07.654321Z");
    let stored = store.put_memory(&item).await.expect("put_memory");
    assert_eq!(
        stored, item,
        "a new item is stored exactly as given, timestamps included"
    );
    assert_eq!(
        store.get_memory(&item.id).await.expect("get_memory"),
        Some(item)
    );
}

/// `delete_memory` returns `true` once, then `false`; the item is gone from get and list.
pub async fn memory_delete_then_gone(store: &dyn AgentMemory) {
    let keep = store
        .store_memory(MemoryKind::Fact, "keep me")
        .await
        .expect("store");
    let doomed = store
        .store_memory(MemoryKind::Fact, "delete me")
        .await
        .expect("store");
    assert!(
        store.delete_memory(&doomed.id).await.expect("delete"),
        "deleting an existing item returns true"
    );
    assert!(
        !store.delete_memory(&doomed.id).await.expect("delete again"),
        "deleting it again returns false"
    );
    assert!(!store
        .delete_memory("never-existed")
        .await
        .expect("delete unknown"));
    assert!(store.get_memory(&doomed.id).await.expect("get").is_none());
    assert_eq!(
        store
            .list_memories(&MemoryFilter::default())
            .await
            .expect("list"),
        [keep]
    );
}

/// Putting an item with an existing id replaces it (one item, the new text and metadata).
pub async fn memory_upsert_by_id_replaces(store: &dyn AgentMemory) {
    let first = store
        .put_memory(&MemoryItem::new(MemoryKind::Insight, "version one"))
        .await
        .expect("put");
    let mut second = first.clone();
    second.text = "version two".into();
    second.metadata = metadata(json!({"revision": 2}));
    let stored = store.put_memory(&second).await.expect("put again");
    assert_eq!(
        (stored.id.as_str(), stored.text.as_str()),
        (first.id.as_str(), "version two")
    );
    let got = store
        .get_memory(&first.id)
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(
        (got.text.as_str(), &got.metadata),
        ("version two", &second.metadata)
    );
    assert_eq!(
        texts(
            &store
                .list_memories(&MemoryFilter::default())
                .await
                .expect("list")
        ),
        ["version two"],
        "still one item"
    );
}

/// Putting an item whose kind and key match a stored one replaces it, keeping the stored
/// id and `created_at` and taking the new text; the new item's own id is not stored.
pub async fn memory_upsert_by_kind_and_key_keeps_identity(store: &dyn AgentMemory) {
    let alice = store
        .put_memory(
            &MemoryItem::new(MemoryKind::Fact, "The user's name is Alice").with_key("user.name"),
        )
        .await
        .expect("put Alice");
    pause().await;
    let bob = MemoryItem::new(MemoryKind::Fact, "The user's name is Bob").with_key("user.name");
    let stored = store.put_memory(&bob).await.expect("put Bob");
    assert_eq!(
        stored.id, alice.id,
        "an upsert by (kind, key) keeps the stored id"
    );
    assert_eq!(
        stored.created_at, alice.created_at,
        "an upsert by (kind, key) keeps created_at"
    );
    assert_eq!(
        stored.text, bob.text,
        "an upsert by (kind, key) takes the new text"
    );
    assert!(stored.updated_at >= stored.created_at);
    assert_eq!(
        store.get_memory(&alice.id).await.expect("get"),
        Some(stored)
    );
    assert!(
        store.get_memory(&bob.id).await.expect("get").is_none(),
        "the replacing item's own id is not stored"
    );
    assert_eq!(
        texts(
            &store
                .list_memories(&MemoryFilter::default())
                .await
                .expect("list")
        ),
        ["The user's name is Bob"]
    );
}

/// The same key under another kind is a separate item, and items without a key never
/// replace each other, even with identical text.
pub async fn memory_same_key_other_kind_is_separate(store: &dyn AgentMemory) {
    let fact = store
        .put_memory(&MemoryItem::new(MemoryKind::Fact, "fact").with_key("topic"))
        .await
        .expect("put");
    let long = store
        .put_memory(&MemoryItem::new(MemoryKind::LongTerm, "long").with_key("topic"))
        .await
        .expect("put");
    assert_ne!(fact.id, long.id, "different kinds keep different items");
    store
        .store_memory(MemoryKind::Fact, "same text")
        .await
        .expect("store");
    store
        .store_memory(MemoryKind::Fact, "same text")
        .await
        .expect("store");
    let all = store
        .list_memories(&MemoryFilter::default())
        .await
        .expect("list");
    assert_eq!(all.len(), 4, "four separate items, got {:?}", texts(&all));
    assert_eq!(
        store
            .get_memory(&fact.id)
            .await
            .expect("get")
            .map(|i| i.text),
        Some("fact".into())
    );
    assert_eq!(
        store
            .get_memory(&long.id)
            .await
            .expect("get")
            .map(|i| i.text),
        Some("long".into())
    );
}

/// `list_memories` filters by kind and lists oldest first.
pub async fn memory_list_filters_by_kind(store: &dyn AgentMemory) {
    for (kind, text) in [
        (MemoryKind::Fact, "fact one"),
        (MemoryKind::Insight, "insight one"),
        (MemoryKind::Fact, "fact two"),
        (MemoryKind::ShortTerm, "short one"),
    ] {
        store.store_memory(kind, text).await.expect("store");
        pause().await;
    }
    let facts = store
        .list_memories(&MemoryFilter::kind(MemoryKind::Fact))
        .await
        .expect("list facts");
    assert_eq!(texts(&facts), ["fact one", "fact two"]);
    assert!(facts.iter().all(|i| i.kind == MemoryKind::Fact));
    assert!(store
        .list_memories(&MemoryFilter::kind(MemoryKind::LongTerm))
        .await
        .expect("list")
        .is_empty());
    let all = store
        .list_memories(&MemoryFilter::default())
        .await
        .expect("list all");
    assert_eq!(
        texts(&all),
        ["fact one", "insight one", "fact two", "short one"],
        "all kinds, oldest first"
    );
}

/// Under a limit, `list_memories` returns the newest N items, still oldest first; a limit of
/// 0 returns nothing, a limit above the count returns everything.
pub async fn memory_list_limit_returns_newest_oldest_first(store: &dyn AgentMemory) {
    for i in 0..5 {
        let kind = if i % 2 == 0 {
            MemoryKind::Fact
        } else {
            MemoryKind::Insight
        };
        store
            .store_memory(kind, &format!("item {i}"))
            .await
            .expect("store");
        pause().await;
    }
    let list =
        |f: MemoryFilter| async move { store.list_memories(&f).await.expect("list_memories") };
    assert_eq!(
        texts(&list(MemoryFilter::default().with_limit(3)).await),
        ["item 2", "item 3", "item 4"]
    );
    assert_eq!(
        texts(&list(MemoryFilter::default().with_limit(10)).await).len(),
        5
    );
    assert!(
        list(MemoryFilter::default().with_limit(0)).await.is_empty(),
        "limit 0 lists nothing"
    );
    assert_eq!(
        texts(&list(MemoryFilter::kind(MemoryKind::Fact).with_limit(2)).await),
        ["item 2", "item 4"]
    );
}
