//! Redis-specific behaviour beyond the conformance suite: prefix isolation, the schema
//! guard, corrupt data, and the self-kept search index staying exact (no stale entries, no
//! leftover keys, the same scores as agentmem-core's BM25).
#![allow(clippy::unwrap_used)]

use agentmem_core::backend::{BackendConfig, Registry};
use agentmem_core::search::rank;
use agentmem_core::{
    AgentMemory, AgentMemoryExt, ErrorKind, Layered, MemoryFilter, MemoryId, MemoryItem,
    MemoryKind, MemoryStore, Message, MessageId, MessageQuery, Metadata, Operation,
    RetentionPolicy, Role, SessionId, SessionStore,
};
use agentmem_redis::{RedisConfig, RedisStore};
use redis::aio::MultiplexedConnection;

fn url() -> String {
    agentmem_testkit::env_url("REDIS_URL", "redis://127.0.0.1:6379")
}

/// A store under a fresh prefix and a raw connection to the same server.
async fn open(tag: &str) -> Option<(Layered<RedisStore>, MultiplexedConnection, String)> {
    let url = url();
    let prefix = agentmem_testkit::unique_namespace(tag);
    let config = RedisConfig::new(&url)
        .unwrap()
        .with_prefix(&prefix)
        .unwrap();
    let store = match RedisStore::connect_with(config).await {
        Ok(store) => store,
        Err(e) => return agentmem_testkit::service_unavailable("redis", &url, &e),
    };
    let raw = redis::Client::open(url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    Some((store, raw, prefix))
}

/// Every key under `prefix`, sorted. (Test-only: the prefix is a unique namespace of
/// letters, digits and `_`, so it is safe as a pattern; the store itself never scans.)
async fn keys_under(raw: &mut MultiplexedConnection, prefix: &str) -> Vec<String> {
    let mut keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}:*"))
        .query_async(raw)
        .await
        .unwrap();
    keys.sort();
    keys
}

async fn drop_prefix(raw: &mut MultiplexedConnection, prefix: &str) {
    let keys = keys_under(raw, prefix).await;
    if !keys.is_empty() {
        let _: () = redis::cmd("UNLINK")
            .arg(keys)
            .query_async(raw)
            .await
            .unwrap();
    }
}

fn sid(s: &str) -> SessionId {
    s.parse().unwrap()
}

#[tokio::test]
async fn prefixes_isolate_stores_on_one_server() {
    let Some((a, mut raw, pa)) = open("iso_a").await else {
        return;
    };
    let Some((b, _, pb)) = open("iso_b").await else {
        return;
    };
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
        b.purge(&RetentionPolicy {
            max_age: None,
            max_sessions: Some(0)
        })
        .await
        .unwrap()
        .sessions_deleted,
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
    assert_eq!(keys_under(&mut raw, &pb).await, [format!("{pb}:schema")]);
    drop_prefix(&mut raw, &pa).await;
    drop_prefix(&mut raw, &pb).await;
}

