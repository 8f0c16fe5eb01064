//! Checkpoints as the scripts store them and as their replies come back (the layout is in the
//! README and `lua/checkpoint.lua`): the checkpoint hash's fields, blobs and pending writes
//! packed with NUL separators (none of their text parts may hold NUL), the canonical JSON of
//! metadata values for the filter's pre-check, and the rows `row` in `checkpoint.lua` returns.

use std::collections::BTreeMap;

use crate::error::{corrupt_json, encode_json};
use agentmem_core::checkpoint::sort_writes;
use agentmem_core::support::{canonical_json, micros};
use agentmem_core::{
    ChannelBlob, Checkpoint, CheckpointId, CheckpointKey, CheckpointNs, CheckpointTuple, Error,
    Metadata, PendingWrite, Result, ThreadId, ThreadInfo, TypedBytes,
};
use chrono::{DateTime, Utc};

/// The longest canonical JSON of a top-level metadata value kept as a `m:KEY` field for the
/// list script's pre-check. Longer values are not kept there, and filters on them are checked
/// by the client only (a longer value can never equal a shorter one, so an absent field still
/// means "not equal" to a filter value within the bound).
pub(crate) const MAX_INDEXED_VALUE_BYTES: usize = 256;

/// How many index members one `cp_list.lua` call examines at most before handing control back
/// to the server (the client calls again from its cursor).
pub(crate) const LIST_BUDGET: usize = 512;

/// One checkpoint as `row` in `checkpoint.lua` returns it: thread, namespace, id, body type
/// and bytes, parent, channel versions (`cv`), metadata JSON, creation time, the values of the
/// blobs `cv` names (`None` when not stored), and the pending writes as `HGETALL` gives them.
pub(crate) type Row = (
    String,
    String,
    String,
    String,
    Vec<u8>,
    Option<String>,
    Vec<u8>,
    Vec<u8>,
    String,
    Vec<Option<Vec<u8>>>,
    Vec<Vec<u8>>,
);

/// A thread as `cp_threads.lua` returns it: its id, its checkpoint count and the creation times
/// of its newest-scored checkpoints.
pub(crate) type ThreadRow = (String, u64, Vec<String>);

/// `a NUL b NUL …`.
fn joined(parts: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(parts.iter().map(|p| p.len() + 1).sum());
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.push(0);
        }
        out.extend_from_slice(part);
    }
    out
}

/// Refuses a NUL in a text part that is stored NUL-separated (the Validate layer refuses it
/// first; this keeps the raw store from acknowledging what it could not read back).
fn no_nul(what: &str, text: &str) -> Result<()> {
    if text.contains('\0') {
        return Err(Error::invalid_input(format!(
            "{what} contains a NUL character"
        )));
    }
    Ok(())
}

/// The field of a blob in the namespace's blob hash: `channel NUL version`.
pub(crate) fn blob_field(channel: &str, version: &str) -> Result<Vec<u8>> {
    no_nul("a channel name", channel)?;
    no_nul("a channel version", version)?;
    Ok(joined(&[channel.as_bytes(), version.as_bytes()]))
}

/// The stored value of a blob: empty for an emptied channel, else `type NUL bytes` (never
/// empty).
pub(crate) fn blob_value(value: Option<&TypedBytes>) -> Result<Vec<u8>> {
    match value {
        None => Ok(Vec::new()),
        Some(v) => {
            no_nul("a type tag", &v.type_tag)?;
            Ok(joined(&[v.type_tag.as_bytes(), &v.bytes]))
        }
    }
}

/// The field of a pending write in its checkpoint's write hash: `task NUL idx`.
pub(crate) fn write_field(write: &PendingWrite) -> Result<Vec<u8>> {
    no_nul("a task id", &write.task_id)?;
    Ok(joined(&[
        write.task_id.as_bytes(),
        write.idx.to_string().as_bytes(),
    ]))
}

/// The stored value of a pending write: `task_path NUL channel NUL type NUL bytes`.
pub(crate) fn write_value(write: &PendingWrite) -> Result<Vec<u8>> {
    no_nul("a task path", &write.task_path)?;
    no_nul("a channel name", &write.channel)?;
    no_nul("a type tag", &write.value.type_tag)?;
    Ok(joined(&[
        write.task_path.as_bytes(),
        write.channel.as_bytes(),
        write.value.type_tag.as_bytes(),
        &write.value.bytes,
    ]))
}

/// A creation time as stored, exact to the nanosecond: `seconds:nanoseconds`.
fn created_text(at: DateTime<Utc>) -> String {
    format!("{}:{}", at.timestamp(), at.timestamp_subsec_nanos())
}

/// A creation time as [`created_text`] wrote it.
fn parse_created(text: &str) -> Result<DateTime<Utc>> {
    let bad = || Error::corrupt(format!("unreadable checkpoint creation time {text:?}"));
    let (secs, nanos) = text.split_once(':').ok_or_else(bad)?;
    let secs: i64 = secs.parse().map_err(|_| bad())?;
    let nanos: u32 = nanos.parse().map_err(|_| bad())?;
    DateTime::from_timestamp(secs, nanos).ok_or_else(bad)
}

