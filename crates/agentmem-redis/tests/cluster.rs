//! Redis Cluster (`redis+cluster://`): `REDIS_CLUSTER_URL` (default
//! `redis+cluster://127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003/`, the 3-master cluster
//! `.ci/redis-extra.sh` starts), each test under a key prefix of its own.
//!
//! The whole conformance suite runs on the cluster; every key of a store lies in one hash slot;
//! stores on each master work side by side; version 1 data migrates there; and a cluster that
//! cannot be reached is `Unavailable`.
//!
//! A store outlives a restart of its master: on the cluster of `REDIS_RESTART_CLUSTER_URL`
//! (default `redis+cluster://127.0.0.1:7201,127.0.0.1:7202,127.0.0.1:7203/`, nodes with
//! append-only files that may be restarted), which no other test uses.
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::time::Duration;

use agentmem_core::{
    AgentMemory, AgentMemoryExt, ChannelBlob, Checkpoint, CheckpointKey, CheckpointPrune,
    CheckpointQuery, CheckpointStore, Entity, ErrorKind, GraphQuery, GraphStore, Layered,
    MemoryFilter, MemoryId, MemoryItem, MemoryKind, MemoryScope, MemoryStore, Message,
    MessageQuery, Relation, Rewind, ScopeFilter, SessionId, SessionPatch, SessionQuery,
    SessionStore, StoredVector, TypedBytes, VectorKey, VectorStore,
};
use agentmem_redis::{RedisConfig, RedisStore};
use agentmem_testkit::{NamespaceGuard, ServerNamespace, TestStore};
use redis::cluster_async::ClusterConnection;

mod common;

async fn cluster_store() -> Option<TestStore> {
    let namespace = ServerNamespace::redis_cluster("conf_cluster");
    common::conformance_store(namespace, "redis cluster").await
}

/// The conformance suite on the cluster.
mod conformance {
    agentmem_testkit::conformance_tests!(super::cluster_store);
}

fn url() -> String {
    agentmem_testkit::servers::redis_cluster_url()
}

/// A store under `prefix` on the cluster, the guard that deletes its keys, and a raw cluster
/// connection.
async fn open(prefix: &str) -> Option<(Layered<RedisStore>, NamespaceGuard, ClusterConnection)> {
    open_at(url(), prefix).await
}

/// [`open`] on the cluster at `url`.
async fn open_at(
    url: String, prefix: &str,
) -> Option<(Layered<RedisStore>, NamespaceGuard, ClusterConnection)> {
    let guard = NamespaceGuard::new().redis_store_prefix(&url, prefix);
    let config = RedisConfig::new(&url).unwrap().with_prefix(prefix).unwrap();
    let nodes = config.nodes();
    let store = match RedisStore::connect_with(config).await {
        Ok(store) => store,
        Err(e) => return agentmem_testkit::service_unavailable("redis cluster", &url, &e),
    };
    let raw = redis::cluster::ClusterClient::new(
        nodes
            .iter()
            .map(|n| format!("redis://{n}"))
            .collect::<Vec<_>>(),
    )
    .unwrap()
    .get_async_connection()
    .await
    .unwrap();
    Some((store, guard, raw))
}

async fn keyslot(raw: &mut ClusterConnection, key: &str) -> u16 {
    redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(key)
        .query_async(raw)
        .await
        .unwrap()
}

/// The master serving each slot range: `(first slot, last slot, "host:port")`.
async fn slot_owners(raw: &mut ClusterConnection) -> Vec<(u16, u16, String)> {
    let slots: Vec<redis::Value> = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query_async(raw)
        .await
        .unwrap();
    slots
        .into_iter()
        .map(|range| {
            // first slot, last slot, then the master (host, port, id, …) and its replicas.
            let range: Vec<redis::Value> = redis::from_redis_value(range).unwrap();
            let first: u16 = redis::from_redis_value(range[0].clone()).unwrap();
            let last: u16 = redis::from_redis_value(range[1].clone()).unwrap();
            let master: Vec<redis::Value> = redis::from_redis_value(range[2].clone()).unwrap();
            let host: String = redis::from_redis_value(master[0].clone()).unwrap();
            let port: u16 = redis::from_redis_value(master[1].clone()).unwrap();
            (first, last, format!("{host}:{port}"))
        })
        .collect()
}

