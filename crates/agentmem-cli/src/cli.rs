//! The command line, as clap parses it.

use std::path::PathBuf;
use std::time::Duration;

use agentmem::recall::SearchMode;
use agentmem_core::{CheckpointId, CheckpointNs, MemoryKind, MessageId, SessionId, ThreadId};
use clap::{ArgGroup, Parser, Subcommand, ValueEnum};

use agentmem_formats::Format;

/// The store used when neither `--store` nor `AGENTMEM_STORE` names one: the file store in the
/// agentmem home (`$AGENTMEM_HOME`, else `$HOME/.agentmem`).
pub const DEFAULT_STORE: &str = "file://";

/// Inspect, repair, export, import and migrate agent memory on any agentmem store.
#[derive(Debug, Parser)]
#[command(name = "agentmem", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// The store URL: file://, sqlite://, redis://, postgres://, mongodb:// [default: the file
    /// store in $AGENTMEM_HOME, else ~/.agentmem]
    #[arg(
        long,
        global = true,
        env = "AGENTMEM_STORE",
        value_name = "URL",
        hide_env_values = true
    )]
    pub store: Option<String>,

    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,

    /// Encrypt and decrypt with the key in this file (32 bytes in base64) [default: the key in
    /// $AGENTMEM_ENCRYPTION_KEY; without either, an encrypted store is refused]
    #[arg(long, global = true, value_name = "PATH")]
    pub encryption_key_file: Option<PathBuf>,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// The commands that work on the store `--store` names.
    #[command(flatten)]
    Store(StoreCommand),
    /// Re-encrypt every session, archive and memory item under a new key.
    ///
    /// The current key is the one `--encryption-key-file` or $AGENTMEM_ENCRYPTION_KEY gives.
    /// Run it while nothing else writes the store.
    Rekey {
        /// The file holding the new key (32 bytes in base64).
        #[arg(long, value_name = "PATH")]
        new_key_file: PathBuf,
    },
    /// Show the workspace identity of a folder and the session id an agent gets there.
    WorkspaceId {
        /// The folder [default: the current one].
        path: Option<PathBuf>,
        /// The agent's name [default: agent].
        #[arg(long, value_name = "NAME")]
        agent: Option<String>,
    },
    /// Check the store: schema version, counts (sessions, memory items, checkpoints, knowledge
    /// graph entities and relations), torn or corrupt records, and, when the store URL names
    /// an embedder, how far the vectors lag behind the texts.
    Doctor {
        /// Repair what can be repaired, keeping a backup of every file changed.
        #[arg(long)]
        repair: bool,
        /// Where backups go [default: STORE_FOLDER/backups/doctor-TIME].
        #[arg(long, value_name = "DIR", requires = "repair")]
        backup_dir: Option<PathBuf>,
    },
    /// Copy every session, archive, memory item, checkpoint and the knowledge graph from one
    /// store to another.
    ///
    /// The graph is merged into the destination's: entities of new names are created, entities
    /// it holds gain the observations they lack, relations it lacks are added.
    ///
    /// The source is read with its URL's key (key_file=PATH, key=env), else the key
    /// --encryption-key-file or $AGENTMEM_ENCRYPTION_KEY gives. The destination is written
    /// with its URL's key, else --to-key-file, else that same key, and is then encrypted with
    /// it. An encrypted source is never written into a destination without a key, unless
    /// --decrypt asks for plaintext.
    Migrate {
        /// The source store URL.
        #[arg(long, value_name = "URL")]
        from: String,
        /// The destination store URL.
        #[arg(long, value_name = "URL")]
        to: String,
        /// Encrypt the destination with the key in this file (32 bytes in base64).
        #[arg(long, value_name = "PATH", conflicts_with = "decrypt")]
        to_key_file: Option<PathBuf>,
        /// Write an encrypted source's records into the destination in plaintext (opened
        /// without a key).
        #[arg(long)]
        decrypt: bool,
        /// Show what would be copied, copy nothing.
        #[arg(long)]
        dry_run: bool,
        /// At most N messages per write.
        #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
        batch_size: u64,
    },
    /// Serve the store to MCP clients (Claude Desktop, IDE agents): the reference memory
    /// server's knowledge-graph tools and agentmem's session and memory tools.
    ///
    /// Over standard input and output (nothing but JSON-RPC is written to standard output);
    /// with --http, over streamable HTTP at http://ADDR/mcp, accepting loopback Host and
    /// browser Origin values and those allowed below. The store is opened on first use, and
    /// again while that fails.
    ///
    /// When the store URL names an embedder (`embedder=local`, …), `search_memory` searches by
    /// meaning too (its `mode` argument; hybrid by default) and a background indexer embeds
    /// what is written.
    Mcp {
        /// Serve streamable HTTP at ADDR (HOST:PORT; a bare PORT listens on 127.0.0.1).
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
        /// Also accept requests from browser pages of this origin (scheme://host:port, or
        /// :* for any port; repeat).
        #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
        allow_origins: Vec<String>,
        /// Also accept this Host header (HOST or HOST:PORT; repeat): the names clients use
        /// to reach a server not on loopback.
        #[arg(long = "allow-host", value_name = "HOST", requires = "http")]
        allow_hosts: Vec<String>,
        /// Require `Authorization: Bearer TOKEN` on every request, TOKEN being this file's
        /// content (surrounding whitespace removed).
        #[arg(long, value_name = "PATH", requires = "http")]
        token_file: Option<PathBuf>,
    },
}

