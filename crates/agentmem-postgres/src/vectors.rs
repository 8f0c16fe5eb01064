//! [`VectorStore`] for [`PostgresStore`]: embedding vectors in one table (`schema.rs`,
//! version 7), with the statements of `sql/vectors.rs`.
//!
//! Each method is one statement, so one atomic step; none uses session state or advisory
//! locks, so they work behind PgBouncer in transaction mode like everything else.

use std::collections::BTreeMap;

use agentmem_core::{Result, StoredVector, VectorKey, VectorStore};
use async_trait::async_trait;
use tokio_postgres::Row;

use crate::codec::get;
use crate::statements::Exec;
use crate::store::{PostgresStore, READ_RETRIES};

/// The keys of `keys` as statement parameters.
fn key_params(keys: &[VectorKey]) -> Vec<&[u8]> {
    keys.iter().map(|k| k.as_bytes().as_slice()).collect()
}

/// The vector in a row of `get` (key, data).
fn vector_from_row(row: &Row) -> Result<StoredVector> {
    let key: Vec<u8> = get(row, 0)?;
    Ok(StoredVector {
        key: VectorKey::from_slice(&key)?,
        data: get(row, 1)?,
    })
}

#[async_trait]
impl VectorStore for PostgresStore {
    async fn put_vectors(&self, vectors: &[StoredVector]) -> Result<()> {
        if vectors.is_empty() {
            return Ok(());
        }
        // Distinct keys, the last of a repeated one winning, in key order (`sql/vectors.rs`).
        let distinct: BTreeMap<&[u8], &[u8]> = vectors
            .iter()
            .map(|v| (v.key.as_bytes().as_slice(), v.data.as_slice()))
            .collect();
        let keys: Vec<&[u8]> = distinct.keys().copied().collect();
        let data: Vec<&[u8]> = distinct.values().copied().collect();
        run!(self, 0, |client| async {
            client
                .execute_st(&self.sql.vectors.put, &[&keys, &data])
                .await
        })?;
        Ok(())
    }

    async fn get_vectors(&self, keys: &[VectorKey]) -> Result<Vec<StoredVector>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let keys = key_params(keys);
        let rows = run!(self, READ_RETRIES, |client| async {
            client.query_st(&self.sql.vectors.get, &[&keys]).await
        })?;
        rows.iter().map(vector_from_row).collect()
    }

    async fn delete_vectors(&self, keys: &[VectorKey]) -> Result<u64> {
        if keys.is_empty() {
            return Ok(0);
        }
        let keys = key_params(keys);
        run!(self, 0, |client| async {
            client.execute_st(&self.sql.vectors.delete, &[&keys]).await
        })
    }

    async fn clear_vectors(&self) -> Result<u64> {
        run!(self, 0, |client| async {
            client.execute_st(&self.sql.vectors.clear, &[]).await
        })
    }
}
