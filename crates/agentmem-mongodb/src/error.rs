//! Mapping driver errors to agentmem's [`ErrorKind`]s.

use agentmem_core::backend::BackendInfo;
use agentmem_core::Capabilities;
use agentmem_core::{Error, ErrorKind};
use mongodb::error::{Error as DriverError, ErrorKind as DriverKind, WriteFailure};

/// The backend name: [`SessionStore::backend`](agentmem_core::SessionStore::backend), and the
/// label the layers put on this backend's errors.
/// The MongoDB backend. Atomic compaction, indexed search and native expiry depend on the
/// server (transactions, `$text`, TTL indexes): `capabilities` answers for the one connected.
pub(crate) const INFO: BackendInfo = BackendInfo::new("mongodb")
    .schemes(&["mongodb", "mongodb+srv"])
    .db_system("mongodb")
    .remote()
    .capabilities(
        Capabilities::new()
            .durable(true)
            .cross_process(true)
            .checkpoints(true)
            .graph(true)
            .vectors(true),
    );

/// The backend name: what `SessionStore::backend` reports and errors are labelled with.
pub(crate) const BACKEND: &str = INFO.name;

/// Server error code for a unique-index violation.
pub(crate) const DUPLICATE_KEY: i32 = 11000;
/// Server error code for a write that conflicted with a concurrent transaction.
pub(crate) const WRITE_CONFLICT: i32 = 112;
/// Server error code for an index option the server cannot build (no text indexes, say).
pub(crate) const CANNOT_CREATE_INDEX: i32 = 67;
/// Server error code for dropping an index that does not exist.
pub(crate) const INDEX_NOT_FOUND: i32 = 27;
/// Server error code for a command on a collection that does not exist.
pub(crate) const NAMESPACE_NOT_FOUND: i32 = 26;

/// The server's error code, wherever the driver put it.
pub(crate) fn server_code(e: &DriverError) -> Option<i32> {
    match e.kind.as_ref() {
        DriverKind::Command(c) => Some(c.code),
        DriverKind::Write(WriteFailure::WriteError(w)) => Some(w.code),
        DriverKind::Write(WriteFailure::WriteConcernError(w)) => Some(w.code),
        DriverKind::InsertMany(m) => m
            .write_errors
            .as_ref()
            .and_then(|errors| errors.first())
            .map(|w| w.code),
        _ => None,
    }
}

/// Whether retrying the whole operation may succeed because it lost a race with a
/// transaction (write conflicts, transient transaction errors).
pub(crate) fn is_transient(e: &DriverError) -> bool {
    e.contains_label(mongodb::error::TRANSIENT_TRANSACTION_ERROR)
        || server_code(e) == Some(WRITE_CONFLICT)
}

/// Whether the server could not be reached at all (server selection, I/O, a cleared pool, a
/// shut-down client): another try waits out server selection again, so it is worth at most
/// one or two more tries, never a long retry loop.
pub(crate) fn is_unreachable(e: &DriverError) -> bool {
    matches!(
        e.kind.as_ref(),
        DriverKind::ServerSelection { .. }
            | DriverKind::Io(_)
            | DriverKind::ConnectionPoolCleared { .. }
            | DriverKind::Shutdown
    )
}

/// Whether the server could not be reached because rustls refused its certificate. The
/// driver keeps only the text of why server selection failed, in which rustls' refusals read
/// "invalid peer certificate: …".
fn tls_refused(e: &DriverError) -> bool {
    e.to_string().contains("invalid peer certificate")
}

/// Maps a driver error to an agentmem error of the right kind, keeping it as the source.
///
/// Unreachable servers (server selection, I/O, a cleared pool, a shut-down client) are
/// `Unavailable`, saying so when the TLS handshake refused the server's certificate; a
/// duplicate key is `Conflict`; a stored document the driver cannot decode is `CorruptData`;
/// the rest is `Backend`. Not labelled: the layers add the backend and the
/// operation.
pub(crate) fn from_driver(e: DriverError) -> Error {
    let (kind, message) = match e.kind.as_ref() {
        _ if is_unreachable(&e) && tls_refused(&e) => (
            ErrorKind::Unavailable,
            "MongoDB server unavailable: the TLS handshake failed (is the server's certificate from a trusted CA, and issued for this host name?)",
        ),
        _ if is_unreachable(&e) => (ErrorKind::Unavailable, "MongoDB server unavailable"),
        DriverKind::Authentication { .. } => {
            (ErrorKind::Unavailable, "MongoDB refused the credentials")
        }
        DriverKind::BsonDeserialization(_) => (
            ErrorKind::CorruptData,
            "a stored document could not be decoded",
        ),
        DriverKind::InvalidArgument { .. } => (ErrorKind::InvalidInput, "invalid argument"),
        _ if server_code(&e) == Some(DUPLICATE_KEY) => {
            (ErrorKind::Conflict, "a document with the same key exists")
        }
        // The server is shutting down or stepping down; another try may reach a new primary.
        _ if e.contains_label("RetryableWriteError")
            || matches!(
                server_code(&e),
                Some(91 | 189 | 10107 | 11600 | 11602 | 13435 | 13436)
            ) =>
        {
            (ErrorKind::Unavailable, "MongoDB server unavailable")
        }
        _ => (ErrorKind::Backend, "MongoDB operation failed"),
    };
    Error::new(kind, message).with_source(e)
}

/// Extension to map driver results in one call.
pub(crate) trait ResultExt<T> {
    /// Maps the error with [`from_driver`].
    fn mapped(self) -> agentmem_core::Result<T>;
}

impl<T> ResultExt<T> for Result<T, DriverError> {
    fn mapped(self) -> agentmem_core::Result<T> {
        self.map_err(from_driver)
    }
}