#[tokio::test]
async fn default_prefix_and_from_client() {
    let url = url();
    let client = match redis::Client::open(url.as_str()) {
        Ok(c) => c,
        Err(e) => panic!("REDIS_URL does not parse: {e}"),
    };
    let prefix = agentmem_testkit::unique_namespace("fc");
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
    let mut raw = redis::Client::open(url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    drop_prefix(&mut raw, &prefix).await;
}

#[tokio::test]
async fn newer_schema_is_refused_and_garbage_is_corrupt() {
    let Some((store, mut raw, prefix)) = open("schema").await else {
        return;
    };
    assert_eq!(
        store.schema_version().await.unwrap(),
        agentmem_redis::SCHEMA_VERSION
    );
    let stored: String = redis::cmd("GET")
        .arg(format!("{prefix}:schema"))
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(stored, agentmem_redis::SCHEMA_VERSION.to_string());

    let _: () = redis::cmd("SET")
        .arg(format!("{prefix}:schema"))
        .arg(99)
        .query_async(&mut raw)
        .await
        .unwrap();
    let config = RedisConfig::new(&url())
        .unwrap()
        .with_prefix(&prefix)
        .unwrap();
    let err = RedisStore::connect_with(config.clone())
        .await
        .expect_err("newer schema");
    assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
    assert_eq!(err.operation(), Some(Operation::Open), "{err}");
    assert!(err.to_string().contains("99"), "{err}");

    let _: () = redis::cmd("SET")
        .arg(format!("{prefix}:schema"))
        .arg("one")
        .query_async(&mut raw)
        .await
        .unwrap();
    let err = RedisStore::connect_with(config)
        .await
        .expect_err("garbage schema");
    assert_eq!(err.kind(), ErrorKind::CorruptData, "{err}");
    drop_prefix(&mut raw, &prefix).await;
}

#[tokio::test]
async fn malformed_stored_data_is_corrupt_data() {
    let Some((store, mut raw, prefix)) = open("corrupt").await else {
        return;
    };
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
    let _: () = redis::cmd("SET")
        .arg(format!("{prefix}:s:wrong_type:msgs"))
        .arg("x")
        .query_async(&mut raw)
        .await
        .unwrap();
    let err = store
        .append_one(&other, Message::user("x"))
        .await
        .expect_err("wrong type");
    assert_eq!(err.kind(), ErrorKind::CorruptData, "{err}");
    drop_prefix(&mut raw, &prefix).await;
}

#[tokio::test]
async fn scores_match_agentmem_core_bm25() {
    let Some((store, mut raw, prefix)) = open("bm25").await else {
        return;
    };
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
    let want: Vec<(&str, f64)> = expected.iter().map(|(i, s)| (a[*i], *s)).collect();
    assert_eq!(got, want);

    let texts = [
        "kubernetes kubernetes cluster",
        "kubernetes once among many other words",
        "go",
    ];
    for t in texts {
        store
            .put_memory(&MemoryItem::new(MemoryKind::Fact, t))
            .await
            .unwrap();
    }
    store
        .put_memory(&MemoryItem::new(MemoryKind::Insight, "kubernetes insight"))
        .await
        .unwrap();
    let expected = rank("kubernetes", texts, 10);
    let hits = store
        .search_memories("kubernetes", &MemoryFilter::kind(MemoryKind::Fact))
        .await
        .unwrap();
    let got: Vec<(&str, f64)> = hits
        .iter()
        .map(|h| (h.item.text.as_str(), h.score))
        .collect();
    let want: Vec<(&str, f64)> = expected.iter().map(|(i, s)| (texts[*i], *s)).collect();
    assert_eq!(got, want);
    drop_prefix(&mut raw, &prefix).await;
}

/// After every kind of rewrite the index holds exactly the current messages, and deleting
/// everything leaves no key but the schema behind.
#[tokio::test]
async fn index_never_goes_stale_and_deletes_leave_no_keys() {
    let Some((store, mut raw, prefix)) = open("stale").await else {
        return;
    };
    let id = sid("Agent 7@x");
    let query = MessageQuery::default();
    let contents = |hits: Vec<agentmem_core::MessageHit>| -> Vec<String> {
        let mut c: Vec<String> = hits.into_iter().map(|h| h.message.content).collect();
        c.sort();
        c
    };

    store
        .append(
            &id,
            &[Message::user("alpha one"), Message::user("beta one")],
        )
        .await
        .unwrap();
    let archive = store
        .compact(&id, &[Message::system("summary gamma")])
        .await
        .unwrap();
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
            .purge(&RetentionPolicy {
                max_age: None,
                max_sessions: Some(1)
            })
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
    assert!(store
        .search_memories("zeta", &MemoryFilter::default())
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        store
            .search_memories("eta", &MemoryFilter::default())
            .await
            .unwrap()
            .len(),
        1
    );

    assert!(store.delete_session(&other).await.unwrap());
    assert!(store.delete_memory(&item.id).await.unwrap());
    assert!(store
        .search_messages("epsilon", &query)
        .await
        .unwrap()
        .is_empty());
    assert!(store.list_sessions().await.unwrap().is_empty());
    // Only counters (now zero), the id sequence and the schema remain.
    let left = keys_under(&mut raw, &prefix).await;
    let expected: Vec<String> = ["mem:seq", "mem:stats", "schema", "stats"]
        .iter()
        .map(|k| format!("{prefix}:{k}"))
        .collect();
    assert_eq!(left, expected);
    let stats: Vec<i64> = redis::cmd("HMGET")
        .arg(format!("{prefix}:stats"))
        .arg("docs")
        .arg("words")
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(stats, [0, 0]);
    drop_prefix(&mut raw, &prefix).await;
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

/// The same writes on the reference store (`agentmem_core::InMemoryStore`) and on Redis give the
/// same search results: same hits, same order (ties included), same scores.
#[tokio::test]
async fn search_agrees_with_the_reference_store() {
    let Some((redis_store, mut raw, prefix)) = open("diff").await else {
        return;
    };
    let reference = agentmem_core::InMemoryStore::new();
    let stores: [&dyn AgentMemory; 2] = [&reference, &redis_store];
    let msg = |i: usize, text: &str| {
        Message::user(text).with_id(MessageId::new(format!("m{i}")).expect("valid message id"))
    };
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
        store
            .compact(&sid("B"), &[msg(30, "summary: rust was discussed")])
            .await
            .unwrap();
        store
            .save_session(&sid("a"), &[msg(31, "go go go")], &Metadata::new())
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
    }
    let view = |hits: Vec<agentmem_core::MessageHit>| -> Vec<(String, String, f64)> {
        hits.into_iter()
            .map(|h| (h.session.into_string(), h.message.id.to_string(), h.score))
            .collect()
    };
    for query in ["tie", "rust", "go rust", "breaker tie", "nothing"] {
        for limit in [1, 3, 100] {
            for session in [None, Some(sid("b")), Some(sid("a"))] {
                let scope = MessageQuery { session, limit };
                let want = view(reference.search_messages(query, &scope).await.unwrap());
                let got = view(redis_store.search_messages(query, &scope).await.unwrap());
                assert_eq!(got, want, "{query:?} {scope:?}");
            }
            for kind in [None, Some(MemoryKind::Fact)] {
                let filter = MemoryFilter {
                    kind,
                    limit: Some(limit),
                };
                let ids = |hits: Vec<agentmem_core::MemoryHit>| -> Vec<(String, f64)> {
                    hits.into_iter()
                        .map(|h| (h.item.id.to_string(), h.score))
                        .collect()
                };
                let want = ids(reference.search_memories(query, &filter).await.unwrap());
                let got = ids(redis_store.search_memories(query, &filter).await.unwrap());
                assert_eq!(got, want, "{query:?} {filter:?}");
            }
        }
    }
    drop_prefix(&mut raw, &prefix).await;
}

/// `RedisConfig` registers both schemes, and a registry opens a layered Redis store by URL.
#[tokio::test]
async fn registry_opens_redis_urls() {
    assert_eq!(RedisConfig::BACKEND, "redis");
    assert_eq!(RedisConfig::SCHEMES, ["redis", "rediss"]);
    let registry = Registry::new().with::<RedisConfig>();
    assert_eq!(
        registry.backend_for("rediss://db.example:6380"),
        Some("redis")
    );
    assert_eq!(registry.backend_for("REDIS://db.example"), Some("redis"));
    let err = registry
        .open("redis://127.0.0.1/?prefix=a:b")
        .await
        .expect_err("bad prefix");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(err.backend_name(), Some("redis"));

    let url = url();
    let prefix = agentmem_testkit::unique_namespace("registry");
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
    drop_prefix(&mut raw, &prefix).await;
}

/// The layer stack refuses an unreadable message before Redis sees it, and labels the error.
#[tokio::test]
async fn invalid_messages_are_refused_by_the_layers_before_any_write() {
    let Some((store, mut raw, prefix)) = open("validate").await else {
        return;
    };
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
    assert_eq!(
        keys_under(&mut raw, &prefix).await,
        [format!("{prefix}:schema")]
    );
    drop_prefix(&mut raw, &prefix).await;
}
