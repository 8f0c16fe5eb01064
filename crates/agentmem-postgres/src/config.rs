//! Connection settings: a `postgres://` URL plus agentmem's own options.

use agentmem_core::backend::BackendInfo;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use agentmem_core::backend::BackendConfig;
use agentmem_core::support::percent_decode;
use agentmem_core::Layered;
use agentmem_core::{Error, Result};
use async_trait::async_trait;
use tokio_postgres::config::Host;

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
/// `tokio-postgres` understands (`host`, `port`, `user`, `password`, `dbname`, `hostaddr`,
/// `application_name`, `connect_timeout`, `keepalives`, `target_session_attrs`,
/// `channel_binding`, `sslnegotiation`, `options`, several comma-separated hosts, …) is passed
/// through unchanged. agentmem handles these query options itself and removes them before
/// the URL reaches the driver:
///
/// - `schema=NAME`: the schema holding the tables (default `agentmem`): 1-63 lowercase ASCII
///   letters, digits and `_`, not starting with `pg_`. Each tenant (or test) can have its own.
/// - `pool_size=N`: at most N pooled connections (default 16).
/// - `pool_timeout=SECONDS`: how long an operation waits for a free connection before
///   failing with [`ErrorKind::Unavailable`](agentmem_core::ErrorKind::Unavailable) (default 30).
/// - `sslmode=disable|prefer|require|verify-ca|verify-full` (default `prefer`), with libpq's
///   meaning: see [`SslMode`].
/// - `sslrootcert=PATH`: PEM file of the CA certificates to trust instead of the platform's
///   roots; with it, `prefer` and `require` check the certificate chain too (as libpq does).
///   `sslrootcert=system` means the platform's roots and, as in libpq, needs
///   `sslmode=verify-full` (its default then).
/// - `sslcert=PATH` and `sslkey=PATH`: a client certificate (PEM, with its chain) and its
///   private key (PEM, PKCS#8, PKCS#1 or SEC1, not encrypted), both or neither.
/// - `prepared_statements=auto|on|off` (default `auto`): see [`PreparedStatements`]; `off`
///   for a connection pooler in transaction mode (PgBouncer, …) that `auto` does not detect.
///
/// Paths may be percent-encoded. Certificates are read when the store connects.
///
/// `Debug` never shows the password.
///
/// ```
/// use agentmem_postgres::{PostgresConfig, SslMode};
/// let config: PostgresConfig =
///     "postgres://app:secret@db.internal:5433/memory?schema=tenant_7&pool_size=4&sslmode=verify-full"
///         .parse()?;
/// assert_eq!(config.schema(), "tenant_7");
/// assert_eq!(config.pool_size(), 4);
/// assert_eq!(config.ssl_mode(), SslMode::VerifyFull);
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
    ssl_mode: SslMode,
    ssl_root_cert: Option<PathBuf>,
    ssl_client_cert: Option<(PathBuf, PathBuf)>,
    prepared_statements: PreparedStatements,
}

agentmem_core::name_enum! {
    /// When to use TLS and what to check, as libpq's `sslmode` (the URL option of that name).
    ///
    /// | mode | TLS | falls back to plaintext | checks the certificate chain | checks the host name |
    /// |---|---|---|---|---|
    /// | `Disable` | never | – | – | – |
    /// | `Prefer` (default) | if the server accepts it | when the server refuses TLS or the handshake fails | only with `sslrootcert` | no |
    /// | `Require` | always | never | only with `sslrootcert` | no |
    /// | `VerifyCa` | always | never | yes | no |
    /// | `VerifyFull` | always | never | yes | yes |
    ///
    /// The chain is checked against `sslrootcert` when given, else (with `VerifyFull` only)
    /// the platform's root certificates (rustls-native-certs: `SSL_CERT_FILE` / `SSL_CERT_DIR`
    /// when set, as OpenSSL does, else the system store). `VerifyCa` without `sslrootcert` is
    /// refused when connecting, as libpq does: without the host name check, any publicly
    /// trusted certificate would pass. libpq's default `~/.postgresql/root.crt` and
    /// `postgresql.crt` are not read: name them with `sslrootcert`, `sslcert` and `sslkey`.
    /// The host name checked is the URL's `host` (also with `hostaddr`), against the
    /// certificate's DNS or IP subject alternative names.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub enum SslMode {
        /// Plaintext only.
        Disable = "disable",
        /// TLS when the server accepts it, else plaintext (the default).
        #[default]
        Prefer = "prefer",
        /// TLS or no connection; the certificate is checked only when `sslrootcert` is given.
        Require = "require",
        /// TLS with a certificate chain to a trusted CA; any host name.
        VerifyCa = "verify-ca",
        /// TLS with a certificate chain to a trusted CA, issued for the host connected to.
        VerifyFull = "verify-full",
    }
    from_str("sslmode");
}

