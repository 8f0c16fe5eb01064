//! The conformance suite against the TLS-only PostgreSQL at `POSTGRES_TLS_URL`
//! (`.ci/postgres-extra.sh`: `sslmode=verify-full` against its private CA, SCRAM with channel
//! binding), one schema per test, dropped when the test drops its store.

mod common;

use agentmem_testkit::TestStore;

async fn store() -> Option<TestStore> {
    let store = common::open_at("postgres-tls", &common::tls_url(), &[]).await?;
    Some(store.into_dyn())
}

agentmem_testkit::conformance_tests!(store);
