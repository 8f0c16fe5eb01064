//! Ranked search over memory items and messages (A10): matching any query word,
//! case-insensitively, best first, within a limit.
//!
//! Backends may stem (Postgres, SQLite FTS5, MongoDB `$text`) and drop stop words, so the
//! cases query ordinary content words and never assert that another form of a word does
//! not match.

use agentmem_core::{
    AgentMemory, AgentMemoryExt, MemoryFilter, MemoryHit, MemoryItem, MemoryKind, Message,
    MessageHit, MessageQuery,
};

use super::{numbered, sid};

const DENSE: &str = "kubernetes kubernetes kubernetes cluster";
const SPARSE: &str = "a long report that mentions kubernetes only once among many other words about databases, networking, storage budgets, deployment pipelines and hiring plans";
const UNRELATED: &str = "recipe for tomato soup with basil and garlic";

fn hit_texts(hits: &[MemoryHit]) -> Vec<&str> {
    hits.iter().map(|h| h.item.text.as_str()).collect()
}

fn hit_contents(hits: &[MessageHit]) -> Vec<&str> {
    hits.iter().map(|h| h.message.content.as_str()).collect()
}

fn assert_best_first(scores: impl Iterator<Item = f64>, what: &str) {
    let scores: Vec<f64> = scores.collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]),
        "{what}: hits must be best first, scores {scores:?}"
    );
}

async fn search_items(
    store: &dyn AgentMemory,
    query: &str,
    filter: &MemoryFilter,
) -> Vec<MemoryHit> {
    store
        .search_memories(query, filter)
        .await
        .unwrap_or_else(|e| panic!("search_memories({query:?}): {e}"))
}

async fn search_msgs(
    store: &dyn AgentMemory,
    query: &str,
    scope: &MessageQuery,
) -> Vec<MessageHit> {
    store
        .search_messages(query, scope)
        .await
        .unwrap_or_else(|e| panic!("search_messages({query:?}): {e}"))
}

/// The item with more occurrences of the term in a short text ranks above one mentioning it
/// once in a long text; non-matching items are absent; hits carry the stored item.
pub async fn search_memories_ranks_by_relevance(store: &dyn AgentMemory) {
    let mut stored = Vec::new();
    for text in [
        SPARSE,
        UNRELATED,
        DENSE,
        "weekly meeting notes about budgets",
    ] {
        stored.push(
            store
                .store_memory(MemoryKind::LongTerm, text)
                .await
                .expect("store"),
        );
    }
    let hits = search_items(store, "Kubernetes", &MemoryFilter::default()).await;
    assert_eq!(
        hit_texts(&hits),
        [DENSE, SPARSE],
        "dense short mention first, long single mention second, others absent"
    );
    assert_best_first(hits.iter().map(|h| h.score), "search_memories");
    assert_eq!(hits[0].item, stored[2], "a hit carries the item as stored");
}

/// Matching is case-insensitive in both directions.
pub async fn search_memories_is_case_insensitive(store: &dyn AgentMemory) {
    store
        .store_memory(MemoryKind::Fact, "PostgreSQL replication notes")
        .await
        .expect("store");
    store
        .store_memory(MemoryKind::Fact, "kafka consumer groups")
        .await
        .expect("store");
    store
        .store_memory(MemoryKind::Fact, "unrelated gardening tips")
        .await
        .expect("store");
    for query in ["postgresql", "POSTGRESQL", "PostgreSQL"] {
        assert_eq!(
            hit_texts(&search_items(store, query, &MemoryFilter::default()).await),
            ["PostgreSQL replication notes"],
            "{query}"
        );
    }
    assert_eq!(
        hit_texts(&search_items(store, "KAFKA", &MemoryFilter::default()).await),
        ["kafka consumer groups"]
    );
}

/// A query matches items containing any of its words (OR, not AND), and queries with
/// punctuation or search-syntax characters around words still search those words.
pub async fn search_memories_matches_any_query_word(store: &dyn AgentMemory) {
    for text in [
        "zebra stripes",
        "giraffe necks",
        "penguin colonies",
        "zebra and giraffe together",
    ] {
        store
            .store_memory(MemoryKind::Fact, text)
            .await
            .expect("store");
    }
    let mut found =
        hit_texts(&search_items(store, "zebra giraffe", &MemoryFilter::default()).await)
            .into_iter()
            .map(str::to_string)
            .collect::<Vec<_>>();
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
    let both = search_items(store, "zebra giraffe", &MemoryFilter::default()).await;
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
            hit_texts(&search_items(store, query, &MemoryFilter::default()).await),
            ["penguin colonies"],
            "query {query:?}"
        );
    }
}

