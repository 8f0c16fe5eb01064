//! The shared test servers: their URLs (read at run time, defaulting to the local servers),
//! fresh namespaces on them ([`ServerNamespace`]), and the cleanups that remove a namespace
//! (`NamespaceGuard::redis_prefix`, `NamespaceGuard::redis_store_prefix` for TLS servers and
//! clusters, `NamespaceGuard::postgres_schema`, `NamespaceGuard::mongodb_database`).
//!
//! The cleanups talk to the server with its driver, so each sits behind a feature of this
//! crate: `redis`, `postgres`, `mongodb`. The URLs need none.

#[cfg(any(feature = "redis", feature = "postgres", feature = "mongodb"))]
use std::time::Duration;

use crate::{env_url, NamespaceGuard, TestStore};

/// The Redis server when `REDIS_URL` is unset.
pub const DEFAULT_REDIS_URL: &str = "redis://127.0.0.1:6379";
/// The PostgreSQL server when `DATABASE_URL` is unset.
pub const DEFAULT_POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/test";
/// The MongoDB server when `MONGODB_URL` is unset.
pub const DEFAULT_MONGODB_URL: &str = "mongodb://127.0.0.1:27017/?directConnection=true";

/// The TLS-only Redis server when `REDIS_TLS_URL` is unset (`.ci/redis-extra.sh` serves it;
/// without `tls_ca` in the URL its CA must be trusted through `SSL_CERT_FILE`).
pub const DEFAULT_REDIS_TLS_URL: &str = "rediss://127.0.0.1:6380/";
/// The Redis Cluster when `REDIS_CLUSTER_URL` is unset (`.ci/redis-extra.sh` serves it).
pub const DEFAULT_REDIS_CLUSTER_URL: &str =
    "redis+cluster://127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003/";

/// The Redis Cluster over TLS when `REDIS_TLS_CLUSTER_URL` is unset (`.ci/redis-extra.sh`
/// serves it; its CA must then be trusted through `SSL_CERT_FILE`).
pub const DEFAULT_REDIS_TLS_CLUSTER_URL: &str =
    "rediss+cluster://127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103/";

/// The Redis Cluster whose masters may be restarted, when `REDIS_RESTART_CLUSTER_URL` is
/// unset (`.ci/redis-extra.sh` serves it: append-only files keep the nodes' data across a
/// restart, and `DEBUG CRASH-AND-RECOVER` is allowed from loopback). Tests that restart its
/// nodes use it alone, so the other cluster tests never see a master go away.
pub const DEFAULT_REDIS_RESTART_CLUSTER_URL: &str =
    "redis+cluster://127.0.0.1:7201,127.0.0.1:7202,127.0.0.1:7203/";

/// `REDIS_TLS_URL`, read at run time, or [`DEFAULT_REDIS_TLS_URL`].
pub fn redis_tls_url() -> String {
    env_url("REDIS_TLS_URL", DEFAULT_REDIS_TLS_URL)
}

/// `REDIS_CLUSTER_URL`, read at run time, or [`DEFAULT_REDIS_CLUSTER_URL`].
pub fn redis_cluster_url() -> String {
    env_url("REDIS_CLUSTER_URL", DEFAULT_REDIS_CLUSTER_URL)
}

/// `REDIS_TLS_CLUSTER_URL`, read at run time, or [`DEFAULT_REDIS_TLS_CLUSTER_URL`].
pub fn redis_tls_cluster_url() -> String {
    env_url("REDIS_TLS_CLUSTER_URL", DEFAULT_REDIS_TLS_CLUSTER_URL)
}

/// `REDIS_RESTART_CLUSTER_URL`, read at run time, or [`DEFAULT_REDIS_RESTART_CLUSTER_URL`].
pub fn redis_restart_cluster_url() -> String {
    env_url(
        "REDIS_RESTART_CLUSTER_URL",
        DEFAULT_REDIS_RESTART_CLUSTER_URL,
    )
}

/// `REDIS_URL`, read at run time, or [`DEFAULT_REDIS_URL`].
pub fn redis_url() -> String {
    env_url("REDIS_URL", DEFAULT_REDIS_URL)
}

/// `DATABASE_URL`, read at run time, or [`DEFAULT_POSTGRES_URL`].
pub fn postgres_url() -> String {
    env_url("DATABASE_URL", DEFAULT_POSTGRES_URL)
}