fn owner(owners: &[(u16, u16, String)], slot: u16) -> &str {
    &owners
        .iter()
        .find(|(first, last, _)| (*first..=*last).contains(&slot))
        .unwrap()
        .2
}

fn sid(s: &str) -> SessionId {
    s.parse().unwrap()
}

/// Every key a store writes (sessions, archives, postings, memory items, checkpoints, the
/// knowledge graph, embedding vectors and their indexes) starts with `{prefix}:` and so lies
/// in the prefix's slot.
#[tokio::test]
async fn every_key_of_a_store_lies_in_its_prefix_slot() {
    let prefix = agentmem_testkit::unique_namespace("slot");
    let Some((store, _guard, mut raw)) = open(&prefix).await else {
        return;
    };
    assert!(store.is_cluster());
    let id = sid("Research Agent");
    let messages = [
        Message::user("compare bigquery and alloydb"),
        Message::assistant("alloydb is postgres compatible"),
    ];
    common::compacted(&store, &id, &messages, "summary: databases").await;
    // Labels (their index spans sessions), expiry and a fork: still the one slot.
    let patch = SessionPatch::default()
        .owner("ada")
        .tag("k:*", "v")
        .expire_in(std::time::Duration::from_secs(600));
    store.update_session(&id, &patch).await.unwrap();
    store.fork(&id, &sid("Fork"), None).await.unwrap();
    store.rewind(&sid("Fork"), &Rewind::Last(1)).await.unwrap();
    let found = store
        .find_sessions(&SessionQuery::default().owner("ada"))
        .await
        .unwrap();
    assert_eq!(found.sessions.len(), 2);
    store
        .put_memory(
            &MemoryItem::new(MemoryKind::Fact, "likes postgres")
                .with_key("db")
                .in_scope(MemoryScope::agent("alice")),
        )
        .await
        .unwrap();
    // Checkpoints of a thread whose id holds braces (a hash tag, were it not escaped), with
    // blobs, writes, a copy, a run deletion and a prune: still the one slot.
    for id in ["c1", "c2"] {
        let key = CheckpointKey {
            thread: "{other}:t*".parse().unwrap(),
            ns: "{x}|node:1".parse().unwrap(),
            id: id.parse().unwrap(),
        };
        let mut checkpoint = Checkpoint::new(key.clone(), TypedBytes::new("json", b"{}".to_vec()));
        checkpoint.channel_versions.insert("ch".into(), id.into());
        checkpoint.metadata.insert("run_id".into(), id.into());
        let blob = ChannelBlob {
            channel: "ch".into(),
            version: id.into(),
            value: None,
        };
        store.put_checkpoint(&checkpoint, &[blob]).await.unwrap();
        let write = common::plain_write();
        store.put_writes(&key, &[write]).await.unwrap();
    }
    let source = "{other}:t*".parse().unwrap();
    let copy = "{copy}".parse().unwrap();
    assert_eq!(store.copy_thread(&source, &copy).await.unwrap(), 2);
    assert_eq!(
        store.delete_run_checkpoints(&["c1".into()]).await.unwrap(),
        2
    );
    assert_eq!(
        store
            .list_checkpoints(&CheckpointQuery::default())
            .await
            .unwrap()
            .len(),
        2
    );
    let keep = CheckpointPrune::KeepLatest;
    assert_eq!(store.prune_checkpoints(&[copy], keep).await.unwrap(), 0);
    assert_eq!(store.list_threads().await.unwrap().len(), 2);
    // The knowledge graph, with names holding braces (escaped in key names): the one slot.
    let entities = [
        Entity::new("{a}", "t").with_observations(["o"]),
        Entity::new("b}{", "t"),
    ];
    store.create_entities(&entities).await.unwrap();
    let relation = Relation::new("{a}", "b}{", "r");
    store.create_relations(&[relation]).await.unwrap();
    let graph = store.read_graph(&GraphQuery::All).await.unwrap();
    assert_eq!((graph.entities.len(), graph.relations.len()), (2, 1));
    // Embedding vectors: one hash, the one slot.
    let stored = StoredVector::new(VectorKey([7; 32]), &[0.5, 1.0]);
    store
        .put_vectors(std::slice::from_ref(&stored))
        .await
        .unwrap();
    assert_eq!(store.get_vectors(&[stored.key]).await.unwrap(), [stored]);
    // KEYS goes to every master; only the store's node holds any of its keys.
    let keys = common::keys(&mut raw, &format!("{{{prefix}}}:*")).await;
    assert!(keys.len() > 10, "{keys:?}");
    let tag_slot = keyslot(&mut raw, &prefix).await;
    for key in &keys {
        assert!(key.starts_with(&format!("{{{prefix}}}:")), "{key}");
        assert_eq!(keyslot(&mut raw, key).await, tag_slot, "{key}");
    }
    let untagged = common::keys(&mut raw, &format!("{prefix}:*")).await;
    assert!(untagged.is_empty(), "{untagged:?}");
}

