//! The conformance suite through the PgBouncer at `PGBOUNCER_URL`, in transaction pooling
//! mode (`.ci/postgres-extra.sh`), where a connection's transactions may each run on another
//! server connection: the store detects the pooler and sends its statements unnamed. One
//! schema per test, dropped when the test drops its store.

mod common;

use agentmem_testkit::TestStore;

async fn store() -> Option<TestStore> {
    let store = common::open_at("pgbouncer", &common::pgbouncer_url(), &[]).await?;
    Some(store.into_dyn())
}

agentmem_testkit::conformance_tests!(store);
