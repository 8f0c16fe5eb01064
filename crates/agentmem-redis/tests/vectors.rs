//! Embedding vectors on Redis beyond the conformance suite: the layout (one hash `P:vec`,
//! fields the keys' raw bytes), a key of another type is corrupt data, and, on a single
//! server (`REDIS_URL`) and on the cluster (`REDIS_CLUSTER_URL`), clears racing writers on
//! three connections count every vector exactly once.
use std::sync::Arc;

use agentmem_core::{ErrorKind, StoredVector, VectorKey, VectorStore};
use common::single_url;

mod common;

/// A key whose first two bytes are `n`.
fn key(n: u16) -> VectorKey {
    let mut bytes = [0x5a; 32];
    bytes[..2].copy_from_slice(&n.to_be_bytes());
    VectorKey(bytes)
}

fn vector(n: u16) -> StoredVector {
    StoredVector {
        key: key(n),
        data: n.to_le_bytes().repeat(3),
    }
}

#[tokio::test]
async fn vectors_are_one_hash_keyed_by_raw_bytes() {
    let Some((store, mut raw, _guard)) = common::store_and_raw(&single_url(), "vec_layout").await
    else {
        return;
    };
    let prefix = store.prefix().to_owned();
    let hash = format!("{prefix}:vec");
    store.put_vectors(&[vector(1), vector(2)]).await.unwrap();
    let held: Vec<u8> = redis::cmd("HGET")
        .arg(&hash)
        .arg(key(1).as_bytes().as_slice())
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(held, vector(1).data);
    let mut keys = common::keys(&mut raw, &format!("{prefix}:*")).await;
    keys.sort();
    assert_eq!(keys, [format!("{prefix}:schema"), hash.clone()]);
    assert_eq!(store.clear_vectors().await.unwrap(), 2);
    let keys = common::keys(&mut raw, &format!("{prefix}:*")).await;
    assert_eq!(
        keys,
        [format!("{prefix}:schema")],
        "clearing deletes the hash"
    );
}

#[tokio::test]
async fn a_vector_hash_of_another_type_is_corrupt_data() {
    let Some((store, mut raw, _guard)) = common::store_and_raw(&single_url(), "vec_type").await
    else {
        return;
    };
    let () = redis::cmd("SET")
        .arg(format!("{}:vec", store.prefix()))
        .arg("not a hash")
        .query_async(&mut raw)
        .await
        .unwrap();
    let kinds = [
        store.put_vectors(&[vector(1)]).await.unwrap_err().kind(),
        store.get_vectors(&[key(1)]).await.unwrap_err().kind(),
        store.delete_vectors(&[key(1)]).await.unwrap_err().kind(),
        store.clear_vectors().await.unwrap_err().kind(),
    ];
    assert_eq!(kinds, [ErrorKind::CorruptData; 4]);
}

/// On three connections, 300 tasks put two new vectors each while another clears again and
/// again: the clears' counts and what is left add up to every vector put, each once.
async fn clears_count_exactly(url: &str) {
    let Some((stores, _guard)) = common::stores_under_fresh_prefix(url, "vec_clears", 3).await
    else {
        return;
    };
    let mut writers = tokio::task::JoinSet::new();
    for (c, store) in stores.iter().enumerate() {
        for i in 0..100u16 {
            let store = Arc::clone(store);
            let n = (c as u16 * 100 + i) * 2;
            writers.spawn(async move {
                store
                    .put_vectors(&[vector(n), vector(n + 1)])
                    .await
                    .unwrap();
            });
        }
    }
    let clearer = Arc::clone(&stores[0]);
    let clears = tokio::spawn(async move {
        let mut cleared = 0;
        for _ in 0..50 {
            cleared += clearer.clear_vectors().await.unwrap();
            tokio::task::yield_now().await;
        }
        cleared
    });
    while let Some(done) = writers.join_next().await {
        done.unwrap();
    }
    let cleared = clears.await.unwrap();
    let left = stores[1].clear_vectors().await.unwrap();
    assert_eq!(cleared + left, 600);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn clears_racing_writers_count_every_vector_once() {
    clears_count_exactly(&single_url()).await;
}

/// The same on the Redis Cluster (the store's keys on one slot).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn clears_racing_writers_count_every_vector_once_on_the_cluster() {
    clears_count_exactly(&agentmem_testkit::servers::redis_cluster_url()).await;
}
