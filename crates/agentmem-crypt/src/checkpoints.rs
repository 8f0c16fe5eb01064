//! Checkpoints through the encryption layer: which parts are sealed, what each is bound to, and
//! the checkpoint operations of [`Encrypted`] that seal and open them (see the crate README).
//!
//! The opaque parts are sealed: the checkpoint body, each channel value and each pending
//! write's value. Each is a [`TypedBytes`] (type tag and bytes), sealed whole under the key of
//! its thread ([`Domain::Thread`]) and stored as a `TypedBytes` whose type tag is
//! `agentmem-enc:v1:<key id>` and whose bytes are `nonce ‖ ciphertext ‖ tag`, the plaintext
//! being `u32` big-endian tag length ‖ tag ‖ bytes. What stores query stays in the clear:
//! thread ids, namespaces, checkpoint ids, parents, channel versions, metadata, task ids,
//! indexes, channels, task paths and times.

use std::collections::{HashMap, HashSet};

use agentmem_core::checkpoint::{missing_thread, thread_exists};
use agentmem_core::{
    AgentMemory, ChannelBlob, Checkpoint, CheckpointId, CheckpointKey, CheckpointNs,
    CheckpointQuery, CheckpointTuple, Operation, PendingWrite, Result, ThreadId, TypedBytes,
};
use zeroize::Zeroizing;

use crate::cipher::{aad, CryptoError, Domain, Keyring, Sealer, ENVELOPE_PREFIX};
use crate::key::KeyId;
use crate::layer::Encrypted;

/// The key a sealed value names in its type tag (`agentmem-enc:v1:<key id>`); `None` for a
/// value that is not sealed.
pub(crate) fn sealed_key(value: &TypedBytes) -> Option<KeyId> {
    value.type_tag.strip_prefix(ENVELOPE_PREFIX)?.parse().ok()
}

/// The first key a sealed part of `tuple` names: what a reader without a key is refused for.
pub(crate) fn tuple_key(tuple: &CheckpointTuple) -> Option<KeyId> {
    sealed_key(&tuple.checkpoint.body)
        .or_else(|| {
            let mut values = tuple.blobs.iter().filter_map(|b| b.value.as_ref());
            values.find_map(sealed_key)
        })
        .or_else(|| tuple.writes.iter().find_map(|w| sealed_key(&w.value)))
}

// ---- associated data -------------------------------------------------------------------

/// A checkpoint body's AAD: its thread, namespace and id, its parent and its channel versions
/// (which name the blobs it reads), so a body moved to another checkpoint, or a checkpoint
/// pointed at other blobs or another parent, fails to open.
fn body_aad(checkpoint: &Checkpoint) -> Vec<u8> {
    let key = &checkpoint.key;
    let parent = match &checkpoint.parent {
        Some(parent) => [&[1u8][..], parent.as_str().as_bytes()].concat(),
        None => vec![0],
    };
    let versions: Vec<&[u8]> = checkpoint
        .channel_versions
        .iter()
        .flat_map(|(channel, version)| [channel.as_bytes(), version.as_bytes()])
        .collect();
    aad(&[
        b"checkpoint",
        key.thread.as_str().as_bytes(),
        key.ns.as_str().as_bytes(),
        key.id.as_str().as_bytes(),
        b"body",
        &parent,
        &aad(&versions),
    ])
}

/// A channel value's AAD: the blob's thread, namespace, channel and version.
fn blob_aad(thread: &ThreadId, ns: &CheckpointNs, channel: &str, version: &str) -> Vec<u8> {
    aad(&[
        b"checkpoint-blob",
        thread.as_str().as_bytes(),
        ns.as_str().as_bytes(),
        channel.as_bytes(),
        version.as_bytes(),
    ])
}

