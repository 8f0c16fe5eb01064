//! The agentmem conformance suite against the PostgreSQL at `DATABASE_URL`, one schema
//! per test so the cases run in parallel, dropped when the test drops its store.

mod common;

use agentmem_testkit::TestStore;

async fn store() -> Option<TestStore> {
    Some(common::open(&[]).await?.into_dyn())
}

agentmem_testkit::conformance_tests!(store);
