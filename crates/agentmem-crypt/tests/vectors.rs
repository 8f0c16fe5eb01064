//! Embedding vectors through the encryption layer: sealed under keys the store cannot link to
//! their texts, round-tripped, refused with a wrong key or none, corrupt when moved, and
//! dropped by `rekey` and `encrypt_existing`.

use std::sync::Arc;

use agentmem_core::layer::Layer;
use agentmem_core::{
    AgentMemory, AgentMemoryExt, ErrorKind, InMemoryStore, Message, SessionId, StoredVector,
    VectorKey, VectorStore,
};
use agentmem_crypt::{
    encrypt_existing, rekey, CryptoError, EncryptLayer, MasterKey, NoKeyLayer,
    SEALED_VECTOR_PREFIX, VECTOR_SEALING_BYTES,
};

mod common;
use common::{assert_no_key, assert_wrong_key, crypto_error, key, raw, sid, with_key, Store};

/// A key as the recall engine makes them (SHA-256 of a text), distinct per `n`.
fn vkey(n: u8) -> VectorKey {
    let mut bytes = [0x5a; 32];
    bytes[0] = n;
    bytes[31] = n.wrapping_mul(31);
    VectorKey(bytes)
}

/// A 384-dimension vector, distinct per `n`.
fn vector(n: u8) -> StoredVector {
    let values: Vec<f32> = (0..384).map(|i| f32::from(n) + i as f32 / 1000.0).collect();
    StoredVector::new(vkey(n), &values)
}

async fn get_sorted(store: &dyn AgentMemory, keys: &[VectorKey]) -> Vec<StoredVector> {
    let mut found = store.get_vectors(keys).await.expect("get_vectors");
    found.sort_by_key(|v| v.key);
    found
}

/// Puts `v` through `writer` and reads it back through `reader`, exactly as it was put.
async fn put_and_read_back(writer: &dyn AgentMemory, reader: &dyn AgentMemory, v: StoredVector) {
    let put = writer.put_vectors(std::slice::from_ref(&v)).await;
    put.expect("put_vectors");
    let read = reader.get_vectors(&[v.key]).await.expect("get_vectors");
    assert_eq!(read, [v]);
}

/// A store that records what the layer above it sends (in a module of its own: with
/// `LayeredStore` in scope, calls on stores are ambiguous).
mod spy {
    use std::sync::{Arc, Mutex, PoisonError};

    use agentmem_core::layer::LayeredStore;
    use agentmem_core::{async_trait, Result, StoredVector, VectorKey, VectorStore};

    use crate::common::Store;

    /// A store that records the vectors and keys the layer above it sends.
    #[derive(Debug, Clone)]
    pub struct Spy {
        inner: Store,
        put: Arc<Mutex<Vec<StoredVector>>>,
        asked: Arc<Mutex<Vec<VectorKey>>>,
    }

    impl Spy {
        pub fn new(inner: Store) -> Self {
            Spy {
                inner,
                put: Arc::default(),
                asked: Arc::default(),
            }
        }

        pub fn put(&self) -> Vec<StoredVector> {
            self.put
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone()
        }

        pub fn asked(&self) -> Vec<VectorKey> {
            self.asked
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone()
        }
    }

    /// Adds `items` to `log` (its lock released before any await).
    fn record<T: Clone>(log: &Mutex<Vec<T>>, items: &[T]) {
        log.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(items);
    }

    #[async_trait]
    impl LayeredStore for Spy {
        type Inner = Store;

        fn inner(&self) -> &Store {
            &self.inner
        }

        async fn put_vectors(&self, vectors: &[StoredVector]) -> Result<()> {
            record(&self.put, vectors);
            VectorStore::put_vectors(&self.inner, vectors).await
        }

        async fn get_vectors(&self, keys: &[VectorKey]) -> Result<Vec<StoredVector>> {
            record(&self.asked, keys);
            VectorStore::get_vectors(&self.inner, keys).await
        }

        async fn delete_vectors(&self, keys: &[VectorKey]) -> Result<u64> {
            record(&self.asked, keys);
            VectorStore::delete_vectors(&self.inner, keys).await
        }
    }
}

use spy::Spy;

/// A fresh store, the spy on it, a new key, and the encryption layer under that key over the
/// spy.
fn spied() -> (Store, Spy, MasterKey, impl AgentMemory) {
    let raw = raw();
    let spy = Spy::new(raw.clone());
    let k = key();
    let layer = EncryptLayer::new(&k).layer(spy.clone());
    (raw, spy, k, layer)
}

