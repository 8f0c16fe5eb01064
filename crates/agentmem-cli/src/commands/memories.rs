//! `agentmem memories`.

use std::sync::Arc;

use agentmem_core::{
    AgentMemory, MemoryFilter, MemoryKind, MemoryScope, MemoryStore, Result, ScopeFilter,
};

use crate::output::{snippet, time, Output};

/// The scope filter the options ask for: every scope without any, the global scope alone
/// with `global`, else what the scope given sees (that scope alone with `exact`).
pub fn scope_filter(
    agent: Option<String>, workspace: Option<String>, owner: Option<String>, global: bool,
    exact: bool,
) -> ScopeFilter {
    let scope = MemoryScope {
        agent,
        workspace,
        owner,
    };
    if global {
        ScopeFilter::Exactly(MemoryScope::global())
    } else if scope.is_global() {
        ScopeFilter::All
    } else if exact {
        ScopeFilter::Exactly(scope)
    } else {
        ScopeFilter::VisibleFrom(scope)
    }
}

/// Lists memory items of `kind` and `scope`, oldest first.
pub async fn list(
    store: &Arc<dyn AgentMemory>, out: &mut Output, kind: Option<MemoryKind>, scope: ScopeFilter,
) -> Result<()> {
    let filter = MemoryFilter {
        kind,
        scope,
        ..MemoryFilter::default()
    };
    let items = store.list_memories(&filter).await?;
    let columns = ["ID", "KIND", "SCOPE", "KEY", "UPDATED", "EXPIRES", "TEXT"];
    out.listing(&items, &columns, |i| {
        vec![
            i.id.to_string(),
            i.kind.to_string(),
            i.scope.to_string(),
            i.key.clone().unwrap_or_default(),
            time(i.updated_at),
            i.expires_at.map(time).unwrap_or_default(),
            snippet(&i.text, 80),
        ]
    })
}
