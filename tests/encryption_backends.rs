//! Encryption is a property of the store (finding M1), on the in-memory store and every
//! backend compiled in, opened through `agentmem::open(url)`: once a store is encrypted, every
//! write without a key (save, append to a new session, memory put, compaction, fork, import)
//! is refused and leaves the store as it was, reads without a key are refused, a wrong key is
//! refused, the right key works, and a store never encrypted works without a key as before.
//! Then the whole conformance suite through `EncryptLayer` on each backend. Server backends
//! read `REDIS_URL`, `DATABASE_URL` and `MONGODB_URL` and skip only when
//! `AGENTMEM_REQUIRE_SERVICES` is unset.
#![cfg(feature = "encryption")]
use std::error::Error as _;
use std::fmt::Debug;
use std::path::Path;
use std::sync::Arc;

use agentmem::crypt::{CryptoError, EncryptLayer, MasterKey, NoKeyLayer, MARKER_PROPERTY};
use agentmem::transfer::{export_document, import_document};
use agentmem::{
    AgentMemory, AgentMemoryExt, Error, ErrorKind, MemoryFilter, MemoryItem, MemoryKind,
    MemoryStore, Message, Metadata, Result, SessionId, SessionInfo, SessionStore,
};
use agentmem_testkit::TestStore;

mod common;

fn sid(name: &str) -> SessionId {
    name.parse().expect("a valid session id")
}

fn key() -> MasterKey {
    MasterKey::generate().expect("a random key")
}

/// A fresh store of `backend`, in a namespace named `enc…` on a server; a file store writes
/// buffered.
async fn fresh(backend: &'static str) -> Option<TestStore> {
    common::fresh(backend, "enc", "?durability=buffered").await
}

/// The backends compiled in.
fn backends() -> Vec<&'static str> {
    [
        ("file", cfg!(feature = "file")),
        ("sqlite", cfg!(feature = "sqlite")),
        ("redis", cfg!(feature = "redis")),
        ("postgres", cfg!(feature = "postgres")),
        ("mongodb", cfg!(feature = "mongodb")),
    ]
    .into_iter()
    .filter_map(|(backend, compiled)| compiled.then_some(backend))
    .collect()
}

/// `store` wearing the encryption layer under a new key.
fn encrypted(store: TestStore) -> TestStore {
    let key = key();
    store.map(|raw| Arc::new(raw.with_layer(EncryptLayer::new(&key))))
}

fn crypto_error(err: &Error) -> Option<&CryptoError> {
    err.source().and_then(|s| s.downcast_ref::<CryptoError>())
}

/// What a reader sees of the store, to show a refused write changed nothing.
async fn snapshot(raw: &dyn AgentMemory) -> (Vec<SessionInfo>, Vec<MemoryItem>) {
    let sessions = raw.list_sessions().await.expect("list sessions");
    let items = raw
        .list_memories(&MemoryFilter::default())
        .await
        .expect("list items");
    (sessions, items)
}

fn refused<T: Debug>(at: &str, what: &str, result: Result<T>, want: fn(&CryptoError) -> bool) {
    let err = result.expect_err(&format!("{at}: {what} must be refused"));
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{at}: {what}: {err}");
    assert!(crypto_error(&err).is_some_and(want), "{at}: {what}: {err}");
}

fn no_key(e: &CryptoError) -> bool {
    matches!(e, CryptoError::NoKey { .. })
}

fn wrong_key(e: &CryptoError) -> bool {
    matches!(e, CryptoError::WrongKey { .. })
}

