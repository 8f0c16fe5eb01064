//! The agent's side of the seed protocol ([`ContextStore`](agentmem_core::ContextStore)): what a
//! protocol-only agent refuses.

use agentmem_core::{Error, Operation};

/// The name errors of a protocol-only agent are labelled with, in place of a backend's.
pub(crate) const PROTOCOL_BACKEND: &str = "context_store";

/// The error for `operation`, which a protocol-only agent cannot do: its store has only
/// `get_context` and `save_session`.
pub(crate) fn refused(operation: Operation) -> Error {
    Error::unsupported(format!(
        "{operation} is not part of the ContextStore protocol (get_context, save_session) \
         that this agent's store implements; it needs a full store (AgentMemory, Agent::new)"
    ))
    .with_operation(operation)
    .with_backend(PROTOCOL_BACKEND)
}