/// A pending write's AAD: the checkpoint it follows, its task id and index, its channel and
/// its task path.
fn write_aad(at: &CheckpointKey, write: &PendingWrite) -> Vec<u8> {
    aad(&[
        b"checkpoint-write",
        at.thread.as_str().as_bytes(),
        at.ns.as_str().as_bytes(),
        at.id.as_str().as_bytes(),
        write.task_id.as_bytes(),
        &write.idx.to_be_bytes(),
        write.channel.as_bytes(),
        write.task_path.as_bytes(),
    ])
}

// ---- one value -------------------------------------------------------------------------

/// Seals `value` (its type tag with its bytes) under the sealer's thread key.
fn seal_value(sealer: &mut Sealer<'_>, value: &TypedBytes, aad: &[u8]) -> Result<TypedBytes> {
    let tag = value.type_tag.as_bytes();
    let tag_len = u32::try_from(tag.len())
        .map_err(|_| agentmem_core::Error::invalid_input("a type tag is too long to encrypt"))?;
    let mut plaintext = Zeroizing::new(Vec::with_capacity(4 + tag.len() + value.bytes.len()));
    plaintext.extend_from_slice(&tag_len.to_be_bytes());
    plaintext.extend_from_slice(tag);
    plaintext.extend_from_slice(&value.bytes);
    let (key, payload) = sealer.seal_bytes(&plaintext, aad)?;
    Ok(TypedBytes {
        type_tag: format!("{ENVELOPE_PREFIX}{key}"),
        bytes: payload,
    })
}

/// Opens what [`seal_value`] made with the same `aad`. A value that is not sealed is passed
/// through only while plaintext is accepted (see [`Keyring`]), else refused as
/// [`CryptoError::NotEncrypted`].
fn open_value(
    sealer: &mut Sealer<'_>, value: TypedBytes, aad: &[u8],
) -> std::result::Result<TypedBytes, CryptoError> {
    let Some(key) = value.type_tag.strip_prefix(ENVELOPE_PREFIX) else {
        return if sealer.accepts_plaintext() {
            Ok(value)
        } else {
            Err(CryptoError::NotEncrypted)
        };
    };
    let key: KeyId = key.parse().map_err(|_| CryptoError::Malformed)?;
    let plaintext = Zeroizing::new(sealer.open_payload(key, &value.bytes, aad)?);
    let (tag_len, rest) = plaintext
        .split_first_chunk::<4>()
        .ok_or(CryptoError::Malformed)?;
    let tag_len =
        usize::try_from(u32::from_be_bytes(*tag_len)).map_err(|_| CryptoError::Malformed)?;
    if rest.len() < tag_len {
        return Err(CryptoError::Malformed);
    }
    let (tag, bytes) = rest.split_at(tag_len);
    let type_tag = std::str::from_utf8(tag).map_err(|_| CryptoError::Malformed)?;
    Ok(TypedBytes::new(type_tag, bytes))
}

// ---- checkpoints, blobs and writes -----------------------------------------------------

fn describe(key: &CheckpointKey) -> String {
    format!(
        "checkpoint {:?} of thread {:?} (namespace {:?})",
        key.id.as_str(),
        key.thread.as_str(),
        key.ns.as_str()
    )
}

