//! Embedding vectors through the encryption layer: sealed, under keys the store cannot link to
//! the text they embed (see the crate README).
//!
//! An embedding can be inverted into text, so a vector's bytes are sealed like a message's
//! content: AES-256-GCM with a random nonce, under a store-wide key derived for vectors
//! ([`Domain::Vectors`], HKDF info `agentmem-crypt/v1/vector\0`), the AAD binding it to the key
//! the caller gave, so a vector moved under another key fails to open (`CorruptData`).
//!
//! A vector's key is SHA-256 of the text it embeds, so stored as given it would show which
//! texts are equal and confirm a guessed text. The layer stores each vector under HMAC-SHA256
//! of the key instead (under the MAC subkey derived with the vector key, labelled
//! `agentmem-crypt/v1/vector-key`): one way, equal for equal keys under one master key (so
//! the store still replaces, finds and deletes by key), and different under another master
//! key. A vector stored under another master key is therefore never found, only cleared
//! (`rekey` and `encrypt_existing` clear them all).

use std::collections::HashMap;

use agentmem_core::vector::{check_batch, check_vectors, MAX_VECTOR_BYTES};
use agentmem_core::{AgentMemory, Error, Operation, Result, StoredVector, VectorKey};

use crate::cipher::{aad, CryptoError, Domain, Keyring, Sealer, NONCE_BYTES, TAG_BYTES};
use crate::key::KeyId;
use crate::layer::Encrypted;

/// What a sealed vector starts with: `agentmem-vec:v1:<key id>:` (ASCII, the key id in 16 hex
/// digits), then `nonce ‖ ciphertext ‖ tag` as bytes.
pub const SEALED_VECTOR_PREFIX: &[u8] = agentmem_core::vector::SEALED_VECTOR_PREFIX;

/// The bytes before the payload: the prefix, the key id and `:`.
const HEADER_BYTES: usize = SEALED_VECTOR_PREFIX.len() + 16 + 1;

/// How many bytes sealing adds to a vector: the header, the nonce and the tag (61).
pub const VECTOR_SEALING_BYTES: usize = HEADER_BYTES + NONCE_BYTES + TAG_BYTES;

/// The most bytes a sealed vector takes: a vector of [`MAX_VECTOR_BYTES`] (the most core lets
/// a caller store) sealed. Core's limit leaves 256 bytes below 64 KiB for sealing, and sealing
/// takes [`VECTOR_SEALING_BYTES`] of them (checked when the crate is built), so every vector a
/// caller may store is stored sealed within 64 KiB: no vector is refused for its size through
/// this layer that would be accepted without it.
pub const MAX_SEALED_VECTOR_BYTES: usize = MAX_VECTOR_BYTES + VECTOR_SEALING_BYTES;

const _: () =
    assert!(MAX_SEALED_VECTOR_BYTES <= MAX_VECTOR_BYTES + agentmem_core::vector::SEALING_ROOM);
const _: () = assert!(MAX_SEALED_VECTOR_BYTES <= 64 * 1024);

/// The label of the keyed hash a vector key is stored under.
const KEY_LABEL: &[u8] = b"agentmem-crypt/v1/vector-key\0";

/// The AAD of a vector's bytes: bound to the key the caller gave.
fn vector_aad(key: &VectorKey) -> Vec<u8> {
    aad(&[b"vector", key.as_bytes()])
}

/// The key a sealed vector names, when `data` is one: what a reader without a key is refused
/// for (see [`NoKeyLayer`](crate::NoKeyLayer)).
pub(crate) fn vector_key_id(data: &[u8]) -> Option<KeyId> {
    let rest = data.strip_prefix(SEALED_VECTOR_PREFIX)?;
    let id = std::str::from_utf8(rest.get(..16)?).ok()?;
    id.parse().ok()
}

/// Seals and opens vectors and maps their keys, deriving each key once.
pub(crate) struct VectorSealer<'a> {
    keys: &'a Keyring,
    sealer: Sealer<'a>,
}

impl<'a> VectorSealer<'a> {
    pub(crate) fn new(keys: &'a Keyring) -> Self {
        VectorSealer {
            keys,
            sealer: Sealer::new(keys, Domain::Vectors),
        }
    }

    /// The key the vector of `key` is stored under by a layer writing with the held key `id`.
    pub(crate) fn stored_key(&mut self, id: KeyId, key: &VectorKey) -> Result<VectorKey> {
        self.sealer
            .keyed_hash_under(id, KEY_LABEL, key.as_bytes())
            .map(VectorKey)
    }

    /// `vector` as stored: under its mapped key, its bytes sealed with the write key.
    pub(crate) fn seal(&mut self, vector: &StoredVector) -> Result<StoredVector> {
        let id = self.keys.write_key();
        let (sealed_by, payload) = self
            .sealer
            .seal_bytes(&vector.data, &vector_aad(&vector.key))?;
        let mut data = Vec::with_capacity(HEADER_BYTES + payload.len());
        data.extend_from_slice(SEALED_VECTOR_PREFIX);
        data.extend_from_slice(sealed_by.to_string().as_bytes());
        data.push(b':');
        data.extend_from_slice(&payload);
        Ok(StoredVector {
            key: self.stored_key(id, &vector.key)?,
            data,
        })
    }

    /// The bytes of a vector stored for the caller's `key`.
    pub(crate) fn open(&mut self, key: &VectorKey, data: &[u8]) -> Result<Vec<u8>, CryptoError> {
        if !data.starts_with(SEALED_VECTOR_PREFIX) {
            return Err(CryptoError::NotEncrypted);
        }
        let id = vector_key_id(data).ok_or(CryptoError::Malformed)?;
        match data.get(HEADER_BYTES - 1..) {
            Some([b':', payload @ ..]) => self.sealer.open_payload(id, payload, &vector_aad(key)),
            _ => Err(CryptoError::Malformed),
        }
    }
}

