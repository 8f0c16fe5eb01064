//! `NativeStore`: one opened store, each operation a method taking and returning plain data.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agentmem::conversation::templates::summary_text;
use agentmem::conversation::{ExtractiveSummarizer, SummaryRequest};
use agentmem::transfer::{MigrateOptions, ProgressEvent};
use agentmem::{
    AgentMemory, AgentMemoryExt, ContextStore, Error, MemoryId, MemoryItem, MemoryScope,
    MemoryStore, Message, MessageQuery, Metadata, RetentionPolicy, Rewind, SessionPatch,
    SessionQuery, SessionStore,
};
use chrono::{DateTime, Utc};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde::Serialize;

use crate::checkpoints::NativeCheckpoints;
use crate::error::{invalid, to_py};
use crate::input::{self, message_id, session_id, to_python, Tags};
use crate::recall::{self, Recalling, Searched};
use crate::runtime::block_on;

/// The summary length `compact` asks the extractive summarizer for, in tokens (as the CLI's
/// `compact --auto`).
const AUTO_SUMMARY_TOKENS: usize = 512;

/// Opens the store `url` names as the CLI does (see `agentmem::open_with_key_file`): with
/// the URL's own key (`key_file=`, `key=env`), else `key_file`'s, else
/// `AGENTMEM_ENCRYPTION_KEY`'s, else refusing an encrypted store.
async fn open_store(
    url: String, key_file: Option<PathBuf>,
) -> agentmem::Result<Arc<dyn AgentMemory>> {
    agentmem::open_with_key_file(&url, key_file.as_deref())
        .await
        .map_err(|e| {
            Error::new(
                e.kind(),
                format!("store {}", agentmem_core::redact_url(&url)),
            )
            .with_source(e)
        })
}

/// `open(url, key_file=None)`: the store `url` names (see the package's `agentmem.open`).
#[pyfunction]
#[pyo3(signature = (url, key_file=None))]
pub fn open(py: Python<'_>, url: String, key_file: Option<PathBuf>) -> PyResult<NativeStore> {
    let redacted = agentmem_core::redact_url(&url);
    let inner = block_on(py, open_store(url.clone(), key_file))?;
    let recall = Recalling::new(inner.clone(), &url, redacted.clone())?;
    Ok(NativeStore {
        inner,
        redacted,
        recall,
    })
}

/// An opened store. Safe to share between threads: every call releases the GIL.
#[pyclass(frozen, module = "agentmem._agentmem")]
pub struct NativeStore {
    inner: Arc<dyn AgentMemory>,
    redacted: String,
    /// Search by meaning with the embedder the URL names.
    recall: Recalling,
}

impl NativeStore {
    /// Runs `op` on the store with the GIL released and hands its result to Python as plain
    /// data: every operation's one path across the boundary.
    fn call<'py, T, Fut>(
        &self, py: Python<'py>, op: impl FnOnce(Arc<dyn AgentMemory>) -> Fut,
    ) -> PyResult<Bound<'py, PyAny>>
    where
        Fut: Future<Output = agentmem::Result<T>> + Send,
        T: Serialize + Send,
    {
        let value = block_on(py, op(self.inner.clone()))?;
        to_python(py, &value)
    }
}

/// A time from Python: RFC 3339 (the package turns a `datetime` into one).
fn time(what: &str, value: &str) -> PyResult<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(value)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| invalid(what, e))
}

/// A duration in seconds from Python (non-negative, finite).
fn seconds(what: &str, value: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(value).map_err(|e| invalid(what, e))
}

#[pymethods]
#[allow(
    clippy::too_many_arguments,
    reason = "Python keyword arguments: one Rust parameter per argument, option or filter"
)]
impl NativeStore {
    /// The store's checkpoints (LangGraph's checkpointer model), when it keeps them.
    fn checkpoints(&self) -> PyResult<NativeCheckpoints> {
        if !self.inner.capabilities().checkpoints {
            return Err(to_py(agentmem::checkpoint::unsupported(
                self.inner.backend().name,
            )));
        }
        Ok(NativeCheckpoints::of(self.inner.clone()))
    }

