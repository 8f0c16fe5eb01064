//! Embedding vectors: opaque bytes under 32-byte keys, stored byte for byte, replaced by key,
//! deleted and cleared with exact counts, refused when malformed, safe under concurrent writers.
//!
//! The area applies only to stores whose [`Capabilities::vectors`](agentmem_core::Capabilities)
//! say they keep them ([`Area::applies_to`](super::Area::applies_to)). A store without them
//! must refuse every vector operation with `Unsupported`: `vectors_are_kept_or_refused`, a case of the `misc`
//! area, checks that on every store.

use agentmem_core::vector::{MAX_VECTOR_BATCH, MAX_VECTOR_BYTES};
use agentmem_core::{AgentMemory, ErrorKind, Result, StoredVector, VectorKey};

use super::assert_kind;

fn ok<T>(result: Result<T>, call: &str) -> T {
    result.unwrap_or_else(|e| panic!("{call} failed: {e}"))
}

/// A key whose first bytes are `n` (so keys are distinct for distinct `n`).
fn key(n: u32) -> VectorKey {
    let mut bytes = [0xa5u8; 32];
    bytes[..4].copy_from_slice(&n.to_be_bytes());
    VectorKey(bytes)
}

fn stored(n: u32, data: Vec<u8>) -> StoredVector {
    StoredVector { key: key(n), data }
}

/// A 384-dimension vector's bytes, distinct per `n`, with every byte value in it.
fn vector_bytes(n: u32) -> Vec<u8> {
    (0..384 * 4).map(|i| (i as u32 * 7 + n) as u8).collect()
}

async fn get_sorted(store: &dyn AgentMemory, keys: &[VectorKey]) -> Vec<StoredVector> {
    let mut found = ok(store.get_vectors(keys).await, "get_vectors");
    found.sort_by_key(|v| v.key);
    found
}

/// A new store holds no vector; a store without the capability refuses every operation.
pub async fn vectors_are_kept_or_refused(store: &dyn AgentMemory) {
    if store.capabilities().vectors {
        assert!(
            ok(store.get_vectors(&[key(1)]).await, "get_vectors").is_empty(),
            "a new store holds no vector"
        );
        assert_eq!(ok(store.clear_vectors().await, "clear_vectors"), 0);
        return;
    }
    let v = [stored(1, vec![1, 2, 3, 4])];
    assert_kind(
        store.put_vectors(&v).await,
        ErrorKind::Unsupported,
        "put_vectors",
    );
    assert_kind(
        store.get_vectors(&[key(1)]).await,
        ErrorKind::Unsupported,
        "get_vectors",
    );
    assert_kind(
        store.delete_vectors(&[key(1)]).await,
        ErrorKind::Unsupported,
        "delete_vectors",
    );
    assert_kind(
        store.clear_vectors().await,
        ErrorKind::Unsupported,
        "clear_vectors",
    );
}

/// Vectors come back byte for byte (one byte, a 384-dimension vector, the largest allowed),
/// each found key once however often asked, missing keys passed over.
pub async fn vectors_round_trip_byte_for_byte(store: &dyn AgentMemory) {
    let vectors = vec![
        stored(1, vec![0]),
        stored(2, vector_bytes(2)),
        stored(3, vec![0xff; MAX_VECTOR_BYTES]),
    ];
    ok(store.put_vectors(&vectors).await, "put_vectors");
    let asked = [key(3), key(9), key(1), key(2), key(1), key(3)];
    assert_eq!(
        get_sorted(store, &asked).await,
        vectors,
        "every stored vector, once"
    );
    assert!(
        ok(store.get_vectors(&[]).await, "get_vectors(no keys)").is_empty(),
        "no keys, no vectors"
    );
    ok(store.put_vectors(&[]).await, "put_vectors(none)");
}

/// Putting a key that holds a vector replaces it; within one call the last of a key wins.
pub async fn putting_a_vector_key_replaces_it(store: &dyn AgentMemory) {
    ok(
        store.put_vectors(&[stored(1, vec![1; 8])]).await,
        "put_vectors",
    );
    ok(
        store.put_vectors(&[stored(1, vec![2; 12])]).await,
        "put_vectors again",
    );
    assert_eq!(get_sorted(store, &[key(1)]).await, [stored(1, vec![2; 12])]);
    let repeated = [stored(2, vec![3; 4]), stored(2, vec![4; 4])];
    ok(
        store.put_vectors(&repeated).await,
        "put_vectors(repeated key)",
    );
    assert_eq!(
        get_sorted(store, &[key(2)]).await,
        [stored(2, vec![4; 4])],
        "the last wins"
    );
}

