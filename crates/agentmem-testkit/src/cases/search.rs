//! Ranked search over memory items and messages (A10): matching any query word,
//! case-insensitively, best first, within a limit.
//!
//! Every backend matches words by their Porter stem (`agentmem_core::search::stem`), so
//! another inflection of a word matches it; the cases never assert that one does not.

use agentmem_core::{
    AgentMemory, MemoryFilter, MemoryHit, MemoryItem, MemoryKind, MemoryScope, Message, MessageHit,
    MessageQuery, ScopeFilter,
};

use super::{must, numbered, sid};

const DENSE: &str = "kubernetes kubernetes kubernetes cluster";
const SPARSE: &str = "a long report that mentions kubernetes only once among many other words about databases, networking, storage budgets, deployment pipelines and hiring plans";
const UNRELATED: &str = "recipe for tomato soup with basil and garlic";

/// The texts of the items `hits` found, best first.
fn hit_texts(hits: &[MemoryHit]) -> Vec<&str> {
    hits.iter().map(|h| h.item.text.as_str()).collect()
}

/// The contents of the messages `hits` found, best first.
fn hit_contents(hits: &[MessageHit]) -> Vec<&str> {
    hits.iter().map(|h| h.message.content.as_str()).collect()
}

/// Asserts that `scores` never increase: hits come best first.
fn assert_best_first(scores: impl Iterator<Item = f64>, what: &str) {
    let scores: Vec<f64> = scores.collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]),
        "{what}: hits must be best first, scores {scores:?}"
    );
}

/// Asserts that a search for "kubernetes" found [`DENSE`] first and [`SPARSE`] second (a dense
/// short mention above a single one in a long text), nothing else, with `scores` best first.
fn assert_dense_then_sparse(found: &[&str], scores: impl Iterator<Item = f64>, what: &str) {
    assert_eq!(
        found,
        [DENSE, SPARSE],
        "{what}: dense short mention first, long single mention second, others absent"
    );
    assert_best_first(scores, what);
}

/// The texts of the items `query` finds under the default filter, best first.
async fn items_found(store: &dyn AgentMemory, query: &str) -> Vec<String> {
    let hits = must::search_memories(store, query, &MemoryFilter::default()).await;
    hits.into_iter().map(|h| h.item.text).collect()
}

/// The contents of the messages `query` finds across all sessions under the default limit,
/// best first.
async fn messages_found(store: &dyn AgentMemory, query: &str) -> Vec<String> {
    let hits = must::search_messages(store, query, &MessageQuery::default()).await;
    hits.into_iter().map(|h| h.message.content).collect()
}

/// Asserts that `query` finds `expected` memory items under the default filter.
async fn assert_item_hits(store: &dyn AgentMemory, query: &str, expected: usize, what: &str) {
    let found = items_found(store, query).await;
    let call = format!("search_memories({query:?})");
    assert_eq!(found.len(), expected, "{what}: {call} found {found:?}");
}

/// Asserts that `query` finds `expected` messages across all sessions under the default limit.
async fn assert_message_hits(store: &dyn AgentMemory, query: &str, expected: usize, what: &str) {
    let found = messages_found(store, query).await;
    let call = format!("search_messages({query:?})");
    assert_eq!(found.len(), expected, "{what}: {call} found {found:?}");
}

/// The item with more occurrences of the term in a short text ranks above one mentioning it
/// once in a long text; non-matching items are absent; hits carry the stored item.
pub async fn search_memories_ranks_by_relevance(store: &dyn AgentMemory) {
    let texts = [
        SPARSE,
        UNRELATED,
        DENSE,
        "weekly meeting notes about budgets",
    ];
    let stored = must::store_memories(store, MemoryKind::LongTerm, texts).await;
    let hits = must::search_memories(store, "Kubernetes", &MemoryFilter::default()).await;
    let scores = hits.iter().map(|h| h.score);
    assert_dense_then_sparse(&hit_texts(&hits), scores, "search_memories");
    assert_eq!(hits[0].item, stored[2], "a hit carries the item as stored");
}