impl SslMode {
    /// Whether a connection without TLS is refused.
    pub fn requires_tls(self) -> bool {
        matches!(
            self,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull
        )
    }

    /// The driver's mode for the TLS negotiation (the checks are agentmem's).
    pub(crate) fn driver_mode(self) -> tokio_postgres::config::SslMode {
        use tokio_postgres::config::SslMode as Driver;
        match self {
            SslMode::Disable => Driver::Disable,
            SslMode::Prefer => Driver::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => Driver::Require,
        }
    }
}

agentmem_core::name_enum! {
    /// Whether statements are prepared once per connection and reused (the URL option
    /// `prepared_statements`: `auto`; `on`, `true`, `yes` or `1`; `off`, `false`, `no` or `0`).
    ///
    /// Named server-side prepared statements belong to one server connection. A pooler in
    /// transaction mode (PgBouncer's `pool_mode = transaction`, as pooled managed PostgreSQL is
    /// reached) hands each transaction whichever server connection is free, so a statement
    /// prepared on one is missing, or another client's, on the next (`prepared statement "s2"
    /// already exists`). Without them every statement is sent unnamed, parsed and planned each
    /// time, still in one round trip, with its parameter types given by agentmem.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub enum PreparedStatements {
        /// Prepared and reused, unless the connection goes through a pooler (the default).
        ///
        /// Detected when the store opens: PostgreSQL tells a client its server process id in
        /// the cancel key it sends at connect; PgBouncer (and other poolers that multiplex
        /// connections) hand out keys of their own, so the key's process id differs from
        /// `pg_backend_pid()`. A pooler that passes the server's key through is not detected:
        /// set `off` there.
        #[default]
        Auto = "auto",
        /// Always prepared once per connection and reused (deadpool's statement cache).
        On = "on" | "true" | "yes" | "1",
        /// Never named: every statement is sent unnamed, for poolers in transaction mode.
        Off = "off" | "false" | "no" | "0",
    }
    from_str("prepared_statements");
}

