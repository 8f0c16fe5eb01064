//! The shared conformance suite, on a fresh temporary database file per test, removed
//! with its folder when the test drops its store.
use agentmem_sqlite::SqliteStore;
use agentmem_testkit::TestStore;

async fn store() -> Option<TestStore> {
    let dir = tempfile::tempdir().expect("create a temporary folder");
    // synchronous=normal: commits still survive a process crash; skipping the per-commit
    // fsync keeps the suite fast on CI without changing any behaviour under test.
    let url = format!(
        "sqlite://{}/memory.db?synchronous=normal",
        dir.path().display()
    );
    let store = SqliteStore::connect(&url)
        .await
        .expect("open a fresh SQLite database");
    Some(TestStore::new(store).keep(dir).into_dyn())
}

agentmem_testkit::conformance_tests!(store);
