//! [`VectorStore`] for [`RedisStore`]: every vector of a store in one hash, `P:vec` (key
//! `Keys::vectors`, in the store's slot on a cluster), its field the vector key's 32 raw
//! bytes, its value the vector's bytes as given. Each method is one command on that key
//! (`HSET`, `HMGET`, `HDEL`), so each is atomic; `clear_vectors` counts and deletes in one
//! script (`lua/vector_clear.lua`), so its count is exact under concurrent writers.

use std::collections::HashSet;

use agentmem_core::{async_trait, Error, Result, StoredVector, VectorKey, VectorStore};
use redis::Cmd;

use crate::conn::Conn;
use crate::store::RedisStore;

impl RedisStore {
    /// Runs one command (see [`run`](Self::run)).
    async fn command<T: redis::FromRedisValue>(&self, cmd: &Cmd) -> Result<T> {
        self.run(|mut c: Conn| async move { cmd.query_async(&mut c).await })
            .await
    }
}

#[async_trait]
impl VectorStore for RedisStore {
    /// One `HSET` of every pair: a repeated key is set in order, so the last one wins.
    async fn put_vectors(&self, vectors: &[StoredVector]) -> Result<()> {
        if vectors.is_empty() {
            return Ok(());
        }
        let mut cmd = redis::cmd("HSET");
        cmd.arg(self.keys.vectors());
        for v in vectors {
            cmd.arg(v.key.as_bytes().as_slice()).arg(v.data.as_slice());
        }
        let _added: u64 = self.command(&cmd).await?;
        Ok(())
    }

    async fn get_vectors(&self, keys: &[VectorKey]) -> Result<Vec<StoredVector>> {
        let mut seen = HashSet::new();
        let distinct: Vec<VectorKey> = keys.iter().copied().filter(|k| seen.insert(*k)).collect();
        if distinct.is_empty() {
            return Ok(Vec::new());
        }
        let mut cmd = redis::cmd("HMGET");
        cmd.arg(self.keys.vectors());
        for key in &distinct {
            cmd.arg(key.as_bytes().as_slice());
        }
        let found: Vec<Option<Vec<u8>>> = self.command(&cmd).await?;
        if found.len() != distinct.len() {
            return Err(Error::corrupt(format!(
                "HMGET of {} vector keys answered {} values",
                distinct.len(),
                found.len()
            )));
        }
        Ok(distinct
            .into_iter()
            .zip(found)
            .filter_map(|(key, data)| data.map(|data| StoredVector { key, data }))
            .collect())
    }

    /// `HDEL` counts the fields it removed, a repeated one once.
    async fn delete_vectors(&self, keys: &[VectorKey]) -> Result<u64> {
        if keys.is_empty() {
            return Ok(0);
        }
        let mut cmd = redis::cmd("HDEL");
        cmd.arg(self.keys.vectors());
        for key in keys {
            cmd.arg(key.as_bytes().as_slice());
        }
        self.command(&cmd).await
    }

    async fn clear_vectors(&self) -> Result<u64> {
        let inv = self.keys.invoke(&self.scripts.vector_clear);
        self.invoke(&inv).await
    }
}
