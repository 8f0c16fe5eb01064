//! The store behind the server, opened on first use: a server started while its backend is
//! down comes up anyway, answers each call with an error naming the store, and serves normally
//! from the first call after the backend is back.
//!
//! Recall by meaning is built the same way, once the store is open: when the store URL names an
//! embedder, a background indexer embeds what is written; an embedder that cannot be built (a
//! model not installed) fails only the searches that need it, and is tried again on later calls.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use agentmem_core::{one_line, AgentMemory, Error, Result};
use agentmem_recall::{IndexerHandle, Recall};
use tokio::sync::Mutex;

/// What [`StoreOpener`] returns: the future of one attempt to open the store.
pub type OpenFuture = Pin<Box<dyn Future<Output = Result<Arc<dyn AgentMemory>>> + Send>>;

/// Opens the store; called on first use, and again on later calls while it fails.
pub type StoreOpener = Arc<dyn Fn() -> OpenFuture + Send + Sync>;

/// Builds recall by meaning over the store once it is open: `Ok(None)` when the store names
/// no embedder (keyword search only), an error when the embedder it names cannot be built.
pub type RecallOpener = Arc<dyn Fn(Arc<dyn AgentMemory>) -> Result<Option<Recall>> + Send + Sync>;

/// How often the background indexer looks for texts to embed when no write nudges it.
pub(crate) const INDEX_EVERY: Duration = Duration::from_secs(2);

/// Recall over the opened store, as far as it is known.
enum Recalling {
    /// Not built yet (or building failed: tried again on the next call).
    Unknown,
    /// The store names no embedder.
    Absent,
    /// Built, with its background indexer.
    Ready(Recall, IndexerHandle),
}

/// The store, once opened, and how to open it.
pub(crate) struct StoreSlot {
    display: String,
    opener: StoreOpener,
    recaller: Option<RecallOpener>,
    opened: Mutex<Option<Arc<dyn AgentMemory>>>,
    recalling: Mutex<Recalling>,
}

impl fmt::Debug for StoreSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreSlot")
            .field("display", &self.display)
            .finish_non_exhaustive()
    }
}

impl StoreSlot {
    pub(crate) fn new(
        display: String, opener: StoreOpener, recaller: Option<RecallOpener>,
    ) -> Self {
        StoreSlot {
            display,
            opener,
            recaller,
            opened: Mutex::new(None),
            recalling: Mutex::new(Recalling::Unknown),
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

    /// Recall over `store` (the store [`get`](Self::get) returned), building it and starting
    /// its background indexer on first use; `None` when the store names no embedder.
    pub(crate) async fn recall(&self, store: &Arc<dyn AgentMemory>) -> Result<Option<Recall>> {
        let mut recalling = self.recalling.lock().await;
        match &*recalling {
            Recalling::Ready(recall, _) => return Ok(Some(recall.clone())),
            Recalling::Absent => return Ok(None),
            Recalling::Unknown => {}
        }
        let built = match &self.recaller {
            Some(recaller) => recaller(store.clone())?,
            None => None,
        };
        *recalling = match &built {
            Some(recall) => Recalling::Ready(recall.clone(), recall.spawn_indexer(INDEX_EVERY)),
            None => Recalling::Absent,
        };
        Ok(built)
    }

    /// Asks the background indexer, if one runs, to embed what was just written.
    pub(crate) async fn nudge(&self) {
        if let Recalling::Ready(_, indexer) = &*self.recalling.lock().await {
            indexer.nudge();
        }
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
