//! Checkpoints to statement parameters and rows back to checkpoint tuples: the blobs and
//! pending writes as column arrays, the `jsonb` pre-filter, the threads' lock keys, and the
//! tuple rows the reading statements return (`sql/checkpoints.rs`, `tuple_rows`).

use std::collections::{BTreeMap, HashMap};

use agentmem_core::checkpoint::{merge_write, sort_writes};
use agentmem_core::{
    ChannelBlob, Checkpoint, CheckpointId, CheckpointKey, CheckpointNs, CheckpointTuple, Error,
    Metadata, PendingWrite, Result, ThreadId, ThreadInfo, TypedBytes,
};
use serde_json::Value;
use tokio_postgres::types::Json;
use tokio_postgres::Row;

use crate::codec::{count, get};

/// The key of `thread`'s advisory lock in `schema` (with `CHECKPOINT_LOCK_CLASS`): 32-bit
/// FNV-1a of the schema, a NUL (which neither holds) and the thread. Stable across builds and
/// processes, as every writer must compute the same key; two threads sharing a key only wait
/// for each other.
pub(crate) fn lock_key(schema: &str, thread: &str) -> i32 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in schema.bytes().chain([0]).chain(thread.bytes()) {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    i32::from_ne_bytes(hash.to_ne_bytes())
}

/// The lock keys of `threads`, sorted and distinct: the order every multi-thread lock takes
/// them in.
pub(crate) fn lock_keys(schema: &str, threads: &[&str]) -> Vec<i32> {
    let mut keys: Vec<i32> = threads.iter().map(|t| lock_key(schema, t)).collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// Whether `value` holds a NUL in a string or an object key: what `jsonb` cannot store.
/// (Iterative: metadata handed to the raw store may be deeper than the validate layer allows.)
fn holds_nul(value: &Value) -> bool {
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        match value {
            Value::String(s) if s.contains('\0') => return true,
            Value::Array(items) => pending.extend(items),
            Value::Object(map) => {
                if map.keys().any(|k| k.contains('\0')) {
                    return true;
                }
                pending.extend(map.values());
            }
            _ => {}
        }
    }
    false
}

/// `metadata` as the `filter` column (`jsonb`): `None` when `jsonb` cannot hold it.
pub(crate) fn filter_column(metadata: &Metadata) -> Option<Json<&Metadata>> {
    let nul = metadata
        .iter()
        .any(|(k, v)| k.contains('\0') || holds_nul(v));
    (!nul).then_some(Json(metadata))
}

