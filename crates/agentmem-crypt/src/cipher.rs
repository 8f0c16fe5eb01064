//! Keys derived per session and per memory scope, the envelope format, and [`CryptoError`].

use std::fmt;
use std::sync::Arc;

use aes_gcm::aead::{Aead, Generate, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Key, Nonce};
use agentmem_core::{Error, ErrorKind, MemoryScope, SessionId, ThreadId};
use base64::Engine as _;
use hkdf::Hkdf;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use zeroize::{Zeroize as _, Zeroizing};

use crate::key::{KeyId, MasterKey};
use crate::marker::KeyCheck;

/// What every encrypted string starts with: `agentmem-enc:v1:<key id>:<base64url(nonce ‖
/// ciphertext ‖ tag)>`.
pub const ENVELOPE_PREFIX: &str = "agentmem-enc:v1:";

/// The key of the envelope of an encrypted metadata map: `{"agentmem-enc:v1": "<envelope>"}`.
pub const METADATA_KEY: &str = "agentmem-enc:v1";

/// The key, in an encrypted memory item's metadata, of the envelope of the item's own key.
pub const MEMORY_KEY_ENTRY: &str = "agentmem-enc:v1:key";

/// What a memory key's stand-in starts with (see the crate documentation).
pub const KEY_TOKEN_PREFIX: &str = "agentmem-key:v1:";

/// HKDF salt and AAD prefix: every derivation and every record is bound to this version.
const DOMAIN: &[u8] = b"agentmem-crypt/v1";
const SESSION_INFO: &[u8] = b"agentmem-crypt/v1/session\0";
const MEMORY_INFO: &[u8] = b"agentmem-crypt/v1/memory\0";
/// HKDF info of a checkpoint thread's key (see `checkpoints.rs`), followed by the thread id.
const THREAD_INFO: &[u8] = b"agentmem-crypt/v1/thread\0";
/// HKDF info of the store-wide key memory ids are sealed with (see `ids.rs`).
const MEMORY_ID_INFO: &[u8] = b"agentmem-crypt/v1/memory-id\0";
/// HKDF info of the store-wide key the knowledge graph's strings are sealed with (see
/// `graph.rs`).
const GRAPH_INFO: &[u8] = b"agentmem-crypt/v1/graph\0";
/// HKDF info of the store-wide key embedding vectors are sealed with, and whose MAC subkey
/// maps vector keys (see `vectors.rs`).
const VECTOR_INFO: &[u8] = b"agentmem-crypt/v1/vector\0";
/// HKDF info of the key the store marker's key check value is made with, and the label it
/// is made of.
const STORE_CHECK_INFO: &[u8] = b"agentmem-crypt/v1/store-check\0";
const STORE_CHECK_LABEL: &[u8] = b"agentmem-crypt/v1/store-marker";

pub(crate) const NONCE_BYTES: usize = 12;
pub(crate) const TAG_BYTES: usize = 16;

/// Why a stored value could not be decrypted. The source of the [`Error`] the layer returns
/// (reach it with `err.source().and_then(|s| s.downcast_ref::<CryptoError>())`); none of
/// them ever yields plaintext.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CryptoError {
    /// The record was encrypted under a key this layer does not hold (another master key, or
    /// one rotated away). Mapped to [`ErrorKind::InvalidInput`]: the caller's key is wrong.
    WrongKey {
        /// The key the record names.
        found: KeyId,
        /// The keys the layer holds.
        held: Vec<KeyId>,
    },
    /// The record is encrypted and no key was given (see [`NoKeyLayer`](crate::NoKeyLayer)).
    /// Mapped to [`ErrorKind::InvalidInput`]: the caller must give the key.
    NoKey {
        /// The key the record names.
        found: KeyId,
    },
    /// Authentication failed under the right key: the record was changed, or moved to another
    /// session, message, item or field. Mapped to [`ErrorKind::CorruptData`].
    Tampered,
    /// A value that should be encrypted is plaintext (written without the layer). Mapped to
    /// [`ErrorKind::CorruptData`].
    NotEncrypted,
    /// An envelope that does not parse. Mapped to [`ErrorKind::CorruptData`].
    Malformed,
}

