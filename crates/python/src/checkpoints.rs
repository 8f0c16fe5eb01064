//! `NativeCheckpoints`: a store's checkpoints (LangGraph's checkpointer model) for the
//! package's `agentmem.langgraph` saver. Opaque values cross as `(type, bytes)` pairs and
//! stay `bytes` on both sides (no base64, no copy through serde); metadata crosses as a dict.

use std::collections::BTreeMap;
use std::sync::Arc;

use agentmem::{
    AgentMemory, ChannelBlob, Checkpoint, CheckpointId, CheckpointKey, CheckpointNs,
    CheckpointPrune, CheckpointQuery, CheckpointTuple, Metadata, PendingWrite, ThreadId,
    TypedBytes,
};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};

use crate::error::{invalid, to_py};
use crate::input::{to_python, value};
use crate::runtime::block_on;

/// A blob as Python hands it over: `(channel, version, type, bytes)`, type and bytes `None`
/// for a channel emptied at that version.
type BlobIn<'py> = (String, String, Option<String>, Option<Bound<'py, PyBytes>>);

/// A pending write as Python hands it over: `(task_id, idx, channel, type, bytes, task_path)`.
type WriteIn<'py> = (String, i64, String, String, Bound<'py, PyBytes>, String);

fn thread_id(id: &str) -> PyResult<ThreadId> {
    ThreadId::new(id).map_err(to_py)
}

fn namespace(ns: &str) -> PyResult<CheckpointNs> {
    CheckpointNs::new(ns).map_err(to_py)
}

fn checkpoint_id(id: &str) -> PyResult<CheckpointId> {
    CheckpointId::new(id).map_err(to_py)
}

fn key(thread: &str, ns: &str, id: &str) -> PyResult<CheckpointKey> {
    Ok(CheckpointKey {
        thread: thread_id(thread)?,
        ns: namespace(ns)?,
        id: checkpoint_id(id)?,
    })
}

fn typed(tag: String, bytes: &Bound<'_, PyBytes>) -> TypedBytes {
    TypedBytes::new(tag, bytes.as_bytes().to_vec())
}

fn metadata(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Metadata> {
    match obj.filter(|o| !o.is_none()) {
        Some(o) => value("checkpoint metadata", o),
        None => Ok(Metadata::new()),
    }
}

/// A tuple to Python: `(thread, ns, id, parent, (type, bytes), channel_versions, metadata,
/// created_at, blobs, writes)`, blobs as `(channel, version, type, bytes)` (type and bytes
/// `None` when emptied), writes as `(task_id, idx, channel, type, bytes, task_path)` in order.
fn tuple_to_python<'py>(py: Python<'py>, t: &CheckpointTuple) -> PyResult<Bound<'py, PyTuple>> {
    let c = &t.checkpoint;
    let body = (c.body.type_tag.as_str(), PyBytes::new(py, &c.body.bytes));
    let blobs = PyList::empty(py);
    for b in &t.blobs {
        let (tag, bytes) = match &b.value {
            Some(v) => (Some(v.type_tag.as_str()), Some(PyBytes::new(py, &v.bytes))),
            None => (None, None),
        };
        blobs.append((b.channel.as_str(), b.version.as_str(), tag, bytes))?;
    }
    let writes = PyList::empty(py);
    for w in &t.writes {
        writes.append((
            w.task_id.as_str(),
            w.idx,
            w.channel.as_str(),
            w.value.type_tag.as_str(),
            PyBytes::new(py, &w.value.bytes),
            w.task_path.as_str(),
        ))?;
    }
    (
        c.key.thread.as_str(),
        c.key.ns.as_str(),
        c.key.id.as_str(),
        c.parent.as_ref().map(CheckpointId::as_str),
        body,
        to_python(py, &c.channel_versions)?,
        to_python(py, &c.metadata)?,
        c.created_at.to_rfc3339(),
        blobs,
        writes,
    )
        .into_pyobject(py)
}

/// A store's checkpoints. Safe to share between threads: every call releases the GIL.
#[pyclass(frozen, module = "agentmem._agentmem")]
pub struct NativeCheckpoints {
    inner: Arc<dyn AgentMemory>,
}

impl NativeCheckpoints {
    /// The checkpoints of `store`.
    pub fn of(store: Arc<dyn AgentMemory>) -> Self {
        NativeCheckpoints { inner: store }
    }
}

