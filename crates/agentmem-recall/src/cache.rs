//! Decoded vectors kept in memory between searches, so a search at 100,000 items ranks
//! from memory instead of loading and decoding every candidate's vector from the store.
//!
//! An entry never goes stale: a key is the SHA-256 of a text, so its vector changes only
//! with the model, and a [`Recall`](crate::Recall) checks the store's model before every
//! ranking; vectors are cached only when the model is still its own after they were read
//! (another process re-embedding with another model meanwhile leaves nothing cached).
//! Entries are unit vectors, so similarity is one dot product. What is over the capacity is
//! not cached (read from the store each time) rather than evicting: no churn under a scan.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex, PoisonError};

use agentmem_core::VectorKey;

/// The default capacity: 256 MiB of vector data, 170,000 vectors of 384 dimensions.
pub const DEFAULT_VECTOR_CACHE_BYTES: usize = 256 << 20;

/// A unit vector (its cosine with another unit vector is their dot product).
pub(crate) type UnitVector = Arc<[f32]>;

/// Scales `vector` to unit length; an all-zero vector stays zero (similar to nothing).
pub(crate) fn unit(vector: &[f32]) -> UnitVector {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm == 0.0 || !norm.is_finite() {
        return vector.iter().map(|_| 0.0).collect();
    }
    vector.iter().map(|x| x / norm).collect()
}

/// The dot product of two vectors of the same length (0 when they differ).
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return 0.0;
    }
    // Eight independent sums let the compiler vectorise without reassociating floats.
    let mut sums = [0f32; 8];
    let (a_chunks, b_chunks) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = a_chunks
        .remainder()
        .iter()
        .zip(b_chunks.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a_chunks.zip(b_chunks) {
        for ((sum, x), y) in sums.iter_mut().zip(x).zip(y) {
            *sum += x * y;
        }
    }
    sums.iter().sum::<f32>() + tail
}

/// The cache a [`Recall`](crate::Recall) and its clones share.
#[derive(Debug)]
pub(crate) struct VectorCache {
    capacity_bytes: usize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    vectors: HashMap<VectorKey, UnitVector, BuildHasherDefault<KeyHasher>>,
    bytes: usize,
}

/// Hashes a [`VectorKey`] by folding its words. The cache only holds keys that are SHA-256
/// digests of texts ([`vector_key`](crate::vector_key)), already uniform and not steerable,
/// so hashing them again (SipHash) would only slow the lookups a search makes per candidate.
#[derive(Debug, Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // A key's 32 bytes arrive in one write, after its length (a `write_usize`).
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = self.0.rotate_left(5) ^ u64::from_le_bytes(word);
        }
    }

    fn write_usize(&mut self, _length: usize) {}
}

impl VectorCache {
    /// A cache holding at most `capacity_bytes` of vector data (0: caches nothing).
    pub(crate) fn new(capacity_bytes: usize) -> Self {
        VectorCache {
            capacity_bytes,
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // The state is a map that every operation leaves whole: a panic elsewhere cannot
        // have left it half-changed.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The cached vectors of `keys` (absent keys left out).
    pub(crate) fn get_many(&self, keys: &[VectorKey]) -> HashMap<VectorKey, UnitVector> {
        let state = self.state();
        keys.iter()
            .filter_map(|key| state.vectors.get(key).map(|v| (*key, Arc::clone(v))))
            .collect()
    }

    /// Similarity to `query` (a unit vector) of each candidate `keys[i]`, `i` from
    /// `candidates`, that is cached: `(i, similarity)`; the candidates not cached are
    /// returned apart, in order. One lock for the whole scan, no vector copied.
    pub(crate) fn score(
        &self, query: &[f32], keys: &[VectorKey], candidates: impl IntoIterator<Item = usize>,
    ) -> (Vec<(usize, f32)>, Vec<usize>) {
        let state = self.state();
        let (mut scored, mut missing) = (Vec::new(), Vec::new());
        for i in candidates {
            match state.vectors.get(&keys[i]) {
                Some(vector) => scored.push((i, dot(query, vector))),
                None => missing.push(i),
            }
        }
        (scored, missing)
    }

    /// Caches `vectors` while there is room.
    pub(crate) fn insert_many<'a>(
        &self, vectors: impl IntoIterator<Item = (&'a VectorKey, &'a UnitVector)>,
    ) {
        if self.capacity_bytes == 0 {
            return;
        }
        let mut state = self.state();
        for (key, vector) in vectors {
            let size = std::mem::size_of_val(&**vector);
            if state.bytes + size > self.capacity_bytes {
                return;
            }
            if state.vectors.insert(*key, Arc::clone(vector)).is_none() {
                state.bytes += size;
            }
        }
    }

    /// Forgets every vector (the store's vectors were replaced by another model's).
    pub(crate) fn clear(&self) {
        let mut state = self.state();
        state.vectors.clear();
        state.bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u8) -> VectorKey {
        VectorKey([n; 32])
    }

    #[test]
    fn dot_of_unit_vectors_is_their_cosine() {
        let a = unit(&[3.0, 4.0, 0.0, 1.0, 2.0, 2.0, 7.0, 1.0, 5.0, 0.5]);
        let b = unit(&[1.0, 0.0, 2.0, 3.0, 1.0, 1.0, 0.0, 4.0, 2.0, 2.5]);
        let cosine = crate::cosine(&a, &b);
        assert!((dot(&a, &b) - cosine).abs() < 1e-6);
        assert!((dot(&a, &a) - 1.0).abs() < 1e-6);
        assert_eq!(dot(&a, &b[..9]), 0.0);
        assert!(unit(&[0.0, 0.0]).iter().all(|x| *x == 0.0));
    }

    #[test]
    fn caches_up_to_its_capacity_and_clears() {
        let cache = VectorCache::new(2 * 4 * 3);
        let v = unit(&[1.0, 2.0, 3.0]);
        let entries = [
            (key(1), v.clone()),
            (key(2), v.clone()),
            (key(3), v.clone()),
        ];
        cache.insert_many(entries.iter().map(|(k, v)| (k, v)));
        let got = cache.get_many(&[key(1), key(2), key(3)]);
        assert_eq!(got.len(), 2, "the third vector is over the capacity");
        // The same key again takes no more room.
        cache.insert_many([(&key(1), &v)]);
        assert_eq!(cache.get_many(&[key(1), key(2)]).len(), 2);
        cache.clear();
        assert!(cache.get_many(&[key(1)]).is_empty());
        let off = VectorCache::new(0);
        off.insert_many([(&key(1), &v)]);
        assert!(off.get_many(&[key(1)]).is_empty());
    }
}
