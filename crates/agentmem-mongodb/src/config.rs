//! Connection settings parsed from a `mongodb://` URL.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use agentmem_core::support::percent_decode;
use agentmem_core::{password_is_ambiguous, redact_secrets_in, redact_url, Error, Result};
use mongodb::options::{ClientOptions, Tls};

/// The database used when the URL names none.
pub const DEFAULT_DATABASE: &str = "agentmem";

/// How long to look for a usable server before an operation fails as
/// [`Unavailable`](agentmem_core::ErrorKind::Unavailable), unless the URL sets
/// `serverSelectionTimeoutMS`. The driver's own default (30 s) makes a dead server look hung.
pub const DEFAULT_SERVER_SELECTION_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a TCP connect may take, unless the URL sets `connectTimeoutMS`.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Connection pool size per server, unless the URL sets `maxPoolSize`. Agent memory does few
/// concurrent operations per process; a modest pool is kinder to small servers.
pub const DEFAULT_MAX_POOL_SIZE: u32 = 16;

/// Where a [`MongoStore`](crate::MongoStore) keeps its data: a server URL and a database.
///
/// Parsed from `mongodb://[user:password@]host[:port][,host…]/[database][?options]`. The
/// database comes from the URL path (default [`DEFAULT_DATABASE`]); the query options are the
/// driver's standard ones (`directConnection`, `replicaSet`, `authSource`, `tls`,
/// `serverSelectionTimeoutMS`, `connectTimeoutMS`, `maxPoolSize`, `tlsCAFile`,
/// `tlsCertificateKeyFile`, `tlsAllowInvalidHostnames`, …). `mongodb+srv://host/db` (the form
/// hosted MongoDB hands out) is accepted: the hosts and options come from the DNS SRV and TXT
/// records of `host` when the store connects, with TLS on; a name that does not resolve is
/// [`Unavailable`](agentmem_core::ErrorKind::Unavailable). With TLS on and no `tlsCAFile`, a CA
/// bundle in `SSL_CERT_FILE` (as OpenSSL reads it) replaces the built-in roots. A `tlsCAFile`
/// (or `SSL_CERT_FILE`) that cannot be read or holds no PEM certificate, or a
/// `tlsCertificateKeyFile` that cannot be read, is
/// [`InvalidInput`](agentmem_core::ErrorKind::InvalidInput) naming the option, before any
/// connection is tried.
///
/// `Debug` and [`MongoConfig::redacted_url`] never show the password.
///
/// ```
/// use agentmem_mongodb::MongoConfig;
/// let config: MongoConfig = "mongodb://app:s3cret@db.example:27017/memory?directConnection=true"
///     .parse()
///     .unwrap();
/// assert_eq!(config.database(), "memory");
/// assert!(!format!("{config:?}").contains("s3cret"));
/// ```
#[derive(Clone)]
pub struct MongoConfig {
    url: String,
    database: String,
}

impl MongoConfig {
    /// Validates `url` and reads the database name from its path.
    pub fn new(url: &str) -> Result<Self> {
        let url = url.trim();
        let scheme_end = url.find("://").ok_or_else(|| {
            Error::invalid_input(format!(
                "MongoDB URL {:?} has no scheme; expected mongodb://host:27017/database",
                redact_url(url)
            ))
        })?;
        match &url[..scheme_end] {
            // `mongodb+srv://`: the driver looks up the hosts (SRV) and options (TXT) in DNS
            // when the client options are built, and turns TLS on, as hosted MongoDB expects.
            "mongodb" | "mongodb+srv" => {}
            other => {
                return Err(Error::invalid_input(format!(
                    "URL scheme {other:?} is not MongoDB; expected mongodb://host:27017/database"
                )))
            }
        }
        // A raw `/`, `?` or `#` in the password makes part of it a host, the database or an
        // option for one reader and not another, shown in `Debug` and the driver's messages.
        if password_is_ambiguous(url) {
            return Err(Error::invalid_input(format!(
                "MongoDB URL {} is ambiguous: percent-encode `/`, `?`, `#` and `@` in the user name and password (%2F, %3F, %23, %40)",
                redact_url(url)
            )));
        }
        // The one option MongoDB's URI format repeats: a list of tag sets, tried in order.
        agentmem_core::check_options_unique(url, &["readPreferenceTags"])?;
        let rest = &url[scheme_end + 3..];
        let authority_end = authority_end(rest);
        let after_auth = rest[..authority_end].rfind('@').map_or(0, |at| at + 1);
        if rest[after_auth..authority_end].is_empty() {
            return Err(Error::invalid_input(format!(
                "MongoDB URL {:?} names no host",
                redact_url(url)
            )));
        }
        let tail = &rest[authority_end..];
        let database = match tail.strip_prefix('/') {
            Some(path) => {
                let raw = path.split(['?', '#']).next().unwrap_or_default();
                percent_decode(raw).ok_or_else(|| {
                    Error::invalid_input(
                        "malformed percent-escape in the MongoDB database name, or not UTF-8",
                    )
                })?
            }
            None => String::new(),
        };
        let database = if database.is_empty() {
            DEFAULT_DATABASE.to_string()
        } else {
            validate_database_name(&database)?;
            database
        };
        Ok(MongoConfig {
            url: url.to_string(),
            database,
        })
    }

