//! `export` and `import`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentmem_core::{
    AgentMemory, Error, MemoryFilter, MemoryItem, MemoryStore, Operation, Result, SessionId,
    SessionStore,
};
use serde::Serialize;

use agentmem_formats::{
    canonical_map, create_private_dir, json, jsonl, praisonai, swarms, yaml, ExportDocument,
    Format, SessionExport,
};

use crate::fsio::{io_error, write_atomic, AtomicFile};
use crate::output::{count, Output};
use crate::sync::{read_session, sync_session, SyncOptions};

/// Every memory item, oldest first, ties broken by id, so exports are deterministic.
async fn all_memories(store: &Arc<dyn AgentMemory>) -> Result<Vec<MemoryItem>> {
    let mut items = store.list_memories(&MemoryFilter::default()).await?;
    items.sort_by(|a, b| {
        a.created_at
            .cmp(&b.created_at)
            .then_with(|| a.id.cmp(&b.id))
    });
    for item in &mut items {
        canonical_map(&mut item.metadata);
    }
    Ok(items)
}

/// Every session's id, in byte order (stores order by id too, but a database collation may
/// not be byte order, and exports must not depend on the store).
async fn session_ids(store: &Arc<dyn AgentMemory>) -> Result<Vec<SessionId>> {
    let mut ids: Vec<SessionId> = store
        .list_sessions()
        .await?
        .into_iter()
        .map(|s| s.id)
        .collect();
    ids.sort();
    Ok(ids)
}

async fn one_session(store: &Arc<dyn AgentMemory>, id: &SessionId) -> Result<SessionExport> {
    read_session(store.as_ref(), id)
        .await?
        .ok_or_else(|| Error::not_found(format!("session {:?} does not exist", id.as_str())))
}

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
    output: Option<String>,
}

