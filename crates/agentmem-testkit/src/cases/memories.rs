//! Memory items: put, get, list, delete, upserts by id and by (scope, kind, key), scopes and
//! expiry.

use agentmem_core::{
    AgentMemory, MemoryFilter, MemoryId, MemoryItem, MemoryKind, MemoryScope, ScopeFilter,
};
use chrono::{DateTime, Utc};
use serde_json::json;

use super::{metadata, must, pause};

/// The texts of `items`, for readable assertion output.
fn texts(items: &[MemoryItem]) -> Vec<&str> {
    items.iter().map(|i| i.text.as_str()).collect()
}

/// Every memory item, oldest first.
async fn all_items(store: &dyn AgentMemory) -> Vec<MemoryItem> {
    must::list_memories(store, &MemoryFilter::default()).await
}

/// The text of the item stored under `id`, or `None` if there is none.
async fn stored_text(store: &dyn AgentMemory, id: &MemoryId) -> Option<String> {
    must::get_memory(store, id).await.map(|item| item.text)
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
    let stored = must::put_memory(store, &item).await;
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
    let got = must::get_memory(store, &item.id)
        .await
        .expect("the item put exists");
    assert_eq!(got, stored, "get_memory returns the item as stored");
    let made = must::store_memory(store, MemoryKind::ShortTerm, "working note").await;
    assert_eq!(
        store.get_memory(&made.id).await.expect("get_memory"),
        Some(made)
    );
    for missing in ["no-such-id", "'; DROP TABLE x; --", "{\"$ne\": null}", "*"] {
        assert!(
            store
                .get_memory(&missing.parse().expect("memory id"))
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
    let stored = must::put_memory(store, &item).await;
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
    let keep = must::store_memory(store, MemoryKind::Fact, "keep me").await;
    let doomed = must::store_memory(store, MemoryKind::Fact, "delete me").await;
    assert!(
        store.delete_memory(&doomed.id).await.expect("delete"),
        "deleting an existing item returns true"
    );
    assert!(
        !store.delete_memory(&doomed.id).await.expect("delete again"),
        "deleting it again returns false"
    );
    assert!(!store
        .delete_memory(&"never-existed".parse().expect("memory id"))
        .await
        .expect("delete unknown"));
    assert!(store.get_memory(&doomed.id).await.expect("get").is_none());
    assert_eq!(
        all_items(store).await,
        [keep],
        "only the other item is left"
    );
}

/// Putting an item with an existing id replaces it (one item, the new text and metadata).
pub async fn memory_upsert_by_id_replaces(store: &dyn AgentMemory) {
    let first = must::put_memory(store, &MemoryItem::new(MemoryKind::Insight, "version one")).await;
    let mut second = first.clone();
    second.text = "version two".into();
    second.metadata = metadata(json!({"revision": 2}));
    let stored = must::put_memory(store, &second).await;
    assert_eq!(
        (stored.id.as_str(), stored.text.as_str()),
        (first.id.as_str(), "version two")
    );
    let got = must::get_memory(store, &first.id)
        .await
        .expect("the upserted item exists");
    assert_eq!(
        (got.text.as_str(), &got.metadata),
        ("version two", &second.metadata)
    );
    assert_eq!(
        texts(&all_items(store).await),
        ["version two"],
        "still one item"
    );
}

/// Putting an item whose kind and key match a stored one replaces it, keeping the stored
/// id and `created_at` and taking the new text; the new item's own id is not stored.
pub async fn memory_upsert_by_kind_and_key_keeps_identity(store: &dyn AgentMemory) {
    let named = |name: &str| {
        MemoryItem::new(MemoryKind::Fact, format!("The user's name is {name}"))
            .with_key("user.name")
    };
    let alice = must::put_memory(store, &named("Alice")).await;
    pause().await;
    let bob = named("Bob");
    let stored = must::put_memory(store, &bob).await;
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
    assert_eq!(texts(&all_items(store).await), ["The user's name is Bob"]);
}

/// The same key under another kind is a separate item, and items without a key never
/// replace each other, even with identical text.
pub async fn memory_same_key_other_kind_is_separate(store: &dyn AgentMemory) {
    let keyed = |kind, text| MemoryItem::new(kind, text).with_key("topic");
    let fact = must::put_memory(store, &keyed(MemoryKind::Fact, "fact")).await;
    let long = must::put_memory(store, &keyed(MemoryKind::LongTerm, "long")).await;
    assert_ne!(fact.id, long.id, "different kinds keep different items");
    must::store_memories(store, MemoryKind::Fact, ["same text", "same text"]).await;
    let all = all_items(store).await;
    assert_eq!(all.len(), 4, "four separate items, got {:?}", texts(&all));
    for (item, text) in [(&fact, "fact"), (&long, "long")] {
        assert_eq!(
            stored_text(store, &item.id).await.as_deref(),
            Some(text),
            "the {:?} item keyed \"topic\"",
            item.kind
        );
    }
}

/// `list_memories` filters by kind and lists oldest first.
pub async fn memory_list_filters_by_kind(store: &dyn AgentMemory) {
    for (kind, text) in [
        (MemoryKind::Fact, "fact one"),
        (MemoryKind::Insight, "insight one"),
        (MemoryKind::Fact, "fact two"),
        (MemoryKind::ShortTerm, "short one"),
    ] {
        must::store_memory(store, kind, text).await;
        pause().await;
    }
    let facts = must::list_memories(store, &MemoryFilter::kind(MemoryKind::Fact)).await;
    assert_eq!(texts(&facts), ["fact one", "fact two"]);
    assert!(facts.iter().all(|i| i.kind == MemoryKind::Fact));
    assert!(
        must::list_memories(store, &MemoryFilter::kind(MemoryKind::LongTerm))
            .await
            .is_empty()
    );
    let all = all_items(store).await;
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
        must::store_memory(store, kind, &format!("item {i}")).await;
        pause().await;
    }
    let list = |f: MemoryFilter| async move { must::list_memories(store, &f).await };
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

/// The same kind and key in two scopes (two agents, one agent in two workspaces, an owner)
/// are separate items: an upsert replaces only the item of its own scope, and the scope and
/// expiry time read back exactly.
pub async fn memory_scopes_keep_keys_apart(store: &dyn AgentMemory) {
    let alice = MemoryScope::agent("alice").with_workspace("git-kyoto");
    let scopes = [
        alice.clone(),
        MemoryScope::agent("bob").with_workspace("git-kyoto"),
        MemoryScope::agent("alice").with_workspace("git-osaka"),
        alice.clone().with_owner("ada@example.com"),
        MemoryScope::global(),
    ];
    let named = |scope: &MemoryScope, name: &str| {
        MemoryItem::new(MemoryKind::Fact, format!("The user's name is {name}"))
            .with_key("name")
            .in_scope(scope.clone())
    };
    let mut stored = Vec::new();
    for (i, scope) in scopes.iter().enumerate() {
        stored.push(must::put_memory(store, &named(scope, &format!("user{i}"))).await);
    }
    let bob = must::put_memory(store, &named(&scopes[1], "Bob")).await;
    assert_eq!(
        bob.id, stored[1].id,
        "an upsert in bob's scope keeps bob's item"
    );
    for (i, item) in stored.iter().enumerate() {
        let got = must::get_memory(store, &item.id)
            .await
            .expect("each scope keeps its item");
        assert_eq!(got.scope, scopes[i], "the scope reads back");
        let name = if i == 1 {
            "Bob".to_string()
        } else {
            format!("user{i}")
        };
        assert_eq!(
            got.text,
            format!("The user's name is {name}"),
            "scope {}",
            scopes[i]
        );
    }
    assert_eq!(
        all_items(store).await.len(),
        scopes.len(),
        "one item per scope"
    );

    let expiring = MemoryItem::new(MemoryKind::ShortTerm, "until tomorrow")
        .in_scope(alice)
        .expiring_at(agentmem_core::now() + chrono::Duration::days(1));
    let put = must::put_memory(store, &expiring).await;
    assert_eq!(put, expiring, "scope and expiry are stored as given");
    assert_eq!(must::get_memory(store, &expiring.id).await, Some(expiring));
}

/// A scope filter selects exactly: `Exactly` one scope's items, `VisibleFrom` an agent's own
/// items with those shared along the parts it leaves unset (global, agent-wide), never
/// another agent's, workspace's or owner's; together with kind and limit.
pub async fn memory_list_filters_by_scope(store: &dyn AgentMemory) {
    let alice_kyoto = MemoryScope::agent("alice").with_workspace("git-kyoto");
    for (scope, text) in [
        (MemoryScope::global(), "shared with all"),
        (MemoryScope::agent("alice"), "alice everywhere"),
        (alice_kyoto.clone(), "alice in kyoto"),
        (
            MemoryScope::agent("alice").with_workspace("git-osaka"),
            "alice in osaka",
        ),
        (
            MemoryScope::agent("bob").with_workspace("git-kyoto"),
            "bob in kyoto",
        ),
        (
            alice_kyoto.clone().with_owner("ada"),
            "alice in kyoto for ada",
        ),
    ] {
        let item = MemoryItem::new(MemoryKind::Fact, text).in_scope(scope);
        must::put_memory(store, &item).await;
        pause().await;
    }
    let list = |filter: MemoryFilter| async move {
        texts(&must::list_memories(store, &filter).await)
            .into_iter()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        list(MemoryFilter::default().visible_from(alice_kyoto.clone())).await,
        ["shared with all", "alice everywhere", "alice in kyoto"],
        "alice in kyoto sees her own, her agent-wide and the global items"
    );
    assert_eq!(
        list(MemoryFilter::default().visible_from(alice_kyoto.clone().with_owner("ada"))).await,
        [
            "shared with all",
            "alice everywhere",
            "alice in kyoto",
            "alice in kyoto for ada"
        ],
    );
    assert_eq!(
        list(MemoryFilter::default().with_scope(ScopeFilter::Exactly(alice_kyoto.clone()))).await,
        ["alice in kyoto"]
    );
    assert_eq!(
        list(MemoryFilter::default().with_scope(ScopeFilter::Exactly(MemoryScope::global()))).await,
        ["shared with all"]
    );
    assert_eq!(
        list(
            MemoryFilter::kind(MemoryKind::Fact)
                .visible_from(alice_kyoto.clone())
                .with_limit(2)
        )
        .await,
        ["alice everywhere", "alice in kyoto"],
        "the newest 2 visible"
    );
    assert!(
        list(MemoryFilter::kind(MemoryKind::Insight).visible_from(alice_kyoto))
            .await
            .is_empty()
    );
    assert_eq!(
        list(MemoryFilter::default()).await.len(),
        6,
        "no scope filter lists all"
    );
    let refused = store
        .list_memories(&MemoryFilter::default().visible_from(MemoryScope::agent("a/b")))
        .await;
    assert!(
        refused.is_err(),
        "a scope no item can have is refused, got {refused:?}"
    );
}

/// An expired item is gone for every reader: `get_memory`, listings and searches skip it,
/// while an item expiring later stays; a put with an expired item's key starts a new item.
pub async fn expired_memories_are_gone(store: &dyn AgentMemory) {
    let past = agentmem_core::now() - chrono::Duration::seconds(1);
    let later = agentmem_core::now() + chrono::Duration::hours(1);
    let gone = MemoryItem::new(MemoryKind::ShortTerm, "expired volcano note")
        .with_key("task")
        .expiring_at(past);
    must::put_memory(store, &gone).await;
    let kept = must::put_memory(
        store,
        &MemoryItem::new(MemoryKind::ShortTerm, "current volcano note").expiring_at(later),
    )
    .await;
    assert!(
        must::get_memory(store, &gone.id).await.is_none(),
        "get skips an expired item"
    );
    assert_eq!(texts(&all_items(store).await), ["current volcano note"]);
    let hits = must::search_memories(store, "volcano", &MemoryFilter::default()).await;
    let found: Vec<&str> = hits.iter().map(|h| h.item.text.as_str()).collect();
    assert_eq!(
        found,
        ["current volcano note"],
        "search skips an expired item"
    );
    let fresh = MemoryItem::new(MemoryKind::ShortTerm, "new task").with_key("task");
    let stored = must::put_memory(store, &fresh).await;
    assert_eq!(
        stored, fresh,
        "a put over an expired key stores the new item as given"
    );
    assert_eq!(
        texts(&all_items(store).await),
        ["current volcano note", "new task"]
    );
    assert_eq!(must::get_memory(store, &kept.id).await, Some(kept));
}

/// Where a backend keeps a [`memory_revision`](agentmem_core::MemoryStore::memory_revision),
/// it stays while nothing changes and changes with every put (new or replacing), delete and
/// purge of memory items. A backend without one (`None`) has nothing to check.
pub async fn memory_revision_follows_every_change(store: &dyn AgentMemory) {
    async fn revision(store: &dyn AgentMemory) -> Option<u64> {
        store.memory_revision().await.expect("memory_revision")
    }
    let Some(mut last) = revision(store).await else {
        return;
    };
    let changed = |last: &mut u64, now: Option<u64>, what: &str| {
        let now = now.unwrap_or_else(|| panic!("the revision went away after {what}"));
        assert_ne!(now, *last, "the revision changes with {what}");
        *last = now;
    };
    let item = MemoryItem::new(MemoryKind::Fact, "revision one").with_key("rev");
    must::put_memory(store, &item).await;
    changed(&mut last, revision(store).await, "a new item");
    all_items(store).await;
    must::get_memory(store, &item.id).await;
    must::search_memories(store, "revision", &MemoryFilter::default()).await;
    assert_eq!(revision(store).await, Some(last), "reads change nothing");
    must::put_memory(
        store,
        &MemoryItem::new(MemoryKind::Fact, "revision two").with_key("rev"),
    )
    .await;
    changed(&mut last, revision(store).await, "a replacement by key");
    assert!(store.delete_memory(&item.id).await.expect("delete_memory"));
    changed(&mut last, revision(store).await, "a delete");
    let past = agentmem_core::now() - chrono::Duration::seconds(1);
    must::put_memory(
        store,
        &MemoryItem::new(MemoryKind::ShortTerm, "expired").expiring_at(past),
    )
    .await;
    changed(&mut last, revision(store).await, "an expired item");
    let report = store
        .purge(&agentmem_core::RetentionPolicy::default())
        .await
        .expect("purge");
    assert_eq!(report.memories_deleted, 1, "the expired item is purged");
    changed(&mut last, revision(store).await, "a purge");
}
