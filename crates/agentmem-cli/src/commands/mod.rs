//! One function per command; [`run`] dispatches, opening the store of every command that works
//! on the one `--store` names in one place.

mod doctor;
mod lifecycle;
mod mcp;
mod memories;
mod migrate;
mod recall;
mod sessions;
mod threads;
mod transfer;
mod workspace;

use std::path::PathBuf;
use std::sync::Arc;

use agentmem::crypt::{MasterKey, KEY_ENV};
use agentmem_core::{AgentMemory, Error, MemoryFilter, MessageQuery, Result, RetentionPolicy};

use crate::cli::{Cli, Command, StoreCommand, DEFAULT_STORE};
use crate::output::Output;

/// Runs one parsed command line.
pub async fn run(cli: Cli, out: &mut Output) -> Result<()> {
    let url = cli
        .store
        .clone()
        .unwrap_or_else(|| DEFAULT_STORE.to_string());
    let keys = Keys {
        file: cli.encryption_key_file.clone(),
    };
    let keys = &keys;
    match cli.command {
        Command::Store(command) => on_store(&open(&url, keys).await?, &url, out, command).await,
        Command::Rekey { new_key_file } => {
            let old = keys.current()?.ok_or_else(|| {
                Error::invalid_input(format!(
                    "rekey needs the current key: give --encryption-key-file or set {KEY_ENV}"
                ))
            })?;
            lifecycle::rekey_store(open_raw(&url).await?, out, &old, &new_key_file).await
        }
        Command::WorkspaceId { path, agent } => workspace::show(out, path, agent.as_deref()),
        Command::Doctor { repair, backup_dir } => {
            doctor::run(&url, keys, out, repair, backup_dir).await
        }
        Command::Migrate {
            from,
            to,
            to_key_file,
            decrypt,
            dry_run,
            batch_size,
        } => {
            let to_key = migrate::ToKey {
                file: to_key_file,
                decrypt,
            };
            migrate::run(out, keys, &from, &to, &to_key, dry_run, batch_size).await
        }
        Command::Mcp {
            http,
            allow_origins,
            allow_hosts,
            token_file,
        } => {
            let args = mcp::McpArgs {
                http,
                allow_origins,
                allow_hosts,
                token_file,
            };
            mcp::run(&url, keys, args).await
        }
    }
}

/// Runs a command on the store `--store` names (`url`), opened once by [`run`].
async fn on_store(
    store: &Arc<dyn AgentMemory>, url: &str, out: &mut Output, command: StoreCommand,
) -> Result<()> {
    match command {
        StoreCommand::Sessions { owner, tags } => sessions::list(store, out, owner, tags).await,
        StoreCommand::Fork { session, new, at } => {
            lifecycle::fork(store, out, &session, &new, at.as_ref()).await
        }
        StoreCommand::Rewind { session, last, to } => {
            lifecycle::rewind(store, out, &session, last, to).await
        }
        StoreCommand::Tag {
            session,
            title,
            owner,
            tags,
        } => lifecycle::tag(store, out, &session, title, owner, tags).await,
        StoreCommand::Expire { session, ttl } => lifecycle::expire(store, out, &session, ttl).await,
        StoreCommand::Show {
            session,
            limit,
            format,
        } => sessions::show(store, out, &session, limit, format).await,
        StoreCommand::Append {
            session,
            role,
            text,
        } => sessions::append(store, out, &session, &role, &text).await,
        StoreCommand::Search {
            query,
            session,
            limit,
            mode,
        } => {
            let scope = MessageQuery { session, limit };
            recall::search_messages(store, url, out, &query, scope, mode).await
        }
        StoreCommand::Compact {
            session,
            summary,
            auto,
        } => sessions::compact(store, out, &session, summary.as_deref(), auto).await,
        StoreCommand::Archives { session } => sessions::archives(store, out, &session).await,
        StoreCommand::Threads => threads::list(store, out).await,
        StoreCommand::Thread { thread, ns, limit } => {
            threads::show(store, out, &thread, ns, limit).await
        }
        StoreCommand::ForkThread { thread, new, at } => {
            threads::fork(store, out, &thread, &new, at.as_ref()).await
        }
        StoreCommand::Memories {
            kind,
            agent,
            workspace,
            owner,
            global,
            exact,
            search,
            mode,
            limit,
        } => {
            let scope = memories::scope_filter(agent, workspace, owner, global, exact);
            match search {
                Some(query) => {
                    let filter = MemoryFilter { kind, scope, limit };
                    recall::search_memories(store, url, out, &query, &filter, mode).await
                }
                None => memories::list(store, out, kind, scope).await,
            }
        }
        StoreCommand::Reindex { all } => recall::reindex(store, url, out, all).await,
        StoreCommand::Delete { session } => sessions::delete(store, out, &session).await,
        StoreCommand::Purge {
            older_than,
            keep,
            memories_older_than,
        } => {
            let policy = RetentionPolicy {
                max_age: older_than,
                max_sessions: keep,
                max_memory_age: memories_older_than,
            };
            sessions::purge(store, out, &policy).await
        }
        StoreCommand::Export {
            session,
            all,
            format,
            output,
            decrypt,
        } => {
            let session = session.filter(|_| !all);
            transfer::export(store, out, session, format, output.as_deref(), decrypt).await
        }
        StoreCommand::Import {
            path,
            format,
            session,
        } => transfer::import(store, out, &path, format, session).await,
    }
}

/// Where the encryption key comes from: `--encryption-key-file`, else
/// `AGENTMEM_ENCRYPTION_KEY`, else none.
#[derive(Debug, Clone, Default)]
pub struct Keys {
    /// The file `--encryption-key-file` names.
    pub file: Option<PathBuf>,
}

impl Keys {
    /// The key given, if any (read anew on each call: only commands that open a store ask).
    pub fn current(&self) -> Result<Option<MasterKey>> {
        agentmem::configured_key(self.file.as_deref())
    }
}

/// Opens a store, naming it (password hidden) when that fails, as
/// [`agentmem::open_with_key_file`] does: a URL naming its own key with that key
/// (`--encryption-key-file` as well is refused), else with the key given, else wearing the
/// layer that refuses encrypted records.
pub async fn open(url: &str, keys: &Keys) -> Result<Arc<dyn AgentMemory>> {
    agentmem::open_with_key_file(url, keys.file.as_deref())
        .await
        .map_err(|e| store_error(url, e))
}

/// Opens a store as it is, without an encryption layer, not even the one refusing an
/// encrypted store (for `rekey`, which takes both keys from its flags: a URL naming a key is
/// refused).
pub async fn open_raw(url: &str) -> Result<Arc<dyn AgentMemory>> {
    if agentmem::url_names_key(url)? {
        return Err(Error::invalid_input(format!(
            "store {}: rekey reads the old and new keys from its flags; take key_file or key \
             off the store URL",
            redact(url)
        )));
    }
    agentmem::open_unguarded(url)
        .await
        .map_err(|e| store_error(url, e))
}

/// An error about the store at `url`, keeping `e`'s kind and `e` as the source.
pub fn store_error(url: &str, e: Error) -> Error {
    Error::new(e.kind(), format!("store {}", redact(url))).with_source(e)
}

/// `url` with any password replaced by `***`.
pub use agentmem_core::redact_url as redact;