/// A store on each master: every one works, none sees another's data, and cross-store
/// nothing is shared (each search sees its own store only).
#[tokio::test]
async fn stores_on_every_master_work_side_by_side() {
    let Some((_, _guard, mut raw)) = open(&agentmem_testkit::unique_namespace("probe")).await
    else {
        return;
    };
    let owners = slot_owners(&mut raw).await;
    let masters: BTreeSet<&str> = owners.iter().map(|(_, _, m)| m.as_str()).collect();
    assert!(masters.len() >= 3, "{owners:?}");
    // One prefix per master.
    let mut by_master: BTreeMap<String, String> = BTreeMap::new();
    while by_master.len() < masters.len() {
        let prefix = agentmem_testkit::unique_namespace("node");
        let slot = keyslot(&mut raw, &prefix).await;
        by_master
            .entry(owner(&owners, slot).to_string())
            .or_insert(prefix);
    }
    let mut stores = Vec::new();
    for (master, prefix) in &by_master {
        let (store, guard, _) = open(prefix).await.unwrap();
        store
            .append_one(&sid("shared"), Message::user(format!("served by {master}")))
            .await
            .unwrap();
        stores.push((master, store, guard));
    }
    for (master, store, _) in &stores {
        let hits = store
            .search_messages("served", &MessageQuery::default())
            .await
            .unwrap();
        assert_eq!(hits.len(), 1, "{master}");
        assert!(hits[0].message.content.ends_with(master.as_str()));
        assert_eq!(store.list_sessions().await.unwrap().len(), 1);
    }
}

