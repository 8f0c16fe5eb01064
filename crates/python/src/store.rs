//! `NativeStore`: one opened store, each operation a method taking and returning plain data.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agentmem::conversation::templates::summary_text;
use agentmem::conversation::{ExtractiveSummarizer, SummaryRequest};
use agentmem::crypt::{MasterKey, KEY_ENV};
use agentmem::transfer::{MigrateOptions, ProgressEvent};
use agentmem::{
    AgentMemory, AgentMemoryExt, ContextStore, Error, MemoryItem, MemoryStore, Message,
    MessageQuery, RetentionPolicy, Rewind, ScopeFilter, SessionPatch, SessionQuery, SessionStore,
};
use chrono::{DateTime, Utc};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::error::{invalid, to_py};
use crate::input::{self, message_id, session_id, to_python, Tags};
use crate::runtime::block_on;

/// The summary length `compact` asks the extractive summarizer for, in tokens (as the CLI's
/// `compact --auto`).
const AUTO_SUMMARY_TOKENS: usize = 512;

/// The key a store is opened with: the file named, else `AGENTMEM_ENCRYPTION_KEY` when set,
/// else none; never one when the URL names its own (`key_file=`, `key=env`). As the CLI.
fn key_for(url: &str, key_file: Option<PathBuf>) -> agentmem::Result<Option<MasterKey>> {
    if let Some(path) = key_file {
        return MasterKey::from_file(&path).map(Some).map_err(|e| {
            Error::new(e.kind(), format!("encryption key file {}", path.display())).with_source(e)
        });
    }
    if agentmem::url_names_key(url)? {
        return Ok(None);
    }
    match std::env::var_os(KEY_ENV) {
        Some(value) if !value.is_empty() => MasterKey::from_env()
            .map(Some)
            .map_err(|e| Error::new(e.kind(), format!("${KEY_ENV}")).with_source(e)),
        _ => Ok(None),
    }
}

/// Opens the store `url` names, wearing the encryption `key_file` or
/// `AGENTMEM_ENCRYPTION_KEY` gives (or the URL's own `key_file=`/`key=env`).
async fn open_store(
    url: String,
    key_file: Option<PathBuf>,
) -> agentmem::Result<Arc<dyn AgentMemory>> {
    let key = key_for(&url, key_file)?;
    agentmem::open_with_key(&url, key.as_ref())
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
    let inner = block_on(py, open_store(url, key_file))?;
    Ok(NativeStore { inner, redacted })
}

/// An opened store. Safe to share between threads: every call releases the GIL.
#[pyclass(frozen, module = "agentmem._agentmem")]
pub struct NativeStore {
    inner: Arc<dyn AgentMemory>,
    redacted: String,
}

impl NativeStore {
    fn store(&self) -> Arc<dyn AgentMemory> {
        self.inner.clone()
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
impl NativeStore {
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
    fn append(&self, py: Python<'_>, session: &str, messages: &Bound<'_, PyAny>) -> PyResult<()> {
        let id = session_id(session)?;
        let messages = input::messages(messages)?;
        let store = self.store();
        block_on(py, async move { store.append(&id, &messages).await })
    }

    /// Replaces a session's messages and metadata (the seed protocol's `save_session`).
    #[pyo3(signature = (session, messages, metadata=None))]
    fn save_session(
        &self,
        py: Python<'_>,
        session: &str,
        messages: &Bound<'_, PyAny>,
        metadata: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let id = session_id(session)?;
        let messages = input::messages(messages)?;
        let metadata: agentmem::Metadata = match metadata {
            Some(m) => input::value("metadata", m)?,
            None => agentmem::Metadata::new(),
        };
        let store = self.store();
        block_on(py, async move {
            SessionStore::save_session(&*store, &id, &messages, &metadata).await
        })
    }

    /// The session (its last `limit` messages, a window that keeps tool calls with their
    /// results), or `None` when it does not exist.
    #[pyo3(signature = (session, limit=None))]
    fn load<'py>(
        &self,
        py: Python<'py>,
        session: &str,
        limit: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let id = session_id(session)?;
        let store = self.store();
        let loaded = block_on(py, async move { store.load(&id, limit).await })?;
        to_python(py, &loaded)
    }

    /// Every session's id, sorted.
    fn sessions(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let store = self.store();
        let ids = block_on(py, async move { store.session_ids().await })?;
        Ok(ids.into_iter().map(|id| id.to_string()).collect())
    }

    /// Every session's summary.
    fn list_sessions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let store = self.store();
        let infos = block_on(py, async move { store.list_sessions().await })?;
        to_python(py, &infos)
    }