    /// The database this store uses.
    pub fn database(&self) -> &str {
        &self.database
    }

    /// Uses another database on the same server.
    pub fn with_database(mut self, database: impl Into<String>) -> Result<Self> {
        let database = database.into();
        validate_database_name(&database)?;
        self.database = database;
        Ok(self)
    }

    /// The URL with any password replaced by `***`, for messages and logs.
    pub fn redacted_url(&self) -> String {
        redact_url(&self.url)
    }

    /// `message` (the driver's, about this URL) with the URL's secrets hidden: the driver may
    /// quote an option's value (an entry of `authMechanismProperties`).
    pub(crate) fn redact_secrets_in(&self, message: &str) -> String {
        redact_secrets_in(message, &self.url)
    }

    /// The driver's options for this URL, with agentmem's shorter defaults for server
    /// selection and connect timeouts and pool size where the URL sets none.
    ///
    /// Fails with `InvalidInput` for an option the driver refuses and for TLS files that
    /// cannot be used (see [`MongoConfig`]), and `Unavailable` when the hosts of a
    /// `mongodb+srv://` URL cannot be looked up.
    pub async fn client_options(&self) -> Result<ClientOptions> {
        let mut options = ClientOptions::parse(&self.url).await.map_err(|e| {
            let message = self.redact_secrets_in(&e.to_string());
            if matches!(*e.kind, mongodb::error::ErrorKind::DnsResolve { .. }) {
                Error::unavailable(format!(
                    "cannot resolve the MongoDB hosts of {}: {message}",
                    self.redacted_url()
                ))
            } else {
                Error::invalid_input(format!(
                    "invalid MongoDB URL {}: {message}",
                    self.redacted_url()
                ))
            }
        })?;
        if let Some(Tls::Enabled(tls)) = options.tls.as_mut() {
            let ca_option = if tls.ca_file_path.is_some() {
                "tlsCAFile"
            } else {
                tls.ca_file_path = ssl_cert_file();
                "SSL_CERT_FILE"
            };
            if let Some(path) = &tls.ca_file_path {
                let pem = read_tls_file(ca_option, path)?;
                if !pem
                    .windows(PEM_CERTIFICATE.len())
                    .any(|w| w == PEM_CERTIFICATE)
                {
                    return Err(Error::invalid_input(format!(
                        "the MongoDB {ca_option} file {} holds no PEM certificate",
                        path.display()
                    )));
                }
            }
            if let Some(path) = &tls.cert_key_file_path {
                read_tls_file("tlsCertificateKeyFile", path)?;
            }
        }
        options
            .server_selection_timeout
            .get_or_insert(DEFAULT_SERVER_SELECTION_TIMEOUT);
        options
            .connect_timeout
            .get_or_insert(DEFAULT_CONNECT_TIMEOUT);
        options.max_pool_size.get_or_insert(DEFAULT_MAX_POOL_SIZE);
        options
            .app_name
            .get_or_insert_with(|| "agentmem".to_string());
        Ok(options)
    }
}

/// How a PEM certificate starts.
const PEM_CERTIFICATE: &[u8] = b"-----BEGIN CERTIFICATE-----";

