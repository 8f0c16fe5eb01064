//! `agentmem workspace-id`.

use std::path::PathBuf;

use agentmem::workspace::{session_id, workspace_id, DEFAULT_AGENT_NAME};
use agentmem_core::{Error, Result};
use serde::Serialize;

use crate::output::Output;

#[derive(Serialize)]
struct WorkspaceReport {
    path: String,
    workspace_id: String,
    /// The workspace part of the memory scope of agents there (none for `global`).
    memory_workspace: Option<String>,
    agent: String,
    session_id: String,
}

/// Prints the workspace identity of `path` (default: the current folder) and the
/// workspace-scoped session id of `agent` there.
pub fn show(out: &mut Output, path: Option<PathBuf>, agent: Option<&str>) -> Result<()> {
    let path = match path {
        Some(p) => p,
        None => std::env::current_dir()
            .map_err(|e| Error::io("could not read the current folder", e))?,
    };
    if !path.exists() {
        return Err(Error::not_found(format!(
            "{}: no such folder",
            path.display()
        )));
    }
    let workspace = workspace_id(&path);
    let agent = agent
        .filter(|a| !a.is_empty())
        .unwrap_or(DEFAULT_AGENT_NAME);
    let report = WorkspaceReport {
        path: path.display().to_string(),
        workspace_id: workspace.to_string(),
        memory_workspace: workspace.scope_name(),
        agent: agent.to_string(),
        session_id: session_id(&workspace, Some(agent)).to_string(),
    };
    if out.json() {
        return out.json_value(&report);
    }
    out.line(format!("workspace: {}", report.workspace_id))?;
    if let Some(name) = &report.memory_workspace {
        out.line(format!("memories:  --workspace {name}"))?;
    }
    out.line(format!("agent:     {}", report.agent))?;
    out.line(format!("session:   {}", report.session_id))
}
