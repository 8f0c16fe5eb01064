//! What the facade's backend tests share: server URLs in a fresh namespace (read from
//! `REDIS_URL`, `DATABASE_URL`, `MONGODB_URL` at run time), and opening a store through
//! `agentmem::open`, skipping only when `AGENTMEM_REQUIRE_SERVICES` is unset.
// Each test binary uses the helpers of the backends compiled in.
#![allow(dead_code)]

use std::sync::Arc;

use agentmem::AgentMemory;
use agentmem_testkit::{env_url, service_unavailable, unique_namespace};

/// Opens `url`; `None` (after reporting the skip) when the server is unavailable and
/// services are not required.
pub async fn open(service: &str, url: &str) -> Option<Arc<dyn AgentMemory>> {
    match agentmem::open(url).await {
        Ok(store) => Some(store),
        Err(e) => service_unavailable(service, url, &e),
    }
}

fn with_query(base: &str, key: &str, value: &str) -> String {
    let mut url = url::Url::parse(base).expect("a valid server URL");
    url.query_pairs_mut().append_pair(key, value);
    url.to_string()
}

/// The Redis server's URL with a fresh key prefix starting with `namespace`.
pub fn redis_url(namespace: &str) -> String {
    let base = env_url("REDIS_URL", "redis://127.0.0.1:6379");
    with_query(&base, "prefix", &unique_namespace(namespace))
}

/// The PostgreSQL server's URL with a fresh schema starting with `namespace`.
pub fn postgres_url(namespace: &str) -> String {
    let base = env_url("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test");
    with_query(&base, "schema", &unique_namespace(namespace))
}

/// The MongoDB server's URL with a fresh database starting with `namespace`.
pub fn mongodb_url(namespace: &str) -> String {
    let base = env_url(
        "MONGODB_URL",
        "mongodb://127.0.0.1:27017/?directConnection=true",
    );
    let mut url = url::Url::parse(&base).expect("a valid MongoDB URL");
    url.set_path(&format!("/{}", unique_namespace(namespace)));
    url.to_string()
}
