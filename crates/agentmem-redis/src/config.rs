//! [`RedisConfig`]: where the store lives and how long to wait for it, parsed from a URL.

use agentmem_core::backend::BackendInfo;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use agentmem_core::backend::BackendConfig;
use agentmem_core::Layered;
use agentmem_core::{async_trait, Error, Result};

use crate::{RedisStore, BACKEND, INFO};

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
const OWN_PARAMS: [&str; 6] = [
    "prefix",
    "connect_timeout_ms",
    "response_timeout_ms",
    "tls_ca",
    "tls_cert",
    "tls_key",
];

/// Query parameters passed through to redis-rs.
const REDIS_PARAMS: [&str; 1] = ["protocol"];

/// Where a [`RedisStore`](crate::RedisStore) keeps its data.
///
/// Parsed from `redis://[user:password@]host[:port][/db][?options]`, `rediss://…` (TLS), or
/// for a Redis Cluster `redis+cluster://[user:password@]host:port[,host:port…][/][?options]`
/// and `rediss+cluster://…` (the hosts are seed nodes: any reachable one reveals the rest).
/// TLS needs the cargo feature `tls` (on in the `agentmem` facade's `redis` feature and in the
/// CLI). Options:
///
/// | option | meaning | default |
/// |---|---|---|
/// | `prefix` | key prefix: letters, digits, `_`, `-`; stores with different prefixes never see each other's keys | `agentmem` |
/// | `connect_timeout_ms` | limit for one connection attempt | 3000 |
/// | `response_timeout_ms` | limit for one command's reply | 10000 |
/// | `tls_ca` | path of a PEM file of CA certificates to trust instead of the system's (TLS only) | the system's roots, or `SSL_CERT_FILE` |
/// | `tls_cert`, `tls_key` | paths of the PEM client certificate (chain) and its private key, for a server that asks for one (TLS only; both or neither) | no client certificate |
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
/// let cluster: RedisConfig = "redis+cluster://10.0.0.1:7000,10.0.0.2:7000/?prefix=a".parse()?;
/// assert!(cluster.is_cluster());
/// assert_eq!(cluster.nodes(), ["10.0.0.1:7000", "10.0.0.2:7000"]);
/// # Ok::<(), agentmem_core::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct RedisConfig {
    /// The URLs handed to redis-rs, one per node (one for a single server, the seed nodes of a
    /// cluster): this crate's own options removed, password kept. Never empty.
    nodes: Vec<url::Url>,
    cluster: bool,
    prefix: String,
    connect_timeout: Duration,
    response_timeout: Duration,
    tls_ca: Option<PathBuf>,
    tls_client: Option<ClientCertPaths>,
}

/// The files of a TLS client certificate: the PEM certificate (chain) and its private key.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ClientCertPaths {
    cert: PathBuf,
    key: PathBuf,
}

impl RedisConfig {
    /// Parses a `redis://`, `rediss://`, `redis+cluster://` or `rediss+cluster://` URL (see the
    /// type's docs for the options).
    pub fn new(url: &str) -> Result<Self> {
        url.parse()
    }

    /// Replaces the key prefix (validated as in the `prefix` option).
    pub fn with_prefix(mut self, prefix: &str) -> Result<Self> {
        validate_prefix(prefix)?;
        self.prefix = prefix.to_string();
        Ok(self)
    }

    agentmem_core::setters! {
        /// Replaces the limit for one connection attempt.
        pub fn with_connect_timeout(timeout: Duration) { self.connect_timeout = timeout }

        /// Replaces the limit for one command's reply.
        pub fn with_response_timeout(timeout: Duration) { self.response_timeout = timeout }
    }

    /// Trusts the CA certificates in the PEM file at `path` instead of the system's roots, as
    /// the `tls_ca` option does. `InvalidInput` unless the URL uses TLS; the file is read when
    /// the store connects.
    pub fn with_tls_ca(mut self, path: impl Into<PathBuf>) -> Result<Self> {
        if !self.is_tls() {
            return Err(tls_option_without_tls("tls_ca"));
        }
        self.tls_ca = Some(path.into());
        Ok(self)
    }

    /// Presents the client certificate in the PEM file `cert` with the private key in the
    /// PEM file `key`, as the `tls_cert` and `tls_key` options do. `InvalidInput` unless the
    /// URL uses TLS; the files are read when the store connects.
    pub fn with_tls_client_cert(
        mut self, cert: impl Into<PathBuf>, key: impl Into<PathBuf>,
    ) -> Result<Self> {
        if !self.is_tls() {
            return Err(tls_option_without_tls("tls_cert"));
        }
        self.tls_client = Some(ClientCertPaths {
            cert: cert.into(),
            key: key.into(),
        });
        Ok(self)
    }

