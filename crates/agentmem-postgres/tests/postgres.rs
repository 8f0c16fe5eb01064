//! Postgres-specific behaviour: faults and recovery through the pool, concurrent migrations,
//! refusing newer schemas, URL handling, and the storage layout the design relies on.

mod common;

use std::time::Duration;

use agentmem_core::{
    AgentMemoryExt, ErrorKind, MemoryFilter, MemoryItem, MemoryKind, MemoryScope, MemoryStore,
    Message, Rewind, SessionId, SessionPatch, SessionQuery, SessionStore,
};
use agentmem_postgres::deadpool_postgres::{Manager, Pool, Runtime};
use agentmem_postgres::{PostgresStore, SCHEMA_VERSION};
use agentmem_testkit::NamespaceGuard;

fn sid(name: &str) -> SessionId {
    SessionId::new(name).expect("valid test session id")
}

/// Polls `pg_stat_activity` until a backend of `app` waits on a lock (the append is in
/// flight and blocked). Gives up after a generous bound so a broken run fails, not hangs.
async fn wait_until_blocked(admin: &tokio_postgres::Client, app: &str) {
    for _ in 0..1000 {
        let row = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity
                 WHERE application_name = $1 AND wait_event_type = 'Lock'",
                &[&app],
            )
            .await
            .expect("pg_stat_activity");
        if row.get::<_, i64>(0) > 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the append never blocked on the session lock");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminated_connections_fail_clearly_and_the_pool_recovers() {
    let app = agentmem_testkit::unique_namespace("amfault");
    let Some(store) = common::open(&[("application_name", &app), ("pool_size", "3")]).await else {
        return;
    };
    let session = sid("victim");
    let before: Vec<Message> = (0..5)
        .map(|i| Message::user(format!("before {i}")))
        .collect();
    for m in &before {
        store
            .append_one(&session, m.clone())
            .await
            .expect("append before the fault");
    }

    // Hold the session row's lock from another connection so the next append is blocked
    // inside the server, mid-statement, when its connection is terminated.
    let mut locker = common::admin().await;
    let lock_tx = locker.transaction().await.expect("begin");
    lock_tx
        .query(
            &format!(
                "SELECT 1 FROM \"{}\".sessions WHERE id = 'victim' FOR UPDATE",
                store.schema()
            ),
            &[],
        )
        .await
        .expect("lock the session row");
    let in_flight = {
        let store = store.clone();
        let session = session.clone();
        tokio::spawn(async move { store.append_one(&session, Message::user("in flight")).await })
    };
    let admin = common::admin().await;
    wait_until_blocked(&admin, &app).await;
    let killed: i64 = admin
        .query_one(
            "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE application_name = $1) t",
            &[&app],
        )
        .await
        .expect("terminate the store's connections")
        .get(0);
    assert!(
        killed >= 1,
        "the store's connections were found and terminated"
    );

    let err = in_flight
        .await
        .expect("task")
        .expect_err("an append whose connection was terminated cannot succeed");
    eprintln!("the in-flight append failed as expected: {err}");
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(err.is_temporary());
    assert!(
        err.to_string().contains("57P01") && err.to_string().contains("terminating connection"),
        "the message names the cause: {err}"
    );
    assert!(
        std::error::Error::source(&err).is_some(),
        "the driver error is kept"
    );
    lock_tx.rollback().await.expect("release the lock");

    // Every following operation either succeeds on a fresh connection or reports the dead
    // one as Unavailable; within a few attempts the pool has replaced them all.
    let mut recovered = false;
    for _ in 0..6 {
        match store.load(&session, None).await {
            Ok(_) => {
                recovered = true;
                break;
            }
            Err(e) => assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}"),
        }
    }
    assert!(recovered, "the pool hands out working connections again");

    // Work resumes: writes and reads succeed, nothing acknowledged was lost, and the
    // statement that died with its connection left nothing behind.
    let after = Message::user("after");
    store
        .append_one(&session, after.clone())
        .await
        .expect("append after recovery");
    let mut expected = before.clone();
    expected.push(after);
    assert_eq!(store.messages(&session).await.expect("load"), expected);
    let alive: i64 = admin
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
            &[&app],
        )
        .await
        .expect("pg_stat_activity")
        .get(0);
    assert!(alive >= 1, "the pool opened fresh connections");
}

