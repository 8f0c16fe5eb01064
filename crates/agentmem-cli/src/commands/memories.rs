//! `agentmem memories`.

use std::sync::Arc;

use agentmem_core::{AgentMemory, MemoryFilter, MemoryKind, Result};

use crate::output::{snippet, time, Output};

/// Lists memory items, oldest first.
pub async fn list(
    store: &Arc<dyn AgentMemory>,
    out: &mut Output,
    kind: Option<MemoryKind>,
) -> Result<()> {
    let filter = MemoryFilter {
        kind,
        ..MemoryFilter::default()
    };
    let items = store.list_memories(&filter).await?;
    if out.json() {
        return out.json_value(&items);
    }
    let rows: Vec<Vec<String>> = items
        .iter()
        .map(|i| {
            vec![
                i.id.clone(),
                i.kind.to_string(),
                i.key.clone().unwrap_or_default(),
                time(i.updated_at),
                snippet(&i.text, 80),
            ]
        })
        .collect();
    out.table(&["ID", "KIND", "KEY", "UPDATED", "TEXT"], &rows)
}