/// The commands that work on the one store `--store` names, opened (with the encryption layer
/// the key given calls for) before the command runs.
#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// List sessions: id, message count, last update, owner, tags, title.
    Sessions {
        /// Only the sessions of this owner.
        #[arg(long, value_name = "O")]
        owner: Option<String>,
        /// Only the sessions tagged KEY=VALUE (repeat: every tag must match).
        #[arg(long = "tag", value_name = "K=V", value_parser = parse_tag)]
        tags: Vec<(String, String)>,
    },
    /// Print a session's messages.
    Show {
        /// The session id.
        #[arg(value_parser = parse_session)]
        session: SessionId,
        /// Only the last N messages (never starting with an orphaned tool result).
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ShowFormat::Text)]
        format: ShowFormat,
    },
    /// Append one message to a session (creating it when missing).
    Append {
        /// The session id.
        #[arg(value_parser = parse_session)]
        session: SessionId,
        /// Who says it: system, user, assistant, tool, or an agent's name.
        #[arg(long)]
        role: String,
        /// The message text; `-` reads it from standard input.
        text: String,
    },
    /// Search messages, best match first.
    ///
    /// By keyword: messages holding any word of the query. When the store URL names an
    /// embedder that embeds messages (`embedder=local&embed=messages`; run `agentmem reindex`
    /// first), by meaning too: `--mode hybrid` (the default then) fuses both rankings,
    /// `--mode semantic` ranks by meaning alone.
    Search {
        /// Words to look for (any of them), or what the messages are about.
        query: String,
        /// Only this session.
        #[arg(long, value_parser = parse_session)]
        session: Option<SessionId>,
        /// At most N hits.
        #[arg(long, value_name = "N", default_value_t = 10)]
        limit: usize,
        /// keyword, semantic or hybrid [default: hybrid when the store URL embeds messages,
        /// else keyword].
        #[arg(long, value_parser = parse_mode)]
        mode: Option<SearchMode>,
    },
    /// Archive a session's messages and replace them with a summary.
    #[command(group(ArgGroup::new("how").required(true).args(["summary", "auto"])))]
    Compact {
        /// The session id.
        #[arg(value_parser = parse_session)]
        session: SessionId,
        /// The summary to keep, as one system message.
        #[arg(long)]
        summary: Option<String>,
        /// Summarize without a model (extractive: the key sentences of the conversation).
        #[arg(long)]
        auto: bool,
    },
    /// Copy a session's messages (up to and including one), metadata and labels into a new
    /// session; the source is unchanged.
    Fork {
        /// The session to copy.
        #[arg(value_parser = parse_session)]
        session: SessionId,
        /// The new session's id (it must not exist).
        #[arg(value_parser = parse_session)]
        new: SessionId,
        /// Copy the messages up to and including this one [default: all of them].
        #[arg(long, value_name = "MESSAGE_ID", value_parser = parse_message)]
        at: Option<MessageId>,
    },
    /// Remove messages from the end of a session and print them.
    #[command(group(ArgGroup::new("where").required(true).args(["last", "to"])))]
    Rewind {
        /// The session id.
        #[arg(value_parser = parse_session)]
        session: SessionId,
        /// Remove the last N messages (all of them when there are fewer).
        #[arg(long, value_name = "N")]
        last: Option<usize>,
        /// Remove every message after this one, keeping it.
        #[arg(long, value_name = "MESSAGE_ID", value_parser = parse_message)]
        to: Option<MessageId>,
    },
    /// Set a session's title, owner and tags (in one step; tags not named stay).
    #[command(group(ArgGroup::new("labels").required(true).multiple(true).args(["title", "owner", "tags"])))]
    Tag {
        /// The session id.
        #[arg(value_parser = parse_session)]
        session: SessionId,
        /// The title.
        #[arg(long, value_name = "T")]
        title: Option<String>,
        /// The owner (the end user the session belongs to).
        #[arg(long, value_name = "O")]
        owner: Option<String>,
        /// Set tag KEY to VALUE (repeatable).
        #[arg(long = "tag", value_name = "K=V", value_parser = parse_tag)]
        tags: Vec<(String, String)>,
    },
    /// Make a session expire (be deleted for every reader) after a while.
    Expire {
        /// The session id.
        #[arg(value_parser = parse_session)]
        session: SessionId,
        /// How long from now, like 30s, 15m, 2h or 7d.
        #[arg(long = "in", value_name = "DURATION", value_parser = parse_duration)]
        ttl: Duration,
    },
    /// List the checkpoint threads (LangGraph's `thread_id`s), one id a line.
    Threads,
    /// Show a thread's checkpoints, newest first: id, namespace, step, source, parent.
    Thread {
        /// The thread id (any text; `--` before it when it starts with `-`).
        #[arg(value_parser = parse_thread)]
        thread: ThreadId,
        /// Only this namespace (`""` for the root graph) [default: every namespace].
        #[arg(long, value_name = "NS", value_parser = parse_ns)]
        ns: Option<CheckpointNs>,
        /// Only the newest N.
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
    },
    /// Copy a thread's checkpoints (up to and including one) into a new thread; the source is
    /// unchanged.
    ForkThread {
        /// The thread to copy.
        #[arg(value_parser = parse_thread)]
        thread: ThreadId,
        /// The new thread's id (it must hold no checkpoint).
        #[arg(value_parser = parse_thread)]
        new: ThreadId,
        /// Copy the checkpoints up to and including this one [default: all of them].
        #[arg(long, value_name = "CHECKPOINT_ID", value_parser = parse_checkpoint)]
        at: Option<CheckpointId>,
    },
    /// List a session's archives, oldest first.
    Archives {
        /// The session id.
        #[arg(value_parser = parse_session)]
        session: SessionId,
    },
    /// List memory items, oldest first.
    ///
    /// Without a scope option every scope is listed. With `--agent`, `--workspace` or
    /// `--owner`, the items that agent sees: its own and those shared along the parts it
    /// leaves unset (global items, agent-wide ones); `--exact` lists that scope alone.
    #[command(group(ArgGroup::new("scope").multiple(true).args(["agent", "workspace", "owner"])))]
    Memories {
        /// Only this kind: short_term, long_term, fact, insight.
        #[arg(long, value_parser = parse_kind)]
        kind: Option<MemoryKind>,
        /// The agent part of the scope (an agent's name).
        #[arg(long, value_name = "NAME")]
        agent: Option<String>,
        /// The workspace part of the scope, as `workspace-id` shows it (`git-…`, `dir-…`).
        #[arg(long, value_name = "NAME")]
        workspace: Option<String>,
        /// The owner part of the scope (the end user).
        #[arg(long, value_name = "NAME")]
        owner: Option<String>,
        /// Only the global items (shared by every agent, workspace and owner).
        #[arg(long, conflicts_with = "scope")]
        global: bool,
        /// Only the items of exactly the scope given, not those it sees besides.
        #[arg(long, requires = "scope")]
        exact: bool,
        /// Search the items for this query, best match first, instead of listing them: by
        /// keyword, and by meaning too when the store URL names an embedder.
        #[arg(long, value_name = "QUERY")]
        search: Option<String>,
        /// How to search: keyword, semantic or hybrid [default: hybrid when the store URL
        /// names an embedder, else keyword].
        #[arg(long, value_parser = parse_mode, requires = "search")]
        mode: Option<SearchMode>,
        /// At most N hits [default: 10].
        #[arg(long, value_name = "N", requires = "search")]
        limit: Option<usize>,
    },
    /// Embed, for search by meaning, every memory item (and message, when the store URL says
    /// `embed=messages`) that has no vector yet, with the embedder the store URL names
    /// (`embedder=local`, or `embedder=http&embed_url=…&embed_model=…`).
    ///
    /// Resumable: each batch is stored as it is embedded, so a run cut short keeps its work and
    /// the next embeds only what is still missing. When the store's vectors come from another
    /// model than the URL's embedder, or with --all, everything is embedded anew.
    Reindex {
        /// Embed everything anew, not only what has no vector.
        #[arg(long)]
        all: bool,
    },
    /// Delete a session with its archives.
    Delete {
        /// The session id.
        #[arg(value_parser = parse_session)]
        session: SessionId,
    },
    /// Delete sessions not written for a while (and, optionally, all but the newest N), memory
    /// items not updated for a while, and every expired memory item.
    #[command(group(ArgGroup::new("policy").required(true).multiple(true).args(["older_than", "keep", "memories_older_than"])))]
    Purge {
        /// Age limit for sessions, like 30d, 12h, 90m, 2w or 1d12h.
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        older_than: Option<Duration>,
        /// Keep only the N most recently written sessions.
        #[arg(long, value_name = "N")]
        keep: Option<usize>,
        /// Age limit for memory items (by their last update).
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        memories_older_than: Option<Duration>,
    },
    /// Export sessions (and, with --all, memory items, checkpoints and the knowledge graph) to
    /// files, or the knowledge graph alone (--format mcp-memory).
    ///
    /// `--format mcp-memory` writes the knowledge graph as the MCP reference memory server
    /// (@modelcontextprotocol/server-memory) keeps it in its memory.jsonl, byte for byte as it
    /// writes it; it needs no SESSION or --all, and refuses a SESSION.
    #[command(group(ArgGroup::new("what").args(["session", "all"])))]
    Export {
        /// The session to export.
        #[arg(value_parser = parse_session)]
        session: Option<SessionId>,
        /// Everything: every session, memory item and checkpoint, and the knowledge graph.
        #[arg(long)]
        all: bool,
        /// jsonl, json, yaml (agentmem's own, lossless), swarms (agent folder), praisonai
        /// (session JSON), mcp-memory (the knowledge graph as the MCP memory server's file).
        #[arg(long, value_parser = parse_format, ignore_case = true, requires_ifs = session_formats())]
        format: Format,
        /// Output file (jsonl, json, yaml, praisonai, mcp-memory) or folder (swarms; praisonai
        /// with --all) [default: standard output for single files].
        #[arg(short, long, value_name = "FILE|DIR")]
        output: Option<PathBuf>,
        /// Export an encrypted store: every export format is plaintext, so without this flag
        /// an encrypted store is refused.
        #[arg(long)]
        decrypt: bool,
    },
    /// Import sessions from files written by export, Swarms or PraisonAI, or a knowledge graph
    /// from the MCP reference memory server's memory.jsonl.
    ///
    /// Everything is read and checked before anything is written. Sessions, memory items and
    /// checkpoints are added, never overwritten (a conflict writes nothing); the knowledge
    /// graph is merged: entities of new names are created (of two of one name, the first),
    /// entities the store holds gain the observations they lack, relations it lacks are added,
    /// so importing a file twice adds nothing.
    Import {
        /// The file or folder to read.
        path: PathBuf,
        /// jsonl, json, yaml, swarms, praisonai, mcp-memory (the MCP memory server's
        /// memory.jsonl: the knowledge graph only).
        #[arg(long, value_parser = parse_format)]
        format: Format,
        /// Import under this session id (the file must hold one session; not for mcp-memory).
        #[arg(long, value_parser = parse_session)]
        session: Option<SessionId>,
    },
}

