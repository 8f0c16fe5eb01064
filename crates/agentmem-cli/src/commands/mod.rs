//! One function per command; [`run`] dispatches.

mod doctor;
mod memories;
mod migrate;
mod sessions;
mod transfer;
mod workspace;

use std::sync::Arc;

use agentmem_core::{AgentMemory, Error, Result, RetentionPolicy};

use crate::cli::{Cli, Command, DEFAULT_STORE};
use crate::output::Output;

/// Runs one parsed command line.
pub async fn run(cli: Cli, out: &mut Output) -> Result<()> {
    let url = cli
        .store
        .clone()
        .unwrap_or_else(|| DEFAULT_STORE.to_string());
    match cli.command {
        Command::Sessions => sessions::list(&open(&url).await?, out).await,
        Command::Show {
            session,
            limit,
            format,
        } => sessions::show(&open(&url).await?, out, &session, limit, format).await,
        Command::Append {
            session,
            role,
            text,
        } => sessions::append(&open(&url).await?, out, &session, &role, &text).await,
        Command::Search {
            query,
            session,
            limit,
        } => sessions::search(&open(&url).await?, out, &query, session, limit).await,
        Command::Compact {
            session,
            summary,
            auto,
        } => sessions::compact(&open(&url).await?, out, &session, summary.as_deref(), auto).await,
        Command::Archives { session } => {
            sessions::archives(&open(&url).await?, out, &session).await
        }
        Command::Memories {
            kind,
            agent,
            workspace,
            owner,
            global,
            exact,
        } => {
            let scope = memories::scope_filter(agent, workspace, owner, global, exact);
            memories::list(&open(&url).await?, out, kind, scope).await
        }
        Command::Delete { session } => sessions::delete(&open(&url).await?, out, &session).await,
        Command::Purge {
            older_than,
            keep,
            memories_older_than,
        } => {
            let policy = RetentionPolicy {
                max_age: older_than,
                max_sessions: keep,
                max_memory_age: memories_older_than,
            };
            sessions::purge(&open(&url).await?, out, &policy).await
        }
        Command::WorkspaceId { path, agent } => workspace::show(out, path, agent.as_deref()),
        Command::Doctor { repair, backup_dir } => doctor::run(&url, out, repair, backup_dir).await,
        Command::Export {
            session,
            all,
            format,
            output,
        } => {
            let store = open(&url).await?;
            transfer::export(
                &store,
                out,
                session.filter(|_| !all),
                format,
                output.as_deref(),
            )
            .await
        }
        Command::Import {
            path,
            format,
            session,
        } => transfer::import(&open(&url).await?, out, &path, format, session).await,
        Command::Migrate {
            from,
            to,
            dry_run,
            batch_size,
        } => migrate::run(out, &from, &to, dry_run, batch_size).await,
    }
}

/// Opens a store, naming it (password hidden) when that fails.
pub async fn open(url: &str) -> Result<Arc<dyn AgentMemory>> {
    agentmem::open(url).await.map_err(|e| store_error(url, e))
}

/// An error about the store at `url`, keeping `e`'s kind and `e` as the source.
pub fn store_error(url: &str, e: Error) -> Error {
    Error::new(e.kind(), format!("store {}", redact(url))).with_source(e)
}

/// `url` with any password replaced by `***`.
pub use agentmem_core::redact_url as redact;
