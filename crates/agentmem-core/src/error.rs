//! The one error type every agentmem crate returns.

use std::borrow::Cow;
use std::fmt;

use crate::operation::Operation;

/// A boxed error source kept inside an [`Error`].
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// `Result` with agentmem's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong, in terms a caller can act on.
///
/// Match on the kind, not on the message: the message is for people. The enum is
/// `#[non_exhaustive]`, so a `match` needs a catch-all arm.
///
/// ```
/// use agentmem_core::{AgentMemory, MemoryStore, SessionStore, Error, ErrorKind, InMemoryStore, SessionId};
///
/// fn what_to_do(err: &Error) -> &'static str {
///     match err.kind() {
///         ErrorKind::NotFound => "start a new session",
///         ErrorKind::InvalidInput => "fix the request",
///         _ if err.is_temporary() => "retry later",
///         _ => "report it",
///     }
/// }
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let missing: SessionId = "never-written".parse()?;
/// let err = InMemoryStore::new().compact(&missing, &[]).await.unwrap_err();
/// assert_eq!(what_to_do(&err), "start a new session");
/// assert_eq!(what_to_do(&Error::unavailable("connection refused")), "retry later");
/// assert_eq!(what_to_do(&Error::corrupt("torn record")), "report it");
/// # Ok::<(), agentmem_core::Error>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The session, archive or memory item does not exist.
    NotFound,
    /// The caller passed something unusable: an unsafe name, a malformed URL, a bad option.
    InvalidInput,
    /// The operation lost a race or contradicts stored state (for example a duplicate key).
    Conflict,
    /// The backend could not be reached or refused service; retrying later may succeed.
    Unavailable,
    /// Stored data could not be read back: a torn record, a malformed file, a foreign database.
    CorruptData,
    /// The backend or this build does not support the operation (for example a missing cargo feature).
    Unsupported,
    /// Any other failure inside the backend (I/O, driver, server error).
    Backend,
}

impl ErrorKind {
    /// A short, stable, lowercase name for the kind.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::NotFound => "not found",
            ErrorKind::InvalidInput => "invalid input",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::CorruptData => "corrupt data",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Backend => "backend",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// agentmem's error: a [`ErrorKind`], a message, the operation and backend it came from,
/// and the underlying source error when there is one.
///
/// ```
/// use agentmem_core::{Error, ErrorKind};
/// use agentmem_core::Operation;
/// let err = Error::new(ErrorKind::NotFound, "session `demo` does not exist")
///     .with_operation(Operation::Load);
/// assert_eq!(err.kind(), ErrorKind::NotFound);
/// assert_eq!(err.to_string(), "not found: session `demo` does not exist (during load)");
/// ```
pub struct Error {
    kind: ErrorKind,
    message: Cow<'static, str>,
    operation: Option<Operation>,
    backend: Option<&'static str>,
    source: Option<BoxError>,
}

/// The shorthand constructors of [`Error`], one per kind: `name => Kind` makes `Error::name`.
macro_rules! kind_constructors {
    ($($name:ident => $kind:ident),* $(,)?) => {
        $(
            #[doc = concat!("Shorthand for [`ErrorKind::", stringify!($kind), "`].")]
            pub fn $name(message: impl Into<Cow<'static, str>>) -> Self {
                Self::new(ErrorKind::$kind, message)
            }
        )*
    };
}

impl Error {
    /// A new error of `kind` with a human-readable message.
    pub fn new(kind: ErrorKind, message: impl Into<Cow<'static, str>>) -> Self {
        Error {
            kind,
            message: message.into(),
            operation: None,
            backend: None,
            source: None,
        }
    }

    kind_constructors! {
        invalid_input => InvalidInput,
        not_found => NotFound,
        corrupt => CorruptData,
        unavailable => Unavailable,
        unsupported => Unsupported,
        conflict => Conflict,
        backend => Backend,
    }