    /// The key prefix. Every key of the store starts with `{prefix}:` on a single server, and
    /// with the prefix in braces (`{prefix}:`, a hash tag) on a cluster.
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

    /// Whether the connection uses TLS (`rediss://` or `rediss+cluster://`).
    pub fn is_tls(&self) -> bool {
        self.nodes[0].scheme() == "rediss"
    }

    /// Whether the URL names a Redis Cluster (`redis+cluster://` or `rediss+cluster://`).
    pub fn is_cluster(&self) -> bool {
        self.cluster
    }

    /// The CA file given with `tls_ca` (or [`with_tls_ca`](Self::with_tls_ca)), if any.
    pub fn tls_ca(&self) -> Option<&Path> {
        self.tls_ca.as_deref()
    }

    /// The client certificate and key files given with `tls_cert` and `tls_key` (or
    /// [`with_tls_client_cert`](Self::with_tls_client_cert)), if any.
    pub fn tls_client_cert(&self) -> Option<(&Path, &Path)> {
        self.tls_client
            .as_ref()
            .map(|files| (files.cert.as_path(), files.key.as_path()))
    }

    /// The servers as `host:port`: the one server, or the cluster's seed nodes in the order
    /// given.
    pub fn nodes(&self) -> Vec<String> {
        self.nodes.iter().map(host_port).collect()
    }

    /// The server URL with any password replaced by `***`, for messages and logs (without
    /// this crate's options; all seed nodes of a cluster).
    pub fn redacted_url(&self) -> String {
        let first = &self.nodes[0];
        if !self.cluster {
            return redact(first);
        }
        let mut text = format!("{}+cluster://", first.scheme());
        if !first.username().is_empty() || first.password().is_some() {
            text.push_str(first.username());
            if first.password().is_some() {
                text.push_str(":***");
            }
            text.push('@');
        }
        text.push_str(&self.nodes().join(","));
        text.push_str(first.path());
        if let Some(query) = first.query() {
            text.push('?');
            text.push_str(query);
        }
        agentmem_core::redact_url(&text)
    }

    /// The URLs for redis-rs (with the password), one per node, without this crate's options.
    pub(crate) fn server_urls(&self) -> &[url::Url] {
        &self.nodes
    }

    /// The single server's URL for redis-rs (the first seed node of a cluster).
    pub(crate) fn server_url(&self) -> &str {
        self.nodes[0].as_str()
    }
}

impl FromStr for RedisConfig {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        agentmem_core::check_options_unique(s, &[])?;
        let (scheme, rest) = s
            .split_once("://")
            .ok_or_else(|| invalid("malformed Redis URL: no `scheme://`".to_string()))?;
        let scheme = scheme.to_ascii_lowercase();
        let (base, cluster) = split_scheme(&scheme)?;
        let mut nodes = parse_nodes(s, base, cluster, rest)?;
        let parsed = nodes[0].clone();
        let options = check_path_and_fragment(s, &parsed, cluster)
            .and_then(|()| UrlOptions::parse(&parsed, base))
            .map_err(|e| match agentmem_core::password_is_ambiguous(s) {
                // The path and options read may be part of the password: name none of them.
                true => invalid(format!(
                    "Redis URL {} is ambiguous: percent-encode `/`, `?`, `#` and `@` in the user name and password (%2F, %3F, %23, %40)",
                    agentmem_core::redact_url(s)
                )),
                false => e,
            })?;
        for node in &mut nodes {
            if options.passed.is_empty() {
                node.set_query(None);
            } else {
                node.query_pairs_mut().clear().extend_pairs(&options.passed);
            }
        }
        Ok(RedisConfig {
            nodes,
            cluster,
            prefix: options.prefix,
            connect_timeout: options.connect_timeout,
            response_timeout: options.response_timeout,
            tls_ca: options.tls_ca,
            tls_client: options.tls_client,
        })
    }
}

/// `InvalidInput` for a URL that cannot be read, labelled as a configuration error.
fn invalid(why: String) -> Error {
    config_error(Error::invalid_input(why))
}