impl fmt::Display for CryptoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CryptoError::WrongKey { found, held } => {
                write!(f, "encrypted with key {found}, but the key given is ")?;
                let held: Vec<String> = held.iter().map(KeyId::to_string).collect();
                write!(f, "{} (wrong encryption key)", held.join(", "))
            }
            CryptoError::NoKey { found } => write!(
                f,
                "encrypted with key {found}, but no encryption key is given (set {} or give a key file)",
                crate::key::KEY_ENV
            ),
            CryptoError::Tampered => {
                f.write_str("authentication failed: the record was altered or moved")
            }
            CryptoError::NotEncrypted => f.write_str("the value is not encrypted"),
            CryptoError::Malformed => f.write_str("the encrypted value is malformed"),
        }
    }
}

impl std::error::Error for CryptoError {}

impl CryptoError {
    /// The [`ErrorKind`] the layer reports this as.
    pub fn kind(&self) -> ErrorKind {
        match self {
            CryptoError::WrongKey { .. } | CryptoError::NoKey { .. } => ErrorKind::InvalidInput,
            _ => ErrorKind::CorruptData,
        }
    }

    /// An agentmem error saying which value (`what`) failed and why.
    pub(crate) fn at(self, what: impl fmt::Display) -> Error {
        // The reason is the source, which `Error`'s `Display` prints after the message.
        Error::new(self.kind(), format!("cannot decrypt {what}")).with_source(self)
    }
}

/// Whether `value` looks like an envelope (it may still fail to open).
pub fn is_envelope(value: &str) -> bool {
    value.starts_with(ENVELOPE_PREFIX)
}

/// The key an envelope (or a memory key's stand-in) names, when `value` is one.
pub fn envelope_key_id(value: &str) -> Option<KeyId> {
    let rest = value
        .strip_prefix(ENVELOPE_PREFIX)
        .or_else(|| value.strip_prefix(KEY_TOKEN_PREFIX))?;
    rest.get(..16)?.parse().ok()
}

/// One master key, extracted once: its HKDF pseudorandom key, wiped when the last clone of
/// the keyring is dropped. Each derivation builds a short-lived HKDF state from it (whose HMAC
/// state wipes itself too: `sha2`'s and `hmac`'s feature `zeroize`), so no long-lived value
/// holds key material that is not zeroized on drop.
#[derive(Clone)]
struct Entry {
    id: KeyId,
    prk: Zeroizing<[u8; PRK_BYTES]>,
}

/// The length of an HKDF-SHA256 pseudorandom key.
const PRK_BYTES: usize = 32;

impl Entry {
    fn new(key: &MasterKey) -> Self {
        let (mut extracted, _) = Hkdf::<Sha256>::extract(Some(DOMAIN), key.bytes());
        let mut prk = Zeroizing::new([0u8; PRK_BYTES]);
        prk.copy_from_slice(&extracted);
        extracted.as_mut_slice().zeroize();
        Entry { id: key.id(), prk }
    }

    /// The HKDF state to expand keys with, for one derivation (`None` never happens: a
    /// 32-byte PRK is exactly SHA-256's output length, which `from_prk` accepts).
    fn hkdf(&self) -> Option<Hkdf<Sha256>> {
        Hkdf::<Sha256>::from_prk(self.prk.as_ref()).ok()
    }
}

/// The keys a layer holds: one it writes with, and any number it still reads (rotated-away
/// keys, while archives or unrekeyed records use them).
#[derive(Clone)]
pub struct Keyring {
    entries: Arc<Vec<Entry>>,
    /// Plaintext values are passed through when reading (only while encrypting an existing
    /// store, see [`crate::encrypt_existing`]).
    pub(crate) accept_plaintext: bool,
}

impl Keyring {
    /// A keyring that writes and reads with `key`.
    pub fn new(key: &MasterKey) -> Self {
        Keyring {
            entries: Arc::new(vec![Self::entry(key)]),
            accept_plaintext: false,
        }
    }

    /// Also reads records encrypted with `key` (writing still uses the first key).
    pub fn with_read_key(mut self, key: &MasterKey) -> Self {
        if !self.ids().contains(&key.id()) {
            let mut entries = self.entries.to_vec();
            entries.push(Self::entry(key));
            self.entries = Arc::new(entries);
        }
        self
    }