/// The whole check on one fresh store of `backend`.
async fn encrypted_store_refuses_what_has_no_key(backend: &str, raw: Arc<dyn AgentMemory>) {
    let key = key();
    let keyed = raw.clone().with_layer(EncryptLayer::new(&key));
    let id = sid("vault");
    let said = [
        Message::user("my locker code is 4711"),
        Message::assistant("noted"),
    ];
    keyed.append(&id, &said).await.expect("append");
    let item = MemoryItem::new(MemoryKind::Fact, "the user likes green tea");
    keyed.put_memory(&item).await.expect("put");
    let before = snapshot(&*raw).await;

    // Without a key: every write path refused, nothing written.
    let keyless = raw.clone().with_layer(NoKeyLayer);
    let (fresh, one) = (sid("fresh"), [Message::user("plaintext")]);
    let plain_item = MemoryItem::new(MemoryKind::Fact, "plaintext");
    let plain_doc = {
        let plain = agentmem::InMemoryStore::new();
        plain
            .append_one(&sid("imported"), Message::user("hi"))
            .await
            .expect("append");
        export_document(&plain).await.expect("export")
    };
    let at = format!("{backend}, no key");
    let result = keyless.save_session(&fresh, &one, &Metadata::new()).await;
    refused(&at, "save_session", result, no_key);
    let result = keyless.append(&fresh, &one).await;
    refused(&at, "append to a new session", result, no_key);
    refused(&at, "append", keyless.append(&id, &one).await, no_key);
    let result = keyless.put_memory(&plain_item).await;
    refused(&at, "put_memory", result, no_key);
    refused(&at, "compact", keyless.compact(&id, &one).await, no_key);
    refused(&at, "fork", keyless.fork(&id, &fresh, None).await, no_key);
    let result = import_document(&keyless, &plain_doc).await;
    refused(&at, "import", result, no_key);
    refused(&at, "load", keyless.load(&id, None).await, no_key);
    let result = keyless.list_memories(&MemoryFilter::default()).await;
    refused(&at, "list_memories", result, no_key);
    let result = keyless
        .search_memories("tea", &MemoryFilter::default())
        .await;
    refused(&at, "search_memories", result, no_key);
    refused(&at, "get_context", keyless.get_context(None).await, no_key);
    assert_eq!(snapshot(&*raw).await, before, "{at}: nothing written");
    // Session ids are in the clear: listing them needs no key.
    assert_eq!(
        keyless.list_sessions().await.expect("list")[0].id,
        id,
        "{at}"
    );

    // Another key: refused the same way.
    let wrong = raw.clone().with_layer(EncryptLayer::new(&self::key()));
    let at = format!("{backend}, wrong key");
    refused(&at, "append", wrong.append(&fresh, &one).await, wrong_key);
    let result = wrong.put_memory(&plain_item).await;
    refused(&at, "put_memory", result, wrong_key);
    refused(&at, "load", wrong.load(&id, None).await, wrong_key);
    assert_eq!(snapshot(&*raw).await, before, "{at}: nothing written");

    // The right key reads and writes.
    let read = keyed.messages(&id).await.expect("load");
    assert_eq!(read, said, "{backend}");
    let all = MemoryFilter::default();
    let hits = keyed.search_memories("tea", &all).await.expect("search");
    assert_eq!(hits.len(), 1, "{backend}");
    keyed
        .append_one(&fresh, Message::user("more"))
        .await
        .expect("append");
}