/// Data of schema version 1 (one item and one session, written as versions 1 and 2 did)
/// migrates on a cluster too: the migration scripts, and the reads of the client-driven
/// rebuild of the search index (version 5), are routed to the store's node and touch keys
/// of its slot only.
#[tokio::test]
async fn version_1_data_migrates_on_a_cluster() {
    let prefix = agentmem_testkit::unique_namespace("migrate_cluster");
    let Some((store, _guard, mut raw)) = open(&prefix).await else {
        return;
    };
    drop(store);
    let root = format!("{{{prefix}}}");
    let mut item = MemoryItem::new(MemoryKind::Fact, "the user is adopting alpha").with_key("name");
    item.id = MemoryId::new("v1-a").unwrap();
    let created = agentmem_core::support::micros(item.created_at);
    // As version 1 of the layout wrote it: no scope, no expiry, counters per kind only. One
    // MULTI/EXEC on the slot's node.
    let mut pipe = redis::pipe();
    pipe.atomic()
        .set(format!("{root}:schema"), 1)
        .hset(
            format!("{root}:mem:items"),
            "v1-a",
            serde_json::to_string(&item).unwrap(),
        )
        .hset(
            format!("{root}:mem:meta"),
            "v1-a",
            format!("{created}\nfact\nname"),
        )
        .zadd(format!("{root}:mem:order"), "v1-a", 1)
        .set(format!("{root}:mem:seq"), 1)
        .zadd(format!("{root}:mem:kind:fact"), "v1-a", 1)
        .hset(format!("{root}:mem:keys"), "fact\nname", "v1-a")
        .hset(
            format!("{root}:mem:terms"),
            "v1-a",
            r#"{"l":5,"t":{"adopting":"1","alpha":"1","is":"1","the":"1","user":"1"}}"#,
        )
        .hset(format!("{root}:mem:lens"), "v1-a", 5)
        .hincr(format!("{root}:mem:stats"), "docs:fact", 1)
        .hincr(format!("{root}:mem:stats"), "words:fact", 5);
    for term in ["adopting", "alpha", "is", "the", "user"] {
        pipe.hset(format!("{root}:mem:t:{term}"), "v1-a", 1);
    }
    // A session as version 2 wrote it (epoch 0 of later versions): one message, its words
    // unstemmed.
    let message = Message::user("looked into adoption");
    pipe.rpush(
        format!("{root}:s:s1:msgs"),
        serde_json::to_string(&message).unwrap(),
    )
    .hset_multiple(
        format!("{root}:s:s1:meta"),
        &[("created", created), ("updated", created), ("words", 3)],
    )
    .zadd(format!("{root}:sessions"), "s1", created)
    .hincr(format!("{root}:stats"), "docs", 1)
    .hincr(format!("{root}:stats"), "words", 3);
    for term in ["adoption", "into", "looked"] {
        pipe.set(format!("{root}:s:s1:t:{term}"), "0:1:3,")
            .sadd(format!("{root}:s:s1:terms"), term)
            .sadd(format!("{root}:ix:{term}"), "s1");
    }
    let _: () = pipe.query_async(&mut raw).await.unwrap();

    // (Its guard deletes the same keys as the first one.)
    let (store, _same_guard, _) = open(&prefix).await.unwrap();
    common::assert_current_schema(&store).await;
    let meta = common::memory_meta(&mut raw, &root, "v1-a").await;
    assert_eq!(meta, format!("{created}\n\n\nfact\nname"));
    let global = MemoryFilter::default().with_scope(ScopeFilter::Exactly(MemoryScope::global()));
    assert_eq!(store.list_memories(&global).await.unwrap(), [item.clone()]);
    // Found by the stems of their words (version 5).
    let hits = store
        .search_memories("adoption", &MemoryFilter::default())
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    let hits = store
        .search_messages("adopting", &MessageQuery::default())
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].message, message);
    // The key index was converted: a put with the same kind and key replaces the item.
    let renamed = MemoryItem::new(MemoryKind::Fact, "the user is beta").with_key("name");
    assert_eq!(store.put_memory(&renamed).await.unwrap().id, item.id);
}

/// Seed nodes that do not answer: `Unavailable`, labelled, and the password never shown.
#[tokio::test]
async fn an_unreachable_cluster_is_unavailable() {
    let url = "redis+cluster://:hunter2@127.0.0.1:1,127.0.0.1:2/?prefix=x&connect_timeout_ms=300";
    let err = RedisStore::connect(url).await.expect_err("nothing listens");
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert_eq!(err.backend_name(), Some("redis"));
    assert!(!format!("{err} {err:?}").contains("hunter2"), "{err:?}");
}

/// A store keeps working through the cluster client: `Debug` names every seed node, and the
/// layered store reports the backend as on a single server.
#[tokio::test]
async fn a_cluster_store_reports_itself() {
    let prefix = agentmem_testkit::unique_namespace("debug");
    let Some((store, _guard, _)) = open(&prefix).await else {
        return;
    };
    let shown = format!("{:?}", *store);
    for node in RedisConfig::new(&url()).unwrap().nodes() {
        assert!(shown.contains(&node), "{shown}");
    }
    assert!(shown.contains("cluster: true"), "{shown}");
    assert_eq!(store.backend(), "redis");
    let dyn_store: &dyn AgentMemory = &store;
    assert!(dyn_store.capabilities().atomic_compaction);
}

/// How many times [`eventually`] tries, half a second apart: a bound, so that a store that
/// never recovers fails the test instead of hanging it.
const RECOVERY_TRIES: usize = 120;

