//! [`TraceLayer`] and [`Traced`]: `tracing` spans and error labels for store operations.

use std::future::Future;
use std::time::Instant;

use tracing::field::Empty;
use tracing::{Instrument, Span};

use async_trait::async_trait;

use crate::backend::BackendInfo;
use crate::error::{Error, Result};
use crate::layer::LayeredStore;
use crate::name::SessionId;
use crate::operation::{for_each_operation, Operation};
use crate::store::{
    AgentMemory, CheckpointStore, GraphStore, MemoryStore, SessionStore, VectorStore,
};

/// The span name every backend operation runs in.
pub const SPAN_NAME: &str = "agentmem.op";

/// One store operation about to run: its span, backend and operation.
#[derive(Debug)]
#[must_use = "an Op does nothing until `run` is awaited"]
pub(crate) struct Op {
    span: Span,
    backend: &'static BackendInfo,
    op: Operation,
}

impl Op {
    /// A span for `op` on `backend`, about `session` when there is one.
    pub(crate) fn new(
        backend: &'static BackendInfo, op: Operation, session: Option<&SessionId>,
    ) -> Op {
        // The field values are only computed when a subscriber enables the span. The dotted
        // fields are OpenTelemetry's semantic conventions (`otel.*` are read by
        // `tracing-opentelemetry`: the span kind must be known when the span is created).
        let span = tracing::debug_span!(
            "agentmem.op",
            backend = backend.name,
            op = op.as_str(),
            session = Empty,
            messages = Empty,
            duration_us = Empty,
            outcome = Empty,
            "db.system.name" = backend.db_system,
            "db.operation.name" = op.as_str(),
            "gen_ai.conversation.id" = Empty,
            "error.type" = Empty,
            "otel.kind" = if backend.remote { "client" } else { "internal" },
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
        self, operation: impl Future<Output = Result<T>>, count: impl FnOnce(&T) -> usize,
    ) -> Result<T> {
        self.run_inner(operation, Some(count)).await
    }

    async fn run_inner<T>(
        self, operation: impl Future<Output = Result<T>>, count: Option<impl FnOnce(&T) -> usize>,
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
            error = error.with_backend(self.backend.name);
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

macro_rules! traced {
    (
        stores { $($trait:ident {
            $($v:ident => fn $n:ident ($($a:ident : $t:ty),* $(,)?) -> $o:ty
                { session: $s:expr $(, writes: $w:expr)? $(, reads: $r:expr)? };)*
        })* }
        others { $($others:tt)* }
    ) => {
        #[async_trait]
        impl<S: AgentMemory> LayeredStore for Traced<S> {
            type Inner = S;

            fn inner(&self) -> &S {
                &self.inner
            }

            $($(
                async fn $n(&self, $($a: $t),*) -> Result<$o> {
                    let op = Op::new(self.inner.backend(), Operation::$v, $s);
                    $(let op = op.messages($w);)?
                    run!(op, $trait::$n(&self.inner, $($a),*) $(, $r)?)
                }
            )*)*
        }
    };
}

/// Runs an operation in its span, counting the messages it read back when told how.
macro_rules! run {
    ($op:ident, $operation:expr) => {
        $op.run($operation).await
    };
    ($op:ident, $operation:expr, $reads:expr) => {
        $op.run_counted($operation, $reads).await
    };
}

for_each_operation!(traced);

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::fmt::Debug;
    use std::sync::{Arc, Mutex};

    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Metadata, Subscriber};

    use crate::backend::BackendInfo;
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

    /// The spans `work` opens, with their fields, under a subscriber that records them.
    fn spans_of(work: impl std::future::Future<Output = ()>) -> Vec<Fields> {
        let spans = Spans::default();
        let _default = tracing::subscriber::set_default(spans.clone());
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
            .block_on(work);
        let recorded = spans.0.lock().expect("lock").clone();
        recorded
    }

    #[test]
    fn spans_carry_the_opentelemetry_conventions_beside_the_plain_fields() {
        let spans = spans_of(async {
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
    fn spans_name_the_system_and_kind_the_backend_describes() {
        static SERVER: BackendInfo = BackendInfo::new("someone-elses")
            .schemes(&["else"])
            .db_system("else.db")
            .remote();
        static LOCAL: BackendInfo = BackendInfo::new("local-thing");
        let spans = spans_of(async {
            for backend in [&SERVER, &LOCAL] {
                let op = super::Op::new(backend, crate::Operation::Purge, None);
                op.run(async { Ok(()) }).await.expect("ok");
            }
        });
        let [server, local] = spans.as_slice() else {
            panic!("two spans expected: {spans:#?}");
        };
        assert_eq!(server["backend"], s("someone-elses"));
        assert_eq!(server["db.system.name"], s("else.db"));
        assert_eq!(server["otel.kind"], s("client"));
        // Without a system name of its own, a backend's name is its system name.
        assert_eq!(local["db.system.name"], s("local-thing"));
        assert_eq!(local["otel.kind"], s("internal"));
    }
}