/// Whether `needle` occurs anywhere in `haystack`.
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[tokio::test]
async fn a_vector_reaches_the_store_sealed_under_a_mapped_key() {
    let (raw, spy, k, layer) = spied();
    let v = vector(1);
    layer.put_vectors(std::slice::from_ref(&v)).await.unwrap();

    let stored = spy.put();
    assert_eq!(stored.len(), 1);
    let sealed = &stored[0];
    assert_ne!(sealed.key, v.key, "the key is mapped");
    for part in v.key.as_bytes().chunks(8) {
        assert!(!contains(sealed.key.as_bytes(), part), "no part of the key");
        assert!(
            !contains(&sealed.data, part),
            "no part of the key in the data"
        );
    }
    for part in v.data.chunks(16) {
        assert!(!contains(&sealed.data, part), "no 16 bytes of the vector");
    }
    assert_eq!(sealed.data.len(), v.data.len() + VECTOR_SEALING_BYTES);
    let header = format!(
        "{}{}:",
        String::from_utf8_lossy(SEALED_VECTOR_PREFIX),
        k.id()
    );
    assert!(sealed.data.starts_with(header.as_bytes()), "names its key");
    assert!(
        raw.get_vectors(&[v.key]).await.unwrap().is_empty(),
        "nothing under the caller's key"
    );

    // Read back under the caller's key, the store asked only for the mapped one.
    assert_eq!(
        layer.get_vectors(&[v.key]).await.unwrap(),
        std::slice::from_ref(&v)
    );
    assert_eq!(spy.asked(), [sealed.key]);
    // Sealed with a random nonce: the same vector again seals differently.
    layer.put_vectors(std::slice::from_ref(&v)).await.unwrap();
    let again = spy.put();
    assert_eq!(again[1].key, sealed.key, "one key, one place");
    assert_ne!(again[1].data, sealed.data);
}

#[tokio::test]
async fn vectors_round_trip_through_the_layer() {
    let raw = raw();
    let k = key();
    let layer = with_key(&raw, &k);
    let vectors: Vec<StoredVector> = (1..=4).map(vector).collect();
    layer.put_vectors(&vectors).await.unwrap();
    // Another handle with the same key (another process) finds them.
    let other = with_key(&raw, &k);
    let asked = [
        vkey(3),
        vkey(9),
        vkey(1),
        vkey(2),
        vkey(1),
        vkey(4),
        vkey(3),
    ];
    assert_eq!(get_sorted(&other, &asked).await, vectors);
    // Replaced by key; the bytes come back exactly.
    let replacement = StoredVector {
        key: vkey(2),
        data: vec![0, 1, 2, 3, 255, 254, 253, 252],
    };
    put_and_read_back(&other, &layer, replacement).await;
    assert_eq!(
        layer
            .delete_vectors(&[vkey(1), vkey(1), vkey(9)])
            .await
            .unwrap(),
        1
    );
    assert_eq!(layer.clear_vectors().await.unwrap(), 3);
    assert!(get_sorted(&layer, &asked).await.is_empty());
}

#[tokio::test]
async fn a_wrong_key_is_refused_and_a_moved_or_altered_vector_is_corrupt() {
    let (raw, spy, _, layer) = spied();
    layer.put_vectors(&[vector(1), vector(2)]).await.unwrap();

    let wrong = with_key(&raw, &key());
    assert_wrong_key(wrong.get_vectors(&[vkey(1)]).await, "get with another key");
    assert_wrong_key(
        wrong.put_vectors(&[vector(3)]).await,
        "put with another key",
    );

    // A writer of the backend moves vector 1's bytes under vector 2's stored key.
    let stored = spy.put();
    let moved = StoredVector {
        key: stored[1].key,
        data: stored[0].data.clone(),
    };
    raw.put_vectors(&[moved]).await.unwrap();
    let err = layer.get_vectors(&[vkey(2)]).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::CorruptData, "{err}");
    assert_eq!(crypto_error(&err), Some(&CryptoError::Tampered));
    // Or alters one byte.
    let mut altered = stored[0].clone();
    let last = altered.data.len() - 1;
    altered.data[last] ^= 1;
    raw.put_vectors(&[altered]).await.unwrap();
    let err = layer.get_vectors(&[vkey(1)]).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::CorruptData, "{err}");
    // Or puts plaintext there.
    let plain = StoredVector {
        key: stored[0].key,
        data: vector(1).data,
    };
    raw.put_vectors(&[plain]).await.unwrap();
    let err = layer.get_vectors(&[vkey(1)]).await.unwrap_err();
    assert_eq!(crypto_error(&err), Some(&CryptoError::NotEncrypted));
}