/// How `show` prints a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShowFormat {
    /// One line per message: time, role, content.
    Text,
    /// The session as JSON.
    Json,
    /// The session as Swarms `MEMORY.md`.
    Markdown,
}

fn parse_session(s: &str) -> std::result::Result<SessionId, String> {
    SessionId::new(s).map_err(|e| e.message().to_string())
}

fn parse_thread(s: &str) -> std::result::Result<ThreadId, String> {
    ThreadId::new(s).map_err(|e| e.message().to_string())
}

fn parse_ns(s: &str) -> std::result::Result<CheckpointNs, String> {
    CheckpointNs::new(s).map_err(|e| e.message().to_string())
}

fn parse_checkpoint(s: &str) -> std::result::Result<CheckpointId, String> {
    CheckpointId::new(s).map_err(|e| e.message().to_string())
}

fn parse_message(s: &str) -> std::result::Result<MessageId, String> {
    s.parse::<MessageId>().map_err(|e| e.message().to_string())
}

/// Parses a tag written `KEY=VALUE` (the value may be empty and may hold `=`).
///
/// ```
/// use agentmem_cli::cli::parse_tag;
/// assert_eq!(parse_tag("project=kyoto").unwrap(), ("project".into(), "kyoto".into()));
/// assert!(parse_tag("project").is_err());
/// assert!(parse_tag("=kyoto").is_err());
/// ```
pub fn parse_tag(s: &str) -> std::result::Result<(String, String), String> {
    match s.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_string(), value.to_string())),
        _ => Err(format!(
            "invalid tag {s:?}: write it KEY=VALUE, like project=kyoto"
        )),
    }
}

