//! Checkpoints in agentmem's own formats: their canonical form (so the same content always
//! gives the same bytes) and the checks an import makes before writing anything.
//!
//! A document carries each checkpoint as a [`CheckpointTuple`], as
//! [`list_checkpoints`](agentmem_core::CheckpointStore::list_checkpoints) returns it: the
//! checkpoint, the channel values it reads and its pending writes. A channel value shared by
//! several checkpoints of a namespace is written with each of them.

use std::collections::{HashMap, HashSet};

use agentmem_core::checkpoint::sort_writes;
use agentmem_core::{
    CheckpointKey, CheckpointNs, CheckpointTuple, Error, Result, ThreadId, TypedBytes,
};

use crate::canonical_map;

/// Puts one checkpoint in its canonical form: metadata keys sorted ([`canonical_map`]), blobs
/// by channel (then version), pending writes by task path, task id and index
/// ([`sort_writes`]), as a store returns them. The checkpoints of a document are ordered by
/// thread, namespace and id ([`CheckpointKey`]'s order, byte by byte) by whoever builds it.
///
/// ```
/// use agentmem_core::{ChannelBlob, Checkpoint, CheckpointKey, CheckpointTuple, TypedBytes};
/// use agentmem_formats::canonical_checkpoint;
///
/// let key = CheckpointKey { thread: "t".parse()?, ns: Default::default(), id: "1".parse()? };
/// let blob = |channel: &str| ChannelBlob {
///     channel: channel.into(),
///     version: "1".into(),
///     value: None,
/// };
/// let mut tuple = CheckpointTuple {
///     checkpoint: Checkpoint::new(key, TypedBytes::new("json", b"{}".to_vec())),
///     blobs: vec![blob("b"), blob("a")],
///     writes: vec![],
/// };
/// canonical_checkpoint(&mut tuple);
/// assert_eq!(tuple.blobs[0].channel, "a");
/// # Ok::<(), agentmem_core::Error>(())
/// ```
pub fn canonical_checkpoint(tuple: &mut CheckpointTuple) {
    canonical_map(&mut tuple.checkpoint.metadata);
    tuple
        .blobs
        .sort_by(|a, b| (&a.channel, &a.version).cmp(&(&b.channel, &b.version)));
    sort_writes(&mut tuple.writes);
}

/// Where a channel value is stored: thread, namespace, channel, version.
type BlobKey<'a> = (&'a ThreadId, &'a CheckpointNs, &'a str, &'a str);

/// Checks the checkpoints of a document as a store would, and for what would make an import
/// ambiguous, so that an import refuses the document before writing anything (all errors are
/// `CorruptData` naming `source` and the checkpoint):
/// - each checkpoint, channel value and pending write passes its `validate`;
/// - no checkpoint appears twice;
/// - each blob is one the checkpoint reads (its channel at the version in
///   `channel_versions`), once;
/// - the same channel value (thread, namespace, channel, version) is the same in every
///   checkpoint that carries it;
/// - no pending write's (task id, index) appears twice in one checkpoint.
pub(crate) fn validate_checkpoints(tuples: &[CheckpointTuple], source: &str) -> Result<()> {
    let mut seen: HashSet<&CheckpointKey> = HashSet::new();
    let mut values: HashMap<BlobKey<'_>, &Option<TypedBytes>> = HashMap::new();
    for tuple in tuples {
        let key = &tuple.checkpoint.key;
        let bad = |why: &str| {
            Error::corrupt(format!(
                "{source}: checkpoint {:?} of thread {:?} (namespace {:?}): {why}",
                key.id.as_str(),
                key.thread.as_str(),
                key.ns.as_str()
            ))
        };
        if !seen.insert(key) {
            return Err(bad("it appears twice"));
        }
        tuple.checkpoint.validate().map_err(|e| bad(e.message()))?;
        let mut channels = HashSet::new();
        for blob in &tuple.blobs {
            blob.validate().map_err(|e| bad(e.message()))?;
            let read = tuple.checkpoint.channel_versions.get(&blob.channel);
            if read != Some(&blob.version) {
                return Err(bad(&format!(
                    "the value of channel {:?} at version {:?} is not one it reads",
                    blob.channel, blob.version
                )));
            }
            if !channels.insert(blob.channel.as_str()) {
                return Err(bad(&format!(
                    "the value of channel {:?} appears twice",
                    blob.channel
                )));
            }
            let at = (
                &key.thread,
                &key.ns,
                blob.channel.as_str(),
                blob.version.as_str(),
            );
            match values.get(&at) {
                Some(other) if **other != blob.value => {
                    return Err(bad(&format!(
                        "the value of channel {:?} at version {:?} differs from the one another \
                         checkpoint of the namespace carries",
                        blob.channel, blob.version
                    )))
                }
                Some(_) => {}
                None => {
                    values.insert(at, &blob.value);
                }
            }
        }
        let mut writes = HashSet::new();
        for write in &tuple.writes {
            write.validate().map_err(|e| bad(e.message()))?;
            if !writes.insert((write.task_id.as_str(), write.idx)) {
                return Err(bad(&format!(
                    "the pending write {} of task {:?} appears twice",
                    write.idx, write.task_id
                )));
            }
        }
    }
    Ok(())
}
