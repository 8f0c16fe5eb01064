// The crate documentation is the README (also shown on GitHub and crates.io). Its links point
// to docs.rs there; the definitions below come first, so rustdoc links to (and checks) the items.
//! [`EncryptLayer`]: crate::EncryptLayer
//! [`Encrypted`]: crate::Encrypted
//! [`MasterKey`]: crate::MasterKey
//! [`KeyId`]: crate::KeyId
//! [`KeySource`]: crate::KeySource
//! [`Keyring`]: crate::Keyring
//! [`CryptoError`]: crate::CryptoError
//! [`NoKeyLayer`]: crate::NoKeyLayer
//! [`rekey`]: crate::rekey()
//! [`encrypt_existing`]: crate::encrypt_existing()
//! [`RekeyReport`]: crate::RekeyReport
//! [`StoreMarker`]: crate::StoreMarker
//! [`MARKER_PROPERTY`]: crate::MARKER_PROPERTY
//! [`REKEY_PROPERTY`]: crate::REKEY_PROPERTY
//! [`REKEY_THREAD_PREFIX`]: crate::REKEY_THREAD_PREFIX
//! [`rekey_thread_id`]: crate::rekey_thread_id()
#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, clippy::unwrap_used)]

// First: the macro it defines is used by the layers below.
#[macro_use]
mod clear;

mod checkpoints;
mod cipher;
mod graph;
mod guard;
mod ids;
mod items;
mod key;
mod layer;
mod marker;
mod rekey;
mod rekey_graph;
mod rekey_threads;
mod vectors;

pub use cipher::{
    envelope_key_id, is_envelope, CryptoError, Keyring, ENVELOPE_PREFIX, KEY_TOKEN_PREFIX,
    MEMORY_KEY_ENTRY, METADATA_KEY,
};
pub use graph::{MAX_ENCRYPTED_GRAPH_NAME_BYTES, MAX_ENCRYPTED_OBSERVATION_BYTES};
pub use guard::{NoKey, NoKeyLayer};
pub use ids::{MAX_SEALED_MEMORY_ID_BYTES, MEMORY_ID_PREFIX};
pub use key::{KeyId, KeySource, MasterKey, KEY_BYTES, KEY_ENV};
pub use layer::{EncryptLayer, Encrypted, MAX_ENCRYPTED_TOOL_FIELD_BYTES};
pub use marker::{KeyCheck, StoreMarker, MARKER_PROPERTY};
pub use rekey::{encrypt_existing, rekey, RekeyReport};
pub use rekey_threads::{rekey_thread_id, REKEY_PROPERTY, REKEY_THREAD_PREFIX};
pub use vectors::{MAX_SEALED_VECTOR_BYTES, SEALED_VECTOR_PREFIX, VECTOR_SEALING_BYTES};