fn parse_kind(s: &str) -> std::result::Result<MemoryKind, String> {
    s.parse::<MemoryKind>().map_err(|e| e.message().to_string())
}

fn parse_mode(s: &str) -> std::result::Result<SearchMode, String> {
    s.parse::<SearchMode>().map_err(|e| e.message().to_string())
}

fn parse_format(s: &str) -> std::result::Result<Format, String> {
    s.parse::<Format>().map_err(|e| e.message().to_string())
}

/// The formats of sessions, with which `export` needs a SESSION or --all (the group `what`);
/// mcp-memory holds the knowledge graph only and needs neither.
fn session_formats() -> Vec<(&'static str, &'static str)> {
    Format::ALL
        .into_iter()
        .filter(|f| *f != Format::McpMemory)
        .map(|f| (f.as_str(), "what"))
        .collect()
}

/// Parses a duration like `30d`, `12h`, `90m`, `45s`, `2w` or `1d12h`.
///
/// ```
/// use std::time::Duration;
/// use agentmem_cli::cli::parse_duration;
/// assert_eq!(parse_duration("1d12h").unwrap(), Duration::from_secs(36 * 3600));
/// assert!(parse_duration("12").is_err());
/// ```
pub fn parse_duration(s: &str) -> std::result::Result<Duration, String> {
    agentmem_core::parse_duration(s).map_err(|e| e.message().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }
}