/// Matching is case-insensitive in both directions.
pub async fn search_memories_is_case_insensitive(store: &dyn AgentMemory) {
    let texts = [
        "PostgreSQL replication notes",
        "kafka consumer groups",
        "unrelated gardening tips",
    ];
    must::store_memories(store, MemoryKind::Fact, texts).await;
    for query in ["postgresql", "POSTGRESQL", "PostgreSQL"] {
        assert_eq!(
            items_found(store, query).await,
            ["PostgreSQL replication notes"],
            "{query}"
        );
    }
    assert_eq!(items_found(store, "KAFKA").await, ["kafka consumer groups"]);
}

/// A query matches items containing any of its words (OR, not AND), and queries with
/// punctuation or search-syntax characters around words still search those words.
pub async fn search_memories_matches_any_query_word(store: &dyn AgentMemory) {
    let texts = [
        "zebra stripes",
        "giraffe necks",
        "penguin colonies",
        "zebra and giraffe together",
    ];
    must::store_memories(store, MemoryKind::Fact, texts).await;
    let mut found = items_found(store, "zebra giraffe").await;
    found.sort();
    assert_eq!(
        found,
        [
            "giraffe necks",
            "zebra and giraffe together",
            "zebra stripes"
        ],
        "any word matches; penguin absent"
    );
    let both = must::search_memories(store, "zebra giraffe", &MemoryFilter::default()).await;
    assert_eq!(
        both[0].item.text, "zebra and giraffe together",
        "the item with both words ranks first"
    );
    for query in [
        "penguin!",
        "(penguin)",
        "penguin:*",
        "penguin & | !",
        "\"penguin\"",
        "-penguin",
        "penguin*",
    ] {
        assert_eq!(
            items_found(store, query).await,
            ["penguin colonies"],
            "query {query:?}"
        );
    }
}

/// Words in any script are searchable, case-insensitively where the script has case:
/// German with umlauts, Cyrillic (queried in upper case), and Japanese between spaces.
pub async fn search_finds_words_in_any_script(store: &dyn AgentMemory) {
    let texts = [
        "Viele Grüße aus München",
        "Привет из Москвы",
        "東京 の 天気",
        "plain ascii words",
    ];
    must::store_memories(store, MemoryKind::Fact, texts).await;
    must::append(store, &sid("scripts"), &[Message::user("Привет из Москвы")]).await;
    for (query, expected) in [
        ("münchen", "Viele Grüße aus München"),
        ("ПРИВЕТ", "Привет из Москвы"),
        ("東京", "東京 の 天気"),
    ] {
        let hits = must::search_memories(store, query, &MemoryFilter::default()).await;
        assert_eq!(hit_texts(&hits), [expected], "search_memories({query:?})");
    }
    let hits = must::search_messages(store, "привет", &MessageQuery::default()).await;
    assert_eq!(
        hit_contents(&hits),
        ["Привет из Москвы"],
        "search_messages in Cyrillic"
    );
}

/// A word finds its other inflections (plural, `-ed`, `-ing`, `-ion`), in memory items and in
/// messages: every backend indexes and searches Porter stems.
pub async fn search_matches_inflected_words(store: &dyn AgentMemory) {
    let (adoption, pets) = (
        "I contacted my mentor for adoption advice",
        "two cats and a dog",
    );
    must::store_memories(store, MemoryKind::Fact, [adoption, pets, "unrelated words"]).await;
    let items = [
        ("adopting", adoption),
        ("ADOPTED", adoption),
        ("cat", pets),
        ("dogs", pets),
    ];
    for (query, expected) in items {
        let hits = must::search_memories(store, query, &MemoryFilter::default()).await;
        assert_eq!(hit_texts(&hits), [expected], "search_memories({query:?})");
    }
    let session = sid("inflections");
    let (running, walked) = ("she was running every morning", "we walked home");
    must::append(store, &session, &[running, walked].map(Message::user)).await;
    let scope = MessageQuery {
        session: Some(session),
        limit: 10,
    };
    for (query, expected) in [("runs", running), ("walking", walked)] {
        let hits = must::search_messages(store, query, &scope).await;
        assert_eq!(
            hit_contents(&hits),
            [expected],
            "search_messages({query:?})"
        );
    }
}

