//! MongoDB-specific embedding-vector behaviour against `MONGODB_URL`: the stored layout (key
//! and bytes as binary data), puts larger than one `update` command may carry, several
//! clients writing one key at once, and stored documents that are not vectors. The contract
//! itself is the conformance suite's `Vectors` area (`tests/conformance.rs`, and on the
//! second server `tests/text_server.rs`).
mod common;

use agentmem_core::vector::MAX_VECTOR_BYTES;
use agentmem_core::{ErrorKind, SessionStore, StoredVector, VectorKey, VectorStore};
use agentmem_mongodb::mongodb::bson::spec::BinarySubtype;
use agentmem_mongodb::mongodb::bson::{doc, Binary, Bson, Document};
use agentmem_mongodb::MongoStore;
use common::{on_three_clients_at_once, raw};

fn key(n: u32) -> VectorKey {
    let mut bytes = [0x3c; 32];
    bytes[..4].copy_from_slice(&n.to_be_bytes());
    VectorKey(bytes)
}

fn binary(bytes: &[u8]) -> Bson {
    Bson::Binary(Binary {
        subtype: BinarySubtype::Generic,
        bytes: bytes.to_vec(),
    })
}

/// Inserts `d` into the store's `vectors` collection as is.
async fn insert_raw(store: &MongoStore, d: Document) {
    store
        .client()
        .database(store.database_name())
        .collection::<Document>("vectors")
        .insert_one(d)
        .await
        .unwrap();
}

/// The store declares vectors; each vector is one document `{_id: BinData(key), data:
/// BinData}` in `vectors`, replaced in place by a later put of its key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vectors_are_stored_as_binary_by_key() {
    let Some(store) = common::store().await else {
        return;
    };
    assert!(store.capabilities().vectors);
    let v = StoredVector {
        key: key(1),
        data: vec![0, 1, 2, 0xff],
    };
    store.put_vectors(std::slice::from_ref(&v)).await.unwrap();
    let stored = raw(&store, "vectors").await;
    assert_eq!(
        stored,
        [doc! {"_id": binary(&key(1).0), "data": binary(&v.data)}]
    );
    let replaced = StoredVector {
        key: key(1),
        data: vec![9; 8],
    };
    store
        .put_vectors(std::slice::from_ref(&replaced))
        .await
        .unwrap();
    let stored = raw(&store, "vectors").await;
    assert_eq!(
        stored,
        [doc! {"_id": binary(&key(1).0), "data": binary(&replaced.data)}]
    );
}

/// A put of 300 of the largest vectors and 599 small ones (about 20 MB: several `update`
/// commands, cut by size; the cut by count is the unit tests') stores every one of them, the last of a repeated key
/// winning across the commands' boundaries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_put_larger_than_one_command_stores_everything() {
    let Some(store) = common::store().await else {
        return;
    };
    let size = |n: u32| if n < 300 { MAX_VECTOR_BYTES } else { 4 };
    let mut vectors: Vec<StoredVector> = (0..899u32)
        .map(|n| StoredVector {
            key: key(n),
            data: vec![(n % 251) as u8; size(n)],
        })
        .collect();
    vectors.push(StoredVector {
        key: key(0),
        data: vec![7; 3],
    });
    store.put_vectors(&vectors).await.unwrap();
    let keys: Vec<VectorKey> = (0..899).map(key).collect();
    let mut found = store.get_vectors(&keys).await.unwrap();
    found.sort_by_key(|v| v.key);
    assert_eq!(found.len(), 899);
    assert_eq!(found[0].data, [7; 3], "the last of key 0");
    assert_eq!(found[1..], vectors[1..899]);
    assert_eq!(store.clear_vectors().await.unwrap(), 899);
}

/// Three clients putting the same 50 new keys at once (first upserts racing to insert): every
/// call succeeds, and each key holds one document with one client's vector.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_clients_putting_one_key_at_once_all_succeed() {
    let Some(store) = common::store().await else {
        return;
    };
    on_three_clients_at_once(&store, 50, |c, n, client| async move {
        let v = StoredVector {
            key: key(n),
            data: vec![c as u8; 16],
        };
        client.put_vectors(&[v]).await.unwrap();
    })
    .await;
    let stored = raw(&store, "vectors").await;
    assert_eq!(stored.len(), 50, "one document per key");
    let keys: Vec<VectorKey> = (0..50).map(key).collect();
    for v in store.get_vectors(&keys).await.unwrap() {
        assert!(v.data.len() == 16 && v.data[0] < 3, "{v:?}");
        assert!(
            v.data.iter().all(|b| *b == v.data[0]),
            "one client's vector"
        );
    }
}

/// A stored document that is not a vector (a key of another length, bytes missing or not
/// binary) is `CorruptData` when read, and still deleted and counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_documents_that_are_not_vectors_are_corrupt_data() {
    let Some(store) = common::store().await else {
        return;
    };
    let short = VectorKey([1; 32]);
    let bad = [
        doc! {"_id": binary(&[1; 31]), "data": binary(&[1])},
        doc! {"_id": binary(&[2; 32])},
        doc! {"_id": binary(&[3; 32]), "data": "not bytes"},
    ];
    for d in bad {
        insert_raw(&store, d).await;
    }
    for n in [2u8, 3] {
        let err = store.get_vectors(&[VectorKey([n; 32])]).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::CorruptData, "{err}");
    }
    assert!(
        store.get_vectors(&[short]).await.unwrap().is_empty(),
        "a 31-byte key is no 32-byte key"
    );
    assert_eq!(
        store.delete_vectors(&[VectorKey([2; 32])]).await.unwrap(),
        1
    );
    assert_eq!(store.clear_vectors().await.unwrap(), 2);
}