    /// A keyring of the master key whose 32 bytes are all `byte`: distinct keys for tests.
    #[cfg(test)]
    pub(crate) fn for_tests(byte: u8) -> Self {
        Keyring::new(&MasterKey::from_bytes([byte; 32]))
    }

    fn entry(key: &MasterKey) -> Entry {
        Entry::new(key)
    }

    /// The id of the key new records are encrypted with.
    pub fn write_key(&self) -> KeyId {
        self.entries[0].id
    }

    /// The ids of every key held, the write key first.
    pub fn ids(&self) -> Vec<KeyId> {
        self.entries.iter().map(|e| e.id).collect()
    }

    /// The key check value of the held key `id` (see [`KeyCheck`]); `InvalidInput` when the
    /// key is not held.
    pub(crate) fn key_check(&self, id: KeyId) -> Result<KeyCheck, Error> {
        let entry = self
            .entries
            .iter()
            .find(|e| e.id == id)
            .ok_or_else(|| Error::invalid_input(format!("key {id} is not held")))?;
        let mut okm = Zeroizing::new([0u8; 32]);
        entry
            .hkdf()
            .ok_or_else(|| Error::backend("the key check key cannot be derived"))?
            .expand(STORE_CHECK_INFO, okm.as_mut())
            .map_err(|_| Error::backend("the key check key cannot be derived"))?;
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(okm.as_ref())
            .map_err(|_| Error::backend("the key check key cannot be derived"))?;
        mac.update(STORE_CHECK_LABEL);
        let tag = mac.finalize().into_bytes();
        Ok(KeyCheck {
            key: id,
            check: base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&tag[..16]),
        })
    }

    fn derive(&self, id: KeyId, domain: &Domain<'_>) -> Option<RecordKey> {
        let entry = self.entries.iter().find(|e| e.id == id)?;
        let (info, name) = match domain {
            Domain::Session(s) => (SESSION_INFO, s.as_str()),
            Domain::Memory(form) => (MEMORY_INFO, form.as_str()),
            Domain::MemoryIds => (MEMORY_ID_INFO, ""),
            Domain::Graph => (GRAPH_INFO, ""),
            Domain::Vectors => (VECTOR_INFO, ""),
            Domain::Thread(t) => (THREAD_INFO, t.as_str()),
        };
        let mut okm = Zeroizing::new([0u8; 64]);
        // 64 bytes is far below HKDF-SHA256's limit of 8160: expand cannot fail.
        entry
            .hkdf()?
            .expand_multi_info(&[info, name.as_bytes()], okm.as_mut())
            .ok()?;
        let cipher = Aes256Gcm::new(&Key::<Aes256Gcm>::try_from(&okm[..32]).ok()?);
        let siv = <Hmac<Sha256> as KeyInit>::new_from_slice(&okm[32..]).ok()?;
        Some(RecordKey { id, cipher, siv })
    }
}

impl fmt::Debug for Keyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keyring")
            .field("write_key", &self.write_key())
            .field("read_keys", &self.ids())
            .finish()
    }
}

/// What a record key is derived for: one session (its messages, archives and metadata), one
/// memory scope (its items), one checkpoint thread (its checkpoints, blobs and writes), the
/// store's knowledge graph, or its embedding vectors.
pub(crate) enum Domain<'a> {
    Session(&'a SessionId),
    /// A scope, in its stored form.
    Memory(String),
    /// Every memory id of the store (ids are looked up without their scope).
    MemoryIds,
    /// A checkpoint thread: every namespace of it.
    Thread(ThreadId),
    /// Every string of the knowledge graph (one graph per store; entities are looked up by
    /// name store-wide).
    Graph,
    /// Every embedding vector of the store, and the keys they are stored under.
    Vectors,
}

impl Domain<'_> {
    pub(crate) fn memory(scope: &MemoryScope) -> Self {
        Domain::Memory(scope.stored_form())
    }
}

struct RecordKey {
    id: KeyId,
    cipher: Aes256Gcm,
    /// Keys the synthetic nonce of deterministic values.
    siv: Hmac<Sha256>,
}