/// The limit is honoured; without one a memory search returns at most 10.
pub async fn search_memories_honours_limit(store: &dyn AgentMemory) {
    let observations = (0..15).map(|i| format!("telescope observation {i}"));
    must::store_memories(store, MemoryKind::Fact, observations).await;
    let notes = (0..3).map(|i| format!("unrelated note {i}"));
    must::store_memories(store, MemoryKind::Fact, notes).await;
    for (limit, expected, what) in [
        (Some(5), 5, "limit 5 finds 5"),
        (None, 10, "the default limit is 10"),
        (Some(100), 15, "limit 100 finds all 15"),
        (Some(0), 0, "limit 0 finds nothing"),
    ] {
        let filter = limit.map_or_else(MemoryFilter::default, |limit| {
            MemoryFilter::default().with_limit(limit)
        });
        let hits = must::search_memories(store, "telescope", &filter).await;
        assert_eq!(hits.len(), expected, "{what}");
    }
}

/// A kind filter restricts the search to that kind.
pub async fn search_memories_filters_by_kind(store: &dyn AgentMemory) {
    must::store_memory(store, MemoryKind::Fact, "volcano eruption fact").await;
    let insights = ["volcano eruption insight", "glacier insight"];
    must::store_memories(store, MemoryKind::Insight, insights).await;
    let hits =
        must::search_memories(store, "volcano", &MemoryFilter::kind(MemoryKind::Insight)).await;
    assert_eq!(hit_texts(&hits), ["volcano eruption insight"]);
    assert_item_hits(
        store,
        "volcano",
        2,
        "without a kind filter both volcano items are found",
    )
    .await;
}

/// A query without words (empty, blanks, punctuation, glob or operator characters) returns
/// no hits rather than an error, for items and messages; an SQL-looking query is harmless.
pub async fn search_without_words_returns_nothing(store: &dyn AgentMemory) {
    must::store_memory(store, MemoryKind::Fact, "something stored").await;
    must::append(store, &sid("punct"), &[Message::user("something said")]).await;
    for query in [
        "",
        "   ",
        "!!! ??? ---",
        "*",
        "$ $$",
        "&|!():*",
        "'\"",
        "...",
    ] {
        assert_item_hits(store, query, 0, "a query without words finds no item").await;
        assert_message_hits(store, query, 0, "a query without words finds no message").await;
    }
    must::search_memories(store, "'; DROP TABLE x; --", &MemoryFilter::default()).await;
    must::search_messages(store, "'; DROP TABLE x; --", &MessageQuery::default()).await;
    assert_eq!(
        must::list_memories(store, &MemoryFilter::default())
            .await
            .len(),
        1,
        "the store is intact"
    );
}

/// Message search ranks like memory search, across sessions, and each hit names its
/// session and carries the message exactly as stored.
pub async fn search_messages_ranks_by_relevance(store: &dyn AgentMemory) {
    let (a, b) = (sid("search_a"), sid("search_b"));
    let dense = Message::assistant(DENSE);
    must::append(
        store,
        &a,
        &[Message::user(SPARSE), Message::user(UNRELATED)],
    )
    .await;
    must::append(store, &b, &[dense.clone(), Message::user("lunch plans")]).await;
    let hits = must::search_messages(store, "KUBERNETES", &MessageQuery::default()).await;
    let scores = hits.iter().map(|h| h.score);
    assert_dense_then_sparse(&hit_contents(&hits), scores, "search_messages");
    assert_eq!(
        (&hits[0].session, &hits[0].message),
        (&b, &dense),
        "a hit names its session and carries the message"
    );
    assert_eq!(hits[1].session, a);
}

/// A session scope restricts message search to that session; a missing session finds nothing.
pub async fn search_messages_scoped_to_one_session(store: &dyn AgentMemory) {
    let (a, b) = (sid("scope_a"), sid("scope_b"));
    let in_a = [
        Message::user("lighthouse keeper log"),
        Message::user("other"),
    ];
    must::append(store, &a, &in_a).await;
    must::append(store, &b, &[Message::user("lighthouse repairs")]).await;
    let scoped = |s: &str| MessageQuery {
        session: Some(sid(s)),
        limit: 10,
    };
    let hits = must::search_messages(store, "lighthouse", &scoped("scope_a")).await;
    assert_eq!(hit_contents(&hits), ["lighthouse keeper log"]);
    assert!(hits.iter().all(|h| h.session == a));
    assert_message_hits(store, "lighthouse", 2, "unscoped finds both").await;
    assert!(
        must::search_messages(store, "lighthouse", &scoped("scope_missing"))
            .await
            .is_empty()
    );
}