/// `export`: one session (`session`) or everything (`None`).
pub async fn export(
    store: &Arc<dyn AgentMemory>,
    out: &mut Output,
    session: Option<SessionId>,
    format: Format,
    output: Option<&Path>,
) -> Result<()> {
    let mut summary = ExportSummary {
        format: format.as_str(),
        sessions: 0,
        messages: 0,
        memories: 0,
        output: output.map(|p| p.display().to_string()),
    };
    match (session, format) {
        (Some(id), _) => {
            let s = one_session(store, &id).await?;
            summary.sessions = 1;
            summary.messages = s.total_messages();
            match format {
                Format::Swarms => swarms::write_agent_folder(empty_folder(output, format)?, &s)?,
                Format::PraisonAi => emit(out, output, &praisonai::render(&s)?)?,
                Format::Jsonl | Format::Json | Format::Yaml => {
                    let mut doc = ExportDocument::new();
                    doc.sessions.push(s);
                    emit(out, output, &render_document(&doc, format)?)?;
                }
            }
        }
        (None, Format::Jsonl) => {
            // Streamed session by session: a large store is never whole in memory.
            match output {
                Some(path) => {
                    let mut file = AtomicFile::create(path)?;
                    stream_jsonl(store, &mut file, &mut summary).await?;
                    file.commit()?;
                }
                None => {
                    let mut buf = Vec::new();
                    let mut sink = StdoutSink { out, buf: &mut buf };
                    stream_jsonl(store, &mut sink, &mut summary).await?;
                    sink.flush_to_out()?;
                }
            }
        }
        (None, Format::Json | Format::Yaml) => {
            let mut doc = ExportDocument::new();
            for id in session_ids(store).await? {
                let s = one_session(store, &id).await?;
                summary.messages += s.total_messages();
                doc.sessions.push(s);
            }
            doc.memories = all_memories(store).await?;
            summary.sessions = doc.sessions.len() as u64;
            summary.memories = doc.memories.len() as u64;
            emit(out, output, &render_document(&doc, format)?)?;
        }
        (None, Format::Swarms | Format::PraisonAi) => {
            let dir = empty_folder(output, format)?;
            for id in session_ids(store).await? {
                let s = one_session(store, &id).await?;
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
            out.line(format!(
                "exported {} ({}) and {} as {} to {}",
                count(summary.sessions, "session"),
                count(summary.messages, "message"),
                count(summary.memories, "memory item"),
                format,
                summary.output.as_deref().unwrap_or("-")
            ))?;
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

async fn stream_jsonl<W: Write>(
    store: &Arc<dyn AgentMemory>,
    w: &mut W,
    summary: &mut ExportSummary,
) -> Result<()> {
    jsonl::write_header(w)?;
    for id in session_ids(store).await? {
        let s = one_session(store, &id).await?;
        summary.sessions += 1;
        summary.messages += s.total_messages();
        jsonl::write_session(w, &s)?;
    }
    for item in all_memories(store).await? {
        summary.memories += 1;
        jsonl::write_memory(w, &item)?;
    }
    w.flush()
        .map_err(|e| Error::from(e).with_operation(Operation::Export))
}

fn render_document(doc: &ExportDocument, format: Format) -> Result<String> {
    match format {
        Format::Jsonl => jsonl::to_string(doc),
        Format::Json => json::to_string(doc),
        Format::Yaml => yaml::to_string(doc),
        Format::Swarms | Format::PraisonAi => Err(Error::invalid_input(format!(
            "{format} is not a document format"
        ))),
    }
}

/// Reads everything `path` holds in `format`, validated, before anything is written.
pub fn read_import(
    path: &Path,
    format: Format,
    session: Option<SessionId>,
) -> Result<ExportDocument> {
    match session {
        Some(id) => format.import_as(path, id),
        None => format.import(path),
    }
}

#[derive(Serialize, Default)]
struct ImportSummary {
    sessions: u64,
    sessions_created: u64,
    messages_written: u64,
    archives_written: u64,
    memories: u64,
    memories_written: u64,
}

/// What importing `item` would do to a store holding `stored`: `Ok(true)` to write it,
/// `Ok(false)` when the store holds it already (same id, same content), and `Conflict` when
/// the store holds something else under its id, or another item under its scope, kind and key
/// (which the import would replace). The same policy as for sessions: an import adds, never
/// overwrites.
fn memory_import_plan(stored: &[MemoryItem], item: &MemoryItem) -> Result<bool> {
    if let Some(existing) = stored.iter().find(|m| m.id == item.id) {
        if existing == item {
            return Ok(false);
        }
        return Err(Error::conflict(format!(
            "memory item `{}` differs from the one in the store; nothing was imported",
            item.id
        )));
    }
    if let Some(key) = &item.key {
        let same_key = stored.iter().find(|m| item.shares_key_with(m));
        if let Some(other) = same_key {
            return Err(Error::conflict(format!(
                "memory item `{}` would replace `{}`, stored under the same scope ({}), kind and \
                 key `{key}`; nothing was imported",
                item.id, other.id, item.scope
            )));
        }
    }
    Ok(true)
}

/// `import`: parse and validate the whole input, check it against the store, then write it
/// session by session (a new session in one write per archive, see [`crate::sync`]), then the
/// memory items the store does not hold yet. A session or an item that conflicts with the
/// store stops the import before anything is written.
pub async fn import(
    store: &Arc<dyn AgentMemory>,
    out: &mut Output,
    path: &Path,
    format: Format,
    session: Option<SessionId>,
) -> Result<()> {
    let doc = read_import(path, format, session)?;
    // A dry run first: a session that conflicts with the store stops the import before
    // anything is written.
    let plan = SyncOptions {
        dry_run: true,
        ..SyncOptions::default()
    };
    for s in &doc.sessions {
        sync_session(store.as_ref(), s, plan).await?;
    }
    // One listing of the store's items answers every item's check.
    let stored = if doc.memories.is_empty() {
        Vec::new()
    } else {
        store.list_memories(&MemoryFilter::default()).await?
    };
    let mut new_items = Vec::new();
    for item in &doc.memories {
        if memory_import_plan(&stored, item)? {
            new_items.push(item);
        }
    }
    let mut summary = ImportSummary::default();
    for s in &doc.sessions {
        let report = sync_session(store.as_ref(), s, SyncOptions::default()).await?;
        summary.sessions += 1;
        summary.sessions_created += u64::from(report.created);
        summary.messages_written += report.messages_written;
        summary.archives_written += report.archives_written;
    }
    summary.memories = doc.memories.len() as u64;
    for item in new_items {
        store.put_memory(item).await?;
        summary.memories_written += 1;
    }
    if out.json() {
        return out.json_value(&summary);
    }
    out.line(format!(
        "imported {} ({} new; {} and {} written) and {} ({} new) from {}",
        count(summary.sessions, "session"),
        summary.sessions_created,
        count(summary.messages_written, "message"),
        count(summary.archives_written, "archive"),
        count(summary.memories, "memory item"),
        summary.memories_written,
        path.display()
    ))
}
