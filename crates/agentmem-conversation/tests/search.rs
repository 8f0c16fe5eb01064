//! Search and the retrieval tool.
mod common;

use std::sync::Arc;

use agentmem_conversation::{Conversation, MemorySearchTool};
use agentmem_core::{AgentMemory, ErrorKind, Role};
use common::{in_memory, name, persisting, ScriptedStore};
use serde_json::json;

async fn filled(store: Option<Arc<dyn AgentMemory>>) -> Conversation {
    let mut b = Conversation::builder(name("Searcher")).system_prompt("You research GCP options.");
    if let Some(s) = store {
        b = b.persistent(true).store(s);
    }
    let c = b.build().await.unwrap();
    for text in [
        "Latency matters most for the dashboard.",
        "BigQuery latency latency is fine for batch analytics.",
        "AlloyDB is Postgres-compatible.",
        "LATENCY budget: 50 ms.",
    ] {
        c.add(Role::User, text).await.unwrap();
    }
    c
}

#[tokio::test]
async fn ephemeral_search_ranks_the_in_memory_history() {
    let c = filled(None).await;
    let hits = c.search("latency", 10).await.unwrap();
    let texts: Vec<&str> = hits.iter().map(|h| h.message.content.as_str()).collect();
    assert_eq!(texts.len(), 3);
    assert_eq!(
        texts[0],
        "BigQuery latency latency is fine for batch analytics."
    );
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    assert!(hits.iter().all(|h| h.session.as_str() == "Searcher"));
    assert_eq!(c.search("latency", 1).await.unwrap().len(), 1);
    assert!(c.search("kubernetes", 10).await.unwrap().is_empty());
    // The system prompt is part of the in-memory history.
    assert_eq!(c.search("GCP", 10).await.unwrap().len(), 1);
}

#[tokio::test]
async fn persistent_search_goes_through_the_store_scoped_to_the_session() {
    let inner = in_memory();
    let other = persisting("Other", inner.clone()).build().await.unwrap();
    other.add(Role::User, "latency elsewhere").await.unwrap();
    let store = ScriptedStore::new(inner, None);
    let c = filled(Some(store.clone())).await;
    let hits = c.search("latency", 10).await.unwrap();
    assert_eq!(store.log().last(), Some(&"search_messages"));
    assert_eq!(
        hits.len(),
        3,
        "another session leaked in, or a message is missing"
    );
    assert!(hits.iter().all(|h| h.session.as_str() == "Searcher"));
    // After stop_persisting, new messages are only in memory: search memory.
    c.stop_persisting().await;
    c.add(Role::User, "latency note kept in memory only")
        .await
        .unwrap();
    let calls = store.log().len();
    assert_eq!(c.search("latency", 10).await.unwrap().len(), 4);
    assert_eq!(store.log().len(), calls);
}

#[tokio::test]
async fn keyword_search_is_an_exact_case_insensitive_substring() {
    let c = filled(None).await;
    let found = c.search_keyword("LaTeNcY");
    assert_eq!(found.len(), 3);
    assert_eq!(found[0].content, "Latency matters most for the dashboard.");
    assert_eq!(c.search_keyword("postgres-comp").len(), 1);
    assert_eq!(c.search_keyword("50 ms").len(), 1);
    assert!(c.search_keyword("latencies").is_empty());
    assert!(c.search_keyword("").is_empty());
}

#[tokio::test]
async fn the_retrieval_tool_describes_itself_and_answers_with_text() {
    let c = Arc::new(filled(None).await);
    let tool = MemorySearchTool::new(c.clone());
    assert_eq!(tool.name(), "search_memory");
    assert!(!tool.description().is_empty());
    let params = tool.parameters();
    assert_eq!(params["type"], "object");
    assert_eq!(params["required"], json!(["query"]));
    assert_eq!(params["properties"]["query"]["type"], "string");
    assert_eq!(tool.definition()["function"]["name"], "search_memory");

    let text = tool
        .call(json!({"query": "latency", "limit": 2}))
        .await
        .unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "2 result(s) for \"latency\":");
    assert_eq!(lines.len(), 3);
    assert!(
        lines[1].starts_with("1. [")
            && lines[1].ends_with("] User: BigQuery latency latency is fine for batch analytics.")
    );
    // Arguments as a JSON string, as chat-completions APIs deliver them.
    let text = tool.call(json!("{\"query\": \"AlloyDB\"}")).await.unwrap();
    assert!(text.contains("AlloyDB is Postgres-compatible."));
    assert_eq!(
        tool.call(json!({"query": "kubernetes"})).await.unwrap(),
        "No memory matches \"kubernetes\"."
    );

    for bad in [
        json!({}),
        json!({"query": "  "}),
        json!({"query": "x", "limit": 0}),
        json!({"query": "x", "limit": "many"}),
        json!("not json"),
    ] {
        let err = tool.call(bad.clone()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{bad}");
    }
}

#[tokio::test]
async fn the_tool_can_search_a_whole_store() {
    let store = in_memory();
    let c = filled(Some(store.clone())).await;
    drop(c);
    let tool = MemorySearchTool::over_store(store, None).with_default_limit(10);
    let text = tool.call(json!({"query": "AlloyDB"})).await.unwrap();
    assert!(text.starts_with("1 result(s)"), "{text}");
}
