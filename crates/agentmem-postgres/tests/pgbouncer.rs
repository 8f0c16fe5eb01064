//! Behind PgBouncer in transaction pooling mode (`PGBOUNCER_URL`, `.ci/postgres-extra.sh`):
//! the pooler is detected and statements go unnamed, the URL option overrides detection, and
//! concurrent writers through the pooler keep order and lose nothing. (The whole conformance
//! suite through it is `conformance_pgbouncer.rs`.)

mod common;

use agentmem_core::{AgentMemoryExt, Message, SessionId, SessionStore};
use agentmem_postgres::deadpool_postgres::{Manager, Pool, Runtime};
use agentmem_postgres::{PostgresStore, PreparedStatements};

fn sid(name: &str) -> SessionId {
    SessionId::new(name).expect("valid test session id")
}

/// Appends, searches, compacts and reads back: every kind of statement, in and out of
/// transactions.
async fn exercise(store: &PostgresStore) {
    let session = sid("exercised");
    store
        .append(
            &session,
            &[
                Message::user("find the needle"),
                Message::assistant("found"),
            ],
        )
        .await
        .expect("append");
    let hits = store
        .search_messages("needle", &Default::default())
        .await
        .expect("search");
    assert_eq!(hits.len(), 1);
    store
        .compact(&session, &[Message::system("summary")])
        .await
        .expect("compact");
    let archives = store.list_archives(&session).await.expect("archives");
    assert_eq!(archives.len(), 1);
    assert_eq!(store.messages(&session).await.expect("load").len(), 1);
}

#[tokio::test]
async fn a_pooler_is_detected_and_statements_go_unnamed() {
    let Some(pooled) = common::open_at("pgbouncer", &common::pgbouncer_url(), &[]).await else {
        return;
    };
    assert!(
        !pooled.prepares_statements(),
        "PgBouncer's cancel key is not the server process's"
    );
    exercise(&pooled).await;

    // Straight to the server, with and without TLS negotiation (the detection reads the
    // driver's cancel request through a TLS request or none): prepared.
    for sslmode in ["prefer", "disable"] {
        let Some(direct) = common::open(&[("sslmode", sslmode)]).await else {
            return;
        };
        assert!(direct.prepares_statements(), "sslmode={sslmode}");
    }
}

#[tokio::test]
async fn the_url_option_overrides_detection() {
    let Some(forced) = common::open_at(
        "pgbouncer",
        &common::pgbouncer_url(),
        &[("prepared_statements", "on")],
    )
    .await
    else {
        return;
    };
    assert!(forced.prepares_statements(), "on is honoured");
    drop(forced);

    let Some(unnamed) = common::open(&[("prepared_statements", "off")]).await else {
        return;
    };
    assert!(!unnamed.prepares_statements(), "off is honoured");
    exercise(&unnamed).await;
}

#[tokio::test]
async fn a_pool_of_ones_own_is_checked_too() {
    // from_client detects the pooler on a pool the caller built; from_client_with overrides.
    let url = common::pgbouncer_url();
    let config: tokio_postgres::Config = url.parse().expect("PGBOUNCER_URL");
    let pool = Pool::builder(Manager::new(config, tokio_postgres::NoTls))
        .max_size(2)
        .runtime(Runtime::Tokio1)
        .wait_timeout(Some(std::time::Duration::from_secs(10)))
        .build()
        .expect("pool");
    let schema = agentmem_testkit::unique_namespace(common::PREFIX);
    let store = match PostgresStore::from_client(pool.clone(), &schema).await {
        Ok(store) => store,
        Err(e) => {
            return agentmem_testkit::service_unavailable("pgbouncer", &url, &e).unwrap_or(())
        }
    };
    let _schema = common::dropping_schema(
        &common::with_options(&url, &[("schema", &schema), ("pool_size", "1")]),
        &schema,
    );
    assert!(!store.prepares_statements());
    exercise(&store).await;
    let forced = PostgresStore::from_client_with(pool, &schema, PreparedStatements::On)
        .await
        .expect("open");
    assert!(forced.prepares_statements());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_through_the_pooler_keep_order_and_lose_nothing() {
    // Four stores with pools of their own stand in for four processes, all through one
    // PgBouncer that multiplexes their transactions over its server connections.
    let Some(first) =
        common::open_at("pgbouncer", &common::pgbouncer_url(), &[("pool_size", "2")]).await
    else {
        return;
    };
    common::four_writers(&first, &common::pgbouncer_url(), 20, true).await;
}
