//! Mapping driver and pool failures onto agentmem's [`ErrorKind`]s.

use agentmem_core::backend::BackendInfo;
use agentmem_core::Capabilities;
use std::error::Error as _;

use agentmem_core::BoxError;
use agentmem_core::{Error, ErrorKind};
use deadpool_postgres::PoolError;
use tokio_postgres::error::SqlState;

use crate::tls::TlsHandshakeError;

/// The PostgreSQL backend: everything but expiry by the server (expired rows are skipped on
/// read and deleted by `purge`).
pub(crate) const INFO: BackendInfo = BackendInfo::new("postgres")
    .schemes(&["postgres", "postgresql"])
    .db_system("postgresql")
    .remote()
    .capabilities(Capabilities::all().native_expiry(false));

/// Whether `e` means the connection (not the statement) failed: the server could not be
/// reached, went away, or is shutting down. Such errors are [`ErrorKind::Unavailable`], and a
/// read that hits one may be retried on another connection.
pub(crate) fn is_connection_failure(e: &tokio_postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    if let Some(code) = e.code() {
        let code = code.code();
        // 08: connection exception; 57P01-57P03: admin/crash shutdown, cannot connect now;
        // 53300: too many connections.
        return code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03" | "53300");
    }
    // No server error: an I/O failure (refused, reset, broken pipe), a connect timeout, or no
    // TLS connection to be had (see `tls_failure`).
    e.source().is_some_and(|s| s.is::<std::io::Error>())
        || e.to_string() == "timeout waiting for server"
        || tls_failure(e).is_some()
}

/// What went wrong setting TLS up, when that is why `e` failed: the handshake (a refused
/// certificate, …), or a server that does not accept TLS where the `sslmode` requires it.
fn tls_failure(e: &tokio_postgres::Error) -> Option<String> {
    if let Some(handshake) = e
        .source()
        .and_then(|s| s.downcast_ref::<TlsHandshakeError>())
    {
        return Some(format!(
            "cannot connect to PostgreSQL over TLS: {handshake}"
        ));
    }
    // The driver's own refusal (sslmode require, verify-ca or verify-full): it has no error
    // type of its own to recognise.
    if e.to_string() != "error performing TLS handshake" {
        return None;
    }
    let cause = e.source().map(|s| s.to_string()).unwrap_or_default();
    Some(if cause == "server does not support TLS" {
        "the PostgreSQL server does not accept TLS, and the sslmode (require, verify-ca or \
         verify-full) never falls back to plaintext"
            .to_string()
    } else {
        format!("cannot connect to PostgreSQL over TLS: {cause}")
    })
}

/// The agentmem error for a driver error. (The layers label it with the backend and
/// operation.)
pub(crate) fn pg(e: tokio_postgres::Error) -> Error {
    if let Some(message) = tls_failure(&e) {
        // The message says it all (the handshake error is not repeated as a source).
        return Error::unavailable(message);
    }
    let kind = if is_connection_failure(&e) {
        ErrorKind::Unavailable
    } else {
        match e.code() {
            Some(c) if *c == SqlState::UNIQUE_VIOLATION => ErrorKind::Conflict,
            Some(c) if *c == SqlState::T_R_SERIALIZATION_FAILURE => ErrorKind::Conflict,
            Some(c) if *c == SqlState::T_R_DEADLOCK_DETECTED => ErrorKind::Conflict,
            // 22: data exception (a value the server will not store), 54: program limit
            // exceeded (a row or index entry too large).
            Some(c) if c.code().starts_with("22") || c.code().starts_with("54") => {
                ErrorKind::InvalidInput
            }
            _ => ErrorKind::Backend,
        }
    };
    // The driver's own Display is only a summary ("db error"); keep its cause (the server's
    // error with SQLSTATE, message and detail, or the I/O error) as the source, so the whole
    // message reads "… PostgreSQL error 57P01 (during postgres append): FATAL: terminating …".
    let message = match e.as_db_error() {
        Some(db) => format!("PostgreSQL error {}", db.code().code()),
        None if e.source().is_some() => format!("PostgreSQL: {e}"),
        None => "PostgreSQL driver error".to_string(),
    };
    let source: BoxError = if e.source().is_some() {
        e.into_source().unwrap_or_else(|| "unknown cause".into())
    } else {
        Box::new(e)
    };
    Error::new(kind, message).with_source(source)
}

/// The agentmem error for a failure to get a pooled connection.
pub(crate) fn pool(e: PoolError) -> Error {
    match e {
        PoolError::Backend(e) => pg(e),
        PoolError::Timeout(_) | PoolError::Closed => {
            Error::unavailable(format!("no PostgreSQL connection available: {e}")).with_source(e)
        }
        other => Error::backend(format!("PostgreSQL connection pool: {other}")).with_source(other),
    }
}
