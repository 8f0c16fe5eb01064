//! How checkpoints, channel values and pending writes are stored in BSON documents, and read
//! back (the collections and the protocols that write them are in `checkpoints.rs` and
//! `checkpoint_blobs.rs`).
//!
//! - Thread ids, namespaces, checkpoint ids, channel names, versions and task ids are only
//!   ever string *values* (never field names), so `$`, `.` and any other character in them
//!   mean nothing to the server.
//! - Opaque bytes are BSON binaries (generic subtype), their type tags strings beside them.
//! - Metadata is one JSON string, as for messages (see `codec.rs`), so it round-trips exactly;
//!   `mkv` holds a hash of each top-level (key, value) pair in a canonical form, which the
//!   metadata filter pre-selects on (see [`metadata_hashes`]), and `run_id` the metadata's
//!   `run_id` when it is a JSON string, for deleting by run.

use std::collections::BTreeMap;

use agentmem_core::support::{canonical_json, micros};
use agentmem_core::{
    ChannelBlob, Checkpoint, CheckpointId, CheckpointKey, CheckpointNs, Error, Metadata,
    PendingWrite, Result, ThreadId, TypedBytes,
};
use mongodb::bson::oid::ObjectId;
use mongodb::bson::{doc, Bson, Document};
use serde_json::Value;

use crate::codec::{
    binary, binary_field, check_size, int_field, metadata_field, metadata_to_bson, str_field,
    time_field,
};

/// Reads a [`TypedBytes`] stored as a type tag in `type_field` and bytes in `field`.
fn typed_field(d: &Document, type_field: &str, field: &str) -> Result<TypedBytes> {
    Ok(TypedBytes::new(
        str_field(d, type_field)?,
        binary_field(d, field)?,
    ))
}

/// Reads the array field `field` (absent is empty).
fn array_field<'d>(d: &'d Document, field: &str) -> Result<&'d [Bson]> {
    match d.get(field) {
        None => Ok(&[]),
        Some(Bson::Array(a)) => Ok(a),
        Some(other) => Err(Error::corrupt(format!(
            "field `{field}` is {:?}, expected an array",
            other.element_type()
        ))),
    }
}

/// The documents of the array field `field`.
fn documents_in<'d>(d: &'d Document, field: &str) -> Result<Vec<&'d Document>> {
    array_field(d, field)?
        .iter()
        .map(|item| match item {
            Bson::Document(inner) => Ok(inner),
            other => Err(Error::corrupt(format!(
                "an element of `{field}` is {:?}, expected a document",
                other.element_type()
            ))),
        })
        .collect()
}

/// The filter selecting the document at `key` (its unique index): a stored checkpoint, or
/// only the pending writes made ahead of it (see [`STORED`]).
pub(crate) fn key_filter(key: &CheckpointKey) -> Document {
    doc! {"thread": key.thread.as_str(), "ns": key.ns.as_str(), "cid": key.id.as_str()}
}

/// The field `true` on the document of a stored checkpoint. A document without it holds only
/// pending writes made ahead of their checkpoint (LangGraph may write them first), which a
/// put of the checkpoint then completes; every reader of checkpoints selects `stored: true`.
pub(crate) const STORED: &str = "stored";

/// [`key_filter`] for a stored checkpoint only.
pub(crate) fn stored_key_filter(key: &CheckpointKey) -> Document {
    let mut filter = key_filter(key);
    filter.insert(STORED, true);
    filter
}

/// Whether a checkpoint document holds a stored checkpoint (see [`STORED`]).
pub(crate) fn is_stored(d: &Document) -> bool {
    d.get_bool(STORED).unwrap_or(false)
}

/// The fields a put of `c` sets on its document (all but the key, which the filter holds, and
/// the pending writes, which the put keeps): checked to fit in one document. `stamp` is new on
/// every put ([`new_stamp`]), so a reader can tell that the checkpoint it read was replaced.
pub(crate) fn checkpoint_fields(c: &Checkpoint) -> Result<Document> {
    let versions: Vec<Document> = c
        .channel_versions
        .iter()
        .map(|(channel, version)| doc! {"c": channel, "v": version})
        .collect();
    let d = doc! {
        STORED: true,
        "parent": c.parent.as_ref().map(|p| p.as_str()),
        "type": &c.body.type_tag,
        "body": binary(&c.body.bytes),
        "versions": versions,
        "metadata": metadata_to_bson(&c.metadata)?,
        "mkv": metadata_hashes(&c.metadata),
        "run_id": c.run_id(),
        "created": micros(c.created_at),
        "stamp": new_stamp(),
    };
    check_size("the checkpoint", &d)?;
    Ok(d)
}

/// A fresh `stamp`: an ObjectId's hex, as a string (nx-27017 refuses a `$set` holding both
/// binary data and an ObjectId).
pub(crate) fn new_stamp() -> String {
    ObjectId::new().to_hex()
}

