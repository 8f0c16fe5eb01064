//! Shared by the integration tests: the server URLs, a store in a fresh schema, cleanup of
//! schemas left by earlier test processes, and the CAs of the TLS tests.
#![allow(
    dead_code,
    reason = "shared by several test binaries, each using part of it"
)]

use std::sync::atomic::{AtomicBool, Ordering};

use agentmem_core::{Layered, SessionStore};
use agentmem_postgres::PostgresStore;
use agentmem_testkit::{NamespaceGuard, TestStore};

/// Every test schema starts with this, so stale ones can be found and dropped.
pub const PREFIX: &str = "amtest";

/// A test's store: it derefs to the store, and drops the store's schema when dropped, so a
/// failing test leaves no schema behind either.
pub type GuardedStore = TestStore<Layered<PostgresStore>>;

/// `DATABASE_URL`, read at run time, or the local test server.
pub fn database_url() -> String {
    agentmem_testkit::servers::postgres_url()
}

/// `url` with extra query options appended.
pub fn with_options(url: &str, options: &[(&str, &str)]) -> String {
    let mut url = url.to_string();
    for (key, value) in options {
        url.push(if url.contains('?') { '&' } else { '?' });
        url.push_str(&format!("{key}={value}"));
    }
    url
}

/// `base` in `schema`, with a pool of four unless `options` sizes it, and `options`.
fn url_in_schema(base: &str, schema: &str, options: &[(&str, &str)]) -> String {
    let mut all = vec![("schema", schema)];
    if !options.iter().any(|(key, _)| *key == "pool_size") {
        all.push(("pool_size", "4"));
    }
    all.extend_from_slice(options);
    with_options(base, &all)
}

/// A store in a schema of its own with the given extra URL options, dropping its schema when
/// dropped; `None` (test skipped) only when the server is unreachable and services are not
/// required.
pub async fn open(options: &[(&str, &str)]) -> Option<GuardedStore> {
    let base = database_url();
    let store = open_in_fresh_schema("postgres", &base, options, |schema| {
        NamespaceGuard::new().postgres_schema(&base, schema)
    })
    .await?;
    drop_stale_schemas(&store).await;
    Some(store)
}

/// A store in a fresh schema on the server at `base` with `options`, guarded by what `guard`
/// makes of the schema's name (only once the store is open: a server that cannot be reached
/// has nothing to remove); `None` as [`open`]. `service` names the server in that message.
async fn open_in_fresh_schema(
    service: &str, base: &str, options: &[(&str, &str)], guard: impl FnOnce(&str) -> NamespaceGuard,
) -> Option<GuardedStore> {
    let schema = agentmem_testkit::unique_namespace(PREFIX);
    let url = url_in_schema(base, &schema, options);
    match PostgresStore::connect(&url).await {
        Ok(store) => Some(TestStore::new(store).with_namespace(guard(&schema))),
        Err(e) => agentmem_testkit::service_unavailable(service, &url, &e),
    }
}

/// The guard that drops `schema` through a store of its own at `url` (a store URL selecting
/// `schema`), connecting as agentmem does: TLS, client certificates and host options included,
/// which the driver-only [`NamespaceGuard::postgres_schema`] cannot.
pub fn dropping_schema(url: &str, schema: &str) -> NamespaceGuard {
    let url = url.to_string();
    NamespaceGuard::new().on_drop(format!("postgres schema {schema}"), move || {
        let url = url.clone();
        async move { PostgresStore::connect(&url).await?.drop_schema().await }
    })
}

/// `POSTGRES_TLS_URL`: the TLS-only server of `.ci/postgres-extra.sh` (`verify-full` with its
/// private CA), or a `require` default.
pub fn tls_url() -> String {
    agentmem_testkit::servers::postgres_tls_url()
}

/// [`tls_url`] without its `ssl*` options (each test sets its own).
pub fn tls_url_without_ssl_options() -> url::Url {
    let mut url = url::Url::parse(&tls_url()).expect("POSTGRES_TLS_URL is a URL");
    let kept: Vec<(String, String)> = url
        .query_pairs()
        .filter(|(k, _)| !k.starts_with("ssl"))
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    url.set_query(None);
    if !kept.is_empty() {
        url.query_pairs_mut().extend_pairs(kept);
    }
    url
}

/// `POSTGRES_TLS_CA`, the private CA that signed the TLS server's certificate; `None` (test
/// skipped) when unset and services are not required.
pub fn private_ca() -> Option<String> {
    match std::env::var_os("POSTGRES_TLS_CA") {
        Some(path) => Some(path.to_string_lossy().into_owned()),
        None => agentmem_testkit::service_unavailable(
            "postgres-tls",
            &tls_url(),
            &"POSTGRES_TLS_CA (its private CA) is not set: run .ci/postgres-extra.sh start",
        ),
    }
}

