//! `tracing` spans for backend operations, the same fields on every backend.
//!
//! Every [`AgentMemory`](crate::AgentMemory) method of every backend runs inside one span named
//! `agentmem.op` at `DEBUG` level with these fields:
//!
//! | field | value |
//! |---|---|
//! | `backend` | `file`, `sqlite`, `redis`, `postgres`, `mongodb`, `memory` |
//! | `op` | the trait method: `append`, `load`, `compact`, … |
//! | `session` | the session id, when the operation has one |
//! | `messages` | messages written, or read back (recorded when the operation ends) |
//! | `duration_us` | wall time of the operation, in microseconds |
//! | `outcome` | `ok`, or the [`ErrorKind`](crate::ErrorKind) of the failure (`not found`, …) |
//!
//! Spans never hold message text, memory text, queries or connection strings: session ids
//! are names the caller chose as keys, the rest are counts. When the operation ends, one
//! `DEBUG` event (`agentmem operation finished`) repeats the outcome and duration inside the
//! span, so a plain `fmt` subscriber prints them without span-close events.
//!
//! ```
//! use agentmem_core::trace::Op;
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let stored: agentmem_core::Result<Vec<u8>> = Op::new("memory", "load", None)
//!     .run_counted(async { Ok(vec![1, 2, 3]) }, Vec::len)
//!     .await;
//! assert_eq!(stored.unwrap().len(), 3);
//! # });
//! ```

use std::future::Future;
use std::time::Instant;

use tracing::field::Empty;
use tracing::{Instrument, Span};

use crate::error::Result;
use crate::name::SessionId;

/// The span name every backend operation runs in.
pub const SPAN_NAME: &str = "agentmem.op";

/// One backend operation about to run: its span and its start time.
#[derive(Debug)]
#[must_use = "an Op does nothing until `run` is awaited"]
pub struct Op {
    span: Span,
    backend: &'static str,
    op: &'static str,
}

impl Op {
    /// A span for `op` on `backend`, about `session` when there is one.
    pub fn new(backend: &'static str, op: &'static str, session: Option<&SessionId>) -> Op {
        let span = tracing::debug_span!(
            "agentmem.op",
            backend,
            op,
            session = Empty,
            messages = Empty,
            duration_us = Empty,
            outcome = Empty,
        );
        if let Some(session) = session {
            span.record("session", session.as_str());
        }
        Op { span, backend, op }
    }

    /// Records how many messages the operation writes.
    pub fn messages(self, count: usize) -> Op {
        self.span.record("messages", count);
        self
    }

    /// Runs `operation` inside the span, then records its duration and outcome. Errors that do
    /// not say which backend or operation they came from are labelled with this one.
    pub async fn run<T>(self, operation: impl Future<Output = Result<T>>) -> Result<T> {
        self.run_inner(operation, None::<fn(&T) -> usize>).await
    }

    /// Like [`run`](Self::run), also recording `count(&value)` as the number of messages
    /// read back (for loads and searches).
    pub async fn run_counted<T>(
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
        let started = Instant::now();
        let result = operation.instrument(self.span.clone()).await;
        let duration_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.span.record("duration_us", duration_us);
        let _entered = self.span.enter();
        match result {
            Ok(value) => {
                if let Some(count) = count {
                    self.span.record("messages", count(&value));
                }
                self.span.record("outcome", "ok");
                tracing::debug!(outcome = "ok", duration_us, "agentmem operation finished");
                Ok(value)
            }
            Err(mut error) => {
                let outcome = error.kind().as_str();
                self.span.record("outcome", outcome);
                tracing::debug!(outcome, duration_us, "agentmem operation finished");
                if error.backend_name().is_none() {
                    error = error.with_backend(self.backend);
                }
                if error.operation().is_none() {
                    error = error.with_operation(self.op);
                }
                Err(error)
            }
        }
    }
}
