//! Mapping SQLite failures onto agentmem's [`ErrorKind`]s.
//!
//! Work on a connection returns [`Failure`], which keeps the raw `rusqlite::Error`; the pool
//! turns it into an [`Error`] once, where it knows which database (file) it was working on,
//! so every message can name the file.

use agentmem_core::backend::BackendInfo;
use agentmem_core::Capabilities;
use agentmem_core::{Error, ErrorKind};
use rusqlite::ErrorCode;

/// The SQLite backend: everything but expiry by the server (expired rows are skipped on read
/// and deleted by `purge`). An in-memory database (`sqlite::memory:`) is neither durable nor
/// shared between processes: `capabilities` says so for such a store.
pub(crate) const INFO: BackendInfo = BackendInfo::new("sqlite")
    .schemes(&["sqlite"])
    .db_system("sqlite")
    .capabilities(Capabilities::all().native_expiry(false));

/// A failure inside blocking database work: SQLite's own, or an agentmem error already typed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// SQLite (or rusqlite) failed.
    Sql(rusqlite::Error),
    /// Something already expressed as an agentmem error (not found, invalid input, …).
    Agent(Error),
    /// A stored value does not decode (the database was changed by something else).
    Corrupt(String),
}

/// `Result` for blocking work on a connection.
pub(crate) type SqlResult<T> = std::result::Result<T, Failure>;

impl From<rusqlite::Error> for Failure {
    fn from(e: rusqlite::Error) -> Self {
        Failure::Sql(e)
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Agent(e)
    }
}

impl Failure {
    /// The agentmem error for this failure on database `db` (a path or `:memory:`).
    pub(crate) fn into_error(self, db: &str) -> Error {
        match self {
            Failure::Agent(e) => e,
            Failure::Corrupt(what) => {
                Error::corrupt(format!("database `{db}` holds an unreadable {what}"))
            }
            Failure::Sql(e) => map_sqlite(e, db),
        }
    }
}

/// Maps a rusqlite error on database `db` to an agentmem error, keeping it as the source.
pub(crate) fn map_sqlite(e: rusqlite::Error, db: &str) -> Error {
    let (kind, message) = match &e {
        rusqlite::Error::SqliteFailure(failure, _) => match failure.code {
            ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => (
                ErrorKind::Unavailable,
                format!("database `{db}` stayed locked by another writer past the busy timeout"),
            ),
            ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt => (
                ErrorKind::CorruptData,
                format!("`{db}` is not a SQLite database, or it is damaged"),
            ),
            ErrorCode::ConstraintViolation => (
                ErrorKind::Conflict,
                format!("the write contradicts data stored in `{db}` (constraint violation)"),
            ),
            ErrorCode::DiskFull
            | ErrorCode::SystemIoFailure
            | ErrorCode::CannotOpen
            | ErrorCode::ReadOnly
            | ErrorCode::PermissionDenied
            | ErrorCode::FileLockingProtocolFailed
            | ErrorCode::NoLargeFileSupport
            | ErrorCode::OutOfMemory => (
                ErrorKind::Unavailable,
                format!("cannot read or write database `{db}`"),
            ),
            _ => (ErrorKind::Backend, format!("SQLite failed on `{db}`")),
        },
        rusqlite::Error::FromSqlConversionFailure(..)
        | rusqlite::Error::IntegralValueOutOfRange(..)
        | rusqlite::Error::Utf8Error(..)
        | rusqlite::Error::InvalidColumnType(..) => (
            ErrorKind::CorruptData,
            format!("a value stored in `{db}` has an unexpected type"),
        ),
        _ => (ErrorKind::Backend, format!("SQLite failed on `{db}`")),
    };
    Error::new(kind, message).with_source(e)
}

/// A stored value that does not decode: the database was changed by something else.
pub(crate) fn corrupt(what: impl std::fmt::Display) -> Failure {
    Failure::Corrupt(what.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sqlite_error(code: i32) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), Some("x".into()))
    }

    #[test]
    fn kinds() {
        use rusqlite::ffi;
        for (code, kind) in [
            (ffi::SQLITE_BUSY, ErrorKind::Unavailable),
            (ffi::SQLITE_LOCKED, ErrorKind::Unavailable),
            (ffi::SQLITE_NOTADB, ErrorKind::CorruptData),
            (ffi::SQLITE_CORRUPT, ErrorKind::CorruptData),
            (ffi::SQLITE_CONSTRAINT, ErrorKind::Conflict),
            (ffi::SQLITE_FULL, ErrorKind::Unavailable),
            (ffi::SQLITE_IOERR, ErrorKind::Unavailable),
            (ffi::SQLITE_ERROR, ErrorKind::Backend),
        ] {
            let err = map_sqlite(sqlite_error(code), "/tmp/x.db");
            assert_eq!(err.kind(), kind, "code {code}");
            assert!(err.to_string().contains("/tmp/x.db"), "{err}");
            assert!(std::error::Error::source(&err).is_some());
        }
    }
}
