//! Redis-specific behaviour beyond the conformance suite: prefix isolation, the schema
//! guard and the migration of version 1 data, corrupt data, and the self-kept search index
//! staying exact (no stale entries, no leftover keys, the same scores as agentmem-core's BM25,
//! within scopes too).
use agentmem_core::backend::{BackendConfig, Registry};
use agentmem_core::search::rank;
use agentmem_core::{
    AgentMemory, AgentMemoryExt, ErrorKind, Layered, MemoryFilter, MemoryId, MemoryItem,
    MemoryKind, MemoryScope, MemoryStore, Message, MessageId, MessageQuery, Metadata, Operation,
    RetentionPolicy, Rewind, Role, ScopeFilter, SessionId, SessionPatch, SessionQuery,
    SessionStore,
};
use agentmem_redis::{RedisConfig, RedisStore};
use agentmem_testkit::probe::put_memories;
use agentmem_testkit::NamespaceGuard;
use redis::aio::MultiplexedConnection;

mod common;

fn url() -> String {
    agentmem_testkit::env_url("REDIS_URL", "redis://127.0.0.1:6379")
}

/// A store under a fresh prefix, a raw connection to the same server, the prefix, and the
/// guard that deletes the prefix's keys when the test ends (passed or failed).
async fn open(
    tag: &str,
) -> Option<(
    Layered<RedisStore>,
    MultiplexedConnection,
    String,
    NamespaceGuard,
)> {
    let (store, raw, guard) = common::store_and_raw(&url(), tag).await?;
    let prefix = store.prefix().to_string();
    Some((store, raw, prefix, guard))
}

/// Every key under `prefix`, sorted. (Test-only: the prefix is a unique namespace of
/// letters, digits and `_`, so it is safe as a pattern; the store itself never scans.)
async fn keys_under(raw: &mut MultiplexedConnection, prefix: &str) -> Vec<String> {
    let mut keys = common::keys(raw, &format!("{prefix}:*")).await;
    keys.sort();
    keys
}

/// Sets the raw string `key` (under `prefix`) to `value`, as a client of another version (or
/// something else entirely) might have.
async fn set_raw(
    raw: &mut MultiplexedConnection, prefix: &str, key: &str, value: impl redis::ToRedisArgs,
) {
    let _: () = redis::cmd("SET")
        .arg(format!("{prefix}:{key}"))
        .arg(value)
        .query_async(raw)
        .await
        .unwrap();
}

/// The config of a store under `prefix` on the test server.
fn config_for(prefix: &str) -> RedisConfig {
    RedisConfig::new(&url())
        .unwrap()
        .with_prefix(prefix)
        .unwrap()
}

fn sid(s: &str) -> SessionId {
    s.parse().unwrap()
}

/// User messages of `texts`, in order.
fn users(texts: &[&str]) -> Vec<Message> {
    texts.iter().copied().map(Message::user).collect()
}

/// Session `name` holding the user messages of `texts`.
async fn seeded(store: &dyn AgentMemory, name: &str, texts: &[&str]) -> SessionId {
    let id = sid(name);
    store.append(&id, &users(texts)).await.unwrap();
    id
}

/// The texts and scores of a ranking (`agentmem_core::search::rank`) of `texts`.
fn ranked<'a>(texts: &[&'a str], ranking: &[(usize, f64)]) -> Vec<(&'a str, f64)> {
    ranking.iter().map(|(i, s)| (texts[*i], *s)).collect()
}

/// A retention policy that keeps the `max` most recent sessions.
fn keep_sessions(max: usize) -> RetentionPolicy {
    RetentionPolicy {
        max_sessions: Some(max),
        ..RetentionPolicy::default()
    }
}

/// How many memory items of any kind and scope `store` finds for `query`.
async fn memory_hit_count(store: &dyn AgentMemory, query: &str) -> usize {
    let everything = MemoryFilter::default();
    store
        .search_memories(query, &everything)
        .await
        .unwrap()
        .len()
}

/// Opens a store under a fresh prefix (see [`open`]), or ends the test when Redis cannot be
/// reached.
macro_rules! open_or_skip {
    ($tag:literal) => {
        match open($tag).await {
            Some(opened) => opened,
            None => return,
        }
    };
}

/// Asserts that the keys under `prefix` are exactly `names` (sorted, without the prefix).
async fn assert_only_keys(raw: &mut MultiplexedConnection, prefix: &str, names: &[&str]) {
    let expected: Vec<String> = names.iter().map(|k| format!("{prefix}:{k}")).collect();
    assert_eq!(keys_under(raw, prefix).await, expected);
}

/// Every key under `prefix` that starts with `{prefix}:{start}`.
async fn keys_starting(raw: &mut MultiplexedConnection, prefix: &str, start: &str) -> Vec<String> {
    let start = format!("{prefix}:{start}");
    let mut keys = keys_under(raw, prefix).await;
    keys.retain(|k| k.starts_with(&start));
    keys
}

/// Asserts that the message index counts no document and no word.
async fn assert_index_counters_zero(raw: &mut MultiplexedConnection, prefix: &str) {
    assert_eq!(common::index_counters(raw, prefix).await, (0, 0));
}

/// Message `text` with the id `m{i}`, so both stores of a comparison hold the same ids.
fn msg(i: usize, text: &str) -> Message {
    Message::user(text).with_id(MessageId::new(format!("m{i}")).expect("valid message id"))
}

/// The comparable part of message hits: session, message id and score, in order.
fn message_view(hits: Vec<agentmem_core::MessageHit>) -> Vec<(String, String, f64)> {
    hits.into_iter()
        .map(|h| (h.session.into_string(), h.message.id.to_string(), h.score))
        .collect()
}

/// The comparable part of memory hits: item id and score, in order.
fn memory_view(hits: Vec<agentmem_core::MemoryHit>) -> Vec<(String, f64)> {
    hits.into_iter()
        .map(|h| (h.item.id.to_string(), h.score))
        .collect()
}

/// Asserts that `store` finds what the reference store finds for `query` in `scope`: the
/// same hits in the same order with the same scores.
async fn assert_same_message_hits(
    reference: &dyn AgentMemory, store: &dyn AgentMemory, query: &str, scope: MessageQuery,
    label: &str,
) {
    let want = message_view(reference.search_messages(query, &scope).await.unwrap());
    let got = message_view(store.search_messages(query, &scope).await.unwrap());
    assert_eq!(got, want, "{label}: {query:?} {scope:?}");
}