/// The (channel, version) pairs a stored checkpoint reads.
pub(crate) fn versions_from(d: &Document) -> Result<BTreeMap<String, String>> {
    documents_in(d, "versions")?
        .into_iter()
        .map(|v| Ok((str_field(v, "c")?.to_owned(), str_field(v, "v")?.to_owned())))
        .collect()
}

/// Reads a checkpoint document's thread, namespace and id.
pub(crate) fn key_from(d: &Document) -> Result<CheckpointKey> {
    let thread = str_field(d, "thread")?;
    let ns = str_field(d, "ns")?;
    let id = str_field(d, "cid")?;
    Ok(CheckpointKey {
        thread: ThreadId::new(thread)
            .map_err(|e| Error::corrupt(format!("stored thread id: {}", e.message())))?,
        ns: CheckpointNs::new(ns)
            .map_err(|e| Error::corrupt(format!("stored namespace: {}", e.message())))?,
        id: checkpoint_id(id)?,
    })
}

fn checkpoint_id(id: &str) -> Result<CheckpointId> {
    CheckpointId::new(id)
        .map_err(|e| Error::corrupt(format!("stored checkpoint id: {}", e.message())))
}

/// Reads a checkpoint stored with [`checkpoint_fields`] under its key.
pub(crate) fn checkpoint_from(d: &Document) -> Result<Checkpoint> {
    let parent = match d.get("parent") {
        None | Some(Bson::Null) => None,
        Some(_) => Some(checkpoint_id(str_field(d, "parent")?)?),
    };
    Ok(Checkpoint {
        key: key_from(d)?,
        parent,
        body: typed_field(d, "type", "body")?,
        channel_versions: versions_from(d)?,
        metadata: metadata_field(d, "metadata")?,
        created_at: time_field(d, "created")?,
    })
}

/// A pending write as stored in its checkpoint's `writes` array.
pub(crate) fn write_doc(w: &PendingWrite) -> Document {
    doc! {
        "task": &w.task_id,
        "idx": w.idx,
        "channel": &w.channel,
        "type": &w.value.type_tag,
        "value": binary(&w.value.bytes),
        "path": &w.task_path,
    }
}

/// The pending writes stored in a checkpoint document, as stored (unsorted).
pub(crate) fn writes_from(d: &Document) -> Result<Vec<PendingWrite>> {
    documents_in(d, "writes")?
        .into_iter()
        .map(|w| {
            Ok(PendingWrite {
                task_id: str_field(w, "task")?.to_owned(),
                idx: int_field(w, "idx")?,
                channel: str_field(w, "channel")?.to_owned(),
                value: typed_field(w, "type", "value")?,
                task_path: str_field(w, "path")?.to_owned(),
            })
        })
        .collect()
}

/// The fields a put of `blob` sets on its document (the key is in the filter): checked to fit
/// in one document. An emptied channel (`None`) has `type` and `value` null.
pub(crate) fn blob_fields(blob: &ChannelBlob) -> Result<Document> {
    let d = match &blob.value {
        Some(v) => doc! {"type": &v.type_tag, "value": binary(&v.bytes)},
        None => doc! {"type": Bson::Null, "value": Bson::Null},
    };
    check_size("a channel value", &d)?;
    Ok(d)
}

/// Reads the value of a blob document (`None`: the channel was emptied).
pub(crate) fn blob_value(d: &Document) -> Result<Option<TypedBytes>> {
    match d.get("value") {
        None | Some(Bson::Null) => Ok(None),
        Some(_) => typed_field(d, "type", "value").map(Some),
    }
}

/// The hashes of each top-level (key, value) pair of `metadata` in [`canonical_json`] form: what
/// the metadata filter pre-selects on (`mkv: {$all: …}`). A hash only narrows the candidates;
/// [`CheckpointQuery::matches`](agentmem_core::CheckpointQuery::matches) decides.
pub(crate) fn metadata_hashes(metadata: &Metadata) -> Vec<String> {
    metadata.iter().map(|(k, v)| pair_hash(k, v)).collect()
}

/// The hashes a metadata filter requires of a matching checkpoint: one per filter key whose
/// value holds no float. Values holding a float are left to the final decision: hashes stored
/// by earlier versions wrote `-0.0` apart from the `0.0` it equals, so the pre-selection never
/// drops a checkpoint that matches.
pub(crate) fn filter_hashes(filter: &Metadata) -> Vec<String> {
    filter
        .iter()
        .filter(|(_, v)| !has_float(v))
        .map(|(k, v)| pair_hash(k, v))
        .collect()
}

fn has_float(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.is_f64(),
        Value::Array(items) => items.iter().any(has_float),
        Value::Object(map) => map.values().any(has_float),
        _ => false,
    }
}

