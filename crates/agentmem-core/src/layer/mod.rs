//! Layers: cross-cutting work written once and worn by every store.
//!
//! A backend implements [`SessionStore`](crate::SessionStore) and
//! [`MemoryStore`](crate::MemoryStore) (together [`AgentMemory`]) for its raw store and nothing
//! else: no validation, no spans, no error labels. Its constructors (`connect`, `connect_with`,
//! `from_client`) hand the raw store to [`layered`] (or [`open_layered`]), so every store a user
//! gets wears the same standard stack:
//!
//! | layer | what it does |
//! |---|---|
//! | [`TraceLayer`] (outermost) | one `agentmem.op` span per operation; errors labelled with backend and [`Operation`] |
//! | [`ValidateLayer`] | refuses messages and memory items a store could not read back; an empty append returns at once |
//!
//! Optional layers a program adds: [`RetainLayer`] (retention enforced as the store is
//! written; what the `keep`/`retain` URL options ask for), and outside core the encryption
//! layers of `agentmem-crypt`.
//!
//! A layered store dereferences to the raw store, for backend-specific methods (the file
//! backend's `check`, SQLite's `database`, …); calling [`AgentMemory`] methods on the raw
//! store directly skips the layers.
//!
//! Layers are public. A layer implements [`Layer`] (how to wrap a store) and, for the store it
//! makes, [`LayeredStore`]: it names its inner store and overrides only the operations it
//! changes; every other operation, including any added later, reaches the inner store
//! unchanged. (`Arc<dyn AgentMemory>` is a store too, so any opened store can wear one.) A
//! read-only layer:
//!
//! ```
//! use std::sync::Arc;
//! use agentmem_core::layer::{Layer, LayeredStore};
//! use agentmem_core::{async_trait, AgentMemory, AgentMemoryExt, ArchiveInfo, Error, ErrorKind,
//!     InMemoryStore, MemoryId, MemoryItem, Message, Metadata, PurgeReport, Result,
//!     RetentionPolicy, SessionId, SessionQuery, SessionStore};
//!
//! /// Refuses every write it knows of; everything else goes through.
//! #[derive(Debug)]
//! struct ReadOnly<S>(S);
//!
//! struct ReadOnlyLayer;
//! impl<S: AgentMemory> Layer<S> for ReadOnlyLayer {
//!     type Store = ReadOnly<S>;
//!     fn layer(&self, inner: S) -> ReadOnly<S> { ReadOnly(inner) }
//! }
//!
//! fn refused() -> Error { Error::unsupported("this store is read-only") }
//!
//! #[async_trait]
//! impl<S: AgentMemory> LayeredStore for ReadOnly<S> {
//!     type Inner = S;
//!     fn inner(&self) -> &S { &self.0 }
//!     async fn save_session(&self, _: &SessionId, _: &[Message], _: &Metadata) -> Result<()> { Err(refused()) }
//!     async fn append(&self, _: &SessionId, _: &[Message]) -> Result<()> { Err(refused()) }
//!     async fn delete_session(&self, _: &SessionId) -> Result<bool> { Err(refused()) }
//!     async fn compact(&self, _: &SessionId, _: &[Message]) -> Result<ArchiveInfo> { Err(refused()) }
//!     async fn purge(&self, _: &RetentionPolicy) -> Result<PurgeReport> { Err(refused()) }
//!     async fn put_memory(&self, _: &MemoryItem) -> Result<MemoryItem> { Err(refused()) }
//!     async fn delete_memory(&self, _: &MemoryId) -> Result<bool> { Err(refused()) }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let id: SessionId = "demo".parse()?;
//! let store: Arc<dyn AgentMemory> = Arc::new(InMemoryStore::new());
//! store.append_one(&id, Message::user("hi")).await?;
//! let archive_view = store.clone().with_layer(ReadOnlyLayer);
//! assert_eq!(archive_view.messages(&id).await?.len(), 1);
//! // What the layer does not override reaches the store: `find_sessions` too.
//! let page = SessionStore::find_sessions(&archive_view, &SessionQuery::default()).await?;
//! assert_eq!(page.sessions.len(), 1);
//! let err = archive_view.append_one(&id, Message::user("more")).await.unwrap_err();
//! assert_eq!(err.kind(), ErrorKind::Unsupported);
//! # Ok::<(), agentmem_core::Error>(())
//! # }).unwrap();
//! ```

