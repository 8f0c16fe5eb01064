//! The CLI on the Redis deployments beyond one plain server: a TLS-only server with a private
//! CA (`REDIS_TLS_URL`, whose `tls_ca` option names the CA; and the same CA, `REDIS_TLS_CA`,
//! given through `SSL_CERT_FILE` instead) and a
//! 3-master Redis Cluster (`REDIS_CLUSTER_URL`), both started by `.ci/redis-extra.sh`. Each
//! runs in a key prefix of its own, removed when the test ends; an unreachable server skips
//! its part unless AGENTMEM_REQUIRE_SERVICES is set, which makes it fail.
mod common;
mod deployments;

use agentmem_testkit::ServerNamespace;
use common::{agentmem, rows};
use deployments::{reachable, round_trip};

#[test]
fn append_show_search_and_compact_over_tls_and_on_a_cluster() {
    let tls = ServerNamespace::redis_tls("cli_tls");
    if reachable("redis (TLS)", tls.url()) {
        round_trip(tls.url());

        // Without `tls_ca`, the CA comes from SSL_CERT_FILE (`REDIS_TLS_CA` names the file).
        if let Ok(ca) = std::env::var("REDIS_TLS_CA") {
            let (base, query) = tls.url().split_once('?').unwrap();
            let kept: Vec<&str> = query
                .split('&')
                .filter(|pair| !pair.starts_with("tls_ca="))
                .collect();
            let url = format!("{base}?{}", kept.join("&"));
            let out = agentmem()
                .args(["--store", &url, "sessions", "--json"])
                .env("SSL_CERT_FILE", &ca)
                .env_remove("SSL_CERT_DIR")
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let sessions: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(rows(&sessions).len(), 2);
        }
    }

    let cluster = ServerNamespace::redis_cluster("cli_cluster");
    if reachable("redis cluster", cluster.url()) {
        round_trip(cluster.url());
    }
}
