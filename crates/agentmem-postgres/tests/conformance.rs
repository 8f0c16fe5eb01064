//! The agentmem conformance suite against the PostgreSQL at `DATABASE_URL`, one schema
//! per test so the cases run in parallel, dropped when the test drops its store.

mod common;

use agentmem_testkit::{NamespaceGuard, TestStore};

async fn store() -> Option<TestStore> {
    let store = common::open(&[]).await?;
    let schema = NamespaceGuard::new().postgres_schema(&common::database_url(), store.schema());
    Some(TestStore::new(store).with_namespace(schema).into_dyn())
}

agentmem_testkit::conformance_tests!(store);
