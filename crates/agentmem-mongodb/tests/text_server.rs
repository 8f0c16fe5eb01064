//! The search path on a server with text indexes: the conformance suite's search cases and
//! targeted `$text` tests, against `MONGODB_TEXT_URL`
//! (default `mongodb://127.0.0.1:27018/?directConnection=true`; nx-27017 in CI).
//!
//! Only the search, checkpoint and graph cases run here: nx-27017 is a test double for
//! `$text`, not a faithful MongoDB elsewhere, but checkpoints and the graph use no
//! transaction and no server-specific feature, so they must work on any compatible server.
//! (Not the vector cases: nx-27017 0.8.1 stores binary `_id`s but never matches them in a
//! query, `$eq` or `$in`.)
//! The whole suite runs on `MONGODB_URL`, with and without transactions.
mod common;

use agentmem_core::{
    AgentMemoryExt, MemoryFilter, MemoryKind, MemoryStore, Message, MessageQuery, SessionId,
    SessionStore,
};
use agentmem_testkit::cases::{self, Area, Case};
use agentmem_testkit::probe::{memory_hits, message_hits, put_memories};

/// The conformance cases on the search path, from the registry: every search case, and the
/// `get_context` cases (which search with a query, and list without one).
fn search_path(case: &&Case) -> bool {
    case.area == Area::Search || case.name.starts_with("get_context_")
}

/// The search-path cases of the conformance suite, each on a fresh store on the text server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_search_cases() {
    let selected: Vec<&Case> = cases::ALL.iter().filter(search_path).collect();
    assert!(
        selected.len() >= 14,
        "the search cases and the three get_context cases"
    );
    cases::run_cases(selected, common::text_conformance_store).await;
}

/// The checkpoint cases of the conformance suite, each on a fresh store on the text server
/// (a second server implementation: no transactions, its own query engine).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_checkpoint_cases() {
    let selected: Vec<&Case> = Area::Checkpoints.cases().collect();
    assert!(!selected.is_empty(), "the checkpoint cases");
    cases::run_cases(selected, common::text_conformance_store).await;
}

/// The knowledge-graph cases of the conformance suite, each on a fresh store on the text
/// server: the graph uses no transaction either, so it must work on any compatible server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_graph_cases() {
    let selected: Vec<&Case> = Area::Graph.cases().collect();
    assert!(!selected.is_empty(), "the graph cases");
    cases::run_cases(selected, common::text_conformance_store).await;
}

fn sid(s: &str) -> SessionId {
    s.parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_server_uses_text_indexes_and_no_transactions() {
    let Some(store) = common::text_store().await else {
        return;
    };
    assert!(
        store.features().text_search,
        "MONGODB_TEXT_URL must accept text indexes"
    );
    assert!(store.capabilities().indexed_search);
    assert!(!store.features().transactions);
    assert!(!store.capabilities().atomic_compaction);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_search_matches_any_word_and_ranks_by_score() {
    let Some(store) = common::text_store().await else {
        return;
    };
    let a = sid("a");
    let b = sid("b");
    store
        .append(
            &a,
            &[
                Message::user("kubernetes kubernetes kubernetes cluster"),
                Message::user(
                    "a long text that mentions kubernetes only once among many other words",
                ),
                Message::user("nothing relevant here"),
            ],
        )
        .await
        .unwrap();
    store
        .append_one(&b, Message::assistant("a cluster of Raspberry Pis"))
        .await
        .unwrap();

    // Any word: "cluster" alone matches in both sessions, "kubernetes" in one.
    let hits = message_hits(&*store, "Kubernetes cluster").await;
    let texts: Vec<&str> = hits.iter().map(|h| h.message.content.as_str()).collect();
    assert_eq!(hits.len(), 3, "{texts:?}");
    assert_eq!(texts[0], "kubernetes kubernetes kubernetes cluster");
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));

    // Scoped to one session.
    let scoped = store
        .search_messages(
            "cluster",
            &MessageQuery {
                session: Some(b.clone()),
                limit: 10,
            },
        )
        .await
        .unwrap();
    assert_eq!(scoped.len(), 1);
    assert_eq!(scoped[0].session, b);

    // Limit, and no match.
    let one = store
        .search_messages(
            "kubernetes",
            &MessageQuery {
                session: None,
                limit: 1,
            },
        )
        .await
        .unwrap();
    assert_eq!(one.len(), 1);
    assert!(message_hits(&*store, "zebra").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_search_keeps_the_word_rule_and_skips_compacted_messages() {
    let written = [Message::user("Café culture"), Message::user("running dogs")];
    let Some((store, s)) = common::text_store_holding("s", &written).await else {
        return;
    };
    // `$text` is diacritic-insensitive; the contract is whole terms (Porter stems of words),
    // case-insensitive, diacritics kept.
    assert!(message_hits(&*store, "cafe").await.is_empty());
    assert_eq!(message_hits(&*store, "CAFÉ").await.len(), 1);
    let running = message_hits(&*store, "run").await;
    assert_eq!(
        running.len(),
        1,
        "\"running\" is stored as its stem \"run\""
    );
    assert_eq!(running[0].message.content, "running dogs");
    // A different stem is a different term, even where one word starts the other.
    assert!(message_hits(&*store, "runner").await.is_empty());
    assert!(message_hits(&*store, "ru").await.is_empty());
    // After compaction the archived messages are no longer current, so not found.
    store
        .compact(&s, &[Message::system("summary of dogs")])
        .await
        .unwrap();
    let hits = message_hits(&*store, "dogs").await;
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].message.content, "summary of dogs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_search_over_memories_filters_by_kind() {
    let Some(store) = common::text_store().await else {
        return;
    };
    let items = [
        (MemoryKind::Fact, "prefers Rust over Go"),
        (MemoryKind::Insight, "Rust rust rust builds are slow"),
        (MemoryKind::Fact, "lives in Berlin"),
    ];
    put_memories(&*store, &items).await;
    let hits = memory_hits(&*store, "rust").await;
    assert_eq!(hits.len(), 2);
    assert_eq!(hits[0].item.kind, MemoryKind::Insight);
    let facts = store
        .search_memories("rust berlin", &MemoryFilter::kind(MemoryKind::Fact))
        .await
        .unwrap();
    assert_eq!(facts.len(), 2);
    assert!(facts.iter().all(|h| h.item.kind == MemoryKind::Fact));
    let context = store.get_context(Some("Berlin")).await.unwrap();
    assert_eq!(context, "- lives in Berlin");
}

/// A database of schema version 3 (no search terms, text indexes over the raw fields) is
/// migrated on open, by two processes at once: `$text` then finds "I looked into adoption"
/// for "adopting".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_3_text_indexes_move_to_search_terms() {
    let Some(store) = common::text_store().await else {
        return;
    };
    assert!(store.features().text_search);
    common::schema_3_store_migrates_to_terms(&store, 5).await;
}