/// Declares a layer (a unit struct) and the store wrapper it makes: the wrapper holds the inner
/// store in `inner`, dereferences to it and gives it back with `into_inner`.
macro_rules! layer_and_store {
    ($(#[$layer_doc:meta])* $layer:ident; $(#[$store_doc:meta])* $store:ident) => {
        $(#[$layer_doc])*
        #[derive(Debug, Clone, Copy, Default)]
        pub struct $layer;

        impl<S: AgentMemory> $crate::layer::Layer<S> for $layer {
            type Store = $store<S>;
            fn layer(&self, inner: S) -> $store<S> {
                $store { inner }
            }
        }

        $(#[$store_doc])*
        #[derive(Debug, Clone)]
        pub struct $store<S> {
            inner: S,
        }

        $crate::holds_inner_store!($store);
    };
}

/// For a layer's store type `$store<S>` that keeps the store it wraps in a field `inner`:
/// `into_inner`, giving that store back, and `Deref` to it, so the inner store's own methods
/// stay reachable through the layer (as `(*layered).method()`).
///
/// ```
/// #[derive(Debug)]
/// pub struct Counted<S> {
///     inner: S,
///     calls: u64,
/// }
/// agentmem_core::holds_inner_store!(Counted);
///
/// let counted = Counted { inner: vec![1, 2], calls: 0 };
/// assert_eq!(counted.len(), 2);
/// assert_eq!(counted.into_inner(), [1, 2]);
/// ```
#[macro_export]
macro_rules! holds_inner_store {
    ($store:ident) => {
        impl<S> $store<S> {
            /// The store inside this layer.
            pub fn into_inner(self) -> S {
                self.inner
            }
        }

        impl<S> ::std::ops::Deref for $store<S> {
            type Target = S;
            fn deref(&self) -> &S {
                &self.inner
            }
        }
    };
}

mod base;
mod retain;
mod trace;
mod validate;

use std::future::Future;

pub use base::LayeredStore;
pub use retain::{keep_newest_per_owner, RetainLayer, Retained, Retention, DEFAULT_SWEEP_EVERY};
pub use trace::{TraceLayer, Traced, SPAN_NAME};
pub use validate::{
    check_memory_item, check_messages, check_session_metadata, ValidateLayer, Validated,
};

use crate::backend::BackendInfo;
use crate::error::Result;
use crate::operation::Operation;
use crate::store::AgentMemory;
use crate::Layered;

/// Wraps a store in another store that adds behaviour around it (as tower's `Layer` does for
/// services).
pub trait Layer<S: AgentMemory> {
    /// The store this layer makes of `S`.
    type Store: AgentMemory;
    /// Wraps `inner`.
    fn layer(&self, inner: S) -> Self::Store;
}

/// Wraps a raw store in the standard layer stack: what every constructor returns.
pub fn layered<S: AgentMemory>(raw: S) -> Layered<S> {
    TraceLayer.layer(ValidateLayer.layer(raw))
}

/// Runs `opening` (connecting to, creating or migrating a store of `backend`) inside an
/// `agentmem.op` span for [`Operation::Open`], labels its error, and wraps the store it opens
/// in the standard layer stack.
pub async fn open_layered<S: AgentMemory>(
    backend: &'static BackendInfo, opening: impl Future<Output = Result<S>>,
) -> Result<Layered<S>> {
    trace::Op::new(backend, Operation::Open, None)
        .run(opening)
        .await
        .map(layered)
}
