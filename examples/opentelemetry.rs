//! agentmem's `agentmem.op` spans exported as OpenTelemetry spans through `tracing-opentelemetry`,
//! printed by the stdout exporter, so it runs offline.
//!
//! ```sh
//! cargo run --example opentelemetry --features sqlite
//! ```
//!
//! Every store operation runs in an `agentmem.op` span at `DEBUG` level. Besides agentmem's own
//! fields (`backend`, `op`, `session`, `messages`, `duration_us`, `outcome`), the span carries
//! the names of OpenTelemetry's database and GenAI semantic conventions: `db.system.name`
//! (`sqlite` here), `db.operation.name`, `gen_ai.conversation.id` (the session id), and on
//! failure `error.type` and an error status. Server backends (PostgreSQL, Redis, MongoDB) make
//! `client` spans. In a real program, swap the stdout exporter for an OTLP one
//! (`opentelemetry-otlp`); nothing in agentmem changes.
//!
//! The example also keeps every exported span in memory and checks its names and attributes,
//! exiting non-zero when one is missing, so CI notices when the spans change.

use std::sync::{Arc, Mutex};

use opentelemetry::trace::{SpanKind, Status, TracerProvider as _};
use opentelemetry::Value;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use opentelemetry_sdk::Resource;
use tracing_subscriber::layer::SubscriberExt;

mod support;

const SECRET: &str = "This text never appears in a span.";

#[tokio::main]
async fn main() -> agentmem::Result<()> {
    let kept = Kept::default();
    let provider = SdkTracerProvider::builder()
        // What the user sees: each span printed as it ends.
        .with_simple_exporter(opentelemetry_stdout::SpanExporter::default())
        // What the example checks below.
        .with_simple_exporter(kept.clone())
        .with_resource(
            Resource::builder()
                .with_service_name("agentmem-example")
                .build(),
        )
        .build();
    let otel = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("agentmem"))
        // Leave out the source location and thread of each span: agentmem's own fields say more.
        .with_location(false)
        .with_threads(false);
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(otel))
        .map_err(|e| agentmem::Error::backend("install the subscriber").with_source(e))?;

    let dir =
        tempfile::tempdir().map_err(|e| agentmem::Error::backend("temp dir").with_source(e))?;
    let store = agentmem::open(&format!(
        "sqlite://{}",
        dir.path().join("agent.db").display()
    ))
    .await?;

    // The last operation fails: its span gets `error.type` and an error status.
    support::traced_operations(&*store, SECRET).await?;

    // Export what is left and stop; a program does this before it exits.
    provider
        .shutdown()
        .map_err(|e| agentmem::Error::backend("shut the tracer provider down").with_source(e))?;

    let spans = kept.0.lock().expect("no exporter panicked").clone();
    match check(&spans) {
        Ok(()) => {
            println!("checked {} exported span(s)", spans.len());
            Ok(())
        }
        Err(problem) => {
            eprintln!("opentelemetry example: {problem}");
            std::process::exit(1);
        }
    }
}

/// A span exporter that keeps what it is given, for [`check`].
#[derive(Debug, Default, Clone)]
struct Kept(Arc<Mutex<Vec<SpanData>>>);

impl SpanExporter for Kept {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.0.lock().expect("no exporter panicked").extend(batch);
        Ok(())
    }
}

/// The exported spans are agentmem's, with the attributes the README promises, and no message
/// text anywhere.
fn check(exported: &[SpanData]) -> Result<(), String> {
    for span in exported {
        if format!("{span:?}").contains(SECRET) {
            return Err(format!("message text reached the span `{}`", span.name));
        }
    }
    // Only agentmem's own spans: a driver may make spans of its own.
    let spans: Vec<&SpanData> = exported
        .iter()
        .filter(|span| span.name == agentmem::layer::SPAN_NAME)
        .collect();
    let op = |name: &str| {
        spans
            .iter()
            .find(|span| attribute(span, "op") == Some(&Value::from(name.to_string())))
            .copied()
            .ok_or_else(|| format!("no `{name}` span among {} exported", spans.len()))
    };
    let expect = |span: &SpanData, key: &str, want: Value| -> Result<(), String> {
        match attribute(span, key) {
            Some(got) if *got == want => Ok(()),
            got => Err(format!(
                "span `{}`: `{key}` is {got:?}, not {want:?}",
                span.name
            )),
        }
    };
    let text = |s: &str| Value::from(s.to_string());

    for span in &spans {
        expect(span, "backend", text("sqlite"))?;
        expect(span, "db.system.name", text("sqlite"))?;
        if span.span_kind != SpanKind::Internal {
            return Err(format!(
                "an embedded database's span is {:?}",
                span.span_kind
            ));
        }
        if attribute(span, "duration_us").is_none_or(|d| !matches!(d, Value::I64(_))) {
            return Err(format!(
                "no integer `duration_us` on {:?}",
                attribute(span, "op")
            ));
        }
    }

    let append = op("append")?;
    expect(append, "db.operation.name", text("append"))?;
    expect(append, "session", text("demo"))?;
    expect(append, "gen_ai.conversation.id", text("demo"))?;
    expect(append, "messages", Value::I64(2))?;
    expect(append, "outcome", text("ok"))?;
    if append.status != Status::Unset || attribute(append, "error.type").is_some() {
        return Err(format!(
            "a successful append reads as failed: {:?}",
            append.status
        ));
    }

    // The program's own load comes after the append. With feature `encryption` a store opened
    // without a key wears the no-key guard, whose reads before a write are spans too.
    let load = spans
        .iter()
        .find(|span| {
            attribute(span, "op") == Some(&text("load"))
                && attribute(span, "session") == Some(&text("demo"))
                && span.start_time >= append.end_time
        })
        .ok_or("no `load` span after the append")?;
    expect(load, "messages", Value::I64(1))?;

    let compact = op("compact")?;
    expect(compact, "gen_ai.conversation.id", text("missing"))?;
    expect(compact, "outcome", text("not found"))?;
    expect(compact, "error.type", text("not found"))?;
    if !matches!(compact.status, Status::Error { .. }) {
        return Err(format!(
            "the failed compact has status {:?}",
            compact.status
        ));
    }
    Ok(())
}

/// The value of the attribute `key` on `span`.
fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}
