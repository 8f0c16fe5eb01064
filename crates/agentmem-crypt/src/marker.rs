//! The store's own record that it is encrypted: [`StoreMarker`], kept in the store property
//! [`MARKER_PROPERTY`], and the check both layers make against it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use agentmem_core::{AgentMemory, Error, Operation, Result};
use serde::{Deserialize, Serialize};

use crate::cipher::{CryptoError, Keyring};
use crate::key::KeyId;

/// The store property (see `SessionStore::set_store_property`) holding an encrypted store's
/// [`StoreMarker`], as JSON.
pub const MARKER_PROPERTY: &str = "agentmem.encryption";

/// One key as the marker names it: its id, and its key check value, the first 16 bytes of an
/// HMAC-SHA256 of a fixed label under a key derived from the master key (HKDF info
/// `agentmem-crypt/v1/store-check\0`), in base64url. It tells whether a key is the one meant
/// (an id alone is a fingerprint anyone can copy) and reveals nothing usable about the key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyCheck {
    /// The key's id.
    pub key: KeyId,
    /// The key check value.
    pub check: String,
}

/// What an encrypted store records about itself, in its store property [`MARKER_PROPERTY`]:
/// the key it is encrypted with, and while a [`rekey`](crate::rekey) (or
/// [`encrypt_existing`](crate::encrypt_existing)) runs, that it is being rewritten and from
/// which key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StoreMarker {
    /// The format of the marker: 1.
    pub v: u32,
    /// The key the store is (or, while rewriting, is becoming) encrypted with.
    #[serde(flatten)]
    pub key: KeyCheck,
    /// Set while the store is being rewritten: records may be under this key (when `from` is
    /// `Some`), under [`key`](Self::key), or (`encrypt_existing`) in plaintext.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rewriting: bool,
    /// The key a running rekey rewrites from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<KeyCheck>,
}

impl StoreMarker {
    /// The marker of a store encrypted with `keys`' write key.
    pub(crate) fn of(keys: &Keyring) -> Result<Self> {
        Ok(StoreMarker {
            v: 1,
            key: keys.key_check(keys.write_key())?,
            rewriting: false,
            from: None,
        })
    }

    /// The marker of a store being rewritten to `to`'s write key, from `from`'s (when it has
    /// keys: plaintext is rewritten from nothing).
    pub(crate) fn rewriting(to: &Keyring, from: Option<&Keyring>) -> Result<Self> {
        let from = match from {
            Some(keys) => Some(keys.key_check(keys.write_key())?),
            None => None,
        };
        Ok(StoreMarker {
            rewriting: true,
            from,
            ..StoreMarker::of(to)?
        })
    }

    /// The marker of a store whose records a layer holding `keys` starts to write under its
    /// write key while they are under `from`.
    pub(crate) fn rewriting_from(keys: &Keyring, from: KeyCheck) -> Result<Self> {
        Ok(StoreMarker {
            rewriting: true,
            from: Some(from),
            ..StoreMarker::of(keys)?
        })
    }

    /// The marker as stored.
    pub(crate) fn to_json(&self) -> Result<String> {
        Ok(serde_json::to_string(self)?)
    }

    /// Reads a stored marker; `CorruptData` when it is not one.
    pub(crate) fn parse(text: &str) -> Result<Self> {
        serde_json::from_str::<StoreMarker>(text)
            .ok()
            .filter(|m| m.v == 1)
            .ok_or_else(|| {
                Error::corrupt(format!(
                    "the store property `{MARKER_PROPERTY}` is not an encryption marker"
                ))
            })
    }

    /// Refuses `keys` unless they hold the marked key (or, while rewriting, the key rewritten
    /// from): `InvalidInput`, source [`CryptoError::WrongKey`], before anything is written.
    pub(crate) fn accept(&self, keys: &Keyring, op: Operation) -> Result<()> {
        let mut named = std::iter::once(&self.key).chain(&self.from);
        if named.any(|check| keys.key_check(check.key).is_ok_and(|held| held == *check)) {
            return Ok(());
        }
        let wrong = CryptoError::WrongKey {
            found: self.key.key,
            held: keys.ids(),
        };
        Err(
            Error::new(wrong.kind(), "the store is encrypted with another key")
                .with_source(wrong)
                .with_operation(op),
        )
    }
}