#[tokio::test]
async fn prefixes_isolate_stores_on_one_server() {
    let (a, mut raw, pa, _guard_a) = open_or_skip!("iso_a");
    let (b, _, pb, _guard_b) = open_or_skip!("iso_b");
    let id = sid("shared name");
    a.append_one(&id, Message::user("only in a: kubernetes"))
        .await
        .unwrap();
    a.put_memory(&MemoryItem::new(MemoryKind::Fact, "a likes kubernetes"))
        .await
        .unwrap();

    assert!(b.load(&id, None).await.unwrap().is_none());
    assert!(b.list_sessions().await.unwrap().is_empty());
    assert!(b
        .list_memories(&MemoryFilter::default())
        .await
        .unwrap()
        .is_empty());
    assert!(b
        .search_messages("kubernetes", &MessageQuery::default())
        .await
        .unwrap()
        .is_empty());
    assert!(b
        .search_memories("kubernetes", &MemoryFilter::default())
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        b.purge(&keep_sessions(0)).await.unwrap().sessions_deleted,
        0
    );
    assert_eq!(
        a.messages(&id).await.unwrap().len(),
        1,
        "b's purge left a alone"
    );

    for key in keys_under(&mut raw, &pa).await {
        assert!(key.starts_with(&format!("{pa}:")), "{key}");
    }
    assert_only_keys(&mut raw, &pb, &["schema"]).await;
}

#[tokio::test]
async fn default_prefix_and_from_client() {
    let url = url();
    let client = match redis::Client::open(url.as_str()) {
        Ok(c) => c,
        Err(e) => panic!("REDIS_URL does not parse: {e}"),
    };
    let prefix = agentmem_testkit::unique_namespace("fc");
    let _guard = NamespaceGuard::new().redis_store_prefix(&url, &prefix);
    let store = match RedisStore::from_client(client, &prefix).await {
        Ok(store) => store,
        Err(e) => {
            let skipped: Option<()> = agentmem_testkit::service_unavailable("redis", &url, &e);
            return skipped.unwrap_or_default();
        }
    };
    assert_eq!(store.prefix(), prefix);
    assert_eq!(store.backend(), "redis");
    let debug = format!("{store:?}");
    assert!(debug.contains(&prefix), "{debug}");
    let err = RedisStore::from_client(redis::Client::open(url.as_str()).unwrap(), "bad:prefix")
        .await
        .expect_err("invalid prefix");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(err.operation(), Some(Operation::Open));
    assert_eq!(err.backend_name(), Some("redis"));
}

#[tokio::test]
async fn newer_schema_is_refused_and_garbage_is_corrupt() {
    let (store, mut raw, prefix, _guard) = open_or_skip!("schema");
    common::assert_current_schema(&store).await;
    let stored: String = redis::cmd("GET")
        .arg(format!("{prefix}:schema"))
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(stored, agentmem_redis::SCHEMA_VERSION.to_string());

    set_raw(&mut raw, &prefix, "schema", 99).await;
    let config = config_for(&prefix);
    let err = RedisStore::connect_with(config.clone())
        .await
        .expect_err("newer schema");
    assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
    assert_eq!(err.operation(), Some(Operation::Open), "{err}");
    assert!(err.to_string().contains("99"), "{err}");

    set_raw(&mut raw, &prefix, "schema", "one").await;
    let err = RedisStore::connect_with(config)
        .await
        .expect_err("garbage schema");
    assert_eq!(err.kind(), ErrorKind::CorruptData, "{err}");
}

#[tokio::test]
async fn malformed_stored_data_is_corrupt_data() {
    let (store, mut raw, prefix, _guard) = open_or_skip!("corrupt");
    let id = sid("damaged");
    store.append_one(&id, Message::user("fine")).await.unwrap();
    let _: () = redis::cmd("RPUSH")
        .arg(format!("{prefix}:s:damaged:msgs"))
        .arg("{not json")
        .query_async(&mut raw)
        .await
        .unwrap();
    let err = store.load(&id, None).await.expect_err("torn JSON");
    assert_eq!(err.kind(), ErrorKind::CorruptData, "{err}");

    let _: () = redis::cmd("HSET")
        .arg(format!("{prefix}:mem:items"))
        .arg("m1")
        .arg("[]")
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(
        store
            .get_memory(&MemoryId::new("m1").expect("valid memory id"))
            .await
            .expect_err("bad item")
            .kind(),
        ErrorKind::CorruptData
    );

    // A key of the wrong type under the prefix.
    let other = sid("wrong_type");
    set_raw(&mut raw, &prefix, "s:wrong_type:msgs", "x").await;
    let err = store
        .append_one(&other, Message::user("x"))
        .await
        .expect_err("wrong type");
    assert_eq!(err.kind(), ErrorKind::CorruptData, "{err}");
}

#[tokio::test]
async fn scores_match_agentmem_core_bm25() {
    let (store, _, _, _guard) = open_or_skip!("bm25");
    let a = [
        "rust is fast and rust is safe",
        "python is friendly",
        "Rust RUST rust!",
    ];
    let b = [
        "a long text that mentions rust only once among many other words",
        "nothing here",
        "",
    ];
    let (sa, sb) = (sid("a"), sid("b"));
    store.append(&sa, &a.map(Message::user)).await.unwrap();
    store
        .save_session(&sb, &b.map(Message::user), &Metadata::new())
        .await
        .unwrap();

    let all: Vec<&str> = a.iter().chain(b.iter()).copied().collect();
    let expected = rank("rust safe", all.iter().copied(), 10);
    let hits = store
        .search_messages("rust safe", &MessageQuery::default())
        .await
        .unwrap();
    assert_eq!(hits.len(), expected.len());
    for (hit, (index, score)) in hits.iter().zip(&expected) {
        assert_eq!(hit.message.content, all[*index]);
        assert_eq!(hit.score, *score, "{}", hit.message.content);
    }

    let expected = rank("rust", a.iter().copied(), 10);
    let scope = MessageQuery {
        session: Some(sa.clone()),
        limit: 10,
    };
    let hits = store.search_messages("rust", &scope).await.unwrap();
    let got: Vec<(&str, f64)> = hits
        .iter()
        .map(|h| (h.message.content.as_str(), h.score))
        .collect();
    assert_eq!(got, ranked(&a, &expected));

    let texts = [
        "kubernetes kubernetes cluster",
        "kubernetes once among many other words",
        "go",
    ];
    // The insight matches too, and the kind filter must leave it out.
    let items: Vec<(MemoryKind, &str)> = texts
        .iter()
        .map(|&t| (MemoryKind::Fact, t))
        .chain([(MemoryKind::Insight, "kubernetes insight")])
        .collect();
    put_memories(&*store, &items).await;
    let expected = rank("kubernetes", texts, 10);
    let hits = store
        .search_memories("kubernetes", &MemoryFilter::kind(MemoryKind::Fact))
        .await
        .unwrap();
    let got: Vec<(&str, f64)> = hits
        .iter()
        .map(|h| (h.item.text.as_str(), h.score))
        .collect();
    assert_eq!(got, ranked(&texts, &expected));
}

