//! `rekey` and `encrypt_existing` rewrite checkpoint threads: every checkpoint (all
//! namespaces, blobs, pending writes, metadata, times) ends up under the new key alone, a
//! rewrite interrupted at any write leaves each checkpoint whole in its thread or in its
//! temporary thread, and running it again finishes it. Over core's in-memory store and the
//! file backend.

use std::sync::Arc;

use agentmem_core::{
    AgentMemory, AgentMemoryExt, CheckpointQuery, CheckpointStore, CheckpointTuple, ErrorKind,
    InMemoryStore, Message, PropertyChange, Result, SessionStore, ThreadInfo, TypedBytes,
};
use agentmem_crypt::{
    encrypt_existing, rekey, rekey_thread_id, EncryptLayer, MasterKey, NoKeyLayer, ENVELOPE_PREFIX,
    REKEY_PROPERTY, REKEY_THREAD_PREFIX,
};
use agentmem_file::Durability;

mod common;
use common::{
    assert_wrong_key, at, everything, file_store, first_message, in_memory, key, sid, stores,
    thread, unmarked_copy, values, with_key, Store, Values, CHAT,
};

/// A thread id as long as one may be (its temporary id is a hash).
fn long_thread() -> String {
    "ü".repeat(256)
}

/// JSON in every opaque value, and metadata nested with a NUL in a string.
const VALUES: Values = Values {
    body: |id| TypedBytes::new("msgpack", format!("body of {id}").into_bytes()),
    metadata: |_| ("nested", serde_json::json!({"a": [1, "\u{0}x"]})),
    blob: json,
    write: json,
};

fn json(value: &str) -> TypedBytes {
    TypedBytes::new("json", value.as_bytes().to_vec())
}

/// The shared chain with ordinary and special writes, a third thread with the longest id,
/// and a session.
async fn fill<S: AgentMemory + ?Sized>(store: &S) -> Result<()> {
    VALUES.fill_chain(store).await?;
    store
        .put_writes(
            &at(CHAT, "", "2"),
            &[
                VALUES.write("task-b", 0, "messages", "3"),
                VALUES.write("task-a", 1, "x", "4"),
                VALUES.write("task-a", -1, "__error__", "\"boom\""),
            ],
        )
        .await?;
    store
        .put_writes(
            &at(CHAT, "node:a|b", "1"),
            &[VALUES.write("inner", 0, "inner", "5")],
        )
        .await?;
    let long = long_thread();
    store
        .put_checkpoint(
            &VALUES.checkpoint(at(&long, "", "1"), None, &[("c", "1")]),
            &[VALUES.blob("c", "1", Some("6"))],
        )
        .await?;
    store
        .put_writes(&at(&long, "", "1"), &[VALUES.write("t", 0, "c", "7")])
        .await?;
    store.append_one(&sid("s"), Message::user("hello")).await
}

/// Asserts that the store holds every value sealed under `key`.
async fn assert_all_sealed_under(raw: &Store, key: &MasterKey) {
    let stored = everything(&**raw).await;
    assert!(!stored.is_empty());
    for value in values(&stored) {
        assert_eq!(value.type_tag, format!("{ENVELOPE_PREFIX}{}", key.id()));
    }
}

/// Threads as applications see them: none of a rekey's temporary threads.
async fn threads(raw: &Store) -> Vec<ThreadInfo> {
    raw.list_threads().await.expect("list threads")
}

async fn progress(raw: &Store) -> Option<String> {
    raw.store_property(REKEY_PROPERTY)
        .await
        .expect("read the progress")
}

