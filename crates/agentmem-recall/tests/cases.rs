//! The recall cases on the in-memory store, with the stand-in model (the real model runs them
//! on every backend in the facade's `tests/recall_backends.rs`).
use std::sync::Arc;

use agentmem_core::{AgentMemory, Embedder, InMemoryStore};
use agentmem_testkit::recall::{run_recall_case, ConceptEmbedder, RECALL_CASES};

#[tokio::test]
async fn every_recall_case_passes_on_the_in_memory_store() {
    for name in RECALL_CASES {
        let store: Arc<dyn AgentMemory> = Arc::new(InMemoryStore::new());
        let embedder: Arc<dyn Embedder> = Arc::new(ConceptEmbedder::default());
        run_recall_case(name, store, embedder).await;
    }
}