/// The creation time's score in the thread's `times` set (microseconds; a double in Redis,
/// rounded monotonically, so the newest checkpoint has the greatest score).
pub(crate) fn created_score(at: DateTime<Utc>) -> i64 {
    micros(at)
}

/// The hash field holding the canonical JSON of metadata key `key`.
pub(crate) fn metadata_field(key: &str) -> Vec<u8> {
    let mut field = b"m:".to_vec();
    field.extend_from_slice(key.as_bytes());
    field
}

/// The checkpoint's channel versions as stored (`channel NUL version NUL …`, in the map's
/// order, which is the order the blobs come back in).
fn versions_text(versions: &BTreeMap<String, String>) -> Result<Vec<u8>> {
    let mut parts: Vec<&[u8]> = Vec::with_capacity(versions.len() * 2);
    for (channel, version) in versions {
        no_nul("a channel name", channel)?;
        no_nul("a channel version", version)?;
        parts.push(channel.as_bytes());
        parts.push(version.as_bytes());
    }
    Ok(joined(&parts))
}

/// The checkpoint's hash as field/value pairs: `type`, `body`, `parent` (when it has one),
/// `cv`, `meta`, `created`, `run` (when its metadata's `run_id` is a string) and `m:KEY` for
/// each top-level metadata value whose canonical JSON is short enough.
pub(crate) fn checkpoint_fields(checkpoint: &Checkpoint) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    no_nul("a type tag", &checkpoint.body.type_tag)?;
    let meta = serde_json::to_vec(&checkpoint.metadata)
        .map_err(|e| encode_json("checkpoint metadata", e))?;
    let mut fields: Vec<(Vec<u8>, Vec<u8>)> = vec![
        (
            b"type".to_vec(),
            checkpoint.body.type_tag.clone().into_bytes(),
        ),
        (b"body".to_vec(), checkpoint.body.bytes.clone()),
        (b"cv".to_vec(), versions_text(&checkpoint.channel_versions)?),
        (b"meta".to_vec(), meta),
        (
            b"created".to_vec(),
            created_text(checkpoint.created_at).into_bytes(),
        ),
    ];
    if let Some(parent) = &checkpoint.parent {
        fields.push((b"parent".to_vec(), parent.as_str().as_bytes().to_vec()));
    }
    if let Some(run) = checkpoint.run_id() {
        fields.push((b"run".to_vec(), run.as_bytes().to_vec()));
    }
    for (key, value) in &checkpoint.metadata {
        let canonical = canonical_json(value);
        if canonical.len() <= MAX_INDEXED_VALUE_BYTES {
            fields.push((metadata_field(key), canonical.into_bytes()));
        }
    }
    Ok(fields)
}

/// The metadata filter's pairs the list script can pre-check: `m:KEY` and the canonical JSON
/// of the value, for the values within [`MAX_INDEXED_VALUE_BYTES`].
pub(crate) fn filter_fields(filter: &Metadata) -> Vec<(Vec<u8>, String)> {
    filter
        .iter()
        .map(|(key, value)| (metadata_field(key), canonical_json(value)))
        .filter(|(_, canonical)| canonical.len() <= MAX_INDEXED_VALUE_BYTES)
        .collect()
}

/// Splits at the first `n` NULs: `n + 1` parts, or `None` when there are fewer NULs.
fn split_nul(bytes: &[u8], n: usize) -> Option<Vec<&[u8]>> {
    let mut parts = bytes.splitn(n + 1, |b| *b == 0);
    let out: Vec<&[u8]> = parts.by_ref().collect();
    (out.len() == n + 1).then_some(out)
}

fn text(bytes: &[u8], what: &str) -> Result<String> {
    String::from_utf8(bytes.to_vec())
        .map_err(|_| Error::corrupt(format!("stored {what} is not UTF-8")))
}

/// The channel versions [`versions_text`] wrote.
fn parse_versions(raw: &[u8]) -> Result<Vec<(String, String)>> {
    if raw.is_empty() {
        return Ok(Vec::new());
    }
    let parts: Vec<&[u8]> = raw.split(|b| *b == 0).collect();
    if !parts.len().is_multiple_of(2) {
        return Err(Error::corrupt("stored channel versions are malformed"));
    }
    parts
        .chunks(2)
        .map(|pair| {
            Ok((
                text(pair[0], "channel name")?,
                text(pair[1], "channel version")?,
            ))
        })
        .collect()
}

/// A blob value [`blob_value`] wrote.
fn parse_blob_value(raw: &[u8]) -> Result<Option<TypedBytes>> {
    if raw.is_empty() {
        return Ok(None);
    }
    let parts = split_nul(raw, 1).ok_or_else(|| Error::corrupt("a stored blob is malformed"))?;
    Ok(Some(TypedBytes::new(
        text(parts[0], "type tag")?,
        parts[1].to_vec(),
    )))
}