/// The TLS-only PostgreSQL server when `POSTGRES_TLS_URL` is unset (`.ci/postgres-extra.sh`
/// serves it; that script's URL checks the certificate with `verify-full` against its
/// private CA, this default only with `require`).
pub const DEFAULT_POSTGRES_TLS_URL: &str =
    "postgres://postgres:agentmem-ci@127.0.0.1:5433/test?sslmode=require";
/// PgBouncer in transaction pooling mode, in front of the PostgreSQL server, when
/// `PGBOUNCER_URL` is unset (`.ci/postgres-extra.sh` serves it).
pub const DEFAULT_PGBOUNCER_URL: &str = "postgres://postgres@127.0.0.1:6432/test";

/// `POSTGRES_TLS_URL`, read at run time, or [`DEFAULT_POSTGRES_TLS_URL`].
pub fn postgres_tls_url() -> String {
    env_url("POSTGRES_TLS_URL", DEFAULT_POSTGRES_TLS_URL)
}

/// `PGBOUNCER_URL`, read at run time, or [`DEFAULT_PGBOUNCER_URL`].
pub fn pgbouncer_url() -> String {
    env_url("PGBOUNCER_URL", DEFAULT_PGBOUNCER_URL)
}

/// `MONGODB_URL`, read at run time, or [`DEFAULT_MONGODB_URL`].
pub fn mongodb_url() -> String {
    env_url("MONGODB_URL", DEFAULT_MONGODB_URL)
}

/// The MongoDB server over TLS when `MONGODB_TLS_URL` is unset (`.ci/mongo-servers.sh` serves
/// it, a TLS proxy in front of the server on 27017; without `tlsCAFile` in the URL its CA must
/// be trusted through `SSL_CERT_FILE`).
pub const DEFAULT_MONGODB_TLS_URL: &str =
    "mongodb://127.0.0.1:27019/?tls=true&directConnection=true";

/// `MONGODB_TLS_URL`, read at run time, or [`DEFAULT_MONGODB_TLS_URL`].
pub fn mongodb_tls_url() -> String {
    env_url("MONGODB_TLS_URL", DEFAULT_MONGODB_TLS_URL)
}

/// A CA certificate (PEM) that no test server's certificate comes from, for the tests that a
/// client trusting another CA refuses the server.
pub fn other_ca_file() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/other-ca.pem")
}

