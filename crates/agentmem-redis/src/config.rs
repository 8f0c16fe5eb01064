//! [`RedisConfig`]: where the store lives and how long to wait for it, parsed from a URL.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use agentmem_core::backend::BackendConfig;
use agentmem_core::Layered;
use agentmem_core::{async_trait, Error, Result};

use crate::{RedisStore, BACKEND};

/// The key prefix used when the URL names none.
pub const DEFAULT_PREFIX: &str = "agentmem";

/// The longest key prefix accepted, in bytes.
pub const MAX_PREFIX_BYTES: usize = 64;

/// How long one connection attempt may take before it counts as failed, by default.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// How long a command may wait for its reply before it fails, by default. Generous, because
/// one script may rewrite a large session's index; a dead server is noticed much sooner
/// (a refused or reset connection fails at once).
pub const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_secs(10);

/// Query parameters this crate reads (and removes before the URL reaches redis-rs).
const OWN_PARAMS: [&str; 3] = ["prefix", "connect_timeout_ms", "response_timeout_ms"];

/// Query parameters passed through to redis-rs.
const REDIS_PARAMS: [&str; 1] = ["protocol"];

/// Where a [`RedisStore`](crate::RedisStore) keeps its data.
///
/// Parsed from `redis://[user:password@]host[:port][/db][?options]` or `rediss://…`
/// (TLS, cargo feature `tls`). Options:
///
/// | option | meaning | default |
/// |---|---|---|
/// | `prefix` | key prefix: letters, digits, `_`, `-`; stores with different prefixes never see each other's keys | `agentmem` |
/// | `connect_timeout_ms` | limit for one connection attempt | 3000 |
/// | `response_timeout_ms` | limit for one command's reply | 10000 |
/// | `protocol` | `resp2` or `resp3`, passed to redis-rs | `resp2` |
///
/// `Debug` and [`RedisConfig::redacted_url`] never show the password.
///
/// ```
/// use agentmem_redis::RedisConfig;
/// let config: RedisConfig = "redis://:s3cret@127.0.0.1:6379/2?prefix=team-a".parse()?;
/// assert_eq!(config.prefix(), "team-a");
/// assert!(!format!("{config:?}").contains("s3cret"));
/// assert!("redis://127.0.0.1/?prefix=a:b".parse::<RedisConfig>().is_err());
/// # Ok::<(), agentmem_core::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct RedisConfig {
    /// The URL handed to redis-rs: this crate's own options removed, password kept.
    url: url::Url,
    prefix: String,
    connect_timeout: Duration,
    response_timeout: Duration,
}

impl RedisConfig {
    /// Parses a `redis://` or `rediss://` URL (see the type's docs for the options).
    pub fn new(url: &str) -> Result<Self> {
        url.parse()
    }

    /// Replaces the key prefix (validated as in the `prefix` option).
    pub fn with_prefix(mut self, prefix: &str) -> Result<Self> {
        validate_prefix(prefix)?;
        self.prefix = prefix.to_string();
        Ok(self)
    }

    /// Replaces the limit for one connection attempt.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Replaces the limit for one command's reply.
    pub fn with_response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout;
        self
    }

    /// The key prefix: every key of the store starts with `{prefix}:`.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The limit for one connection attempt.
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// The limit for one command's reply.
    pub fn response_timeout(&self) -> Duration {
        self.response_timeout
    }

    /// Whether the connection uses TLS (`rediss://`).
    pub fn is_tls(&self) -> bool {
        self.url.scheme() == "rediss"
    }

    /// The server URL with any password replaced by `***`, for messages and logs.
    pub fn redacted_url(&self) -> String {
        redact(&self.url)
    }

    /// The URL for redis-rs (with the password), without this crate's options.
    pub(crate) fn server_url(&self) -> &str {
        self.url.as_str()
    }
}

