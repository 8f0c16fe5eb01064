//! The master key ([`MasterKey`]), its fingerprint ([`KeyId`]) and where a key is read from
//! ([`KeySource`]).

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use aes_gcm::aead::{Generate, Key};
use aes_gcm::Aes256Gcm;
use agentmem_core::{Error, Result};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use zeroize::Zeroize;

/// The environment variable the master key is read from by [`MasterKey::from_env`]: 32 bytes
/// in base64.
pub const KEY_ENV: &str = "AGENTMEM_ENCRYPTION_KEY";

/// How many bytes a master key has.
pub const KEY_BYTES: usize = 32;

/// Domain string of the key fingerprint, so a key id is never a hash used elsewhere.
const KEY_ID_DOMAIN: &[u8] = b"agentmem-crypt/v1/key-id\0";

/// The master key: 32 random bytes, written as base64 (44 characters). Every record key is
/// derived from it (see the crate documentation); it is never stored.
///
/// Its `Debug` shows the [`KeyId`] only, and its bytes are zeroed when it is dropped.
///
/// ```
/// use agentmem_crypt::MasterKey;
/// let key = MasterKey::generate()?;
/// let text = key.to_base64();
/// assert_eq!(text.len(), 44);
/// let again: MasterKey = text.parse()?;
/// assert_eq!(again.id(), key.id());
/// assert!(!format!("{key:?}").contains(&text));
/// assert!(MasterKey::from_base64("c2hvcnQ=").is_err(), "5 bytes is not a key");
/// # Ok::<(), agentmem_core::Error>(())
/// ```
#[derive(Clone)]
pub struct MasterKey {
    bytes: [u8; KEY_BYTES],
    id: KeyId,
}

impl MasterKey {
    /// A key of these 32 bytes.
    pub fn from_bytes(bytes: [u8; KEY_BYTES]) -> Self {
        let digest = Sha256::new()
            .chain_update(KEY_ID_DOMAIN)
            .chain_update(bytes)
            .finalize();
        let mut id = [0u8; 8];
        id.copy_from_slice(&digest[..8]);
        MasterKey {
            bytes,
            id: KeyId(id),
        }
    }

    /// A new random key from the operating system's generator.
    pub fn generate() -> Result<Self> {
        let key = Key::<Aes256Gcm>::try_generate().map_err(|e| {
            Error::unavailable("the system's random generator failed").with_source(e.to_string())
        })?;
        let mut bytes = [0u8; KEY_BYTES];
        bytes.copy_from_slice(&key);
        Ok(Self::from_bytes(bytes))
    }

    /// Reads a key written in base64 (standard alphabet, padding optional; surrounding
    /// whitespace ignored). `InvalidInput` unless it decodes to exactly 32 bytes; the message
    /// never repeats the text.
    pub fn from_base64(text: &str) -> Result<Self> {
        let text = text.trim();
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(text)
            .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(text))
            .map_err(|_| {
                Error::invalid_input(
                    "the encryption key is not valid base64 (it must be 32 bytes in base64, 44 characters)",
                )
            })?;
        let mut decoded = zeroize::Zeroizing::new(decoded);
        let bytes: [u8; KEY_BYTES] = decoded.as_slice().try_into().map_err(|_| {
            Error::invalid_input(format!(
                "the encryption key decodes to {} bytes; it must be {KEY_BYTES} bytes in base64 (44 characters)",
                decoded.len()
            ))
        })?;
        decoded.zeroize();
        Ok(Self::from_bytes(bytes))
    }

    /// Reads a key from a file holding it in base64 (as [`from_base64`](Self::from_base64)).
    ///
    /// Like ssh with a private key, a file that group or others may read (or write) is
    /// refused with `InvalidInput` naming `chmod 600`: the key is the only secret encryption
    /// has. The mode is read from the opened file, so it is the file that is read.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self> {
        use std::io::Read as _;
        let path = path.as_ref();
        let unreadable = |e| {
            Error::io(
                format!("could not read the encryption key file {}", path.display()),
                e,
            )
        };
        let mut file = std::fs::File::open(path).map_err(unreadable)?;
        check_private(path, &file.metadata().map_err(unreadable)?)?;
        let mut text = zeroize::Zeroizing::new(String::new());
        file.read_to_string(&mut text).map_err(unreadable)?;
        Self::from_base64(&text)
    }

    /// Reads the key from [`KEY_ENV`] (`AGENTMEM_ENCRYPTION_KEY`); `InvalidInput` when it is
    /// unset or empty.
    pub fn from_env() -> Result<Self> {
        match std::env::var(KEY_ENV) {
            Ok(text) if !text.trim().is_empty() => {
                let text = zeroize::Zeroizing::new(text);
                Self::from_base64(&text)
            }
            _ => Err(Error::invalid_input(format!(
                "no encryption key: {KEY_ENV} is not set (32 bytes in base64)"
            ))),
        }
    }

    /// The key in base64 (standard alphabet, padded: 44 characters), to write to a key file.
    pub fn to_base64(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(self.bytes)
    }

    /// The key's fingerprint, stored with every record it encrypted.
    pub fn id(&self) -> KeyId {
        self.id
    }

    pub(crate) fn bytes(&self) -> &[u8; KEY_BYTES] {
        &self.bytes
    }
}

/// Refuses a key file that group or others may read or write (Unix modes; elsewhere the
/// platform's access lists decide).
fn check_private(path: &Path, metadata: &std::fs::Metadata) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = metadata.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(Error::invalid_input(format!(
                "the encryption key file {} is open to group or others (mode {mode:03o}); \
                 make it private with `chmod 600 {}`",
                path.display(),
                path.display()
            )));
        }
    }
    #[cfg(not(unix))]
    let _ = (path, metadata);
    Ok(())
}

