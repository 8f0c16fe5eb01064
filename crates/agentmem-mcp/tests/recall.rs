//! `search_memory` by meaning: with recall, a background indexer embeds what `store_memory`
//! writes and the tool searches in hybrid mode by default, saying how each hit was found;
//! without, it searches by keyword and refuses the modes that need an embedder.

mod common;

use std::sync::Arc;
use std::time::Duration;

use agentmem_core::AgentMemory;
use agentmem_mcp::{McpServer, RecallOpener, StoreOpener};
use agentmem_recall::{Recall, RecallOptions};
use agentmem_testkit::embeddings::WordsEmbedder;
use common::{store, Client};
use serde_json::json;

/// A server over `store` whose recall is `recall`.
fn server(store: Arc<dyn AgentMemory>, recall: Recall) -> McpServer {
    let opener: StoreOpener = Arc::new(move || {
        let store = store.clone();
        Box::pin(async move { Ok(store) })
    });
    let recaller: RecallOpener = Arc::new(move |_| Ok(Some(recall.clone())));
    McpServer::with_recall("memory:test", opener, recaller)
}

/// Waits (a bounded number of short polls) until the indexer has embedded every text.
async fn indexed(recall: &Recall) {
    for _ in 0..600 {
        let lag = recall.lag().await.expect("lag");
        if lag.texts > 0 && lag.pending == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the background indexer never caught up");
}

#[tokio::test]
async fn with_an_embedder_search_memory_finds_by_meaning_and_says_how() {
    let store = store();
    let recall = Recall::new(
        store.clone(),
        Arc::new(WordsEmbedder::default()),
        RecallOptions::default(),
    );
    let mut c = Client::start(server(store, recall.clone())).await;
    for text in [
        "I adopted a puppy last spring",
        "The invoice is due on Friday",
    ] {
        c.ok("store_memory", json!({"text": text})).await;
    }
    indexed(&recall).await;

    let found = c
        .ok(
            "search_memory",
            json!({"query": "canine", "mode": "semantic"}),
        )
        .await;
    let first = &found["results"][0];
    assert_eq!(first["item"]["text"], "I adopted a puppy last spring");
    assert_eq!(first["found_by"], "semantic");
    assert_eq!(first["semantic_rank"], 1);
    assert!(first["similarity"].as_f64().expect("similarity") > 0.0);
    assert_eq!(first.get("keyword_rank"), None);

    // Hybrid by default: a word match found both ways, a synonym by meaning alone.
    let found = c.ok("search_memory", json!({"query": "invoice"})).await;
    assert_eq!(
        found["results"][0]["item"]["text"],
        "The invoice is due on Friday"
    );
    assert_eq!(found["results"][0]["found_by"], "both");
    let found = c.ok("search_memory", json!({"query": "dog"})).await;
    assert_eq!(
        found["results"][0]["item"]["text"],
        "I adopted a puppy last spring"
    );
    assert_eq!(found["results"][0]["found_by"], "semantic");

    let found = c
        .ok(
            "search_memory",
            json!({"query": "canine", "mode": "keyword"}),
        )
        .await;
    assert_eq!(found["results"], json!([]));
    c.fails_saying(
        "search_memory",
        json!({"query": "dog", "mode": "fuzzy"}),
        "unknown search mode",
    )
    .await;
}

#[tokio::test]
async fn without_an_embedder_search_memory_is_by_keyword() {
    let (mut c, _store) = Client::fresh().await;
    c.ok("store_memory", json!({"text": "The user likes tea"}))
        .await;
    let found = c.ok("search_memory", json!({"query": "tea"})).await;
    assert_eq!(found["results"][0]["item"]["text"], "The user likes tea");
    assert_eq!(found["results"][0]["found_by"], "keyword");
    assert_eq!(found["results"][0]["keyword_rank"], 1);
    for mode in ["semantic", "hybrid"] {
        c.fails_saying(
            "search_memory",
            json!({"query": "tea", "mode": mode}),
            "embedder=local",
        )
        .await;
    }
}