/// The entries of a query's metadata filter that `jsonb` can hold, for the pre-filter; `None`
/// when there are none (no pre-filter).
pub(crate) fn prefilter(filter: &Metadata) -> Option<Metadata> {
    let safe: Metadata = filter
        .iter()
        .filter(|(k, v)| !k.contains('\0') && !holds_nul(v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    (!safe.is_empty()).then_some(safe)
}

/// The blobs of a put as column arrays: one per (channel, version), the last given winning (as
/// in a store that writes them one by one), sorted by channel and version so every put locks
/// rows in the same order.
pub(crate) struct BlobColumns<'a> {
    pub channels: Vec<&'a str>,
    pub versions: Vec<&'a str>,
    pub type_tags: Vec<Option<&'a str>>,
    pub bytes: Vec<Option<&'a [u8]>>,
}

impl<'a> BlobColumns<'a> {
    /// Lays `blobs` out.
    pub(crate) fn new(blobs: &'a [ChannelBlob]) -> Self {
        let mut last: BTreeMap<(&str, &str), &ChannelBlob> = BTreeMap::new();
        for blob in blobs {
            last.insert((&blob.channel, &blob.version), blob);
        }
        let values = || last.values().map(|blob| blob.value.as_ref());
        BlobColumns {
            channels: last.keys().map(|&(channel, _)| channel).collect(),
            versions: last.keys().map(|&(_, version)| version).collect(),
            type_tags: values().map(|v| v.map(|v| v.type_tag.as_str())).collect(),
            bytes: values().map(|v| v.map(|v| v.bytes.as_slice())).collect(),
        }
    }
}

/// The pending writes of one `put_writes` as column arrays: merged among themselves first by
/// the store's rule (`merge_write`: one per (task id, index)), sorted by task id and index so
/// every call locks rows in the same order.
pub(crate) struct WriteColumns {
    pub task_ids: Vec<String>,
    pub idxs: Vec<i64>,
    pub channels: Vec<String>,
    pub type_tags: Vec<String>,
    pub bytes: Vec<Vec<u8>>,
    pub task_paths: Vec<String>,
}

impl WriteColumns {
    /// Lays `writes` out.
    pub(crate) fn new(writes: &[PendingWrite]) -> Self {
        let mut merged = Vec::with_capacity(writes.len());
        for write in writes {
            merge_write(&mut merged, write);
        }
        merged.sort_by(|a, b| (&a.task_id, a.idx).cmp(&(&b.task_id, b.idx)));
        let n = merged.len();
        let mut c = WriteColumns {
            task_ids: Vec::with_capacity(n),
            idxs: Vec::with_capacity(n),
            channels: Vec::with_capacity(n),
            type_tags: Vec::with_capacity(n),
            bytes: Vec::with_capacity(n),
            task_paths: Vec::with_capacity(n),
        };
        for w in merged {
            c.task_ids.push(w.task_id);
            c.idxs.push(w.idx);
            c.channels.push(w.channel);
            c.type_tags.push(w.value.type_tag);
            c.bytes.push(w.value.bytes);
            c.task_paths.push(w.task_path);
        }
        c
    }
}

/// A stored name read back, refused as corrupt when it no longer validates.
fn stored<T>(what: &str, value: String, parse: fn(String) -> Result<T>) -> Result<T> {
    parse(value).map_err(|e| Error::corrupt(format!("stored {what} is invalid: {e}")))
}

/// A checkpoint's place: (thread, namespace, id).
type Place = (String, String, String);

/// What a reading statement returned (see `tuple_rows` for the layout): checkpoints, the
/// blobs they read, and their pending writes.
#[derive(Default)]
pub(crate) struct TupleRows {
    checkpoints: Vec<Checkpoint>,
    /// (thread, namespace, channel, version) → value.
    blobs: HashMap<(String, String, String, String), Option<TypedBytes>>,
    writes: HashMap<Place, Vec<PendingWrite>>,
}

impl TupleRows {
    /// Reads `rows`.
    pub(crate) fn read(rows: &[Row]) -> Result<Self> {
        let mut read = TupleRows::default();
        for row in rows {
            let part: i32 = get(row, 0)?;
            let thread: String = get(row, 1)?;
            let ns: String = get(row, 2)?;
            match part {
                0 => read.checkpoints.push(checkpoint_from(row, thread, ns)?),
                1 => {
                    let key = (thread, ns, get(row, 4)?, get(row, 5)?);
                    let value = match (get(row, 7)?, get(row, 8)?) {
                        (Some(type_tag), Some(bytes)) => Some(TypedBytes { type_tag, bytes }),
                        (None, None) => None,
                        _ => return Err(Error::corrupt("a stored blob has half a value")),
                    };
                    read.blobs.insert(key, value);
                }
                2 => {
                    let write = PendingWrite {
                        task_id: get(row, 4)?,
                        channel: get(row, 5)?,
                        task_path: get(row, 6)?,
                        value: TypedBytes {
                            type_tag: get(row, 7)?,
                            bytes: get(row, 8)?,
                        },
                        idx: get(row, 9)?,
                    };
                    let place = (thread, ns, get(row, 3)?);
                    read.writes.entry(place).or_default().push(write);
                }
                other => return Err(Error::corrupt(format!("unknown tuple row kind {other}"))),
            }
        }
        Ok(read)
    }

    /// How many checkpoints were read.
    pub(crate) fn len(&self) -> usize {
        self.checkpoints.len()
    }

    /// The tuples of the checkpoints `keep` accepts, each with the blobs of its channel
    /// versions (by channel) and its writes (sorted by `sort_writes`), in the order read.
    pub(crate) fn tuples(mut self, keep: impl Fn(&Checkpoint) -> bool) -> Vec<CheckpointTuple> {
        let checkpoints = std::mem::take(&mut self.checkpoints);
        checkpoints
            .into_iter()
            .filter(|c| keep(c))
            .map(|checkpoint| {
                let (thread, ns) = (checkpoint.key.thread.as_str(), checkpoint.key.ns.as_str());
                let blobs = checkpoint
                    .channel_versions
                    .iter()
                    .filter_map(|(channel, version)| {
                        let key = (
                            thread.to_owned(),
                            ns.to_owned(),
                            channel.clone(),
                            version.clone(),
                        );
                        let value = self.blobs.get(&key)?;
                        Some(ChannelBlob {
                            channel: channel.clone(),
                            version: version.clone(),
                            value: value.clone(),
                        })
                    })
                    .collect();
                let place = (
                    thread.to_owned(),
                    ns.to_owned(),
                    checkpoint.key.id.as_str().to_owned(),
                );
                let mut writes = self.writes.remove(&place).unwrap_or_default();
                sort_writes(&mut writes);
                CheckpointTuple {
                    checkpoint,
                    blobs,
                    writes,
                }
            })
            .collect()
    }
}

/// The checkpoint of a tuple row of kind 0, in `thread` and `ns`.
fn checkpoint_from(row: &Row, thread: String, ns: String) -> Result<Checkpoint> {
    let channels: Vec<String> = get(row, 10)?;
    let versions: Vec<String> = get(row, 11)?;
    if channels.len() != versions.len() {
        return Err(Error::corrupt(format!(
            "a stored checkpoint has {} channels and {} versions",
            channels.len(),
            versions.len()
        )));
    }
    let parent: Option<String> = get(row, 4)?;
    let Json(metadata): Json<Metadata> = get(row, 12)?;
    Ok(Checkpoint {
        key: CheckpointKey {
            thread: stored("thread id", thread, ThreadId::new)?,
            ns: stored("checkpoint namespace", ns, CheckpointNs::new)?,
            id: stored("checkpoint id", get(row, 3)?, CheckpointId::new)?,
        },
        parent: parent
            .map(|p| stored("checkpoint parent", p, CheckpointId::new))
            .transpose()?,
        body: TypedBytes {
            type_tag: get(row, 7)?,
            bytes: get(row, 8)?,
        },
        channel_versions: channels.into_iter().zip(versions).collect(),
        metadata,
        created_at: get(row, 13)?,
    })
}

/// A row of `list_threads`.
pub(crate) fn thread_info(row: &Row) -> Result<ThreadInfo> {
    Ok(ThreadInfo {
        thread: stored("thread id", get(row, 0)?, ThreadId::new)?,
        checkpoints: count(get(row, 1)?)?,
        updated_at: get(row, 2)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lock_keys_are_stable_sorted_and_distinct() {
        // The key is shared by every process writing the store: it must never change.
        assert_eq!(lock_key("agentmem", "t"), lock_key("agentmem", "t"));
        assert_ne!(lock_key("agentmem", "t"), lock_key("other", "t"));
        assert_eq!(
            lock_key("", ""),
            i32::from_ne_bytes(0x050c_5d1fu32.to_ne_bytes())
        );
        let keys = lock_keys("s", &["b", "a", "b"]);
        assert_eq!(keys.len(), 2);
        assert!(keys[0] < keys[1]);
    }

    #[test]
    fn only_what_jsonb_holds_is_pre_filtered() {
        let meta = |v: Value| match v {
            Value::Object(m) => m,
            _ => unreachable!("an object"),
        };
        let plain = meta(json!({"a": [1, {"b": "c"}]}));
        assert!(filter_column(&plain).is_some());
        let nul = meta(json!({"a": [1, {"b": "c\u{0}"}]}));
        assert!(filter_column(&nul).is_none());
        let nul_key = meta(json!({"a": {"k\u{0}": 1}}));
        assert!(filter_column(&nul_key).is_none());
        let mixed = meta(json!({"a": 1, "b": "x\u{0}"}));
        assert_eq!(prefilter(&mixed), Some(meta(json!({"a": 1}))));
        assert_eq!(prefilter(&meta(json!({"b": "x\u{0}"}))), None);
    }

    #[test]
    fn writes_are_merged_by_the_store_rule_before_they_are_sent() {
        let w = |task: &str, idx: i64, value: &str| PendingWrite {
            task_id: task.into(),
            idx,
            channel: "c".into(),
            value: TypedBytes::new("json", value.as_bytes().to_vec()),
            task_path: String::new(),
        };
        let columns = WriteColumns::new(&[
            w("b", 0, "first"),
            w("b", 0, "second"),
            w("a", -1, "old"),
            w("a", -1, "new"),
        ]);
        assert_eq!(columns.task_ids, ["a", "b"]);
        assert_eq!(columns.bytes, [b"new".to_vec(), b"first".to_vec()]);
    }
}