/// The message search limit is honoured, including 0 (no hits, not "unlimited").
pub async fn search_messages_honours_limit(store: &dyn AgentMemory) {
    let id = sid("many");
    must::append(store, &id, &numbered("satellite telemetry", 12)).await;
    must::append(store, &id, &numbered("noise", 3)).await;
    let limited = |limit| MessageQuery {
        session: None,
        limit,
    };
    for (scope, expected, what) in [
        (limited(4), 4, "limit 4 finds 4"),
        (limited(50), 12, "limit 50 finds all 12"),
        (MessageQuery::default(), 10, "the default limit is 10"),
        (limited(0), 0, "limit 0 finds nothing"),
    ] {
        let hits = must::search_messages(store, "satellite", &scope).await;
        assert_eq!(hits.len(), expected, "{what}");
    }
}

/// Search stays in step with writes: replaced and deleted items, messages replaced by
/// `save_session` or `compact`, and deleted sessions are no longer found; new text is.
pub async fn search_follows_updates_and_deletes(store: &dyn AgentMemory) {
    let colour = |name: &str| {
        MemoryItem::new(MemoryKind::Fact, format!("favourite colour {name}")).with_key("colour")
    };
    let item = must::put_memory(store, &colour("aquamarine")).await;
    must::put_memory(store, &colour("vermilion")).await;
    assert_item_hits(store, "aquamarine", 0, "replaced text is not found").await;
    assert_item_hits(store, "vermilion", 1, "new text is found").await;
    store.delete_memory(&item.id).await.expect("delete");
    assert_item_hits(store, "vermilion", 0, "deleted items are not found").await;

    let (a, b) = (sid("index_a"), sid("index_b"));
    must::append(store, &a, &[Message::user("marmalade recipe")]).await;
    let porridge = [Message::user("porridge recipe")];
    must::save_session(store, &a, &porridge, &Default::default()).await;
    assert_message_hits(
        store,
        "marmalade",
        0,
        "messages replaced by save_session are not found",
    )
    .await;
    assert_message_hits(
        store,
        "porridge",
        1,
        "the messages save_session wrote are found",
    )
    .await;
    must::compact(store, &a, &[Message::system("summary about pancakes")]).await;
    assert_eq!(
        messages_found(store, "pancakes").await,
        ["summary about pancakes"],
        "a compaction's replacement is found"
    );
    must::append(store, &b, &[Message::user("quinoa salad")]).await;
    store.delete_session(&b).await.expect("delete_session");
    assert_message_hits(
        store,
        "quinoa",
        0,
        "messages of deleted sessions are not found",
    )
    .await;
}

/// A search with a scope filter finds only items of the scopes it selects.
pub async fn search_memories_stays_in_scope(store: &dyn AgentMemory) {
    let alice = MemoryScope::agent("alice").with_workspace("git-kyoto");
    for (scope, text) in [
        (alice.clone(), "alice likes the volcano"),
        (
            MemoryScope::agent("bob").with_workspace("git-kyoto"),
            "bob likes the volcano",
        ),
        (MemoryScope::global(), "everyone knows the volcano"),
    ] {
        must::put_memory(
            store,
            &MemoryItem::new(MemoryKind::Fact, text).in_scope(scope),
        )
        .await;
    }
    let visible = MemoryFilter::default().visible_from(alice.clone());
    let hits = must::search_memories(store, "volcano", &visible).await;
    let mut found = hit_texts(&hits);
    found.sort_unstable();
    assert_eq!(
        found,
        ["alice likes the volcano", "everyone knows the volcano"]
    );
    let exact = MemoryFilter::default().with_scope(ScopeFilter::Exactly(alice));
    assert_eq!(
        hit_texts(&must::search_memories(store, "volcano", &exact).await),
        ["alice likes the volcano"]
    );
    assert_item_hits(
        store,
        "volcano",
        3,
        "without a scope filter every item is found",
    )
    .await;
}
