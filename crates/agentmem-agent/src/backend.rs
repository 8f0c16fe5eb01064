//! [`Backend`]: the backends agentmem ships, by name, for configurations that choose one
//! (`AgentConfig`'s `backend: sqlite`, as PraisonAI's memory config does). The backends
//! themselves describe themselves (`BackendInfo`) and register by URL scheme; this list only
//! names them for configuration, and the facade checks it against what they register.

use agentmem_core::backend::url_scheme;
use agentmem_core::{redact_url, Error, Result};

agentmem_core::name_enum! {
    /// The backends agentmem ships, whether or not a program registers (or compiles in) them.
    ///
    /// Each has a crate of its own (`agentmem-file`, `agentmem-sqlite`, …) whose config implements
    /// `BackendConfig` with the same [`as_str`](Self::as_str) name (the one
    /// [`SessionStore::backend`](agentmem_core::SessionStore::backend) gives) and
    /// [`schemes`](Self::schemes). Names parse in any ASCII case.
    ///
    /// ```
    /// use agentmem_agent::Backend;
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
        File = "file",
        /// SQLite (`sqlite://`), crate `agentmem-sqlite`.
        Sqlite = "sqlite",
        /// Redis (`redis://`, `rediss://`, and `redis+cluster://`, `rediss+cluster://` for a Redis
        /// Cluster), crate `agentmem-redis`.
        Redis = "redis",
        /// PostgreSQL (`postgres://`, `postgresql://`), crate `agentmem-postgres`.
        Postgres = "postgres",
        /// MongoDB (`mongodb://`, `mongodb+srv://`), crate `agentmem-mongodb`.
        MongoDb = "mongodb",
    }
    from_str("backend", ignore_ascii_case);
}

impl Backend {
    /// The URL schemes the backend accepts, as its `BackendConfig::INFO` lists them.
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
    /// Only the scheme is read: nothing is opened, and a backend that no `Registry` holds is
    /// still named (see `Registry::contains`). `InvalidInput` for a URL without a scheme or
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
