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

use agentmem::{AgentMemoryExt, ErrorKind, Message, SessionId};
use tracing_subscriber::fmt::format::FmtSpan;

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

    let session: SessionId = "demo".parse()?;
    store
        .append(
            &session,
            &[
                Message::user("This text never appears in a span."),
                Message::assistant("Nor does this."),
            ],
        )
        .await?;
    let last = store.last_messages(&session, 1).await?;
    println!("loaded {} message(s)", last.len());

    // A failure is recorded as the span's outcome (here `not found`).
    let missing: SessionId = "missing".parse()?;
    let error = store
        .compact(&missing, &[])
        .await
        .expect_err("no such session");
    assert_eq!(error.kind(), ErrorKind::NotFound);

    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}