/// Words in any script are searchable, case-insensitively where the script has case:
/// German with umlauts, Cyrillic (queried in upper case), and Japanese between spaces.
pub async fn search_finds_words_in_any_script(store: &dyn AgentMemory) {
    for text in [
        "Viele Grüße aus München",
        "Привет из Москвы",
        "東京 の 天気",
        "plain ascii words",
    ] {
        store
            .store_memory(MemoryKind::Fact, text)
            .await
            .expect("store");
    }
    store
        .append(&sid("scripts"), &[Message::user("Привет из Москвы")])
        .await
        .expect("append");
    for (query, expected) in [
        ("münchen", "Viele Grüße aus München"),
        ("ПРИВЕТ", "Привет из Москвы"),
        ("東京", "東京 の 天気"),
    ] {
        let hits = search_items(store, query, &MemoryFilter::default()).await;
        assert_eq!(hit_texts(&hits), [expected], "search_memories({query:?})");
    }
    let hits = search_msgs(store, "привет", &MessageQuery::default()).await;
    assert_eq!(
        hit_contents(&hits),
        ["Привет из Москвы"],
        "search_messages in Cyrillic"
    );
}

/// The limit is honoured; without one a memory search returns at most 10.
pub async fn search_memories_honours_limit(store: &dyn AgentMemory) {
    for i in 0..15 {
        store
            .store_memory(MemoryKind::Fact, &format!("telescope observation {i}"))
            .await
            .expect("store");
    }
    for i in 0..3 {
        store
            .store_memory(MemoryKind::Fact, &format!("unrelated note {i}"))
            .await
            .expect("store");
    }
    assert_eq!(
        search_items(store, "telescope", &MemoryFilter::default().with_limit(5))
            .await
            .len(),
        5
    );
    assert_eq!(
        search_items(store, "telescope", &MemoryFilter::default())
            .await
            .len(),
        10,
        "the default limit is 10"
    );
    assert_eq!(
        search_items(store, "telescope", &MemoryFilter::default().with_limit(100))
            .await
            .len(),
        15
    );
    assert!(
        search_items(store, "telescope", &MemoryFilter::default().with_limit(0))
            .await
            .is_empty(),
        "limit 0 finds nothing"
    );
}

/// A kind filter restricts the search to that kind.
pub async fn search_memories_filters_by_kind(store: &dyn AgentMemory) {
    store
        .store_memory(MemoryKind::Fact, "volcano eruption fact")
        .await
        .expect("store");
    store
        .store_memory(MemoryKind::Insight, "volcano eruption insight")
        .await
        .expect("store");
    store
        .store_memory(MemoryKind::Insight, "glacier insight")
        .await
        .expect("store");
    let hits = search_items(store, "volcano", &MemoryFilter::kind(MemoryKind::Insight)).await;
    assert_eq!(hit_texts(&hits), ["volcano eruption insight"]);
    assert_eq!(
        search_items(store, "volcano", &MemoryFilter::default())
            .await
            .len(),
        2
    );
}

/// A query without words (empty, blanks, punctuation, glob or operator characters) returns
/// no hits rather than an error, for items and messages; an SQL-looking query is harmless.
pub async fn search_without_words_returns_nothing(store: &dyn AgentMemory) {
    store
        .store_memory(MemoryKind::Fact, "something stored")
        .await
        .expect("store");
    store
        .append(&sid("punct"), &[Message::user("something said")])
        .await
        .expect("append");
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
        assert!(
            search_items(store, query, &MemoryFilter::default())
                .await
                .is_empty(),
            "search_memories({query:?}) finds nothing"
        );
        assert!(
            search_msgs(store, query, &MessageQuery::default())
                .await
                .is_empty(),
            "search_messages({query:?}) finds nothing"
        );
    }
    search_items(store, "'; DROP TABLE x; --", &MemoryFilter::default()).await;
    search_msgs(store, "'; DROP TABLE x; --", &MessageQuery::default()).await;
    assert_eq!(
        store
            .list_memories(&MemoryFilter::default())
            .await
            .expect("list")
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
    store
        .append(&a, &[Message::user(SPARSE), Message::user(UNRELATED)])
        .await
        .expect("append");
    store
        .append(&b, &[dense.clone(), Message::user("lunch plans")])
        .await
        .expect("append");
    let hits = search_msgs(store, "KUBERNETES", &MessageQuery::default()).await;
    assert_eq!(
        hit_contents(&hits),
        [DENSE, SPARSE],
        "dense mention first, sparse second, others absent"
    );
    assert_best_first(hits.iter().map(|h| h.score), "search_messages");
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
    store
        .append(
            &a,
            &[
                Message::user("lighthouse keeper log"),
                Message::user("other"),
            ],
        )
        .await
        .expect("append");
    store
        .append(&b, &[Message::user("lighthouse repairs")])
        .await
        .expect("append");
    let scoped = |s: &str| MessageQuery {
        session: Some(sid(s)),
        limit: 10,
    };
    let hits = search_msgs(store, "lighthouse", &scoped("scope_a")).await;
    assert_eq!(hit_contents(&hits), ["lighthouse keeper log"]);
    assert!(hits.iter().all(|h| h.session == a));
    assert_eq!(
        search_msgs(store, "lighthouse", &MessageQuery::default())
            .await
            .len(),
        2,
        "unscoped finds both"
    );
    assert!(search_msgs(store, "lighthouse", &scoped("scope_missing"))
        .await
        .is_empty());
}