/// The contents of the TLS file `path` that `option` names; `InvalidInput` naming both when it
/// cannot be read (the driver's own message names the path only, and says it cannot parse it).
fn read_tls_file(option: &str, path: &std::path::Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| {
        Error::invalid_input(format!(
            "cannot read the MongoDB {option} file {}: {e}",
            path.display()
        ))
    })
}

/// `SSL_CERT_FILE`, when set: a CA bundle to trust instead of the built-in roots, as OpenSSL
/// and rustls-native-certs read it.
fn ssl_cert_file() -> Option<std::path::PathBuf> {
    std::env::var_os("SSL_CERT_FILE")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
}

impl FromStr for MongoConfig {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        MongoConfig::new(s)
    }
}

impl fmt::Debug for MongoConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MongoConfig")
            .field("url", &self.redacted_url())
            .field("database", &self.database)
            .finish()
    }
}

/// Checks MongoDB's rules for database names: 1-63 bytes, none of `/\. "$*<>:|?` or NUL.
pub fn validate_database_name(name: &str) -> Result<()> {
    let bad = name.chars().find(|c| {
        matches!(
            c,
            '/' | '\\' | '.' | ' ' | '"' | '$' | '*' | '<' | '>' | ':' | '|' | '?' | '\0'
        ) || c.is_control()
    });
    if name.is_empty() || name.len() > 63 || bad.is_some() {
        let shown: String = name.chars().take(40).collect();
        return Err(Error::invalid_input(format!(
            "invalid MongoDB database name {shown:?}: it must be 1-63 bytes without / \\ . space \" $ * < > : | ? or control characters"
        )));
    }
    Ok(())
}

