//! Stored embedding vectors: the data kind semantic search ranks with.
//!
//! A store keeps vectors as opaque bytes under a 32-byte [`VectorKey`]. The key is derived
//! from the embedded text (the recall engine uses SHA-256 of the text), so one text has one
//! vector however many messages, forks or items repeat it, a vector follows its text through
//! fork, compaction and migration, and a changed text simply has no vector yet. Which model made
//! the vectors is recorded once per store, in the store property [`MODEL_PROPERTY`].
//!
//! Backends keep the bytes as given ([`StoredVector::data`]): plain little-endian `f32`s
//! ([`encode_vector`]), or a sealed form when an encryption layer sits above the store.

use std::fmt;

use crate::error::{Error, Result};

/// The store property that records the embedding model a store's vectors come from
/// (see [`ModelIdentity`]).
pub const MODEL_PROPERTY: &str = "agentmem.embedding.model";

/// The most bytes one stored vector may take (16,384 dimensions of `f32`, less room for
/// sealing).
pub const MAX_VECTOR_BYTES: usize = 64 * 1024 - 256;

/// How a sealed (encrypted) vector's bytes begin: the encryption layer's form, which may take
/// up to [`SEALING_ROOM`] bytes more than [`MAX_VECTOR_BYTES`].
pub const SEALED_VECTOR_PREFIX: &[u8] = b"agentmem-vec:v1:";

/// The room a sealed vector may take beyond [`MAX_VECTOR_BYTES`] (header, nonce, tag).
pub const SEALING_ROOM: usize = 256;

/// The most vectors (or keys) one vector call may carry.
pub const MAX_VECTOR_BATCH: usize = 1_000;

/// The key of a stored vector: 32 bytes derived from the text it embeds.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VectorKey(pub [u8; 32]);

impl VectorKey {
    /// The key's bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The key from a slice of exactly 32 bytes; `CorruptData` otherwise (a key read back from
    /// a store).
    ///
    /// ```
    /// use agentmem_core::VectorKey;
    /// assert!(VectorKey::from_slice(&[7; 32]).is_ok());
    /// assert!(VectorKey::from_slice(&[7; 31]).is_err());
    /// ```
    pub fn from_slice(bytes: &[u8]) -> Result<Self> {
        <[u8; 32]>::try_from(bytes).map(VectorKey).map_err(|_| {
            Error::corrupt(format!(
                "a stored vector key has {} bytes, not 32",
                bytes.len()
            ))
        })
    }

    /// The key as 64 lowercase hex digits.
    ///
    /// ```
    /// use agentmem_core::VectorKey;
    /// let key = VectorKey([0xab; 32]);
    /// assert_eq!(VectorKey::from_hex(&key.to_hex()).unwrap(), key);
    /// assert!(key.to_hex().starts_with("abab"));
    /// ```
    pub fn to_hex(&self) -> String {
        use fmt::Write;
        self.0.iter().fold(String::with_capacity(64), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
    }

    /// The key from 64 hex digits; `CorruptData` otherwise.
    pub fn from_hex(hex: &str) -> Result<Self> {
        crate::support::hex_bytes(hex)
            .map(VectorKey)
            .ok_or_else(|| {
                Error::corrupt(format!("a stored vector key is not 64 hex digits: {hex:?}"))
            })
    }
}

impl fmt::Debug for VectorKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "VectorKey({})", &self.to_hex()[..16])
    }
}

/// A vector as a store keeps it: its key and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredVector {
    /// What the vector embeds.
    pub key: VectorKey,
    /// The vector's bytes: [`encode_vector`]'s form, or a sealed form under encryption.
    pub data: Vec<u8>,
}

impl StoredVector {
    /// A stored vector of `vector`'s plain form.
    pub fn new(key: VectorKey, vector: &[f32]) -> Self {
        StoredVector {
            key,
            data: encode_vector(vector),
        }
    }
}

