//! Validated names and ids: session ids, agent names, message ids and memory ids.
//!
//! Every backend builds file paths, Redis keys, SQL rows and Mongo documents from these
//! names, so they are validated once, here, and nowhere else. A name is 1 to
//! [`MAX_NAME_BYTES`] bytes of Unicode letters and digits plus `_ - . @ +` and interior
//! single spaces. That rules out path separators, `..`, NUL and control characters, Redis
//! glob characters (`* ? [ ] \`), the `:` used to build Redis keys, and a leading `$` or `.`
//! that MongoDB would read as an operator or a field path. Distinct valid names never map
//! to the same key: nothing is escaped or folded. (On a file system that ignores case, two
//! names differing only in case would share a folder: the file backend detects it and
//! refuses the second spelling with `Conflict`.)

use std::borrow::Borrow;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The longest name accepted, in bytes of UTF-8 (file systems allow 255 per component).
pub const MAX_NAME_BYTES: usize = 128;

/// Checks `value` against the naming rules; `what` names the thing in the error message.
///
/// ```
/// use agentmem_core::validate_name;
/// assert!(validate_name("session id", "history_1a2b3c4d").is_ok());
/// let err = validate_name("session id", "../etc").unwrap_err();
/// assert!(err.to_string().contains("`..`"));
/// ```
pub fn validate_name(what: &str, value: &str) -> Result<()> {
    let invalid = |why: String| {
        Err(Error::invalid_input(format!(
            "invalid {what} {:?}: {why}",
            truncate_for_message(value)
        )))
    };
    if value.is_empty() {
        return invalid("it is empty".into());
    }
    if value.len() > MAX_NAME_BYTES {
        return invalid(format!(
            "it is {} bytes long, the limit is {MAX_NAME_BYTES}",
            value.len()
        ));
    }
    if value.contains("..") {
        return invalid("it contains `..`".into());
    }
    if value.starts_with('.') {
        return invalid("it starts with `.`".into());
    }
    if value.starts_with(' ') || value.ends_with(' ') {
        return invalid("it starts or ends with a space".into());
    }
    if value.contains("  ") {
        return invalid("it contains two spaces in a row".into());
    }
    for c in value.chars() {
        let ok = c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '@' | '+' | ' ');
        if !ok {
            let why = match c {
                '/' | '\\' => "it contains a path separator".to_string(),
                '\0' => "it contains a NUL character".to_string(),
                c if c.is_control() => format!("it contains the control character {c:?}"),
                '*' | '?' | '[' | ']' => format!("it contains the glob character `{c}`"),
                '$' => "it contains `$`, which MongoDB reads as an operator".to_string(),
                c => format!("it contains the character {c:?}; allowed are letters, digits, `_ - . @ +` and single interior spaces"),
            };
            return invalid(why);
        }
    }
    Ok(())
}

fn truncate_for_message(value: &str) -> String {
    const SHOWN: usize = 40;
    if value.chars().count() <= SHOWN {
        value.to_string()
    } else {
        let head: String = value.chars().take(SHOWN).collect();
        format!("{head}…")
    }
}

/// Checks an id (of a message or a memory item): 1 to [`MAX_NAME_BYTES`] bytes without control
/// characters. Ids come from other systems (OpenAI's `msg_…`, PraisonAI's, uuids), so they are
/// not held to the naming rules; every backend stores them as values, never as paths or keys.
fn validate_id(what: &str, value: &str) -> Result<()> {
    if value.is_empty() || value.len() > MAX_NAME_BYTES || value.chars().any(char::is_control) {
        return Err(Error::invalid_input(format!(
            "invalid {what} {:?}: it must be 1-{MAX_NAME_BYTES} bytes without control characters",
            truncate_for_message(value)
        )));
    }
    Ok(())
}

