//! The whole conformance suite against `agentmem_core::InMemory`, the reference backend.

use std::sync::Arc;

use agentmem_core::{AgentMemory, InMemory};

/// A fresh store per test: an `InMemory` is its own namespace.
async fn store() -> Option<Arc<dyn AgentMemory>> {
    Some(Arc::new(InMemory::new()))
}

agentmem_testkit::conformance_tests!(store);
