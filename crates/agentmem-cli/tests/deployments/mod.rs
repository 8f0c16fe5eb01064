//! What the tests of the CLI on server deployments (TLS, clusters, poolers) share: whether a
//! store answers, and one user's round trip (append, show, search, compact) on it.
#![allow(
    dead_code,
    reason = "helpers shared by several test binaries, each using some"
)]

use agentmem_testkit::service_unavailable;

use crate::common::{agentmem, column, json, ok, rows};

/// The store at `url` answers, or its part is skipped (or fails when services are required).
pub fn reachable(service: &str, url: &str) -> bool {
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
pub fn round_trip(url: &str) {
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
