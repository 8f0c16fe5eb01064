//! Connection settings: a `postgres://` URL plus agentmem's own options.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use agentmem_core::backend::BackendConfig;
use agentmem_core::Layered;
use agentmem_core::{Error, Result};
use async_trait::async_trait;
use tokio_postgres::config::{Host, SslMode};

use crate::PostgresStore;

/// The schema used when the URL names none.
pub const DEFAULT_SCHEMA: &str = "agentmem";
/// Connections in the pool when the URL does not say (`pool_size`).
pub const DEFAULT_POOL_SIZE: usize = 16;
/// How long an operation waits for a pooled connection when the URL does not say
/// (`pool_timeout`).
pub const DEFAULT_POOL_TIMEOUT: Duration = Duration::from_secs(30);
/// The `application_name` reported to the server when the URL does not set one.
pub const DEFAULT_APPLICATION_NAME: &str = "agentmem";
/// The connect timeout used when the URL does not set `connect_timeout`.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest schema name PostgreSQL keeps (`NAMEDATALEN - 1`).
const MAX_SCHEMA_BYTES: usize = 63;
const MAX_POOL_SIZE: usize = 1024;

/// How to reach PostgreSQL and where to keep agentmem's tables.
///
/// Parsed from a `postgres://` or `postgresql://` URL. Every standard libpq option that
/// `tokio-postgres` understands (`host`, `port`, `user`, `password`, `dbname`,
/// `application_name`, `connect_timeout`, `keepalives`, `target_session_attrs`, `options`,
/// several comma-separated hosts, …) is passed through unchanged. agentmem adds its own
/// query options, removed before the URL reaches the driver:
///
/// - `schema=NAME`: the schema holding the tables (default `agentmem`): 1-63 lowercase ASCII
///   letters, digits and `_`, not starting with `pg_`. Each tenant (or test) can have its own.
/// - `pool_size=N`: at most N pooled connections (default 16).
/// - `pool_timeout=SECONDS`: how long an operation waits for a free connection before
///   failing with [`ErrorKind::Unavailable`](agentmem_core::ErrorKind::Unavailable) (default 30).
///
/// Connections are made without TLS (`NoTls`): use `sslmode=disable` or the default `prefer`
/// on a trusted network or a local socket; `sslmode=require` is refused when parsing.
///
/// `Debug` never shows the password.
///
/// ```
/// use agentmem_postgres::PostgresConfig;
/// let config: PostgresConfig =
///     "postgres://app:secret@db.internal:5433/memory?schema=tenant_7&pool_size=4".parse()?;
/// assert_eq!(config.schema(), "tenant_7");
/// assert_eq!(config.pool_size(), 4);
/// assert_eq!(config.pg_config().get_dbname(), Some("memory"));
/// assert!(!format!("{config:?}").contains("secret"));
/// # Ok::<(), agentmem_core::Error>(())
/// ```
#[derive(Clone)]
pub struct PostgresConfig {
    pg: tokio_postgres::Config,
    schema: String,
    pool_size: usize,
    pool_timeout: Duration,
}

impl PostgresConfig {
    /// Settings from a driver configuration, with the default schema and pool.
    ///
    /// Sets `application_name` and `connect_timeout` to agentmem's defaults when unset.
    pub fn new(mut pg: tokio_postgres::Config) -> Self {
        if pg.get_application_name().is_none() {
            pg.application_name(DEFAULT_APPLICATION_NAME);
        }
        if pg.get_connect_timeout().is_none() {
            pg.connect_timeout(DEFAULT_CONNECT_TIMEOUT);
        }
        PostgresConfig {
            pg,
            schema: DEFAULT_SCHEMA.to_string(),
            pool_size: DEFAULT_POOL_SIZE,
            pool_timeout: DEFAULT_POOL_TIMEOUT,
        }
    }

    /// The schema holding agentmem's tables.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// Uses `schema` (validated as described on [`PostgresConfig`]).
    pub fn with_schema(mut self, schema: &str) -> Result<Self> {
        validate_schema(schema)?;
        self.schema = schema.to_string();
        Ok(self)
    }

    /// The most connections the pool opens.
    pub fn pool_size(&self) -> usize {
        self.pool_size
    }

    /// Opens at most `size` connections (1 to 1024).
    pub fn with_pool_size(mut self, size: usize) -> Result<Self> {
        if size == 0 || size > MAX_POOL_SIZE {
            return Err(Error::invalid_input(format!(
                "invalid pool_size {size}: it must be between 1 and {MAX_POOL_SIZE}"
            )));
        }
        self.pool_size = size;
        Ok(self)
    }