/// Encrypts and decrypts the values of one domain, deriving each key once per call.
pub(crate) struct Sealer<'a> {
    keys: &'a Keyring,
    domain: Domain<'a>,
    derived: Vec<RecordKey>,
}

/// Associated data: the version, then each part length-prefixed, so no two lists of parts
/// give the same bytes.
pub(crate) fn aad(parts: &[&[u8]]) -> Vec<u8> {
    let mut out =
        Vec::with_capacity(DOMAIN.len() + parts.iter().map(|p| p.len() + 4).sum::<usize>());
    out.extend_from_slice(DOMAIN);
    for part in parts {
        out.extend_from_slice(&(part.len() as u32).to_be_bytes());
        out.extend_from_slice(part);
    }
    out
}

/// Which optional fields a message or item has, bound into the AAD of its main text so they
/// cannot be stripped unnoticed.
pub(crate) fn presence(flags: &[bool]) -> [u8; 1] {
    [flags
        .iter()
        .enumerate()
        .fold(0u8, |acc, (i, &f)| acc | (u8::from(f) << i))]
}

impl<'a> Sealer<'a> {
    pub(crate) fn new(keys: &'a Keyring, domain: Domain<'a>) -> Self {
        Sealer {
            keys,
            domain,
            derived: Vec::new(),
        }
    }

    fn key(&mut self, id: KeyId) -> Option<&RecordKey> {
        if let Some(i) = self.derived.iter().position(|k| k.id == id) {
            return self.derived.get(i);
        }
        let key = self.keys.derive(id, &self.domain)?;
        self.derived.push(key);
        self.derived.last()
    }

    /// Encrypts `plaintext` under the write key with a random nonce.
    pub(crate) fn seal(&mut self, plaintext: &[u8], aad: &[u8]) -> Result<String, Error> {
        self.seal_with(plaintext, aad, Some(random_nonce()?))
    }

    /// The write key's id and `nonce ‖ ciphertext ‖ tag` of `plaintext` under it, with a
    /// random nonce: for values kept as bytes (checkpoint values), which name their key
    /// elsewhere and would grow by a third in base64.
    pub(crate) fn seal_bytes(
        &mut self, plaintext: &[u8], aad: &[u8],
    ) -> Result<(KeyId, Vec<u8>), Error> {
        let id = self.keys.write_key();
        let payload = self.seal_payload(id, plaintext, aad, Some(random_nonce()?))?;
        Ok((id, payload))
    }

    /// Encrypts `plaintext` with a nonce derived from it (HMAC-SHA256 of the AAD and the
    /// plaintext under a derived key, as SIV does): equal values in one domain and field give
    /// equal envelopes, which is what lets a backend pair a tool call with its result.
    pub(crate) fn seal_deterministic(
        &mut self, plaintext: &[u8], aad: &[u8],
    ) -> Result<String, Error> {
        self.seal_with(plaintext, aad, None)
    }

    /// [`seal_deterministic`](Self::seal_deterministic) under the held key `id` (a lookup
    /// of what a read key sealed, during a rotation).
    pub(crate) fn seal_deterministic_under(
        &mut self, id: KeyId, plaintext: &[u8], aad: &[u8],
    ) -> Result<String, Error> {
        self.seal_envelope(id, plaintext, aad, None)
    }

    fn seal_with(
        &mut self, plaintext: &[u8], aad: &[u8], nonce: Option<Nonce<aes_gcm::aead::consts::U12>>,
    ) -> Result<String, Error> {
        self.seal_envelope(self.keys.write_key(), plaintext, aad, nonce)
    }

    fn seal_envelope(
        &mut self, id: KeyId, plaintext: &[u8], aad: &[u8],
        nonce: Option<Nonce<aes_gcm::aead::consts::U12>>,
    ) -> Result<String, Error> {
        let payload = self.seal_payload(id, plaintext, aad, nonce)?;
        Ok(format!(
            "{ENVELOPE_PREFIX}{id}:{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(payload)
        ))
    }