/// After a finished rekey to `new`: the new key alone reads every checkpoint as it was, the
/// threads are listed as before (no temporary thread), the progress is at rest, the old key
/// is refused and no value is under it.
async fn assert_rekeyed(
    raw: &Store, old: &MasterKey, new: &MasterKey, before: &[CheckpointTuple],
    listed: &[ThreadInfo],
) {
    let with_new = with_key(raw, new);
    assert_eq!(everything(&with_new).await, before);
    assert_eq!(threads(raw).await, listed, "no temporary thread is left");
    assert_eq!(progress(raw).await.as_deref(), Some(r#"{"v":1}"#));
    assert_all_sealed_under(raw, new).await;
    assert_wrong_key(
        with_key(raw, old)
            .list_checkpoints(&CheckpointQuery::default())
            .await,
        "the old key",
    );
    assert_eq!(first_message(&with_new, &sid("s")).await, "hello");
}

#[tokio::test]
async fn rekey_moves_every_checkpoint_to_the_new_key() {
    for (raw, _dir) in stores(Durability::Buffered).await {
        let (old, new) = (key(), key());
        fill(&with_key(&raw, &old)).await.expect("fill");
        let before = everything(&with_key(&raw, &old)).await;
        let listed = threads(&raw).await;
        assert_eq!(listed.len(), 3);

        let report = rekey(raw.clone(), &old, &new).await.expect("rekey");
        assert_eq!((report.threads, report.checkpoints), (3, 5));
        assert_eq!(report.sessions, 1);
        assert_rekeyed(&raw, &old, &new, &before, &listed).await;
        // The old key alone opens nothing, even without the marker to refuse it.
        assert_wrong_key(
            with_key(&unmarked_copy(&raw).await, &old)
                .list_checkpoints(&CheckpointQuery::default())
                .await,
            "the old key over the records alone",
        );

        // Again: records already under the new key are rewritten, as sessions are.
        let again = rekey(raw.clone(), &new, &new).await.expect("rekey again");
        assert_eq!((again.threads, again.checkpoints), (3, 5));
        assert_rekeyed(&raw, &old, &new, &before, &listed).await;
    }
}

#[tokio::test]
async fn encrypt_existing_seals_plaintext_checkpoints() {
    for (raw, _dir) in stores(Durability::Buffered).await {
        fill(&*raw).await.expect("fill without the layer");
        let before = everything(&*raw).await;
        let listed = threads(&raw).await;
        let key = key();
        let report = encrypt_existing(raw.clone(), &key).await.expect("encrypt");
        assert_eq!((report.threads, report.checkpoints), (3, 5));
        assert_eq!(everything(&with_key(&raw, &key)).await, before);
        assert_eq!(threads(&raw).await, listed);
        assert_all_sealed_under(&raw, &key).await;
        let keyless = raw.clone().with_layer(NoKeyLayer);
        let err = keyless
            .list_checkpoints(&CheckpointQuery::default())
            .await
            .expect_err("the store is encrypted now");
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
        // Running it again is harmless.
        encrypt_existing(raw.clone(), &key)
            .await
            .expect("encrypt again");
        assert_eq!(everything(&with_key(&raw, &key)).await, before);
    }
}

/// A layer (in a module of its own: with `LayeredStore` in scope, calls on stores are
/// ambiguous).
mod failing {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use agentmem_core::layer::LayeredStore;
    use agentmem_core::{
        async_trait, AgentMemory, ChannelBlob, Checkpoint, CheckpointKey, CheckpointStore, Error,
        PendingWrite, PropertyChange, Result, SessionStore, ThreadId,
    };

    use super::Store;

    /// Where the `n`th write fails.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(crate) enum Crash {
        /// Before it is done.
        Before,
        /// Once it is done, its answer lost.
        After,
    }

    /// Fails the `n`th checkpoint write, thread deletion or property change (counting from 1)
    /// and everything after it, as a crash stops a rekey.
    #[derive(Debug)]
    pub(crate) struct FailingWrites {
        pub(crate) inner: Store,
        pub(crate) writes: Arc<AtomicUsize>,
        pub(crate) fail_from: usize,
        pub(crate) crash: Crash,
    }

    impl FailingWrites {
        async fn write<T>(&self, work: impl std::future::Future<Output = Result<T>>) -> Result<T> {
            let n = self.writes.fetch_add(1, Ordering::SeqCst) + 1;
            if n < self.fail_from {
                return work.await;
            }
            if self.crash == Crash::After && n == self.fail_from {
                work.await?;
            }
            Err(Error::unavailable("the process died"))
        }
    }

    #[async_trait]
    impl LayeredStore for FailingWrites {
        type Inner = dyn AgentMemory;

        fn inner(&self) -> &dyn AgentMemory {
            &*self.inner
        }

        async fn put_checkpoint(&self, c: &Checkpoint, blobs: &[ChannelBlob]) -> Result<()> {
            self.write(CheckpointStore::put_checkpoint(&*self.inner, c, blobs))
                .await
        }

        async fn put_writes(&self, at: &CheckpointKey, writes: &[PendingWrite]) -> Result<()> {
            self.write(CheckpointStore::put_writes(&*self.inner, at, writes))
                .await
        }

        async fn delete_thread(&self, thread: &ThreadId) -> Result<bool> {
            self.write(CheckpointStore::delete_thread(&*self.inner, thread))
                .await
        }

        async fn copy_thread(&self, source: &ThreadId, target: &ThreadId) -> Result<u64> {
            self.write(CheckpointStore::copy_thread(&*self.inner, source, target))
                .await
        }

        async fn set_store_property(&self, change: &PropertyChange<'_>) -> Result<bool> {
            self.write(SessionStore::set_store_property(&*self.inner, change))
                .await
        }
    }
}

use failing::{Crash, FailingWrites};

/// Asserts that each checkpoint of `before` is whole (body, blobs, writes, metadata, times)
/// in its thread or in its temporary thread, as a reader holding both keys sees them.
async fn assert_each_checkpoint_whole(
    raw: &Store, old: &MasterKey, new: &MasterKey, before: &[CheckpointTuple], what: &str,
) {
    let both = raw
        .clone()
        .with_layer(EncryptLayer::new(new).with_read_key(old));
    for tuple in before {
        let key = &tuple.checkpoint.key;
        let temporary = rekey_thread_id(&key.thread).expect("a temporary id");
        let mut whole = false;
        for place in [&key.thread, &temporary] {
            let found = both.get_checkpoint(place, &key.ns, Some(&key.id)).await;
            if let Ok(Some(mut found)) = found {
                found.checkpoint.key.thread = key.thread.clone();
                whole |= found == *tuple;
            }
        }
        assert!(whole, "{what}: {key:?} is whole nowhere");
    }
    let temporary = threads(raw)
        .await
        .into_iter()
        .filter(|t| t.thread.as_str().starts_with(REKEY_THREAD_PREFIX))
        .count();
    assert!(temporary <= 1, "{what}: one thread is rewritten at a time");
}

/// Interrupts the rewrite at its first write, then its second, … until it runs through; each
/// time, nothing is lost, and running it again finishes it.
async fn interrupt_at_every_write(
    stores: impl Fn() -> std::pin::Pin<
        Box<dyn std::future::Future<Output = (Store, Option<tempfile::TempDir>)>>,
    >,
    plaintext: bool,
) {
    for crash in [Crash::Before, Crash::After] {
        let mut fail_from = 1;
        loop {
            let (raw, _dir) = stores().await;
            let (old, new) = (key(), key());
            let failing = FailingWrites {
                inner: raw.clone(),
                writes: Arc::default(),
                fail_from,
                crash,
            };
            let what = format!("{crash:?} write {fail_from}");
            let before = if plaintext {
                fill(&*raw).await.expect("fill");
                everything(&*raw).await
            } else {
                fill(&with_key(&raw, &old)).await.expect("fill");
                everything(&with_key(&raw, &old)).await
            };
            let listed = threads(&raw).await;
            let finished = if plaintext {
                encrypt_existing(failing, &new).await
            } else {
                rekey(failing, &old, &new).await
            };
            match finished {
                Ok(_) => {
                    assert!(fail_from > 20, "the rewrite writes that often");
                    break;
                }
                Err(err) => assert_eq!(err.kind(), ErrorKind::Unavailable, "{what}: {err}"),
            }
            if !plaintext {
                assert_each_checkpoint_whole(&raw, &old, &new, &before, &what).await;
            }
            let report = if plaintext {
                encrypt_existing(raw.clone(), &new).await
            } else {
                rekey(raw.clone(), &old, &new).await
            };
            let report = report.unwrap_or_else(|e| panic!("{what}: resumed: {e}"));
            assert_eq!((report.threads, report.checkpoints), (3, 5), "{what}");
            assert_rekeyed(&raw, &old, &new, &before, &listed).await;
            fail_from += 1;
        }
    }
}

#[tokio::test]
async fn a_rekey_interrupted_at_any_write_loses_nothing_and_is_finished_by_running_it_again() {
    interrupt_at_every_write(|| Box::pin(in_memory()), false).await;
    interrupt_at_every_write(|| Box::pin(file_store(Durability::Buffered)), false).await;
}

#[tokio::test]
async fn an_interrupted_encrypt_existing_is_finished_by_running_it_again() {
    interrupt_at_every_write(|| Box::pin(in_memory()), true).await;
}

#[tokio::test]
async fn a_thread_under_a_temporary_id_stops_the_rekey_before_its_thread_is_touched() {
    let raw: Store = Arc::new(InMemoryStore::new());
    let (old, new) = (key(), key());
    let store = with_key(&raw, &old);
    fill(&store).await.expect("fill");
    let squatter = rekey_thread_id(&thread("other")).expect("a temporary id");
    store
        .copy_thread(&thread("other"), &squatter)
        .await
        .expect("copy");
    let before = everything(&store).await;

    let err = rekey(raw.clone(), &old, &new)
        .await
        .expect_err("reserved id");
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    assert!(err.to_string().contains(REKEY_THREAD_PREFIX), "{err}");
    let both = raw
        .clone()
        .with_layer(EncryptLayer::new(&new).with_read_key(&old));
    assert_eq!(everything(&both).await, before, "nothing lost");

    // Once the application's thread is elsewhere, the rekey runs through.
    both.copy_thread(&squatter, &thread("moved"))
        .await
        .expect("move");
    assert!(both.delete_thread(&squatter).await.expect("delete"));
    let report = rekey(raw.clone(), &old, &new).await.expect("rekey");
    assert_eq!(report.threads, 4);
    assert_all_sealed_under(&raw, &new).await;
}

#[tokio::test]
async fn a_resumed_restore_whose_copy_is_gone_leaves_the_thread_as_it_is() {
    let raw: Store = Arc::new(InMemoryStore::new());
    let (old, new) = (key(), key());
    fill(&with_key(&raw, &old)).await.expect("fill");
    let before = everything(&with_key(&raw, &old)).await;
    let midway = serde_json::json!({"v": 1, "thread": "other", "phase": "restore"}).to_string();
    assert!(raw
        .set_store_property(&PropertyChange::insert(REKEY_PROPERTY, &midway))
        .await
        .expect("plant a progress"));
    let err = rekey(raw.clone(), &old, &new).await.expect_err("no copy");
    assert_eq!(err.kind(), ErrorKind::CorruptData, "{err}");
    let both = raw
        .clone()
        .with_layer(EncryptLayer::new(&new).with_read_key(&old));
    assert_eq!(everything(&both).await, before);

    // A progress that is not one is refused before any thread is touched.
    let raw: Store = Arc::new(InMemoryStore::new());
    fill(&with_key(&raw, &old)).await.expect("fill");
    assert!(raw
        .set_store_property(&PropertyChange::insert(REKEY_PROPERTY, "{\"v\":7}"))
        .await
        .expect("plant"));
    let err = rekey(raw.clone(), &old, &new)
        .await
        .expect_err("not a progress");
    assert_eq!(err.kind(), ErrorKind::CorruptData, "{err}");
    assert_eq!(
        everything(
            &raw.clone()
                .with_layer(EncryptLayer::new(&new).with_read_key(&old))
        )
        .await,
        before
    );
}
