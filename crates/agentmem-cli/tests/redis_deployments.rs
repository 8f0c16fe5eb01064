//! The CLI on the Redis deployments beyond one plain server: a TLS-only server with a private
//! CA (`REDIS_TLS_URL`, whose `tls_ca` option names the CA; and the same CA, `REDIS_TLS_CA`,
//! given through `SSL_CERT_FILE` instead) and a
//! 3-master Redis Cluster (`REDIS_CLUSTER_URL`), both started by `.ci/redis-extra.sh`. Each
//! runs in a key prefix of its own, removed when the test ends; an unreachable server skips
//! its part unless AGENTMEM_REQUIRE_SERVICES is set, which makes it fail.
#![allow(clippy::unwrap_used)]

mod common;

use agentmem_testkit::{service_unavailable, ServerNamespace};
use common::{agentmem, column, json, ok, rows};

/// The store at `url` answers, or its part is skipped (or fails when services are required).
fn reachable(service: &str, url: &str) -> bool {
    let out = agentmem()
        .args(["--store", url, "sessions"])
        .output()
        .unwrap();
    if out.status.success() {
        return true;
    }
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    service_unavailable::<()>(service, url, &err);
    false
}

/// Appends, shows, searches and compacts on the store at `url`, as a user would.
fn round_trip(url: &str) {
    let cli = || {
        let mut cmd = agentmem();
        cmd.args(["--store", url]);
        cmd
    };
    ok(cli()
        .args(["append", "ResearchAgent", "--role", "user"])
        .arg("Compare BigQuery and AlloyDB"));
    ok(cli()
        .args(["append", "ResearchAgent", "--role", "assistant"])
        .arg("AlloyDB speaks PostgreSQL; BigQuery is serverless."));
    ok(cli().args(["append", "other", "--role", "user", "unrelated words"]));

    let shown = json(cli().args(["show", "ResearchAgent"]));
    assert_eq!(rows(&shown["messages"]).len(), 2, "{url}");
    assert_eq!(
        shown["messages"][0]["content"],
        "Compare BigQuery and AlloyDB"
    );
    let hits = json(cli().args(["search", "bigquery"]));
    assert_eq!(
        column(&hits, "session"),
        ["ResearchAgent", "ResearchAgent"],
        "{url}"
    );

    let out = ok(cli().args([
        "compact",
        "ResearchAgent",
        "--summary",
        "Databases compared.",
    ]));
    assert!(out.contains("2 messages archived"), "{url}: {out}");
    let shown = json(cli().args(["show", "ResearchAgent"]));
    assert_eq!(rows(&shown["messages"]).len(), 1, "{url}");
    assert!(shown["messages"][0]["content"]
        .as_str()
        .unwrap()
        .ends_with("Databases compared."));
    let archives = json(cli().args(["archives", "ResearchAgent"]));
    assert_eq!(rows(&archives).len(), 1, "{url}");
    assert_eq!(archives[0]["message_count"], 2);
    // The archived messages left the index; the summary is found.
    let hits = json(cli().args(["search", "serverless"]));
    assert!(rows(&hits).is_empty(), "{url}: {hits}");
    let hits = json(cli().args(["search", "databases"]));
    assert_eq!(column(&hits, "session"), ["ResearchAgent"], "{url}");
    let sessions = json(cli().arg("sessions"));
    assert_eq!(column(&sessions, "id"), ["ResearchAgent", "other"], "{url}");
}

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