impl PostgresConfig {
    /// Settings from a driver configuration, with the default schema and pool.
    ///
    /// Sets `application_name` and `connect_timeout` to agentmem's defaults when unset. The
    /// driver's `sslmode` (disable, prefer or require) becomes [`ssl_mode`](Self::ssl_mode).
    pub fn new(mut pg: tokio_postgres::Config) -> Self {
        if pg.get_application_name().is_none() {
            pg.application_name(DEFAULT_APPLICATION_NAME);
        }
        if pg.get_connect_timeout().is_none() {
            pg.connect_timeout(DEFAULT_CONNECT_TIMEOUT);
        }
        use tokio_postgres::config::SslMode as Driver;
        let ssl_mode = match pg.get_ssl_mode() {
            Driver::Disable => SslMode::Disable,
            Driver::Require => SslMode::Require,
            _ => SslMode::Prefer,
        };
        PostgresConfig {
            pg,
            schema: DEFAULT_SCHEMA.to_string(),
            pool_size: DEFAULT_POOL_SIZE,
            pool_timeout: DEFAULT_POOL_TIMEOUT,
            ssl_mode,
            ssl_root_cert: None,
            ssl_client_cert: None,
            prepared_statements: PreparedStatements::Auto,
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

    /// When to use TLS and what to check (`sslmode`).
    pub fn ssl_mode(&self) -> SslMode {
        self.ssl_mode
    }

    /// Uses TLS as `mode` says.
    pub fn with_ssl_mode(mut self, mode: SslMode) -> Self {
        self.ssl_mode = mode;
        self.pg.ssl_mode(mode.driver_mode());
        self
    }

    /// The PEM file of trusted CA certificates (`sslrootcert`); `None`: the platform's roots
    /// for `verify-ca` and `verify-full`, no chain check for `prefer` and `require`.
    pub fn ssl_root_cert(&self) -> Option<&Path> {
        self.ssl_root_cert.as_deref()
    }

    /// Trusts the CA certificates in the PEM file at `path` instead of the platform's roots;
    /// `prefer` and `require` then check the chain too.
    pub fn with_ssl_root_cert(mut self, path: impl Into<PathBuf>) -> Self {
        self.ssl_root_cert = Some(path.into());
        self
    }

    /// The client certificate and key files (`sslcert`, `sslkey`), if any.
    pub fn ssl_client_cert(&self) -> Option<(&Path, &Path)> {
        self.ssl_client_cert
            .as_ref()
            .map(|(cert, key)| (cert.as_path(), key.as_path()))
    }

    /// Presents the certificate (PEM, leaf first, then its chain) at `cert` with the
    /// private key (PEM: PKCS#8, PKCS#1 or SEC1, unencrypted) at `key` when the server asks.
    pub fn with_ssl_client_cert(
        mut self, cert: impl Into<PathBuf>, key: impl Into<PathBuf>,
    ) -> Self {
        self.ssl_client_cert = Some((cert.into(), key.into()));
        self
    }

    /// Whether statements are prepared once per connection (`prepared_statements`).
    pub fn prepared_statements(&self) -> PreparedStatements {
        self.prepared_statements
    }

    /// Prepares statements as `mode` says; `Off` behind a pooler in transaction mode.
    pub fn with_prepared_statements(mut self, mode: PreparedStatements) -> Self {
        self.prepared_statements = mode;
        self
    }

    /// The driver configuration (hosts, credentials, timeouts).
    pub fn pg_config(&self) -> &tokio_postgres::Config {
        &self.pg
    }

    /// The driver configuration, to change what the URL cannot express. Its `ssl_mode` is
    /// replaced by [`ssl_mode`](Self::ssl_mode)'s when connecting: set TLS with
    /// [`with_ssl_mode`](Self::with_ssl_mode).
    pub fn pg_config_mut(&mut self) -> &mut tokio_postgres::Config {
        &mut self.pg
    }
}

/// The URL options libpq takes as a list (several hosts, with their ports): the only ones a
/// URL may repeat.
const LIST_OPTIONS: &[&str] = &["host", "hostaddr", "port"];

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
        check_unambiguous(url, scheme_end + 3)?;
        agentmem_core::check_options_unique(url, LIST_OPTIONS)?;
        let (base, query) = match url.split_once('?') {
            Some((base, query)) => (base, query),
            None => (url, ""),
        };

        let mut schema = None;
        let mut pool_size = None;
        let mut pool_timeout = None;
        let mut ssl_mode = None;
        let mut ssl_root_cert = None;
        let mut ssl_cert = None;
        let mut ssl_key = None;
        let mut prepared = None;
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let slot = match key {
                "schema" => &mut schema,
                "pool_size" => &mut pool_size,
                "pool_timeout" => &mut pool_timeout,
                // The driver knows only disable/prefer/require and none of the files.
                "sslmode" => &mut ssl_mode,
                "sslrootcert" => &mut ssl_root_cert,
                "sslcert" => &mut ssl_cert,
                "sslkey" => &mut ssl_key,
                "prepared_statements" => &mut prepared,
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

        let mut config = PostgresConfig::new(pg);
        let ssl_mode = ssl_mode
            .map(|m| decode(m)?.parse::<SslMode>())
            .transpose()?;
        let root = ssl_root_cert.map(decode).transpose()?;
        let mode = match root.as_deref() {
            // libpq: the platform's roots, and nothing weaker than verify-full.
            Some("system") => match ssl_mode {
                None | Some(SslMode::VerifyFull) => SslMode::VerifyFull,
                Some(weaker) => {
                    return Err(Error::invalid_input(format!(
                        "sslrootcert=system needs sslmode=verify-full (it is {weaker}), as in libpq"
                    )))
                }
            },
            Some(path) => {
                config = config.with_ssl_root_cert(path);
                ssl_mode.unwrap_or_default()
            }
            None => ssl_mode.unwrap_or_default(),
        };
        config = config.with_ssl_mode(mode);
        match (ssl_cert, ssl_key) {
            (Some(cert), Some(key)) => {
                config = config.with_ssl_client_cert(decode(cert)?, decode(key)?);
            }
            (None, None) => {}
            _ => {
                return Err(Error::invalid_input(
                    "sslcert and sslkey go together: give both the client certificate and its key",
                ))
            }
        }
        if let Some(prepared) = prepared {
            config = config.with_prepared_statements(decode(prepared)?.parse()?);
        }
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
    const INFO: &'static BackendInfo = &crate::error::INFO;

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
            .field("ssl_mode", &self.ssl_mode)
            .field("ssl_root_cert", &self.ssl_root_cert)
            .field("ssl_client_cert", &self.ssl_client_cert)
            .field("prepared_statements", &self.prepared_statements)
            .finish()
    }
}

/// `InvalidInput` unless the only raw `@` of `url` (whose authority starts at byte `start`)
/// ends its user info. The driver ends the user info at the first `@` of the whole URL, and
/// the authority at the first `/` or `?` after it: a raw `@`, `/` or `?` in a password, or an
/// `@` in an option, would make part of the password a host, a database or an option, shown in
/// `Debug` and messages. The error shows only the redacted URL.
fn check_unambiguous(url: &str, start: usize) -> Result<()> {
    let rest = &url[start..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let ats = rest.match_indices('@').count();
    let ambiguous = ats > 1 || rest.find('@').is_some_and(|at| at > authority_end);
    if ambiguous {
        return Err(Error::invalid_input(format!(
            "PostgreSQL URL {} is ambiguous: percent-encode `@`, `/`, `?` and `#` in the user name and password (%40, %2F, %3F, %23), and `@` everywhere else",
            agentmem_core::redact_url(url)
        )));
    }
    Ok(())
}

/// A query value with its `%XX` escapes decoded (and `+` kept: libpq URLs do not use it for
/// spaces).
fn decode(value: &str) -> Result<String> {
    percent_decode(value).ok_or_else(|| {
        Error::invalid_input(
            "a URL option holds an invalid percent-encoding or is not UTF-8 once decoded",
        )
    })
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
    use super::*;
    use agentmem_core::ErrorKind;

    /// The error parsing `url` gives, which must be `InvalidInput`.
    fn refused(url: &str) -> Error {
        let err = url.parse::<PostgresConfig>().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{url}: {err}");
        err
    }

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
            "postgres://localhost/x?sslmode=allow",
            "postgres://localhost/x?sslmode=VERIFY-FULL",
            "postgres://localhost/x?sslmode=require&sslmode=disable",
            "postgres://localhost/x?sslrootcert=system&sslmode=require",
            "postgres://localhost/x?sslcert=/c.pem",
            "postgres://localhost/x?sslkey=/k.pem",
            "postgres://localhost/x?sslrootcert=%zz",
            "postgres://localhost/x?prepared_statements=sometimes",
        ] {
            refused(url);
        }
        let long = "a".repeat(64);
        assert!(validate_schema(&long).is_err());
        assert!(validate_schema(&long[..63]).is_ok());
    }

