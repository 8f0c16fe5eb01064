//! Embedding vectors on files: what a reopened store and another store on the same root
//! (another process, with caches of its own) read back; compaction seen by another store; and
//! what a crash or an edit leaves in the binary log is repaired, never a panic or a wrong
//! answer.

mod common;

use std::path::{Path, PathBuf};

use agentmem_core::{ErrorKind, StoredVector, VectorKey, VectorStore};
use agentmem_file::RepairKind;
use common::{append_bytes, kinds, open};

fn key(n: u32) -> VectorKey {
    let mut bytes = [0x5au8; 32];
    bytes[..4].copy_from_slice(&n.to_be_bytes());
    VectorKey(bytes)
}

/// A 384-dimension vector, distinct per `n` and `round`.
fn vector(n: u32, round: u32) -> StoredVector {
    let values: Vec<f32> = (0..384).map(|i| (i + n * 1000 + round) as f32).collect();
    StoredVector::new(key(n), &values)
}

fn log(root: &Path) -> PathBuf {
    root.join("vectors").join("vectors.log")
}

async fn sorted(store: &dyn VectorStore, keys: &[VectorKey]) -> Vec<StoredVector> {
    let mut found = store.get_vectors(keys).await.expect("get");
    found.sort_by_key(|v| v.key);
    found
}

/// Puts, replacements, deletes and a clear are all replayed by a store opened afresh and
/// seen by another open store.
#[tokio::test]
async fn a_reopened_store_and_another_store_replay_every_write() {
    let dir = tempfile::tempdir().expect("temp dir");
    let keys: Vec<VectorKey> = (0..6).map(key).collect();
    let (a, b) = (open(dir.path()).await, open(dir.path()).await);
    a.put_vectors(&(0..5).map(|n| vector(n, 0)).collect::<Vec<_>>())
        .await
        .expect("put");
    b.put_vectors(&[vector(1, 1), vector(5, 0)])
        .await
        .expect("put");
    assert_eq!(
        a.delete_vectors(&[key(2), key(2), key(9)])
            .await
            .expect("delete"),
        1
    );
    let expected = vec![
        vector(0, 0),
        vector(1, 1),
        vector(3, 0),
        vector(4, 0),
        vector(5, 0),
    ];
    assert_eq!(sorted(&*a, &keys).await, expected);
    assert_eq!(sorted(&*b, &keys).await, expected);
    drop((a, b));

    let reopened = open(dir.path()).await;
    assert_eq!(sorted(&*reopened, &keys).await, expected);
    assert!(reopened.repairs().is_empty());
    let other = open(dir.path()).await;
    assert_eq!(other.clear_vectors().await.expect("clear"), 5);
    assert!(sorted(&*reopened, &keys).await.is_empty());
    assert!(sorted(&*open(dir.path()).await, &keys).await.is_empty());
}

/// A record cut off by a crash is truncated away on the next use (the records before it
/// stay), and the log takes appends after it again.
#[tokio::test]
async fn a_torn_last_record_is_cut_away() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open(dir.path()).await;
    store
        .put_vectors(&[vector(1, 0), vector(2, 0)])
        .await
        .expect("put");
    let whole = std::fs::metadata(log(dir.path())).expect("log").len();
    // Part of a put of key 3: its kind, key and length, then a little of its data.
    let mut torn = vec![1u8];
    torn.extend_from_slice(key(3).as_bytes());
    torn.extend_from_slice(&1536u32.to_le_bytes());
    torn.extend_from_slice(&[7; 100]);
    append_bytes(&log(dir.path()), &torn);

    let reopened = open(dir.path()).await;
    let keys = [key(1), key(2), key(3)];
    assert_eq!(
        sorted(&*reopened, &keys).await,
        [vector(1, 0), vector(2, 0)]
    );
    assert_eq!(kinds(&reopened), [RepairKind::TornTail]);
    assert_eq!(
        std::fs::metadata(log(dir.path())).expect("log").len(),
        whole
    );
    reopened.put_vectors(&[vector(3, 0)]).await.expect("put");
    let again = open(dir.path()).await;
    assert_eq!(sorted(&*again, &keys).await.len(), 3);
    assert!(again.check_vectors(false).await.expect("check").is_empty());
}

