//! The whole conformance suite through the encryption layer over core's in-memory store.

use agentmem_core::{AgentMemoryExt, InMemoryStore};
use agentmem_crypt::{EncryptLayer, MasterKey};
use agentmem_testkit::TestStore;

async fn store() -> Option<TestStore> {
    let key = MasterKey::generate().expect("a random key");
    let store = InMemoryStore::new().with_layer(EncryptLayer::new(&key));
    Some(TestStore::new(store).into_dyn())
}

agentmem_testkit::conformance_tests!(store);
