//! The per-session sidecar `lifecycle.json`: a session's labels (title, owner, tags) and its
//! expiry time.
//!
//! It lives in the session's folder beside `session.jsonl`, so deleting the session (its
//! folder renamed into the trash) takes it along. It is small and replaced whole (temporary
//! file, fsync, rename, fsync of the folder) under the session's lock, so a reader without
//! the lock (`find_sessions`' first pass) sees the old version or the new one. A session
//! without labels or expiry has no sidecar: stores written before it existed read as
//! unlabelled and never expiring.
//!
//! ```text
//! {"format":"agentmem.lifecycle","version":1,"labels":{"owner":"ada","tags":{"p":"k"}},"expires_at":"…"}
//! ```

use std::io::Read;
use std::path::Path;
use std::time::SystemTime;

use agentmem_core::{Error, Result, SessionLabels};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::fsutil::{io_error, FileId};

/// File name of the sidecar in a session's folder.
pub(crate) const LIFECYCLE_FILE: &str = "lifecycle.json";
/// `format` of the sidecar.
const LIFECYCLE_FORMAT: &str = "agentmem.lifecycle";
/// Version of the sidecar written by this build.
const LIFECYCLE_VERSION: u32 = 1;
/// A sidecar larger than this is not ours (64 tags of 2 KiB each fit well below it).
const MAX_SIDECAR_BYTES: u64 = 1 << 20;

/// A session's labels and expiry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Lifecycle {
    pub(crate) labels: SessionLabels,
    pub(crate) expires_at: Option<DateTime<Utc>>,
}

impl Lifecycle {
    /// Whether nothing is set (then no sidecar is kept).
    pub(crate) fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.expires_at.is_none()
    }

    /// Whether the session has expired at `at` (`expires_at <= at`).
    pub(crate) fn is_expired_at(&self, at: DateTime<Utc>) -> bool {
        self.expires_at.is_some_and(|t| t <= at)
    }
}

/// The sidecar as stored.
#[derive(Debug, Serialize, Deserialize)]
struct LifecycleFile {
    format: String,
    version: u32,
    #[serde(default)]
    labels: SessionLabels,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at: Option<DateTime<Utc>>,
}

/// What tells a replaced sidecar from the one read before: its identity, length and
/// modification time (a rename gives a new inode; the length and time guard against an
/// inode number reused by a later version).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    id: FileId,
    len: u64,
    mtime: Option<SystemTime>,
}

impl Stamp {
    pub(crate) fn of(meta: &std::fs::Metadata) -> Self {
        Stamp {
            id: FileId::of(meta),
            len: meta.len(),
            mtime: meta.modified().ok(),
        }
    }
}

/// What this process last read of a session's sidecar.
#[derive(Debug, Clone, Default)]
pub(crate) struct CachedLifecycle {
    /// The sidecar's stamp, `None` when there was none.
    pub(crate) stamp: Option<Stamp>,
    pub(crate) data: Lifecycle,
}

/// The sidecar's bytes for `data`.
pub(crate) fn encode(data: &Lifecycle) -> Result<Vec<u8>> {
    let file = LifecycleFile {
        format: LIFECYCLE_FORMAT.into(),
        version: LIFECYCLE_VERSION,
        labels: data.labels.clone(),
        expires_at: data.expires_at,
    };
    let mut bytes = serde_json::to_vec(&file)
        .map_err(|e| Error::backend("cannot serialize session labels").with_source(e))?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Parses the sidecar `bytes` read from `path`.
fn decode(bytes: &[u8], path: &Path) -> Result<Lifecycle> {
    let file: LifecycleFile = serde_json::from_slice(bytes).map_err(|e| {
        Error::corrupt(format!("{} is not a session label file", path.display())).with_source(e)
    })?;
    if file.format != LIFECYCLE_FORMAT {
        return Err(Error::corrupt(format!(
            "{} is not a session label file (format {:?})",
            path.display(),
            file.format
        )));
    }
    if file.version > LIFECYCLE_VERSION {
        return Err(Error::unsupported(format!(
            "{} has version {}; this agentmem understands up to {LIFECYCLE_VERSION}: upgrade agentmem",
            path.display(),
            file.version
        )));
    }
    Ok(Lifecycle {
        labels: file.labels,
        expires_at: file.expires_at,
    })
}

/// Reads the sidecar at `path`: `None` when there is none.
pub(crate) fn read(path: &Path) -> Result<CachedLifecycle> {
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(CachedLifecycle::default()),
        Err(e) => return Err(io_error(path, "cannot open", e)),
    };
    let meta = file
        .metadata()
        .map_err(|e| io_error(path, "cannot stat", e))?;
    if meta.len() > MAX_SIDECAR_BYTES {
        return Err(Error::corrupt(format!(
            "{} is {} bytes: too large for a session label file",
            path.display(),
            meta.len()
        )));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.read_to_end(&mut bytes)
        .map_err(|e| io_error(path, "cannot read", e))?;
    Ok(CachedLifecycle {
        stamp: Some(Stamp::of(&meta)),
        data: decode(&bytes, path)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_foreign_files() {
        let mut data = Lifecycle::default();
        data.labels.owner = Some("o'; $gt *".into());
        data.labels.tags.insert("a.b".into(), "*".into());
        data.expires_at = Some(agentmem_core::now());
        let p = Path::new("lifecycle.json");
        assert_eq!(decode(&encode(&data).unwrap(), p).unwrap(), data);
        let empty = decode(br#"{"format":"agentmem.lifecycle","version":1}"#, p).unwrap();
        assert!(empty.is_empty());
        let e = decode(br#"{"format":"other","version":1}"#, p).unwrap_err();
        assert_eq!(e.kind(), agentmem_core::ErrorKind::CorruptData);
        let e = decode(b"", p).unwrap_err();
        assert_eq!(e.kind(), agentmem_core::ErrorKind::CorruptData);
        let e = decode(br#"{"format":"agentmem.lifecycle","version":9}"#, p).unwrap_err();
        assert_eq!(e.kind(), agentmem_core::ErrorKind::Unsupported);
    }
}
