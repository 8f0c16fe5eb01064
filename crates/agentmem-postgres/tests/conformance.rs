//! The agentmem conformance suite (C1) against the PostgreSQL at `DATABASE_URL`, one schema
//! per test so the cases run in parallel.

mod common;

use std::sync::Arc;

use agentmem_core::AgentMemory;

async fn store() -> Option<Arc<dyn AgentMemory>> {
    let store = common::open(&[]).await?;
    Some(Arc::new(store))
}

agentmem_testkit::conformance_tests!(store);