/// Deleting counts the vectors that went (a repeated or missing key counts nothing more);
/// clearing deletes the rest and counts them.
pub async fn deleting_vectors_counts_what_went(store: &dyn AgentMemory) {
    let vectors: Vec<StoredVector> = (0..5).map(|n| stored(n, vector_bytes(n))).collect();
    ok(store.put_vectors(&vectors).await, "put_vectors");
    let deleted = ok(
        store
            .delete_vectors(&[key(1), key(1), key(3), key(77)])
            .await,
        "delete_vectors",
    );
    assert_eq!(deleted, 2, "two vectors went");
    let all: Vec<VectorKey> = (0..5).map(key).collect();
    let left: Vec<VectorKey> = get_sorted(store, &all)
        .await
        .iter()
        .map(|v| v.key)
        .collect();
    assert_eq!(left, [key(0), key(2), key(4)]);
    assert_eq!(
        ok(store.delete_vectors(&[]).await, "delete_vectors(none)"),
        0
    );
    assert_eq!(ok(store.clear_vectors().await, "clear_vectors"), 3);
    assert!(get_sorted(store, &all).await.is_empty(), "cleared");
    assert_eq!(ok(store.clear_vectors().await, "clear_vectors again"), 0);
}

/// A full batch (the most vectors one call may carry) goes in and comes back in one call each.
pub async fn a_full_vector_batch_round_trips(store: &dyn AgentMemory) {
    let count = MAX_VECTOR_BATCH as u32;
    let vectors: Vec<StoredVector> = (0..count)
        .map(|n| stored(n, n.to_le_bytes().to_vec()))
        .collect();
    ok(store.put_vectors(&vectors).await, "put_vectors(full batch)");
    let keys: Vec<VectorKey> = (0..count).map(key).collect();
    assert_eq!(
        get_sorted(store, &keys).await,
        vectors,
        "every vector of the batch"
    );
    assert_eq!(
        ok(
            store.delete_vectors(&keys).await,
            "delete_vectors(full batch)"
        ),
        u64::from(count)
    );
}

/// Empty or oversized vectors and oversized batches are refused with `InvalidInput`, and
/// nothing of the call is stored.
pub async fn invalid_vectors_are_refused(store: &dyn AgentMemory) {
    let bad = [
        vec![stored(1, vec![1; 4]), stored(2, Vec::new())],
        vec![
            stored(1, vec![1; 4]),
            stored(3, vec![0; MAX_VECTOR_BYTES + 1]),
        ],
        (0..=MAX_VECTOR_BATCH as u32)
            .map(|n| stored(n, vec![1]))
            .collect(),
    ];
    for vectors in &bad {
        assert_kind(
            store.put_vectors(vectors).await,
            ErrorKind::InvalidInput,
            "put_vectors(malformed)",
        );
    }
    let too_many: Vec<VectorKey> = (0..=MAX_VECTOR_BATCH as u32).map(key).collect();
    assert_kind(
        store.get_vectors(&too_many).await,
        ErrorKind::InvalidInput,
        "get_vectors(too many)",
    );
    assert_kind(
        store.delete_vectors(&too_many).await,
        ErrorKind::InvalidInput,
        "delete_vectors(too many)",
    );
    assert!(
        get_sorted(store, &[key(1), key(2), key(3)])
            .await
            .is_empty(),
        "nothing of a refused call is stored"
    );
}

/// Concurrent writers of distinct keys lose nothing.
pub async fn concurrent_vector_writers_lose_nothing(store: &dyn AgentMemory) {
    let writers = (0..4u32).map(|w| async move {
        for i in 0..10u32 {
            let n = w * 100 + i;
            ok(
                store.put_vectors(&[stored(n, vector_bytes(n))]).await,
                "put_vectors",
            );
        }
    });
    futures_util::future::join_all(writers).await;
    let keys: Vec<VectorKey> = (0..4u32)
        .flat_map(|w| (0..10u32).map(move |i| key(w * 100 + i)))
        .collect();
    let found = get_sorted(store, &keys).await;
    assert_eq!(found.len(), 40, "every writer's vectors");
    for v in &found {
        let n = u32::from_be_bytes(v.key.0[..4].try_into().expect("4 bytes"));
        assert_eq!(v.data, vector_bytes(n), "each vector as written");
    }
}
