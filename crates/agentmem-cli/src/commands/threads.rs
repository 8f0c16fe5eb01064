//! Checkpoint thread commands: `threads`, `thread`, `fork-thread`.

use std::sync::Arc;

use agentmem_core::{
    AgentMemory, AgentMemoryExt, CheckpointId, CheckpointNs, CheckpointQuery, CheckpointTuple,
    Error, Result, ThreadId,
};
use serde::Serialize;
use serde_json::Value;

use crate::output::{count, printable, time, Output};

/// `threads`: every thread holding a checkpoint, one exact id a line (control characters
/// escaped for the terminal); with `--json`, each thread with its checkpoint count and last
/// update.
pub async fn list(store: &Arc<dyn AgentMemory>, out: &mut Output) -> Result<()> {
    let threads = store.list_threads().await?;
    if out.json() {
        return out.json_value(&threads);
    }
    for info in &threads {
        out.line(printable(info.thread.as_str()))?;
    }
    Ok(())
}

/// One checkpoint as `thread` shows it.
#[derive(Debug, Serialize)]
struct Row<'a> {
    id: &'a CheckpointId,
    ns: &'a CheckpointNs,
    step: Option<&'a Value>,
    source: Option<&'a Value>,
    parent: Option<&'a CheckpointId>,
    created_at: chrono::DateTime<chrono::Utc>,
    writes: usize,
}

impl<'a> Row<'a> {
    fn of(tuple: &'a CheckpointTuple) -> Self {
        let c = &tuple.checkpoint;
        Row {
            id: &c.key.id,
            ns: &c.key.ns,
            step: c.metadata.get("step"),
            source: c.metadata.get("source"),
            parent: c.parent.as_ref(),
            created_at: c.created_at,
            writes: tuple.writes.len(),
        }
    }
}

fn shown(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => String::new(),
    }
}

/// `thread ID`: its checkpoints newest first (every namespace, or `ns`'s): id, namespace,
/// step, source, parent, time, pending writes. `NotFound` when it holds none.
pub async fn show(
    store: &Arc<dyn AgentMemory>, out: &mut Output, thread: &ThreadId, ns: Option<CheckpointNs>,
    limit: Option<usize>,
) -> Result<()> {
    let query = CheckpointQuery {
        ns,
        limit,
        ..CheckpointQuery::thread(thread.clone())
    };
    let tuples = store.list_checkpoints(&query).await?;
    if tuples.is_empty() && limit != Some(0) {
        return Err(Error::not_found(format!(
            "thread {:?} holds no checkpoint{}",
            thread.as_str(),
            query
                .ns
                .as_ref()
                .map(|ns| format!(" in namespace {:?}", ns.as_str()))
                .unwrap_or_default()
        )));
    }
    let rows: Vec<Row<'_>> = tuples.iter().map(Row::of).collect();
    let columns = [
        "CHECKPOINT",
        "NAMESPACE",
        "STEP",
        "SOURCE",
        "PARENT",
        "CREATED",
        "WRITES",
    ];
    out.listing(&rows, &columns, |r| {
        vec![
            r.id.to_string(),
            r.ns.to_string(),
            shown(r.step),
            shown(r.source),
            r.parent.map(ToString::to_string).unwrap_or_default(),
            time(r.created_at),
            r.writes.to_string(),
        ]
    })
}

/// `fork-thread SOURCE NEW [--at CHECKPOINT]`: the new thread holds the source's checkpoints
/// up to and including `at` (all of them without it).
pub async fn fork(
    store: &Arc<dyn AgentMemory>, out: &mut Output, source: &ThreadId, target: &ThreadId,
    at: Option<&CheckpointId>,
) -> Result<()> {
    let copied = store.fork_thread(source, target, at).await?;
    if out.json() {
        return out.json_value(&serde_json::json!({
            "source": source, "thread": target, "checkpoints": copied
        }));
    }
    out.line(format!(
        "forked {} into {} ({})",
        printable(source.as_str()),
        printable(target.as_str()),
        count(copied, "checkpoint")
    ))
}
