//! Embedding vectors, beyond the conformance cases: the migration that adds them to an
//! existing schema, unnamed statements (as behind a pooler), and writers in separate pools
//! (standing in for separate processes) putting and deleting the same keys at once.

mod common;

use agentmem_core::{StoredVector, VectorKey, VectorStore};
use agentmem_postgres::PostgresStore;
use common::other_processes;

fn key(n: u8) -> VectorKey {
    VectorKey([n; 32])
}

fn vector(n: u8, data: &[u8]) -> StoredVector {
    StoredVector {
        key: key(n),
        data: data.to_vec(),
    }
}

async fn sorted(store: &PostgresStore, keys: &[VectorKey]) -> Vec<StoredVector> {
    let mut found = store.get_vectors(keys).await.expect("get");
    found.sort_by_key(|v| v.key);
    found
}

#[tokio::test]
async fn a_version_6_schema_gains_vectors_when_migrated_to_7() {
    let Some(store) = common::open(&[]).await else {
        return;
    };
    let again = common::migrated_from(&store, 6, common::undo_version_7).await;
    again
        .put_vectors(&[vector(1, &[1, 2, 3, 4])])
        .await
        .expect("put");
    assert_eq!(sorted(&again, &[key(1)]).await, [vector(1, &[1, 2, 3, 4])]);
}

/// Unnamed statements (`prepared_statements=off`, what a pooler in transaction mode gets):
/// every operation, a repeated key in a put included.
#[tokio::test]
async fn vectors_work_with_unnamed_statements() {
    let Some(store) = common::open(&[("prepared_statements", "off")]).await else {
        return;
    };
    assert!(!store.prepares_statements());
    let put = [vector(2, &[2]), vector(1, &[1]), vector(2, &[3])];
    store.put_vectors(&put).await.expect("put");
    let keys = [key(1), key(2), key(3)];
    assert_eq!(
        sorted(&store, &keys).await,
        [vector(1, &[1]), vector(2, &[3])]
    );
    assert_eq!(
        store
            .delete_vectors(&[key(2), key(3)])
            .await
            .expect("delete"),
        1
    );
    assert_eq!(store.clear_vectors().await.expect("clear"), 1);
    assert!(sorted(&store, &keys).await.is_empty());
}

/// Three processes × 20 tasks put the same 40 keys, each in another order (with repeats), and
/// delete some of them: no call fails (rows are locked in key order, so none deadlocks), and
/// every key left holds one of the vectors written for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_sharing_keys_never_deadlock() {
    let Some(first) = common::open(&[]).await else {
        return;
    };
    let mut stores = vec![first.clone()];
    stores.extend(other_processes(&first, 2).await);
    let mut tasks = Vec::new();
    for (p, store) in stores.iter().enumerate() {
        for t in 0..20u8 {
            let store = store.clone();
            let task = p as u8 * 20 + t;
            tasks.push(tokio::spawn(async move {
                for round in 0..5u8 {
                    let mut keys: Vec<u8> = (0..40).collect();
                    keys.rotate_left(usize::from(task.wrapping_mul(7).wrapping_add(round)) % 40);
                    if !task.is_multiple_of(2) {
                        keys.reverse();
                    }
                    let mut put: Vec<StoredVector> =
                        keys.iter().map(|&n| vector(n, &[n, task, round])).collect();
                    put.push(vector(keys[0], &[keys[0], task, round]));
                    store.put_vectors(&put).await.expect("put");
                    if task.is_multiple_of(5) {
                        let gone: Vec<VectorKey> = keys[..10].iter().map(|&n| key(n)).collect();
                        store.delete_vectors(&gone).await.expect("delete");
                    }
                }
            }));
        }
    }
    for task in tasks {
        task.await.expect("task");
    }
    let all: Vec<VectorKey> = (0..40).map(key).collect();
    for v in sorted(&first, &all).await {
        assert_eq!(v.data.len(), 3);
        assert_eq!(
            v.key,
            key(v.data[0]),
            "each key holds a vector written for it"
        );
    }
    let cleared = first.clear_vectors().await.expect("clear");
    assert!(cleared <= 40);
}
