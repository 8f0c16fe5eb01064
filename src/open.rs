//! Opening a store from a URL, among the backends compiled in.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use agentmem_core::{AgentMemory, Error, Result};

/// The backends agentmem knows, whether or not this build includes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Backend {
    /// Files under a folder (`file://`), feature `file`.
    File,
    /// SQLite (`sqlite://`), feature `sqlite`.
    Sqlite,
    /// Redis (`redis://`, `rediss://`), feature `redis`.
    Redis,
    /// PostgreSQL (`postgres://`, `postgresql://`), feature `postgres`.
    Postgres,
    /// MongoDB (`mongodb://`), feature `mongodb`.
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

    /// The backend a URL names, from its scheme.
    ///
    /// Only the scheme is read: nothing is opened, and a backend this build does not include
    /// is still named (see [`is_compiled_in`](Self::is_compiled_in)).
    ///
    /// ```
    /// use agentmem::{Backend, ErrorKind};
    /// assert_eq!(Backend::from_url("file:///tmp/agentmem")?, Backend::File);
    /// assert_eq!(Backend::from_url("REDISS://cache:6380")?, Backend::Redis);
    /// let backend = Backend::from_url("postgresql://agent:secret@db/agentmem")?;
    /// assert_eq!(backend, Backend::Postgres);
    /// assert_eq!(backend.is_compiled_in(), cfg!(feature = "postgres"));
    /// let err = Backend::from_url("ftp://host/x").unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::InvalidInput);
    /// # Ok::<(), agentmem::Error>(())
    /// ```
    pub fn from_url(url: &str) -> Result<Backend> {
        let scheme = url
            .split_once(':')
            .map(|(s, _)| s.to_ascii_lowercase())
            .ok_or_else(|| {
                Error::invalid_input(format!(
                    "store URL {:?} has no scheme; expected file://, sqlite://, redis://, postgres:// or mongodb://",
                    redact(url)
                ))
            })?;
        match scheme.as_str() {
            "file" => Ok(Backend::File),
            "sqlite" => Ok(Backend::Sqlite),
            "redis" | "rediss" => Ok(Backend::Redis),
            "postgres" | "postgresql" => Ok(Backend::Postgres),
            "mongodb" | "mongodb+srv" => Ok(Backend::MongoDb),
            other => Err(Error::invalid_input(format!(
                "unknown store URL scheme {other:?}; expected file, sqlite, redis, postgres or mongodb"
            ))),
        }
    }

    /// The cargo feature that compiles this backend in.
    pub fn feature(self) -> &'static str {
        match self {
            Backend::File => "file",
            Backend::Sqlite => "sqlite",
            Backend::Redis => "redis",
            Backend::Postgres => "postgres",
            Backend::MongoDb => "mongodb",
        }
    }

    /// Whether this build includes the backend.
    pub fn is_compiled_in(self) -> bool {
        match self {
            Backend::File => cfg!(feature = "file"),
            Backend::Sqlite => cfg!(feature = "sqlite"),
            Backend::Redis => cfg!(feature = "redis"),
            Backend::Postgres => cfg!(feature = "postgres"),
            Backend::MongoDb => cfg!(feature = "mongodb"),
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.feature())
    }
}

impl FromStr for Backend {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Backend::ALL
            .into_iter()
            .find(|b| b.feature().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                Error::invalid_input(format!(
                    "unknown backend {s:?}; valid backends are file, sqlite, redis, postgres, mongodb"
                ))
            })
    }
}

pub(crate) use agentmem_core::redact_url as redact;

/// Opens the store a URL names, among the backends compiled into this build.
///
/// A backend that is not compiled in is an [`Unsupported`](agentmem_core::ErrorKind::Unsupported)
/// error naming the cargo feature to enable.
///
/// ```no_run
/// # async fn demo() -> agentmem::Result<()> {
/// let store = agentmem::open("file:///tmp/agentmem-demo").await?;
/// println!("{} backend, schema v{}", store.backend(), store.schema_version().await?);
/// # Ok(()) }
/// ```
pub async fn open(url: &str) -> Result<Arc<dyn AgentMemory>> {
    let backend = Backend::from_url(url)?;
    require_compiled_in(backend, backend.is_compiled_in(), url)?;
    open_compiled(backend, url).await
}

/// The error for a URL whose backend this build lacks, naming the feature to enable.
fn require_compiled_in(backend: Backend, compiled_in: bool, url: &str) -> Result<()> {
    if compiled_in {
        return Ok(());
    }
    Err(Error::unsupported(format!(
        "the {backend} backend is not compiled in; enable the agentmem feature \"{}\" to open {}",
        backend.feature(),
        redact(url)
    )))
}

#[allow(unused_variables, unreachable_code)]
async fn open_compiled(backend: Backend, url: &str) -> Result<Arc<dyn AgentMemory>> {
    match backend {
        #[cfg(feature = "file")]
        Backend::File => Ok(Arc::new(agentmem_file::FileMemory::connect(url).await?)),
        #[cfg(feature = "sqlite")]
        Backend::Sqlite => Ok(Arc::new(agentmem_sqlite::SqliteMemory::connect(url).await?)),
        #[cfg(feature = "redis")]
        Backend::Redis => Ok(Arc::new(agentmem_redis::RedisMemory::connect(url).await?)),
        #[cfg(feature = "postgres")]
        Backend::Postgres => Ok(Arc::new(
            agentmem_postgres::PostgresMemory::connect(url).await?,
        )),
        #[cfg(feature = "mongodb")]
        Backend::MongoDb => Ok(Arc::new(agentmem_mongodb::MongoMemory::connect(url).await?)),
        #[allow(unreachable_patterns)]
        _ => Err(Error::unsupported(format!(
            "the {backend} backend is not compiled in"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentmem_core::ErrorKind;

    #[test]
    fn schemes_map_to_backends() {
        for (url, backend) in [
            ("file:///tmp/x", Backend::File),
            ("sqlite::memory:", Backend::Sqlite),
            ("sqlite://a.db", Backend::Sqlite),
            ("redis://127.0.0.1", Backend::Redis),
            ("rediss://h", Backend::Redis),
            ("postgres://u@h/db", Backend::Postgres),
            ("postgresql://u@h/db", Backend::Postgres),
            ("MongoDB://h", Backend::MongoDb),
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
    fn missing_feature_is_named_and_password_redacted() {
        let err = require_compiled_in(Backend::Postgres, false, "postgres://u:hunter2@h/db")
            .expect_err("not compiled in");
        assert_eq!(err.kind(), ErrorKind::Unsupported);
        let text = err.to_string();
        assert!(text.contains("feature \"postgres\""), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
        assert!(require_compiled_in(Backend::File, true, "file:///x").is_ok());
    }

    #[test]
    fn backend_names_parse() {
        assert_eq!(
            "SQLite".parse::<Backend>().expect("sqlite"),
            Backend::Sqlite
        );
        let err = "cassandra".parse::<Backend>().expect_err("unknown");
        assert!(err
            .to_string()
            .contains("file, sqlite, redis, postgres, mongodb"));
    }
}
