//! An agent with recall finds the long-term note a turn's question means, though they share
//! no word and ten newer notes would crowd it out; without recall it does not.

mod common;

use std::sync::Arc;

use agentmem_agent::{Agent, AgentConfig};
use agentmem_core::{AgentMemory, Embedder, MemoryKind, Message};
use agentmem_recall::{Recall, RecallOptions};
use agentmem_testkit::recall::{ConceptEmbedder, ADOPTION, ADOPTION_QUERY};
use common::{in_memory, turn_context};

#[tokio::test]
async fn recall_finds_a_note_by_meaning_for_the_turn() {
    let store: Arc<dyn AgentMemory> = in_memory();
    let config = AgentConfig::default().with_global_sessions(false);
    let plain = Agent::new(config.clone(), store.clone(), Some("ada")).expect("agent");
    plain
        .store_memory(ADOPTION, MemoryKind::LongTerm)
        .await
        .expect("store");
    for i in 0..12 {
        plain
            .store_memory(
                &format!("The train to Berlin left on time ({i})"),
                MemoryKind::LongTerm,
            )
            .await
            .expect("store");
    }
    let turn = [Message::user(ADOPTION_QUERY)];
    let without = turn_context(&plain, &turn).await;
    assert!(!without.memory.contains(ADOPTION), "{}", without.memory);

    let embedder: Arc<dyn Embedder> = Arc::new(ConceptEmbedder::default());
    let recall = Recall::new(store.clone(), embedder, RecallOptions::default());
    recall.index(&mut |_| {}).await.expect("index");
    let agent = Agent::new(config, store, Some("ada"))
        .expect("agent")
        .with_recall(recall);
    let with = turn_context(&agent, &turn).await;
    assert!(with.memory.contains(ADOPTION), "{}", with.memory);
}
