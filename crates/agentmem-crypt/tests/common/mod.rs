//! What the crypt crate's tests share: stores as trait objects, session, thread and checkpoint
//! ids, keys and the encryption layer over a raw store.
#![allow(
    dead_code,
    reason = "shared by several test binaries, each using part of it"
)]

use std::sync::Arc;

use agentmem_core::{AgentMemory, AgentMemoryExt, CheckpointKey, SessionId, ThreadId};
use agentmem_crypt::{EncryptLayer, MasterKey};

/// A raw store, as the tests hold it.
pub type Store = Arc<dyn AgentMemory>;

pub fn sid(name: &str) -> SessionId {
    name.parse().expect("a valid session id")
}

pub fn thread(name: &str) -> ThreadId {
    name.parse().expect("a valid thread id")
}

/// The checkpoint `id` of `thread_name` in namespace `ns`.
pub fn at(thread_name: &str, ns: &str, id: &str) -> CheckpointKey {
    CheckpointKey {
        thread: thread(thread_name),
        ns: ns.parse().expect("a valid namespace"),
        id: id.parse().expect("a valid checkpoint id"),
    }
}

/// A new random key.
pub fn key() -> MasterKey {
    MasterKey::generate().expect("a random key")
}

/// `raw` wearing the encryption layer with `key`.
pub fn with_key(raw: &Store, key: &MasterKey) -> impl AgentMemory {
    raw.clone().with_layer(EncryptLayer::new(key))
}

/// Why the layer refused, when it was a [`CryptoError`](agentmem_crypt::CryptoError).
pub fn crypto_error(err: &agentmem_core::Error) -> Option<&agentmem_crypt::CryptoError> {
    std::error::Error::source(err).and_then(|s| s.downcast_ref())
}