/// After every kind of rewrite the index holds exactly the current messages and items, and
/// deleting everything leaves no key but the schema and the counters behind.
#[tokio::test]
async fn index_never_goes_stale_and_deletes_leave_no_keys() {
    let (store, mut raw, prefix, _guard) = open_or_skip!("stale");
    let id = sid("Agent 7@x");
    let query = MessageQuery::default();
    let contents = |hits: Vec<agentmem_core::MessageHit>| -> Vec<String> {
        let mut c: Vec<String> = hits.into_iter().map(|h| h.message.content).collect();
        c.sort();
        c
    };

    let messages = users(&["alpha one", "beta one"]);
    let archive = common::compacted(&store, &id, &messages, "summary gamma").await;
    assert_eq!(archive.message_count, 2);
    assert!(
        store
            .search_messages("alpha beta", &query)
            .await
            .unwrap()
            .is_empty(),
        "archived messages are not current"
    );
    assert_eq!(
        contents(store.search_messages("gamma", &query).await.unwrap()),
        ["summary gamma"]
    );
    store
        .append_one(&id, Message::user("delta after compaction"))
        .await
        .unwrap();
    assert_eq!(
        contents(store.search_messages("delta gamma", &query).await.unwrap()),
        ["delta after compaction", "summary gamma"]
    );

    store
        .save_session(&id, &[Message::user("epsilon saved")], &Metadata::new())
        .await
        .unwrap();
    assert!(store
        .search_messages("gamma delta", &query)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        contents(store.search_messages("epsilon", &query).await.unwrap()),
        ["epsilon saved"]
    );

    let other = sid("other");
    store
        .append_one(&other, Message::user("epsilon elsewhere"))
        .await
        .unwrap();
    assert_eq!(
        store
            .purge(&keep_sessions(1))
            .await
            .unwrap()
            .sessions_deleted,
        1
    );
    assert_eq!(
        contents(store.search_messages("epsilon", &query).await.unwrap()),
        ["epsilon elsewhere"]
    );

    let item = store
        .put_memory(&MemoryItem::new(MemoryKind::Fact, "zeta fact").with_key("k"))
        .await
        .unwrap();
    let replaced = store
        .put_memory(&MemoryItem::new(MemoryKind::Fact, "eta fact").with_key("k"))
        .await
        .unwrap();
    assert_eq!(
        (replaced.id.as_str(), replaced.created_at),
        (item.id.as_str(), item.created_at)
    );
    assert_eq!(memory_hit_count(&store, "zeta").await, 0);
    assert_eq!(memory_hit_count(&store, "eta").await, 1);

    // Scoped and expiring items leave nothing behind either: replaced by a put over their key
    // once expired, purged, or deleted.
    let past = agentmem_core::now() - chrono::Duration::seconds(1);
    let expired = store
        .put_memory(
            &MemoryItem::new(MemoryKind::Insight, "theta note")
                .with_key("k")
                .in_scope(alice())
                .expiring_at(past),
        )
        .await
        .unwrap();
    let fresh = store
        .put_memory(
            &MemoryItem::new(MemoryKind::Insight, "iota note")
                .with_key("k")
                .in_scope(alice())
                .expiring_at(past + chrono::Duration::days(1)),
        )
        .await
        .unwrap();
    assert_ne!(fresh.id, expired.id, "an expired item is not taken over");
    store
        .put_memory(
            &MemoryItem::new(MemoryKind::Fact, "kappa note")
                .in_scope(bob())
                .expiring_at(past),
        )
        .await
        .unwrap();
    assert_eq!(memory_hit_count(&store, "note").await, 1);
    let report = store.purge(&RetentionPolicy::default()).await.unwrap();
    assert_eq!((report.sessions_deleted, report.memories_deleted), (0, 1));
    assert!(store.delete_memory(&fresh.id).await.unwrap());

    assert!(store.delete_session(&other).await.unwrap());
    assert!(store.delete_memory(&item.id).await.unwrap());
    assert!(store
        .search_messages("epsilon", &query)
        .await
        .unwrap()
        .is_empty());
    assert!(store.list_sessions().await.unwrap().is_empty());
    // Only counters (now zero), the id sequence and the schema remain.
    assert_only_keys(
        &mut raw,
        &prefix,
        &["mem:seq", "mem:stats", "schema", "stats"],
    )
    .await;
    assert_index_counters_zero(&mut raw, &prefix).await;
    // The memory counters of the whole store are back to zero; those of scopes are gone.
    let mstats: Vec<(String, i64)> = redis::cmd("HGETALL")
        .arg(format!("{prefix}:mem:stats"))
        .query_async(&mut raw)
        .await
        .unwrap();
    for (field, value) in mstats {
        assert_eq!(field.matches(':').count(), 1, "{field}");
        assert_eq!(value, 0, "{field}");
    }
}

/// With the `tls` feature, `rediss://` really speaks TLS (through rustls with its ring
/// provider, without panicking for want of one): against a plain-text server the handshake
/// fails, and that is reported as `Unavailable`.
#[cfg(feature = "tls")]
#[tokio::test]
async fn tls_handshake_against_a_plain_server_is_unavailable() {
    let plain = url();
    let Some(rest) = plain.strip_prefix("redis://") else {
        return;
    };
    let tls_url = format!("rediss://{rest}");
    let config = RedisConfig::new(&tls_url).unwrap();
    assert!(config.is_tls());
    let config = config.with_connect_timeout(std::time::Duration::from_millis(500));
    let err = RedisStore::connect_with(config)
        .await
        .expect_err("no TLS there");
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
}

fn alice() -> MemoryScope {
    MemoryScope::agent("alice").with_workspace("git-kyoto")
}

fn bob() -> MemoryScope {
    MemoryScope::agent("bob").with_workspace("git-kyoto")
}