impl FromStr for RedisConfig {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let invalid = |why: String| config_error(Error::invalid_input(why));
        let parsed = url::Url::parse(s).map_err(|e| {
            // The URL may hold a password: name the problem, never echo the input.
            invalid(format!("malformed Redis URL: {e}"))
        })?;
        match parsed.scheme() {
            "redis" => {}
            "rediss" => {
                if !cfg!(feature = "tls") {
                    return Err(config_error(Error::unsupported(
                        "rediss:// (TLS) needs agentmem-redis to be built with the cargo feature `tls`",
                    )));
                }
            }
            other => {
                return Err(invalid(format!(
                    "unsupported URL scheme {other:?} for Redis; expected redis:// or rediss://"
                )))
            }
        }
        if parsed.host_str().is_none_or(str::is_empty) {
            return Err(invalid(format!(
                "Redis URL {} names no host",
                redact(&parsed)
            )));
        }
        let db = parsed.path().trim_matches('/');
        if !db.is_empty() && db.parse::<u32>().is_err() {
            return Err(invalid(format!(
                "Redis URL {}: the path must be a database number, not {db:?}",
                redact(&parsed)
            )));
        }

        let mut prefix = DEFAULT_PREFIX.to_string();
        let mut connect_timeout = DEFAULT_CONNECT_TIMEOUT;
        let mut response_timeout = DEFAULT_RESPONSE_TIMEOUT;
        let mut passed: Vec<(String, String)> = Vec::new();
        for (name, value) in parsed.query_pairs() {
            match name.as_ref() {
                "prefix" => {
                    validate_prefix(&value)?;
                    prefix = value.into_owned();
                }
                "connect_timeout_ms" => connect_timeout = parse_millis(&name, &value)?,
                "response_timeout_ms" => response_timeout = parse_millis(&name, &value)?,
                n if REDIS_PARAMS.contains(&n) => {
                    passed.push((name.into_owned(), value.into_owned()))
                }
                other => {
                    return Err(invalid(format!(
                        "unknown Redis URL option {other:?}; valid options are {}, {}",
                        OWN_PARAMS.join(", "),
                        REDIS_PARAMS.join(", ")
                    )))
                }
            }
        }
        let mut url = parsed;
        if passed.is_empty() {
            url.set_query(None);
        } else {
            url.query_pairs_mut().clear().extend_pairs(passed);
        }
        Ok(RedisConfig {
            url,
            prefix,
            connect_timeout,
            response_timeout,
        })
    }
}

impl fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisConfig")
            .field("url", &self.redacted_url())
            .field("prefix", &self.prefix)
            .field("connect_timeout", &self.connect_timeout)
            .field("response_timeout", &self.response_timeout)
            .finish()
    }
}

/// Registers Redis for `redis://` and `rediss://` URLs in an
/// [`agentmem_core::backend::Registry`].
///
/// ```no_run
/// use agentmem_core::backend::Registry;
/// use agentmem_redis::RedisConfig;
///
/// # async fn demo() -> agentmem_core::Result<()> {
/// let registry = Registry::new().with::<RedisConfig>();
/// let store = registry.open("redis://127.0.0.1:6379/?prefix=my_app").await?;
/// assert_eq!(store.backend(), "redis");
/// # Ok(()) }
/// ```
#[async_trait]
impl BackendConfig for RedisConfig {
    type Store = RedisStore;
    const BACKEND: &'static str = BACKEND;
    const SCHEMES: &'static [&'static str] = &["redis", "rediss"];

    async fn connect(self) -> Result<Layered<RedisStore>> {
        RedisStore::connect_with(self).await
    }
}

/// Checks a key prefix: 1 to [`MAX_PREFIX_BYTES`] ASCII letters, digits, `_` or `-`, so it
/// can hold neither the `:` that separates key parts nor a glob character.
pub fn validate_prefix(prefix: &str) -> Result<()> {
    let ok = !prefix.is_empty()
        && prefix.len() <= MAX_PREFIX_BYTES
        && prefix
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        let shown: String = prefix.chars().take(40).collect();
        Err(config_error(Error::invalid_input(format!(
            "invalid Redis key prefix {shown:?}: it must be 1-{MAX_PREFIX_BYTES} ASCII letters, digits, `_` or `-`"
        ))))
    }
}