/// `checkpoint` and `blobs` sealed under `sealer` (the key of the checkpoint's thread), after
/// checking them as a store would (sealed, an over-long type tag would go unnoticed).
fn seal_checkpoint(
    sealer: &mut Sealer<'_>, checkpoint: &Checkpoint, blobs: &[ChannelBlob],
) -> Result<(Checkpoint, Vec<ChannelBlob>)> {
    checkpoint.validate()?;
    blobs.iter().try_for_each(ChannelBlob::validate)?;
    let key = &checkpoint.key;
    let sealed = Checkpoint {
        key: key.clone(),
        parent: checkpoint.parent.clone(),
        body: seal_value(sealer, &checkpoint.body, &body_aad(checkpoint))?,
        channel_versions: checkpoint.channel_versions.clone(),
        metadata: checkpoint.metadata.clone(),
        created_at: checkpoint.created_at,
    };
    let blobs = blobs
        .iter()
        .map(|blob| {
            let value = match &blob.value {
                Some(value) => {
                    let aad = blob_aad(&key.thread, &key.ns, &blob.channel, &blob.version);
                    Some(seal_value(sealer, value, &aad)?)
                }
                None => None,
            };
            Ok(ChannelBlob {
                channel: blob.channel.clone(),
                version: blob.version.clone(),
                value,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((sealed, blobs))
}

/// `writes` made after checkpoint `at`, sealed under `sealer` (the key of `at`'s thread).
fn seal_writes(
    sealer: &mut Sealer<'_>, at: &CheckpointKey, writes: &[PendingWrite],
) -> Result<Vec<PendingWrite>> {
    writes.iter().try_for_each(PendingWrite::validate)?;
    writes
        .iter()
        .map(|write| {
            Ok(PendingWrite {
                task_id: write.task_id.clone(),
                idx: write.idx,
                channel: write.channel.clone(),
                value: seal_value(sealer, &write.value, &write_aad(at, write))?,
                task_path: write.task_path.clone(),
            })
        })
        .collect()
}

/// Opens every sealed part of `tuple` with `sealer` (the key of `tuple`'s thread).
fn open_tuple(sealer: &mut Sealer<'_>, tuple: CheckpointTuple) -> Result<CheckpointTuple> {
    let CheckpointTuple {
        mut checkpoint,
        blobs,
        writes,
    } = tuple;
    let key = checkpoint.key.clone();
    let aad = body_aad(&checkpoint);
    let body = std::mem::replace(&mut checkpoint.body, TypedBytes::new("", Vec::new()));
    checkpoint.body = open_value(sealer, body, &aad).map_err(|e| e.at(describe(&key)))?;
    let blobs = blobs
        .into_iter()
        .map(|blob| {
            let ChannelBlob {
                channel,
                version,
                value,
            } = blob;
            let value = match value {
                Some(value) => {
                    let aad = blob_aad(&key.thread, &key.ns, &channel, &version);
                    let opened = open_value(sealer, value, &aad).map_err(|e| {
                        e.at(format!(
                            "the value of channel {channel:?} at version {version:?} of {}",
                            describe(&key)
                        ))
                    })?;
                    Some(opened)
                }
                None => None,
            };
            Ok(ChannelBlob {
                channel,
                version,
                value,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let writes = writes
        .into_iter()
        .map(|mut write| {
            let aad = write_aad(&key, &write);
            let value = std::mem::replace(&mut write.value, TypedBytes::new("", Vec::new()));
            write.value = open_value(sealer, value, &aad).map_err(|e| {
                e.at(format!(
                    "the pending write (task {:?}, index {}) of {}",
                    write.task_id,
                    write.idx,
                    describe(&key)
                ))
            })?;
            Ok(write)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(CheckpointTuple {
        checkpoint,
        blobs,
        writes,
    })
}

/// Opens tuples of any threads, deriving each thread's key once.
fn open_tuples(keys: &Keyring, tuples: Vec<CheckpointTuple>) -> Result<Vec<CheckpointTuple>> {
    let mut sealers: HashMap<ThreadId, Sealer<'_>> = HashMap::new();
    tuples
        .into_iter()
        .map(|tuple| {
            let thread = &tuple.checkpoint.key.thread;
            let sealer = sealers
                .entry(thread.clone())
                .or_insert_with(|| Sealer::new(keys, Domain::Thread(thread.clone())));
            open_tuple(sealer, tuple)
        })
        .collect()
}

// ---- the store's checkpoint operations -------------------------------------------------

impl<S: AgentMemory> Encrypted<S> {
    /// `put_checkpoint`: the body and channel values sealed, the rest as given.
    pub(crate) async fn put_sealed_checkpoint(
        &self, checkpoint: &Checkpoint, blobs: &[ChannelBlob],
    ) -> Result<()> {
        self.run(Operation::PutCheckpoint, async {
            let mut sealer = Sealer::new(&self.keys, Domain::Thread(checkpoint.key.thread.clone()));
            let (sealed, blobs) = seal_checkpoint(&mut sealer, checkpoint, blobs)?;
            self.inner.put_checkpoint(&sealed, &blobs).await
        })
        .await
    }

    /// `put_writes`: each value sealed, bound to the checkpoint `at`, its task id and index.
    pub(crate) async fn put_sealed_writes(
        &self, at: &CheckpointKey, writes: &[PendingWrite],
    ) -> Result<()> {
        self.run(Operation::PutWrites, async {
            let mut sealer = Sealer::new(&self.keys, Domain::Thread(at.thread.clone()));
            let sealed = seal_writes(&mut sealer, at, writes)?;
            self.inner.put_writes(at, &sealed).await
        })
        .await
    }

    /// `get_checkpoint`, opened with `thread`'s key (a record of another thread does not open).
    pub(crate) async fn get_opened_checkpoint(
        &self, thread: &ThreadId, ns: &CheckpointNs, id: Option<&CheckpointId>,
    ) -> Result<Option<CheckpointTuple>> {
        self.run(Operation::GetCheckpoint, async {
            let Some(stored) = self.inner.get_checkpoint(thread, ns, id).await? else {
                return Ok(None);
            };
            let mut sealer = Sealer::new(&self.keys, Domain::Thread(thread.clone()));
            open_tuple(&mut sealer, stored).map(Some)
        })
        .await
    }

    /// `list_checkpoints`: the store filters (what it filters on is in the clear), the layer
    /// opens what it returns.
    pub(crate) async fn list_opened_checkpoints(
        &self, query: &CheckpointQuery,
    ) -> Result<Vec<CheckpointTuple>> {
        self.run(Operation::ListCheckpoints, async {
            let stored = self.inner.list_checkpoints(query).await?;
            open_tuples(&self.keys, stored)
        })
        .await
    }

    /// `copy_thread`, not as the store's own copy: every value is sealed under its thread's
    /// key and bound to it, so copied ciphertext would open in no thread. The layer reads and
    /// opens every checkpoint of `source` (`NotFound` when it holds none), refuses a `target`
    /// that holds one (`Conflict`), then writes each checkpoint, oldest first, re-sealed under
    /// `target`'s key: one `put_checkpoint` (with the blobs no checkpoint copied before
    /// wrote) and one `put_writes` each. Not one atomic step: see the crate README.
    pub(crate) async fn copy_thread_resealed(
        &self, source: &ThreadId, target: &ThreadId,
    ) -> Result<u64> {
        self.run(Operation::CopyThread, async {
            let all = CheckpointQuery::thread(source.clone());
            let stored = self.inner.list_checkpoints(&all).await?;
            if stored.is_empty() {
                return Err(missing_thread(source));
            }
            let held = CheckpointQuery {
                limit: Some(1),
                ..CheckpointQuery::thread(target.clone())
            };
            if !self.inner.list_checkpoints(&held).await?.is_empty() {
                return Err(thread_exists(target));
            }
            // Every value opened before anything is written: a source that does not open
            // leaves no partial copy.
            let mut from = Sealer::new(&self.keys, Domain::Thread(source.clone()));
            let opened = stored
                .into_iter()
                .rev()
                .map(|tuple| open_tuple(&mut from, tuple))
                .collect::<Result<Vec<_>>>()?;
            let copied = u64::try_from(opened.len()).unwrap_or(u64::MAX);
            let mut to = Sealer::new(&self.keys, Domain::Thread(target.clone()));
            let mut written: HashSet<(CheckpointNs, String, String)> = HashSet::new();
            for tuple in opened {
                let CheckpointTuple {
                    mut checkpoint,
                    blobs,
                    writes,
                } = tuple;
                checkpoint.key.thread = target.clone();
                let ns = &checkpoint.key.ns;
                let blobs: Vec<ChannelBlob> = blobs
                    .into_iter()
                    .filter(|b| written.insert((ns.clone(), b.channel.clone(), b.version.clone())))
                    .collect();
                let (sealed, blobs) = seal_checkpoint(&mut to, &checkpoint, &blobs)?;
                self.inner.put_checkpoint(&sealed, &blobs).await?;
                if !writes.is_empty() {
                    let sealed = seal_writes(&mut to, &checkpoint.key, &writes)?;
                    self.inner.put_writes(&checkpoint.key, &sealed).await?;
                }
            }
            Ok(copied)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_opens_with_its_type_tag_and_only_with_its_aad() {
        let keys = Keyring::for_tests(7);
        let thread: ThreadId = "t".parse().unwrap();
        let mut sealer = Sealer::new(&keys, Domain::Thread(thread));
        for value in [
            TypedBytes::new("msgpack", b"\x81\xa1a\x01".to_vec()),
            TypedBytes::new("", Vec::new()),
            TypedBytes::new("ünïcode", vec![0; 1000]),
        ] {
            let sealed = seal_value(&mut sealer, &value, b"here").unwrap();
            assert_eq!(
                sealed.type_tag,
                format!("{ENVELOPE_PREFIX}{}", keys.write_key())
            );
            assert_eq!(sealed_key(&sealed), Some(keys.write_key()));
            assert_eq!(
                open_value(&mut sealer, sealed.clone(), b"elsewhere"),
                Err(CryptoError::Tampered)
            );
            assert_eq!(open_value(&mut sealer, sealed, b"here").unwrap(), value);
        }
    }

    #[test]
    fn a_value_sealed_for_one_thread_does_not_open_in_another() {
        let keys = Keyring::for_tests(7);
        let (a, b): (ThreadId, ThreadId) = ("a".parse().unwrap(), "b".parse().unwrap());
        let value = TypedBytes::new("json", b"{}".to_vec());
        let sealed = seal_value(&mut Sealer::new(&keys, Domain::Thread(a)), &value, b"x").unwrap();
        let mut other = Sealer::new(&keys, Domain::Thread(b));
        assert_eq!(
            open_value(&mut other, sealed, b"x"),
            Err(CryptoError::Tampered)
        );
    }

    #[test]
    fn plaintext_is_refused_unless_accepted() {
        let mut keys = Keyring::for_tests(7);
        let thread: ThreadId = "t".parse().unwrap();
        let value = TypedBytes::new("json", b"{}".to_vec());
        let mut sealer = Sealer::new(&keys, Domain::Thread(thread.clone()));
        assert_eq!(
            open_value(&mut sealer, value.clone(), b""),
            Err(CryptoError::NotEncrypted)
        );
        keys.accept_plaintext = true;
        let mut sealer = Sealer::new(&keys, Domain::Thread(thread));
        assert_eq!(open_value(&mut sealer, value.clone(), b""), Ok(value));
    }

    #[test]
    fn a_malformed_sealed_value_is_corrupt() {
        let keys = Keyring::for_tests(7);
        let mut sealer = Sealer::new(&keys, Domain::Thread("t".parse().unwrap()));
        let bad_key = TypedBytes::new(format!("{ENVELOPE_PREFIX}nothex"), vec![0; 40]);
        assert_eq!(
            open_value(&mut sealer, bad_key, b""),
            Err(CryptoError::Malformed)
        );
        let short = TypedBytes::new(format!("{ENVELOPE_PREFIX}{}", keys.write_key()), vec![0; 8]);
        assert_eq!(
            open_value(&mut sealer, short, b""),
            Err(CryptoError::Malformed)
        );
    }
}
