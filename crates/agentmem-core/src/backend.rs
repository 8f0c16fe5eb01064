//! The contract every backend's configuration meets, and the [`Registry`] that opens a store
//! from a URL by its scheme (as sqlx registers its drivers).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::str::FromStr;
use std::sync::Arc;

use async_trait::async_trait;

use crate::error::{Error, Result};
use crate::redact::redact_url;
use crate::store::AgentMemory;
use crate::Layered;

/// A backend's connection settings: parsed from the backend's URLs ([`FromStr`]), adjusted
/// with builder methods, then connected.
///
/// Every backend crate implements it for its config type, so one registration line
/// ([`Registry::with`]) makes a backend reachable by URL.
#[async_trait]
pub trait BackendConfig: FromStr<Err = Error> + fmt::Debug + Send + Sync + Sized + 'static {
    /// The raw store this config connects to.
    type Store: AgentMemory;

    /// The backend's short name, as [`SessionStore::backend`](crate::SessionStore::backend) reports it.
    const BACKEND: &'static str;

    /// The URL schemes this backend accepts: lowercase, without the `:`.
    const SCHEMES: &'static [&'static str];

    /// Connects to (opening, creating or migrating as needed) the store, wearing the standard
    /// [layers](crate::layer).
    async fn connect(self) -> Result<Layered<Self::Store>>;
}

/// The backends agentmem ships, whether or not a program registers (or compiles in) them.
///
/// Each has a crate of its own (`agentmem-file`, `agentmem-sqlite`, …) whose config implements
/// [`BackendConfig`] with the same [`as_str`](Self::as_str) name and [`schemes`](Self::schemes).
///
/// ```
/// use agentmem_core::backend::Backend;
/// use agentmem_core::ErrorKind;
/// assert_eq!(Backend::from_url("file:///tmp/agentmem")?, Backend::File);
/// assert_eq!(Backend::from_url("REDISS://cache:6380")?, Backend::Redis);
/// assert_eq!("SQLite".parse::<Backend>()?, Backend::Sqlite);
/// assert_eq!(Backend::Postgres.to_string(), "postgres");
/// assert_eq!(Backend::Postgres.schemes(), ["postgres", "postgresql"]);
/// let err = Backend::from_url("ftp://host/x").unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::InvalidInput);
/// # Ok::<(), agentmem_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Backend {
    /// Files under a folder (`file://`), crate `agentmem-file`.
    File,
    /// SQLite (`sqlite://`), crate `agentmem-sqlite`.
    Sqlite,
    /// Redis (`redis://`, `rediss://`, and `redis+cluster://`, `rediss+cluster://` for a Redis
    /// Cluster), crate `agentmem-redis`.
    Redis,
    /// PostgreSQL (`postgres://`, `postgresql://`), crate `agentmem-postgres`.
    Postgres,
    /// MongoDB (`mongodb://`, `mongodb+srv://`), crate `agentmem-mongodb`.
    MongoDb,
}

impl Backend {
    /// Every backend.
    pub const ALL: [Backend; 5] = [
        Backend::File,
        Backend::Sqlite,
        Backend::Redis,
        Backend::Postgres,
        Backend::MongoDb,
    ];

    /// The backend's short name, as its [`BackendConfig::BACKEND`] and
    /// [`SessionStore::backend`](crate::SessionStore::backend) give it: `file`, `sqlite`, `redis`, `postgres`, `mongodb`.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::File => "file",
            Backend::Sqlite => "sqlite",
            Backend::Redis => "redis",
            Backend::Postgres => "postgres",
            Backend::MongoDb => "mongodb",
        }
    }

    /// The URL schemes the backend accepts, as its [`BackendConfig::SCHEMES`] lists them.
    pub fn schemes(self) -> &'static [&'static str] {
        match self {
            Backend::File => &["file"],
            Backend::Sqlite => &["sqlite"],
            Backend::Redis => &["redis", "rediss", "redis+cluster", "rediss+cluster"],
            Backend::Postgres => &["postgres", "postgresql"],
            Backend::MongoDb => &["mongodb", "mongodb+srv"],
        }
    }

    /// The cargo feature of the `agentmem` crate that compiles this backend in (its name).
    pub fn feature(self) -> &'static str {
        self.as_str()
    }

    /// The backend a URL names, from its scheme (case-insensitive).
    ///
    /// Only the scheme is read: nothing is opened, and a backend that no [`Registry`] holds is
    /// still named (see [`Registry::contains`]). `InvalidInput` for a URL without a scheme or
    /// with a scheme no backend accepts.
    pub fn from_url(url: &str) -> Result<Backend> {
        let scheme = url_scheme(url).ok_or_else(|| {
            Error::invalid_input(format!(
                "store URL {:?} has no scheme; expected file://, sqlite://, redis://, postgres:// or mongodb://",
                redact_url(url)
            ))
        })?;
        Backend::ALL
            .into_iter()
            .find(|b| b.schemes().contains(&scheme.as_str()))
            .ok_or_else(|| {
                Error::invalid_input(format!(
                    "unknown store URL scheme {scheme:?}; expected file, sqlite, redis, postgres or mongodb"
                ))
            })
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Backend {
    type Err = Error;

    /// A backend name ([`Backend::as_str`]), case-insensitive.
    fn from_str(s: &str) -> Result<Self> {
        Backend::ALL
            .into_iter()
            .find(|b| b.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                Error::invalid_input(format!(
                    "unknown backend {s:?}; valid backends are file, sqlite, redis, postgres, mongodb"
                ))
            })
    }
}