/// The hash of `[key, value]` in canonical form, as 16 hex digits.
fn pair_hash(key: &str, value: &Value) -> String {
    let mut text = String::from("[");
    text.push_str(&Value::String(key.to_owned()).to_string());
    text.push(',');
    text.push_str(&canonical_json(value));
    text.push(']');
    format!("{:016x}", fnv1a64(text.as_bytes()))
}

/// FNV-1a, 64 bits: stable across builds and platforms (unlike std's hasher), which stored
/// hashes need. Collisions only add candidates that the final decision drops.
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentmem_core::CheckpointQuery;
    use serde_json::json;

    fn meta(v: Value) -> Metadata {
        match v {
            Value::Object(m) => m,
            _ => unreachable!("an object"),
        }
    }

    #[test]
    fn checkpoints_round_trip_with_hostile_keys() {
        let key = CheckpointKey {
            thread: ThreadId::new("$where.a b").unwrap(),
            ns: CheckpointNs::new("node:1|$x.y").unwrap(),
            id: CheckpointId::new("1ef.$").unwrap(),
        };
        let mut c = Checkpoint::new(key.clone(), TypedBytes::new("msgpack", vec![0, 255, 1]));
        c.parent = Some(CheckpointId::new("1ee").unwrap());
        c.channel_versions = [("$set".to_owned(), "1.0".to_owned())]
            .into_iter()
            .collect();
        c.metadata = meta(json!({"z": 1, "a": {"$gt": "\u{0}"}, "run_id": "r"}));
        let mut d = key_filter(&key);
        d.extend(checkpoint_fields(&c).unwrap());
        // Only the crate's own field names reach the server.
        assert!(d.keys().all(|k| !k.starts_with('$') && !k.contains('.')));
        assert_eq!(d.get_str("run_id").unwrap(), "r");
        assert_eq!(checkpoint_from(&d).unwrap(), c);
    }

    #[test]
    fn writes_and_blobs_round_trip() {
        let w = PendingWrite {
            task_id: "t.$".into(),
            idx: -3,
            channel: "$ch".into(),
            value: TypedBytes::new("json", b"1".to_vec()),
            task_path: "~0".into(),
        };
        let d = doc! {"writes": [write_doc(&w)]};
        assert_eq!(writes_from(&d).unwrap(), vec![w]);
        let emptied = ChannelBlob {
            channel: "c".into(),
            version: "1".into(),
            value: None,
        };
        assert_eq!(blob_value(&blob_fields(&emptied).unwrap()).unwrap(), None);
        let full = ChannelBlob {
            value: Some(TypedBytes::new("bytes", vec![0, 0])),
            ..emptied
        };
        assert_eq!(
            blob_value(&blob_fields(&full).unwrap()).unwrap(),
            full.value
        );
    }

    #[test]
    fn equal_json_values_hash_alike_whatever_the_key_order() {
        let stored = meta(json!({"o": {"b": [1, {"y": 2, "x": null}], "a": "s"}, "n": 42}));
        let filter = meta(json!({"o": {"a": "s", "b": [1, {"x": null, "y": 2}]}}));
        let hashes = metadata_hashes(&stored);
        assert!(filter_hashes(&filter).iter().all(|h| hashes.contains(h)));
        for other in [json!({"n": "42"}), json!({"n": 43}), json!({"o": {}})] {
            let other = meta(other);
            assert!(!filter_hashes(&other).iter().all(|h| hashes.contains(h)));
        }
    }

    #[test]
    fn floats_are_left_to_the_final_decision() {
        let filter = meta(json!({"f": 0.0, "n": 1}));
        assert_eq!(
            filter_hashes(&filter).len(),
            1,
            "only the key without a float"
        );
        let mut c = Checkpoint::new(
            CheckpointKey {
                thread: ThreadId::new("t").unwrap(),
                ns: CheckpointNs::root(),
                id: CheckpointId::new("c").unwrap(),
            },
            TypedBytes::new("json", Vec::new()),
        );
        c.metadata = meta(json!({"f": -0.0, "n": 1}));
        let q = CheckpointQuery {
            metadata: filter,
            ..CheckpointQuery::default()
        };
        assert!(
            q.matches(&c),
            "-0.0 equals 0.0, so no pre-selection may drop it"
        );
    }

    #[test]
    fn malformed_documents_are_corrupt_data() {
        let d = doc! {"thread": "t", "ns": "", "cid": "c", "type": "x", "body": "not bytes",
        "created": 0_i64};
        let err = checkpoint_from(&d).unwrap_err();
        assert_eq!(err.kind(), agentmem_core::ErrorKind::CorruptData);
        assert!(err.to_string().contains("`body`"), "{err}");
        let d = doc! {"writes": [1]};
        assert_eq!(
            writes_from(&d).unwrap_err().kind(),
            agentmem_core::ErrorKind::CorruptData
        );
    }
}