    #[test]
    fn tls_options_are_agentmems_and_follow_libpq() {
        let c: PostgresConfig = "postgres://u@db/x?sslmode=verify-ca&sslrootcert=/etc/my%20ca.pem&sslcert=/c.pem&sslkey=/k.pem&connect_timeout=3"
            .parse()
            .unwrap();
        assert_eq!(c.ssl_mode(), SslMode::VerifyCa);
        assert_eq!(c.ssl_root_cert(), Some(Path::new("/etc/my ca.pem")));
        assert_eq!(
            c.ssl_client_cert(),
            Some((Path::new("/c.pem"), Path::new("/k.pem")))
        );
        // The driver only negotiates; agentmem checks certificates.
        use tokio_postgres::config::SslMode as Driver;
        assert_eq!(c.pg_config().get_ssl_mode(), Driver::Require);

        let modes = [
            ("disable", SslMode::Disable, Driver::Disable),
            ("prefer", SslMode::Prefer, Driver::Prefer),
            ("require", SslMode::Require, Driver::Require),
            ("verify-full", SslMode::VerifyFull, Driver::Require),
        ];
        for (name, mode, driver) in modes {
            let c: PostgresConfig = format!("postgres://db/x?sslmode={name}").parse().unwrap();
            assert_eq!((c.ssl_mode(), c.pg_config().get_ssl_mode()), (mode, driver));
            assert_eq!(mode.as_str(), name);
        }
        let default: PostgresConfig = "postgres://db/x".parse().unwrap();
        assert_eq!(default.ssl_mode(), SslMode::Prefer);
        assert_eq!(default.ssl_root_cert(), None);

        // libpq: sslrootcert=system is the platform's roots and implies verify-full.
        let system: PostgresConfig = "postgres://db/x?sslrootcert=system".parse().unwrap();
        assert_eq!(system.ssl_mode(), SslMode::VerifyFull);
        assert_eq!(system.ssl_root_cert(), None);
    }