    /// `nonce ‖ ciphertext ‖ tag` of `plaintext` under the held key `id`, the nonce derived
    /// from the AAD and the plaintext (as [`seal_deterministic`](Self::seal_deterministic)).
    pub(crate) fn seal_payload_deterministic(
        &mut self, id: KeyId, plaintext: &[u8], aad: &[u8],
    ) -> Result<Vec<u8>, Error> {
        self.seal_payload(id, plaintext, aad, None)
    }

    /// Opens what [`seal_payload_deterministic`](Self::seal_payload_deterministic) or
    /// [`seal_bytes`](Self::seal_bytes) made under `id`.
    pub(crate) fn open_payload(
        &mut self, id: KeyId, payload: &[u8], aad: &[u8],
    ) -> Result<Vec<u8>, CryptoError> {
        if payload.len() < NONCE_BYTES + TAG_BYTES {
            return Err(CryptoError::Malformed);
        }
        let held = self.keys.ids();
        let key = self
            .key(id)
            .ok_or(CryptoError::WrongKey { found: id, held })?;
        let (nonce, ciphertext) = payload.split_at(NONCE_BYTES);
        let nonce = Nonce::try_from(nonce).map_err(|_| CryptoError::Malformed)?;
        key.cipher
            .decrypt(
                &nonce,
                Payload {
                    msg: ciphertext,
                    aad,
                },
            )
            .map_err(|_| CryptoError::Tampered)
    }

    fn seal_payload(
        &mut self, id: KeyId, plaintext: &[u8], aad: &[u8],
        nonce: Option<Nonce<aes_gcm::aead::consts::U12>>,
    ) -> Result<Vec<u8>, Error> {
        let key = self
            .key(id)
            .ok_or_else(|| Error::backend("the write key cannot be derived"))?;
        let nonce = match nonce {
            Some(n) => n,
            None => {
                let mut mac = key.siv.clone();
                mac.update(&(aad.len() as u64).to_be_bytes());
                mac.update(aad);
                mac.update(plaintext);
                let tag = mac.finalize().into_bytes();
                Nonce::try_from(&tag[..NONCE_BYTES])
                    .map_err(|_| Error::backend("a synthetic nonce has the wrong length"))?
            }
        };
        let ciphertext = key
            .cipher
            .encrypt(
                &nonce,
                Payload {
                    msg: plaintext,
                    aad,
                },
            )
            .map_err(|_| Error::invalid_input("the value is too large to encrypt"))?;
        let mut payload = Vec::with_capacity(NONCE_BYTES + ciphertext.len());
        payload.extend_from_slice(&nonce);
        payload.extend_from_slice(&ciphertext);
        Ok(payload)
    }

    /// A memory key's stand-in: `agentmem-key:v1:<key id>:<base64url(HMAC-SHA256(derived key,
    /// aad)[..16])>`, equal for equal `aad` (the scope, kind and key) under one master key, so
    /// a store's upsert by key still finds the item it replaces. One way: the key itself is
    /// kept encrypted beside it.
    pub(crate) fn key_token(&mut self, aad: &[u8]) -> Result<String, Error> {
        self.key_token_under(self.keys.write_key(), aad)
    }

    /// [`key_token`](Self::key_token) under the held key `id`.
    pub(crate) fn key_token_under(&mut self, id: KeyId, aad: &[u8]) -> Result<String, Error> {
        let key = self
            .key(id)
            .ok_or_else(|| Error::backend("the write key cannot be derived"))?;
        let mut mac = key.siv.clone();
        mac.update(b"key-token\0");
        mac.update(aad);
        let tag = mac.finalize().into_bytes();
        Ok(format!(
            "{KEY_TOKEN_PREFIX}{id}:{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&tag[..16])
        ))
    }

    /// HMAC-SHA256 of `label ‖ data` under the MAC subkey derived with the held key `id`: a
    /// keyed one-way function, equal for equal input under one master key (the key a vector
    /// is stored under, see `vectors.rs`). `label` keeps it apart from the synthetic nonces
    /// and key stand-ins made with the same subkey.
    pub(crate) fn keyed_hash_under(
        &mut self, id: KeyId, label: &[u8], data: &[u8],
    ) -> Result<[u8; 32], Error> {
        let key = self
            .key(id)
            .ok_or_else(|| Error::backend("the write key cannot be derived"))?;
        let mut mac = key.siv.clone();
        mac.update(label);
        mac.update(data);
        let tag = mac.finalize().into_bytes();
        let mut out = [0u8; 32];
        out.copy_from_slice(&tag);
        Ok(out)
    }