/// The first success of `op` within [`RECOVERY_TRIES`] tries; every failure before it must be
/// `Unavailable` (the node is away or the cluster not yet ok), never another kind.
async fn eventually<T, F, Fut>(what: &str, mut op: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = agentmem_core::Result<T>>,
{
    let mut last = None;
    for _ in 0..RECOVERY_TRIES {
        match op().await {
            Ok(value) => return value,
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::Unavailable, "{what}: {e}");
                last = Some(e);
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    panic!("{what}: still failing after {RECOVERY_TRIES} tries: {last:?}");
}

/// The `run_id` of the Redis process at `node` (`host:port`), new each time a process starts;
/// `None` while nothing answers there.
async fn run_id(node: &str) -> Option<String> {
    let client = redis::Client::open(format!("redis://{node}")).ok()?;
    let mut conn = client.get_multiplexed_async_connection().await.ok()?;
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query_async(&mut conn)
        .await
        .ok()?;
    info.lines()
        .find_map(|line| line.strip_prefix("run_id:"))
        .map(|id| id.trim().to_string())
}

/// The master holding a store's keys restarts: its process closes every connection, stays
/// away for a second, and executes itself again (`DEBUG CRASH-AND-RECOVER`: no shutdown, no
/// save, so what it holds afterwards comes from its append-only file, synced on every write,
/// and its slots from its nodes.conf). The same store handle, never reopened by the test,
/// then reads every session and memory item acknowledged before the restart and writes
/// again; until it recovers each try fails `Unavailable`, and it recovers within a bounded
/// number of tries. The restart is checked: the node answers with a new `run_id`.
#[tokio::test]
async fn a_store_outlives_a_restart_of_its_master() {
    let url = agentmem_testkit::servers::redis_restart_cluster_url();
    let prefix = agentmem_testkit::unique_namespace("restart");
    let Some((store, _guard, mut raw)) = open_at(url, &prefix).await else {
        return;
    };
    let sessions: Vec<SessionId> = (0..3).map(|i| sid(&format!("agent {i}"))).collect();
    let mut acknowledged = Vec::new();
    for (i, id) in sessions.iter().enumerate() {
        let messages = [
            Message::user(format!("question {i}")),
            Message::assistant(format!("answer {i}")),
        ];
        store.append(id, &messages).await.unwrap();
        acknowledged.push(messages);
    }
    let item = store
        .put_memory(&MemoryItem::new(MemoryKind::Fact, "survives restarts").with_key("restart"))
        .await
        .unwrap();
    let master = owner(
        &slot_owners(&mut raw).await,
        keyslot(&mut raw, &prefix).await,
    )
    .to_string();
    drop(raw);
    let before = run_id(&master).await.expect("the master answers");

    let mut node = redis::Client::open(format!("redis://{master}"))
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let answer: redis::RedisResult<redis::Value> = redis::cmd("DEBUG")
        .arg("CRASH-AND-RECOVER")
        .arg(1000)
        .query_async(&mut node)
        .await;
    // A restarting node closes the connection without answering; an answer (an error such as
    // "DEBUG command not allowed" or "failed to restart") means it did not restart.
    match answer {
        Err(e) if e.code().is_none() => {}
        other => panic!("{master} did not restart: {other:?}"),
    }
    drop(node);

    // Straight away, while the node is away: the store's own connections must find it again.
    let loaded = eventually("load after the restart", || store.load(&sessions[0], None)).await;
    let after = run_id(&master).await.expect("the master answers again");
    assert_ne!(after, before, "{master} answers but was not restarted");
    assert_eq!(loaded.unwrap().messages, acknowledged[0]);
    for (id, messages) in sessions.iter().zip(&acknowledged) {
        let loaded = eventually("load", || store.load(id, None)).await.unwrap();
        assert_eq!(&loaded.messages, messages, "{id}");
    }
    assert_eq!(
        eventually("get_memory", || store.get_memory(&item.id)).await,
        Some(item.clone())
    );
    // And it writes again: a new message, an item replaced by key, a new session.
    eventually("append", || {
        store.append_one(&sessions[0], Message::user("after the restart"))
    })
    .await;
    let replaced = MemoryItem::new(MemoryKind::Fact, "still here").with_key("restart");
    let put = eventually("put_memory", || store.put_memory(&replaced)).await;
    assert_eq!(put.id, item.id);
    let new_session = sid("after");
    eventually("append to a new session", || {
        store.append_one(&new_session, Message::user("new"))
    })
    .await;
    let last = store.last_messages(&sessions[0], 1).await.unwrap();
    assert_eq!(last[0].content, "after the restart");
    assert_eq!(store.list_sessions().await.unwrap().len(), 4);
    let items = store.list_memories(&MemoryFilter::default()).await.unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].text, "still here");
}