/// The scheme (lower case) as its base (`redis` or `rediss`) and whether it names a cluster;
/// an error for a scheme of another backend, or for TLS without the `tls` feature.
fn split_scheme(scheme: &str) -> Result<(&str, bool)> {
    if !INFO.accepts(scheme) {
        // The URL may hold a password: name the problem, never echo the input.
        let shown: String = scheme.chars().take(40).collect();
        return Err(invalid(format!(
            "unsupported URL scheme {shown:?} for Redis; expected {}",
            INFO.schemes
                .iter()
                .map(|s| format!("{s}://"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let (base, cluster) = match scheme.strip_suffix("+cluster") {
        Some(base) => (base, true),
        None => (scheme, false),
    };
    if base == "rediss" && !cfg!(feature = "tls") {
        return Err(config_error(Error::unsupported(format!(
            "{scheme}:// (TLS) needs agentmem-redis to be built with the cargo feature `tls`"
        ))));
    }
    Ok((base, cluster))
}

/// One URL per node of `url` (whose part after `://` is `rest`), each with the user info,
/// path and query of `url`: one for a single server, one per `host:port` of a cluster's list.
fn parse_nodes(url: &str, base: &str, cluster: bool, rest: &str) -> Result<Vec<url::Url>> {
    // The authority ends where the path, query or fragment starts; a cluster's holds
    // several `host:port`, which no URL parser reads, so each is parsed on its own.
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let (user_info, hosts) = match authority.rfind('@') {
        Some(at) => (&authority[..=at], &authority[at + 1..]),
        None => ("", authority),
    };
    let hosts: Vec<&str> = if cluster {
        hosts.split(',').collect()
    } else {
        vec![hosts]
    };
    let mut nodes = Vec::with_capacity(hosts.len());
    for host in &hosts {
        let parsed = if host.is_empty() {
            None
        } else {
            let node = url::Url::parse(&format!("{base}://{user_info}{host}{tail}"))
                .map_err(|e| invalid(format!("malformed Redis URL: {e}")))?;
            node.host_str()
                .is_some_and(|h| !h.is_empty())
                .then_some(node)
        };
        let Some(parsed) = parsed else {
            return Err(invalid(format!(
                "Redis URL {} names no host{}",
                agentmem_core::redact_url(url),
                if cluster {
                    " (or an empty one in its list)"
                } else {
                    ""
                }
            )));
        };
        nodes.push(parsed);
    }
    Ok(nodes)
}

/// The path of `parsed` (the first node of `url`) is a database number (0 only on a
/// cluster), and it has no fragment.
fn check_path_and_fragment(url: &str, parsed: &url::Url, cluster: bool) -> Result<()> {
    let db = parsed.path().trim_matches('/');
    if !db.is_empty() && db.parse::<u32>().is_err() {
        return Err(invalid(format!(
            "Redis URL {}: the path must be a database number, not {db:?}",
            redact(parsed)
        )));
    }
    if cluster && !db.is_empty() && db != "0" {
        return Err(invalid(format!(
            "Redis URL {}: a Redis Cluster has database 0 only, not {db}",
            agentmem_core::redact_url(url)
        )));
    }
    if parsed.fragment().is_some() {
        return Err(invalid(format!(
            "Redis URL {} has a fragment (`#…`), which agentmem does not read",
            agentmem_core::redact_url(url)
        )));
    }
    Ok(())
}

/// The query options of a Redis URL: this crate's own, and those passed on to redis-rs.
struct UrlOptions {
    prefix: String,
    connect_timeout: Duration,
    response_timeout: Duration,
    tls_ca: Option<PathBuf>,
    tls_client: Option<ClientCertPaths>,
    /// The options redis-rs reads ([`REDIS_PARAMS`]), in the URL's order.
    passed: Vec<(String, String)>,
}

impl UrlOptions {
    /// The options of `parsed`, whose scheme's base is `base`; an error for an unknown option
    /// or a bad value.
    fn parse(parsed: &url::Url, base: &str) -> Result<UrlOptions> {
        let mut options = UrlOptions {
            prefix: DEFAULT_PREFIX.to_string(),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            response_timeout: DEFAULT_RESPONSE_TIMEOUT,
            tls_ca: None,
            tls_client: None,
            passed: Vec::new(),
        };
        let (mut tls_cert, mut tls_key) = (None, None);
        for (name, value) in parsed.query_pairs() {
            match name.as_ref() {
                "prefix" => {
                    validate_prefix(&value)?;
                    options.prefix = value.into_owned();
                }
                "connect_timeout_ms" => options.connect_timeout = parse_millis(&name, &value)?,
                "response_timeout_ms" => options.response_timeout = parse_millis(&name, &value)?,
                "tls_ca" => options.tls_ca = Some(tls_file(&name, &value, base)?),
                "tls_cert" => tls_cert = Some(tls_file(&name, &value, base)?),
                "tls_key" => tls_key = Some(tls_file(&name, &value, base)?),
                n if REDIS_PARAMS.contains(&n) => {
                    options.passed.push((name.into_owned(), value.into_owned()))
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
        options.tls_client =
            match (tls_cert, tls_key) {
                (Some(cert), Some(key)) => Some(ClientCertPaths { cert, key }),
                (None, None) => None,
                _ => return Err(invalid(
                    "the Redis URL options tls_cert and tls_key go together: give both or neither"
                        .to_string(),
                )),
            };
        Ok(options)
    }
}

/// The path a TLS file option (`tls_ca`, `tls_cert`, `tls_key`) names, checked: the URL uses
/// TLS (its scheme's base is `base`) and the path is not empty.
fn tls_file(name: &str, value: &str, base: &str) -> Result<PathBuf> {
    if base != "rediss" {
        return Err(tls_option_without_tls(name));
    }
    if value.is_empty() {
        return Err(invalid(format!(
            "Redis URL option {name} needs the path of a PEM file"
        )));
    }
    Ok(PathBuf::from(value))
}

impl fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisConfig")
            .field("url", &self.redacted_url())
            .field("cluster", &self.cluster)
            .field("prefix", &self.prefix)
            .field("connect_timeout", &self.connect_timeout)
            .field("response_timeout", &self.response_timeout)
            .field("tls_ca", &self.tls_ca)
            .field("tls_client", &self.tls_client)
            .finish()
    }
}

/// Registers Redis for `redis://`, `rediss://`, `redis+cluster://` and `rediss+cluster://`
/// URLs in an
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
    const INFO: &'static BackendInfo = &INFO;

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

/// `host:port` of a node URL (port 6379 when the URL names none).
fn host_port(url: &url::Url) -> String {
    let host = url.host_str().unwrap_or_default();
    format!("{host}:{}", url.port().unwrap_or(6379))
}

fn tls_option_without_tls(name: &str) -> Error {
    config_error(Error::invalid_input(format!(
        "the Redis URL option {name} needs a TLS URL (rediss:// or rediss+cluster://)"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentmem_core::ErrorKind;

    fn parse(s: &str) -> Result<RedisConfig> {
        s.parse()
    }

    /// The error parsing `url` fails with, after checking that it is `InvalidInput` and
    /// says `why`.
    fn refused(url: &str, why: &str) -> Error {
        let err = parse(url).expect_err(url);
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{url}");
        assert!(err.to_string().contains(why), "{url}: {err}");
        err
    }

    #[test]
    fn an_ambiguous_password_is_never_quoted() {
        for url in [
            "redis://u:1/pw@h/0",
            "redis://u:1?pw=1@h/0",
            "redis+cluster://u:1/pw@a:1,b:2/",
        ] {
            let e = url.parse::<RedisConfig>().unwrap_err();
            assert!(e.to_string().contains("ambiguous"), "{e}");
            assert!(!e.to_string().contains("pw"), "{e}");
        }
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
            refused(url, why);
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
        for url in ["rediss://localhost:6380", "rediss+cluster://a:1,b:2/"] {
            let err = parse(url).expect_err("no tls");
            assert_eq!(err.kind(), ErrorKind::Unsupported);
            assert!(err.to_string().contains("`tls`"), "{err}");
        }
    }

    #[cfg(feature = "tls")]
    #[test]
    fn tls_urls_parse_with_the_feature() {
        let c = parse("rediss://localhost:6380/?prefix=t").expect("tls");
        assert!(c.is_tls());
        assert!(!c.is_cluster());
        assert_eq!(c.tls_ca(), None);
        let c = parse("rediss://localhost:6380/?tls_ca=%2Fetc%2Fmy%20ca.pem&prefix=t").expect("ca");
        assert_eq!(c.tls_ca(), Some(Path::new("/etc/my ca.pem")));
        assert_eq!(c.server_url(), "rediss://localhost:6380/");
        let c = parse("rediss+cluster://u:pw@a:7000,b:7001/?tls_ca=/ca.pem").expect("cluster");
        assert!(c.is_tls() && c.is_cluster());
        assert_eq!(c.tls_ca(), Some(Path::new("/ca.pem")));
        assert_eq!(c.redacted_url(), "rediss+cluster://u:***@a:7000,b:7001/");
        for bad in ["rediss://h/?tls_ca=", "redis://h/?tls_ca=/ca.pem"] {
            refused(bad, "tls_ca");
        }
        let plain = parse("redis://h").expect("plain");
        assert!(plain.with_tls_ca("/ca.pem").is_err());
    }

    #[cfg(feature = "tls")]
    #[test]
    fn client_certificates_take_both_files_on_tls_urls_only() {
        let c = parse("rediss://h/?tls_cert=%2Fc%20d%2Fclient.crt&tls_key=/client.key&prefix=t")
            .expect("client cert");
        assert_eq!(
            c.tls_client_cert(),
            Some((Path::new("/c d/client.crt"), Path::new("/client.key")))
        );
        assert_eq!(c.server_url(), "rediss://h/");
        let c = parse("rediss+cluster://a:1,b:2/?tls_key=/k.pem&tls_cert=/c.pem").expect("cluster");
        assert_eq!(
            c.tls_client_cert(),
            Some((Path::new("/c.pem"), Path::new("/k.pem")))
        );
        assert_eq!(parse("rediss://h/").expect("tls").tls_client_cert(), None);
        for (bad, why) in [
            (
                "rediss://h/?tls_cert=/c.pem",
                "tls_cert and tls_key go together",
            ),
            (
                "rediss://h/?tls_key=/k.pem",
                "tls_cert and tls_key go together",
            ),
            (
                "rediss://h/?tls_cert=&tls_key=/k.pem",
                "tls_cert needs the path",
            ),
            (
                "rediss://h/?tls_cert=/c.pem&tls_key=",
                "tls_key needs the path",
            ),
            (
                "redis://h/?tls_cert=/c.pem&tls_key=/k.pem",
                "tls_cert needs a TLS URL",
            ),
            (
                "redis+cluster://h:1/?tls_key=/k.pem",
                "tls_key needs a TLS URL",
            ),
        ] {
            refused(bad, why);
        }
        let built = parse("rediss://h/")
            .expect("tls")
            .with_tls_client_cert("/c.pem", "/k.pem")
            .expect("builder");
        assert_eq!(
            built.tls_client_cert(),
            Some((Path::new("/c.pem"), Path::new("/k.pem")))
        );
        let plain = parse("redis://h").expect("plain");
        assert!(plain.with_tls_client_cert("/c.pem", "/k.pem").is_err());
    }

    #[test]
    fn cluster_urls_list_their_seed_nodes() {
        let c = parse(
            "redis+cluster://user:hunter2@10.0.0.1:7000,node-b,[::1]:7002/?prefix=p&protocol=resp3&connect_timeout_ms=5",
        )
        .expect("cluster");
        assert!(c.is_cluster() && !c.is_tls());
        assert_eq!(c.prefix(), "p");
        assert_eq!(c.connect_timeout(), Duration::from_millis(5));
        assert_eq!(c.nodes(), ["10.0.0.1:7000", "node-b:6379", "[::1]:7002"]);
        let urls: Vec<&str> = c.server_urls().iter().map(url::Url::as_str).collect();
        assert_eq!(
            urls,
            [
                "redis://user:hunter2@10.0.0.1:7000/?protocol=resp3",
                "redis://user:hunter2@node-b/?protocol=resp3",
                "redis://user:hunter2@[::1]:7002/?protocol=resp3",
            ]
        );
        let shown = c.redacted_url();
        assert_eq!(
            shown,
            "redis+cluster://user:***@10.0.0.1:7000,node-b:6379,[::1]:7002/?protocol=resp3"
        );
        assert!(!format!("{c:?}").contains("hunter2"));
        // One node, database 0, no trailing slash: all fine.
        for ok in [
            "redis+cluster://a:7000",
            "redis+cluster://a:7000/0",
            "REDIS+CLUSTER://a:7000?prefix=x",
        ] {
            assert!(parse(ok).expect(ok).is_cluster(), "{ok}");
        }
        for (bad, why) in [
            ("redis+cluster://a:7000/2", "database 0"),
            ("redis+cluster://a:7000,,b:7001/", "no host"),
            ("redis+cluster://:pw@/", "no host"),
            ("redis+cluster://a:7000,b:x/", "malformed"),
            ("redis://a:7000,b:7001/", "malformed"),
            ("redis://a:7000/#insecure", "fragment"),
        ] {
            let err = refused(bad, why);
            assert!(!err.to_string().contains("pw@"), "{bad}: {err}");
        }
    }
}
