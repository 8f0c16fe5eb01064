//! Configuration of the file backend: where it keeps its files and how hard it syncs them.

use agentmem_core::backend::BackendInfo;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use agentmem_core::backend::BackendConfig;
use agentmem_core::{async_trait, Error, Layered, Result};

use crate::store::FileStore;

agentmem_core::name_enum! {
    /// When appends reach the disk: `fsync` or `buffered` in the URL (in any case).
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
    pub enum Durability {
        /// fsync every append's log line before acknowledging it: acknowledged means on disk, even
        /// if the machine loses power. Concurrent appends share fsyncs (group commit). The
        /// default.
        #[default]
        Fsync = "fsync",
        /// Leave appends in the operating system's cache: an acknowledged append survives a crash
        /// of the process but may be lost if the machine crashes. Much faster: a busy session
        /// keeps its lock between appends (a lease, see the crate documentation). Rewrites
        /// (compaction, `save_session`) are fsynced in both modes, because a rename without fsync
        /// can lose the old and the new version at once.
        Buffered = "buffered",
    }
    from_str("durability", ignore_ascii_case);
}

/// Where the file backend keeps its data and how it syncs it.
///
/// Parses from a URL: `file:///abs/path?durability=fsync|buffered`; `file://` alone (or
/// `file://?durability=…`) means the default root ([`FileConfig::default_home`]);
/// `file://localhost/abs/path` is the same as `file:///abs/path`. A relative path such as
/// `file://data` is rejected: in a URL the part after `//` is a host name, so reading it as a
/// folder would make `file://data` and `file:///data` silently different places. Unknown query
/// keys are rejected too, so a typo never passes unnoticed.
///
/// ```
/// use agentmem_file::{Durability, FileConfig};
/// let config: FileConfig = "file:///var/lib/agents?durability=buffered".parse().unwrap();
/// assert_eq!(config.root, std::path::Path::new("/var/lib/agents"));
/// assert_eq!(config.durability, Durability::Buffered);
/// assert!("file://relative/dir".parse::<FileConfig>().is_err());
/// assert!("file:///x?fsync=1".parse::<FileConfig>().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FileConfig {
    /// The root folder; created (mode 0700) when missing.
    pub root: PathBuf,
    /// When appends reach the disk.
    pub durability: Durability,
}

impl FileConfig {
    /// A configuration for `root` with the default durability ([`Durability::Fsync`]).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        FileConfig {
            root: root.into(),
            durability: Durability::default(),
        }
    }

    /// Sets the durability.
    pub fn with_durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// A configuration for the default root, [`FileConfig::default_home`].
    pub fn from_env() -> Result<Self> {
        Ok(Self::new(Self::default_home()?))
    }

    /// The default root: `$AGENTMEM_HOME` when set and not empty, else `$HOME/.agentmem`.
    /// `InvalidInput` when neither variable is set.
    pub fn default_home() -> Result<PathBuf> {
        if let Some(home) = std::env::var_os("AGENTMEM_HOME").filter(|v| !v.is_empty()) {
            return Ok(PathBuf::from(home));
        }
        match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
            Some(home) => Ok(Path::new(&home).join(".agentmem")),
            None => Err(Error::invalid_input(
                "no root folder for the file backend: set AGENTMEM_HOME (or HOME)",
            )),
        }
    }
}

impl FromStr for FileConfig {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        agentmem_core::check_options_unique(s, &[])?;
        let rest = s.strip_prefix("file://").ok_or_else(|| {
            Error::invalid_input(format!(
                "not a file URL: {s:?}; expected file:///absolute/path"
            ))
        })?;
        let (location, query) = match rest.split_once('?') {
            Some((l, q)) => (l, Some(q)),
            None => (rest, None),
        };
        let mut config = if location.is_empty() {
            FileConfig::from_env()?
        } else {
            let url = url::Url::parse(&format!("file://{location}")).map_err(|e| {
                Error::invalid_input(format!("malformed file URL {s:?}")).with_source(e)
            })?;
            let path = url.to_file_path().map_err(|()| {
                Error::invalid_input(format!(
                    "file URL {s:?} names a host or a relative path; use file:///absolute/path"
                ))
            })?;
            FileConfig::new(path)
        };
        if let Some(query) = query {
            for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
                match key.as_ref() {
                    "durability" => config.durability = value.parse()?,
                    other => {
                        return Err(Error::invalid_input(format!(
                            "unknown option {other:?} in file URL; the only option is `durability`"
                        )))
                    }
                }
            }
        }
        Ok(config)
    }
}

/// The file backend's entry in a [`Registry`](agentmem_core::backend::Registry): scheme `file`.
///
/// ```
/// use agentmem_core::backend::Registry;
/// use agentmem_core::{AgentMemory, MemoryStore, SessionStore};
/// use agentmem_file::FileConfig;
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let dir = tempfile::tempdir()?;
/// let registry = Registry::new().with::<FileConfig>();
/// let store = registry.open(&format!("file://{}", dir.path().display())).await?;
/// assert_eq!(store.backend(), "file");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[async_trait]
impl BackendConfig for FileConfig {
    type Store = FileStore;
    const INFO: &'static BackendInfo = &crate::store::INFO;

    async fn connect(self) -> Result<Layered<FileStore>> {
        FileStore::connect_with(self).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentmem_core::ErrorKind;

    #[test]
    fn parses_urls() {
        let c: FileConfig = "file:///tmp/a%20b".parse().unwrap();
        assert_eq!(c.root, PathBuf::from("/tmp/a b"));
        assert_eq!(c.durability, Durability::Fsync);
        let c: FileConfig = "file://localhost/srv/x?durability=FSYNC".parse().unwrap();
        assert_eq!(c.root, PathBuf::from("/srv/x"));
        assert_eq!(c.durability, Durability::Fsync);
        let c: FileConfig = "file:///srv/x?durability=buffered".parse().unwrap();
        assert_eq!(c.durability, Durability::Buffered);
    }

    #[test]
    fn rejects_bad_urls() {
        for bad in [
            "/tmp/x",
            "sqlite:///tmp/x",
            "file://relative",
            "file://host.example/x",
            "file:///x?durability=sometimes",
            "file:///x?durablity=fsync",
        ] {
            let err = bad.parse::<FileConfig>().unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidInput, "{bad}: {err}");
        }
    }
}
