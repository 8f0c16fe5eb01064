//! [`PassThrough`]: a layer as a user would write one, overriding a single operation. The
//! conformance suite runs through it on every backend (`conformance_tests!` generates the
//! test), which proves that a layer forwards every operation it does not override.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use agentmem_core::layer::{Layer, LayeredStore};
use agentmem_core::{async_trait, AgentMemory, Message, Result, SessionId, SessionStore};

use crate::TestStore;

/// Counts appends and changes nothing else; every other operation reaches the inner store
/// through [`LayeredStore`]'s forwarding.
#[derive(Debug)]
pub struct PassThrough<S> {
    inner: S,
    appends: Arc<AtomicU64>,
}

/// Wraps stores in [`PassThrough`], counting their appends in one shared counter.
#[derive(Debug, Clone, Default)]
pub struct PassThroughLayer {
    appends: Arc<AtomicU64>,
}

impl PassThroughLayer {
    /// A layer with its counter at zero.
    pub fn new() -> Self {
        PassThroughLayer::default()
    }

    /// Wraps a test's store (a [`TestStore`] or an `Arc<dyn AgentMemory>`), keeping its
    /// namespace guard: the namespace is removed after the wrapped store is dropped.
    pub fn wrap(&self, store: impl Into<TestStore>) -> TestStore {
        store
            .into()
            .map(|inner| Arc::new(self.layer(inner)) as Arc<dyn AgentMemory>)
    }

    /// Appends made through every store this layer wrapped.
    pub fn appends(&self) -> u64 {
        self.appends.load(Ordering::Relaxed)
    }
}

impl<S: AgentMemory> Layer<S> for PassThroughLayer {
    type Store = PassThrough<S>;

    fn layer(&self, inner: S) -> PassThrough<S> {
        PassThrough {
            inner,
            appends: Arc::clone(&self.appends),
        }
    }
}

#[async_trait]
impl<S: AgentMemory> LayeredStore for PassThrough<S> {
    type Inner = S;

    fn inner(&self) -> &S {
        &self.inner
    }

    async fn append(&self, session: &SessionId, messages: &[Message]) -> Result<()> {
        self.appends.fetch_add(1, Ordering::Relaxed);
        SessionStore::append(&self.inner, session, messages).await
    }
}