/// A store never encrypted works without a key as before, and stays unmarked.
async fn plain_store_works_without_a_key(backend: &str, raw: Arc<dyn AgentMemory>) {
    let keyless = raw.clone().with_layer(NoKeyLayer);
    let id = sid("plain");
    let (one, two) = ([Message::user("one")], Message::user("two"));
    let saved = keyless.save_session(&id, &one, &Metadata::new()).await;
    saved.expect("save");
    keyless.append_one(&id, two).await.expect("append");
    let tea = MemoryItem::new(MemoryKind::Fact, "likes tea");
    keyless.put_memory(&tea).await.expect("put");
    let summary = [Message::system("sum")];
    keyless.compact(&id, &summary).await.expect("compact");
    keyless.fork(&id, &sid("copy"), None).await.expect("fork");
    assert_eq!(
        keyless.messages(&sid("copy")).await.expect("load").len(),
        1,
        "{backend}"
    );
    let all = MemoryFilter::default();
    let hits = keyless.search_memories("tea", &all).await.expect("search");
    assert_eq!(hits.len(), 1, "{backend}");
    let marker = raw.store_property(MARKER_PROPERTY).await.expect("marker");
    assert_eq!(marker, None, "{backend}: not marked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_store() {
    encrypted_store_refuses_what_has_no_key("memory", Arc::new(agentmem::InMemoryStore::new()))
        .await;
    plain_store_works_without_a_key("memory", Arc::new(agentmem::InMemoryStore::new())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_backend() {
    for backend in backends() {
        let (Some(encrypted), Some(plain)) = (fresh(backend).await, fresh(backend).await) else {
            continue;
        };
        encrypted_store_refuses_what_has_no_key(backend, encrypted.arc()).await;
        plain_store_works_without_a_key(backend, plain.arc()).await;
    }
}

/// The conformance suite through `EncryptLayer`, one module per backend compiled in.
macro_rules! conformance_encrypted {
    ($($module:ident: $feature:literal;)*) => {$(
        #[cfg(feature = $feature)]
        mod $module {
            use agentmem_testkit::TestStore;

            async fn store() -> Option<TestStore> {
                super::fresh($feature).await.map(super::encrypted)
            }

            agentmem_testkit::conformance_tests!(store);
        }
    )*};
}

conformance_encrypted! {
    file_conformance: "file";
    sqlite_conformance: "sqlite";
    redis_conformance: "redis";
    postgres_conformance: "postgres";
    mongodb_conformance: "mongodb";
}

/// `url` with `option` added to its query.
fn with_option(url: &str, option: &str) -> String {
    let joint = if url.contains('?') { '&' } else { '?' };
    format!("{url}{joint}{option}")
}

/// A store URL naming its key (`key_file=PATH`) opens the store encrypted, through
/// `agentmem::open` and through `AgentConfig`'s URL: the backend keeps ciphertext, the same
/// URL reads it back, and the URL without the key is refused.
async fn a_key_in_the_url_encrypts(backend: &str, url: &str, key_file: &Path) {
    let keyed = with_option(url, &format!("key_file={}", key_file.display()));
    let secret = "canary the vault code is 4711";
    let store = agentmem::open(&keyed)
        .await
        .expect("open with the URL's key");
    store
        .append_one(&sid("vault"), Message::user(secret))
        .await
        .expect("append");
    let raw = agentmem::open_unguarded(url).await.expect("open as it is");
    let stored = raw.load(&sid("vault"), None).await.expect("raw load");
    let stored = stored.expect("the session is stored");
    assert_ne!(stored.messages[0].content, secret, "{backend}: ciphertext");
    let keyless = agentmem::open(url).await.expect("open without a key");
    let refused_read = keyless.load(&sid("vault"), None).await;
    refused(backend, "load without the key", refused_read, no_key);
    let config = agentmem::agent::AgentConfig::default()
        .with_url(keyed.clone())
        .with_auto_save("chat");
    let agent = agentmem::agent::Agent::from_config(config, Some("a"), &agentmem::registry())
        .await
        .expect("agent")
        .expect("an agent: auto-save is on");
    let read = agent
        .store()
        .expect("a full store")
        .messages(&sid("vault"))
        .await
        .expect("the agent's store reads with the URL's key");
    assert_eq!(read[0].content, secret, "{backend}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_in_the_url_encrypts_on_every_backend() {
    with_a_key_file_on_every_backend("urlkey", a_key_in_the_url_encrypts).await;
}

/// Runs `check` with a new random key in a private file on every backend compiled in (see
/// [`on_every_backend`]).
async fn with_a_key_file_on_every_backend(prefix: &str, check: impl AsyncFn(&str, &str, &Path)) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let key_file = dir.path().join("key");
    std::fs::write(&key_file, key().to_base64()).expect("write the key");
    std::fs::set_permissions(
        &key_file,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .expect("a private key file");
    on_every_backend(dir.path(), prefix, async |backend, url| {
        check(backend, url, &key_file).await;
    })
    .await;
}

/// Runs `check` with the URL of every backend compiled in: the local ones in `dir`, the
/// servers in a fresh namespace named after `prefix`, removed afterwards (skipped when the
/// server is unavailable and services are not required).
async fn on_every_backend(dir: &Path, prefix: &str, check: impl AsyncFn(&str, &str)) {
    for (backend, url) in common::local_urls(dir) {
        check(backend, &url).await;
    }
    for (backend, namespace) in common::server_namespaces(prefix) {
        let url = namespace.url().to_string();
        if common::open(backend, &url).await.is_some() {
            let _guard = namespace.into_guard();
            check(backend, &url).await;
        }
    }
}

/// The store refuses by itself, whoever opens it (finding M1 outside the CLI): a store
/// encrypted with a key, opened by plain `agentmem::open(url)`, by `open_with_key(url, None)`
/// or by `Agent::from_config` without a key, refuses an append to a new session,
/// `save_session`, `put_memory` and `load`, the agent's turn and memory writes, and nothing
/// is written.
async fn openers_without_the_key_are_refused(backend: &str, url: &str) {
    use agentmem::agent::{Agent, AgentConfig};
    let key = key();
    let keyed = agentmem::open_with_key(url, Some(&key))
        .await
        .expect("open with the key");
    let id = sid("vault");
    keyed
        .append_one(&id, Message::user("my locker code is 4711"))
        .await
        .expect("append");
    let raw = agentmem::open_unguarded(url).await.expect("open as it is");
    let before = snapshot(&*raw).await;
    let (fresh, one) = (sid("fresh"), [Message::user("plaintext")]);
    let plain_item = MemoryItem::new(MemoryKind::Fact, "plaintext");
    for (opener, store) in [
        ("open", agentmem::open(url).await.expect("open")),
        (
            "open_with_key(None)",
            agentmem::open_with_key(url, None).await.expect("open"),
        ),
    ] {
        let at = format!("{backend}, {opener}");
        let result = store.append(&fresh, &one).await;
        refused(&at, "append to a new session", result, no_key);
        let result = store.save_session(&fresh, &one, &Metadata::new()).await;
        refused(&at, "save_session", result, no_key);
        refused(
            &at,
            "put_memory",
            store.put_memory(&plain_item).await,
            no_key,
        );
        refused(&at, "load", store.load(&id, None).await, no_key);
    }
    let config = AgentConfig::default().with_url(url).with_auto_save("chat");
    let agent = Agent::from_config(config, Some("a"), &agentmem::registry())
        .await
        .expect("the agent opens: listing needs no key")
        .expect("an agent: auto-save is on");
    let at = format!("{backend}, Agent::from_config");
    let turn = [Message::user("plaintext"), Message::assistant("ok")];
    refused(&at, "after_turn", agent.after_turn(&turn).await, no_key);
    let result = agent.store_memory("plaintext", MemoryKind::Fact).await;
    refused(&at, "store_memory", result, no_key);
    let full = agent.store().expect("a full store");
    refused(&at, "append", full.append(&fresh, &one).await, no_key);
    refused(&at, "load", full.load(&id, None).await, no_key);
    assert_eq!(snapshot(&*raw).await, before, "{backend}: nothing written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openers_without_the_key_are_refused_on_every_backend() {
    let dir = tempfile::tempdir().expect("temporary folder");
    on_every_backend(dir.path(), "nokey", openers_without_the_key_are_refused).await;
}

/// `AgentConfig::encryption_key` encrypts the agent's store whatever names it (the URL here
/// names no key; a backend's default location goes the same way): the agent reads and writes,
/// the store holds ciphertext and is marked, a plain `open` is refused, the key by URL reads
/// it, and a URL naming a key as well is refused.
async fn an_agent_config_key_encrypts(backend: &str, url: &str, key_file: &Path) {
    use agentmem::agent::{Agent, AgentConfig};
    let secret = "canary the agent's vault code is 4711";
    let config = AgentConfig::default()
        .with_url(url)
        .with_auto_save("chat")
        .with_encryption_key_file(key_file);
    let agent = Agent::from_config(config, Some("a"), &agentmem::registry())
        .await
        .expect("the agent opens with its config's key")
        .expect("an agent: auto-save is on");
    let turn = [Message::user(secret), Message::assistant("noted")];
    agent.after_turn(&turn).await.expect("the turn is saved");
    let chat = agent.auto_save_session().expect("auto-save").clone();
    let read = agent.store().expect("a full store").messages(&chat).await;
    assert_eq!(read.expect("read")[0].content, secret, "{backend}");

    let raw = agentmem::open_unguarded(url).await.expect("open as it is");
    let stored = raw.messages(&chat).await.expect("the envelopes");
    assert_ne!(stored[0].content, secret, "{backend}: ciphertext");
    let marker = raw.store_property(MARKER_PROPERTY).await.expect("marker");
    assert!(marker.is_some(), "{backend}: marked encrypted");
    let keyless = agentmem::open(url).await.expect("open without a key");
    refused(backend, "load", keyless.load(&chat, None).await, no_key);
    let keyed = with_option(url, &format!("key_file={}", key_file.display()));
    let by_url = agentmem::open(&keyed)
        .await
        .expect("open with the URL's key");
    let read = by_url
        .messages(&chat)
        .await
        .expect("the URL's key reads it");
    assert_eq!(read[0].content, secret, "{backend}");

    let both = AgentConfig::default()
        .with_url(keyed)
        .with_auto_save("chat")
        .with_encryption_key_file(key_file);
    let Err(err) = Agent::from_config(both, Some("a"), &agentmem::registry()).await else {
        panic!("{backend}: two keys must be refused");
    };
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{backend}: {err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_config_key_encrypts_on_every_backend() {
    with_a_key_file_on_every_backend("cfgkey", an_agent_config_key_encrypts).await;
}