/// A boxed future opening a store.
type Opening<'a> = Pin<Box<dyn Future<Output = Result<Arc<dyn AgentMemory>>> + Send + 'a>>;

#[derive(Clone, Copy)]
struct Entry {
    backend: &'static str,
    schemes: &'static [&'static str],
    open: for<'a> fn(&'a str) -> Opening<'a>,
}

fn open_with<C: BackendConfig>(url: &str) -> Opening<'_> {
    Box::pin(async move {
        let config: C = url.parse()?;
        let store: Arc<dyn AgentMemory> = Arc::new(config.connect().await?);
        Ok(store)
    })
}

/// The backends a program can open by URL, by their schemes.
///
/// ```
/// use agentmem_core::backend::Registry;
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let registry = Registry::new();
/// assert_eq!(registry.backend_for("sqlite://agent.db"), None);
/// let err = registry.open("sqlite://agent.db").await.unwrap_err();
/// assert_eq!(err.kind(), agentmem_core::ErrorKind::Unsupported);
/// # });
/// ```
#[derive(Clone, Default)]
pub struct Registry {
    entries: Vec<Entry>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.entries.iter().map(|e| (e.backend, e.schemes)))
            .finish()
    }
}

/// The scheme of a URL, lowercase; `None` without one.
pub fn url_scheme(url: &str) -> Option<String> {
    let (scheme, _) = url.split_once(':')?;
    let valid = !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then(|| scheme.to_ascii_lowercase())
}

impl Registry {
    /// A registry with no backend.
    pub fn new() -> Self {
        Registry::default()
    }

    /// Registers the backend whose config is `C`, for its [`SCHEMES`](BackendConfig::SCHEMES).
    /// A scheme registered earlier keeps its first backend.
    pub fn with<C: BackendConfig>(mut self) -> Self {
        self.entries.push(Entry {
            backend: C::BACKEND,
            schemes: C::SCHEMES,
            open: open_with::<C>,
        });
        self
    }

    /// The backends registered, in registration order.
    pub fn backends(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.entries.iter().map(|e| e.backend)
    }

    /// Whether `backend` is registered.
    ///
    /// ```
    /// use agentmem_core::backend::{Backend, Registry};
    /// assert!(!Registry::new().contains(Backend::File));
    /// ```
    pub fn contains(&self, backend: Backend) -> bool {
        self.entries.iter().any(|e| e.backend == backend.as_str())
    }

    /// The schemes registered for `backend`; empty when it is not registered.
    pub fn schemes(&self, backend: &str) -> &'static [&'static str] {
        self.entries
            .iter()
            .find(|e| e.backend == backend)
            .map_or(&[], |e| e.schemes)
    }

    fn entry_for(&self, url: &str) -> Option<&Entry> {
        let scheme = url_scheme(url)?;
        self.entries
            .iter()
            .find(|e| e.schemes.contains(&scheme.as_str()))
    }

    /// The registered backend that opens `url`, from its scheme (nothing is opened).
    pub fn backend_for(&self, url: &str) -> Option<&'static str> {
        self.entry_for(url).map(|e| e.backend)
    }

    /// Opens the store `url` names with the backend registered for its scheme.
    ///
    /// `InvalidInput` for a URL without a scheme, `Unsupported` for a scheme no registered
    /// backend accepts; otherwise what the backend's config and `connect` return.
    pub async fn open(&self, url: &str) -> Result<Arc<dyn AgentMemory>> {
        let Some(scheme) = url_scheme(url) else {
            return Err(Error::invalid_input(format!(
                "store URL {:?} has no scheme",
                redact_url(url)
            )));
        };
        match self.entry_for(url) {
            Some(entry) => (entry.open)(url).await,
            None => Err(Error::unsupported(format!(
                "no backend for URL scheme {scheme:?} is registered (registered: {})",
                self.entries
                    .iter()
                    .flat_map(|e| e.schemes.iter().copied())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn schemes_map_to_backends() {
        for (url, backend) in [
            ("file:///tmp/x", Backend::File),
            ("sqlite::memory:", Backend::Sqlite),
            ("sqlite://a.db", Backend::Sqlite),
            ("redis://127.0.0.1", Backend::Redis),
            ("rediss://h", Backend::Redis),
            ("redis+cluster://h:1,h:2/", Backend::Redis),
            ("postgres://u@h/db", Backend::Postgres),
            ("postgresql://u@h/db", Backend::Postgres),
            ("MongoDB://h", Backend::MongoDb),
            ("mongodb+srv://cluster.example.com/db", Backend::MongoDb),
        ] {
            assert_eq!(Backend::from_url(url).expect(url), backend, "{url}");
        }
    }

    #[test]
    fn unknown_or_missing_scheme_is_invalid_input() {
        for url in ["mysql://h/db", "no-scheme-here", ""] {
            let err = Backend::from_url(url).expect_err(url);
            assert_eq!(err.kind(), ErrorKind::InvalidInput, "{url}");
        }
    }

    #[test]
    fn backend_names_parse_and_display() {
        assert_eq!(
            "SQLite".parse::<Backend>().expect("sqlite"),
            Backend::Sqlite
        );
        let err = "cassandra".parse::<Backend>().expect_err("unknown");
        assert!(err
            .to_string()
            .contains("file, sqlite, redis, postgres, mongodb"));
        for backend in Backend::ALL {
            assert_eq!(backend.to_string().parse::<Backend>().ok(), Some(backend));
            assert_eq!(backend.feature(), backend.as_str());
            for scheme in backend.schemes() {
                let url = format!("{scheme}://x");
                assert_eq!(Backend::from_url(&url).ok(), Some(backend), "{url}");
            }
        }
    }
}
