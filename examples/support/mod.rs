//! The store operations both tracing examples (`tracing_spans`, `opentelemetry`) run, so each
//! example shows only how its spans are seen.

use agentmem::{AgentMemory, AgentMemoryExt, ErrorKind, Message, SessionId};

/// Appends two messages to session `demo` (the first one's text is `user_text`), reads the
/// last one back, then compacts a session that does not exist: three operations, so three
/// `agentmem.op` spans, the last one a failure (`not found`).
pub async fn traced_operations(store: &dyn AgentMemory, user_text: &str) -> agentmem::Result<()> {
    let session: SessionId = "demo".parse()?;
    store
        .append(
            &session,
            &[
                Message::user(user_text),
                Message::assistant("Nor does this."),
            ],
        )
        .await?;
    let last = store.last_messages(&session, 1).await?;
    println!("loaded {} message(s)", last.len());

    let missing: SessionId = "missing".parse()?;
    let error = store
        .compact(&missing, &[])
        .await
        .expect_err("no such session");
    assert_eq!(error.kind(), ErrorKind::NotFound);
    Ok(())
}