/// A fresh self-signed CA that signed nothing the servers present: the folder holding it
/// (removed when dropped) and the path of its certificate.
pub fn other_ca() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let cert = dir.path().join("other-ca.crt");
    let status = std::process::Command::new("openssl")
        .args(["req", "-x509", "-new", "-newkey", "ec", "-pkeyopt"])
        .arg("ec_paramgen_curve:prime256v1")
        .args(["-nodes", "-days", "2", "-subj", "/CN=agentmem other CA"])
        .args(["-addext", "basicConstraints=critical,CA:TRUE"])
        .arg("-keyout")
        .arg(dir.path().join("other-ca.key"))
        .arg("-out")
        .arg(&cert)
        .status()
        .expect("openssl runs");
    assert!(status.success(), "openssl made the other CA");
    let cert = cert.to_string_lossy().into_owned();
    (dir, cert)
}

/// `PGBOUNCER_URL`: PgBouncer in transaction pooling mode in front of the plain server.
pub fn pgbouncer_url() -> String {
    agentmem_testkit::servers::pgbouncer_url()
}

/// A store in a fresh schema on the server at `base` (another than `DATABASE_URL`'s), with
/// extra URL options, dropping the schema when dropped (through [`dropping_schema`] at `base`
/// without `options`); `None` (test skipped) only when the server is unreachable and services
/// are not required. `service` names the server in that message.
pub async fn open_at(service: &str, base: &str, options: &[(&str, &str)]) -> Option<GuardedStore> {
    open_in_fresh_schema(service, base, options, |schema| {
        let cleanup = with_options(base, &[("schema", schema), ("pool_size", "1")]);
        dropping_schema(&cleanup, schema)
    })
    .await
}

/// SQL undoing version 8 (search terms are stems) in the quoted schema `s`, for tests that put
/// a schema back as an older version left it (each also deletes the later versions' rows of
/// `schema_migrations`): every tsvector holds words again, as `to_tsvector('simple', …)` splits
/// them (which is agentmem's word rule for plain text).
pub fn undo_version_8(s: &str) -> String {
    format!(
        "UPDATE {s}.messages SET tsv = to_tsvector('simple', content);
         UPDATE {s}.memories SET tsv = to_tsvector('simple', text);"
    )
}

/// SQL undoing version 7 (embedding vectors) and the version after it (see
/// [`undo_version_8`]).
pub fn undo_version_7(s: &str) -> String {
    format!(
        "{undo_8} DROP TABLE {s}.vectors;",
        undo_8 = undo_version_8(s)
    )
}

/// SQL undoing version 6 (the knowledge graph) and the versions after it (see
/// [`undo_version_7`]).
pub fn undo_version_6(s: &str) -> String {
    format!(
        "{undo_7}
         DROP TABLE {s}.graph_entities, {s}.graph_observations, {s}.graph_relations;
         DROP SEQUENCE {s}.graph_seq;",
        undo_7 = undo_version_7(s)
    )
}

/// Puts `store`'s schema back as version `version` left it, holding a message (`undo` gives
/// the SQL dropping the later versions' objects in the quoted schema; their
/// `schema_migrations` rows are deleted here), then reopens it with [`reopen_current`]: the
/// message is still there. Returns the reopened store.
pub async fn migrated_from(
    store: &Layered<PostgresStore>, version: u32, undo: impl FnOnce(&str) -> String,
) -> Layered<PostgresStore> {
    use agentmem_core::{AgentMemoryExt, Message, SessionId};
    let session = SessionId::new("old").expect("session id");
    store
        .append_one(
            &session,
            Message::user(format!("written by version {version}")),
        )
        .await
        .expect("append");
    let s = format!("\"{}\"", store.schema());
    admin()
        .await
        .batch_execute(&format!(
            "{undo}
             DELETE FROM {s}.schema_migrations WHERE version > {version};",
            undo = undo(&s)
        ))
        .await
        .expect("downgrade");
    assert_eq!(store.schema_version().await.expect("version"), version);
    let again = reopen_current(store).await;
    assert_eq!(again.messages(&session).await.expect("load").len(), 1);
    again
}

/// A second connection to `store`'s schema, which must open (migrating it if need be) and
/// report this build's schema version.
pub async fn reopen_current(store: &PostgresStore) -> Layered<PostgresStore> {
    let url = with_options(&database_url(), &[("schema", store.schema())]);
    let again = PostgresStore::connect(&url)
        .await
        .expect("reopen (and migrate)");
    assert_eq!(
        again.schema_version().await.expect("version"),
        agentmem_postgres::SCHEMA_VERSION
    );
    again
}

