//! The connection a store talks through: one server's reconnecting `ConnectionManager`, or a
//! Redis Cluster's `ClusterConnection` (which follows the slot map and reconnects itself),
//! behind one type so every operation is written once.
//!
//! Both are multiplexed and cheap to clone; the enum adds one branch per command, nothing
//! else, to the single-server path.

use std::time::Duration;

#[cfg(feature = "tls")]
use agentmem_core::Error;
use agentmem_core::Result;
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

use crate::config::RedisConfig;
use crate::error::from_redis;

/// How many times a connection attempt is retried (with a short backoff) before the waiting
/// commands fail: one, so a dead server is reported quickly.
pub(crate) const CONNECT_RETRIES: u32 = 1;

/// How many times the cluster client retries a command (after a refused connection, a
/// `MOVED`/`ASK` redirection while slots migrate, `TRYAGAIN`, …) before it fails.
pub(crate) const CLUSTER_RETRIES: u32 = 3;

/// A connection to one server or to a cluster.
#[derive(Clone)]
pub(crate) enum Conn {
    /// One server (any database), through redis-rs' reconnecting manager.
    Single(ConnectionManager),
    /// A Redis Cluster: commands go to the node serving their key's slot.
    Cluster(ClusterConnection),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self, pipeline: &'a Pipeline, offset: usize, count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
}

/// The longest any one operation may take with these timeouts and `retries` retries: every
/// attempt and backoff, one reply, and slack.
pub(crate) fn deadline(
    connect_timeout: Duration, response_timeout: Duration, retries: u32,
) -> Duration {
    connect_timeout * (retries + 1) + response_timeout + Duration::from_secs(1)
}

/// The manager's settings for these timeouts.
pub(crate) fn manager_config(
    connect_timeout: Duration, response_timeout: Duration,
) -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_connection_timeout(Some(connect_timeout))
        .set_response_timeout(Some(response_timeout))
        .set_number_of_retries(CONNECT_RETRIES as usize)
        .set_min_delay(Duration::from_millis(50))
        .set_max_delay(Duration::from_millis(500))
}

/// The redis-rs client of a single-server `config`, with its private CA when it names one.
pub(crate) async fn single_client(config: &RedisConfig) -> Result<redis::Client> {
    #[cfg(feature = "tls")]
    if let Some(certificates) = tls_certificates(config).await? {
        return redis::Client::build_with_tls(config.server_url(), certificates)
            .map_err(|e| bad_ca(config, e));
    }
    redis::Client::open(config.server_url()).map_err(from_redis)
}

/// Connects to the cluster whose seed nodes `config` names.
pub(crate) async fn cluster_connection(config: &RedisConfig) -> Result<ClusterConnection> {
    let nodes: Vec<String> = config
        .server_urls()
        .iter()
        .map(|u| u.as_str().to_string())
        .collect();
    #[allow(unused_mut, reason = "reassigned only with the `tls` feature")]
    let mut builder = ClusterClientBuilder::new(nodes)
        .connection_timeout(config.connect_timeout())
        .response_timeout(config.response_timeout())
        .retries(CLUSTER_RETRIES)
        .min_retry_wait(50)
        .max_retry_wait(500);
    #[cfg(feature = "tls")]
    if let Some(certificates) = tls_certificates(config).await? {
        builder = builder.certs(certificates);
    }
    let client = builder.build().map_err(|e| {
        #[cfg(feature = "tls")]
        if config.tls_ca().is_some() || config.tls_client_cert().is_some() {
            return bad_ca(config, e);
        }
        from_redis(e)
    })?;
    client.get_async_connection().await.map_err(from_redis)
}

/// The private CA of `config` (its `tls_ca` file) and its client certificate (the `tls_cert`
/// and `tls_key` files) as redis-rs takes them; `None` when it names neither, to trust the
/// system's roots (or the bundle `SSL_CERT_FILE` names, which redis-rs reads through
/// rustls-native-certs) and present no client certificate.
#[cfg(feature = "tls")]
async fn tls_certificates(config: &RedisConfig) -> Result<Option<redis::TlsCertificates>> {
    let root_cert = match config.tls_ca() {
        Some(path) => Some(read_pem("tls_ca", path, "CERTIFICATE").await?),
        None => None,
    };
    let client_tls = match config.tls_client_cert() {
        Some((cert, key)) => Some(redis::ClientTlsConfig {
            client_cert: read_pem("tls_cert", cert, "CERTIFICATE").await?,
            client_key: read_pem("tls_key", key, "PRIVATE KEY").await?,
        }),
        None => None,
    };
    if root_cert.is_none() && client_tls.is_none() {
        return Ok(None);
    }
    Ok(Some(redis::TlsCertificates {
        client_tls,
        root_cert,
    }))
}

/// The PEM file `path` that the URL option `option` names; `InvalidInput` when it cannot be
/// read or holds no `-----BEGIN …{label}-----` block.
#[cfg(feature = "tls")]
async fn read_pem(option: &str, path: &std::path::Path, label: &str) -> Result<Vec<u8>> {
    let pem = tokio::fs::read(path).await.map_err(|e| {
        Error::invalid_input(format!(
            "cannot read the Redis {option} file {}: {e}",
            path.display()
        ))
    })?;
    let holds_label = String::from_utf8_lossy(&pem)
        .lines()
        .any(|line| line.starts_with("-----BEGIN ") && line.ends_with(&format!("{label}-----")));
    if !holds_label {
        return Err(Error::invalid_input(format!(
            "the Redis {option} file {} holds no PEM {}",
            path.display(),
            label.to_ascii_lowercase()
        )));
    }
    Ok(pem)
}

/// redis-rs refused the certificates or key of the `tls_ca`, `tls_cert` or `tls_key` files.
#[cfg(feature = "tls")]
fn bad_ca(config: &RedisConfig, error: redis::RedisError) -> Error {
    let mut files: Vec<String> = Vec::new();
    if let Some(path) = config.tls_ca() {
        files.push(format!("tls_ca file {}", path.display()));
    }
    if let Some((cert, key)) = config.tls_client_cert() {
        files.push(format!("tls_cert file {}", cert.display()));
        files.push(format!("tls_key file {}", key.display()));
    }
    Error::invalid_input(format!(
        "the Redis {} not usable: {error}",
        if files.len() == 1 {
            format!("{} is", files[0])
        } else {
            format!("{} are", files.join(", "))
        }
    ))
    .with_source(error)
}