#[tokio::test]
async fn without_a_key_vectors_are_refused_but_deletes_pass() {
    let (raw, spy, k, layer) = spied();
    layer.put_vectors(&[vector(1), vector(2)]).await.unwrap();

    let guarded = raw.clone().with_layer(NoKeyLayer);
    assert_no_key(guarded.get_vectors(&[vkey(1)]).await, &k, "get");
    assert_no_key(guarded.put_vectors(&[vector(3)]).await, &k, "put");
    let stored = spy.put();
    assert_eq!(guarded.delete_vectors(&[stored[0].key]).await.unwrap(), 1);
    assert_eq!(guarded.clear_vectors().await.unwrap(), 1);

    // An unmarked store holding a sealed vector (copied there): a read of it is refused.
    let unmarked: Store = Arc::new(InMemoryStore::new());
    unmarked.put_vectors(&[stored[0].clone()]).await.unwrap();
    let guarded = unmarked.clone().with_layer(NoKeyLayer);
    assert_no_key(
        guarded.get_vectors(&[stored[0].key]).await,
        &k,
        "get sealed",
    );
    // Plaintext passes through.
    guarded.put_vectors(&[vector(5)]).await.unwrap();
    assert_eq!(guarded.get_vectors(&[vkey(5)]).await.unwrap(), [vector(5)]);
}

#[tokio::test]
async fn during_a_rotation_vectors_under_the_old_key_are_read_and_deleted() {
    let raw = raw();
    let (old, new) = (key(), key());
    with_key(&raw, &old)
        .put_vectors(&[vector(1), vector(2)])
        .await
        .unwrap();
    let rotating = raw
        .clone()
        .with_layer(EncryptLayer::new(&new).with_read_key(&old));
    rotating.put_vectors(&[vector(3)]).await.unwrap();
    let all = [vkey(1), vkey(2), vkey(3)];
    assert_eq!(
        get_sorted(&rotating, &all).await,
        [vector(1), vector(2), vector(3)]
    );
    // A vector put again under the new key is read in its new form.
    let newer = StoredVector {
        key: vkey(1),
        data: vec![9; 8],
    };
    put_and_read_back(&rotating, &rotating, newer).await;
    // A delete removes every form (vector 1 is stored in two).
    assert_eq!(
        rotating.delete_vectors(&[vkey(1), vkey(2)]).await.unwrap(),
        3
    );
    assert_eq!(raw.clear_vectors().await.unwrap(), 1);
}

async fn session_with_a_message(store: &impl AgentMemory, id: &SessionId) {
    store
        .append_one(id, Message::user("hi"))
        .await
        .expect("append a message");
}

#[tokio::test]
async fn rekey_drops_every_vector() {
    let raw = raw();
    let (old, new) = (key(), key());
    let before = with_key(&raw, &old);
    before
        .put_vectors(&[vector(1), vector(2), vector(3)])
        .await
        .unwrap();
    session_with_a_message(&before, &sid("s")).await;

    let report = rekey(raw.clone(), &old, &new).await.unwrap();
    assert_eq!(report.dropped_vectors, 3);
    assert_eq!(report.sessions, 1);
    let after = with_key(&raw, &new);
    assert!(get_sorted(&after, &[vkey(1), vkey(2), vkey(3)])
        .await
        .is_empty());
    assert_eq!(
        raw.clear_vectors().await.unwrap(),
        0,
        "nothing left in the store"
    );
    // The store takes vectors under the new key.
    after.put_vectors(&[vector(4)]).await.unwrap();
    assert_eq!(after.get_vectors(&[vkey(4)]).await.unwrap(), [vector(4)]);
    // A rerun drops what is there again; nothing else changes.
    let again = rekey(raw.clone(), &old, &new).await.unwrap();
    assert_eq!(again.dropped_vectors, 1);
}

#[tokio::test]
async fn encrypt_existing_drops_plaintext_vectors() {
    let raw = raw();
    raw.put_vectors(&[vector(1), vector(2)]).await.unwrap();
    let k = key();
    let report = encrypt_existing(raw.clone(), &k).await.unwrap();
    assert_eq!(report.dropped_vectors, 2);
    assert!(raw
        .get_vectors(&[vkey(1), vkey(2)])
        .await
        .unwrap()
        .is_empty());
    let store = with_key(&raw, &k);
    store.put_vectors(&[vector(3)]).await.unwrap();
    assert_eq!(store.get_vectors(&[vkey(3)]).await.unwrap(), [vector(3)]);
}
