//! The conformance cases, one public `async fn(&dyn AgentMemory)` each, grouped by area.
//!
//! Every case gets a fresh, empty store of its own and panics with a message naming the
//! violated rule. Cases never assert on elapsed time; where they need distinct `updated_at`
//! order they `pause` a few milliseconds between writes. They leave backends free in how they
//! rank and stem: a case asserts what must match and what must not, never that another form
//! of a word does not match.

use std::fmt::Debug;
use std::time::Duration;

use agentmem_core::{AgentMemory, ErrorKind, Message, Metadata, Result, Session, SessionId};

mod compaction;
mod concurrency;
mod history;
mod memories;
mod misc;
mod round_trip;
mod search;
mod sessions;

pub use compaction::*;
pub use concurrency::*;
pub use history::*;
pub use memories::*;
pub use misc::*;
pub use round_trip::*;
pub use search::*;
pub use sessions::*;

/// A session id the test knows to be valid.
pub(crate) fn sid(name: &str) -> SessionId {
    SessionId::new(name).unwrap_or_else(|e| panic!("test session id {name:?} must be valid: {e}"))
}

/// Metadata from a JSON object literal.
pub(crate) fn metadata(value: serde_json::Value) -> Metadata {
    match value {
        serde_json::Value::Object(map) => map,
        other => panic!("test metadata must be a JSON object, got {other}"),
    }
}

/// Asserts that `result` failed with `kind`.
pub(crate) fn assert_kind<T: Debug>(result: Result<T>, kind: ErrorKind, what: &str) {
    match result {
        Ok(value) => panic!("{what}: expected a `{kind}` error, got Ok({value:?})"),
        Err(e) => assert_eq!(
            e.kind(),
            kind,
            "{what}: expected a `{kind}` error, got: {e}"
        ),
    }
}

/// Sleeps long enough that the next write gets a later timestamp than the previous one.
/// Ordering needs only distinct timestamps, so a few milliseconds suffice even on a
/// microsecond-precision backend.
pub(crate) async fn pause() {
    tokio::time::sleep(Duration::from_millis(5)).await;
}

/// Loads a session that must exist.
pub(crate) async fn load_some(
    store: &dyn AgentMemory,
    id: &SessionId,
    limit: Option<usize>,
    what: &str,
) -> Session {
    store
        .load(id, limit)
        .await
        .unwrap_or_else(|e| panic!("{what}: load({id}, {limit:?}) failed: {e}"))
        .unwrap_or_else(|| panic!("{what}: session {id} must exist, load returned None"))
}

/// The contents of `messages`, for readable assertion output.
pub(crate) fn contents(messages: &[Message]) -> Vec<&str> {
    messages.iter().map(|m| m.content.as_str()).collect()
}

/// The ids of `messages`.
pub(crate) fn ids(messages: &[Message]) -> Vec<&str> {
    messages.iter().map(|m| m.id.as_str()).collect()
}

/// `n` user messages with contents `{prefix} 0`, `{prefix} 1`, …
pub(crate) fn numbered(prefix: &str, n: usize) -> Vec<Message> {
    (0..n)
        .map(|i| Message::user(format!("{prefix} {i}")))
        .collect()
}
