//! `agentmem memories`.

use std::sync::Arc;

use agentmem_core::{AgentMemory, MemoryFilter, MemoryKind, MemoryStore, Result};

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
    out.listing(&items, &["ID", "KIND", "KEY", "UPDATED", "TEXT"], |i| {
        vec![
            i.id.to_string(),
            i.kind.to_string(),
            i.key.clone().unwrap_or_default(),
            time(i.updated_at),
            snippet(&i.text, 80),
        ]
    })
}