/// The same writes on the reference store (`agentmem_core::InMemoryStore`) and on Redis give the
/// same search results: same hits, same order (ties included), same scores, with scope filters
/// too (the collection statistics are kept per kind and scope).
#[tokio::test]
async fn search_agrees_with_the_reference_store() {
    let (redis_store, _, _, _guard) = open_or_skip!("diff");
    let reference = agentmem_core::InMemoryStore::new();
    let stores: [&dyn AgentMemory; 2] = [&reference, &redis_store];
    let (a, b, big_b, x) = (sid("a"), sid("b"), sid("B"), sid("_x"));
    for store in stores {
        // Ids whose byte order differs from most locales' order; equal texts tie on score.
        for (n, name) in ["b", "B", "a", "Ärger", "_x"].into_iter().enumerate() {
            let id = sid(name);
            store
                .append(&id, &[msg(n, "tie breaker"), msg(n + 10, "rust and go")])
                .await
                .unwrap();
            store
                .append_one(&id, msg(n + 20, &"rust ".repeat(n + 1)))
                .await
                .unwrap();
        }
        // A batch onto a non-empty session (its postings behind a position marker).
        let batch = [msg(40, "tie rust"), msg(41, "go tie tie")];
        store.append(&b, &batch).await.unwrap();
        store
            .compact(&big_b, &[msg(30, "summary: rust was discussed")])
            .await
            .unwrap();
        // Writes after a compaction, while the old epoch's postings are being collected:
        // `rust` is in both epochs, `breaker` only in the old one.
        store
            .append(&big_b, &[msg(42, "rust tie"), msg(43, "go")])
            .await
            .unwrap();
        store.append_one(&big_b, msg(44, "rust")).await.unwrap();
        store.compact(&x, &[msg(45, "tie")]).await.unwrap();
        store
            .compact(&x, &[msg(46, "rust tie"), msg(47, "breaker")])
            .await
            .unwrap();
        store
            .save_session(&a, &[msg(31, "go go go")], &Metadata::new())
            .await
            .unwrap();
        for (n, text) in ["likes rust", "likes go and rust", "tie", "tie"]
            .into_iter()
            .enumerate()
        {
            let kind = if n % 2 == 0 {
                MemoryKind::Fact
            } else {
                MemoryKind::Insight
            };
            let mut item = MemoryItem::new(kind, text);
            item.id = MemoryId::new(format!("item{n}")).expect("valid memory id");
            store.put_memory(&item).await.unwrap();
        }
        // Scoped items, with texts of different lengths so every scope's collection differs.
        for (n, (scope, text)) in [
            (alice(), "alice likes rust"),
            (alice(), "alice tie tie and many more words here"),
            (MemoryScope::agent("alice"), "rust go rust"),
            (bob(), "bob likes go"),
            (bob(), "tie"),
        ]
        .into_iter()
        .enumerate()
        {
            let mut item = MemoryItem::new(MemoryKind::Fact, text).in_scope(scope);
            item.id = MemoryId::new(format!("scoped{n}")).expect("valid memory id");
            store.put_memory(&item).await.unwrap();
        }
    }
    for query in ["tie", "rust", "go rust", "breaker tie", "nothing"] {
        for limit in [1, 3, 100] {
            for session in [None, Some(sid("b")), Some(sid("a"))] {
                let scope = MessageQuery { session, limit };
                assert_same_message_hits(&reference, &redis_store, query, scope, "reference").await;
            }
            for (kind, scope) in [
                (None, ScopeFilter::All),
                (Some(MemoryKind::Fact), ScopeFilter::All),
                (None, ScopeFilter::VisibleFrom(alice())),
                (Some(MemoryKind::Fact), ScopeFilter::VisibleFrom(alice())),
                (None, ScopeFilter::Exactly(bob())),
                (Some(MemoryKind::Insight), ScopeFilter::Exactly(bob())),
            ] {
                let filter = MemoryFilter {
                    kind,
                    scope,
                    limit: Some(limit),
                };
                let want = memory_view(reference.search_memories(query, &filter).await.unwrap());
                let got = memory_view(redis_store.search_memories(query, &filter).await.unwrap());
                assert_eq!(got, want, "{query:?} {filter:?}");
            }
        }
    }
}

/// `RedisConfig` registers its four schemes, and a registry opens a layered Redis store by URL.
#[tokio::test]
async fn registry_opens_redis_urls() {
    assert_eq!(RedisConfig::INFO.name, "redis");
    assert_eq!(
        RedisConfig::INFO.schemes,
        ["redis", "rediss", "redis+cluster", "rediss+cluster"]
    );
    let registry = Registry::new().with::<RedisConfig>();
    assert_eq!(
        registry.backend_for("rediss://db.example:6380"),
        Some("redis")
    );
    assert_eq!(registry.backend_for("REDIS://db.example"), Some("redis"));
    assert_eq!(
        registry.backend_for("redis+cluster://a:7000,b:7000/"),
        Some("redis")
    );
    let err = registry
        .open("redis://127.0.0.1/?prefix=a:b")
        .await
        .expect_err("bad prefix");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(err.backend_name(), Some("redis"));

    let url = url();
    let prefix = agentmem_testkit::unique_namespace("registry");
    let _guard = NamespaceGuard::new().redis_store_prefix(&url, &prefix);
    let mut with_prefix = url::Url::parse(&url).unwrap();
    with_prefix.query_pairs_mut().append_pair("prefix", &prefix);
    let store = match registry.open(with_prefix.as_str()).await {
        Ok(store) => store,
        Err(e) => {
            let skipped: Option<()> = agentmem_testkit::service_unavailable("redis", &url, &e);
            return skipped.unwrap_or_default();
        }
    };
    assert_eq!(store.backend(), "redis");
    let id = sid("via_registry");
    store.append_one(&id, Message::user("hello")).await.unwrap();
    assert_eq!(store.messages(&id).await.unwrap().len(), 1);
    let mut raw = redis::Client::open(url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    assert!(!keys_under(&mut raw, &prefix).await.is_empty());
}

/// A compaction retires the session's postings at once; later writes of the session delete
/// them (at least as many as they write, plus 64), and the sessions index `P:ix:W` loses the
/// session for words that only the archived messages held. Deleting the session deletes
/// whatever is left.
#[tokio::test]
async fn retired_postings_are_collected_by_later_writes() {
    let (store, mut raw, prefix, _guard) = open_or_skip!("collect");
    let id = sid("long");
    let old: Vec<Message> = (0..150)
        .map(|i| Message::user(format!("kept w{i}")))
        .collect();
    store.append(&id, &old).await.unwrap();
    let postings = |keys: &[String], epoch: &str| {
        keys.iter()
            .filter(|k| k.starts_with(&format!("{prefix}:s:long:{epoch}")))
            .count()
    };
    let keys = keys_under(&mut raw, &prefix).await;
    assert_eq!(postings(&keys, "t:"), 151, "w0..w149 and kept");
    store
        .compact(&id, &[Message::system("summary")])
        .await
        .unwrap();
    // Retired, not deleted yet, and not found.
    assert_eq!(postings(&keys_under(&mut raw, &prefix).await, "t:"), 151);
    let query = MessageQuery::default();
    assert!(store
        .search_messages("w7", &query)
        .await
        .unwrap()
        .is_empty());
    store.append_one(&id, Message::user("kept")).await.unwrap();
    // One word written: 65 collected.
    assert_eq!(
        postings(&keys_under(&mut raw, &prefix).await, "t:"),
        151 - 65
    );
    store.append_one(&id, Message::user("again")).await.unwrap();
    store.append_one(&id, Message::user("again")).await.unwrap();
    let keys = keys_under(&mut raw, &prefix).await;
    assert_eq!(postings(&keys, "t:"), 0, "all collected: {keys:?}");
    assert_eq!(postings(&keys, "gc"), 0);
    assert!(!keys.contains(&format!("{prefix}:ix:w7")));
    // `kept` is in the new epoch: the session stays in its sessions index.
    let members: Vec<String> = redis::cmd("SMEMBERS")
        .arg(format!("{prefix}:ix:kept"))
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(members, ["long"]);
    let hits = store.search_messages("kept", &query).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].message.content, "kept");

    // A deletion with retired postings left deletes them too.
    store.compact(&id, &old).await.unwrap();
    store.compact(&id, &old).await.unwrap();
    assert!(store.delete_session(&id).await.unwrap());
    assert_only_keys(&mut raw, &prefix, &["schema", "stats"]).await;
}

