//! The CLI on the PostgreSQL deployments beyond one plain server, started by
//! `.ci/postgres-extra.sh`: a TLS-only server with a private CA (`POSTGRES_TLS_URL`, checked
//! with `verify-full`; and the same server with `sslmode=require`), and PgBouncer in
//! transaction pooling mode (`PGBOUNCER_URL`). Each runs in a schema of its own, dropped when
//! the test ends; an unreachable server skips its part unless AGENTMEM_REQUIRE_SERVICES is set,
//! which makes it fail.
mod common;
mod deployments;

use agentmem::postgres::PostgresStore;
use agentmem_testkit::servers::{pgbouncer_url, postgres_tls_url};
use agentmem_testkit::unique_namespace;
use deployments::{reachable, round_trip};

/// `base` with the query parameters `pairs` set, replacing any of the same names.
fn with(base: &str, pairs: &[(&str, &str)]) -> String {
    let (path, query) = base.split_once('?').unwrap_or((base, ""));
    let mut kept: Vec<String> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .filter(|p| !pairs.iter().any(|(k, _)| p.split('=').next() == Some(*k)))
        .map(str::to_string)
        .collect();
    kept.extend(pairs.iter().map(|(k, v)| format!("{k}={v}")));
    format!("{path}?{}", kept.join("&"))
}

/// Runs the round trip on `url` in a fresh schema, then drops the schema.
fn round_trip_in_fresh_schema(service: &str, url: &str) {
    let schema = unique_namespace("cli_pg");
    let url = with(url, &[("schema", &schema)]);
    if !reachable(service, &url) {
        return;
    }
    round_trip(&url);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = PostgresStore::connect(&url).await.unwrap();
        store.drop_schema().await.unwrap();
    });
}

#[test]
fn append_show_search_and_compact_over_tls_and_through_pgbouncer() {
    let tls = postgres_tls_url();
    round_trip_in_fresh_schema("postgres (TLS, verify-full)", &tls);
    let require = with(&tls, &[("sslmode", "require")]);
    round_trip_in_fresh_schema("postgres (TLS, require)", &require);
    round_trip_in_fresh_schema("pgbouncer (transaction pooling)", &pgbouncer_url());
}
