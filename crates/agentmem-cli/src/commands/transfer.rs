//! `export` and `import`: sessions, memory items, checkpoints and the knowledge graph in
//! agentmem's own formats, sessions in the Python frameworks', the graph alone in the MCP
//! memory server's (`mcp-memory`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentmem_core::{AgentMemory, Error, GraphQuery, Result, SessionId};
use agentmem_formats::{
    create_private_dir, json, jsonl, mcp_memory, praisonai, swarms, yaml, ExportDocument, Format,
    SessionExport,
};
use agentmem_transfer::{
    export_document, export_session, import_document, session_ids, write_jsonl,
};
use serde::Serialize;

use crate::fsio::{io_error, write_atomic, AtomicFile};
use crate::output::{count, graph_items, graph_totals, when_any, Output};

/// A folder to export into: missing or empty, so nothing stale is mixed in.
fn empty_folder(dir: Option<&Path>, format: Format) -> Result<PathBuf> {
    let dir = dir.ok_or_else(|| {
        Error::invalid_input(format!(
            "the {format} export writes a folder: give it with -o DIR"
        ))
    })?;
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(Error::invalid_input(format!(
                    "{} is not empty; export into a new or empty folder",
                    dir.display()
                )));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => create_private_dir(dir)?,
        Err(e) => return Err(io_error(dir, "open the folder", e)),
    }
    Ok(dir.to_path_buf())
}

fn emit(out: &mut Output, output: Option<&Path>, text: &str) -> Result<()> {
    match output {
        Some(path) => write_atomic(path, text.as_bytes()),
        None => out.raw(text),
    }
}

#[derive(Serialize)]
struct ExportSummary {
    format: &'static str,
    sessions: u64,
    messages: u64,
    memories: u64,
    checkpoints: u64,
    entities: u64,
    relations: u64,
    output: Option<String>,
}

impl ExportSummary {
    /// The summary line for people.
    fn line(&self, format: Format) -> String {
        let graph = format!(
            "{} and {}",
            count(self.entities, "entity"),
            count(self.relations, "relation")
        );
        let what = if format == Format::McpMemory {
            graph
        } else {
            format!(
                "{} ({}) and {}{}{}",
                count(self.sessions, "session"),
                count(self.messages, "message"),
                count(self.memories, "memory item"),
                when_any(self.checkpoints, || format!(
                    " and {}",
                    count(self.checkpoints, "checkpoint")
                )),
                when_any(self.entities + self.relations, || format!(" and {graph}"))
            )
        };
        format!(
            "exported {what} as {format} to {}",
            self.output.as_deref().unwrap_or("-")
        )
    }
}

/// The knowledge graph as the MCP memory server's file, to `output` or standard output.
async fn export_mcp_memory(
    store: &dyn AgentMemory, out: &mut Output, output: Option<&Path>, summary: &mut ExportSummary,
) -> Result<()> {
    // Read directly: a store that keeps no graph says so rather than exporting an empty one.
    let graph = store.read_graph(&GraphQuery::All).await?;
    summary.entities = graph.entities.len() as u64;
    summary.relations = graph.relations.len() as u64;
    emit(out, output, &mcp_memory::to_string(&graph)?)
}

/// The error of a session exported or imported as `mcp-memory`.
fn graph_only(format: Format) -> Error {
    Error::invalid_input(format!(
        "the {format} format holds the knowledge graph, not sessions: export it without a \
         session (`export --format {format}`)"
    ))
}