impl Drop for MasterKey {
    fn drop(&mut self) {
        self.bytes.zeroize();
    }
}

impl fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MasterKey")
            .field("id", &self.id)
            .field("key", &"***")
            .finish()
    }
}

impl FromStr for MasterKey {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Self::from_base64(s)
    }
}

/// A master key's fingerprint: the first 8 bytes of SHA-256 over a domain string and the key,
/// written as 16 lowercase hex digits. It names the key a record was encrypted with (so keys
/// can be rotated) and reveals nothing usable about the key.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyId([u8; 8]);

impl KeyId {
    /// The fingerprint's bytes.
    pub fn as_bytes(&self) -> &[u8; 8] {
        &self.0
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyId({self})")
    }
}

impl Serialize for KeyId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for KeyId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl FromStr for KeyId {
    type Err = Error;
    /// Parses 16 hex digits.
    fn from_str(s: &str) -> Result<Self> {
        agentmem_core::support::hex_bytes(s)
            .map(KeyId)
            .ok_or_else(|| Error::invalid_input(format!("invalid key id {s:?}: 16 hex digits")))
    }
}

/// Where a master key comes from, as a configuration holds it (serialized as
/// `{"base64": "..."}`, `{"file": "/path"}` or `"env"`). Its `Debug` redacts an inline key.
///
/// ```
/// use agentmem_crypt::KeySource;
/// let source: KeySource = serde_json::from_str(r#"{"file": "/etc/agentmem/key"}"#).unwrap();
/// assert_eq!(source, KeySource::File("/etc/agentmem/key".into()));
/// let inline = KeySource::Base64("c2VjcmV0".into());
/// assert_eq!(format!("{inline:?}"), "Base64(\"***\")");
/// ```
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum KeySource {
    /// The key itself, in base64.
    Base64(String),
    /// A file holding the key in base64.
    File(PathBuf),
    /// The environment variable [`KEY_ENV`].
    Env,
}

impl KeySource {
    /// Reads the key.
    pub fn load(&self) -> Result<MasterKey> {
        match self {
            KeySource::Base64(text) => MasterKey::from_base64(text),
            KeySource::File(path) => MasterKey::from_file(path),
            KeySource::Env => MasterKey::from_env(),
        }
    }
}

impl fmt::Debug for KeySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeySource::Base64(_) => f.debug_tuple("Base64").field(&"***").finish(),
            KeySource::File(path) => f.debug_tuple("File").field(path).finish(),
            KeySource::Env => f.write_str("Env"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_ids_are_stable_hex_and_distinct() {
        let a = MasterKey::from_bytes([7; 32]);
        let b = MasterKey::from_bytes([8; 32]);
        assert_ne!(a.id(), b.id());
        assert_eq!(a.id(), MasterKey::from_bytes([7; 32]).id());
        let text = a.id().to_string();
        assert_eq!(text.len(), 16);
        assert_eq!(text.parse::<KeyId>().unwrap(), a.id());
        assert!("xyz".parse::<KeyId>().is_err());
    }

    #[test]
    fn bad_keys_are_refused_without_echoing_them() {
        let err = MasterKey::from_base64("not base64 at all!").unwrap_err();
        assert_eq!(err.kind(), agentmem_core::ErrorKind::InvalidInput);
        assert!(!err.to_string().contains("not base64 at all"));
        let short = base64::engine::general_purpose::STANDARD.encode([1u8; 31]);
        let err = MasterKey::from_base64(&short).unwrap_err();
        assert!(err.to_string().contains("31 bytes"), "{err}");
        let unpadded = base64::engine::general_purpose::STANDARD_NO_PAD.encode([1u8; 32]);
        assert_eq!(
            MasterKey::from_base64(&format!(" {unpadded}\n"))
                .unwrap()
                .id(),
            MasterKey::from_bytes([1; 32]).id()
        );
    }

    #[test]
    fn debug_redacts_the_key() {
        let key = MasterKey::from_bytes([42; 32]);
        let debug = format!("{key:?}");
        assert!(!debug.contains(&key.to_base64()));
        assert!(debug.contains(&key.id().to_string()));
    }

    #[test]
    fn keys_load_from_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        let key = MasterKey::generate().unwrap();
        std::fs::write(&path, format!("{}\n", key.to_base64())).unwrap();
        make_private(&path);
        let loaded = KeySource::File(path.clone()).load().unwrap();
        assert_eq!(loaded.id(), key.id());
        let missing = MasterKey::from_file(dir.path().join("missing")).unwrap_err();
        assert_eq!(missing.kind(), agentmem_core::ErrorKind::NotFound);
    }

    fn make_private(path: &Path) {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        #[cfg(not(unix))]
        let _ = path;
    }

    #[cfg(unix)]
    #[test]
    fn key_files_open_to_others_are_refused() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        let key = MasterKey::generate().unwrap();
        std::fs::write(&path, key.to_base64()).unwrap();
        for mode in [0o644, 0o640, 0o604, 0o620, 0o602, 0o660] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let err = MasterKey::from_file(&path).unwrap_err();
            assert_eq!(
                err.kind(),
                agentmem_core::ErrorKind::InvalidInput,
                "mode {mode:o}"
            );
            let text = err.to_string();
            assert!(
                text.contains(&format!("chmod 600 {}", path.display())),
                "{text}"
            );
            assert!(text.contains(&format!("{mode:03o}")), "{text}");
            assert!(!text.contains(&key.to_base64()), "{text}");
        }
        for mode in [0o600, 0o400] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            assert_eq!(MasterKey::from_file(&path).unwrap().id(), key.id());
        }
    }
}