/// How long a cleanup waits for the server to answer before it gives up.
#[cfg(any(feature = "redis", feature = "postgres", feature = "mongodb"))]
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A fresh namespace on a shared server: the store URL that selects it (for `agentmem::open`,
/// a backend's `connect`, or the CLI's `--store`) and the guard that removes it when dropped.
///
/// ```no_run
/// # #[cfg(feature = "redis")] {
/// let namespace = agentmem_testkit::ServerNamespace::redis("convo");
/// // redis://127.0.0.1:6379/?prefix=convo_4242_123456789_0
/// let url = namespace.url();
/// // … open `url` and test; its keys are deleted when `namespace` is dropped.
/// # }
/// ```
#[derive(Debug)]
pub struct ServerNamespace {
    url: String,
    name: String,
    guard: NamespaceGuard,
}

impl ServerNamespace {
    /// A fresh key prefix on the Redis server at `REDIS_URL`, starting with `prefix`.
    #[cfg(feature = "redis")]
    pub fn redis(prefix: &str) -> Self {
        let remove = NamespaceGuard::redis_prefix;
        Self::fresh(&redis_url(), prefix, remove, Select::Query("prefix"))
    }

    /// A fresh key prefix on the TLS-only Redis server at `REDIS_TLS_URL`, starting with
    /// `prefix`.
    #[cfg(feature = "redis")]
    pub fn redis_tls(prefix: &str) -> Self {
        Self::redis_store(redis_tls_url(), prefix)
    }

    /// A fresh key prefix on the Redis Cluster at `REDIS_CLUSTER_URL`, starting with `prefix`.
    #[cfg(feature = "redis")]
    pub fn redis_cluster(prefix: &str) -> Self {
        Self::redis_store(redis_cluster_url(), prefix)
    }

    /// A fresh key prefix on the Redis Cluster over TLS at `REDIS_TLS_CLUSTER_URL`, starting
    /// with `prefix`.
    #[cfg(feature = "redis")]
    pub fn redis_tls_cluster(prefix: &str) -> Self {
        Self::redis_store(redis_tls_cluster_url(), prefix)
    }

    /// A fresh key prefix on the Redis server or cluster at the agentmem URL `base`.
    #[cfg(feature = "redis")]
    fn redis_store(base: String, prefix: &str) -> Self {
        let remove = NamespaceGuard::redis_store_prefix;
        Self::fresh(&base, prefix, remove, Select::Query("prefix"))
    }

    /// A fresh schema on the PostgreSQL server at `DATABASE_URL`, starting with `prefix`.
    #[cfg(feature = "postgres")]
    pub fn postgres(prefix: &str) -> Self {
        let remove = NamespaceGuard::postgres_schema;
        Self::fresh(&postgres_url(), prefix, remove, Select::Query("schema"))
    }

    /// A fresh database on the MongoDB server at `MONGODB_URL`, starting with `prefix`.
    #[cfg(feature = "mongodb")]
    pub fn mongodb(prefix: &str) -> Self {
        Self::mongodb_at(mongodb_url(), prefix)
    }

    /// A fresh database on the MongoDB server over TLS at `MONGODB_TLS_URL`, starting with
    /// `prefix`.
    #[cfg(feature = "mongodb")]
    pub fn mongodb_tls(prefix: &str) -> Self {
        Self::mongodb_at(mongodb_tls_url(), prefix)
    }

    /// A fresh database on the MongoDB server at the URL `base`.
    #[cfg(feature = "mongodb")]
    fn mongodb_at(base: String, prefix: &str) -> Self {
        let remove = NamespaceGuard::mongodb_database;
        Self::fresh(&base, prefix, remove, Select::Path)
    }

    /// A fresh namespace starting with `prefix` on the server at `base`: `remove` adds its
    /// removal to a guard (a `NamespaceGuard` method), `select` says how the URL names it.
    #[cfg(any(feature = "redis", feature = "postgres", feature = "mongodb"))]
    fn fresh(
        base: &str, prefix: &str, remove: fn(NamespaceGuard, &str, &str) -> NamespaceGuard,
        select: Select,
    ) -> Self {
        let name = crate::unique_namespace(prefix);
        let guard = remove(NamespaceGuard::new(), base, &name);
        let url = match select {
            #[cfg(any(feature = "redis", feature = "postgres"))]
            Select::Query(key) => {
                let separator = if base.contains('?') { '&' } else { '?' };
                format!("{base}{separator}{key}={name}")
            }
            #[cfg(feature = "mongodb")]
            Select::Path => {
                let mut url = url::Url::parse(base).expect("the MongoDB URL is a valid URL");
                url.set_path(&format!("/{name}"));
                url.to_string()
            }
        };
        ServerNamespace { url, name, guard }
    }

    /// The store URL selecting this namespace.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The namespace's name: the key prefix, schema or database.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The guard alone, e.g. for [`TestStore::with_namespace`](crate::TestStore::with_namespace).
    pub fn into_guard(self) -> NamespaceGuard {
        self.guard
    }

    /// A conformance factory's answer for a store connected to [`url`](Self::url): the store,
    /// removing this namespace when dropped, or `None` (through [`service_unavailable`]) when
    /// `opened` failed because `service` cannot be reached.
    ///
    /// [`service_unavailable`]: crate::service_unavailable
    pub fn test_store<S, E>(self, service: &str, opened: Result<S, E>) -> Option<TestStore>
    where
        S: agentmem_core::AgentMemory + 'static,
        E: std::fmt::Display,
    {
        match opened {
            Ok(store) => Some(TestStore::new(store).with_namespace(self.guard).into_dyn()),
            Err(e) => crate::service_unavailable(service, &self.url, &e),
        }
    }
}

/// Where a store URL names a [`ServerNamespace`].
#[cfg(any(feature = "redis", feature = "postgres", feature = "mongodb"))]
#[derive(Clone, Copy)]
enum Select {
    /// A query parameter (Redis' `prefix`, PostgreSQL's `schema`), appended as text: a Redis
    /// Cluster URL's comma-separated hosts are no `url::Url`. (Namespace names need no
    /// escaping: see `checked`.)
    #[cfg(any(feature = "redis", feature = "postgres"))]
    Query(&'static str),
    /// The path: MongoDB's database.
    #[cfg(feature = "mongodb")]
    Path,
}

/// Whether `name` is a namespace this module may remove: ASCII letters, digits, `_` and `-`
/// (what [`unique_namespace`] makes is such a name), so it is safe in a key pattern and as a
/// quoted identifier.
///
/// [`unique_namespace`]: crate::unique_namespace
#[cfg(any(feature = "redis", feature = "postgres", feature = "mongodb"))]
fn checked(name: &str) -> Result<&str, String> {
    if !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        Ok(name)
    } else {
        Err(format!("refusing to remove namespace {name:?}"))
    }
}

impl NamespaceGuard {
    /// Adds the deletion of every key under `{prefix}:` on the Redis server at `url` (without
    /// the agentmem `prefix` parameter).
    #[cfg(feature = "redis")]
    pub fn redis_prefix(self, url: &str, prefix: &str) -> Self {
        self.removing("redis prefix", url, prefix, remove_redis_keys)
    }

    /// Adds the deletion of every key of the agentmem Redis store `prefix` at `url`: any URL
    /// agentmem-redis opens (`redis://`, `rediss://` with its `tls_ca` option, or
    /// `redis+cluster://` and `rediss+cluster://`, whose keys start with `{prefix}`), without the
    /// `prefix` parameter.
    #[cfg(feature = "redis")]
    pub fn redis_store_prefix(self, url: &str, prefix: &str) -> Self {
        self.removing("redis prefix", url, prefix, remove_redis_store_keys)
    }

    /// Adds `DROP SCHEMA … CASCADE` of `schema` on the PostgreSQL server at `url` (without the
    /// agentmem `schema` or pool parameters).
    #[cfg(feature = "postgres")]
    pub fn postgres_schema(self, url: &str, schema: &str) -> Self {
        self.removing("postgres schema", url, schema, drop_postgres_schema)
    }

    /// Adds the dropping of `database` on the MongoDB server at `url`.
    #[cfg(feature = "mongodb")]
    pub fn mongodb_database(self, url: &str, database: &str) -> Self {
        self.removing("mongodb database", url, database, drop_mongodb_database)
    }

    /// Adds `remove(url, name)`, the removal of the namespace `name` (a `kind`) on the server
    /// at `url`.
    #[cfg(any(feature = "redis", feature = "postgres", feature = "mongodb"))]
    fn removing<Fut>(
        self, kind: &str, url: &str, name: &str, remove: fn(String, String) -> Fut,
    ) -> Self
    where
        Fut: std::future::Future<Output = Result<(), String>> + Send + 'static,
    {
        let (url, name) = (url.to_string(), name.to_string());
        self.on_drop(format!("{kind} {name}"), move || {
            remove(url.clone(), name.clone())
        })
    }
}

/// Deletes every key under `{prefix}:` on the Redis server at `url`.
#[cfg(feature = "redis")]
async fn remove_redis_keys(url: String, prefix: String) -> Result<(), String> {
    let pattern = format!("{}:*", checked(&prefix)?);
    let client = redis::Client::open(url.as_str()).map_err(|e| e.to_string())?;
    let mut conn = tokio::time::timeout(CONNECT_TIMEOUT, client.get_multiplexed_async_connection())
        .await
        .map_err(|_| "no answer from the server".to_string())?
        .map_err(|e| e.to_string())?;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(&pattern)
        .query_async(&mut conn)
        .await
        .map_err(|e| e.to_string())?;
    for chunk in keys.chunks(500) {
        redis::cmd("UNLINK")
            .arg(chunk)
            .query_async::<()>(&mut conn)
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Deletes every key of the agentmem Redis store `prefix` at `url` (see
/// [`NamespaceGuard::redis_store_prefix`]) with one script on the node of the store's keys:
/// they share one hash slot on a cluster, so that node holds them all.
#[cfg(feature = "redis")]
async fn remove_redis_store_keys(url: String, prefix: String) -> Result<(), String> {
    const DELETE: &str = "local keys = redis.call('KEYS', ARGV[1])\n\
        for _, key in ipairs(keys) do redis.call('UNLINK', key) end\n\
        return #keys";
    let name = checked(&prefix)?;
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| format!("not a Redis URL: {}", agentmem_core::redact_url(&url)))?;
    let scheme = scheme.to_ascii_lowercase();
    let (base, cluster) = match scheme.strip_suffix("+cluster") {
        Some(base) => (base, true),
        None => (scheme.as_str(), false),
    };
    let (location, query) = rest.split_once('?').unwrap_or((rest, ""));
    // The URL's TLS files, as agentmem-redis reads them.
    let tls_file = |option: &str| -> Result<Option<Vec<u8>>, String> {
        let Some((_, path)) =
            url::form_urlencoded::parse(query.as_bytes()).find(|(key, _)| key == option)
        else {
            return Ok(None);
        };
        std::fs::read(path.as_ref())
            .map(Some)
            .map_err(|e| format!("{option} {path}: {e}"))
    };
    let root_cert = tls_file("tls_ca")?;
    let client_tls = match (tls_file("tls_cert")?, tls_file("tls_key")?) {
        (Some(client_cert), Some(client_key)) => Some(redis::ClientTlsConfig {
            client_cert,
            client_key,
        }),
        _ => None,
    };
    let certificates =
        (root_cert.is_some() || client_tls.is_some()).then_some(redis::TlsCertificates {
            client_tls,
            root_cert,
        });
    let root = if cluster {
        format!("{{{name}}}")
    } else {
        name.to_string()
    };
    let mut script = redis::cmd("EVAL");
    script
        .arg(DELETE)
        .arg(1)
        .arg(format!("{root}:schema"))
        .arg(format!("{root}:*"));
    let error = |e: redis::RedisError| e.to_string();
    if cluster {
        let (authority, _) = location.split_once('/').unwrap_or((location, ""));
        let (user_info, hosts) = match authority.rfind('@') {
            Some(at) => authority.split_at(at + 1),
            None => ("", authority),
        };
        let nodes: Vec<String> = hosts
            .split(',')
            .map(|host| format!("{base}://{user_info}{host}"))
            .collect();
        let mut builder = redis::cluster::ClusterClientBuilder::new(nodes)
            .connection_timeout(CONNECT_TIMEOUT)
            .response_timeout(CONNECT_TIMEOUT);
        if let Some(certificates) = certificates {
            builder = builder.certs(certificates);
        }
        let client = builder.build().map_err(error)?;
        let mut conn = client.get_async_connection().await.map_err(error)?;
        script.query_async::<i64>(&mut conn).await.map_err(error)?;
    } else {
        let node = format!("{base}://{location}");
        let client = match certificates {
            Some(certificates) => redis::Client::build_with_tls(node, certificates),
            None => redis::Client::open(node),
        }
        .map_err(error)?;
        let mut conn =
            tokio::time::timeout(CONNECT_TIMEOUT, client.get_multiplexed_async_connection())
                .await
                .map_err(|_| "no answer from the server".to_string())?
                .map_err(error)?;
        script.query_async::<i64>(&mut conn).await.map_err(error)?;
    }
    Ok(())
}

/// `DROP SCHEMA IF EXISTS … CASCADE` of `schema` on the PostgreSQL server at `url`.
#[cfg(feature = "postgres")]
async fn drop_postgres_schema(url: String, schema: String) -> Result<(), String> {
    let sql = format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", checked(&schema)?);
    let mut config: tokio_postgres::Config = url.parse().map_err(|e| format!("{e}"))?;
    config.connect_timeout(CONNECT_TIMEOUT);
    let (client, connection) = config
        .connect(tokio_postgres::NoTls)
        .await
        .map_err(|e| e.to_string())?;
    let connection = tokio::spawn(connection);
    let dropped = client.batch_execute(&sql).await.map_err(|e| e.to_string());
    drop(client);
    let _ = connection.await;
    dropped
}

/// Drops `database` on the MongoDB server at `url`.
#[cfg(feature = "mongodb")]
async fn drop_mongodb_database(url: String, database: String) -> Result<(), String> {
    let name = checked(&database)?;
    let mut options = mongodb::options::ClientOptions::parse(&url)
        .await
        .map_err(|e| e.to_string())?;
    options.server_selection_timeout = Some(CONNECT_TIMEOUT);
    let client = mongodb::Client::with_options(options).map_err(|e| e.to_string())?;
    let dropped = client
        .database(name)
        .drop()
        .await
        .map_err(|e| e.to_string());
    client.shutdown().await;
    dropped
}