    /// How long an operation waits for a free connection.
    pub fn pool_timeout(&self) -> Duration {
        self.pool_timeout
    }

    /// Waits at most `timeout` for a free connection (it must not be zero).
    pub fn with_pool_timeout(mut self, timeout: Duration) -> Result<Self> {
        if timeout.is_zero() {
            return Err(Error::invalid_input(
                "invalid pool_timeout: it must be above zero",
            ));
        }
        self.pool_timeout = timeout;
        Ok(self)
    }

    /// Reports `name` as `application_name` to the server (visible in `pg_stat_activity`).
    pub fn with_application_name(mut self, name: &str) -> Self {
        self.pg.application_name(name);
        self
    }

    /// The driver configuration (hosts, credentials, timeouts).
    pub fn pg_config(&self) -> &tokio_postgres::Config {
        &self.pg
    }

    /// The driver configuration, to change what the URL cannot express.
    pub fn pg_config_mut(&mut self) -> &mut tokio_postgres::Config {
        &mut self.pg
    }
}

impl FromStr for PostgresConfig {
    type Err = Error;

    fn from_str(url: &str) -> Result<Self> {
        let scheme_end = url.find("://").ok_or_else(|| {
            Error::invalid_input("a PostgreSQL URL starts with postgres:// or postgresql://")
        })?;
        let scheme = url[..scheme_end].to_ascii_lowercase();
        if scheme != "postgres" && scheme != "postgresql" {
            return Err(Error::invalid_input(format!(
                "unsupported URL scheme {scheme:?}: expected postgres:// or postgresql://"
            )));
        }
        let (base, query) = match url.split_once('?') {
            Some((base, query)) => (base, query),
            None => (url, ""),
        };

        let mut schema = None;
        let mut pool_size = None;
        let mut pool_timeout = None;
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let slot = match key {
                "schema" => &mut schema,
                "pool_size" => &mut pool_size,
                "pool_timeout" => &mut pool_timeout,
                _ => {
                    kept.push(pair);
                    continue;
                }
            };
            if slot.replace(value).is_some() {
                return Err(Error::invalid_input(format!(
                    "URL option `{key}` is given twice"
                )));
            }
        }

        let driver_url = if kept.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        // The driver's messages never echo the password, but keep the URL out of ours anyway.
        let pg = tokio_postgres::Config::from_str(&driver_url).map_err(|e| {
            Error::invalid_input(format!("invalid PostgreSQL URL: {e}")).with_source(e)
        })?;
        if !matches!(pg.get_ssl_mode(), SslMode::Disable | SslMode::Prefer) {
            return Err(Error::invalid_input(
                "sslmode=require is not supported: agentmem-postgres connects without TLS; \
                 use sslmode=disable or prefer on a trusted network",
            ));
        }

        let mut config = PostgresConfig::new(pg);
        if let Some(schema) = schema {
            config = config.with_schema(schema)?;
        }
        if let Some(size) = pool_size {
            let size = size.parse::<usize>().map_err(|_| {
                Error::invalid_input(format!(
                    "invalid pool_size {size:?}: expected a whole number between 1 and {MAX_POOL_SIZE}"
                ))
            })?;
            config = config.with_pool_size(size)?;
        }
        if let Some(timeout) = pool_timeout {
            let seconds = timeout
                .parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && *s > 0.0 && *s < 1e9)
                .ok_or_else(|| {
                    Error::invalid_input(format!(
                        "invalid pool_timeout {timeout:?}: expected a positive number of seconds"
                    ))
                })?;
            config = config.with_pool_timeout(Duration::from_secs_f64(seconds))?;
        }
        Ok(config)
    }
}

/// Registers the backend for `postgres://` and `postgresql://` URLs (see
/// [`Registry`](agentmem_core::backend::Registry)).
///
/// ```no_run
/// use agentmem_core::backend::Registry;
/// use agentmem_postgres::PostgresConfig;
/// # async fn demo() -> agentmem_core::Result<()> {
/// let registry = Registry::new().with::<PostgresConfig>();
/// let store = registry.open("postgres://app@db.internal/memory?schema=tenant_7").await?;
/// assert_eq!(store.backend(), "postgres");
/// # Ok(()) }
/// ```
#[async_trait]
impl BackendConfig for PostgresConfig {
    type Store = PostgresStore;
    const BACKEND: &'static str = crate::error::BACKEND;
    const SCHEMES: &'static [&'static str] = &["postgres", "postgresql"];

    async fn connect(self) -> Result<Layered<PostgresStore>> {
        PostgresStore::connect_with(self).await
    }
}

