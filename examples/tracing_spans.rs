//! The `tracing` spans agentmem emits, printed by `tracing-subscriber`'s `fmt` layer.
//!
//! ```sh
//! cargo run --example tracing_spans --features sqlite
//! ```
//!
//! Every store operation runs in an `agentmem.op` span (backend, op, session, messages,
//! duration_us, outcome) at `DEBUG` level; none holds message text, queries or passwords.
//! Output looks like:
//!
//! ```text
//! DEBUG agentmem.op{backend="sqlite" op="append" db.system.name="sqlite" db.operation.name="append" otel.kind="internal" session="demo" gen_ai.conversation.id="demo" messages=2 duration_us=412 outcome="ok"}: agentmem operation finished outcome="ok" duration_us=412
//! ```

use tracing_subscriber::fmt::format::FmtSpan;

mod support;

#[tokio::main]
async fn main() -> agentmem::Result<()> {
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        // Also print each span as it closes, with its recorded fields and timings.
        .with_span_events(FmtSpan::CLOSE)
        .with_target(false)
        .init();

    let dir = std::env::temp_dir().join(format!("agentmem-tracing-{}", std::process::id()));
    std::fs::create_dir_all(&dir)
        .map_err(|e| agentmem::Error::backend("temp dir").with_source(e))?;
    let store = agentmem::open(&format!("sqlite://{}", dir.join("agent.db").display())).await?;

    // The last operation fails: its span records that as its outcome (`not found`).
    support::traced_operations(&*store, "This text never appears in a span.").await?;

    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}
