//! The child process of the reliability battery: opens a store from a URL and appends or
//! compacts, reporting each acknowledged step on stdout (see `agentmem_reliability::protocol`).
//!
//! ```text
//! agentmem-stress churn   <url> <session> <writer> <count> <batch> <compact_every>
//! agentmem-stress compact <url> <session> <label> <rounds> <summary:0|1> <pause_ms>
//! agentmem-stress remember <url> <writer> <count> <shared_keys>
//! ```
//!
//! `churn` appends messages `0..count` of `writer` (see `agentmem_reliability::tagged`) in
//! batches of `batch`, and after every `compact_every` batches (never when 0) compacts the
//! session, replacing it with one summary message. `compact` compacts the session `rounds`
//! times, `pause_ms` apart, waiting for the session to exist first. `remember` stores `count`
//! memory items of its own (`ack <id>` each), each followed, when `shared_keys` is above 0, by
//! an upsert of the fact under key `shared.k<i % shared_keys>` that every writer updates
//! (`ack <key>=<text>`), as auto-memory does. Any error ends the process with status 1 and
//! the error on stderr.
#![warn(missing_docs, clippy::unwrap_used)]

use std::error::Error;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use agentmem_core::{
    AgentMemory, ErrorKind, MemoryId, MemoryItem, MemoryKind, Message, MessageId, SessionId,
};
use agentmem_reliability::protocol::Event;
use agentmem_reliability::tagged;

fn emit(event: &Event) -> std::io::Result<()> {
    emit_all(std::slice::from_ref(event))
}

/// Writes the events' lines with one `write` and flushes: the parent may kill this process
/// right after the store acknowledged, and the acks of one batch must reach it together
/// (a pipe write of at most `PIPE_BUF` bytes is atomic).
fn emit_all(events: &[Event]) -> std::io::Result<()> {
    let mut text = String::new();
    for e in events {
        text.push_str(&e.to_line());
        text.push('\n');
    }
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

fn arg<T: std::str::FromStr>(args: &[String], i: usize, what: &str) -> Result<T, String> {
    args.get(i)
        .ok_or_else(|| format!("missing argument <{what}>"))?
        .parse()
        .map_err(|_| format!("bad argument <{what}>: {:?}", args[i]))
}

async fn churn(store: &dyn AgentMemory, args: &[String]) -> Result<(), Box<dyn Error>> {
    let session: SessionId = arg(args, 0, "session")?;
    let writer: String = arg(args, 1, "writer")?;
    let count: u64 = arg(args, 2, "count")?;
    let batch: u64 = arg::<u64>(args, 3, "batch")?.max(1);
    let compact_every: u64 = arg(args, 4, "compact_every")?;
    let mut seq = 0;
    let mut batches = 0u64;
    let mut summaries = 0u64;
    while seq < count {
        let end = (seq + batch).min(count);
        let messages: Vec<Message> = (seq..end).map(|i| tagged::message(&writer, i)).collect();
        store.append(&session, &messages).await?;
        let acks: Vec<Event> = messages
            .iter()
            .map(|m| Event::Ack(m.id.to_string()))
            .collect();
        emit_all(&acks)?;
        seq = end;
        batches += 1;
        if compact_every > 0 && batches.is_multiple_of(compact_every) {
            let summary_id = format!("{writer}-sum-{summaries}");
            summaries += 1;
            let summary = Message::system(format!("summary {summary_id}"))
                .with_id(MessageId::new(&summary_id)?);
            let info = store.compact(&session, &[summary]).await?;
            emit(&Event::Compacted {
                archive: info.id.to_string(),
                summary: Some(summary_id),
            })?;
        }
    }
    Ok(())
}

async fn compact(store: &dyn AgentMemory, args: &[String]) -> Result<(), Box<dyn Error>> {
    let session: SessionId = arg(args, 0, "session")?;
    let label: String = arg(args, 1, "label")?;
    let rounds: u64 = arg(args, 2, "rounds")?;
    let with_summary: u8 = arg(args, 3, "summary")?;
    let pause = Duration::from_millis(arg(args, 4, "pause_ms")?);
    let mut done = 0;
    while done < rounds {
        let summary_id = format!("{label}-sum-{done}");
        let replacement: Vec<Message> = if with_summary == 1 {
            vec![Message::system(format!("summary {summary_id}"))
                .with_id(MessageId::new(&summary_id)?)]
        } else {
            Vec::new()
        };
        match store.compact(&session, &replacement).await {
            Ok(info) => {
                emit(&Event::Compacted {
                    archive: info.id.to_string(),
                    summary: (with_summary == 1).then_some(summary_id),
                })?;
                done += 1;
            }
            // The appender has not created the session yet.
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
        tokio::time::sleep(pause).await;
    }
    Ok(())
}

async fn remember(store: &dyn AgentMemory, args: &[String]) -> Result<(), Box<dyn Error>> {
    let writer: String = arg(args, 0, "writer")?;
    let count: u64 = arg(args, 1, "count")?;
    let shared_keys: u64 = arg(args, 2, "shared_keys")?;
    for i in 0..count {
        let mut own = MemoryItem::new(MemoryKind::LongTerm, format!("{writer} note {i}"));
        own.id = MemoryId::new(format!("{writer}-m{i:05}"))?;
        store.put_memory(&own).await?;
        emit(&Event::Ack(own.id.to_string()))?;
        if shared_keys > 0 {
            let key = format!("shared.k{}", i % shared_keys);
            let text = format!("{writer}:{i}");
            store
                .put_memory(
                    &MemoryItem::new(MemoryKind::Fact, text.as_str()).with_key(key.as_str()),
                )
                .await?;
            emit(&Event::Ack(format!("{key}={text}")))?;
        }
    }
    Ok(())
}

/// Runs one command line: opens the store at `<url>` and says `ready`, does the command's
/// work with the arguments after the url, and says `done`.
async fn run(args: &[String]) -> Result<(), Box<dyn Error>> {
    const USAGE: &str = "usage: agentmem-stress churn|compact|remember <url> …";
    let (command, args) = args.split_first().ok_or(USAGE)?;
    if !matches!(command.as_str(), "churn" | "compact" | "remember") {
        return Err(USAGE.into());
    }
    let url: String = arg(args, 0, "url")?;
    let store = agentmem::open(&url).await?;
    emit(&Event::Ready)?;
    let args = &args[1..];
    // The command was checked before the store was opened: the last arm is `remember`.
    match command.as_str() {
        "churn" => churn(&*store, args).await?,
        "compact" => compact(&*store, args).await?,
        _ => remember(&*store, args).await?,
    }
    emit(&Event::Done)?;
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("agentmem-stress: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("agentmem-stress: {e}");
            ExitCode::FAILURE
        }
    }
}
