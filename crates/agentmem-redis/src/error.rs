//! Turning redis-rs errors into agentmem's [`Error`] with the right [`ErrorKind`].
//!
//! The helpers only choose the kind and message: which backend and operation an error came
//! from is added by the standard layer stack (`agentmem_core::layer::Traced`) that every
//! constructor wraps the store in.

use agentmem_core::{Error, ErrorKind};
use redis::{RedisError, ServerErrorKind};

/// Maps a redis-rs error, keeping it as the source:
/// - the server could not be reached, the connection broke or timed out, the server is
///   loading, read-only or busy, or refused the credentials → [`ErrorKind::Unavailable`];
/// - a transaction or pipeline that a cluster node refused only because it does not serve the
///   slot now (`MOVED`, `ASK`) or the cluster is down or busy, as while a master restarts and
///   the client's slot map is stale → [`ErrorKind::Unavailable`];
/// - a value of the wrong type or shape under the prefix → [`ErrorKind::CorruptData`];
/// - a bad client configuration → [`ErrorKind::InvalidInput`];
/// - anything else → [`ErrorKind::Backend`].
pub(crate) fn from_redis(error: RedisError) -> Error {
    use redis::ErrorKind as R;
    let code = error.code().unwrap_or_default();
    let (kind, message) = match error.kind() {
        // Checked first: servers report it as an extension error, scripts pass it through.
        _ if code == "WRONGTYPE" => (
            ErrorKind::CorruptData,
            "a key under the prefix holds data of another type",
        ),
        // A long script or a busy server: the request was refused, retrying may succeed.
        _ if code == "BUSY" => (ErrorKind::Unavailable, "Redis is busy running a script"),
        // Missing or wrong credentials, or an ACL that forbids a command: the server
        // refuses service (as a permission error on a file is `Unavailable` in agentmem).
        _ if matches!(code, "NOAUTH" | "WRONGPASS" | "NOPERM") => {
            (ErrorKind::Unavailable, "Redis refused the credentials")
        }
        R::Io if tls_refused(&error) => (
            ErrorKind::Unavailable,
            "the TLS handshake with Redis failed (is the server's certificate from a trusted CA, and issued for this host name?)",
        ),
        R::Io => (ErrorKind::Unavailable, "Redis is unreachable"),
        R::AuthenticationFailed | R::Server(ServerErrorKind::NoPerm) => {
            (ErrorKind::Unavailable, "Redis refused the credentials")
        }
        R::Server(
            ServerErrorKind::BusyLoading
            | ServerErrorKind::TryAgain
            | ServerErrorKind::MasterDown
            | ServerErrorKind::ClusterDown
            | ServerErrorKind::ReadOnly,
        ) => (ErrorKind::Unavailable, "Redis cannot serve requests now"),
        _ if cluster_transient(&error) => (
            ErrorKind::Unavailable,
            "a Redis Cluster node does not serve the store's slot now",
        ),
        R::UnexpectedReturnType | R::Parse => (
            ErrorKind::CorruptData,
            "Redis returned data of an unexpected shape",
        ),
        R::InvalidClientConfig => (
            ErrorKind::InvalidInput,
            "invalid Redis client configuration",
        ),
        _ => (ErrorKind::Backend, "Redis command failed"),
    };
    Error::new(kind, message).with_source(error)
}

/// Whether every command of a failed transaction or pipeline was refused for a reason that
/// passes once the cluster settles: a redirect (the node does not own the slot, or no longer
/// does), the cluster down, or a slot in migration. redis-rs follows redirects of single
/// commands itself, not those inside `MULTI`/`EXEC`.
fn cluster_transient(error: &RedisError) -> bool {
    error.clone().into_server_errors().is_some_and(|errors| {
        !errors.is_empty()
            && errors.iter().all(|(_, e)| {
                matches!(
                    e.kind(),
                    Some(
                        ServerErrorKind::Moved
                            | ServerErrorKind::Ask
                            | ServerErrorKind::TryAgain
                            | ServerErrorKind::ClusterDown
                    )
                )
            })
    })
}

/// Whether `error` is a TLS handshake rustls refused (an untrusted or wrongly named server
/// certificate, no common protocol version, …): redis-rs keeps tokio-rustls' `io::Error`, which
/// holds the `rustls::Error`, behind an `Arc` (its cluster client keeps only the text).
fn tls_refused(error: &RedisError) -> bool {
    #[cfg(feature = "tls")]
    {
        use std::error::Error as _;
        use std::sync::Arc;
        let is_rustls = |e: &(dyn std::error::Error + 'static)| {
            let e = match e.downcast_ref::<Arc<dyn std::error::Error + Send + Sync>>() {
                Some(shared) => &**shared as &(dyn std::error::Error + 'static),
                None => e,
            };
            e.is::<rustls::Error>()
                || e.downcast_ref::<std::io::Error>()
                    .and_then(std::io::Error::get_ref)
                    .is_some_and(|inner| inner.is::<rustls::Error>())
        };
        let mut source = error.source();
        while let Some(e) = source {
            if is_rustls(e) {
                return true;
            }
            source = e.source();
        }
        // The cluster client reports a failed first connect as text ("Failed to create initial
        // connections - Io: invalid peer certificate: UnknownIssuer"): rustls' wording of a
        // refused certificate.
        if error.to_string().contains("invalid peer certificate") {
            return true;
        }
    }
    #[cfg(not(feature = "tls"))]
    let _ = error;
    false
}

/// Stored JSON that does not parse as what it should be.
pub(crate) fn corrupt_json(what: &str, error: serde_json::Error) -> Error {
    Error::corrupt(format!("malformed {what} JSON in Redis")).with_source(error)
}

/// A value this crate could not encode as JSON (cannot happen for agentmem's own types).
pub(crate) fn encode_json(what: &str, error: serde_json::Error) -> Error {
    Error::backend(format!("could not encode {what} as JSON")).with_source(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_are_unavailable_and_keep_the_source() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let err = from_redis(RedisError::from(io));
        assert_eq!(err.kind(), ErrorKind::Unavailable);
        assert!(err.is_temporary());
        // Unlabelled here: the Traced layer adds backend and operation (tests/fault.rs
        // checks them on errors leaving a store).
        assert_eq!(err.operation(), None);
        assert!(std::error::Error::source(&err).is_some());
        assert!(err.to_string().contains("refused"), "{err}");
    }

    #[test]
    fn other_kinds() {
        let e = RedisError::from((redis::ErrorKind::UnexpectedReturnType, "shape"));
        assert_eq!(from_redis(e).kind(), ErrorKind::CorruptData);
        let e = RedisError::from((redis::ErrorKind::InvalidClientConfig, "bad"));
        assert_eq!(from_redis(e).kind(), ErrorKind::InvalidInput);
        let e = RedisError::from((redis::ErrorKind::Client, "other"));
        assert_eq!(from_redis(e).kind(), ErrorKind::Backend);
    }
}
