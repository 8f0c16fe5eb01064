//! [`TraceLayer`] and [`Traced`]: `tracing` spans and error labels for store operations.

use crate::MemoryId;
use std::future::Future;
use std::time::Instant;

use tracing::field::Empty;
use tracing::{Instrument, Span};

use crate::error::{Error, Result};
use crate::layer::forward::forward_store;
use crate::lifecycle::{Rewind, SessionPage, SessionPatch, SessionQuery};
use crate::model::SessionInfo;
use crate::model::{Archive, ArchiveId, ArchiveInfo, MemoryItem, Message, Metadata, Session};
use crate::name::MessageId;
use crate::name::SessionId;
use crate::operation::Operation;
use crate::store::{
    AgentMemory, Capabilities, MemoryFilter, MemoryHit, MemoryStore, MessageHit, MessageQuery,
    PurgeReport, RetentionPolicy, SessionStore,
};

/// The span name every backend operation runs in.
pub const SPAN_NAME: &str = "agentmem.op";

/// One store operation about to run: its span, backend and operation.
#[derive(Debug)]
#[must_use = "an Op does nothing until `run` is awaited"]
pub(crate) struct Op {
    span: Span,
    backend: &'static str,
    op: Operation,
}

impl Op {
    /// A span for `op` on `backend`, about `session` when there is one.
    pub(crate) fn new(backend: &'static str, op: Operation, session: Option<&SessionId>) -> Op {
        // The field values are only computed when a subscriber enables the span. The dotted
        // fields are OpenTelemetry's semantic conventions (`otel.*` are read by
        // `tracing-opentelemetry`: the span kind must be known when the span is created).
        let span = tracing::debug_span!(
            "agentmem.op",
            backend,
            op = op.as_str(),
            session = Empty,
            messages = Empty,
            duration_us = Empty,
            outcome = Empty,
            "db.system.name" = db_system_name(backend),
            "db.operation.name" = op.as_str(),
            "gen_ai.conversation.id" = Empty,
            "error.type" = Empty,
            "otel.kind" = span_kind(backend),
            "otel.status_code" = Empty,
        );
        if let Some(session) = session {
            if !span.is_disabled() {
                span.record("session", session.as_str());
                span.record("gen_ai.conversation.id", session.as_str());
            }
        }
        Op { span, backend, op }
    }

    /// Records how many messages the operation writes.
    pub(crate) fn messages(self, count: usize) -> Op {
        // A disabled span still looks fields up by name: skip that too.
        if !self.span.is_disabled() {
            self.span.record("messages", as_i64(count));
        }
        self
    }

    /// Runs `operation` inside the span, then records its duration and outcome. Errors that do
    /// not say which backend or operation they came from are labelled with this one.
    pub(crate) async fn run<T>(self, operation: impl Future<Output = Result<T>>) -> Result<T> {
        self.run_inner(operation, None::<fn(&T) -> usize>).await
    }

    /// Like [`run`](Self::run), also recording `count(&value)` as the number of messages
    /// read back (for loads and searches).
    pub(crate) async fn run_counted<T>(
        self,
        operation: impl Future<Output = Result<T>>,
        count: impl FnOnce(&T) -> usize,
    ) -> Result<T> {
        self.run_inner(operation, Some(count)).await
    }

    async fn run_inner<T>(
        self,
        operation: impl Future<Output = Result<T>>,
        count: Option<impl FnOnce(&T) -> usize>,
    ) -> Result<T> {
        if self.span.is_disabled() {
            // No subscriber wants the span: skip the clock and the records, keep the labels.
            return operation.await.map_err(|error| self.label(error));
        }
        let started = Instant::now();
        let result = operation.instrument(self.span.clone()).await;
        // Signed, as OpenTelemetry has no unsigned integer attributes.
        let duration_us = i64::try_from(started.elapsed().as_micros()).unwrap_or(i64::MAX);
        self.span.record("duration_us", duration_us);
        let _entered = self.span.enter();
        match result {
            Ok(value) => {
                if let Some(count) = count {
                    self.span.record("messages", as_i64(count(&value)));
                }
                self.span.record("outcome", "ok");
                tracing::debug!(outcome = "ok", duration_us, "agentmem operation finished");
                Ok(value)
            }
            Err(error) => {
                let outcome = error.kind().as_str();
                self.span.record("outcome", outcome);
                self.span.record("error.type", outcome);
                self.span.record("otel.status_code", "error");
                tracing::debug!(outcome, duration_us, "agentmem operation finished");
                Err(self.label(error))
            }
        }
    }

    /// Labels an error that does not yet say which backend or operation it came from.
    fn label(&self, mut error: Error) -> Error {
        if error.backend_name().is_none() {
            error = error.with_backend(self.backend);
        }
        if error.operation().is_none() {
            error = error.with_operation(self.op);
        }
        error
    }
}