/// The marker `store` holds, if any, with its stored text (what a compare-and-set of it
/// expects).
pub(crate) async fn read_marker<S: AgentMemory + ?Sized>(
    store: &S,
) -> Result<Option<(String, StoreMarker)>> {
    match store.store_property(MARKER_PROPERTY).await? {
        Some(text) => {
            let marker = StoreMarker::parse(&text)?;
            Ok(Some((text, marker)))
        }
        None => Ok(None),
    }
}

/// How an operation meets an encrypted store, which decides what each layer checks first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Store properties and the schema version: never checked (the marker is read this way).
    Property,
    /// Listing ids, labels and archive summaries (and checkpoint threads), which are kept in
    /// the clear.
    Listing,
    /// Deleting sessions, items, checkpoints, graph entities, observations and relations, and
    /// vectors (`purge`, `delete_run_checkpoints`, `prune_checkpoints` and `clear_vectors`
    /// too): nothing is written that could mix with ciphertext.
    Delete,
    /// Reading records, which may be encrypted.
    Read,
    /// Writing records, but no ciphertext through the encryption layer (`rewind`,
    /// `update_session`).
    Write,
    /// Writing records the encryption layer encrypts: its first one marks the store.
    WriteCiphertext,
}

impl Access {
    pub(crate) fn of(op: Operation) -> Access {
        use Operation as O;
        match op {
            O::SchemaVersion | O::StoreProperty | O::SetStoreProperty => Access::Property,
            O::ListSessions | O::FindSessions | O::ListArchives | O::ListThreads => Access::Listing,
            O::DeleteSession
            | O::DeleteMemory
            | O::Purge
            | O::DeleteThread
            | O::DeleteRunCheckpoints
            | O::PruneCheckpoints
            | O::DeleteEntities
            | O::DeleteObservations
            | O::DeleteRelations
            | O::DeleteVectors
            | O::ClearVectors => Access::Delete,
            O::Load
            | O::LoadArchive
            | O::SearchMessages
            | O::GetContext
            | O::GetMemory
            | O::ListMemories
            | O::SearchMemories
            | O::GetCheckpoint
            | O::ListCheckpoints
            | O::ReadGraph
            | O::GetVectors
            | O::Export => Access::Read,
            O::Rewind | O::UpdateSession => Access::Write,
            O::SaveSession
            | O::Append
            | O::Compact
            | O::Fork
            | O::ReplaceArchive
            | O::PutMemory
            | O::PutCheckpoint
            | O::PutWrites
            | O::CopyThread
            | O::CreateEntities
            | O::CreateRelations
            | O::AddObservations
            | O::PutVectors => Access::WriteCiphertext,
            // `Open`, `Import`, and any operation added later: the strictest checks.
            _ => Access::WriteCiphertext,
        }
    }

    /// Whether the operation writes anything a reader would see.
    pub(crate) fn writes(self) -> bool {
        matches!(self, Access::Write | Access::WriteCiphertext)
    }
}

/// What a layer last learnt of its store's marker, shared by the clones of one store handle.
#[derive(Debug, Default)]
pub(crate) struct MarkerCache {
    /// The marked key, once the store was seen marked (a mark is never removed, so the store
    /// stays marked; the encryption layer records it only after its keys passed the check).
    marked: Mutex<Option<KeyId>>,
    /// The store had no marker when last read (another process may have marked it since).
    unmarked: AtomicBool,
}

impl MarkerCache {
    /// The marked key, once seen.
    pub(crate) fn marked(&self) -> Option<KeyId> {
        *self.marked.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the store was seen without a marker.
    pub(crate) fn seen_unmarked(&self) -> bool {
        self.unmarked.load(Ordering::Acquire)
    }

    /// Records what a read (or write) of the marker found.
    pub(crate) fn seen(&self, marker: Option<&StoreMarker>) {
        match marker {
            Some(marker) => {
                *self.marked.lock().unwrap_or_else(PoisonError::into_inner) = Some(marker.key.key);
            }
            None => self.unmarked.store(true, Ordering::Release),
        }
    }
}