/// A vector's plain stored form: each `f32` little-endian.
///
/// ```
/// use agentmem_core::vector::{decode_vector, encode_vector};
/// let v = [0.5f32, -1.0, 3.25];
/// assert_eq!(decode_vector(&encode_vector(&v)).unwrap(), v);
/// assert!(decode_vector(&[1, 2, 3]).is_err());
/// ```
pub fn encode_vector(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A vector from [`encode_vector`]'s form; `CorruptData` when the length is not a multiple of
/// four or a component is not finite.
pub fn decode_vector(data: &[u8]) -> Result<Vec<f32>> {
    if !data.len().is_multiple_of(4) {
        return Err(Error::corrupt(format!(
            "a stored vector has {} bytes, not a multiple of 4",
            data.len()
        )));
    }
    let vector: Vec<f32> = data
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if vector.iter().any(|x| !x.is_finite()) {
        return Err(Error::corrupt(
            "a stored vector holds a value that is not finite",
        ));
    }
    Ok(vector)
}

/// Checks vectors to store: at most [`MAX_VECTOR_BATCH`], each of 1 to [`MAX_VECTOR_BYTES`]
/// bytes (a sealed one, [`SEALED_VECTOR_PREFIX`], [`SEALING_ROOM`] more: the limit is the
/// plain vector's, whatever layer seals it). `InvalidInput` otherwise.
pub fn check_vectors(vectors: &[StoredVector]) -> Result<()> {
    check_batch(vectors.len())?;
    let limit = |data: &[u8]| {
        if data.starts_with(SEALED_VECTOR_PREFIX) {
            MAX_VECTOR_BYTES + SEALING_ROOM
        } else {
            MAX_VECTOR_BYTES
        }
    };
    match vectors
        .iter()
        .find(|v| v.data.is_empty() || v.data.len() > limit(&v.data))
    {
        Some(v) => Err(Error::invalid_input(format!(
            "a stored vector must have 1 to {MAX_VECTOR_BYTES} bytes (this one has {})",
            v.data.len()
        ))),
        None => Ok(()),
    }
}

/// Checks the size of a vector call: at most [`MAX_VECTOR_BATCH`] items. `InvalidInput`
/// otherwise.
pub fn check_batch(len: usize) -> Result<()> {
    if len > MAX_VECTOR_BATCH {
        return Err(Error::invalid_input(format!(
            "a vector call may carry at most {MAX_VECTOR_BATCH} items (this one has {len})"
        )));
    }
    Ok(())
}

/// The embedding model a store's vectors come from: recorded in the store (property
/// [`MODEL_PROPERTY`]) by the first indexing, checked by every later search and indexing.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct ModelIdentity {
    /// The model's name, as its embedder reports it (`all-MiniLM-L6-v2`, an HTTP model name).
    pub id: String,
    /// How many components each vector has.
    pub dimensions: usize,
    /// Whether vectors are scaled to unit length (cosine similarity is then a dot product).
    pub normalized: bool,
}

impl ModelIdentity {
    /// The property value that records the identity: `dims=384;normalized=true;id=NAME`.
    ///
    /// ```
    /// use agentmem_core::ModelIdentity;
    /// let model = ModelIdentity { id: "all-MiniLM-L6-v2".into(), dimensions: 384, normalized: true };
    /// assert_eq!(ModelIdentity::parse(&model.to_property()).unwrap(), model);
    /// assert!(ModelIdentity::parse("nonsense").is_err());
    /// ```
    pub fn to_property(&self) -> String {
        format!(
            "dims={};normalized={};id={}",
            self.dimensions, self.normalized, self.id
        )
    }

    /// The identity from [`to_property`](Self::to_property)'s form; `CorruptData` otherwise.
    pub fn parse(value: &str) -> Result<Self> {
        let bad = || {
            Error::corrupt(format!(
                "the store's {MODEL_PROPERTY} property is not `dims=N;normalized=BOOL;id=NAME`: \
                 {value:?}"
            ))
        };
        let rest = value.strip_prefix("dims=").ok_or_else(bad)?;
        let (dims, rest) = rest.split_once(";normalized=").ok_or_else(bad)?;
        let (normalized, id) = rest.split_once(";id=").ok_or_else(bad)?;
        Ok(ModelIdentity {
            id: id.to_owned(),
            dimensions: dims.parse().map_err(|_| bad())?,
            normalized: normalized.parse().map_err(|_| bad())?,
        })
    }
}

