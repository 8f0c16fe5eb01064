//! Where the database lives and how connections to it are tuned, parsed from a `sqlite:` URL.

use agentmem_core::backend::BackendInfo;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use agentmem_core::backend::BackendConfig;
use agentmem_core::support::percent_decode;
use agentmem_core::{async_trait, Error, Layered, Result};

use crate::SqliteStore;

/// The default busy timeout: how long a write waits for another writer before giving up.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The default number of connections to a database file.
pub const DEFAULT_POOL_SIZE: usize = 4;

/// The largest accepted pool size; SQLite has one writer at a time, so more buys nothing.
pub const MAX_POOL_SIZE: usize = 64;

/// Where the database is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Location {
    /// A database file (created when missing, unless [`SqliteConfig::create`] is off).
    File(PathBuf),
    /// A private in-memory database, gone when the store is dropped.
    Memory,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File(path) => write!(f, "{}", path.display()),
            Location::Memory => f.write_str(":memory:"),
        }
    }
}

agentmem_core::name_enum! {
    /// SQLite's `synchronous` setting: how hard a commit waits for the disk. Named as
    /// `PRAGMA synchronous` spells it (`off`, `normal`, `full`, `extra`; parsed in any case).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub enum Synchronous {
        /// Never sync: fastest, and a power cut can lose or corrupt recent commits.
        Off = "off",
        /// Sync at checkpoints only: a commit survives a process crash, but a power cut may lose
        /// the last few commits (never corrupts the database in WAL mode).
        Normal = "normal",
        /// Sync the write-ahead log at every commit: a commit survives a power cut (the default).
        #[default]
        Full = "full",
        /// As `Full`, and also sync the directory after deleting a journal.
        Extra = "extra",
    }
    from_str("synchronous value", ignore_ascii_case);
}

/// How to open a SQLite store.
///
/// Parsed from a URL (`FromStr`), then adjustable with the `with_*` methods:
///
/// | URL | database |
/// |---|---|
/// | `sqlite://relative/path.db` | `relative/path.db`, relative to the working directory |
/// | `sqlite:///abs/path.db` | `/abs/path.db` |
/// | `sqlite:relative.db` | `relative.db` |
/// | `sqlite::memory:` | a private in-memory database |
///
/// Query options (unknown ones are refused): `busy_timeout_ms` (default 5000),
/// `synchronous` (`off`, `normal`, `full` (default), `extra`), `pool_size` (1-64, default 4;
/// always 1 in memory), `create` (`true` (default) or `false`: refuse a missing file).
/// The path is percent-decoded, so `%3F` stands for a `?` in a file name.
///
/// ```
/// use std::time::Duration;
/// use agentmem_sqlite::{Location, SqliteConfig, Synchronous};
///
/// let config: SqliteConfig = "sqlite:///var/lib/agent/memory.db?busy_timeout_ms=250&synchronous=normal"
///     .parse()?;
/// assert_eq!(config.location, Location::File("/var/lib/agent/memory.db".into()));
/// assert_eq!(config.busy_timeout, Duration::from_millis(250));
/// assert_eq!(config.synchronous, Synchronous::Normal);
/// assert!("sqlite://x.db?cache=shared".parse::<SqliteConfig>().is_err());
/// # Ok::<(), agentmem_core::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SqliteConfig {
    /// Where the database is.
    pub location: Location,
    /// How long a statement waits on another connection's lock before failing `Unavailable`.
    pub busy_timeout: Duration,
    /// How hard a commit waits for the disk.
    pub synchronous: Synchronous,
    /// How many connections to keep open (reads run in parallel; writes take turns).
    pub pool_size: usize,
    /// Whether a missing database file is created (with its parent folders).
    pub create: bool,
}

impl SqliteConfig {
    /// A database file at `path`, with default options.
    pub fn file(path: impl Into<PathBuf>) -> Self {
        Self::at(Location::File(path.into()))
    }

    /// A private in-memory database.
    pub fn memory() -> Self {
        Self::at(Location::Memory)
    }

    fn at(location: Location) -> Self {
        SqliteConfig {
            location,
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
            synchronous: Synchronous::default(),
            pool_size: DEFAULT_POOL_SIZE,
            create: true,
        }
    }