#[pymethods]
#[allow(
    clippy::too_many_arguments,
    reason = "one Python argument per field of a checkpoint or filter of a query, as the saver has them"
)]
impl NativeCheckpoints {
    /// Stores a checkpoint and the values of the channels whose version changed, atomically.
    #[pyo3(signature = (thread, ns, id, parent, body_type, body, channel_versions, metadata, blobs))]
    fn put(
        &self, py: Python<'_>, thread: &str, ns: &str, id: &str, parent: Option<&str>,
        body_type: String, body: Bound<'_, PyBytes>, channel_versions: BTreeMap<String, String>,
        metadata: Option<Bound<'_, PyAny>>, blobs: Vec<BlobIn<'_>>,
    ) -> PyResult<()> {
        let mut checkpoint = Checkpoint::new(key(thread, ns, id)?, typed(body_type, &body));
        checkpoint.parent = parent.map(checkpoint_id).transpose()?;
        checkpoint.channel_versions = channel_versions;
        checkpoint.metadata = self::metadata(metadata.as_ref())?;
        let blobs = blobs
            .into_iter()
            .map(|(channel, version, tag, bytes)| {
                let value = match (tag, bytes) {
                    (Some(tag), Some(bytes)) => Some(typed(tag, &bytes)),
                    (None, None) => None,
                    _ => return Err(invalid("blob", "a type needs bytes, and bytes a type")),
                };
                Ok(ChannelBlob {
                    channel,
                    version,
                    value,
                })
            })
            .collect::<PyResult<Vec<_>>>()?;
        block_on(py, self.inner.put_checkpoint(&checkpoint, &blobs))
    }

    /// Stores the pending writes of one task after checkpoint (thread, ns, id), all or none.
    fn put_writes(
        &self, py: Python<'_>, thread: &str, ns: &str, id: &str, writes: Vec<WriteIn<'_>>,
    ) -> PyResult<()> {
        let at = key(thread, ns, id)?;
        let writes: Vec<PendingWrite> = writes
            .into_iter()
            .map(
                |(task_id, idx, channel, tag, bytes, task_path)| PendingWrite {
                    task_id,
                    idx,
                    channel,
                    value: typed(tag, &bytes),
                    task_path,
                },
            )
            .collect();
        block_on(py, self.inner.put_writes(&at, &writes))
    }

    /// The checkpoint `id` of (thread, ns), or the newest there; `None` when there is none.
    #[pyo3(signature = (thread, ns, id=None))]
    fn get<'py>(
        &self, py: Python<'py>, thread: &str, ns: &str, id: Option<&str>,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let (thread, ns) = (thread_id(thread)?, namespace(ns)?);
        let id = id.map(checkpoint_id).transpose()?;
        let found = block_on(py, self.inner.get_checkpoint(&thread, &ns, id.as_ref()))?;
        found.map(|t| tuple_to_python(py, &t)).transpose()
    }

    /// The checkpoints selected, newest first, filters applied before `limit`.
    #[pyo3(signature = (thread=None, ns=None, id=None, before=None, metadata=None, limit=None))]
    fn list<'py>(
        &self, py: Python<'py>, thread: Option<&str>, ns: Option<&str>, id: Option<&str>,
        before: Option<&str>, metadata: Option<Bound<'_, PyAny>>, limit: Option<usize>,
    ) -> PyResult<Bound<'py, PyList>> {
        let query = CheckpointQuery {
            thread: thread.map(thread_id).transpose()?,
            ns: ns.map(namespace).transpose()?,
            id: id.map(checkpoint_id).transpose()?,
            before: before.map(checkpoint_id).transpose()?,
            metadata: self::metadata(metadata.as_ref())?,
            limit,
        };
        let found = block_on(py, self.inner.list_checkpoints(&query))?;
        let list = PyList::empty(py);
        for t in &found {
            list.append(tuple_to_python(py, t)?)?;
        }
        Ok(list)
    }

    /// Every thread holding a checkpoint: `{thread, checkpoints, updated_at}` by id.
    fn threads<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let threads = block_on(py, self.inner.list_threads())?;
        to_python(py, &threads)
    }

    /// Deletes a thread; whether it held a checkpoint.
    fn delete_thread(&self, py: Python<'_>, thread: &str) -> PyResult<bool> {
        let thread = thread_id(thread)?;
        block_on(py, self.inner.delete_thread(&thread))
    }

    /// Deletes the checkpoints of these runs (metadata `run_id`), with their writes.
    fn delete_runs(&self, py: Python<'_>, run_ids: Vec<String>) -> PyResult<u64> {
        block_on(py, self.inner.delete_run_checkpoints(&run_ids))
    }

    /// Copies a thread into a new one; how many checkpoints.
    fn copy_thread(&self, py: Python<'_>, source: &str, target: &str) -> PyResult<u64> {
        let (source, target) = (thread_id(source)?, thread_id(target)?);
        block_on(py, self.inner.copy_thread(&source, &target))
    }

    /// Prunes threads: `keep_latest` or `delete`; how many checkpoints went.
    fn prune(&self, py: Python<'_>, threads: Vec<String>, strategy: &str) -> PyResult<u64> {
        let keep = match strategy {
            "keep_latest" => CheckpointPrune::KeepLatest,
            "delete" => CheckpointPrune::DeleteAll,
            other => {
                return Err(invalid(
                    "strategy",
                    format!("{other:?}: expected \"keep_latest\" or \"delete\""),
                ))
            }
        };
        let threads = threads
            .iter()
            .map(|t| thread_id(t))
            .collect::<PyResult<Vec<_>>>()?;
        block_on(py, self.inner.prune_checkpoints(&threads, keep))
    }
}