/// Where the authority (`user:password@host1,host2`) of a URL without its scheme ends: at
/// the first `/` or `?` after the user info. The user info ends at the last `@` before the
/// query, so an unescaped `@` in a password is still treated as part of it.
fn authority_end(rest: &str) -> usize {
    let before_query = rest.find(['?', '#']).unwrap_or(rest.len());
    let host_start = rest[..before_query].rfind('@').map_or(0, |at| at + 1);
    rest[host_start..before_query]
        .find('/')
        .map_or(before_query, |slash| host_start + slash)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentmem_core::ErrorKind;

    /// The error `MongoConfig::new(url)` gives, which must be `InvalidInput`.
    fn refused(url: &str) -> Error {
        let err = MongoConfig::new(url).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{url}: {err}");
        err
    }

    #[test]
    fn database_comes_from_the_path_with_a_default() {
        let c = MongoConfig::new("mongodb://127.0.0.1:27017/?directConnection=true").unwrap();
        assert_eq!(c.database(), "agentmem");
        let c = MongoConfig::new("mongodb://127.0.0.1:27017").unwrap();
        assert_eq!(c.database(), "agentmem");
        let c = MongoConfig::new("mongodb://h1:1,h2:2/mem_db?replicaSet=rs0").unwrap();
        assert_eq!(c.database(), "mem_db");
        let c = MongoConfig::new("mongodb://u:p%40ss@h/caf%C3%A9").unwrap();
        assert_eq!(c.database(), "café");
    }

    #[test]
    fn raw_delimiters_in_the_password_are_refused_without_showing_them() {
        let urls = [
            "mongodb://u:pw/pw@h/db",
            "mongodb://u:pw?pw@h/db",
            "mongodb://u:pw#pw@h/db",
            "mongodb+srv://u:pw/pw@h/db",
        ];
        agentmem_testkit::probe::assert_urls_refused(
            MongoConfig::new,
            &urls,
            "percent-encode",
            "pw",
        );
        let c = MongoConfig::new("mongodb://u:p%40w%2F%3F%23@h/db").unwrap();
        assert_eq!(c.database(), "db");
    }

    #[test]
    fn bad_database_names_and_schemes_are_refused() {
        for bad in [
            "mongodb://h/a.b",
            "mongodb://h/a%2Fb",
            "mongodb://h/$cmd",
            "mongodb://h/a%20b",
            "mongodb://h/%zz",
        ] {
            refused(bad);
        }
        let long = format!("mongodb://h/{}", "x".repeat(64));
        assert_eq!(
            MongoConfig::new(&long).unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
        assert_eq!(
            MongoConfig::new("redis://h/x").unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
        assert_eq!(
            MongoConfig::new("mongodb:///db").unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
        assert_eq!(
            MongoConfig::new("h:27017").unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
    }

    /// `mongodb+srv://` is accepted; a cluster name that does not resolve is `Unavailable`
    /// when the options are built (the driver's SRV lookup), never `Unsupported`.
    #[tokio::test]
    async fn srv_urls_are_accepted_and_an_unresolvable_name_is_unavailable() {
        let c = MongoConfig::new("mongodb+srv://app:s3cret@no-such-cluster.invalid/memory")
            .expect("an SRV URL parses");
        assert_eq!(c.database(), "memory");
        let err = c.client_options().await.expect_err("nothing to resolve");
        assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
        assert!(!err.to_string().contains("s3cret"), "{err}");
    }

    #[test]
    fn debug_and_messages_hide_the_password() {
        let c: MongoConfig = "mongodb://app:p@ss:w0rd@db.example:27017/mem"
            .parse()
            .unwrap();
        let shown = format!("{c:?}");
        assert!(!shown.contains("w0rd"), "{shown}");
        assert!(shown.contains("app:***@db.example:27017/mem"), "{shown}");
        assert_eq!(c.database(), "mem");
        assert_eq!(redact_url("mongodb://h:1/x"), "mongodb://h:1/x");
        assert_eq!(redact_url("mongodb://user@h/x"), "mongodb://user@h/x");
        let err = MongoConfig::new("mongodb://app:secret@h/a.b").unwrap_err();
        assert!(!err.to_string().contains("secret"), "{err}");
    }

    #[test]
    fn with_database_validates() {
        let c = MongoConfig::new("mongodb://h").unwrap();
        assert_eq!(c.clone().with_database("t_1").unwrap().database(), "t_1");
        assert!(c.with_database("a b").is_err());
    }

    /// TLS files that cannot be used are refused before any connection, naming the option.
    #[tokio::test]
    async fn unusable_tls_files_are_invalid_input_naming_the_option() {
        let manifest = env!("CARGO_MANIFEST_DIR");
        let missing = format!("{manifest}/no-such-ca.pem");
        let not_pem = format!("{manifest}/Cargo.toml");
        let other_ca = agentmem_testkit::servers::other_ca_file()
            .display()
            .to_string();
        for (url, why) in [
            (
                format!("mongodb://h/?tls=true&tlsCAFile={missing}"),
                "cannot read the MongoDB tlsCAFile file",
            ),
            (
                format!("mongodb://h/?tls=true&tlsCAFile={not_pem}"),
                "tlsCAFile file",
            ),
            (
                format!(
                    "mongodb://h/?tls=true&tlsCAFile={other_ca}&tlsCertificateKeyFile={missing}"
                ),
                "cannot read the MongoDB tlsCertificateKeyFile file",
            ),
        ] {
            let err = MongoConfig::new(&url)
                .unwrap()
                .client_options()
                .await
                .expect_err(why);
            assert_eq!(err.kind(), ErrorKind::InvalidInput, "{url}: {err}");
            assert!(err.to_string().contains(why), "{url}: {err}");
        }
        let usable = format!("mongodb://h/?tls=true&tlsCAFile={other_ca}");
        MongoConfig::new(&usable)
            .unwrap()
            .client_options()
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn short_timeouts_unless_the_url_sets_them() {
        let c = MongoConfig::new("mongodb://127.0.0.1:1/?directConnection=true").unwrap();
        let o = c.client_options().await.unwrap();
        assert_eq!(
            o.server_selection_timeout,
            Some(DEFAULT_SERVER_SELECTION_TIMEOUT)
        );
        assert_eq!(o.connect_timeout, Some(DEFAULT_CONNECT_TIMEOUT));
        let c =
            MongoConfig::new("mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=250&maxPoolSize=2")
                .unwrap();
        let o = c.client_options().await.unwrap();
        assert_eq!(o.server_selection_timeout, Some(Duration::from_millis(250)));
        assert_eq!(o.max_pool_size, Some(2));
        let err = MongoConfig::new("mongodb://u:secret@h/?bogusOption=(")
            .unwrap()
            .client_options()
            .await;
        if let Err(e) = err {
            assert!(!e.to_string().contains("secret"), "{e}");
        }
    }
}