    agentmem_core::setters! {
        /// Sets the busy timeout.
        pub fn with_busy_timeout(timeout: Duration) { self.busy_timeout = timeout }

        /// Sets `synchronous`.
        pub fn with_synchronous(synchronous: Synchronous) { self.synchronous = synchronous }

        /// Sets the number of connections (clamped to 1-64 when opened).
        pub fn with_pool_size(pool_size: usize) { self.pool_size = pool_size }

        /// Sets whether a missing database file is created.
        pub fn with_create(create: bool) { self.create = create }
    }

    /// The database file, or `None` in memory.
    pub fn path(&self) -> Option<&Path> {
        match &self.location {
            Location::File(path) => Some(path),
            Location::Memory => None,
        }
    }

    /// The number of connections actually opened: one in memory (each in-memory connection
    /// would be a separate database), else `pool_size` clamped to 1-64.
    pub(crate) fn effective_pool_size(&self) -> usize {
        match self.location {
            Location::Memory => 1,
            Location::File(_) => self.pool_size.clamp(1, MAX_POOL_SIZE),
        }
    }

    fn set_option(&mut self, key: &str, value: &str) -> Result<()> {
        match key {
            "busy_timeout_ms" => {
                let ms: u64 = value.parse().map_err(|_| {
                    Error::invalid_input(format!(
                        "invalid busy_timeout_ms {value:?}: expected milliseconds as a whole number"
                    ))
                })?;
                self.busy_timeout = Duration::from_millis(ms);
            }
            "synchronous" => self.synchronous = value.parse()?,
            "pool_size" => {
                self.pool_size = value
                    .parse()
                    .ok()
                    .filter(|n| (1..=MAX_POOL_SIZE).contains(n))
                    .ok_or_else(|| {
                        Error::invalid_input(format!(
                            "invalid pool_size {value:?}: expected a number from 1 to {MAX_POOL_SIZE}"
                        ))
                    })?;
            }
            "create" => {
                self.create = match value.to_ascii_lowercase().as_str() {
                    "true" | "1" | "yes" => true,
                    "false" | "0" | "no" => false,
                    _ => {
                        return Err(Error::invalid_input(format!(
                            "invalid create {value:?}: expected true or false"
                        )))
                    }
                }
            }
            _ => {
                return Err(Error::invalid_input(format!(
                    "unknown sqlite URL option {key:?}; valid options are busy_timeout_ms, synchronous, pool_size, create"
                )))
            }
        }
        Ok(())
    }
}

impl FromStr for SqliteConfig {
    type Err = Error;

    fn from_str(url: &str) -> Result<Self> {
        agentmem_core::check_options_unique(url, &[])?;
        let rest = url
            .get(..7)
            .filter(|scheme| scheme.eq_ignore_ascii_case("sqlite:"))
            .map(|_| &url[7..])
            .ok_or_else(|| {
                Error::invalid_input(format!(
                    "invalid sqlite URL {url:?}: expected sqlite://path, sqlite:///absolute/path or sqlite::memory:"
                ))
            })?;
        let (target, query) = rest
            .split_once('?')
            .map_or((rest, None), |(t, q)| (t, Some(q)));
        let mut config = if target == ":memory:" {
            SqliteConfig::memory()
        } else {
            // `sqlite://a/b` is the relative path `a/b`; `sqlite:///a/b` keeps its leading `/`.
            let path = target.strip_prefix("//").unwrap_or(target);
            if path.contains('#') {
                return Err(Error::invalid_input(format!(
                    "invalid sqlite URL {url:?}: fragments are not supported (write `#` as %23)"
                )));
            }
            let path = percent_decode(path).ok_or_else(|| {
                Error::invalid_input(format!(
                    "invalid sqlite URL {url:?}: bad percent-encoding in the path"
                ))
            })?;
            if path.is_empty() {
                return Err(Error::invalid_input(format!(
                    "invalid sqlite URL {url:?}: no database path; use sqlite://path/to/file.db or sqlite::memory:"
                )));
            }
            SqliteConfig::file(path)
        };
        for (key, value) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            config.set_option(&key, &value)?;
        }
        Ok(config)
    }
}

