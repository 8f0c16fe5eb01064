//! [`VectorStore`] for [`MongoStore`]: one document per vector in `vectors`,
//! `{_id: BinData(key), data: BinData}`, without transactions (the same on every server).
//!
//! - A put is one unordered `update` command per batch of replacement upserts by `_id` (a
//!   repeated key of one call deduplicated in the client first, the last winning), split so
//!   that no command passes the server's limits. Replacing by `_id` is idempotent, so a batch
//!   that lost a race (two first upserts of one key: a duplicate key; a write conflict) is
//!   simply sent again.
//! - A get is one `find` with `_id: {$in: keys}` (the validate layer allows 1,000 keys).
//! - A delete is one `deleteMany` with `_id: {$in: keys}`, a clear one `deleteMany({})`, each
//!   counted by the server.
//!
//! Without transactions a put of several batches is not isolated from readers, which may see
//! some of its batches; a put that fails midway may leave some of them stored.

use std::collections::HashSet;

use agentmem_core::{async_trait, Error, Result, StoredVector, VectorKey, VectorStore};
use mongodb::bson::{doc, Bson, Document};
use mongodb::error::Error as DriverError;

use crate::codec::{all_docs, binary, binary_field};
use crate::error::{from_driver, is_transient, server_code, DUPLICATE_KEY, WRITE_CONFLICT};
use crate::retry::{retry, Step};
use crate::schema::VECTORS;
use crate::store::MongoStore;

/// The field holding a vector's bytes.
const DATA: &str = "data";

/// The most upserts one `update` command carries: the `maxWriteBatchSize` of MongoDB before
/// 3.6, so that every server takes a batch whole.
const UPSERTS_PER_BATCH: usize = 1000;

/// The most vector bytes one `update` command carries: half the 16 MiB a command may take,
/// leaving ample room for the keys and the command's own fields.
const BYTES_PER_BATCH: usize = 8 * 1024 * 1024;

/// The vectors of `vectors` to store, the last of each key (in the order of those last ones).
fn last_of_each(vectors: &[StoredVector]) -> Vec<&StoredVector> {
    let mut seen = HashSet::new();
    let mut last: Vec<&StoredVector> = vectors
        .iter()
        .rev()
        .filter(|v| seen.insert(v.key))
        .collect();
    last.reverse();
    last
}

/// `vectors` cut into batches of at most [`UPSERTS_PER_BATCH`] upserts and (but for a single
/// vector, which is far smaller) [`BYTES_PER_BATCH`] bytes.
fn batches<'a>(vectors: &[&'a StoredVector]) -> Vec<Vec<&'a StoredVector>> {
    let mut out: Vec<Vec<&StoredVector>> = Vec::new();
    let mut bytes = 0;
    for v in vectors {
        match out.last_mut() {
            Some(batch)
                if batch.len() < UPSERTS_PER_BATCH && bytes + v.data.len() <= BYTES_PER_BATCH =>
            {
                batch.push(v);
                bytes += v.data.len();
            }
            _ => {
                out.push(vec![v]);
                bytes = v.data.len();
            }
        }
    }
    out
}

/// The `_id` of the vector of `key`.
fn key_id(key: &VectorKey) -> Bson {
    binary(key.as_bytes())
}

/// The `_id`s of `keys`, each once.
fn key_ids(keys: &[VectorKey]) -> Vec<Bson> {
    let mut seen = HashSet::new();
    keys.iter()
        .filter(|k| seen.insert(**k))
        .map(key_id)
        .collect()
}

/// A stored vector from its document; `CorruptData` when the key is not 32 bytes of binary
/// data or the bytes are missing.
fn vector_from(d: &Document) -> Result<StoredVector> {
    Ok(StoredVector {
        key: VectorKey::from_slice(&binary_field(d, "_id")?)?,
        data: binary_field(d, DATA)?,
    })
}

/// What one try of a vector write came to: done, or, when it lost a race (a duplicate key
/// from two first upserts of one key, a write conflict), another try.
fn step<T>(outcome: std::result::Result<T, DriverError>) -> Result<Step<T>> {
    match outcome {
        Ok(value) => Ok(Step::Done(value)),
        Err(e) if is_transient(&e) || server_code(&e) == Some(DUPLICATE_KEY) => {
            Ok(Step::Retry(Err(from_driver(e))))
        }
        Err(e) => Err(from_driver(e)),
    }
}

/// The outcome of an `update` command from its reply, which reports failed statements in
/// `writeErrors` (and a write concern failure in `writeConcernError`) under `ok: 1`: another
/// try when every failed statement lost a race, an error otherwise.
fn update_outcome(reply: &Document) -> Result<Step<()>> {
    if let Ok(failure) = reply.get_document("writeConcernError") {
        return Err(Error::backend(format!(
            "MongoDB could not confirm storing vectors: {}",
            failure.get_str("errmsg").unwrap_or("a write concern error")
        )));
    }
    let Ok(errors) = reply.get_array("writeErrors") else {
        return Ok(Step::Done(()));
    };
    let codes: Vec<(i64, &str)> = errors
        .iter()
        .filter_map(Bson::as_document)
        .map(|w| {
            let code = match w.get("code") {
                Some(Bson::Int32(c)) => i64::from(*c),
                Some(Bson::Int64(c)) => *c,
                _ => 0,
            };
            (code, w.get_str("errmsg").unwrap_or("no message"))
        })
        .collect();
    let lost_race = |c: i64| c == i64::from(DUPLICATE_KEY) || c == i64::from(WRITE_CONFLICT);
    match codes.iter().find(|(c, _)| !lost_race(*c)) {
        None if !errors.is_empty() => Ok(Step::Retry(Err(Error::conflict(
            "storing vectors kept colliding with concurrent writers of the same keys",
        )))),
        None => Ok(Step::Done(())),
        Some((code, message)) => Err(Error::backend(format!(
            "MongoDB refused to store a vector (code {code}): {message}"
        ))),
    }
}

