//! The whole conformance suite through the encryption layer over the file backend, each test
//! in a temporary folder removed when the test drops its store.

use agentmem_core::AgentMemoryExt;
use agentmem_crypt::{EncryptLayer, MasterKey};
use agentmem_file::{Durability, FileConfig, FileStore};
use agentmem_testkit::TestStore;

async fn store() -> Option<TestStore> {
    let dir = tempfile::tempdir().expect("create a temp folder");
    // Buffered: the suite checks behaviour, not power-loss durability (tested in the backend).
    let config = FileConfig::new(dir.path()).with_durability(Durability::Buffered);
    let store = FileStore::connect_with(config)
        .await
        .expect("open the file store");
    let key = MasterKey::generate().expect("a random key");
    let store = store.with_layer(EncryptLayer::new(&key));
    Some(TestStore::new(store).keep(dir).into_dyn())
}

agentmem_testkit::conformance_tests!(store);