/// Makes the backend reachable by URL: `Registry::new().with::<SqliteConfig>()` opens
/// `sqlite:` URLs with [`SqliteStore::connect_with`].
///
/// ```
/// use agentmem_core::backend::Registry;
/// use agentmem_core::{AgentMemory, MemoryStore, SessionStore};
/// use agentmem_sqlite::SqliteConfig;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let registry = Registry::new().with::<SqliteConfig>();
/// assert_eq!(registry.backend_for("SQLite::memory:"), Some("sqlite"));
/// let store = registry.open("sqlite::memory:").await?;
/// assert_eq!(store.backend(), "sqlite");
/// # Ok::<(), agentmem_core::Error>(())
/// # }).unwrap();
/// ```
#[async_trait]
impl BackendConfig for SqliteConfig {
    type Store = SqliteStore;
    const INFO: &'static BackendInfo = &crate::error::INFO;

    async fn connect(self) -> Result<Layered<SqliteStore>> {
        SqliteStore::connect_with(self).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentmem_core::ErrorKind;

    fn parse(url: &str) -> Result<SqliteConfig> {
        url.parse()
    }

    #[test]
    fn url_forms() {
        for (url, path) in [
            ("sqlite://relative/path.db", "relative/path.db"),
            ("sqlite:///abs/path.db", "/abs/path.db"),
            ("sqlite:plain.db", "plain.db"),
            ("SQLite://x%20y%3F.db", "x y?.db"),
        ] {
            assert_eq!(parse(url).unwrap().location, Location::File(path.into()));
        }
        let memory = parse("sqlite::memory:").unwrap();
        assert_eq!(memory.location, Location::Memory);
        assert_eq!(memory.effective_pool_size(), 1);
        assert_eq!(memory.path(), None);
    }

    #[test]
    fn defaults() {
        let c = parse("sqlite://m.db").unwrap();
        assert_eq!(c.busy_timeout, DEFAULT_BUSY_TIMEOUT);
        assert_eq!(c.synchronous, Synchronous::Full);
        assert_eq!(c.pool_size, DEFAULT_POOL_SIZE);
        assert!(c.create);
    }

    #[test]
    fn options() {
        let c =
            parse("sqlite://m.db?busy_timeout_ms=250&synchronous=NORMAL&pool_size=2&create=false")
                .unwrap();
        assert_eq!(c.busy_timeout, Duration::from_millis(250));
        assert_eq!(c.synchronous, Synchronous::Normal);
        assert_eq!(c.pool_size, 2);
        assert!(!c.create);
        assert_eq!(
            parse("sqlite::memory:?synchronous=off")
                .unwrap()
                .synchronous,
            Synchronous::Off
        );
    }

    #[test]
    fn bad_urls_are_invalid_input() {
        for url in [
            "postgres://x",
            "sqlite",
            "sqlite://",
            "sqlite:",
            "sqlite://m.db?cache=shared",
            "sqlite://m.db?busy_timeout_ms=-1",
            "sqlite://m.db?busy_timeout_ms=soon",
            "sqlite://m.db?synchronous=always",
            "sqlite://m.db?pool_size=0",
            "sqlite://m.db?pool_size=65",
            "sqlite://m.db?create=maybe",
            "sqlite://m.db?synchronous=full&synchronous=off",
            "sqlite://bad%zz.db",
            "sqlite://bad%ff.db",
            "sqlite://a.db#frag",
        ] {
            let err = parse(url).expect_err(url);
            assert_eq!(err.kind(), ErrorKind::InvalidInput, "{url}: {err}");
        }
        let err = parse("sqlite://m.db?cache=shared").unwrap_err();
        assert!(
            err.to_string().contains("busy_timeout_ms, synchronous"),
            "{err}"
        );
    }

    #[test]
    fn builders() {
        let c = SqliteConfig::file("a.db")
            .with_busy_timeout(Duration::from_millis(1))
            .with_synchronous(Synchronous::Extra)
            .with_pool_size(1000)
            .with_create(false);
        assert_eq!(c.effective_pool_size(), MAX_POOL_SIZE);
        assert_eq!(c.path(), Some(Path::new("a.db")));
        assert_eq!(c.synchronous.as_str(), "extra");
        assert_eq!(SqliteConfig::memory().location.to_string(), ":memory:");
    }
}
