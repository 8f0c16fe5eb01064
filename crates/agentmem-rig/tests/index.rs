//! `AgentmemIndex`: rig's `VectorStoreIndex` over memory items, with the stand-in model of
//! the recall cases (the real model's recall runs in the facade's `tests/recall_backends.rs`).
use std::sync::Arc;

use agentmem_core::{
    AgentMemory, InMemoryStore, MemoryFilter, MemoryItem, MemoryKind, MemoryScope, MemoryStore,
};
use agentmem_recall::{Recall, RecallOptions, SearchMode};
use agentmem_rig::AgentmemIndex;
use agentmem_testkit::recall::ConceptEmbedder;
use rig_core::vector_store::request::{Filter, SearchFilter};
use rig_core::vector_store::{VectorSearchRequest, VectorStoreError, VectorStoreIndex};
use serde_json::{json, Value};

const ADOPTION: &str = "I contacted my mentor for adoption advice";

/// A store with the adoption note as a fact, a preference, and a fact in another agent's
/// scope, all embedded.
async fn indexed() -> (Recall, Vec<MemoryItem>) {
    let store: Arc<dyn AgentMemory> = Arc::new(InMemoryStore::new());
    let mut items = Vec::new();
    for item in [
        MemoryItem::new(MemoryKind::Fact, ADOPTION),
        MemoryItem::new(MemoryKind::Insight, "Caroline learnt to brew green tea"),
        MemoryItem::new(MemoryKind::Fact, "The kitchen tap leaks"),
        MemoryItem::new(MemoryKind::Fact, "Caroline is adopting a child")
            .in_scope(MemoryScope::agent("other-agent")),
    ] {
        items.push(store.put_memory(&item).await.unwrap());
    }
    let recall = Recall::new(
        store,
        Arc::new(ConceptEmbedder::default()),
        RecallOptions::default(),
    );
    recall.index(&mut |_| {}).await.unwrap();
    (recall, items)
}

fn request(query: &str, samples: u64) -> VectorSearchRequest {
    VectorSearchRequest::builder()
        .query(query)
        .samples(samples)
        .build()
}

#[tokio::test]
async fn finds_by_meaning_within_the_scope_it_was_given() {
    let (recall, items) = indexed().await;
    let index = AgentmemIndex::new(recall.clone())
        .with_filter(MemoryFilter::default().visible_from(MemoryScope::global()))
        .with_mode(SearchMode::Semantic);
    let hits = index
        .top_n::<Value>(request("what did Caroline say about adopting?", 3))
        .await
        .unwrap();
    assert_eq!(hits[0].document["text"], ADOPTION, "{hits:?}");
    assert_eq!(hits[0].id, items[0].id.to_string());
    assert!(
        hits.iter().all(|h| items[3].id != h.id),
        "another agent's item is outside the scope: {hits:?}"
    );
    let item: MemoryItem = index
        .top_n::<MemoryItem>(request("adopting", 1))
        .await
        .unwrap()
        .remove(0)
        .document;
    assert_eq!(item, items[0], "documents are whole memory items");

    let ids = index
        .top_n_ids(request("what did Caroline say about adopting?", 3))
        .await
        .unwrap();
    let scored: Vec<(f64, String)> = hits.iter().map(|h| (h.score, h.id.clone())).collect();
    let id_scored: Vec<(f64, String)> = ids.iter().map(|h| (h.score, h.id.clone())).collect();
    assert_eq!(id_scored, scored);
}

#[tokio::test]
async fn samples_threshold_and_kind_filters_apply() {
    let (recall, items) = indexed().await;
    let index = AgentmemIndex::new(recall);
    let all = index
        .top_n_ids(request("Caroline adoption tea", 10))
        .await
        .unwrap();
    assert!(all.len() >= 3, "{all:?}");
    assert_eq!(
        index
            .top_n_ids(request("Caroline adoption tea", 2))
            .await
            .unwrap()
            .len(),
        2
    );

    let threshold = all[1].score;
    let above = index
        .top_n_ids(
            VectorSearchRequest::builder()
                .query("Caroline adoption tea")
                .samples(10)
                .threshold(threshold)
                .build(),
        )
        .await
        .unwrap();
    assert!(above.len() >= 2 && above.iter().all(|h| h.score >= threshold));
    assert!(above.len() < all.len(), "{above:?} of {all:?}");

    let insights = index
        .top_n::<Value>(
            VectorSearchRequest::builder()
                .query("Caroline adoption tea")
                .samples(10)
                .filter(Filter::eq("kind", json!("insight")))
                .build(),
        )
        .await
        .unwrap();
    assert_eq!(insights.len(), 1);
    assert_eq!(insights[0].id, items[1].id.to_string());
}

#[tokio::test]
async fn unsupported_filters_are_refused() {
    let (recall, _) = indexed().await;
    let index = AgentmemIndex::new(recall);
    for filter in [
        Filter::eq("agent", json!("other-agent")),
        Filter::gt("kind", json!("fact")),
        Filter::eq("kind", json!("no-such-kind")),
        Filter::eq("kind", json!(3)),
        Filter::eq("kind", json!("fact")).and(Filter::eq("kind", json!("insight"))),
        Filter::eq("kind", json!("fact")).or(Filter::eq("kind", json!("insight"))),
    ] {
        let asked = format!("{filter:?}");
        let request = VectorSearchRequest::builder()
            .query("adoption")
            .samples(5)
            .filter(filter)
            .build();
        let err = index.top_n_ids(request).await.expect_err(&asked);
        assert!(
            matches!(err, VectorStoreError::FilterError(_)),
            "{asked}: {err}"
        );
    }
}