/// A count as a signed integer (OpenTelemetry has no unsigned attributes; `tracing-opentelemetry`
/// would export a `u64` as a string).
fn as_i64(count: usize) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

/// OpenTelemetry's `db.system.name` for a backend: the well-known value where there is one,
/// an `agentmem.` name for agentmem's own storage, and the backend's name for any other.
fn db_system_name(backend: &'static str) -> &'static str {
    match backend {
        "sqlite" => "sqlite",
        "postgres" => "postgresql",
        "redis" => "redis",
        "mongodb" => "mongodb",
        "file" => "agentmem.file",
        "in-memory" => "agentmem.in_memory",
        other => other,
    }
}

/// `client` for backends that talk to a server, `internal` for those in the process.
fn span_kind(backend: &'static str) -> &'static str {
    match backend {
        "postgres" | "redis" | "mongodb" => "client",
        _ => "internal",
    }
}

layer_and_store! {
    /// The layer that runs every operation of the store inside an `agentmem.op` span and labels
    /// its errors with the backend and [`Operation`]. Outermost in the standard stack, so
    /// validation failures are traced and labelled too.
    ///
    /// Every [`AgentMemory`] method of every backend runs inside one span named
    /// `agentmem.op` at `DEBUG` level with these fields:
    ///
    /// | field | value |
    /// |---|---|
    /// | `backend` | `file`, `sqlite`, `redis`, `postgres`, `mongodb`, `in-memory` |
    /// | `op` | the [`Operation`]: `append`, `load`, `compact`, … (`open` for opening a store) |
    /// | `session` | the session id, when the operation has one |
    /// | `messages` | messages written, or read back (recorded when the operation ends) |
    /// | `duration_us` | wall time of the operation, in microseconds |
    /// | `outcome` | `ok`, or the [`ErrorKind`](crate::ErrorKind) of the failure (`not found`, …) |
    ///
    /// and, for OpenTelemetry (through `tracing-opentelemetry`; see the `opentelemetry` example),
    /// these fields named by its database and GenAI semantic conventions:
    ///
    /// | field | value |
    /// |---|---|
    /// | `db.system.name` | `sqlite`, `postgresql`, `redis`, `mongodb`; `agentmem.file`, `agentmem.in_memory` |
    /// | `db.operation.name` | the same as `op` |
    /// | `gen_ai.conversation.id` | the same as `session` |
    /// | `error.type` | on failure, the same as `outcome` |
    /// | `otel.kind` | `client` for the server backends (PostgreSQL, Redis, MongoDB), else `internal` |
    /// | `otel.status_code` | `error` on failure (left unset on success, as the conventions ask) |
    ///
    /// `messages` and `duration_us` are recorded as signed integers, so they export as
    /// OpenTelemetry integers. No `db.namespace` or `db.collection.name`: they would name a
    /// database, file or table, which the span leaves out.
    ///
    /// Spans never hold message text, memory text, queries or connection strings: session ids
    /// are names the caller chose as keys, the rest are counts. When the operation ends, one
    /// `DEBUG` event (`agentmem operation finished`) repeats the outcome and duration inside the
    /// span, so a plain `fmt` subscriber prints them without span-close events.
    ///
    ///
    /// An error leaving a traced operation says which backend and [`Operation`] it came from
    /// ([`Error::backend_name`](crate::Error::backend_name), [`Error::operation`](crate::Error::operation)).
    ///
    /// ```
    /// use agentmem_core::{AgentMemory, MemoryStore, SessionStore, ErrorKind, InMemoryStore, Operation};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let store = InMemoryStore::new(); // wears the standard layers, `Traced` outermost
    /// let err = store.compact(&"missing".parse()?, &[]).await.unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::NotFound);
    /// assert_eq!(err.operation(), Some(Operation::Compact));
    /// assert_eq!(err.backend_name(), Some("in-memory"));
    /// # Ok::<(), agentmem_core::Error>(())
    /// # }).unwrap();
    /// ```
    TraceLayer;
    /// A store wearing [`TraceLayer`]. Dereferences to the store inside it.
    Traced
}

impl<S: AgentMemory> Traced<S> {
    fn op(&self, op: Operation, session: Option<&SessionId>) -> Op {
        Op::new(self.inner.backend(), op, session)
    }
}

/// The number of messages a loaded session holds (for the span's `messages` field).
fn session_len(session: &Option<Session>) -> usize {
    session.as_ref().map_or(0, |s| s.messages.len())
}

forward_store!({ impl<S: AgentMemory> SessionStore for Traced<S> } |self| self.inner; [backend capabilities] {
    async fn schema_version(&self) -> Result<u32> {
        let op = self.op(Operation::SchemaVersion, None);
        op.run(self.inner.schema_version()).await
    }

    async fn save_session(&self, id: &SessionId, history: &[Message], meta: &Metadata) -> Result<()> {
        let op = self.op(Operation::SaveSession, Some(id));
        let op = op.messages(history.len());
        op.run(self.inner.save_session(id, history, meta)).await
    }

    async fn append(&self, session: &SessionId, messages: &[Message]) -> Result<()> {
        let op = self.op(Operation::Append, Some(session));
        let op = op.messages(messages.len());
        op.run(self.inner.append(session, messages)).await
    }

    async fn load(&self, session: &SessionId, limit: Option<usize>) -> Result<Option<Session>> {
        let op = self.op(Operation::Load, Some(session));
        op.run_counted(self.inner.load(session, limit), session_len)
            .await
    }

    async fn list_sessions(&self) -> Result<Vec<SessionInfo>> {
        let op = self.op(Operation::ListSessions, None);
        op.run(self.inner.list_sessions()).await
    }

    async fn delete_session(&self, session: &SessionId) -> Result<bool> {
        let op = self.op(Operation::DeleteSession, Some(session));
        op.run(self.inner.delete_session(session)).await
    }

    async fn compact(&self, session: &SessionId, replacement: &[Message]) -> Result<ArchiveInfo> {
        let op = self.op(Operation::Compact, Some(session));
        let op = op.messages(replacement.len());
        op.run(self.inner.compact(session, replacement)).await
    }

    async fn list_archives(&self, session: &SessionId) -> Result<Vec<ArchiveInfo>> {
        let op = self.op(Operation::ListArchives, Some(session));
        op.run(self.inner.list_archives(session)).await
    }

    async fn load_archive(&self, session: &SessionId, archive: &ArchiveId) -> Result<Archive> {
        let op = self.op(Operation::LoadArchive, Some(session));
        op.run_counted(self.inner.load_archive(session, archive), |a| {
            a.messages.len()
        })
        .await
    }

    async fn search_messages(&self, query: &str, scope: &MessageQuery) -> Result<Vec<MessageHit>> {
        let op = self.op(Operation::SearchMessages, scope.session.as_ref());
        op.run_counted(self.inner.search_messages(query, scope), Vec::len)
            .await
    }

    async fn purge(&self, policy: &RetentionPolicy) -> Result<PurgeReport> {
        let op = self.op(Operation::Purge, None);
        op.run(self.inner.purge(policy)).await
    }

    async fn fork(&self, source: &SessionId, target: &SessionId, at: Option<&MessageId>) -> Result<SessionInfo> {
        // The span names the new session: it is the one written.
        let op = self.op(Operation::Fork, Some(target));
        op.run_counted(self.inner.fork(source, target, at), |info| {
            usize::try_from(info.message_count).unwrap_or(usize::MAX)
        })
        .await
    }

    async fn rewind(&self, session: &SessionId, to: &Rewind) -> Result<Vec<Message>> {
        let op = self.op(Operation::Rewind, Some(session));
        op.run_counted(self.inner.rewind(session, to), Vec::len).await
    }

    async fn update_session(&self, session: &SessionId, patch: &SessionPatch) -> Result<SessionInfo> {
        let op = self.op(Operation::UpdateSession, Some(session));
        op.run(self.inner.update_session(session, patch)).await
    }

    async fn find_sessions(&self, query: &SessionQuery) -> Result<SessionPage> {
        let op = self.op(Operation::FindSessions, None);
        op.run(self.inner.find_sessions(query)).await
    }

    async fn replace_archive(&self, session: &SessionId, archive: &ArchiveId, messages: &[Message]) -> Result<ArchiveInfo> {
        let op = self.op(Operation::ReplaceArchive, Some(session));
        let op = op.messages(messages.len());
        op.run(self.inner.replace_archive(session, archive, messages)).await
    }
});

forward_store!({ impl<S: AgentMemory> MemoryStore for Traced<S> } |self| self.inner; [] {
    async fn get_context(&self, query: Option<&str>) -> Result<String> {
        let op = self.op(Operation::GetContext, None);
        op.run(self.inner.get_context(query)).await
    }

    async fn put_memory(&self, item: &MemoryItem) -> Result<MemoryItem> {
        let op = self.op(Operation::PutMemory, None);
        op.run(self.inner.put_memory(item)).await
    }

    async fn get_memory(&self, id: &MemoryId) -> Result<Option<MemoryItem>> {
        let op = self.op(Operation::GetMemory, None);
        op.run(self.inner.get_memory(id)).await
    }

    async fn list_memories(&self, filter: &MemoryFilter) -> Result<Vec<MemoryItem>> {
        let op = self.op(Operation::ListMemories, None);
        op.run(self.inner.list_memories(filter)).await
    }

    async fn search_memories(&self, query: &str, filter: &MemoryFilter) -> Result<Vec<MemoryHit>> {
        let op = self.op(Operation::SearchMemories, None);
        op.run(self.inner.search_memories(query, filter)).await
    }

    async fn delete_memory(&self, id: &MemoryId) -> Result<bool> {
        let op = self.op(Operation::DeleteMemory, None);
        op.run(self.inner.delete_memory(id)).await
    }
});

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::fmt::Debug;
    use std::sync::{Arc, Mutex};

    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Metadata, Subscriber};

    use crate::{ErrorKind, InMemoryStore, Message, SessionStore};

    /// A field's value, typed as the subscriber received it.
    #[derive(Debug, Clone, PartialEq)]
    enum Value {
        Str(String),
        I64(i64),
        Other(String),
    }

    type Fields = BTreeMap<&'static str, Value>;

    /// Records fields into the map it holds.
    struct Recorder<'a>(&'a mut Fields);

    impl Visit for Recorder<'_> {
        fn record_str(&mut self, field: &Field, value: &str) {
            self.0.insert(field.name(), Value::Str(value.to_string()));
        }
        fn record_i64(&mut self, field: &Field, value: i64) {
            self.0.insert(field.name(), Value::I64(value));
        }
        fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
            self.0
                .insert(field.name(), Value::Other(format!("{value:?}")));
        }
    }

    /// Keeps every span's fields, in creation order (`tracing-subscriber` is not a dependency).
    #[derive(Default, Clone)]
    struct Spans(Arc<Mutex<Vec<Fields>>>);

    impl Subscriber for Spans {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, attrs: &Attributes<'_>) -> Id {
            let mut fields = Fields::new();
            attrs.record(&mut Recorder(&mut fields));
            let mut spans = self.0.lock().expect("lock");
            spans.push(fields);
            Id::from_u64(spans.len() as u64)
        }
        fn record(&self, id: &Id, values: &Record<'_>) {
            let mut spans = self.0.lock().expect("lock");
            let index = usize::try_from(id.into_u64()).expect("small id") - 1;
            values.record(&mut Recorder(&mut spans[index]));
        }
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, _: &Event<'_>) {}
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    fn s(value: &str) -> Value {
        Value::Str(value.to_string())
    }

    #[test]
    fn spans_carry_the_opentelemetry_conventions_beside_the_plain_fields() {
        let spans = Spans::default();
        let _default = tracing::subscriber::set_default(spans.clone());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            let store = InMemoryStore::new();
            let session = "chat-7".parse().expect("id");
            store
                .append(
                    &session,
                    &[Message::user("hi"), Message::assistant("hello")],
                )
                .await
                .expect("append");
            let missing = "missing".parse().expect("id");
            let error = store.compact(&missing, &[]).await.expect_err("no session");
            assert_eq!(error.kind(), ErrorKind::NotFound);
        });

        let spans = spans.0.lock().expect("lock").clone();
        let [append, compact] = spans.as_slice() else {
            panic!("two spans expected: {spans:#?}");
        };
        assert_eq!(append["backend"], s("in-memory"));
        assert_eq!(append["op"], s("append"));
        assert_eq!(append["session"], s("chat-7"));
        assert_eq!(append["messages"], Value::I64(2));
        assert!(matches!(append["duration_us"], Value::I64(_)), "{append:?}");
        assert_eq!(append["outcome"], s("ok"));
        assert_eq!(append["db.system.name"], s("agentmem.in_memory"));
        assert_eq!(append["db.operation.name"], s("append"));
        assert_eq!(append["gen_ai.conversation.id"], s("chat-7"));
        assert_eq!(append["otel.kind"], s("internal"));
        assert!(!append.contains_key("error.type"), "{append:?}");
        assert!(!append.contains_key("otel.status_code"), "{append:?}");

        assert_eq!(compact["op"], s("compact"));
        assert_eq!(compact["outcome"], s("not found"));
        assert_eq!(compact["error.type"], s("not found"));
        assert_eq!(compact["otel.status_code"], s("error"));
        assert_eq!(compact["gen_ai.conversation.id"], s("missing"));
    }

    #[test]
    fn server_backends_are_clients_with_their_well_known_system_names() {
        for (backend, system, kind) in [
            ("sqlite", "sqlite", "internal"),
            ("file", "agentmem.file", "internal"),
            ("postgres", "postgresql", "client"),
            ("redis", "redis", "client"),
            ("mongodb", "mongodb", "client"),
            ("someone-elses", "someone-elses", "internal"),
        ] {
            assert_eq!(super::db_system_name(backend), system);
            assert_eq!(super::span_kind(backend), kind);
        }
    }
}