/// Writes a session as version 2 of the layout did (`append.lua` of schema 2, one batch):
/// postings `position:frequency:length,` per word under `P:s:S:t:W`, no epochs.
async fn put_v2_session(raw: &mut MultiplexedConnection, prefix: &str, id: &str, texts: &[&str]) {
    let at = agentmem_core::support::micros(agentmem_core::now());
    let mut pipe = redis::pipe();
    pipe.atomic();
    let mut total = 0;
    for (pos, text) in texts.iter().enumerate() {
        let message = Message::user(*text).with_id(MessageId::new(format!("{id}{pos}")).unwrap());
        pipe.rpush(
            format!("{prefix}:s:{id}:msgs"),
            serde_json::to_string(&message).unwrap(),
        );
        let words = agentmem_core::search::index_words(text);
        total += words.len();
        let mut tf = std::collections::BTreeMap::<String, usize>::new();
        for w in &words {
            *tf.entry(w.clone()).or_default() += 1;
        }
        for (term, n) in tf {
            pipe.append(
                format!("{prefix}:s:{id}:t:{term}"),
                format!("{pos}:{n}:{},", words.len()),
            )
            .sadd(format!("{prefix}:ix:{term}"), id)
            .sadd(format!("{prefix}:s:{id}:terms"), term);
        }
    }
    pipe.hset_multiple(
        format!("{prefix}:s:{id}:meta"),
        &[("created", at), ("updated", at), ("words", total as i64)],
    )
    .zadd(format!("{prefix}:sessions"), id, at)
    .hincr(format!("{prefix}:stats"), "docs", texts.len())
    .hincr(format!("{prefix}:stats"), "words", total);
    let _: () = pipe.query_async(raw).await.unwrap();
}

/// Sessions of schema version 2 are epoch 0 of version 3 as they stand: after the migration
/// they are found and ranked as the reference store ranks the same messages, before and after
/// more appends and compactions, and deleting them leaves nothing behind.
#[tokio::test]
async fn version_2_sessions_migrate() {
    let (_, mut raw, prefix, _guard) = open_or_skip!("migrate_v2");
    let a = ["alpha beta", "beta gamma gamma", "delta", "alpha"];
    let b = ["alpha alpha", "epsilon beta"];
    put_v2_session(&mut raw, &prefix, "a", &a).await;
    put_v2_session(&mut raw, &prefix, "b", &b).await;
    set_raw(&mut raw, &prefix, "schema", 2).await;
    let store = RedisStore::connect_with(config_for(&prefix)).await.unwrap();
    common::assert_current_schema(&store).await;
    // Version 4 lists the sessions of older versions in id order.
    let listed = store.find_sessions(&SessionQuery::default()).await.unwrap();
    let listed: Vec<&str> = listed.sessions.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(listed, ["a", "b"]);

    let reference = agentmem_core::InMemoryStore::new();
    for (id, texts) in [("a", &a[..]), ("b", &b[..])] {
        let messages: Vec<Message> = texts
            .iter()
            .enumerate()
            .map(|(pos, t)| {
                Message::user(*t).with_id(MessageId::new(format!("{id}{pos}")).unwrap())
            })
            .collect();
        reference.append(&sid(id), &messages).await.unwrap();
    }
    let stores: [&dyn AgentMemory; 2] = [&reference, &store];
    for step in 0..3 {
        match step {
            0 => {}
            1 => {
                for s in stores {
                    let more = [
                        Message::user("gamma alpha").with_id(MessageId::new("a9").unwrap()),
                        Message::user("zeta").with_id(MessageId::new("a10").unwrap()),
                    ];
                    s.append(&sid("a"), &more).await.unwrap();
                    s.append_one(
                        &sid("b"),
                        Message::user("beta").with_id(MessageId::new("b9").unwrap()),
                    )
                    .await
                    .unwrap();
                }
            }
            _ => {
                for s in stores {
                    let summary =
                        Message::system("alpha summary").with_id(MessageId::new("a11").unwrap());
                    s.compact(&sid("a"), &[summary]).await.unwrap();
                    s.append_one(
                        &sid("a"),
                        Message::user("beta again").with_id(MessageId::new("a12").unwrap()),
                    )
                    .await
                    .unwrap();
                }
            }
        }
        for query in ["alpha", "beta gamma", "epsilon zeta", "delta"] {
            for session in [None, Some(sid("a")), Some(sid("b"))] {
                let scope = MessageQuery { session, limit: 10 };
                assert_same_message_hits(&reference, &store, query, scope, &format!("step {step}"))
                    .await;
            }
        }
    }
    assert!(store.delete_session(&sid("a")).await.unwrap());
    assert!(store.delete_session(&sid("b")).await.unwrap());
    assert_only_keys(&mut raw, &prefix, &["schema", "stats"]).await;
}

