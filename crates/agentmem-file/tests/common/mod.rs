//! Helpers shared by the file store's tests: opening stores and loading their sessions,
//! session ids and fixed times, and mixed runs compared with the in-memory reference.
#![allow(
    dead_code,
    reason = "shared by several test binaries, each using part of it"
)]

use std::path::Path;

use agentmem_core::{
    AgentMemory, InMemoryStore, Layered, Message, Session, SessionId, SessionStore,
};
use agentmem_file::{Durability, FileConfig, FileStore, RepairKind};
use chrono::{DateTime, TimeZone, Utc};
use tempfile::TempDir;

/// Appends `bytes` to the file at `path`, as a crash or an edit might.
pub fn append_bytes(path: &Path, bytes: &[u8]) {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(bytes))
        .expect("append");
}

/// The kinds of the repairs `store` made.
pub fn kinds(store: &Layered<FileStore>) -> Vec<RepairKind> {
    store.repairs().iter().map(|r| r.kind).collect()
}

/// 2026-04-20 18:35:`second` UTC, the day every test message is dated.
pub fn at(second: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 4, 20, 18, 35, second)
        .single()
        .expect("valid time")
}

/// `time` as `MEMORY.md` shows it: the local clock's, as Swarms writes it (so the tests
/// hold in any zone).
pub fn shown(time: DateTime<Utc>) -> String {
    agentmem_formats::time::isoformat_in(time, &chrono::Local)
}

/// The session named `name`, which must be a valid id.
pub fn sid(name: &str) -> SessionId {
    name.parse().expect("valid id")
}

/// Opens the file store in `root` with `durability`.
pub async fn open_with(root: &Path, durability: Durability) -> Layered<FileStore> {
    FileStore::connect_with(FileConfig::new(root).with_durability(durability))
        .await
        .expect("open")
}

/// Opens the file store in `root`, buffered: these tests check behaviour, not power loss.
pub async fn open(root: &Path) -> Layered<FileStore> {
    open_with(root, Durability::Buffered).await
}

/// Session `id` of `store`, which must exist.
pub async fn load_some(store: &impl SessionStore, id: &SessionId) -> Session {
    store.load(id, None).await.expect("load").expect("exists")
}

/// The contents of `messages`, in order: what tests compare a loaded session with.
pub fn contents(messages: &[Message]) -> Vec<&str> {
    messages.iter().map(|m| m.content.as_str()).collect()
}

/// A buffered store in a new temporary folder (removed when the folder is dropped) and the
/// id of its session `name`.
pub async fn fresh(name: &str) -> (TempDir, Layered<FileStore>, SessionId) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open(dir.path()).await;
    (dir, store, sid(name))
}

/// A data kind's mixed run, compared step by step with the in-memory reference.
pub trait MixedRun {
    /// One call of the run.
    type Step: std::fmt::Debug;
    /// What a step answers, or the kind of its error.
    type Answer: PartialEq + std::fmt::Debug;
    /// Everything a store shows of the data kind.
    type View: PartialEq + std::fmt::Debug;

    /// Makes the call `step` on `store`.
    async fn apply(store: &dyn AgentMemory, step: &Self::Step) -> Self::Answer;

    /// Reads everything `store` shows of the data kind.
    async fn view(store: &dyn AgentMemory) -> Self::View;
}

/// Two tests of the async fn `$run`, which takes a [`Durability`]: `$fsync` runs it with
/// `Durability::Fsync`, `$buffered` with `Durability::Buffered`; both carry the attributes
/// given first (the test attribute).
#[allow(
    unused_macros,
    reason = "only some test binaries have tests for both durabilities"
)]
macro_rules! durability_tests {
    ($(#[$attr:meta])* $run:path => $fsync:ident, $buffered:ident) => {
        $(#[$attr])*
        async fn $fsync() {
            $run(agentmem_file::Durability::Fsync).await;
        }

        $(#[$attr])*
        async fn $buffered() {
            $run(agentmem_file::Durability::Buffered).await;
        }
    };
}
#[allow(
    unused_imports,
    reason = "only some test binaries have tests for both durabilities"
)]
pub(crate) use durability_tests;

/// The two mixed-run tests of a data kind: [`mixed_run_matches_the_reference`] of `$run` over
/// `$steps`, durably and buffered.
#[allow(unused_macros, reason = "only the test binaries of mixed runs use it")]
macro_rules! mixed_run_tests {
    ($run:ty, $steps:expr) => {
        async fn mixed_run(durability: agentmem_file::Durability) {
            $crate::common::mixed_run_matches_the_reference::<$run>(durability, &$steps).await;
        }

        $crate::common::durability_tests!(
            #[tokio::test]
            mixed_run =>
            a_mixed_run_reads_back_as_the_reference_durably,
            a_mixed_run_reads_back_as_the_reference_buffered
        );
    };
}
#[allow(unused_imports, reason = "only the test binaries of mixed runs use it")]
pub(crate) use mixed_run_tests;

/// Runs `steps` on the reference and on a file store in a new folder under `durability`:
/// every step answers as the reference's does, and after every step the working store,
/// another store on the same root and a store opened afresh show what the reference shows,
/// with nothing repaired.
pub async fn mixed_run_matches_the_reference<R: MixedRun>(
    durability: Durability, steps: &[R::Step],
) {
    let dir = tempfile::tempdir().expect("temp dir");
    let reference = InMemoryStore::new();
    let store = open_with(dir.path(), durability).await;
    // Another process, in effect: its own caches and lock handles.
    let observer = open_with(dir.path(), durability).await;
    for (n, step) in steps.iter().enumerate() {
        let expected = R::apply(&reference, step).await;
        assert_eq!(R::apply(&store, step).await, expected, "step {n}: {step:?}");
        let want = R::view(&reference).await;
        assert_eq!(R::view(&store).await, want, "step {n}: the working store");
        assert_eq!(R::view(&observer).await, want, "step {n}: another store");
        let fresh = open_with(dir.path(), durability).await;
        assert_eq!(
            R::view(&fresh).await,
            want,
            "step {n}: a store opened afresh"
        );
        assert!(fresh.repairs().is_empty(), "{:?}", fresh.repairs());
    }
    assert!(store.repairs().is_empty(), "{:?}", store.repairs());
    assert!(observer.repairs().is_empty(), "{:?}", observer.repairs());
}
