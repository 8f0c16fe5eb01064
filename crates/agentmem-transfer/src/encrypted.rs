//! What a transfer needs to know of encryption without depending on `agentmem-crypt`: whether
//! a store is marked encrypted.

use agentmem_core::{AgentMemory, Result};

/// The store property an encrypted store is marked with: `agentmem-crypt`'s
/// `MARKER_PROPERTY`, written by an encryption layer on its first write and never removed.
pub const ENCRYPTION_MARKER: &str = "agentmem.encryption";

/// Whether `store` is marked encrypted (its store property [`ENCRYPTION_MARKER`] is set).
/// The marker is read the same way with a key, without one, or through no encryption layer
/// at all (store properties pass through every layer).
///
/// ```
/// use agentmem_core::InMemoryStore;
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = InMemoryStore::new();
/// assert!(!agentmem_transfer::is_encrypted(&store).await?);
/// # Ok::<(), agentmem_core::Error>(())
/// # }).unwrap();
/// ```
pub async fn is_encrypted(store: &dyn AgentMemory) -> Result<bool> {
    Ok(store.store_property(ENCRYPTION_MARKER).await?.is_some())
}
