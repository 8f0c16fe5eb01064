//! The whole conformance suite through [`NoKeyLayer`] over core's in-memory store: a store
//! without encryption behaves exactly as without the layer.

use agentmem_core::{AgentMemoryExt, InMemoryStore};
use agentmem_crypt::NoKeyLayer;
use agentmem_testkit::TestStore;

async fn store() -> Option<TestStore> {
    Some(TestStore::new(InMemoryStore::new().with_layer(NoKeyLayer)).into_dyn())
}

agentmem_testkit::conformance_tests!(store);