/// A pending write from its field and value ([`write_field`], [`write_value`]).
fn parse_write(field: &[u8], value: &[u8]) -> Result<PendingWrite> {
    let bad = || Error::corrupt("a stored pending write is malformed");
    let key = split_nul(field, 1).ok_or_else(bad)?;
    let idx: i64 = text(key[1], "write index")?.parse().map_err(|_| bad())?;
    let parts = split_nul(value, 3).ok_or_else(bad)?;
    Ok(PendingWrite {
        task_id: text(key[0], "task id")?,
        idx,
        task_path: text(parts[0], "task path")?,
        channel: text(parts[1], "channel name")?,
        value: TypedBytes::new(text(parts[2], "type tag")?, parts[3].to_vec()),
    })
}

/// A checkpoint with its blobs and writes from a script's row (see [`Row`]).
pub(crate) fn tuple_from(row: Row) -> Result<CheckpointTuple> {
    let (thread, ns, id, type_tag, body, parent, cv, meta, created, blob_values, raw_writes) = row;
    let corrupt = |e: Error| Error::corrupt(format!("a stored checkpoint key is invalid: {e}"));
    let key = CheckpointKey {
        thread: ThreadId::new(thread).map_err(corrupt)?,
        ns: CheckpointNs::new(ns).map_err(corrupt)?,
        id: CheckpointId::new(id).map_err(corrupt)?,
    };
    let versions = parse_versions(&cv)?;
    if blob_values.len() != versions.len() {
        return Err(Error::corrupt(
            "a checkpoint script's reply lacks blob values",
        ));
    }
    let mut blobs = Vec::new();
    for ((channel, version), raw) in versions.iter().zip(blob_values) {
        if let Some(raw) = raw {
            blobs.push(ChannelBlob {
                channel: channel.clone(),
                version: version.clone(),
                value: parse_blob_value(&raw)?,
            });
        }
    }
    if !raw_writes.len().is_multiple_of(2) {
        return Err(Error::corrupt("a checkpoint script's reply splits a write"));
    }
    let mut writes = raw_writes
        .chunks(2)
        .map(|pair| parse_write(&pair[0], &pair[1]))
        .collect::<Result<Vec<_>>>()?;
    sort_writes(&mut writes);
    let metadata: Metadata =
        serde_json::from_slice(&meta).map_err(|e| corrupt_json("checkpoint metadata", e))?;
    let checkpoint = Checkpoint {
        key,
        parent: parent.map(CheckpointId::new).transpose().map_err(corrupt)?,
        body: TypedBytes::new(type_tag, body),
        channel_versions: versions.into_iter().collect(),
        metadata,
        created_at: parse_created(&created)?,
    };
    Ok(CheckpointTuple {
        checkpoint,
        blobs,
        writes,
    })
}

/// A thread's summary from `cp_threads.lua`'s row: the newest of the candidate times.
pub(crate) fn thread_info(row: ThreadRow) -> Result<ThreadInfo> {
    let (thread, count, created) = row;
    let updated_at = created
        .iter()
        .map(|t| parse_created(t))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .max()
        .ok_or_else(|| Error::corrupt(format!("thread {thread:?} has no newest checkpoint")))?;
    Ok(ThreadInfo {
        thread: ThreadId::new(thread)
            .map_err(|e| Error::corrupt(format!("a stored thread id is invalid: {e}")))?,
        checkpoints: count,
        updated_at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_parts_read_back() {
        let write = PendingWrite {
            task_id: "task:1 *".into(),
            idx: -3,
            channel: "".into(),
            value: TypedBytes::new("msgpack", vec![0, 1, 0, 255]),
            task_path: "~0|a".into(),
        };
        let back = parse_write(&write_field(&write).unwrap(), &write_value(&write).unwrap());
        assert_eq!(back.unwrap(), write);
        for value in [None, Some(TypedBytes::new("", Vec::new()))] {
            let raw = blob_value(value.as_ref()).unwrap();
            assert_eq!(parse_blob_value(&raw).unwrap(), value);
        }
        let versions = BTreeMap::from([("".to_string(), "".to_string()), ("a".into(), "1".into())]);
        let parsed = parse_versions(&versions_text(&versions).unwrap()).unwrap();
        assert_eq!(parsed.into_iter().collect::<BTreeMap<_, _>>(), versions);
        assert!(parse_versions(b"").unwrap().is_empty());
        assert!(blob_field("a\0", "1").is_err());
    }

    #[test]
    fn creation_times_keep_their_nanoseconds() {
        for at in [
            DateTime::from_timestamp(1_700_000_000, 123_456_789).unwrap(),
            DateTime::from_timestamp(-2, 999_999_999).unwrap(),
        ] {
            assert_eq!(parse_created(&created_text(at)).unwrap(), at);
        }
        assert!(parse_created("x").is_err());
    }
}