impl MongoStore {
    /// Upserts `batch` (distinct keys) in one unordered `update` command, retried while it
    /// loses races.
    async fn upsert_vectors(&self, batch: &[&StoredVector]) -> Result<()> {
        let updates: Vec<Document> = batch
            .iter()
            .map(|v| {
                let id = key_id(&v.key);
                doc! {
                    "q": {"_id": id.clone()},
                    "u": {"_id": id, DATA: binary(&v.data)},
                    "upsert": true,
                }
            })
            .collect();
        let command = doc! {"update": VECTORS, "updates": updates, "ordered": false};
        retry(|_| async {
            match self.database().run_command(command.clone()).await {
                Ok(reply) => update_outcome(&reply),
                Err(e) => step(Err(e)),
            }
        })
        .await
    }

    async fn put_vector_docs(&self, vectors: &[StoredVector]) -> Result<()> {
        for batch in batches(&last_of_each(vectors)) {
            self.upsert_vectors(&batch).await?;
        }
        Ok(())
    }

    async fn get_vector_docs(&self, keys: &[VectorKey]) -> Result<Vec<StoredVector>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let found = all_docs(self.vectors().find(doc! {"_id": {"$in": key_ids(keys)}})).await?;
        found.iter().map(vector_from).collect()
    }

    /// Deletes the vectors `filter` selects, retried while it loses races; how many went.
    async fn delete_vector_docs(&self, filter: Document) -> Result<u64> {
        retry(|_| async {
            let deleted = self.vectors().delete_many(filter.clone()).await;
            step(deleted.map(|d| d.deleted_count))
        })
        .await
    }
}

#[async_trait]
impl VectorStore for MongoStore {
    async fn put_vectors(&self, vectors: &[StoredVector]) -> Result<()> {
        self.put_vector_docs(vectors).await
    }

    async fn get_vectors(&self, keys: &[VectorKey]) -> Result<Vec<StoredVector>> {
        self.get_vector_docs(keys).await
    }

    async fn delete_vectors(&self, keys: &[VectorKey]) -> Result<u64> {
        if keys.is_empty() {
            return Ok(0);
        }
        self.delete_vector_docs(doc! {"_id": {"$in": key_ids(keys)}})
            .await
    }

    async fn clear_vectors(&self) -> Result<u64> {
        self.delete_vector_docs(doc! {}).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(n: u8, len: usize) -> StoredVector {
        StoredVector {
            key: VectorKey([n; 32]),
            data: vec![n; len],
        }
    }

    #[test]
    fn the_last_of_a_repeated_key_wins() {
        let vectors = [v(1, 4), v(2, 4), v(1, 8)];
        let kept: Vec<(u8, usize)> = last_of_each(&vectors)
            .iter()
            .map(|v| (v.key.0[0], v.data.len()))
            .collect();
        assert_eq!(kept, [(2, 4), (1, 8)]);
    }

    #[test]
    fn batches_stay_under_both_limits() {
        let small: Vec<StoredVector> = (0..2500).map(|n| v((n % 250) as u8, 4)).collect();
        let refs: Vec<&StoredVector> = small.iter().collect();
        let sizes: Vec<usize> = batches(&refs).iter().map(Vec::len).collect();
        assert_eq!(sizes, [1000, 1000, 500]);
        let big: Vec<StoredVector> = (0..300).map(|n| v(n as u8, 60_000)).collect();
        let refs: Vec<&StoredVector> = big.iter().collect();
        let cut = batches(&refs);
        assert!(cut.len() > 1);
        assert_eq!(cut.iter().map(Vec::len).sum::<usize>(), 300);
        for batch in &cut {
            let bytes: usize = batch.iter().map(|v| v.data.len()).sum();
            assert!(bytes <= BYTES_PER_BATCH, "{bytes}");
        }
        assert!(batches(&[]).is_empty());
    }

    #[test]
    fn update_replies_are_read() {
        assert!(matches!(
            update_outcome(&doc! {"ok": 1, "n": 2}),
            Ok(Step::Done(()))
        ));
        let raced = doc! {"ok": 1, "writeErrors": [{"index": 0, "code": 11000, "errmsg": "dup"}]};
        assert!(matches!(update_outcome(&raced), Ok(Step::Retry(Err(_)))));
        let refused = doc! {"ok": 1, "writeErrors": [{"index": 0, "code": 11000, "errmsg": "dup"}, {"index": 1, "code": 2, "errmsg": "bad"}]};
        let err = update_outcome(&refused).err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("code 2")));
        let unconfirmed = doc! {"ok": 1, "writeConcernError": {"code": 64, "errmsg": "timeout"}};
        assert!(update_outcome(&unconfirmed).is_err());
    }

    #[test]
    fn a_stored_key_must_be_32_bytes() {
        let d = doc! {"_id": binary(&[1; 31]), DATA: binary(&[1])};
        assert!(vector_from(&d).is_err());
        let d = doc! {"_id": binary(&[1; 32])};
        assert!(vector_from(&d).is_err());
        let d = doc! {"_id": binary(&[1; 32]), DATA: binary(&[5, 6])};
        assert_eq!(
            vector_from(&d).ok(),
            Some(v(1, 0)).map(|mut x| {
                x.data = vec![5, 6];
                x
            })
        );
    }
}