/// The layer stack refuses an unreadable message before Redis sees it, and labels the error.
#[tokio::test]
async fn invalid_messages_are_refused_by_the_layers_before_any_write() {
    let (store, mut raw, prefix, _guard) = open_or_skip!("validate");
    let id = sid("checked");
    let bad = Message::new(Role::Agent(String::new()), "fine text");
    let err = store
        .append(&id, &[Message::user("ok"), bad])
        .await
        .expect_err("empty agent name");
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert_eq!(err.operation(), Some(Operation::Append));
    assert_eq!(err.backend_name(), Some("redis"));
    assert!(store.load(&id, None).await.unwrap().is_none());
    // Appending nothing is answered by the layers: no session appears.
    store.append(&id, &[]).await.unwrap();
    assert!(store.list_sessions().await.unwrap().is_empty());
    assert_only_keys(&mut raw, &prefix, &["schema"]).await;
}

/// Writes `item` as version 1 of the layout did (`put_memory.lua` of schema 1): no scope, no
/// expiry, key index by kind and key, counters per kind only.
async fn put_v1_item(raw: &mut MultiplexedConnection, prefix: &str, seq: i64, item: &MemoryItem) {
    use agentmem_core::support::micros;
    let words = agentmem_core::search::index_words(&item.text);
    let mut tf = std::collections::BTreeMap::<String, u64>::new();
    for w in &words {
        *tf.entry(w.clone()).or_default() += 1;
    }
    let tf: std::collections::BTreeMap<String, String> =
        tf.into_iter().map(|(w, n)| (w, n.to_string())).collect();
    let index = serde_json::json!({ "l": words.len(), "t": tf }).to_string();
    let id = item.id.as_str();
    let kind = item.kind.as_str();
    let key = item.key.as_deref().unwrap_or("");
    let mut pipe = redis::pipe();
    pipe.atomic()
        .hset(
            format!("{prefix}:mem:items"),
            id,
            serde_json::to_string(item).unwrap(),
        )
        .hset(
            format!("{prefix}:mem:meta"),
            id,
            format!("{}\n{kind}\n{key}", micros(item.created_at)),
        )
        .zadd(format!("{prefix}:mem:order"), id, seq)
        .set(format!("{prefix}:mem:seq"), seq)
        .zadd(format!("{prefix}:mem:kind:{kind}"), id, seq)
        .hset(format!("{prefix}:mem:terms"), id, &index)
        .hincr(format!("{prefix}:mem:stats"), format!("docs:{kind}"), 1)
        .hincr(
            format!("{prefix}:mem:stats"),
            format!("words:{kind}"),
            words.len(),
        );
    if !key.is_empty() {
        pipe.hset(format!("{prefix}:mem:keys"), format!("{kind}\n{key}"), id);
    }
    if !words.is_empty() {
        pipe.hset(format!("{prefix}:mem:lens"), id, words.len());
    }
    for (term, n) in &tf {
        pipe.hset(format!("{prefix}:mem:t:{term}"), id, n);
    }
    let _: () = pipe.query_async(raw).await.unwrap();
}

/// Hashes of the memory layout, to compare the data before and after a step.
async fn memory_hashes(
    raw: &mut MultiplexedConnection, prefix: &str,
) -> Vec<Vec<(String, String)>> {
    let mut out = Vec::new();
    for name in ["meta", "keys", "stats"] {
        let mut fields: Vec<(String, String)> = redis::cmd("HGETALL")
            .arg(format!("{prefix}:mem:{name}"))
            .query_async(raw)
            .await
            .unwrap();
        fields.sort();
        out.push(fields);
    }
    for name in ["updated", "scope:", "expires"] {
        let mut members: Vec<(String, String)> = redis::cmd("ZRANGE")
            .arg(format!("{prefix}:mem:{name}"))
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query_async(raw)
            .await
            .unwrap();
        members.sort();
        out.push(members);
    }
    out
}