fn parse_millis(name: &str, value: &str) -> Result<Duration> {
    match value.parse::<u64>() {
        Ok(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
        _ => Err(config_error(Error::invalid_input(format!(
            "Redis URL option {name} must be a positive number of milliseconds, not {value:?}"
        )))),
    }
}

/// Labels a configuration error with the backend: the crate's only hand-written label.
///
/// Configuration errors come from parsing ([`FromStr`], [`RedisConfig::new`], the builder
/// methods), outside any store operation, so no layer labels them; a caller opening a store
/// by URL (through a `Registry`) still learns which backend refused the URL.
fn config_error(error: Error) -> Error {
    error.with_backend(BACKEND)
}

fn redact(url: &url::Url) -> String {
    agentmem_core::redact_url(url.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentmem_core::ErrorKind;

    fn parse(s: &str) -> Result<RedisConfig> {
        s.parse()
    }

    #[test]
    fn defaults() {
        let c = parse("redis://127.0.0.1:6379").expect("valid");
        assert_eq!(c.prefix(), DEFAULT_PREFIX);
        assert_eq!(c.connect_timeout(), DEFAULT_CONNECT_TIMEOUT);
        assert_eq!(c.response_timeout(), DEFAULT_RESPONSE_TIMEOUT);
        assert!(!c.is_tls());
        assert_eq!(c.server_url(), "redis://127.0.0.1:6379");
    }

    #[test]
    fn options_are_read_and_removed_before_redis_rs_sees_the_url() {
        let c = parse(
            "redis://user:pw@localhost:7000/3?prefix=my_app-1&connect_timeout_ms=250&response_timeout_ms=900&protocol=resp3",
        )
        .expect("valid");
        assert_eq!(c.prefix(), "my_app-1");
        assert_eq!(c.connect_timeout(), Duration::from_millis(250));
        assert_eq!(c.response_timeout(), Duration::from_millis(900));
        assert_eq!(
            c.server_url(),
            "redis://user:pw@localhost:7000/3?protocol=resp3"
        );
    }

    #[test]
    fn passwords_never_show() {
        let c = parse("redis://admin:hunter2@db.example:6379/0?prefix=x").expect("valid");
        let debug = format!("{c:?}");
        assert!(!debug.contains("hunter2"), "{debug}");
        assert!(debug.contains("***"), "{debug}");
        assert!(!c.redacted_url().contains("hunter2"));
        let err = parse("redis://admin:hunter2@db.example:6379/x?prefix=x").expect_err("bad db");
        assert!(!err.to_string().contains("hunter2"), "{err}");
        let err = parse("redis://admin:hunter2@db.example:6379/?bogus=1").expect_err("bad option");
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }

    #[test]
    fn rejects_bad_input_with_reasons() {
        for (url, why) in [
            ("http://localhost", "scheme"),
            ("not a url", "malformed"),
            ("redis://localhost/?prefix=a:b", "prefix"),
            ("redis://localhost/?prefix=a*", "prefix"),
            ("redis://localhost/?prefix=", "prefix"),
            ("redis://localhost/?prefix=ünï", "prefix"),
            ("redis://localhost/?connect_timeout_ms=0", "milliseconds"),
            (
                "redis://localhost/?response_timeout_ms=soon",
                "milliseconds",
            ),
            ("redis://localhost/?prefx=a", "unknown Redis URL option"),
            ("redis://localhost/abc", "database number"),
        ] {
            let err = parse(url).expect_err(url);
            assert_eq!(err.kind(), ErrorKind::InvalidInput, "{url}");
            assert!(err.to_string().contains(why), "{url}: {err}");
        }
        let long = format!(
            "redis://localhost/?prefix={}",
            "p".repeat(MAX_PREFIX_BYTES + 1)
        );
        assert!(parse(&long).is_err());
        let max = format!("redis://localhost/?prefix={}", "p".repeat(MAX_PREFIX_BYTES));
        assert!(parse(&max).is_ok());
    }

    #[test]
    fn builder_methods_validate() {
        let c = parse("redis://localhost").expect("valid");
        assert!(c.clone().with_prefix("ok_1").is_ok());
        assert_eq!(
            c.with_prefix("no way").expect_err("space").kind(),
            ErrorKind::InvalidInput
        );
    }

    #[cfg(not(feature = "tls"))]
    #[test]
    fn tls_needs_the_feature() {
        let err = parse("rediss://localhost:6380").expect_err("no tls");
        assert_eq!(err.kind(), ErrorKind::Unsupported);
        assert!(err.to_string().contains("`tls`"), "{err}");
    }

    #[cfg(feature = "tls")]
    #[test]
    fn tls_urls_parse_with_the_feature() {
        let c = parse("rediss://localhost:6380/?prefix=t").expect("tls");
        assert!(c.is_tls());
    }
}
