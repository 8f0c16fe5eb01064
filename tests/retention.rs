//! Retention that runs itself (C9, issue 31): the store URL's `keep`, `keep_per`, `retain`,
//! `retain_memories`, `keep_memories` and `retain_every` options are enforced as the store is
//! written, on the
//! in-memory store and every backend compiled in, opened through `agentmem::open(url)`, with
//! nobody calling `purge`. Server backends read `REDIS_URL`, `DATABASE_URL` and `MONGODB_URL`
//! and skip only when `AGENTMEM_REQUIRE_SERVICES` is unset.
use std::sync::Arc;
use std::time::Duration;

use agentmem::{
    AgentMemory, AgentMemoryExt, ErrorKind, MemoryFilter, MemoryItem, MemoryKind, MemoryScope,
    Message, SessionId, SessionPatch,
};
use agentmem_testkit::TestStore;
mod common;

fn sid(name: &str) -> SessionId {
    name.parse().expect("session id")
}

/// `url` with the store-level `options` added to its query.
fn with_options(url: &str, options: &str) -> String {
    let joint = if url.contains('?') { '&' } else { '?' };
    format!("{url}{joint}{options}")
}

/// Appends a user message saying `text` to session `name`.
async fn say(store: &dyn AgentMemory, name: &str, text: &str) {
    let message = Message::user(text);
    store.append_one(&sid(name), message).await.expect("append");
}

async fn ids(store: &dyn AgentMemory) -> Vec<SessionId> {
    store.session_ids().await.expect("list sessions")
}

/// `keep=2`: every write that makes a session leaves the two most recently written.
async fn keep(backend: &str, store: &dyn AgentMemory) {
    for name in ["a", "b"] {
        say(store, name, name).await;
    }
    say(store, "a", "again").await;
    assert_eq!(ids(store).await, ["a", "b"], "{backend}");
    store
        .save_session(&sid("c"), &[Message::user("c")], &Default::default())
        .await
        .expect("store operation");
    assert_eq!(ids(store).await, ["a", "c"], "{backend}: b was the oldest");
    store
        .fork(&sid("a"), &sid("d"), None)
        .await
        .expect("store operation");
    assert_eq!(
        ids(store).await,
        ["c", "d"],
        "{backend}: a went as d was forked"
    );
}

/// `keep=1&keep_per=owner`: each owner keeps its newest session, the unowned too.
async fn keep_per_owner(backend: &str, store: &dyn AgentMemory) {
    for (name, owner) in [
        ("ann1", Some("ann")),
        ("bob1", Some("bob")),
        ("ann2", Some("ann")),
    ] {
        say(store, name, name).await;
        if let Some(owner) = owner {
            let patch = SessionPatch::default().owner(owner);
            store
                .update_session(&sid(name), &patch)
                .await
                .expect("store operation");
        }
    }
    say(store, "x1", "x").await;
    say(store, "x2", "y").await;
    assert_eq!(ids(store).await, ["ann2", "bob1", "x2"], "{backend}");
}

/// `retain=1s&retain_memories=1s&retain_every=0s`: once a session or item is older than a
/// second, the next write takes it.
async fn retain(backend: &str, store: &dyn AgentMemory) {
    say(store, "old", "1").await;
    let old = MemoryItem::new(MemoryKind::Fact, "an old fact");
    store.put_memory(&old).await.expect("store operation");
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    say(store, "new", "2").await;
    assert_eq!(ids(store).await, ["new"], "{backend}");
    assert!(
        store.load(&sid("old"), None).await.expect("load").is_none(),
        "{backend}"
    );
    let fresh = MemoryItem::new(MemoryKind::Fact, "a new fact");
    store.put_memory(&fresh).await.expect("store operation");
    assert_eq!(texts(store).await, ["a new fact"], "{backend}");
}

/// The texts of every memory item, sorted.
async fn texts(store: &dyn AgentMemory) -> Vec<String> {
    let items = store.list_memories(&MemoryFilter::default()).await;
    let mut texts: Vec<String> = items
        .expect("list memories")
        .into_iter()
        .map(|item| item.text)
        .collect();
    texts.sort();
    texts
}