/// Data of schema version 1 migrates to the current layout once, even with two stores opening
/// it at the same time: its items become global and never expire, keep their keys (an upsert
/// finds them), their search scores, and their update times (which a purge by age reads, taken
/// from the JSON whatever its precision or year); running the migration again changes nothing.
#[tokio::test]
async fn version_1_memory_items_migrate() {
    let (_, mut raw, prefix, _guard) = open_or_skip!("migrate_v1");
    let time = |s: &str| {
        chrono::DateTime::parse_from_rfc3339(s)
            .unwrap()
            .with_timezone(&chrono::Utc)
    };
    let recent = agentmem_core::now() - chrono::Duration::hours(1);
    let far_future = chrono::DateTime::from_timestamp(253_402_300_800, 0).unwrap();
    let specs = [
        (
            "v1-a",
            MemoryKind::Fact,
            Some("name"),
            "the user is alpha beta",
            recent,
        ),
        (
            "v1-b",
            MemoryKind::Insight,
            None,
            "alpha gamma gamma",
            recent,
        ),
        (
            "v1-c",
            MemoryKind::Fact,
            Some("k:1/x"),
            "old alpha",
            time("2001-02-03T04:05:06Z"),
        ),
        (
            "v1-d",
            MemoryKind::Fact,
            None,
            "millis",
            time("2004-02-29T23:59:59.123Z"),
        ),
        (
            "v1-e",
            MemoryKind::LongTerm,
            None,
            "nanos",
            time("1969-12-31T23:59:59.999999999Z"),
        ),
        // Year 10000, which serde writes as `+10000-01-01T00:00:00Z`.
        ("v1-f", MemoryKind::ShortTerm, None, "far", far_future),
    ];
    let mut items = Vec::new();
    for (n, (id, kind, key, text, updated)) in specs.into_iter().enumerate() {
        let mut item = MemoryItem::new(kind, text);
        item.id = MemoryId::new(id).unwrap();
        item.key = key.map(str::to_string);
        item.created_at = time("2000-01-01T00:00:00.5Z").min(updated);
        item.updated_at = updated;
        put_v1_item(&mut raw, &prefix, n as i64 + 1, &item).await;
        items.push(item);
    }
    set_raw(&mut raw, &prefix, "schema", 1).await;

    let config = config_for(&prefix);
    let (a, b) = tokio::join!(
        RedisStore::connect_with(config.clone()),
        RedisStore::connect_with(config.clone())
    );
    let (store, other) = (a.unwrap(), b.unwrap());
    common::assert_current_schema(&store).await;
    common::assert_current_schema(&other).await;

    let meta = common::memory_meta(&mut raw, &prefix, "v1-c").await;
    assert_eq!(
        meta,
        format!(
            "{}\n\n\nfact\nk:1/x",
            items[2].created_at.timestamp_micros()
        )
    );
    for item in &items {
        let score: f64 = redis::cmd("ZSCORE")
            .arg(format!("{prefix}:mem:updated"))
            .arg(item.id.as_str())
            .query_async(&mut raw)
            .await
            .unwrap();
        assert_eq!(
            score,
            item.updated_at.timestamp_micros() as f64,
            "{}",
            item.updated_at
        );
    }
    // Running the migration again (as after a cut-short run) changes nothing.
    let migrated = memory_hashes(&mut raw, &prefix).await;
    set_raw(&mut raw, &prefix, "schema", 1).await;
    common::assert_current_schema(&store).await;
    assert_eq!(memory_hashes(&mut raw, &prefix).await, migrated);

    // Every item reads back as it was written, global and never expiring, oldest first.
    let written = items.clone();
    items.sort_by_key(|item| item.created_at);
    assert_eq!(
        store.list_memories(&MemoryFilter::default()).await.unwrap(),
        items
    );
    let global = MemoryFilter::default().with_scope(ScopeFilter::Exactly(MemoryScope::global()));
    assert_eq!(store.list_memories(&global).await.unwrap(), items);
    assert_eq!(
        store
            .list_memories(&MemoryFilter::default().visible_from(alice()))
            .await
            .unwrap(),
        items
    );
    assert!(store
        .list_memories(&MemoryFilter::default().with_scope(ScopeFilter::Exactly(alice())))
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        store.get_memory(&written[0].id).await.unwrap().as_ref(),
        Some(&written[0])
    );

    // Search ranks them as the reference store does.
    let reference = agentmem_core::InMemoryStore::new();
    for item in &written {
        reference.put_memory(item).await.unwrap();
    }
    for filter in [
        MemoryFilter::default(),
        MemoryFilter::kind(MemoryKind::Fact).visible_from(alice()),
    ] {
        let want = memory_view(reference.search_memories("alpha", &filter).await.unwrap());
        assert!(!want.is_empty());
        let got = memory_view(store.search_memories("alpha", &filter).await.unwrap());
        assert_eq!(got, want, "{filter:?}");
    }

    // The keys still work: a global put replaces, a scoped one is another item.
    let renamed = MemoryItem::new(MemoryKind::Fact, "the user is delta").with_key("name");
    let stored = store.put_memory(&renamed).await.unwrap();
    assert_eq!(
        (&stored.id, stored.created_at),
        (&written[0].id, written[0].created_at)
    );
    let scoped = store
        .put_memory(&renamed.clone().in_scope(alice()))
        .await
        .unwrap();
    assert_eq!(scoped.id, renamed.id, "alice's item is new");

    // A purge by age reads the migrated update times.
    let report = store
        .purge(&RetentionPolicy {
            max_memory_age: Some(std::time::Duration::from_secs(86_400)),
            ..RetentionPolicy::default()
        })
        .await
        .unwrap();
    assert_eq!(report.memories_deleted, 3, "v1-c, v1-d and v1-e are old");
    let mut left: Vec<String> = store
        .list_memories(&MemoryFilter::default())
        .await
        .unwrap()
        .into_iter()
        .map(|item| item.id.to_string())
        .collect();
    left.sort();
    let mut want = vec!["v1-a", "v1-b", "v1-f", renamed.id.as_str()];
    want.sort_unstable();
    assert_eq!(left, want);
}