/// `n` more stores on `store`'s schema, each with a pool of its own: other processes.
pub async fn other_processes(store: &PostgresStore, n: usize) -> Vec<Layered<PostgresStore>> {
    let url = with_options(
        &database_url(),
        &[("schema", store.schema()), ("pool_size", "4")],
    );
    let mut stores = Vec::new();
    for _ in 0..n {
        stores.push(PostgresStore::connect(&url).await.expect("another process"));
    }
    stores
}

/// `n` printable ASCII characters PostgreSQL's compression finds no pattern in (a linear
/// congruential sequence seeded with `seed`).
pub fn incompressible(n: usize, seed: u64) -> String {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            char::from(b'!' + ((state >> 33) % 94) as u8)
        })
        .collect()
}

/// The count the query `sql` (a `SELECT count(*)`) returns on `client`.
pub async fn count(
    client: &tokio_postgres::Client, sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> i64 {
    client
        .query_one(sql, params)
        .await
        .expect("count rows")
        .get(0)
}

/// A plain driver connection for inspecting and disturbing the server.
pub async fn admin() -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(&database_url(), tokio_postgres::NoTls)
        .await
        .expect("admin connection to the test server");
    tokio::spawn(connection);
    client
}

/// Drops test schemas whose creating process is gone, once per test process, so repeated
/// runs do not pile schemas up. Names are `amtest_{pid}_{nanos}_{n}`; a schema is dropped
/// only when no process with its pid exists (Linux only; elsewhere nothing is dropped).
async fn drop_stale_schemas(store: &PostgresStore) {
    static DONE: AtomicBool = AtomicBool::new(false);
    if !cfg!(target_os = "linux") || DONE.swap(true, Ordering::SeqCst) {
        return;
    }
    let Ok(client) = store.pool().get().await else {
        return;
    };
    let Ok(rows) = client
        .query(
            "SELECT nspname::text FROM pg_namespace WHERE starts_with(nspname, $1)",
            &[&format!("{PREFIX}_")],
        )
        .await
    else {
        return;
    };
    for row in rows {
        let name: String = row.get(0);
        let Some(pid) = name.split('_').nth(1).and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        let valid = name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if valid && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = client
                .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{name}\" CASCADE"))
                .await;
        }
    }
}

/// Four stores with pools of their own (standing in for four processes) on the schema of
/// `first` at `base`, each appending `rounds` batches of 1-3 messages to one session (with
/// reads between, when `with_reads`); checks that nothing is lost and each writer's messages
/// keep their order, and returns every message of the session.
pub async fn four_writers(
    first: &Layered<PostgresStore>, base: &str, rounds: usize, with_reads: bool,
) -> Vec<agentmem_core::Message> {
    use agentmem_core::{AgentMemoryExt, Message, SessionId, SessionStore};
    let url = with_options(base, &[("schema", first.schema()), ("pool_size", "2")]);
    let mut writers = vec![first.clone()];
    for _ in 0..3 {
        writers.push(PostgresStore::connect(&url).await.expect("another process"));
    }
    let session = SessionId::new("shared").expect("session id");
    let tasks: Vec<_> = writers
        .into_iter()
        .enumerate()
        .map(|(w, store)| {
            let session = session.clone();
            tokio::spawn(async move {
                for i in 0..rounds {
                    let batch: Vec<Message> = (0..=(i % 3))
                        .map(|k| Message::user(format!("w{w} i{i} k{k}")))
                        .collect();
                    store.append(&session, &batch).await.expect("append");
                    if with_reads && i % 5 == 0 {
                        // Reads and transactions interleave with the appends.
                        store.load(&session, Some(3)).await.expect("load");
                        store.list_sessions().await.expect("list");
                    }
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("writer task");
    }
    let all = first.messages(&session).await.expect("load");
    let per_writer: usize = (0..rounds).map(|i| i % 3 + 1).sum();
    assert_eq!(all.len(), 4 * per_writer, "nothing lost");
    for w in 0..4 {
        let mine: Vec<&str> = all
            .iter()
            .map(|m| m.content.as_str())
            .filter(|c| c.starts_with(&format!("w{w} ")))
            .collect();
        let expected: Vec<String> = (0..rounds)
            .flat_map(|i| (0..=(i % 3)).map(move |k| format!("w{w} i{i} k{k}")))
            .collect();
        assert_eq!(mine, expected, "writer {w} keeps its order");
    }
    all
}