    /// Decrypts an envelope made by [`seal`](Self::seal) with the same `aad`.
    pub(crate) fn open(&mut self, envelope: &str, aad: &[u8]) -> Result<Vec<u8>, CryptoError> {
        let rest = envelope
            .strip_prefix(ENVELOPE_PREFIX)
            .ok_or(CryptoError::NotEncrypted)?;
        let (id, payload) = rest.split_once(':').ok_or(CryptoError::Malformed)?;
        let id: KeyId = id.parse().map_err(|_| CryptoError::Malformed)?;
        let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| CryptoError::Malformed)?;
        self.open_payload(id, &payload, aad)
    }

    /// Whether plaintext may be passed through when reading (see [`Keyring`]).
    pub(crate) fn accepts_plaintext(&self) -> bool {
        self.keys.accept_plaintext
    }
}

/// Opens an envelope holding a string; a value that is not one is passed through only while
/// plaintext is accepted (see [`Keyring`]).
pub(crate) fn open_string(
    sealer: &mut Sealer<'_>, value: String, aad: &[u8],
) -> Result<String, CryptoError> {
    if sealer.accepts_plaintext() && !is_envelope(&value) {
        return Ok(value);
    }
    let bytes = sealer.open(&value, aad)?;
    String::from_utf8(bytes).map_err(|_| CryptoError::Malformed)
}

/// A fresh random nonce; `Unavailable` when the system's random generator fails.
fn random_nonce() -> Result<Nonce<aes_gcm::aead::consts::U12>, Error> {
    Nonce::try_generate().map_err(|e| {
        Error::unavailable("the system's random generator failed").with_source(e.to_string())
    })
}

/// The length of the envelope of a `plaintext_len`-byte value.
pub(crate) const fn envelope_len(plaintext_len: usize) -> usize {
    let payload = NONCE_BYTES + plaintext_len + TAG_BYTES;
    ENVELOPE_PREFIX.len() + 16 + 1 + (payload * 4).div_ceil(3)
}

/// The longest plaintext whose envelope takes at most `stored` bytes.
pub(crate) const fn max_plaintext(stored: usize) -> usize {
    let mut n = stored;
    while n > 0 && envelope_len(n) > stored {
        n -= 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Holds only for types that wipe themselves when dropped.
    fn zeroized_on_drop<T: zeroize::ZeroizeOnDrop>() {}

    #[test]
    fn long_lived_and_per_call_key_material_is_zeroized_on_drop() {
        // What an `Entry` keeps for the keyring's lifetime.
        zeroized_on_drop::<Zeroizing<[u8; PRK_BYTES]>>();
        // What a derivation holds for one call: the HMAC state of HKDF and of the synthetic
        // nonces runs on SHA-256 cores, which wipe themselves only with `sha2`'s `zeroize`.
        zeroized_on_drop::<Sha256>();
        zeroized_on_drop::<<Sha256 as hmac::EagerHash>::Core>();
        zeroized_on_drop::<Aes256Gcm>();
    }

    #[test]
    fn keys_derived_from_the_kept_prk_are_those_derived_before() {
        // Stores written when the keyring held a whole `Hkdf` must still open: expanding from
        // the extracted PRK gives the same bytes.
        let key = MasterKey::from_bytes([9; 32]);
        let whole = Hkdf::<Sha256>::new(Some(DOMAIN), key.bytes());
        let entry = Entry::new(&key);
        let (mut a, mut b) = ([0u8; 64], [0u8; 64]);
        whole
            .expand_multi_info(&[SESSION_INFO, b"s1"], &mut a)
            .unwrap();
        entry
            .hkdf()
            .unwrap()
            .expand_multi_info(&[SESSION_INFO, b"s1"], &mut b)
            .unwrap();
        assert_eq!(a, b);
        assert_ne!(entry.prk.as_ref(), &[0u8; PRK_BYTES]);
    }
}