/// Fork, rewind and expiry keep the self-kept index exact: after each, searches give what the
/// reference store gives, scores included (so the counters behind BM25 are right too, also
/// once the server has expired a session by itself).
#[tokio::test]
async fn fork_rewind_and_expiry_keep_search_exact() {
    let (redis_store, _, _, _guard) = open_or_skip!("lifecycle_diff");
    let reference = agentmem_core::InMemoryStore::new();
    let stores: [&dyn AgentMemory; 2] = [&reference, &redis_store];
    let expires = agentmem_core::now() + chrono::Duration::milliseconds(1500);
    let (a, f, gone) = (sid("a"), sid("f"), sid("gone"));
    for store in stores {
        store
            .append(&a, &[msg(0, "rust tie"), msg(1, "go go rust")])
            .await
            .unwrap();
        // A batch behind a position marker, then single messages.
        store
            .append(
                &a,
                &[msg(2, "tie breaker"), msg(3, "rust"), msg(4, "walrus go")],
            )
            .await
            .unwrap();
        store.append_one(&a, msg(5, "narwhal")).await.unwrap();
        store
            .fork(&a, &f, Some(&MessageId::new("m3").unwrap()))
            .await
            .unwrap();
        store
            .rewind(&a, &Rewind::After(MessageId::new("m2").unwrap()))
            .await
            .unwrap();
        store.append_one(&a, msg(6, "rust go")).await.unwrap();
        store.rewind(&f, &Rewind::Last(1)).await.unwrap();
        store.append_one(&f, msg(7, "walrus")).await.unwrap();
        store
            .append(&gone, &[msg(8, "rust walrus tie"), msg(9, "go")])
            .await
            .unwrap();
        store
            .update_session(&gone, &SessionPatch::default().expire_at(expires))
            .await
            .unwrap();
    }
    for label in ["before the expiry", "after the expiry"] {
        if label == "after the expiry" {
            while agentmem_core::now() < expires + chrono::Duration::milliseconds(50) {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
        for query in ["tie", "rust", "go rust", "walrus narwhal breaker"] {
            for session in [None, Some(sid("a")), Some(sid("f")), Some(sid("gone"))] {
                let scope = MessageQuery { session, limit: 20 };
                assert_same_message_hits(&reference, &redis_store, query, scope, label).await;
            }
        }
    }
}

/// Every key of an expiring session but its terms sets carries its expiry, so the server
/// deletes them by itself; a purge (or the next writes, which reap) then takes the terms sets
/// with the session's words in the search index and its counters, and lookups clear its label
/// index entries, until nothing is left.
#[tokio::test]
async fn native_expiry_leaves_nothing_once_collected() {
    let (store, mut raw, prefix, _guard) = open_or_skip!("native_expiry");
    let id = sid("short");
    let messages = users(&["alpha beta", "gamma"]);
    let archive = common::compacted(&store, &id, &messages, "delta summary").await;
    let expires = agentmem_core::now() + chrono::Duration::milliseconds(800);
    let patch = SessionPatch::default()
        .owner("ada")
        .tag("k:*", "v")
        .expire_at(expires);
    store.update_session(&id, &patch).await.unwrap();
    // Writes after the expiry was set: their new keys get it too.
    store
        .append_one(&id, Message::user("epsilon alpha"))
        .await
        .unwrap();
    store.rewind(&id, &Rewind::Last(1)).await.unwrap();
    store.append_one(&id, Message::user("zeta")).await.unwrap();
    // A rewritten archive is a new list: it carries the deadline too.
    let rewritten = store
        .replace_archive(&id, &archive.id, &[Message::user("eta")])
        .await
        .unwrap();
    assert_eq!(rewritten.message_count, 1);
    let session_keys = keys_starting(&mut raw, &prefix, "s:short:").await;
    assert!(session_keys.len() > 5, "{session_keys:?}");
    assert!(
        session_keys.contains(&format!("{prefix}:s:short:a:{}", archive.id)),
        "{session_keys:?}"
    );
    let deadline_ms = (agentmem_core::support::micros(expires) + 999) / 1000;
    for key in &session_keys {
        let at: i64 = redis::cmd("PEXPIRETIME")
            .arg(key)
            .query_async(&mut raw)
            .await
            .unwrap();
        if key.ends_with(":terms") {
            assert_eq!(
                at, -1,
                "{key}: a terms set outlives its session until buried"
            );
        } else {
            assert_eq!(at, deadline_ms, "{key} expires with its session");
        }
    }
    let loaded = store.load(&id, None).await.unwrap().unwrap();
    assert_eq!(loaded.expires_at, Some(expires), "kept to the microsecond");

    while agentmem_core::now() < expires + chrono::Duration::milliseconds(20) {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // The server has deleted every key of the session but its terms sets (KEYS leaves out
    // expired keys).
    let left = keys_under(&mut raw, &prefix).await;
    assert!(
        left.iter()
            .all(|k| !k.starts_with(&format!("{prefix}:s:")) || k.ends_with(":terms")),
        "{left:?}"
    );
    assert!(!keys_starting(&mut raw, &prefix, "ix:").await.is_empty());
    // A purge takes the words with the session: nothing of it is left in the search index.
    store.purge(&RetentionPolicy::default()).await.unwrap();
    assert!(keys_starting(&mut raw, &prefix, "s:").await.is_empty());
    let words = keys_starting(&mut raw, &prefix, "ix:").await;
    assert!(words.is_empty(), "{words:?}");
    assert_index_counters_zero(&mut raw, &prefix).await;
    // Searches find nothing; lookups skip the label entries left, and clear them.
    for word in [
        "alpha", "beta", "gamma", "delta", "summary", "epsilon", "zeta", "eta",
    ] {
        let hits = store
            .search_messages(word, &MessageQuery::default())
            .await
            .unwrap();
        assert!(hits.is_empty(), "{word}: {hits:?}");
    }
    for query in [
        SessionQuery::default().owner("ada"),
        SessionQuery::default().tag("k:*", "v"),
    ] {
        assert!(store
            .find_sessions(&query)
            .await
            .unwrap()
            .sessions
            .is_empty());
    }
    assert_only_keys(&mut raw, &prefix, &["schema", "stats"]).await;
    assert_index_counters_zero(&mut raw, &prefix).await;
}

/// Labels and lookups on an existing session leave only the documented keys, and deleting
/// the session removes its label index entries.
#[tokio::test]
async fn labels_leave_no_keys_after_delete() {
    let (store, mut raw, prefix, _guard) = open_or_skip!("label_keys");
    let id = sid("labelled");
    store.append_one(&id, Message::user("x")).await.unwrap();
    let patch = SessionPatch::default()
        .title("t")
        .owner("o*:$")
        .tag("a.b", "1")
        .tag("c", "2");
    store.update_session(&id, &patch).await.unwrap();
    store
        .update_session(&id, &SessionPatch::default().untag("c").owner("p"))
        .await
        .unwrap();
    let labels = keys_starting(&mut raw, &prefix, "lab:").await;
    assert_eq!(labels.len(), 2, "one owner and one tag set: {labels:?}");
    let found = store
        .find_sessions(&SessionQuery::default().owner("p").tag("a.b", "1"))
        .await
        .unwrap();
    assert_eq!(found.sessions.len(), 1);
    assert!(store.delete_session(&id).await.unwrap());
    assert_only_keys(&mut raw, &prefix, &["schema", "stats"]).await;
}

/// The latest expiry agentmem asks for (year 9999, beyond what a double holds to the
/// microsecond) reads back exactly, on every key but the terms sets, and `persist` takes the
/// deadline off every key again.
#[tokio::test]
async fn far_expiry_reads_back_and_persist_clears_every_deadline() {
    let (store, mut raw, prefix, _guard) = open_or_skip!("far_expiry");
    let id = seeded(&store, "far", &["one two", "three"]).await;
    store.compact(&id, &[Message::user("four")]).await.unwrap();
    let patch = SessionPatch::default().expire_in(std::time::Duration::MAX);
    let info = store.update_session(&id, &patch).await.unwrap();
    let at = info.expires_at.unwrap();
    assert_eq!(at.format("%Y").to_string(), "9999");
    store.append_one(&id, Message::user("five")).await.unwrap();
    let loaded = store.load(&id, Some(0)).await.unwrap().unwrap();
    assert_eq!(loaded.expires_at, Some(at));
    let ttl = |raw: &mut MultiplexedConnection, key: String| {
        let mut raw = raw.clone();
        async move {
            let t: i64 = redis::cmd("PTTL")
                .arg(key)
                .query_async(&mut raw)
                .await
                .unwrap();
            t
        }
    };
    let keys = keys_starting(&mut raw, &prefix, "s:far:").await;
    for key in &keys {
        // Terms sets never expire: they are how a purge finds the words of an expired session.
        let deadline = ttl(&mut raw, key.clone()).await;
        if key.ends_with(":terms") {
            assert_eq!(deadline, -1, "{key} has no deadline");
        } else {
            assert!(deadline > 0, "{key} has a deadline");
        }
    }
    let info = store
        .update_session(&id, &SessionPatch::default().persist())
        .await
        .unwrap();
    assert_eq!(info.expires_at, None);
    for key in &keys {
        assert_eq!(ttl(&mut raw, key.clone()).await, -1, "{key} persists");
    }
    assert_eq!(
        store.load(&id, None).await.unwrap().unwrap().messages.len(),
        2
    );
}
