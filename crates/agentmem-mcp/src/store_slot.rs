//! The store behind the server, opened on first use: a server started while its backend is
//! down comes up anyway, answers each call with an error naming the store, and serves normally
//! from the first call after the backend is back.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use agentmem_core::{one_line, AgentMemory, Error, Result};
use tokio::sync::Mutex;

/// What [`StoreOpener`] returns: the future of one attempt to open the store.
pub type OpenFuture = Pin<Box<dyn Future<Output = Result<Arc<dyn AgentMemory>>> + Send>>;

/// Opens the store; called on first use, and again on later calls while it fails.
pub type StoreOpener = Arc<dyn Fn() -> OpenFuture + Send + Sync>;

/// The store, once opened, and how to open it.
pub(crate) struct StoreSlot {
    display: String,
    opener: StoreOpener,
    opened: Mutex<Option<Arc<dyn AgentMemory>>>,
}

impl fmt::Debug for StoreSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreSlot")
            .field("display", &self.display)
            .finish_non_exhaustive()
    }
}

impl StoreSlot {
    pub(crate) fn new(display: String, opener: StoreOpener) -> Self {
        StoreSlot {
            display,
            opener,
            opened: Mutex::new(None),
        }
    }

    /// The store's name as errors show it (the URL with any password hidden).
    pub(crate) fn display(&self) -> &str {
        &self.display
    }

    /// The store, opening it now if it is not open yet. The lock is held while opening, so
    /// concurrent first calls open it once; a failed attempt leaves the slot empty for the
    /// next call to retry.
    pub(crate) async fn get(&self) -> Result<Arc<dyn AgentMemory>> {
        let mut opened = self.opened.lock().await;
        if let Some(store) = opened.as_ref() {
            return Ok(store.clone());
        }
        let store = (self.opener)().await?;
        *opened = Some(store.clone());
        Ok(store)
    }
}

/// An error from the store as one line that names it: `store URL: kind: message …`. An error
/// that names the store already (the CLI's opener wraps its errors so) is not named twice.
pub(crate) fn describe(display: &str, error: &Error) -> String {
    let text = one_line(error);
    if text.contains(display) {
        text
    } else {
        format!("store {display}: {text}")
    }
}