/// `export`: one session (`session`) or everything (`None`); with `mcp-memory`, the knowledge
/// graph (a session is refused). An encrypted store is refused unless `decrypt` asks for its
/// plaintext (every export format is plaintext).
pub async fn export(
    store: &Arc<dyn AgentMemory>, out: &mut Output, session: Option<SessionId>, format: Format,
    output: Option<&Path>, decrypt: bool,
) -> Result<()> {
    let store = store.as_ref();
    if !decrypt && agentmem_transfer::is_encrypted(store).await? {
        return Err(Error::invalid_input(
            "the store is encrypted and an export is plaintext: give --decrypt (with the \
             store's key) to write it in the clear",
        ));
    }
    let mut summary = ExportSummary {
        format: format.as_str(),
        sessions: 0,
        messages: 0,
        memories: 0,
        checkpoints: 0,
        entities: 0,
        relations: 0,
        output: output.map(|p| p.display().to_string()),
    };
    match (session, format) {
        (Some(_), Format::McpMemory) => return Err(graph_only(format)),
        (None, Format::McpMemory) => export_mcp_memory(store, out, output, &mut summary).await?,
        (Some(id), _) => {
            let s = export_session(store, &id).await?;
            summary.sessions = 1;
            summary.messages = s.total_messages();
            match format {
                Format::Swarms => swarms::write_agent_folder(empty_folder(output, format)?, &s)?,
                Format::PraisonAi => emit(out, output, &praisonai::render(&s)?)?,
                Format::McpMemory => return Err(graph_only(format)),
                Format::Jsonl | Format::Json | Format::Yaml => {
                    let mut doc = ExportDocument::new();
                    doc.sessions.push(s);
                    emit(out, output, &render_document(&doc, format)?)?;
                }
            }
        }
        (None, Format::Jsonl) => {
            // Streamed session by session: a large store is never whole in memory.
            let counts = match output {
                Some(path) => {
                    let mut file = AtomicFile::create(path)?;
                    let counts = write_jsonl(store, &mut file).await?;
                    file.commit()?;
                    counts
                }
                None => {
                    let mut buf = Vec::new();
                    let mut sink = StdoutSink { out, buf: &mut buf };
                    let counts = write_jsonl(store, &mut sink).await?;
                    sink.flush_to_out()?;
                    counts
                }
            };
            summary.sessions = counts.sessions;
            summary.messages = counts.messages;
            summary.memories = counts.memories;
            summary.checkpoints = counts.checkpoints;
            summary.entities = counts.entities;
            summary.relations = counts.relations;
        }
        (None, Format::Json | Format::Yaml) => {
            let doc = export_document(store).await?;
            summary.sessions = doc.sessions.len() as u64;
            summary.messages = doc.sessions.iter().map(SessionExport::total_messages).sum();
            summary.memories = doc.memories.len() as u64;
            summary.checkpoints = doc.checkpoints.len() as u64;
            summary.entities = doc.graph.entities.len() as u64;
            summary.relations = doc.graph.relations.len() as u64;
            emit(out, output, &render_document(&doc, format)?)?;
        }
        (None, Format::Swarms | Format::PraisonAi) => {
            let dir = empty_folder(output, format)?;
            for id in session_ids(store).await? {
                let s = export_session(store, &id).await?;
                summary.sessions += 1;
                summary.messages += s.total_messages();
                if format == Format::Swarms {
                    swarms::write_agent_folder(dir.join(s.id.as_str()), &s)?;
                } else {
                    let path = dir.join(format!("{}.json", s.id.as_str()));
                    write_atomic(&path, praisonai::render(&s)?.as_bytes())?;
                }
            }
        }
    }
    // With the export on standard output, the summary would corrupt it: it goes nowhere.
    if output.is_some() {
        if out.json() {
            out.json_value(&summary)?;
        } else {
            out.line(summary.line(format))?;
        }
    }
    Ok(())
}

/// Buffers JSON lines and hands them to [`Output`] (which handles closed pipes).
struct StdoutSink<'a> {
    out: &'a mut Output,
    buf: &'a mut Vec<u8>,
}

impl StdoutSink<'_> {
    fn flush_to_out(&mut self) -> Result<()> {
        let text = String::from_utf8_lossy(self.buf).into_owned();
        self.buf.clear();
        self.out.raw(&text)
    }
}

impl Write for StdoutSink<'_> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() > 1 << 16 {
            // Only whole lines are valid UTF-8 for sure; records end with a newline.
            if let Some(end) = self.buf.iter().rposition(|b| *b == b'\n') {
                let rest = self.buf.split_off(end + 1);
                let text = String::from_utf8_lossy(self.buf).into_owned();
                *self.buf = rest;
                self.out
                    .raw(&text)
                    .map_err(|e| std::io::Error::other(e.to_string()))?;
            }
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn render_document(doc: &ExportDocument, format: Format) -> Result<String> {
    match format {
        Format::Jsonl => jsonl::to_string(doc),
        Format::Json => json::to_string(doc),
        Format::Yaml => yaml::to_string(doc),
        Format::Swarms | Format::PraisonAi | Format::McpMemory => Err(Error::invalid_input(
            format!("{format} is not a document format"),
        )),
    }
}

/// Reads everything `path` holds in `format`, validated, before anything is written.
pub fn read_import(
    path: &Path, format: Format, session: Option<SessionId>,
) -> Result<ExportDocument> {
    match session {
        Some(id) => format.import_as(path, id),
        None => format.import(path),
    }
}

/// `import`: parse and validate the whole input, then write it into the store
/// ([`import_document`]: a session or an item that conflicts with the store stops the import
/// before anything is written; the knowledge graph merges).
pub async fn import(
    store: &Arc<dyn AgentMemory>, out: &mut Output, path: &Path, format: Format,
    session: Option<SessionId>,
) -> Result<()> {
    let doc = read_import(path, format, session)?;
    let summary = import_document(store.as_ref(), &doc).await?;
    if out.json() {
        return out.json_value(&summary);
    }
    if format == Format::McpMemory {
        return out.line(format!(
            "imported {} from {}",
            graph_totals(&summary.graph, "written"),
            path.display()
        ));
    }
    let graph = when_any(graph_items(&summary.graph), || {
        format!(" and {}", graph_totals(&summary.graph, "written"))
    });
    let checkpoints = when_any(summary.checkpoints, || {
        format!(
            " and {} ({} written)",
            count(summary.checkpoints, "checkpoint"),
            summary.checkpoints_written
        )
    });
    out.line(format!(
        "imported {} ({} new; {} and {} written) and {} ({} new){checkpoints}{graph} from {}",
        count(summary.sessions, "session"),
        summary.sessions_created,
        count(summary.messages_written, "message"),
        count(summary.archives_written, "archive"),
        count(summary.memories, "memory item"),
        summary.memories_written,
        path.display()
    ))
}