/// The message search limit is honoured, including 0 (no hits, not "unlimited").
pub async fn search_messages_honours_limit(store: &dyn AgentMemory) {
    let id = sid("many");
    store
        .append(&id, &numbered("satellite telemetry", 12))
        .await
        .expect("append");
    store
        .append(&id, &numbered("noise", 3))
        .await
        .expect("append");
    let limited = |limit| MessageQuery {
        session: None,
        limit,
    };
    assert_eq!(search_msgs(store, "satellite", &limited(4)).await.len(), 4);
    assert_eq!(
        search_msgs(store, "satellite", &limited(50)).await.len(),
        12
    );
    assert_eq!(
        search_msgs(store, "satellite", &MessageQuery::default())
            .await
            .len(),
        10,
        "the default limit is 10"
    );
    assert!(
        search_msgs(store, "satellite", &limited(0))
            .await
            .is_empty(),
        "limit 0 finds nothing"
    );
}

/// Search stays in step with writes: replaced and deleted items, messages replaced by
/// `save_session` or `compact`, and deleted sessions are no longer found; new text is.
pub async fn search_follows_updates_and_deletes(store: &dyn AgentMemory) {
    let item = store
        .put_memory(
            &MemoryItem::new(MemoryKind::Fact, "favourite colour aquamarine").with_key("colour"),
        )
        .await
        .expect("put");
    store
        .put_memory(
            &MemoryItem::new(MemoryKind::Fact, "favourite colour vermilion").with_key("colour"),
        )
        .await
        .expect("upsert");
    assert!(
        search_items(store, "aquamarine", &MemoryFilter::default())
            .await
            .is_empty(),
        "replaced text is not found"
    );
    assert_eq!(
        search_items(store, "vermilion", &MemoryFilter::default())
            .await
            .len(),
        1,
        "new text is found"
    );
    store.delete_memory(&item.id).await.expect("delete");
    assert!(
        search_items(store, "vermilion", &MemoryFilter::default())
            .await
            .is_empty(),
        "deleted items are not found"
    );

    let (a, b) = (sid("index_a"), sid("index_b"));
    store
        .append(&a, &[Message::user("marmalade recipe")])
        .await
        .expect("append");
    store
        .save_session(&a, &[Message::user("porridge recipe")], &Default::default())
        .await
        .expect("save");
    assert!(
        search_msgs(store, "marmalade", &MessageQuery::default())
            .await
            .is_empty(),
        "messages replaced by save_session are not found"
    );
    assert_eq!(
        search_msgs(store, "porridge", &MessageQuery::default())
            .await
            .len(),
        1
    );
    store
        .compact(&a, &[Message::system("summary about pancakes")])
        .await
        .expect("compact");
    assert_eq!(
        hit_contents(&search_msgs(store, "pancakes", &MessageQuery::default()).await),
        ["summary about pancakes"],
        "a compaction's replacement is found"
    );
    store
        .append(&b, &[Message::user("quinoa salad")])
        .await
        .expect("append");
    store.delete_session(&b).await.expect("delete_session");
    assert!(
        search_msgs(store, "quinoa", &MessageQuery::default())
            .await
            .is_empty(),
        "messages of deleted sessions are not found"
    );
}