impl fmt::Display for ModelIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({} dimensions{})",
            self.id,
            self.dimensions,
            if self.normalized { ", normalized" } else { "" }
        )
    }
}

/// Implements [`VectorStore`](crate::VectorStore) for a store type that keeps no vectors: every
/// method refused with `Unsupported`, naming the store's backend. Such a store leaves
/// [`Capabilities::vectors`](crate::Capabilities::vectors) off.
#[macro_export]
macro_rules! refuse_vectors {
    ($store:ty, $name:expr) => {
        #[$crate::async_trait]
        impl $crate::VectorStore for $store {
            async fn put_vectors(&self, _: &[$crate::StoredVector]) -> $crate::Result<()> {
                Err($crate::vector::unsupported($name))
            }

            async fn get_vectors(
                &self, _: &[$crate::VectorKey],
            ) -> $crate::Result<Vec<$crate::StoredVector>> {
                Err($crate::vector::unsupported($name))
            }

            async fn delete_vectors(&self, _: &[$crate::VectorKey]) -> $crate::Result<u64> {
                Err($crate::vector::unsupported($name))
            }

            async fn clear_vectors(&self) -> $crate::Result<u64> {
                Err($crate::vector::unsupported($name))
            }
        }
    };
}

/// The `Unsupported` error of a store that keeps no vectors.
pub fn unsupported(store: &str) -> Error {
    Error::unsupported(format!("the {store} store keeps no vectors"))
}

/// Vectors held in the client, with the [`VectorStore`](crate::VectorStore) rules: the
/// in-memory store's, and the state of backends that replay a log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VectorMap {
    vectors: std::collections::HashMap<VectorKey, Vec<u8>>,
}

impl VectorMap {
    /// Stores each vector, the last of a repeated key winning.
    pub fn put(&mut self, vectors: &[StoredVector]) {
        for v in vectors {
            self.vectors.insert(v.key, v.data.clone());
        }
    }

    /// The stored vectors among `keys`, each once.
    ///
    /// ```
    /// use agentmem_core::vector::VectorMap;
    /// use agentmem_core::{StoredVector, VectorKey};
    /// let mut map = VectorMap::default();
    /// map.put(&[StoredVector::new(VectorKey([1; 32]), &[1.0])]);
    /// assert_eq!(map.get(&[VectorKey([1; 32]), VectorKey([1; 32])]).len(), 1);
    /// assert_eq!(map.delete(&[VectorKey([1; 32]), VectorKey([1; 32])]), 1);
    /// assert!(map.is_empty());
    /// ```
    pub fn get(&self, keys: &[VectorKey]) -> Vec<StoredVector> {
        let mut seen = std::collections::HashSet::new();
        keys.iter()
            .filter(|key| seen.insert(**key))
            .filter_map(|key| {
                self.vectors.get(key).map(|data| StoredVector {
                    key: *key,
                    data: data.clone(),
                })
            })
            .collect()
    }

    /// Deletes the vectors of `keys`; how many went.
    pub fn delete(&mut self, keys: &[VectorKey]) -> u64 {
        keys.iter()
            .filter(|key| self.vectors.remove(key).is_some())
            .count() as u64
    }

    /// Deletes every vector; how many went.
    pub fn clear(&mut self) -> u64 {
        let count = self.vectors.len() as u64;
        self.vectors.clear();
        count
    }

    /// How many vectors are held.
    pub fn len(&self) -> usize {
        self.vectors.len()
    }

    /// Whether no vector is held.
    pub fn is_empty(&self) -> bool {
        self.vectors.is_empty()
    }

    /// Every vector held, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&VectorKey, &Vec<u8>)> {
        self.vectors.iter()
    }
}