    /// The backend's name (`file`, `sqlite`, `redis`, `postgres`, `mongodb`).
    #[getter]
    fn backend(&self) -> &'static str {
        self.inner.backend().name
    }

    /// The store URL with any password hidden.
    #[getter]
    fn url(&self) -> &str {
        &self.redacted
    }

    fn __repr__(&self) -> String {
        format!("<agentmem store {}>", self.redacted)
    }

    /// What the backend can do, by name.
    fn capabilities<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, &self.inner.capabilities())
    }

    /// Appends messages (agentmem's shape) in one atomic step.
    fn append<'py>(
        &self, py: Python<'py>, session: &str, messages: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (id, messages) = (session_id(session)?, input::messages(messages)?);
        self.call(py, move |s| async move { s.append(&id, &messages).await })
    }

    /// Replaces a session's messages and metadata (the seed protocol's `save_session`).
    #[pyo3(signature = (session, messages, metadata=None))]
    fn save_session<'py>(
        &self, py: Python<'py>, session: &str, messages: &Bound<'_, PyAny>,
        metadata: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (id, messages) = (session_id(session)?, input::messages(messages)?);
        let metadata: Metadata = input::optional("metadata", metadata)?.unwrap_or_default();
        self.call(py, move |s| async move {
            SessionStore::save_session(&*s, &id, &messages, &metadata).await
        })
    }

    /// The session (its last `limit` messages, a window that keeps tool calls with their
    /// results), or `None` when it does not exist.
    #[pyo3(signature = (session, limit=None))]
    fn load<'py>(
        &self, py: Python<'py>, session: &str, limit: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let id = session_id(session)?;
        self.call(py, move |s| async move { s.load(&id, limit).await })
    }

    /// Every session's id, sorted.
    fn sessions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.call(py, |s| async move { s.session_ids().await })
    }

    /// Every session's summary.
    fn list_sessions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.call(py, |s| async move { s.list_sessions().await })
    }

    /// One page of the sessions matching `query` (owner, tags, updated_since and
    /// updated_before as RFC 3339, after, limit), ordered by id.
    fn find_sessions<'py>(
        &self, py: Python<'py>, query: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let query: SessionQuery = input::value("session query", query)?;
        self.call(py, move |s| async move { s.find_sessions(&query).await })
    }

    /// Messages matching `query`, best first: `{session, message, score}` by keyword, with
    /// `keyword_rank`, `semantic_rank` and `similarity` too by meaning (`mode` `semantic` or
    /// `hybrid`; hybrid by default when the URL embeds messages).
    #[pyo3(signature = (query, limit=10, session=None, mode=None))]
    fn search<'py>(
        &self, py: Python<'py>, query: String, limit: usize, session: Option<&str>,
        mode: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let scope = MessageQuery {
            session: session.map(session_id).transpose()?,
            limit,
        };
        match self.recall.mode(py, mode, Searched::Messages)? {
            Some((recall, mode)) => self.call(py, move |_| async move {
                recall.search_messages(&query, &scope, mode).await
            }),
            None => self.call(py, move |s| async move {
                s.search_messages(&query, &scope).await
            }),
        }
    }

    /// Embeds the texts with no vector yet (memory items, and messages with
    /// `embed=messages`); every text anew with `all` or when the store's vectors come from
    /// another model. Returns `{texts, embedded}`.
    #[pyo3(signature = (all=false))]
    fn reindex<'py>(&self, py: Python<'py>, all: bool) -> PyResult<Bound<'py, PyAny>> {
        let recall = self.recall.require(py, "reindex()")?;
        self.call(py, move |_| recall::reindex(recall, all))
    }

    /// How far the vectors lag behind the texts: `{texts, pending, model}` (`model` `None`
    /// before the first indexing).
    fn index_lag<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let recall = self.recall.require(py, "index_lag()")?;
        self.call(py, move |_| async move { recall.lag().await })
    }

    /// Copies `source` (up to and including message `at`, else whole) into a new session.
    #[pyo3(signature = (source, target, at=None))]
    fn fork<'py>(
        &self, py: Python<'py>, source: &str, target: &str, at: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (source, target) = (session_id(source)?, session_id(target)?);
        let at = at.map(message_id).transpose()?;
        self.call(py, move |s| async move {
            s.fork(&source, &target, at.as_ref()).await
        })
    }

    /// Removes the last `last` messages, or every one after message `after`; returns them,
    /// oldest first.
    #[pyo3(signature = (session, last=None, after=None))]
    fn rewind<'py>(
        &self, py: Python<'py>, session: &str, last: Option<usize>, after: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let id = session_id(session)?;
        let to = match (last, after) {
            (Some(n), None) => Rewind::Last(n),
            (None, Some(after)) => Rewind::After(message_id(after)?),
            _ => {
                return Err(invalid(
                    "rewind",
                    "give exactly one of `last` (a count) and `after` (a message id)",
                ))
            }
        };
        self.call(py, move |s| async move { s.rewind(&id, &to).await })
    }

    /// Deletes a session with its archives; whether it existed.
    fn delete<'py>(&self, py: Python<'py>, session: &str) -> PyResult<Bound<'py, PyAny>> {
        let id = session_id(session)?;
        self.call(py, move |s| async move { s.delete_session(&id).await })
    }

    /// Archives the session's messages and replaces them with one system message holding
    /// `summary` (an extractive summary of the session when `None`), atomically, as
    /// `agentmem compact` does; returns `{archive, summary}`.
    #[pyo3(signature = (session, summary=None))]
    fn compact<'py>(
        &self, py: Python<'py>, session: &str, summary: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let id = session_id(session)?;
        self.call(py, move |s| async move {
            let summary = match summary {
                Some(summary) => summary,
                None => {
                    let messages = s.messages(&id).await?;
                    if messages.is_empty() && !s.session_exists(&id).await? {
                        return Err(Error::not_found(format!("session {id} does not exist")));
                    }
                    ExtractiveSummarizer::new()
                        .summarize_now(&SummaryRequest::new(messages, AUTO_SUMMARY_TOKENS))
                }
            };
            let replacement = Message::system(summary_text(&summary));
            let archive = s.compact(&id, std::slice::from_ref(&replacement)).await?;
            Ok(serde_json::json!({"archive": archive, "summary": replacement}))
        })
    }

    /// The session's archives, oldest first.
    fn archives<'py>(&self, py: Python<'py>, session: &str) -> PyResult<Bound<'py, PyAny>> {
        let id = session_id(session)?;
        self.call(py, move |s| async move { s.list_archives(&id).await })
    }

    /// Sets labels (`title`, `owner`, tags) and removes tags; `clear` names labels to unset.
    #[pyo3(signature = (session, title=None, owner=None, tags=None, untag=Vec::new(), clear=Vec::new()))]
    fn tag<'py>(
        &self, py: Python<'py>, session: &str, title: Option<String>, owner: Option<String>,
        tags: Option<Tags>, untag: Vec<String>, clear: Vec<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let id = session_id(session)?;
        let mut patch = SessionPatch::default();
        for label in clear {
            match label.as_str() {
                "title" => patch.title = Some(None),
                "owner" => patch.owner = Some(None),
                other => {
                    return Err(invalid(
                        "clear",
                        format!("no label {other:?} (title, owner)"),
                    ))
                }
            }
        }
        if let Some(title) = title {
            patch = patch.title(title);
        }
        if let Some(owner) = owner {
            patch = patch.owner(owner);
        }
        for (key, value) in tags.unwrap_or_default() {
            patch = patch.tag(key, value);
        }
        for key in untag {
            patch = patch.untag(key);
        }
        self.call(
            py,
            move |s| async move { s.update_session(&id, &patch).await },
        )
    }

    /// Sets when the session expires (`at`, or `seconds` from now), or makes it permanent.
    #[pyo3(signature = (session, seconds=None, at=None, persist=false))]
    fn expire<'py>(
        &self, py: Python<'py>, session: &str, seconds: Option<f64>, at: Option<&str>,
        persist: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let id = session_id(session)?;
        let patch = match (seconds, at, persist) {
            (Some(s), None, false) => {
                SessionPatch::default().expire_in(self::seconds("seconds", s)?)
            }
            (None, Some(at), false) => SessionPatch::default().expire_at(time("at", at)?),
            (None, None, true) => SessionPatch::default().persist(),
            _ => {
                return Err(invalid(
                    "expire",
                    "give exactly one of `seconds`, `at` and `persist=True`",
                ))
            }
        };
        self.call(
            py,
            move |s| async move { s.update_session(&id, &patch).await },
        )
    }

    /// Deletes what the policy says and every expired memory item.
    #[pyo3(signature = (older_than=None, keep=None, memories_older_than=None))]
    fn purge<'py>(
        &self, py: Python<'py>, older_than: Option<f64>, keep: Option<usize>,
        memories_older_than: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let age = |what, value: Option<f64>| value.map(|s| seconds(what, s)).transpose();
        let policy = RetentionPolicy {
            max_age: age("older_than", older_than)?,
            max_sessions: keep,
            max_memory_age: age("memories_older_than", memories_older_than)?,
        };
        self.call(py, move |s| async move { s.purge(&policy).await })
    }

    /// Stores a memory item of `kind` in `scope` (`{agent, workspace, owner}`, global when
    /// `None`); returns it as stored. `id` names a new item (a fresh one when `None`): an
    /// adapter that derives ids from its own keys reads its items back by id in one lookup.
    #[pyo3(signature = (text, kind="long_term", scope=None, key=None, metadata=None, ttl=None, id=None))]
    fn put_memory<'py>(
        &self, py: Python<'py>, text: String, kind: &str, scope: Option<&Bound<'_, PyAny>>,
        key: Option<String>, metadata: Option<&Bound<'_, PyAny>>, ttl: Option<f64>,
        id: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let scope = input::optional::<MemoryScope>("scope", scope)?.unwrap_or_default();
        let mut item = MemoryItem::new(input::memory_kind(kind)?, text).in_scope(scope);
        if let Some(id) = id {
            item.id = MemoryId::new(id).map_err(to_py)?;
        }
        if let Some(key) = key {
            item = item.with_key(key);
        }
        if let Some(metadata) = input::optional("metadata", metadata)? {
            item.metadata = metadata;
        }
        if let Some(ttl) = ttl {
            item = item.expiring_in(seconds("ttl", ttl)?);
        }
        self.call(py, move |s| async move { s.put_memory(&item).await })
    }

    /// One memory item by id, or `None`.
    fn get_memory<'py>(&self, py: Python<'py>, id: String) -> PyResult<Bound<'py, PyAny>> {
        let id = MemoryId::new(id).map_err(to_py)?;
        self.call(py, move |s| async move { s.get_memory(&id).await })
    }

    /// Memory items of a kind and scope (see `input::scope_filter`), oldest first.
    #[pyo3(signature = (kind=None, scope=None, exact=false, limit=None))]
    fn memories<'py>(
        &self, py: Python<'py>, kind: Option<&str>, scope: Option<&Bound<'_, PyAny>>, exact: bool,
        limit: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let filter = input::memory_filter(kind, scope, exact, limit)?;
        self.call(py, move |s| async move { s.list_memories(&filter).await })
    }

    /// Memory items matching `query`, best first: `{item, score}` by keyword, with
    /// `keyword_rank`, `semantic_rank` and `similarity` too by meaning (`mode` `semantic` or
    /// `hybrid`; hybrid by default when the URL names an embedder).
    #[pyo3(signature = (query, limit=10, kind=None, scope=None, exact=false, mode=None))]
    fn search_memories<'py>(
        &self, py: Python<'py>, query: String, limit: usize, kind: Option<&str>,
        scope: Option<&Bound<'_, PyAny>>, exact: bool, mode: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let filter = input::memory_filter(kind, scope, exact, Some(limit))?;
        match self.recall.mode(py, mode, Searched::Memories)? {
            Some((recall, mode)) => self.call(py, move |_| async move {
                recall.search_memories(&query, &filter, mode).await
            }),
            None => self.call(py, move |s| async move {
                s.search_memories(&query, &filter).await
            }),
        }
    }

    /// Deletes a memory item; whether it existed.
    fn delete_memory<'py>(&self, py: Python<'py>, id: String) -> PyResult<Bound<'py, PyAny>> {
        let id = MemoryId::new(id).map_err(to_py)?;
        self.call(py, move |s| async move { s.delete_memory(&id).await })
    }

    /// The context text an agent in `scope` is given (the seed protocol's `get_context`):
    /// with no scope, the whole store's.
    #[pyo3(signature = (query=None, scope=None))]
    fn get_context<'py>(
        &self, py: Python<'py>, query: Option<String>, scope: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let scope = input::scope_filter(scope, false)?;
        self.call(py, move |s| async move {
            ContextStore::get_context_in(&*s, query.as_deref(), &scope).await
        })
    }

    /// The store (or one session) as an export document, the JSON `agentmem export` writes.
    #[pyo3(signature = (session=None))]
    fn export<'py>(&self, py: Python<'py>, session: Option<&str>) -> PyResult<Bound<'py, PyAny>> {
        match session.map(session_id).transpose()? {
            Some(id) => self.call(py, move |s| async move {
                agentmem::transfer::export_session(&*s, &id).await
            }),
            None => self.call(py, |s| async move {
                agentmem::transfer::export_document(&*s).await
            }),
        }
    }

    /// Imports an export document: adds what the store lacks, refuses conflicts whole.
    fn import_document<'py>(
        &self, py: Python<'py>, document: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let doc: agentmem::formats::ExportDocument = input::value("export document", document)?;
        self.call(py, move |s| async move {
            agentmem::transfer::import_document(&*s, &doc).await
        })
    }

    /// Copies every session, archive and memory item into the store at `to`, verified;
    /// `progress(event)` hears each step (a dict with `event`: start, session, finish).
    /// From an encrypted store, the destination must be encrypted too (its URL's key or
    /// `key_file`), unless `plaintext` asks for a decrypted copy.
    #[pyo3(signature = (to, key_file=None, progress=None, batch=1000, dry_run=false, plaintext=false))]
    fn migrate<'py>(
        &self, py: Python<'py>, to: String, key_file: Option<PathBuf>, progress: Option<Py<PyAny>>,
        batch: usize, dry_run: bool, plaintext: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let options = MigrateOptions {
            batch,
            dry_run,
            allow_plaintext: plaintext,
        };
        // A callback that raises stops hearing; its exception is raised once the call ends.
        let mut failed: Option<PyErr> = None;
        let failure = &mut failed;
        let report = self.call(py, |from| async move {
            let to = open_store(to, key_file).await?;
            let mut hear = |event: ProgressEvent| {
                let (Some(callback), None) = (&progress, &*failure) else {
                    return;
                };
                Python::attach(|py| {
                    let result = progress_event(py, &event)
                        .and_then(|event| callback.call1(py, (event,)).map(drop));
                    *failure = result.err();
                });
            };
            agentmem::transfer::migrate(&*from, &*to, options, &mut hear).await
        })?;
        match failed {
            Some(e) => Err(e),
            None => Ok(report),
        }
    }
}