    /// One page of the sessions matching owner, tags and update times, ordered by id.
    #[pyo3(signature = (owner=None, tags=None, updated_since=None, updated_before=None, after=None, limit=100))]
    #[allow(
        clippy::too_many_arguments,
        reason = "Python keyword arguments, one per filter"
    )]
    fn find_sessions<'py>(
        &self,
        py: Python<'py>,
        owner: Option<String>,
        tags: Option<Tags>,
        updated_since: Option<&str>,
        updated_before: Option<&str>,
        after: Option<&str>,
        limit: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut query = SessionQuery::default().limit(limit);
        query.owner = owner;
        query.tags = tags.unwrap_or_default();
        query.updated_since = updated_since
            .map(|t| time("updated_since", t))
            .transpose()?;
        query.updated_before = updated_before
            .map(|t| time("updated_before", t))
            .transpose()?;
        query.after = after.map(session_id).transpose()?;
        let store = self.store();
        let page = block_on(py, async move { store.find_sessions(&query).await })?;
        to_python(py, &page)
    }

    /// Messages matching `query`, best first: `{session, message, score}`.
    #[pyo3(signature = (query, limit=10, session=None))]
    fn search<'py>(
        &self,
        py: Python<'py>,
        query: String,
        limit: usize,
        session: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let scope = MessageQuery {
            session: session.map(session_id).transpose()?,
            limit,
        };
        let store = self.store();
        let hits = block_on(
            py,
            async move { store.search_messages(&query, &scope).await },
        )?;
        to_python(py, &hits)
    }

    /// Copies `source` (up to and including message `at`, else whole) into a new session.
    #[pyo3(signature = (source, target, at=None))]
    fn fork<'py>(
        &self,
        py: Python<'py>,
        source: &str,
        target: &str,
        at: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (source, target) = (session_id(source)?, session_id(target)?);
        let at = at.map(message_id).transpose()?;
        let store = self.store();
        let info = block_on(py, async move {
            store.fork(&source, &target, at.as_ref()).await
        })?;
        to_python(py, &info)
    }

    /// Removes the last `last` messages, or every one after message `after`; returns them,
    /// oldest first.
    #[pyo3(signature = (session, last=None, after=None))]
    fn rewind<'py>(
        &self,
        py: Python<'py>,
        session: &str,
        last: Option<usize>,
        after: Option<&str>,
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
        let store = self.store();
        let removed = block_on(py, async move { store.rewind(&id, &to).await })?;
        to_python(py, &removed)
    }

    /// Deletes a session with its archives; whether it existed.
    fn delete(&self, py: Python<'_>, session: &str) -> PyResult<bool> {
        let id = session_id(session)?;
        let store = self.store();
        block_on(py, async move { store.delete_session(&id).await })
    }

    /// Archives the session's messages and replaces them with one system message holding
    /// `summary` (an extractive summary of the session when `None`), atomically, as
    /// `agentmem compact` does; returns `{archive, summary}`.
    #[pyo3(signature = (session, summary=None))]
    fn compact<'py>(
        &self,
        py: Python<'py>,
        session: &str,
        summary: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let id = session_id(session)?;
        let store = self.store();
        let (archive, replacement) = block_on(py, async move {
            let summary = match summary {
                Some(summary) => summary,
                None => {
                    let messages = store.messages(&id).await?;
                    if messages.is_empty() && !store.session_exists(&id).await? {
                        return Err(Error::not_found(format!("session {id} does not exist")));
                    }
                    ExtractiveSummarizer::new()
                        .summarize_now(&SummaryRequest::new(messages, AUTO_SUMMARY_TOKENS))
                }
            };
            let replacement = Message::system(summary_text(&summary));
            let archive = store
                .compact(&id, std::slice::from_ref(&replacement))
                .await?;
            Ok((archive, replacement))
        })?;
        let result = PyDict::new(py);
        result.set_item("archive", to_python(py, &archive)?)?;
        result.set_item("summary", to_python(py, &replacement)?)?;
        Ok(result.into_any())
    }

    /// The session's archives, oldest first.
    fn archives<'py>(&self, py: Python<'py>, session: &str) -> PyResult<Bound<'py, PyAny>> {
        let id = session_id(session)?;
        let store = self.store();
        let infos = block_on(py, async move { store.list_archives(&id).await })?;
        to_python(py, &infos)
    }

    /// Sets labels (`title`, `owner`, tags) and removes tags; `clear` names labels to unset.
    #[pyo3(signature = (session, title=None, owner=None, tags=None, untag=Vec::new(), clear=Vec::new()))]
    #[allow(
        clippy::too_many_arguments,
        reason = "Python keyword arguments, one per label"
    )]
    fn tag<'py>(
        &self,
        py: Python<'py>,
        session: &str,
        title: Option<String>,
        owner: Option<String>,
        tags: Option<Tags>,
        untag: Vec<String>,
        clear: Vec<String>,
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
        let store = self.store();
        let info = block_on(py, async move { store.update_session(&id, &patch).await })?;
        to_python(py, &info)
    }

    /// Sets when the session expires (`at`, or `seconds` from now), or makes it permanent.
    #[pyo3(signature = (session, seconds=None, at=None, persist=false))]
    fn expire<'py>(
        &self,
        py: Python<'py>,
        session: &str,
        seconds: Option<f64>,
        at: Option<&str>,
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
        let store = self.store();
        let info = block_on(py, async move { store.update_session(&id, &patch).await })?;
        to_python(py, &info)
    }

    /// Deletes what the policy says and every expired memory item.
    #[pyo3(signature = (older_than=None, keep=None, memories_older_than=None))]
    fn purge<'py>(
        &self,
        py: Python<'py>,
        older_than: Option<f64>,
        keep: Option<usize>,
        memories_older_than: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let policy = RetentionPolicy {
            max_age: older_than.map(|s| seconds("older_than", s)).transpose()?,
            max_sessions: keep,
            max_memory_age: memories_older_than
                .map(|s| seconds("memories_older_than", s))
                .transpose()?,
        };
        let store = self.store();
        let report = block_on(py, async move { store.purge(&policy).await })?;
        to_python(py, &report)
    }

    /// Stores a memory item; returns it as stored.
    #[pyo3(signature = (text, kind="long_term", agent=None, workspace=None, owner=None, key=None, metadata=None, ttl=None, id=None))]
    #[allow(
        clippy::too_many_arguments,
        reason = "Python keyword arguments, one per field"
    )]
    fn put_memory<'py>(
        &self,
        py: Python<'py>,
        text: String,
        kind: &str,
        agent: Option<String>,
        workspace: Option<String>,
        owner: Option<String>,
        key: Option<String>,
        metadata: Option<&Bound<'_, PyAny>>,
        ttl: Option<f64>,
        id: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut item = MemoryItem::new(input::memory_kind(kind)?, text)
            .in_scope(input::scope(agent, workspace, owner));
        if let Some(key) = key {
            item = item.with_key(key);
        }
        if let Some(metadata) = metadata {
            item.metadata = input::value("metadata", metadata)?;
        }
        if let Some(ttl) = ttl {
            item = item.expiring_in(seconds("ttl", ttl)?);
        }
        if let Some(id) = id {
            item.id = agentmem::MemoryId::new(id).map_err(to_py)?;
        }
        let store = self.store();
        let stored = block_on(py, async move { store.put_memory(&item).await })?;
        to_python(py, &stored)
    }

    /// One memory item by id, or `None`.
    fn get_memory<'py>(&self, py: Python<'py>, id: String) -> PyResult<Bound<'py, PyAny>> {
        let id = agentmem::MemoryId::new(id).map_err(to_py)?;
        let store = self.store();
        let item = block_on(py, async move { store.get_memory(&id).await })?;
        to_python(py, &item)
    }

    /// Memory items of a kind and scope (see `memory_filter`), oldest first.
    #[pyo3(signature = (kind=None, agent=None, workspace=None, owner=None, exact=false, limit=None))]
    #[allow(
        clippy::too_many_arguments,
        reason = "Python keyword arguments, one per filter"
    )]
    fn memories<'py>(
        &self,
        py: Python<'py>,
        kind: Option<&str>,
        agent: Option<String>,
        workspace: Option<String>,
        owner: Option<String>,
        exact: bool,
        limit: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let filter = input::memory_filter(kind, agent, workspace, owner, exact, limit)?;
        let store = self.store();
        let items = block_on(py, async move { store.list_memories(&filter).await })?;
        to_python(py, &items)
    }

    /// Memory items matching `query`, best first: `{item, score}`.
    #[pyo3(signature = (query, limit=10, kind=None, agent=None, workspace=None, owner=None, exact=false))]
    #[allow(
        clippy::too_many_arguments,
        reason = "Python keyword arguments, one per filter"
    )]
    fn search_memories<'py>(
        &self,
        py: Python<'py>,
        query: String,
        limit: usize,
        kind: Option<&str>,
        agent: Option<String>,
        workspace: Option<String>,
        owner: Option<String>,
        exact: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let filter = input::memory_filter(kind, agent, workspace, owner, exact, Some(limit))?;
        let store = self.store();
        let hits = block_on(
            py,
            async move { store.search_memories(&query, &filter).await },
        )?;
        to_python(py, &hits)
    }

    /// Deletes a memory item; whether it existed.
    fn delete_memory(&self, py: Python<'_>, id: String) -> PyResult<bool> {
        let id = agentmem::MemoryId::new(id).map_err(to_py)?;
        let store = self.store();
        block_on(py, async move { store.delete_memory(&id).await })
    }

    /// The context text an agent in this scope is given (the seed protocol's `get_context`):
    /// with no scope argument, the whole store's.
    #[pyo3(signature = (query=None, agent=None, workspace=None, owner=None))]
    fn get_context(
        &self,
        py: Python<'_>,
        query: Option<String>,
        agent: Option<String>,
        workspace: Option<String>,
        owner: Option<String>,
    ) -> PyResult<String> {
        let any_scope = agent.is_some() || workspace.is_some() || owner.is_some();
        let scope = if any_scope {
            ScopeFilter::VisibleFrom(input::scope(agent, workspace, owner))
        } else {
            ScopeFilter::All
        };
        let store = self.store();
        block_on(py, async move {
            ContextStore::get_context_in(&*store, query.as_deref(), &scope).await
        })
    }

    /// The store (or one session) as an export document, the JSON `agentmem export` writes.
    #[pyo3(signature = (session=None))]
    fn export<'py>(&self, py: Python<'py>, session: Option<&str>) -> PyResult<Bound<'py, PyAny>> {
        let store = self.store();
        match session.map(session_id).transpose()? {
            Some(id) => {
                let doc = block_on(py, async move {
                    agentmem::transfer::export_session(&*store, &id).await
                })?;
                to_python(py, &doc)
            }
            None => {
                let doc = block_on(py, async move {
                    agentmem::transfer::export_document(&*store).await
                })?;
                to_python(py, &doc)
            }
        }
    }

    /// Imports an export document: adds what the store lacks, refuses conflicts whole.
    fn import_document<'py>(
        &self,
        py: Python<'py>,
        document: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let doc: agentmem::formats::ExportDocument = input::value("export document", document)?;
        let store = self.store();
        let report = block_on(py, async move {
            agentmem::transfer::import_document(&*store, &doc).await
        })?;
        to_python(py, &report)
    }

    /// Copies every session, archive and memory item into the store at `to`, verified;
    /// `progress(event)` hears each step (a dict with `event`: start, session, finish).
    /// From an encrypted store, the destination must be encrypted too (its URL's key or
    /// `key_file`), unless `plaintext` asks for a decrypted copy.
    #[pyo3(signature = (to, key_file=None, progress=None, batch=1000, dry_run=false, plaintext=false))]
    #[allow(
        clippy::too_many_arguments,
        reason = "Python keyword arguments, one per option"
    )]
    fn migrate<'py>(
        &self,
        py: Python<'py>,
        to: String,
        key_file: Option<PathBuf>,
        progress: Option<Py<PyAny>>,
        batch: usize,
        dry_run: bool,
        plaintext: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let from = self.store();
        let options = MigrateOptions {
            batch,
            dry_run,
            allow_plaintext: plaintext,
        };
        let report = block_on(py, async move {
            let to = open_store(to, key_file).await?;
            let mut failed: Option<PyErr> = None;
            let mut hear = |event: ProgressEvent| {
                let Some(callback) = &progress else { return };
                if failed.is_some() {
                    return;
                }
                Python::attach(|py| {
                    let result = progress_event(py, &event)
                        .and_then(|event| callback.call1(py, (event,)).map(drop));
                    if let Err(e) = result {
                        failed = Some(e);
                    }
                });
            };
            let report = agentmem::transfer::migrate(&*from, &*to, options, &mut hear).await?;
            Ok((report, failed))
        })?;
        let (report, failed) = report;
        if let Some(e) = failed {
            return Err(e);
        }
        to_python(py, &report)
    }
}

/// A migration step as a dict: `{"event": "start", "sessions": n}`,
/// `{"event": "session", "session": id, "messages": n, "written": {...}}`, `{"event": "finish"}`.
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
        ProgressEvent::Finish => dict.set_item("event", "finish")?,
        _ => dict.set_item("event", "other")?,
    }
    Ok(dict)
}