/// A record damaged in the middle of the log (its checksum does not match) is set aside with
/// what follows it, in `vectors/quarantine/`; the records before it stay.
#[tokio::test]
async fn a_damaged_record_is_set_aside_with_what_follows() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open(dir.path()).await;
    for n in 0..3 {
        store.put_vectors(&[vector(n, 0)]).await.expect("put");
    }
    drop(store);
    let mut bytes = std::fs::read(log(dir.path())).expect("read");
    let record = (bytes.len() - 12) / 3;
    bytes[12 + record + 40] ^= 0xff; // the second record's data
    std::fs::write(log(dir.path()), &bytes).expect("write");

    let store = open(dir.path()).await;
    let found = store.check_vectors(false).await.expect("check");
    assert_eq!(found.len(), 1);
    assert_eq!(
        (found[0].kind, found[0].repaired),
        (RepairKind::Quarantined, false)
    );
    assert_eq!(
        std::fs::read(log(dir.path())).expect("read"),
        bytes,
        "unchanged"
    );
    let keys = [key(0), key(1), key(2)];
    assert_eq!(sorted(&*store, &keys).await, [vector(0, 0)]);
    assert_eq!(kinds(&store), [RepairKind::Quarantined]);
    let aside = std::fs::read_dir(dir.path().join("vectors").join("quarantine"))
        .expect("quarantine")
        .map(|e| std::fs::read(e.expect("entry").path()).expect("read"))
        .collect::<Vec<_>>();
    assert_eq!(
        aside,
        [bytes[12 + record..].to_vec()],
        "set aside byte for byte"
    );
    assert!(store.check_vectors(false).await.expect("check").is_empty());
}

/// A file that is not a vector log is set aside whole; one of a newer version is refused and
/// left alone.
#[tokio::test]
async fn a_foreign_or_newer_log_is_set_aside_or_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open(dir.path()).await;
    store.put_vectors(&[vector(1, 0)]).await.expect("put");
    std::fs::write(log(dir.path()), b"not vectors at all").expect("write");
    assert!(sorted(&*store, &[key(1)]).await.is_empty());
    assert_eq!(kinds(&store), [RepairKind::QuarantinedFile]);
    store.put_vectors(&[vector(2, 0)]).await.expect("put");
    assert_eq!(sorted(&*open(dir.path()).await, &[key(2)]).await.len(), 1);

    let mut newer = b"AGMVECT\n".to_vec();
    newer.extend_from_slice(&9u32.to_le_bytes());
    std::fs::write(log(dir.path()), &newer).expect("write");
    let err = store.get_vectors(&[key(2)]).await.expect_err("newer");
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    assert_eq!(std::fs::read(log(dir.path())).expect("read"), newer);
}

/// Replacing the same vectors again and again compacts the log (to about the live vectors),
/// and another store reads the compacted log afresh.
#[tokio::test]
async fn many_replacements_compact_the_log() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (a, b) = (open(dir.path()).await, open(dir.path()).await);
    let keys: Vec<VectorKey> = (0..10).map(key).collect();
    assert!(sorted(&*b, &keys).await.is_empty());
    for round in 0..300 {
        let batch: Vec<StoredVector> = (0..10).map(|n| vector(n, round)).collect();
        a.put_vectors(&batch).await.expect("put");
    }
    let len = std::fs::metadata(log(dir.path())).expect("log").len();
    // 3,000 records written; compaction keeps the log to about a thousand at most.
    let record = (41 + 384 * 4) as u64;
    assert!(len < 1_100 * record, "compacted: {len} bytes");
    let last: Vec<StoredVector> = (0..10).map(|n| vector(n, 299)).collect();
    assert_eq!(sorted(&*b, &keys).await, last);
    assert_eq!(sorted(&*open(dir.path()).await, &keys).await, last);
}