/// A migration step as a dict: `{"event": "start", "sessions": n}`,
/// `{"event": "session", "session": id, "messages": n, "written": {...}}`,
/// `{"event": "graph", "entities": n, "entities_created": n, ...}`, `{"event": "finish"}`.
fn progress_event<'py>(py: Python<'py>, event: &ProgressEvent) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    match event {
        ProgressEvent::Start { sessions } => {
            dict.set_item("event", "start")?;
            dict.set_item("sessions", sessions)?;
        }
        ProgressEvent::Session {
            id,
            messages,
            written,
        } => {
            dict.set_item("event", "session")?;
            dict.set_item("session", id.as_str())?;
            dict.set_item("messages", messages)?;
            let report = PyDict::new(py);
            report.set_item("created", written.created)?;
            report.set_item("messages_written", written.messages_written)?;
            report.set_item("archives_written", written.archives_written)?;
            report.set_item("metadata_written", written.metadata_written)?;
            report.set_item("labels_written", written.labels_written)?;
            dict.set_item("written", report)?;
        }
        ProgressEvent::Graph { copied } => {
            dict.set_item("event", "graph")?;
            dict.set_item("entities", copied.entities)?;
            dict.set_item("entities_created", copied.entities_created)?;
            dict.set_item("observations_written", copied.observations_written)?;
            dict.set_item("relations", copied.relations)?;
            dict.set_item("relations_created", copied.relations_created)?;
        }
        ProgressEvent::Finish => dict.set_item("event", "finish")?,
        _ => dict.set_item("event", "other")?,
    }
    Ok(dict)
}
