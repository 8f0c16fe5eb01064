//! Search by meaning from the command line: `reindex`, `search --mode`, `memories --search`
//! and the index lag `doctor` shows, against an OpenAI-compatible embeddings server started
//! here (a bag-of-words model of 8 dimensions that knows a few synonyms), so no real model is
//! needed.
mod common;

use std::path::Path;

use agentmem_testkit::embeddings::spawn_embeddings_server;
use common::{fails, json, ok, on, rows};
use serde_json::{json, Value};

/// The file store in `dir` with the test server as its embedder, messages embedded too.
fn embedding_url(dir: &Path, server: &str) -> String {
    let encoded = server.replace(':', "%3A").replace('/', "%2F");
    format!(
        "{}&embedder=http&embed_url={encoded}&embed_model=test&embed=messages",
        common::file_url(dir)
    )
}

fn with(url: &str) -> assert_cmd::Command {
    let mut cmd = common::agentmem();
    cmd.args(["--store", url]);
    cmd
}

/// A fresh folder, and the URL of the file store there with the test server as its embedder,
/// holding two memory items and two messages, none sharing a word with the other's synonyms.
fn filled() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let url = embedding_url(dir.path(), &spawn_embeddings_server());
    let items = dir.path().join("items.jsonl");
    std::fs::write(
        &items,
        "{\"agentmem_export\":1}\n\
         {\"type\":\"memory\",\"id\":\"m1\",\"kind\":\"fact\",\"text\":\"I adopted a puppy last spring\",\"created_at\":\"2026-04-21T09:00:00Z\",\"updated_at\":\"2026-04-21T09:00:00Z\"}\n\
         {\"type\":\"memory\",\"id\":\"m2\",\"kind\":\"fact\",\"text\":\"The invoice is due on Friday\",\"created_at\":\"2026-04-21T09:00:01Z\",\"updated_at\":\"2026-04-21T09:00:01Z\"}\n",
    )
    .unwrap();
    ok(with(&url)
        .arg("import")
        .arg(&items)
        .args(["--format", "jsonl"]));
    ok(with(&url).args(["append", "s1", "--role", "user", "My dog sleeps all day"]));
    ok(with(&url).args(["append", "s1", "--role", "user", "Pay the bill tomorrow"]));
    (dir, url)
}

#[test]
fn reindex_embeds_what_is_missing_and_search_finds_by_meaning() {
    let (dir, url) = filled();

    let first = json(with(&url).arg("reindex"));
    assert_eq!(first["texts"], 4);
    assert_eq!(first["embedded"], 4);
    assert_eq!(first["all"], false);
    assert_eq!(first["model"]["id"], "test");
    assert_eq!(first["model"]["dimensions"], 8);
    let again = json(with(&url).arg("reindex"));
    assert_eq!(again["embedded"], 0, "a second run embeds nothing: {again}");
    let text = ok(with(&url).arg("reindex"));
    assert!(text.starts_with("embedded 0 texts with test"), "{text}");
    let all = json(with(&url).args(["reindex", "--all"]));
    assert_eq!(
        (all["embedded"].clone(), all["all"].clone()),
        (json!(4), json!(true))
    );

    // Messages: by meaning alone, then hybrid (the default with embed=messages).
    let found = json(with(&url).args(["search", "canine", "--mode", "semantic"]));
    let hit = &rows(&found)[0];
    assert_eq!(hit["message"]["content"], "My dog sleeps all day");
    assert_eq!(hit["semantic_rank"], 1);
    assert_eq!(hit["keyword_rank"], Value::Null);
    assert!(hit["similarity"].as_f64().unwrap() > 0.0);
    assert!(hit["score"].as_f64().is_some());
    let table = ok(with(&url).args(["search", "payment"]));
    let mut lines = table.lines();
    assert!(lines.next().unwrap().contains("FOUND BY"), "{table}");
    let best = lines.next().unwrap();
    assert!(
        best.contains("semantic") && best.contains("Pay the bill"),
        "{table}"
    );
    let found = json(with(&url).args(["search", "dog"]));
    assert_eq!(rows(&found)[0]["keyword_rank"], 1);
    assert_eq!(rows(&found)[0]["semantic_rank"], 1);

    // Keyword mode reads exactly as without an embedder.
    let plain = common::file_url(dir.path());
    assert_eq!(
        ok(with(&url).args(["search", "bill", "--mode", "keyword"])),
        ok(with(&plain).args(["search", "bill"]))
    );

    // Memory items.
    let found = json(with(&url).args(["memories", "--search", "canine", "--mode", "semantic"]));
    assert_eq!(
        rows(&found)[0]["item"]["text"],
        "I adopted a puppy last spring"
    );
    let table = ok(with(&url).args(["memories", "--search", "invoice", "--limit", "1"]));
    assert_eq!(table.lines().count(), 2, "{table}");
    assert!(table.lines().nth(1).unwrap().contains("both"), "{table}");
    let keyword = json(with(&url).args(["memories", "--search", "canine", "--mode", "keyword"]));
    assert!(rows(&keyword).is_empty());
}

#[test]
fn doctor_reports_the_index_lag_as_a_notice() {
    let (dir, url) = filled();

    let report = json(with(&url).arg("doctor"));
    let index = &report["index"];
    assert_eq!(
        (index["texts"].clone(), index["pending"].clone()),
        (json!(4), json!(4))
    );
    assert_eq!(index["stored_model"], Value::Null);
    assert!(index["notice"]
        .as_str()
        .unwrap()
        .contains("agentmem reindex"));
    let text = ok(with(&url).arg("doctor"));
    assert!(
        text.contains("index:     0 embedded of 4 texts, 4 pending"),
        "{text}"
    );
    assert!(text.contains("run `agentmem reindex`"), "{text}");

    ok(with(&url).arg("reindex"));
    let report = json(with(&url).arg("doctor"));
    assert_eq!(report["index"]["pending"], 0);
    assert_eq!(report["index"]["stored_model"]["id"], "test");
    // Recorded whole: the dimensions the server's model has, asked before recording.
    assert_eq!(report["index"]["stored_model"]["dimensions"], 8);
    assert_eq!(report["index"]["notice"], Value::Null);

    // Without an embedder the report is as it was.
    let plain = json(on(dir.path()).arg("doctor"));
    assert_eq!(plain.get("index"), None);
}

#[test]
fn search_by_meaning_and_reindex_need_an_embedder() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["search", "dog", "--mode", "semantic"][..],
        &["search", "dog", "--mode", "hybrid"],
        &["memories", "--search", "dog", "--mode", "semantic"],
        &["reindex"],
    ] {
        let stderr = fails(on(dir.path()).args(args), 2);
        assert!(stderr.contains("embedder=local"), "{args:?}: {stderr}");
    }
    let stderr = fails(on(dir.path()).args(["search", "dog", "--mode", "fuzzy"]), 2);
    assert!(stderr.contains("unknown search mode"), "{stderr}");
    // Messages are searched by meaning only when the URL embeds them.
    let url = format!(
        "{}&embedder=http&embed_url=http%3A%2F%2F127.0.0.1%3A9&embed_model=test",
        common::file_url(dir.path())
    );
    let stderr = fails(with(&url).args(["search", "dog", "--mode", "semantic"]), 2);
    assert!(stderr.contains("embed=messages"), "{stderr}");
    // By default it searches them by keyword then, asking the embedder nothing.
    ok(with(&url).args(["search", "dog"]));
}
