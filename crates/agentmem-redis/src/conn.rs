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
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
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
    connect_timeout: Duration,
    response_timeout: Duration,
    retries: u32,
) -> Duration {
    connect_timeout * (retries + 1) + response_timeout + Duration::from_secs(1)
}

/// The manager's settings for these timeouts.
pub(crate) fn manager_config(
    connect_timeout: Duration,
    response_timeout: Duration,
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
        if config.tls_ca().is_some() {
            return bad_ca(config, e);
        }
        from_redis(e)
    })?;
    client.get_async_connection().await.map_err(from_redis)
}

/// The private CA of `config` (its `tls_ca` file) as redis-rs takes it; `None` to trust the
/// system's roots (or the bundle `SSL_CERT_FILE` names, which redis-rs reads through
/// rustls-native-certs).
#[cfg(feature = "tls")]
async fn tls_certificates(config: &RedisConfig) -> Result<Option<redis::TlsCertificates>> {
    let Some(path) = config.tls_ca() else {
        return Ok(None);
    };
    let pem = tokio::fs::read(path).await.map_err(|e| {
        Error::invalid_input(format!(
            "cannot read the Redis tls_ca file {}: {e}",
            path.display()
        ))
    })?;
    if !pem
        .windows(b"-----BEGIN CERTIFICATE-----".len())
        .any(|w| w == b"-----BEGIN CERTIFICATE-----")
    {
        return Err(Error::invalid_input(format!(
            "the Redis tls_ca file {} holds no PEM certificate",
            path.display()
        )));
    }
    Ok(Some(redis::TlsCertificates {
        client_tls: None,
        root_cert: Some(pem),
    }))
}

/// redis-rs refused the certificates of the `tls_ca` file.
#[cfg(feature = "tls")]
fn bad_ca(config: &RedisConfig, error: redis::RedisError) -> Error {
    let path = config.tls_ca().map(|p| p.display().to_string());
    Error::invalid_input(format!(
        "the Redis tls_ca file {} is not usable: {error}",
        path.unwrap_or_default()
    ))
    .with_source(error)
}
