//! Helpers shared by the transfer tests (a module of each test that declares `mod common;`).
//!
//! Apart, so that `LayeredStore` (whose methods share their names with the store traits') is
//! in scope only here.

use agentmem_core::layer::LayeredStore;
use agentmem_core::{
    AddedObservations, Capabilities, ChannelBlob, Checkpoint, CheckpointKey, CheckpointQuery,
    CheckpointStore, CheckpointTuple, Entity, Error, GraphQuery, GraphStore, InMemoryStore,
    KnowledgeGraph, Layered, ObservationAddition, PendingWrite, Relation, Result, SessionStore,
    ThreadInfo,
};

/// An in-memory store without the capabilities its closure switches off, as a backend that
/// lacks them: it reports them off and refuses every checkpoint or graph operation the transfer
/// calls while that capability is off, so a transfer that calls one anyway fails its test.
/// The store beneath (`.0`) keeps everything, for filling in what must not be exported.
#[derive(Debug)]
pub struct Without(pub Layered<InMemoryStore>, fn(&mut Capabilities));

impl Without {
    /// An empty store whose capabilities are an in-memory store's, less what `off` switches
    /// off (`Without::new(|c| c.graph = false)`).
    pub fn new(off: fn(&mut Capabilities)) -> Self {
        Without(InMemoryStore::new(), off)
    }

    /// `Ok` when the store reports what `kept` reads as on; otherwise the backend's refusal.
    fn require(&self, kept: fn(&Capabilities) -> bool, refusal: fn(&str) -> Error) -> Result<()> {
        if kept(&LayeredStore::capabilities(self)) {
            Ok(())
        } else {
            Err(refusal("test"))
        }
    }

    /// [`Self::require`] for checkpoints.
    fn checkpoints(&self) -> Result<()> {
        self.require(|c| c.checkpoints, agentmem_core::checkpoint::unsupported)
    }

    /// [`Self::require`] for the graph.
    fn graph(&self) -> Result<()> {
        self.require(|c| c.graph, agentmem_core::graph::unsupported)
    }
}

#[agentmem_core::async_trait]
impl LayeredStore for Without {
    type Inner = Layered<InMemoryStore>;

    fn inner(&self) -> &Layered<InMemoryStore> {
        &self.0
    }

    fn capabilities(&self) -> Capabilities {
        let mut capabilities = SessionStore::capabilities(&self.0);
        (self.1)(&mut capabilities);
        capabilities
    }

    async fn put_checkpoint(&self, checkpoint: &Checkpoint, blobs: &[ChannelBlob]) -> Result<()> {
        self.checkpoints()?;
        CheckpointStore::put_checkpoint(&self.0, checkpoint, blobs).await
    }

    async fn put_writes(&self, at: &CheckpointKey, writes: &[PendingWrite]) -> Result<()> {
        self.checkpoints()?;
        CheckpointStore::put_writes(&self.0, at, writes).await
    }

    async fn list_checkpoints(&self, query: &CheckpointQuery) -> Result<Vec<CheckpointTuple>> {
        self.checkpoints()?;
        CheckpointStore::list_checkpoints(&self.0, query).await
    }

    async fn list_threads(&self) -> Result<Vec<ThreadInfo>> {
        self.checkpoints()?;
        CheckpointStore::list_threads(&self.0).await
    }

    async fn create_entities(&self, entities: &[Entity]) -> Result<Vec<Entity>> {
        self.graph()?;
        GraphStore::create_entities(&self.0, entities).await
    }

    async fn create_relations(&self, relations: &[Relation]) -> Result<Vec<Relation>> {
        self.graph()?;
        GraphStore::create_relations(&self.0, relations).await
    }

    async fn add_observations(
        &self, additions: &[ObservationAddition],
    ) -> Result<Vec<AddedObservations>> {
        self.graph()?;
        GraphStore::add_observations(&self.0, additions).await
    }

    async fn read_graph(&self, query: &GraphQuery) -> Result<KnowledgeGraph> {
        self.graph()?;
        GraphStore::read_graph(&self.0, query).await
    }
}
