//! Session ids derived from a workspace and an agent name.

use agentmem_core::SessionId;
use sha2::{Digest, Sha256};

use crate::WorkspaceId;

/// The agent name used when none is given (or an empty one is), as PraisonAI does.
pub const DEFAULT_AGENT_NAME: &str = "agent";

/// The workspace-scoped session id of `agent` in `workspace`:
/// `history_` + the first 8 hex digits of sha256(`<workspace>:<agent>`).
///
/// `agent` defaults to [`DEFAULT_AGENT_NAME`] when `None` or empty. Ids from before workspace
/// scoping (a bare agent name) are never produced, so old name-only sessions are not adopted:
/// set [`GLOBAL_SESSIONS_ENV`](crate::GLOBAL_SESSIONS_ENV) or pass an explicit session id to
/// keep using one.
///
/// ```
/// use agentmem_workspace::{session_id, WorkspaceId};
/// assert_eq!(session_id(&WorkspaceId::Global, None).as_str(), "history_69b3b98c");
/// ```
pub fn session_id(workspace: &WorkspaceId, agent: Option<&str>) -> SessionId {
    let agent = agent
        .filter(|a| !a.is_empty())
        .unwrap_or(DEFAULT_AGENT_NAME);
    session_id_for_key(&format!("{workspace}:{agent}"))
}

/// `history_` + the first 8 hex digits of sha256(`key`): the hashing step of [`session_id`],
/// for callers that build the `<workspace>:<agent>` key themselves.
pub fn session_id_for_key(key: &str) -> SessionId {
    let digest = Sha256::digest(key.as_bytes());
    let mut id = String::with_capacity(16);
    id.push_str("history_");
    for byte in digest.iter().take(4) {
        id.push(hex_digit(byte >> 4));
        id.push(hex_digit(byte & 0x0f));
    }
    // `history_` + 8 lowercase hex digits satisfies every naming rule whatever the input.
    SessionId::new(id).expect("history_ followed by 8 hex digits is a valid session id")
}

fn hex_digit(nibble: u8) -> char {
    char::from_digit(u32::from(nibble), 16).unwrap_or('0')
}