#[tokio::test]
async fn an_unreachable_server_is_unavailable() {
    // Port 1 on the loopback interface refuses connections at once.
    let err = PostgresStore::connect("postgres://postgres@127.0.0.1:1/test?connect_timeout=2")
        .await
        .expect_err("nothing listens on port 1");
    eprintln!("connecting to port 1 failed as expected: {err}");
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(
        std::error::Error::source(&err).is_some(),
        "the I/O error is kept"
    );
}

#[tokio::test]
async fn waiting_too_long_for_a_connection_is_unavailable() {
    let Some(store) = common::open(&[("pool_size", "1"), ("pool_timeout", "0.2")]).await else {
        return;
    };
    // Hold the only connection, so the store's next operation waits for the pool.
    let held = store.pool().get().await.expect("the single connection");
    let err = store
        .load(&sid("any"), None)
        .await
        .expect_err("no connection is free");
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    drop(held);
    assert!(store.load(&sid("any"), None).await.expect("load").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_opens_of_a_new_schema_all_succeed_and_migrate_once() {
    let schema = agentmem_testkit::unique_namespace(common::PREFIX);
    let url = common::with_options(
        &common::database_url(),
        &[("schema", &schema), ("pool_size", "1")],
    );
    let opens: Vec<_> = (0..8)
        .map(|_| {
            let url = url.clone();
            tokio::spawn(async move { PostgresStore::connect(&url).await })
        })
        .collect();
    let mut stores = Vec::new();
    for open in opens {
        match open.await.expect("task") {
            Ok(store) => stores.push(store),
            Err(e) => {
                if agentmem_testkit::service_unavailable::<()>("postgres", &url, &e).is_none() {
                    return;
                }
            }
        }
    }
    let _schema = NamespaceGuard::new().postgres_schema(&common::database_url(), &schema);
    assert_eq!(stores.len(), 8);
    for store in &stores {
        assert_eq!(
            store.schema_version().await.expect("version"),
            SCHEMA_VERSION
        );
    }
    let admin = common::admin().await;
    let rows: i64 = admin
        .query_one(
            &format!("SELECT count(*) FROM \"{schema}\".schema_migrations"),
            &[],
        )
        .await
        .expect("count migrations")
        .get(0);
    assert_eq!(
        rows,
        i64::from(SCHEMA_VERSION),
        "each migration applied exactly once"
    );
    // All eight see one store.
    stores[0]
        .append_one(&sid("shared"), Message::user("hello"))
        .await
        .expect("append");
    assert_eq!(
        stores[7]
            .messages(&sid("shared"))
            .await
            .expect("load")
            .len(),
        1
    );
}

#[tokio::test]
async fn a_schema_from_a_newer_build_is_refused() {
    let Some(store) = common::open(&[]).await else {
        return;
    };
    let admin = common::admin().await;
    admin
        .execute(
            &format!(
                "INSERT INTO \"{}\".schema_migrations (version, description) VALUES (999, 'future')",
                store.schema()
            ),
            &[],
        )
        .await
        .expect("pretend a newer build migrated");
    let url = common::with_options(&common::database_url(), &[("schema", store.schema())]);
    let err = PostgresStore::connect(&url)
        .await
        .expect_err("version 999 is newer than this build");
    assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
    assert!(err.to_string().contains("999"), "{err}");
    assert_eq!(store.schema_version().await.expect("version"), 999);
}

#[tokio::test]
async fn reopening_keeps_data_and_version() {
    let Some(store) = common::open(&[]).await else {
        return;
    };
    store
        .append_one(&sid("kept"), Message::user("still here"))
        .await
        .expect("append");
    let again = common::reopen_current(&store).await;
    assert_eq!(again.messages(&sid("kept")).await.expect("load").len(), 1);
}

#[tokio::test]
async fn version_1_memories_become_global_when_migrated_to_2() {
    let Some(store) = common::open(&[]).await else {
        return;
    };
    let s = format!("\"{}\"", store.schema());
    let admin = common::admin().await;
    // Put the memories table back as version 1 left it, with an item in it.
    admin
        .batch_execute(&format!(
            "{undo_3}
             DROP INDEX {s}.memories_scope_kind_key;
             DROP INDEX {s}.memories_scope;
             DROP INDEX {s}.memories_expires;
             ALTER TABLE {s}.memories DROP COLUMN scope, DROP COLUMN expires_at;
             CREATE UNIQUE INDEX memories_kind_key ON {s}.memories (kind, key)
                 WHERE key IS NOT NULL;
             DELETE FROM {s}.schema_migrations WHERE version > 1;
             INSERT INTO {s}.memories (id, kind, key, text, created_at, updated_at, tsv)
                 VALUES ('old', 'fact', 'name', 'name is Ada', now(), now(), 'ada:3');",
            undo_3 = undo_version_3(&s)
        ))
        .await
        .expect("downgrade to version 1");
    let again = common::reopen_current(&store).await;
    let old = again
        .get_memory(&"old".parse().expect("id"))
        .await
        .expect("get")
        .expect("the item survives");
    assert_eq!(
        (old.scope.clone(), old.expires_at),
        (MemoryScope::global(), None)
    );
    assert_eq!(old.text, "name is Ada");
    let hits = again
        .search_memories("ada", &MemoryFilter::default())
        .await
        .expect("search");
    assert_eq!(hits.len(), 1);
    // The key is now unique per scope: another scope gets an item of its own.
    let alice = MemoryItem::new(MemoryKind::Fact, "name is Bea")
        .with_key("name")
        .in_scope(MemoryScope::agent("alice"));
    assert_eq!(again.put_memory(&alice).await.expect("put"), alice);
    let replaced = again
        .put_memory(&MemoryItem::new(MemoryKind::Fact, "name is Cy").with_key("name"))
        .await
        .expect("put");
    assert_eq!(replaced.id, old.id, "the global item is replaced by key");
}

/// SQL putting a schema at the current version (quoted `s`) back as version 2 left it:
/// version 6's graph, version 5's checkpoints, version 4's store properties and version 3's
/// labels undone.
fn undo_version_3(s: &str) -> String {
    format!(
        "{undo_6}
         DROP TABLE {s}.checkpoints, {s}.checkpoint_blobs, {s}.checkpoint_writes;
         DROP TABLE {s}.properties;
         DROP TABLE {s}.session_tags;
         DROP INDEX {s}.sessions_owner;
         DROP INDEX {s}.sessions_expires;
         ALTER TABLE {s}.sessions DROP COLUMN title, DROP COLUMN owner, DROP COLUMN expires_at;
         DELETE FROM {s}.schema_migrations WHERE version > 2;",
        undo_6 = common::undo_version_6(s)
    )
}

#[tokio::test]
async fn version_2_sessions_get_labels_and_expiry_when_migrated_to_3() {
    let Some(store) = common::open(&[]).await else {
        return;
    };
    let (old, other) = (sid("old"), sid("other"));
    let history = vec![
        Message::user("written by version 2"),
        Message::assistant("ok"),
    ];
    store.append(&old, &history).await.expect("append");
    store
        .compact(&old, &[Message::system("summary")])
        .await
        .expect("compact");
    store.append(&old, &history).await.expect("append");
    store
        .append_one(&other, Message::user("another"))
        .await
        .expect("append");
    let s = format!("\"{}\"", store.schema());
    common::admin()
        .await
        .batch_execute(&undo_version_3(&s))
        .await
        .expect("downgrade to version 2");
    let again = common::reopen_current(&store).await;

    // Everything version 2 wrote reads back, with no labels and no expiry.
    let session = again.load(&old, None).await.expect("load").expect("kept");
    assert_eq!(session.messages[0].content, "summary");
    assert_eq!(session.messages[1..], history[..]);
    assert!(session.labels.is_empty());
    assert_eq!(session.expires_at, None);
    assert_eq!(again.list_archives(&old).await.expect("archives").len(), 1);
    let listed = again.list_sessions().await.expect("list");
    assert_eq!(listed.len(), 2);
    assert!(listed
        .iter()
        .all(|s| s.labels.is_empty() && s.expires_at.is_none()));
    let hits = again
        .search_messages("version", &Default::default())
        .await
        .expect("search");
    assert_eq!(hits.len(), 1);

    // And the new operations work on it.
    let patch = SessionPatch::default().owner("ada").tag("from", "v2");
    again.update_session(&old, &patch).await.expect("label");
    let page = again
        .find_sessions(&SessionQuery::default().tag("from", "v2"))
        .await
        .expect("find");
    assert_eq!(page.sessions.len(), 1);
    assert_eq!(page.sessions[0].id, old);
    assert_eq!(page.sessions[0].message_count, 3);
    let removed = again.rewind(&old, &Rewind::Last(1)).await.expect("rewind");
    assert_eq!(removed, history[1..]);
    let fork = again.fork(&old, &sid("fork"), None).await.expect("fork");
    assert_eq!(fork.message_count, 2);
    assert_eq!(fork.labels.owner.as_deref(), Some("ada"));
}

#[tokio::test]
async fn an_unreadable_scope_is_corrupt_data() {
    let Some(store) = common::open(&[]).await else {
        return;
    };
    let item = MemoryItem::new(MemoryKind::Fact, "x").in_scope(MemoryScope::agent("a"));
    store.put_memory(&item).await.expect("put");
    common::admin()
        .await
        .execute(
            &format!(
                "UPDATE \"{}\".memories SET scope = 'agent:a/x:y'",
                store.schema()
            ),
            &[],
        )
        .await
        .expect("damage the scope");
    let err = store.get_memory(&item.id).await.expect_err("corrupt");
    assert_eq!(err.kind(), ErrorKind::CorruptData, "{err}");
    assert!(err.to_string().contains("agent:a/x:y"), "{err}");
}

#[tokio::test]
async fn bad_urls_are_invalid_input_before_any_connection() {
    for url in [
        "postgres://127.0.0.1:1/test?schema=Upper",
        "postgres://127.0.0.1:1/test?schema=x%22y",
        "postgres://127.0.0.1:1/test?pool_size=0",
        "redis://127.0.0.1:1/test",
    ] {
        let err = PostgresStore::connect(url).await.expect_err(url);
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{url}: {err}");
    }
}

#[tokio::test]
async fn stores_share_a_pool_with_separate_schemas() {
    let config: tokio_postgres::Config = common::database_url().parse().expect("DATABASE_URL");
    let pool = Pool::builder(Manager::new(config, tokio_postgres::NoTls))
        .max_size(2)
        .runtime(Runtime::Tokio1)
        .wait_timeout(Some(Duration::from_secs(10)))
        .build()
        .expect("pool");
    let a = agentmem_testkit::unique_namespace(common::PREFIX);
    let b = agentmem_testkit::unique_namespace(common::PREFIX);
    let store_a = match PostgresStore::from_client(pool.clone(), &a).await {
        Ok(s) => s,
        Err(e) => {
            let _: Option<()> =
                agentmem_testkit::service_unavailable("postgres", &common::database_url(), &e);
            return;
        }
    };
    let _schemas = NamespaceGuard::new()
        .postgres_schema(&common::database_url(), &a)
        .postgres_schema(&common::database_url(), &b);
    let store_b = PostgresStore::from_client(pool, &b)
        .await
        .expect("second schema");
    store_a
        .append_one(&sid("same"), Message::user("in a"))
        .await
        .expect("append a");
    assert!(store_b
        .load(&sid("same"), None)
        .await
        .expect("load b")
        .is_none());
    assert_eq!(
        store_a.messages(&sid("same")).await.expect("load a").len(),
        1
    );
    assert!(
        PostgresStore::from_client(store_a.pool().clone(), "Bad-Name")
            .await
            .is_err()
    );
}

#[tokio::test]
async fn last_n_is_an_index_scan_and_nul_content_round_trips() {
    let Some(store) = common::open(&[]).await else {
        return;
    };
    let session = sid("indexed");
    let batch: Vec<Message> = (0..500).map(|i| Message::user(format!("m{i}"))).collect();
    store.append(&session, &batch).await.expect("batch append");
    let admin = common::admin().await;
    admin
        .batch_execute(&format!("ANALYZE \"{}\".messages", store.schema()))
        .await
        .expect("analyze");
    let plan: Vec<String> = admin
        .query(
            &format!(
                // The shape of the store's load statement.
                "EXPLAIN SELECT s.metadata, m.seq FROM \"{s}\".sessions s
                 LEFT JOIN LATERAL (
                     SELECT seq, content FROM \"{s}\".messages
                     WHERE session_id = 'indexed' ORDER BY seq DESC LIMIT 20
                 ) m ON true
                 WHERE s.id = 'indexed'",
                s = store.schema()
            ),
            &[],
        )
        .await
        .expect("explain")
        .iter()
        .map(|r| r.get(0))
        .collect();
    let plan = plan.join("\n");
    assert!(
        plan.contains("Scan Backward using messages_pkey") && !plan.contains("Sort"),
        "{plan}"
    );
    let last = store.last_messages(&session, 20).await.expect("last 20");
    assert_eq!(last, batch[480..]);

    // PostgreSQL text cannot hold NUL; such content still round-trips exactly and is found.
    let odd = Message::user("before\0after needle");
    store
        .append_one(&session, odd.clone())
        .await
        .expect("append NUL content");
    assert_eq!(
        store.last_messages(&session, 1).await.expect("load"),
        vec![odd]
    );
    let hits = store
        .search_messages("needle", &Default::default())
        .await
        .expect("search");
    assert_eq!(hits.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_in_separate_pools_keep_order_and_lose_nothing() {
    // Four stores with their own pools stand in for four processes sharing one schema.
    let Some(first) = common::open(&[("pool_size", "2")]).await else {
        return;
    };
    let all = common::four_writers(&first, &common::database_url(), 25, false).await;
    // Each batch is contiguous: a batch's messages are never split by another writer's.
    for (pos, m) in all.iter().enumerate() {
        if let Some(rest) = m.content.strip_suffix(" k0") {
            let size = rest
                .rsplit_once(" i")
                .and_then(|(_, i)| i.parse::<usize>().ok())
                .map(|i| i % 3 + 1)
                .expect("content format");
            for k in 0..size {
                assert_eq!(
                    all[pos + k].content,
                    format!("{rest} k{k}"),
                    "batch contiguous"
                );
            }
        }
    }
}

#[tokio::test]
async fn huge_messages_are_stored_and_stay_searchable() {
    let Some(store) = common::open(&[]).await else {
        return;
    };
    // About 1.9 MB of distinct words: more than one tsvector can hold (1 MiB).
    let content: String = (0..250_000).map(|i| format!("w{i} ")).collect::<String>() + "needle";
    let huge = Message::user(content);
    let session = sid("huge");
    store
        .append_one(&session, huge.clone())
        .await
        .expect("a huge message is stored");
    assert_eq!(store.messages(&session).await.expect("load"), vec![huge]);
    let hits = store
        .search_messages("w1", &Default::default())
        .await
        .expect("search");
    assert_eq!(hits.len(), 1, "the words seen first are indexed");
    let hits = store
        .search_messages("needle", &Default::default())
        .await
        .expect("search");
    assert!(
        hits.is_empty(),
        "words past the tsvector limit are not indexed"
    );
}

/// How many rows of `table` belong to session `id` in `store`'s schema.
async fn rows_of(
    admin: &tokio_postgres::Client, store: &PostgresStore, table: &str, id: &str,
) -> i64 {
    let column = if table == "sessions" {
        "id"
    } else {
        "session_id"
    };
    let sql = format!(
        "SELECT count(*) FROM \"{}\".{table} WHERE {column} = $1",
        store.schema()
    );
    common::count(admin, &sql, &[&id]).await
}

#[tokio::test]
async fn expired_sessions_leave_no_rows_once_rewritten_or_purged() {
    let Some(store) = common::open(&[]).await else {
        return;
    };
    let (rewritten, purged) = (sid("rewritten"), sid("purged"));
    let past = agentmem_core::now() - chrono::Duration::seconds(1);
    for id in [&rewritten, &purged] {
        store
            .append(id, &[Message::user("old words")])
            .await
            .expect("append");
        store
            .compact(id, &[Message::system("old summary")])
            .await
            .expect("compact");
        let patch = SessionPatch::default()
            .tag("a", "1")
            .tag("b", "2")
            .expire_at(past);
        store.update_session(id, &patch).await.expect("expire");
    }
    store
        .append_one(&rewritten, Message::user("new"))
        .await
        .expect("append to the expired session");
    let report = store
        .purge(&agentmem_core::RetentionPolicy::default())
        .await
        .expect("purge");
    assert_eq!(
        report.sessions_deleted, 1,
        "only the expired one: {report:?}"
    );
    let admin = common::admin().await;
    for (table, left_by_rewrite) in [
        ("sessions", 1),
        ("messages", 1),
        ("archives", 0),
        ("archived_messages", 0),
        ("session_tags", 0),
    ] {
        assert_eq!(
            rows_of(&admin, &store, table, "rewritten").await,
            left_by_rewrite,
            "{table} of the rewritten session"
        );
        assert_eq!(
            rows_of(&admin, &store, table, "purged").await,
            0,
            "{table} of the purged session"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewinds_racing_appends_keep_positions_counts_and_search_consistent() {
    let Some(store) = common::open(&[("pool_size", "6")]).await else {
        return;
    };
    let session = sid("raced");
    store
        .append_one(&session, Message::user("start walrus"))
        .await
        .expect("append");
    let writers: Vec<_> = (0..3)
        .map(|w| {
            let (store, session) = (store.clone(), session.clone());
            tokio::spawn(async move {
                for i in 0..20 {
                    let batch = vec![
                        Message::user(format!("walrus w{w} i{i} a")),
                        Message::assistant(format!("walrus w{w} i{i} b")),
                    ];
                    store.append(&session, &batch).await.expect("append");
                }
            })
        })
        .collect();
    let rewinder = {
        let (store, session) = (store.clone(), session.clone());
        tokio::spawn(async move {
            let mut removed = Vec::new();
            for _ in 0..20 {
                removed.extend(
                    store
                        .rewind(&session, &Rewind::Last(1))
                        .await
                        .expect("rewind"),
                );
            }
            removed
        })
    };
    for w in writers {
        w.await.expect("writer");
    }
    let removed = rewinder.await.expect("rewinder");
    let session_now = store
        .load(&session, None)
        .await
        .expect("load")
        .expect("kept");
    let kept = session_now.messages;
    assert_eq!(
        kept.len() + removed.len(),
        1 + 3 * 20 * 2,
        "nothing lost or doubled"
    );
    assert_eq!(session_now.total_messages, kept.len() as u64);
    let mut ids: Vec<_> = kept.iter().chain(&removed).map(|m| m.id.clone()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), kept.len() + removed.len(), "each message once");
    // A window of the last 5 is the tail of the whole.
    let tail = store.last_messages(&session, 5).await.expect("last 5");
    assert_eq!(tail, kept[kept.len() - 5..]);
    // Search finds exactly the kept messages.
    let query = agentmem_core::MessageQuery {
        session: Some(session.clone()),
        limit: 1000,
    };
    let hits = store
        .search_messages("walrus", &query)
        .await
        .expect("search");
    assert_eq!(
        hits.len(),
        kept.len(),
        "search holds the kept messages only"
    );
    // Appends after the race follow the kept messages.
    store
        .append_one(&session, Message::user("last"))
        .await
        .expect("append");
    let all = store.messages(&session).await.expect("load");
    assert_eq!(all[..kept.len()], kept[..]);
    assert_eq!(all.last().map(|m| m.content.as_str()), Some("last"));
}

/// The positions of archive `archive`'s messages in `store`'s schema, in order.
async fn archived_seqs(
    admin: &tokio_postgres::Client, store: &PostgresStore, archive: &str,
) -> Vec<i64> {
    admin
        .query(
            &format!(
                "SELECT seq FROM \"{}\".archived_messages WHERE archive_id = $1 ORDER BY seq",
                store.schema()
            ),
            &[&archive],
        )
        .await
        .expect("archived positions")
        .iter()
        .map(|row| row.get(0))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn archive_rewrites_racing_each_other_and_deletes_leave_whole_archives() {
    let Some(store) = common::open(&[("pool_size", "6")]).await else {
        return;
    };
    let admin = common::admin().await;
    let session = sid("rekeyed");
    let old: Vec<Message> = (0..5).map(|i| Message::user(format!("old {i}"))).collect();
    store
        .append_one(&session, Message::user("before"))
        .await
        .expect("append");
    store.append(&session, &old).await.expect("append");
    let archive = store
        .compact(&session, &[Message::system("summary")])
        .await
        .expect("compact");
    let positions = archived_seqs(&admin, &store, archive.id.as_str()).await;
    assert_eq!(positions, (0..6).collect::<Vec<_>>());

    // Rewrites of one archive racing each other and appends: the archive ends up holding
    // exactly one of them, whole, at the positions it started from.
    let rewrites: Vec<Vec<Message>> = (0..4)
        .map(|w| {
            (0..3 + w)
                .map(|i| Message::assistant(format!("rewrite {w} message {i}")))
                .collect()
        })
        .collect();
    let tasks: Vec<_> = rewrites
        .iter()
        .cloned()
        .map(|messages| {
            let (store, session, id) = (store.clone(), session.clone(), archive.id.clone());
            tokio::spawn(async move {
                for _ in 0..10 {
                    let info = store
                        .replace_archive(&session, &id, &messages)
                        .await
                        .expect("replace_archive");
                    assert_eq!(info.message_count, messages.len() as u64);
                }
            })
        })
        .collect();
    let appender = {
        let (store, session) = (store.clone(), session.clone());
        tokio::spawn(async move {
            for i in 0..20 {
                store
                    .append_one(&session, Message::user(format!("during {i}")))
                    .await
                    .expect("append");
            }
        })
    };
    for task in tasks {
        task.await.expect("rewriter");
    }
    appender.await.expect("appender");
    let loaded = store
        .load_archive(&session, &archive.id)
        .await
        .expect("load_archive");
    assert!(
        rewrites.contains(&loaded.messages),
        "one rewrite, whole: {:?}",
        loaded.messages
    );
    assert_eq!(loaded.info.message_count, loaded.messages.len() as u64);
    assert_eq!(loaded.info.created_at, archive.created_at);
    assert_eq!(
        archived_seqs(&admin, &store, archive.id.as_str()).await,
        (0..loaded.messages.len() as i64).collect::<Vec<_>>()
    );
    assert_eq!(store.messages(&session).await.expect("load").len(), 21);

    // Rewrites racing the session's deletion: once it is gone they are NotFound, and
    // nothing of the archive is left behind.
    let rewriter = {
        let (store, session, id) = (store.clone(), session.clone(), archive.id.clone());
        tokio::spawn(async move {
            // Until the deletion is seen (bounded, so a broken run fails instead of hanging).
            for _ in 0..10_000 {
                match store.replace_archive(&session, &id, &old).await {
                    Ok(_) => {}
                    Err(e) if e.kind() == ErrorKind::NotFound => return,
                    Err(e) => panic!("replace_archive: {e}"),
                }
            }
            panic!("the session's deletion was never seen");
        })
    };
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(store.delete_session(&session).await.expect("delete"));
    rewriter.await.expect("rewriter");
    for table in ["sessions", "archives", "archived_messages"] {
        assert_eq!(
            rows_of(&admin, &store, table, "rekeyed").await,
            0,
            "{table} of the deleted session"
        );
    }
}