// ---- the store's vector operations -------------------------------------------------------

impl<S: AgentMemory> Encrypted<S> {
    /// `put_vectors`: the core checks on what the caller gave (so the limits are the same as
    /// without the layer), then each vector sealed under its mapped key (see
    /// [`MAX_SEALED_VECTOR_BYTES`] for why it still fits).
    pub(crate) async fn put_sealed_vectors(&self, vectors: &[StoredVector]) -> Result<()> {
        self.run(Operation::PutVectors, async {
            check_vectors(vectors)?;
            let mut sealer = VectorSealer::new(&self.keys);
            let sealed = vectors
                .iter()
                .map(|v| sealer.seal(v))
                .collect::<Result<Vec<_>>>()?;
            self.inner.put_vectors(&sealed).await
        })
        .await
    }

    /// `get_vectors`: looked up under the keys mapped with each held key, the write key first
    /// (one call per key held; a vector found under it is not looked for under the others),
    /// opened and returned under the caller's keys. A vector that fails to open is
    /// `CorruptData` (moved, altered, or not sealed).
    pub(crate) async fn get_opened_vectors(&self, keys: &[VectorKey]) -> Result<Vec<StoredVector>> {
        self.run(Operation::GetVectors, async {
            check_batch(keys.len())?;
            let mut sealer = VectorSealer::new(&self.keys);
            let mut found: Vec<StoredVector> = Vec::new();
            let mut left: Vec<VectorKey> = keys.to_vec();
            left.sort_unstable();
            left.dedup();
            for id in self.keys.ids() {
                if left.is_empty() {
                    break;
                }
                // The stored key of each key still missing, mapped back within this call.
                let mut asked = HashMap::with_capacity(left.len());
                for key in &left {
                    asked.insert(sealer.stored_key(id, key)?, *key);
                }
                let stored_keys: Vec<VectorKey> = asked.keys().copied().collect();
                for stored in self.inner.get_vectors(&stored_keys).await? {
                    let Some(key) = asked.remove(&stored.key) else {
                        return Err(Error::corrupt(
                            "the store returned a vector it was not asked for",
                        ));
                    };
                    let data = sealer
                        .open(&key, &stored.data)
                        .map_err(|e| e.at("a stored vector"))?;
                    found.push(StoredVector { key, data });
                }
                left = asked.into_values().collect();
            }
            Ok(found)
        })
        .await
    }

    /// `delete_vectors`: under the keys mapped with each held key (one call per key held),
    /// counting every stored vector that went.
    pub(crate) async fn delete_sealed_vectors(&self, keys: &[VectorKey]) -> Result<u64> {
        self.run(Operation::DeleteVectors, async {
            check_batch(keys.len())?;
            if keys.is_empty() {
                return Ok(0);
            }
            let mut sealer = VectorSealer::new(&self.keys);
            let mut deleted = 0;
            for id in self.keys.ids() {
                let stored = keys
                    .iter()
                    .map(|key| sealer.stored_key(id, key))
                    .collect::<Result<Vec<_>>>()?;
                deleted += self.inner.delete_vectors(&stored).await?;
            }
            Ok(deleted)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealing_adds_the_header_nonce_and_tag() {
        assert_eq!(VECTOR_SEALING_BYTES, 61);
        let keys = Keyring::for_tests(1);
        let mut sealer = VectorSealer::new(&keys);
        let v = StoredVector {
            key: VectorKey([7; 32]),
            data: vec![0xff; MAX_VECTOR_BYTES],
        };
        let sealed = sealer.seal(&v).unwrap();
        assert_eq!(sealed.data.len(), MAX_SEALED_VECTOR_BYTES);
        assert_eq!(vector_key_id(&sealed.data), Some(keys.write_key()));
        assert_eq!(sealer.open(&v.key, &sealed.data).unwrap(), v.data);
    }

    #[test]
    fn keys_are_mapped_per_master_key_and_vectors_bound_to_theirs() {
        let (one, two) = (Keyring::for_tests(2), Keyring::for_tests(3));
        let key = VectorKey([9; 32]);
        let mut a = VectorSealer::new(&one);
        let mapped = a.stored_key(one.write_key(), &key).unwrap();
        assert_ne!(mapped, key);
        assert_eq!(
            mapped,
            VectorSealer::new(&one)
                .stored_key(one.write_key(), &key)
                .unwrap()
        );
        let other = VectorSealer::new(&two)
            .stored_key(two.write_key(), &key)
            .unwrap();
        assert_ne!(mapped, other, "another master key maps apart");
        let sealed = a
            .seal(&StoredVector {
                key,
                data: vec![1, 2, 3, 4],
            })
            .unwrap();
        assert_eq!(
            a.open(&VectorKey([8; 32]), &sealed.data),
            Err(CryptoError::Tampered),
            "moved to another key, a vector does not open"
        );
        assert_eq!(a.open(&key, &[1, 2, 3, 4]), Err(CryptoError::NotEncrypted));
        assert_eq!(
            a.open(&key, SEALED_VECTOR_PREFIX),
            Err(CryptoError::Malformed)
        );
        let mut b = VectorSealer::new(&two);
        assert!(matches!(
            b.open(&key, &sealed.data),
            Err(CryptoError::WrongKey { .. })
        ));
    }
}
