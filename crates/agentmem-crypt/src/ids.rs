//! Memory ids as the store keeps them through the encryption layer: sealed, so an id derived
//! from what an item says (an insight's `insight_<hash of its text>`) reveals nothing to a
//! reader of the store, and still deterministic, so `get_memory`, `delete_memory` and the
//! store's upsert by id find the item by its id.

use agentmem_core::{Error, MemoryId, Result};
use base64::Engine as _;

use crate::cipher::{aad, CryptoError, Domain, Keyring, Sealer};

/// What a sealed memory id starts with: `agentmem-id:v1:<base64url(nonce ‖ ciphertext ‖
/// tag)>`, AES-256-GCM of the id under a store-wide key derived from the master key (HKDF
/// info `agentmem-crypt/v1/memory-id\0`), its nonce derived from the id (as for tool call
/// ids). Reversible with the key, so the id an upsert by key keeps (the stored item's) reads
/// back as the id it was given.
pub const MEMORY_ID_PREFIX: &str = "agentmem-id:v1:";

/// The longest memory id (in bytes) the layer seals: its sealed form must fit in the 128
/// bytes an id may have. Longer ids (never made by agentmem, which makes 32- to 40-byte ids)
/// are stored as given.
pub const MAX_SEALED_MEMORY_ID_BYTES: usize = max_sealed_id();

/// The most bytes a memory id may have (`MemoryId`'s rule).
const MAX_ID_BYTES: usize = 128;
const NONCE_AND_TAG: usize = 12 + 16;

const fn max_sealed_id() -> usize {
    let mut n = MAX_ID_BYTES;
    while n > 0 && MEMORY_ID_PREFIX.len() + ((NONCE_AND_TAG + n) * 4).div_ceil(3) > MAX_ID_BYTES {
        n -= 1;
    }
    n
}

fn id_aad() -> Vec<u8> {
    aad(&[b"memory-id"])
}

/// `id` sealed under the held key `key`.
fn sealed_under(sealer: &mut Sealer<'_>, key: crate::KeyId, id: &MemoryId) -> Result<MemoryId> {
    let payload = sealer.seal_payload_deterministic(key, id.as_str().as_bytes(), &id_aad())?;
    MemoryId::new(format!(
        "{MEMORY_ID_PREFIX}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(payload)
    ))
}

/// Whether `id` is sealed when stored.
fn sealable(id: &MemoryId) -> bool {
    id.as_str().len() <= MAX_SEALED_MEMORY_ID_BYTES
}

/// The id `id` is stored under by a layer writing with `keys`' write key: sealed, or as given
/// when longer than [`MAX_SEALED_MEMORY_ID_BYTES`]. `InvalidInput` for such a long id that
/// starts with [`MEMORY_ID_PREFIX`], which would read back as a sealed id.
pub(crate) fn stored_id(keys: &Keyring, id: &MemoryId) -> Result<MemoryId> {
    if !sealable(id) {
        if id.as_str().starts_with(MEMORY_ID_PREFIX) {
            return Err(Error::invalid_input(format!(
                "a memory id longer than {MAX_SEALED_MEMORY_ID_BYTES} bytes may not start with \
                 `{MEMORY_ID_PREFIX}` in an encrypted store"
            )));
        }
        return Ok(id.clone());
    }
    let mut sealer = Sealer::new(keys, Domain::MemoryIds);
    sealed_under(&mut sealer, keys.write_key(), id)
}

/// Every id an item with id `id` may be stored under, the current form first: sealed under
/// each held key (the write key first; the others were written before a rotation), then as
/// given (written before ids were sealed, or too long to seal).
pub(crate) fn candidate_ids(keys: &Keyring, id: &MemoryId) -> Result<Vec<MemoryId>> {
    let mut out = Vec::new();
    if sealable(id) {
        let mut sealer = Sealer::new(keys, Domain::MemoryIds);
        for key in keys.ids() {
            out.push(sealed_under(&mut sealer, key, id)?);
        }
    }
    out.push(id.clone());
    Ok(out)
}

/// The id a stored id stands for: a sealed one opened (under whichever held key sealed it),
/// any other as it is.
pub(crate) fn real_id(
    keys: &Keyring, stored: &MemoryId,
) -> std::result::Result<MemoryId, CryptoError> {
    let Some(encoded) = stored.as_str().strip_prefix(MEMORY_ID_PREFIX) else {
        return Ok(stored.clone());
    };
    let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(encoded)
        .map_err(|_| CryptoError::Malformed)?;
    let mut sealer = Sealer::new(keys, Domain::MemoryIds);
    for key in keys.ids() {
        if let Ok(bytes) = sealer.open_payload(key, &payload, &id_aad()) {
            let text = String::from_utf8(bytes).map_err(|_| CryptoError::Malformed)?;
            return MemoryId::new(text).map_err(|_| CryptoError::Malformed);
        }
    }
    // No key held opens it: changed, or sealed under a key this layer does not hold (which
    // the store's marker or the item's own envelopes report first).
    Err(CryptoError::Tampered)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::MasterKey;

    #[test]
    fn the_longest_sealed_id_is_the_longest_that_fits() {
        assert_eq!(MAX_SEALED_MEMORY_ID_BYTES, 56);
        let keys = Keyring::new(&MasterKey::from_bytes([1; 32]));
        for len in [1, 32, 40, MAX_SEALED_MEMORY_ID_BYTES] {
            let id = MemoryId::new("x".repeat(len)).unwrap();
            let stored = stored_id(&keys, &id).unwrap();
            assert!(stored.as_str().starts_with(MEMORY_ID_PREFIX));
            assert!(stored.as_str().len() <= MAX_ID_BYTES);
            assert_eq!(stored, stored_id(&keys, &id).unwrap(), "deterministic");
            assert_eq!(real_id(&keys, &stored).unwrap(), id);
        }
        let long = MemoryId::new("y".repeat(MAX_SEALED_MEMORY_ID_BYTES + 1)).unwrap();
        assert_eq!(stored_id(&keys, &long).unwrap(), long);
        let confusing = MemoryId::new(format!("{MEMORY_ID_PREFIX}{}", "z".repeat(60))).unwrap();
        assert!(stored_id(&keys, &confusing).is_err());
    }

    #[test]
    fn a_sealed_id_opens_under_the_key_that_sealed_it_only() {
        let (old, new) = (
            MasterKey::from_bytes([1; 32]),
            MasterKey::from_bytes([2; 32]),
        );
        let id = MemoryId::new("insight_0123456789abcdef0123456789abcdef").unwrap();
        let under_old = stored_id(&Keyring::new(&old), &id).unwrap();
        let both = Keyring::new(&new).with_read_key(&old);
        assert_eq!(real_id(&both, &under_old).unwrap(), id);
        let candidates = candidate_ids(&both, &id).unwrap();
        assert_eq!(candidates.len(), 3);
        assert_eq!(candidates[0], stored_id(&both, &id).unwrap());
        assert_eq!(candidates[1], under_old);
        assert_eq!(candidates[2], id);
        assert_eq!(
            real_id(&Keyring::new(&new), &under_old),
            Err(CryptoError::Tampered)
        );
    }
}
