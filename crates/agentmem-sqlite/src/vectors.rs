//! Embedding vectors ([`VectorStore`]): one row a vector in `agentmem_vectors`, its 32-byte key
//! the primary key (a `WITHOUT ROWID` table, clustered on the key), its bytes as given.
//!
//! A put is one `IMMEDIATE` transaction of upserts, so a batch is stored whole or not at all and
//! a key repeated in it keeps its last vector. Reads and deletes bind the keys in chunks of
//! [`KEYS_PER_STATEMENT`] (`key IN (?, …)`), well below SQLite's smallest variable limit (999
//! before 3.32), so a call of up to [`MAX_VECTOR_BATCH`](agentmem_core::vector::MAX_VECTOR_BATCH)
//! keys takes a few statements; a read runs them in one snapshot, a delete in one transaction.

use std::collections::HashSet;

use agentmem_core::{async_trait, Result, StoredVector, VectorKey, VectorStore};
use rusqlite::{params_from_iter, Connection};

use crate::error::{corrupt, SqlResult};
use crate::store::SqliteStore;
use crate::tx::Tx;

/// The most keys one statement binds. The `IN` statements are prepared afresh, not cached:
/// their text varies with the call's key count, and caching each length would push the small
/// calls' statements out of the connection's cache.
const KEYS_PER_STATEMENT: usize = 500;

/// `<head> (?, ?, …)` with `n` placeholders.
fn in_list(head: &str, n: usize) -> String {
    let mut sql = String::with_capacity(head.len() + 3 * n + 2);
    sql.push_str(head);
    sql.push_str(" (");
    for i in 0..n {
        sql.push_str(if i == 0 { "?" } else { ", ?" });
    }
    sql.push(')');
    sql
}

/// `keys` without repeats, in their first order.
fn distinct(keys: &[VectorKey]) -> Vec<VectorKey> {
    let mut seen = HashSet::with_capacity(keys.len());
    keys.iter().copied().filter(|k| seen.insert(*k)).collect()
}

/// Stores each vector, replacing what its key held, in one transaction.
fn put(conn: &mut Connection, vectors: &[StoredVector]) -> SqlResult<()> {
    let tx = Tx::immediate(conn)?;
    {
        let mut upsert = tx.prepare_cached(
            "INSERT INTO agentmem_vectors (key, data) VALUES (?1, ?2)
             ON CONFLICT (key) DO UPDATE SET data = excluded.data",
        )?;
        for v in vectors {
            upsert.execute((&v.key.0[..], &v.data[..]))?;
        }
    }
    tx.commit()
}

/// The stored vectors among `keys`, each once, from one snapshot.
fn get(conn: &mut Connection, keys: &[VectorKey]) -> SqlResult<Vec<StoredVector>> {
    let keys = distinct(keys);
    let tx = Tx::deferred(conn)?;
    let mut found = Vec::new();
    for chunk in keys.chunks(KEYS_PER_STATEMENT) {
        let sql = in_list(
            "SELECT key, data FROM agentmem_vectors WHERE key IN",
            chunk.len(),
        );
        let mut select = tx.prepare(&sql)?;
        let mut rows = select.query(params_from_iter(chunk.iter().map(|k| &k.0[..])))?;
        while let Some(row) = rows.next()? {
            let key: Vec<u8> = row.get(0)?;
            let key = VectorKey::from_slice(&key).map_err(|_| corrupt("vector key"))?;
            found.push(StoredVector {
                key,
                data: row.get(1)?,
            });
        }
    }
    tx.commit()?;
    Ok(found)
}

/// Deletes the vectors of `keys` in one transaction; how many went.
fn delete(conn: &mut Connection, keys: &[VectorKey]) -> SqlResult<u64> {
    let keys = distinct(keys);
    let tx = Tx::immediate(conn)?;
    let mut removed = 0;
    for chunk in keys.chunks(KEYS_PER_STATEMENT) {
        let sql = in_list("DELETE FROM agentmem_vectors WHERE key IN", chunk.len());
        let mut delete = tx.prepare(&sql)?;
        removed += delete.execute(params_from_iter(chunk.iter().map(|k| &k.0[..])))? as u64;
    }
    tx.commit()?;
    Ok(removed)
}

/// Deletes every vector; how many went.
fn clear(conn: &mut Connection) -> SqlResult<u64> {
    let removed = conn
        .prepare_cached("DELETE FROM agentmem_vectors")?
        .execute([])?;
    Ok(removed as u64)
}

#[async_trait]
impl VectorStore for SqliteStore {
    async fn put_vectors(&self, vectors: &[StoredVector]) -> Result<()> {
        self.write_slice(vectors, put).await
    }

    async fn get_vectors(&self, keys: &[VectorKey]) -> Result<Vec<StoredVector>> {
        let keys = keys.to_vec();
        self.pool().read(move |conn| get(conn, &keys)).await
    }

    async fn delete_vectors(&self, keys: &[VectorKey]) -> Result<u64> {
        self.write_slice(keys, delete).await
    }

    async fn clear_vectors(&self) -> Result<u64> {
        self.pool().write(clear).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{migrated, rows_in};

    fn key(n: u32) -> VectorKey {
        let mut bytes = [0u8; 32];
        bytes[..4].copy_from_slice(&n.to_be_bytes());
        VectorKey(bytes)
    }

    fn vector(n: u32) -> StoredVector {
        StoredVector {
            key: key(n),
            data: n.to_le_bytes().to_vec(),
        }
    }

    /// More keys than one statement binds: every chunk is read and deleted, repeats once.
    #[test]
    fn calls_of_many_keys_span_several_statements() {
        let mut conn = migrated();
        let n = 2 * KEYS_PER_STATEMENT as u32 + 7;
        let all: Vec<StoredVector> = (0..n).map(vector).collect();
        put(&mut conn, &all).unwrap();
        assert_eq!(rows_in(&conn, "agentmem_vectors"), i64::from(n));
        let mut keys: Vec<VectorKey> = (0..n + 10).map(key).collect();
        keys.extend((0..n).map(key));
        let mut found = get(&mut conn, &keys).unwrap();
        found.sort_by_key(|v| v.key);
        assert_eq!(found, all);
        assert_eq!(delete(&mut conn, &keys).unwrap(), u64::from(n));
        assert_eq!(rows_in(&conn, "agentmem_vectors"), 0);
    }

    /// A put is one transaction: a repeated key keeps its last vector, and a failing row
    /// leaves nothing of the batch.
    #[test]
    fn a_put_is_whole_and_the_last_repeat_wins() {
        let mut conn = migrated();
        let last = StoredVector {
            key: key(1),
            data: vec![9],
        };
        put(&mut conn, &[vector(1), vector(2), last.clone()]).unwrap();
        assert_eq!(get(&mut conn, &[key(1)]).unwrap(), [last]);
        conn.execute_batch(
            "CREATE TRIGGER refuse BEFORE INSERT ON agentmem_vectors
             WHEN length(NEW.data) > 4 BEGIN SELECT RAISE(ABORT, 'refused'); END;",
        )
        .unwrap();
        let batch = [
            vector(3),
            StoredVector {
                key: key(4),
                data: vec![1; 5],
            },
        ];
        assert!(put(&mut conn, &batch).is_err());
        assert_eq!(rows_in(&conn, "agentmem_vectors"), 2);
        assert_eq!(clear(&mut conn).unwrap(), 2);
        assert_eq!(clear(&mut conn).unwrap(), 0);
    }
}