    crate::setters! {
        /// Keep `source` as the cause of this error.
        pub fn with_source(source: impl Into<BoxError>) { self.source = Some(source.into()) }

        /// Record the operation that failed.
        pub fn with_operation(operation: Operation) { self.operation = Some(operation) }

        /// Record the backend (`file`, `sqlite`, …) that failed.
        pub fn with_backend(backend: &'static str) { self.backend = Some(backend) }
    }

    /// What went wrong.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The human-readable message, without kind, operation or source.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The operation that failed, when recorded.
    pub fn operation(&self) -> Option<Operation> {
        self.operation
    }

    /// The backend that failed, when recorded.
    pub fn backend_name(&self) -> Option<&'static str> {
        self.backend
    }

    /// Whether retrying later may succeed (the backend was unavailable).
    pub fn is_temporary(&self) -> bool {
        self.kind == ErrorKind::Unavailable
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)?;
        match (self.backend, self.operation) {
            (Some(b), Some(op)) => write!(f, " (during {b} {op})")?,
            (None, Some(op)) => write!(f, " (during {op})")?,
            (Some(b), None) => write!(f, " (in {b} backend)")?,
            (None, None) => {}
        }
        if let Some(source) = &self.source {
            write!(f, ": {source}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("kind", &self.kind).field("message", &self.message);
        if let Some(op) = self.operation {
            d.field("operation", &op);
        }
        if let Some(b) = self.backend {
            d.field("backend", &b);
        }
        if let Some(s) = &self.source {
            d.field("source", s);
        }
        d.finish()
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_ref()
            .map(|s| s.as_ref() as &(dyn std::error::Error + 'static))
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        let kind = if e.is_io() {
            ErrorKind::Backend
        } else {
            ErrorKind::CorruptData
        };
        Error::new(kind, "malformed JSON").with_source(e)
    }
}

impl From<std::io::Error> for Error {
    /// Maps I/O errors to kinds (see [`Error::io`]), with the message "I/O error".
    fn from(e: std::io::Error) -> Self {
        Error::io("I/O error", e)
    }
}

impl Error {
    /// An error for a failed I/O call, with `message` saying what was being done. The kind
    /// follows the I/O error: missing files are `not found`, permission problems and a full
    /// disk are `unavailable`, malformed data is `corrupt data`, the rest `backend`.
    ///
    /// ```
    /// use agentmem_core::{Error, ErrorKind};
    /// let full = std::io::Error::new(std::io::ErrorKind::StorageFull, "no space left");
    /// let err = Error::io("could not write the export", full);
    /// assert_eq!(err.kind(), ErrorKind::Unavailable);
    /// assert_eq!(err.to_string(), "unavailable: could not write the export: no space left");
    /// ```
    pub fn io(message: impl Into<Cow<'static, str>>, e: std::io::Error) -> Self {
        use std::io::ErrorKind as Io;
        let kind = match e.kind() {
            Io::NotFound => ErrorKind::NotFound,
            Io::PermissionDenied | Io::StorageFull | Io::ReadOnlyFilesystem | Io::QuotaExceeded => {
                ErrorKind::Unavailable
            }
            Io::InvalidData | Io::UnexpectedEof => ErrorKind::CorruptData,
            Io::InvalidInput => ErrorKind::InvalidInput,
            _ => ErrorKind::Backend,
        };
        Error::new(kind, message).with_source(e)
    }
}

/// `error` as one line: newlines inside messages (some drivers' errors have them) become
/// spaces, so scripts, logs and tool results always get exactly one line.
///
/// ```
/// assert_eq!(agentmem_core::one_line(&"connection refused\n  retrying\n"), "connection refused retrying");
/// ```
pub fn one_line(error: &dyn fmt::Display) -> String {
    error
        .to_string()
        .split(['\n', '\r'])
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn display_includes_kind_operation_backend_and_source() {
        let io = std::io::Error::new(std::io::ErrorKind::StorageFull, "disk full");
        let err = Error::from(io)
            .with_operation(Operation::Append)
            .with_backend("file");
        assert_eq!(err.kind(), ErrorKind::Unavailable);
        assert_eq!(
            err.to_string(),
            "unavailable: I/O error (during file append): disk full"
        );
        assert!(err.source().is_some());
    }

    #[test]
    fn json_syntax_errors_are_corrupt_data() {
        let e = serde_json::from_str::<serde_json::Value>("{").unwrap_err();
        assert_eq!(Error::from(e).kind(), ErrorKind::CorruptData);
    }
}