    #[test]
    fn prepared_statements_option() {
        let parse = |url: &str| url.parse::<PostgresConfig>().unwrap().prepared_statements();
        assert_eq!(parse("postgres://db/x"), PreparedStatements::Auto);
        assert_eq!(
            parse("postgres://db/x?prepared_statements=off"),
            PreparedStatements::Off
        );
        assert_eq!(
            parse("postgres://db/x?prepared_statements=false"),
            PreparedStatements::Off
        );
        assert_eq!(
            parse("postgres://db/x?prepared_statements=on"),
            PreparedStatements::On
        );
        assert_eq!(
            parse("postgres://db/x?prepared_statements=auto"),
            PreparedStatements::Auto
        );
    }

    #[test]
    fn registered_for_both_schemes() {
        let registry = agentmem_core::backend::Registry::new().with::<PostgresConfig>();
        assert_eq!(registry.backend_for("postgres://h/db"), Some("postgres"));
        assert_eq!(registry.backend_for("PostgreSQL://h/db"), Some("postgres"));
        assert_eq!(registry.backend_for("redis://h"), None);
    }

    #[test]
    fn raw_delimiters_in_the_user_info_are_refused_without_showing_them() {
        let urls = [
            "postgres://u:pw@pw@h/db",
            "postgres://u:pw/pw@h/db",
            "postgres://u:pw?pw@h/db",
            "postgres://u:pw#pw@h/db",
            "postgres://h:1/db?application_name=pw@x",
        ];
        let parse = |url: &str| url.parse::<PostgresConfig>();
        agentmem_testkit::probe::assert_urls_refused(parse, &urls, "percent-encode", "pw");
        let c: PostgresConfig = "postgres://u:p%40w%2F%3F%23@h/db".parse().unwrap();
        assert_eq!(c.pg_config().get_password(), Some(&b"p@w/?#"[..]));
    }

    #[test]
    fn debug_redacts_the_password() {
        let c: PostgresConfig = "postgres://u:hunter2@localhost/x".parse().unwrap();
        let shown = format!("{c:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("***"));
    }
}