impl fmt::Debug for PostgresConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hosts: Vec<String> = self
            .pg
            .get_hosts()
            .iter()
            .map(|h| match h {
                Host::Tcp(name) => name.clone(),
                #[cfg(unix)]
                Host::Unix(path) => path.display().to_string(),
            })
            .collect();
        f.debug_struct("PostgresConfig")
            .field("hosts", &hosts)
            .field("ports", &self.pg.get_ports())
            .field("user", &self.pg.get_user())
            .field("password", &self.pg.get_password().map(|_| "***"))
            .field("dbname", &self.pg.get_dbname())
            .field("application_name", &self.pg.get_application_name())
            .field("schema", &self.schema)
            .field("pool_size", &self.pool_size)
            .field("pool_timeout", &self.pool_timeout)
            .finish()
    }
}

/// Checks a schema name: 1-63 bytes of lowercase ASCII letters, digits and `_`, not starting
/// with `pg_` (reserved by PostgreSQL). The name is always quoted in SQL, so a leading digit
/// is fine; the strict alphabet is what makes interpolating it safe.
pub fn validate_schema(schema: &str) -> Result<()> {
    let invalid = |why: &str| {
        Err(Error::invalid_input(format!(
            "invalid schema name {:?}: {why}",
            schema.chars().take(70).collect::<String>()
        )))
    };
    if schema.is_empty() {
        return invalid("it is empty");
    }
    if schema.len() > MAX_SCHEMA_BYTES {
        return invalid("it is longer than 63 bytes");
    }
    if !schema
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        return invalid("only lowercase ASCII letters, digits and `_` are allowed");
    }
    if schema.starts_with("pg_") {
        return invalid("names starting with `pg_` are reserved by PostgreSQL");
    }
    Ok(())
}

/// `"schema"`: the validated name in double quotes, ready to prefix table names.
pub(crate) fn quote_schema(schema: &str) -> String {
    // validate_schema admits no `"`, so wrapping is a complete quoting.
    format!("\"{schema}\"")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use agentmem_core::ErrorKind;

    #[test]
    fn agentmem_options_are_removed_before_the_driver_sees_them() {
        let c: PostgresConfig =
            "postgresql://u@h1:5432,h2:5433/db?application_name=x&schema=s_1&pool_size=3&connect_timeout=5&pool_timeout=1.5"
                .parse()
                .unwrap();
        assert_eq!(c.schema(), "s_1");
        assert_eq!(c.pool_size(), 3);
        assert_eq!(c.pool_timeout(), Duration::from_millis(1500));
        assert_eq!(c.pg_config().get_application_name(), Some("x"));
        assert_eq!(c.pg_config().get_ports(), &[5432, 5433]);
        assert_eq!(
            c.pg_config().get_connect_timeout(),
            Some(&Duration::from_secs(5))
        );
    }

    #[test]
    fn defaults_apply() {
        let c: PostgresConfig = "postgres://localhost/test".parse().unwrap();
        assert_eq!(c.schema(), DEFAULT_SCHEMA);
        assert_eq!(c.pool_size(), DEFAULT_POOL_SIZE);
        assert_eq!(
            c.pg_config().get_application_name(),
            Some(DEFAULT_APPLICATION_NAME)
        );
    }

    #[test]
    fn bad_values_are_invalid_input() {
        for url in [
            "mysql://localhost/x",
            "localhost/x",
            "postgres://localhost/x?schema=Bad",
            "postgres://localhost/x?schema=a\"b",
            "postgres://localhost/x?schema=",
            "postgres://localhost/x?schema=pg_catalog",
            "postgres://localhost/x?schema=a&schema=b",
            "postgres://localhost/x?pool_size=0",
            "postgres://localhost/x?pool_size=many",
            "postgres://localhost/x?pool_timeout=-1",
            "postgres://localhost/x?port=notaport",
            "postgres://localhost/x?no_such_option=1",
            "postgres://localhost/x?sslmode=require",
        ] {
            let err = url.parse::<PostgresConfig>().unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidInput, "{url}: {err}");
        }
        let long = "a".repeat(64);
        assert!(validate_schema(&long).is_err());
        assert!(validate_schema(&long[..63]).is_ok());
    }

    #[test]
    fn registered_for_both_schemes() {
        let registry = agentmem_core::backend::Registry::new().with::<PostgresConfig>();
        assert_eq!(registry.backend_for("postgres://h/db"), Some("postgres"));
        assert_eq!(registry.backend_for("PostgreSQL://h/db"), Some("postgres"));
        assert_eq!(registry.backend_for("redis://h"), None);
    }

    #[test]
    fn debug_redacts_the_password() {
        let c: PostgresConfig = "postgres://u:hunter2@localhost/x".parse().unwrap();
        let shown = format!("{c:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("***"));
    }
}