/// `keep_memories=1&keep_per=agent`: each agent keeps its newest memory item (the items of no
/// agent count as one more agent, the owner does not matter); sessions are not counted.
async fn keep_memories_per_agent(backend: &str, store: &dyn AgentMemory) {
    for (text, scope) in [
        ("alice 1", MemoryScope::agent("alice")),
        ("bob 1", MemoryScope::agent("bob").with_owner("ann")),
        ("alice 2", MemoryScope::agent("alice").with_owner("ann")),
        ("shared 1", MemoryScope::global()),
        ("shared 2", MemoryScope::global().with_owner("ann")),
    ] {
        let item = MemoryItem::new(MemoryKind::Fact, text).in_scope(scope);
        store.put_memory(&item).await.expect("store operation");
    }
    assert_eq!(
        texts(store).await,
        ["alice 2", "bob 1", "shared 2"],
        "{backend}"
    );
    // Rewriting the kept item in place keeps it.
    let mut kept = store
        .list_memories(
            &MemoryFilter::default().with_scope(agentmem::ScopeFilter::Exactly(
                MemoryScope::agent("bob").with_owner("ann"),
            )),
        )
        .await
        .expect("store operation");
    let mut bob = kept.pop().expect("bob's item");
    bob.text = "bob 1, again".into();
    store.put_memory(&bob).await.expect("store operation");
    assert_eq!(
        texts(store).await,
        ["alice 2", "bob 1, again", "shared 2"],
        "{backend}"
    );
    for name in ["s1", "s2", "s3"] {
        say(store, name, name).await;
    }
    assert_eq!(ids(store).await, ["s1", "s2", "s3"], "{backend}");
}

/// The scenarios, each on a fresh store opened with its options.
const SCENARIOS: [&str; 4] = [
    "keep=2",
    "keep=1&keep_per=owner",
    "retain=1s&retain_memories=1s&retain_every=0s",
    "keep_memories=1&keep_per=agent",
];

async fn run(scenario: usize, backend: &str, store: &dyn AgentMemory) {
    match scenario {
        0 => keep(backend, store).await,
        1 => keep_per_owner(backend, store).await,
        2 => retain(backend, store).await,
        _ => keep_memories_per_agent(backend, store).await,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_store() {
    for (scenario, options) in SCENARIOS.iter().enumerate() {
        let (_, options) =
            agentmem::StoreOptions::split(&format!("mem://x?{options}")).expect("store operation");
        let store = options.apply(Arc::new(agentmem::InMemoryStore::new()));
        run(scenario, "memory", store.as_ref()).await;
    }
}

/// Every backend compiled in: the local ones in a fresh folder each, the servers in a fresh
/// namespace each (skipped when unavailable and services are not required).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_backend() {
    for (scenario, options) in SCENARIOS.iter().enumerate() {
        let dir = tempfile::tempdir().expect("temporary folder");
        for (backend, url) in common::local_urls(dir.path()) {
            let store = common::open(backend, &with_options(&url, options))
                .await
                .expect("local store");
            run(scenario, backend, store.as_ref()).await;
        }

        for (backend, namespace) in common::server_namespaces("retain") {
            let url = with_options(namespace.url(), options);
            if let Some(store) = common::open(backend, &url).await {
                let store = TestStore::from_arc(store).with_namespace(namespace.into_guard());
                run(scenario, backend, store.arc().as_ref()).await;
            }
        }
    }
}

/// A repeated or malformed store option is refused before anything is opened, on every
/// scheme, naming the option and never the password.
#[tokio::test]
async fn bad_options_are_refused_before_connecting() {
    for url in [
        "file:///nonexistent/agentmem?keep=1&keep=2",
        "sqlite:///nonexistent/agent.db?keep=0",
        "redis://:s3cret@127.0.0.1:1/?retain=soon",
        "postgres://u:s3cret@127.0.0.1:1/db?keep_per=owner",
        "mongodb://u:s3cret@127.0.0.1:1/db?retain_every=1m",
        "redis://:s3cret@127.0.0.1:1/?keep=3&keep_memories=3&keep_per=agent",
        "file:///nonexistent/agentmem?keep_memories=0",
    ] {
        let Err(err) = agentmem::open(url).await else {
            panic!("{url} opened");
        };
        let text = format!("{err} {err:?}");
        if err.kind() == ErrorKind::Unsupported && text.contains("not compiled in") {
            continue;
        }
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{url}: {text}");
        assert!(
            text.contains("keep") || text.contains("retain"),
            "{url}: names the option: {text}"
        );
        assert!(!text.contains("s3cret"), "{url}: {text}");
    }
}