macro_rules! validated_name {
    ($(#[$doc:meta])* $name:ident, $what:literal) => {
        validated_name!($(#[$doc])* $name, $what, validate_name);
    };
    ($(#[$doc:meta])* $name:ident, $what:literal, $validate:ident) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// Validates `value` and wraps it.
            pub fn new(value: impl Into<String>) -> Result<Self> {
                let value = value.into();
                $validate($what, &value)?;
                Ok(Self(value))
            }

            /// The name as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The owned string.
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl FromStr for $name {
            type Err = Error;
            fn from_str(s: &str) -> Result<Self> {
                Self::new(s)
            }
        }

        impl TryFrom<&str> for $name {
            type Error = Error;
            fn try_from(s: &str) -> Result<Self> {
                Self::new(s)
            }
        }

        impl TryFrom<String> for $name {
            type Error = Error;
            fn try_from(s: String) -> Result<Self> {
                Self::new(s)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl From<$name> for String {
            fn from(name: $name) -> String {
                name.0
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?})", stringify!($name), self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                Self::new(s).map_err(serde::de::Error::custom)
            }
        }
    };
}

validated_name!(
    /// The id of a session: one agent's conversation (for the file backend, its folder name).
    ///
    /// ```
    /// use agentmem_core::SessionId;
    /// let id: SessionId = "ResearchAgent".parse().unwrap();
    /// assert_eq!(id.as_str(), "ResearchAgent");
    /// assert!("a/b".parse::<SessionId>().is_err());
    /// ```
    SessionId,
    "session id"
);

validated_name!(
    /// The name of an agent, used as a message role and to derive session ids.
    AgentName,
    "agent name"
);

validated_name!(
    /// The id of an archive within its session. Backends choose it (the file backend uses
    /// `history_%Y-%m-%d_%H-%M-%S`, with a suffix when two land in one second); it follows the
    /// same rules as other names because it may become a file name.
    ArchiveId,
    "archive id"
);

validated_name!(
    /// The id of a message, unique within the store and kept across backends (migration and
    /// de-duplication rely on it).
    ///
    /// ```
    /// use agentmem_core::MessageId;
    /// let id: MessageId = "msg_0a1b".parse().unwrap();
    /// assert_eq!(id, "msg_0a1b");
    /// assert!("".parse::<MessageId>().is_err());
    /// assert!("a\nb".parse::<MessageId>().is_err());
    /// assert_ne!(MessageId::random(), MessageId::random());
    /// ```
    MessageId,
    "message id",
    validate_id
);

validated_name!(
    /// The id of a memory item, unique within the store.
    MemoryId,
    "memory id",
    validate_id
);

validated_name!(
    /// The id of a checkpoint thread (LangGraph's `thread_id`): any UTF-8 but NUL, 1 to
    /// [`MAX_THREAD_KEY_BYTES`] bytes. Thread ids come from applications (`user:42/chat`,
    /// `a*b`, spaces), so backends escape or hash them; they are never used as paths as they are.
    ///
    /// ```
    /// use agentmem_core::ThreadId;
    /// let id: ThreadId = "user:42/chat $1 *".parse().unwrap();
    /// assert_eq!(id.as_str(), "user:42/chat $1 *");
    /// assert!("".parse::<ThreadId>().is_err());
    /// assert!("a\0b".parse::<ThreadId>().is_err());
    /// ```
    ThreadId,
    "thread id",
    validate_thread_key
);

validated_name!(
    /// A checkpoint namespace within a thread (LangGraph's `checkpoint_ns`): `""` for the root
    /// graph, `node:<task id>` (and deeper, `|`-separated) for subgraphs. Any UTF-8 but NUL, at
    /// most [`MAX_THREAD_KEY_BYTES`] bytes.
    ///
    /// ```
    /// use agentmem_core::CheckpointNs;
    /// assert!(CheckpointNs::root().is_root());
    /// let child: CheckpointNs = "node:1|inner:2".parse().unwrap();
    /// assert!(!child.is_root());
    /// ```
    CheckpointNs,
    "checkpoint namespace",
    validate_thread_key
);

validated_name!(
    /// The id of a checkpoint, unique within its thread and namespace. Ids order checkpoints:
    /// a later checkpoint has a greater id, compared byte by byte (LangGraph's ids are
    /// time-ordered UUIDs in lowercase hex). 1 to [`MAX_NAME_BYTES`] bytes without control
    /// characters.
    CheckpointId,
    "checkpoint id",
    validate_id
);

impl CheckpointNs {
    /// The root namespace, `""`.
    pub fn root() -> Self {
        CheckpointNs(String::new())
    }

    /// Whether this is the root namespace.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }
}

impl Default for CheckpointNs {
    fn default() -> Self {
        CheckpointNs::root()
    }
}

/// The longest thread id or checkpoint namespace accepted, in bytes of UTF-8.
pub const MAX_THREAD_KEY_BYTES: usize = 512;

/// Checks a thread id or a checkpoint namespace: at most [`MAX_THREAD_KEY_BYTES`] bytes and no
/// NUL (no backend can hold one in a key); a thread id is not empty, the root namespace is.
fn validate_thread_key(what: &str, value: &str) -> Result<()> {
    let why = if value.is_empty() && what == "thread id" {
        "it is empty".to_string()
    } else if value.len() > MAX_THREAD_KEY_BYTES {
        format!(
            "it is {} bytes long, the limit is {MAX_THREAD_KEY_BYTES}",
            value.len()
        )
    } else if value.contains('\0') {
        "it contains a NUL character".to_string()
    } else {
        return Ok(());
    };
    Err(Error::invalid_input(format!(
        "invalid {what} {:?}: {why}",
        truncate_for_message(value)
    )))
}

/// What message and memory ids have beyond the validated-name basics: fresh and derived ids,
/// and reading as the opaque strings they are.
macro_rules! opaque_id {
    ($($name:ident),*) => {$(
        impl $name {
            /// A new random id (32 lowercase hex digits).
            pub fn random() -> Self {
                Self(uuid::Uuid::new_v4().simple().to_string())
            }

            /// An id derived from `digest` (the first 16 bytes of a hash of what the id stands
            /// for), as 32 lowercase hex digits: the same digest always gives the same id.
            pub fn from_digest(digest: &[u8; 16]) -> Self {
                use std::fmt::Write;
                let mut hex = String::with_capacity(32);
                for byte in digest {
                    let _ = write!(hex, "{byte:02x}");
                }
                Self(hex)
            }
        }

        /// Ids are opaque strings to every reader, so an id reads as one.
        impl std::ops::Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl From<$name> for serde_json::Value {
            fn from(id: $name) -> serde_json::Value {
                serde_json::Value::String(id.0)
            }
        }
    )*};
}

opaque_id!(MessageId, MemoryId);

impl From<AgentName> for SessionId {
    /// Swarms keys an agent's memory by its name, so an agent name is a valid session id.
    fn from(name: AgentName) -> Self {
        SessionId(name.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_names() {
        for ok in [
            "a",
            "ResearchAgent",
            "history_1a2b3c4d",
            "user_123",
            "a.b",
            "a_b",
            "a b",
            "bob@example.com",
            "Agent-7+x",
            "エージェント",
            "ü",
        ] {
            assert!(SessionId::new(ok).is_ok(), "{ok} should be accepted");
        }
    }

    #[test]
    fn rejects_unsafe_names_with_reason() {
        let cases = [
            ("", "empty"),
            ("../x", "`..`"),
            ("..", "`..`"),
            ("/etc/passwd", "path separator"),
            ("a/b", "path separator"),
            ("a\\b", "path separator"),
            ("a\0b", "NUL"),
            ("a\nb", "control"),
            ("key*", "glob"),
            ("k?y", "glob"),
            ("[a]", "glob"),
            ("$where", "MongoDB"),
            (".hidden", "starts with `.`"),
            (" a", "space"),
            ("a ", "space"),
            ("a  b", "two spaces"),
            ("a:b", "allowed are"),
            ("a'b", "allowed are"),
        ];
        for (bad, why) in cases {
            let err = SessionId::new(bad).unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::InvalidInput, "{bad:?}");
            assert!(err.to_string().contains(why), "{bad:?}: {err}");
        }
        let long = "x".repeat(10_000);
        let err = SessionId::new(long).unwrap_err();
        assert!(err.to_string().contains("limit is 128"), "{err}");
        assert!(
            err.to_string().len() < 200,
            "message must not echo the whole name"
        );
        assert!(SessionId::new("x".repeat(MAX_NAME_BYTES)).is_ok());
    }

    #[test]
    fn deserialize_validates() {
        assert!(serde_json::from_str::<SessionId>("\"../x\"").is_err());
        let id: SessionId = serde_json::from_str("\"ok\"").unwrap();
        assert_eq!(id.as_str(), "ok");
    }
}
