//! The export document every format imports into and exports from, and the list of formats.

use std::fmt;

use std::path::Path;

use agentmem_core::{
    ArchiveInfo, CheckpointTuple, Error, KnowledgeGraph, MemoryItem, Message, MessageId, Metadata,
    Result, SessionId, SessionLabels,
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::checkpoints::validate_checkpoints;
use crate::graph::validate_graph;
use crate::{canonical_checkpoint, json, jsonl, mcp_memory, praisonai, swarms, yaml};

/// The version written in (and required of) agentmem's own export formats.
pub const EXPORT_VERSION: u32 = 1;

agentmem_core::name_enum! {
    /// The file formats this crate reads and writes, for choosing one at run time (the CLI's
    /// `--format`); each also has a module of its own.
    ///
    /// ```
    /// use agentmem_formats::Format;
    ///
    /// let format: Format = "praisonai".parse()?;
    /// assert_eq!(format, Format::PraisonAi);
    /// assert_eq!(format.to_string(), "praisonai");
    /// assert!("csv".parse::<Format>().is_err());
    /// # Ok::<(), agentmem_core::Error>(())
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Format {
        /// agentmem's own: one JSON record per line (header, sessions, messages, archives,
        /// memories, checkpoints, graph entities and relations).
        Jsonl = "jsonl",
        /// agentmem's own: the same content as one JSON document.
        Json = "json",
        /// agentmem's own: the same content as one YAML document.
        Yaml = "yaml",
        /// A Swarms agent folder: `MEMORY.md` plus `archive/history_*.md` (sessions only).
        Swarms = "swarms",
        /// A praisonaiagents session file `{session_id}.json` (sessions only).
        PraisonAi = "praisonai",
        /// The MCP reference memory server's `memory.jsonl` (the knowledge graph only; see
        /// [`mcp_memory`]).
        McpMemory = "mcp-memory",
    }
    from_str("format", ignore_ascii_case);
}

impl Format {
    /// Reads everything `path` holds in this format, checked as [`ExportDocument::validate`]
    /// does, so a store will take it: a file for `jsonl`, `json` and `yaml`; a session file or
    /// a folder of `*.json` session files for `praisonai`; an agent folder, a folder of them or
    /// a Swarms workspace for `swarms` (see [`swarms::find_agent_folders`]); the server's
    /// `memory.jsonl` for `mcp-memory` (a document holding the graph only).
    ///
    /// ```
    /// use agentmem_core::Message;
    /// use agentmem_formats::{ExportDocument, Format, SessionExport};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let mut session = SessionExport::new("demo".parse()?);
    /// session.messages.push(Message::user("Hello"));
    /// let mut doc = ExportDocument::new();
    /// doc.sessions.push(session);
    ///
    /// for format in [Format::Jsonl, Format::Json, Format::Yaml] {
    ///     let path = dir.path().join(format!("export.{format}"));
    ///     format.export(&doc, &path)?;
    ///     assert_eq!(format.import(&path)?, doc);
    /// }
    /// let folder = dir.path().join("praisonai");
    /// Format::PraisonAi.export(&doc, &folder)?;
    /// let back = Format::PraisonAi.import(folder.join("demo.json"))?;
    /// assert_eq!(back.sessions[0].messages, doc.sessions[0].messages);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn import(self, path: impl AsRef<Path>) -> Result<ExportDocument> {
        self.read(path.as_ref(), None)
    }

    /// [`import`](Format::import) as session `session`: `path` must hold exactly one session,
    /// whatever id it has there (a Swarms folder name or PraisonAI `session_id` need not be a
    /// valid agentmem session id then). `mcp-memory` holds no sessions and is refused.
    ///
    /// ```
    /// use agentmem_formats::Format;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let file = dir.path().join("s.json");
    /// std::fs::write(&file, r#"{"session_id": "not/valid", "messages": []}"#)?;
    /// assert!(Format::PraisonAi.import(&file).is_err());
    /// let doc = Format::PraisonAi.import_as(&file, "chat".parse()?)?;
    /// assert_eq!(doc.sessions[0].id.as_str(), "chat");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn import_as(self, path: impl AsRef<Path>, session: SessionId) -> Result<ExportDocument> {
        self.read(path.as_ref(), Some(session))
    }

    fn read(self, path: &Path, session: Option<SessionId>) -> Result<ExportDocument> {
        let source = path.display().to_string();
        if self == Format::McpMemory && session.is_some() {
            return Err(Error::invalid_input(format!(
                "{source}: the {self} format holds the knowledge graph, no session to import as one"
            )));
        }
        let mut doc = match self {
            Format::Jsonl => jsonl::import(path)?,
            Format::Json => json::import(path)?,
            Format::Yaml => yaml::import(path)?,
            Format::Swarms => swarms::read_folders(path, session.as_ref())?,
            Format::PraisonAi => praisonai::read_files(path, session.as_ref())?,
            Format::McpMemory => mcp_memory::import_document(path)?,
        };
        if let Some(id) = session {
            match doc.sessions.as_mut_slice() {
                [only] => only.id = id,
                other => {
                    return Err(Error::invalid_input(format!(
                        "{source} holds {} sessions; importing as one session needs exactly one",
                        other.len()
                    )))
                }
            }
        }
        doc.validate(&source)?;
        Ok(doc)
    }

    /// Writes `doc` to `path` in this format: one file for `jsonl`, `json` and `yaml`; a
    /// folder for `swarms` ([`swarms::export`]) and `praisonai` ([`praisonai::export`]), which
    /// keep no memory items, no checkpoints and no graph; one file for `mcp-memory`, which
    /// keeps the graph only (a document holding anything else is refused with
    /// `InvalidInput`). Files are written whole (through a temporary file and a rename)
    /// and readable by their owner only; see [`import`](Format::import) for an example.
    pub fn export(self, doc: &ExportDocument, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        match self {
            Format::Jsonl => jsonl::export(doc, path),
            Format::Json => json::export(doc, path),
            Format::Yaml => yaml::export(doc, path),
            Format::Swarms => swarms::export(doc, path),
            Format::PraisonAi => praisonai::export(doc, path),
            Format::McpMemory => mcp_memory::export_document(doc, path),
        }
    }
}

/// Everything an export holds: sessions (with their archives), memory items, checkpoints and
/// the knowledge graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportDocument {
    /// Always [`EXPORT_VERSION`]; a reader refuses other versions.
    pub agentmem_export: u32,
    /// The sessions, ordered by id.
    #[serde(default)]
    pub sessions: Vec<SessionExport>,
    /// The memory items, oldest first (ties by id).
    #[serde(default)]
    pub memories: Vec<MemoryItem>,
    /// The checkpoints, each with the channel values it reads and its pending writes, ordered
    /// by thread, namespace and id (byte order; see [`canonical_checkpoint`]). Not written
    /// when empty, so a document without checkpoints has the bytes it had before they existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checkpoints: Vec<CheckpointTuple>,
    /// The knowledge graph, as the store lists it: entities in creation order with their
    /// observations, then relations in creation order. Not written when empty (as
    /// `checkpoints`); an import merges it by the graph's rules (see [`crate::mcp_memory`]).
    #[serde(default, skip_serializing_if = "KnowledgeGraph::is_empty")]
    pub graph: KnowledgeGraph,
}

impl ExportDocument {
    /// An empty document of the current version.
    pub fn new() -> Self {
        ExportDocument {
            agentmem_export: EXPORT_VERSION,
            sessions: Vec::new(),
            memories: Vec::new(),
            checkpoints: Vec::new(),
            graph: KnowledgeGraph::default(),
        }
    }

    /// Checks what a store would refuse, so an import fails before writing anything: the
    /// version, message and memory ids, sessions named twice, and checkpoints (each checked
    /// as a store would, none twice, every channel value one its checkpoint reads and the
    /// same wherever it is repeated, no pending write twice), and the graph's texts (sizes,
    /// no NUL; two entities of one name are no error: an import keeps the first).
    pub fn validate(&self, source: &str) -> Result<()> {
        if self.agentmem_export != EXPORT_VERSION {
            return Err(Error::unsupported(format!(
                "{source}: export version {} is not supported; this agentmem reads version {EXPORT_VERSION}",
                self.agentmem_export
            )));
        }
        let mut seen = std::collections::HashSet::new();
        for session in &self.sessions {
            if !seen.insert(session.id.as_str()) {
                return Err(Error::corrupt(format!(
                    "{source}: session {:?} appears twice",
                    session.id.as_str()
                )));
            }
            session.validate(source)?;
        }
        for item in &self.memories {
            item.validate()
                .map_err(|e| Error::corrupt(format!("{source}: memory item: {}", e.message())))?;
        }
        validate_checkpoints(&self.checkpoints, source)?;
        validate_graph(&self.graph, source)
    }
}

impl Default for ExportDocument {
    fn default() -> Self {
        Self::new()
    }
}

/// One session as exported: its metadata, its current messages and its archives.
///
/// Store bookkeeping that no store can be told to reproduce (the session's creation and update
/// times, archive ids and times, all chosen by the destination store) is kept out of the
/// serialized form, so an export of an import is byte-identical; the skipped fields carry it
/// for writers that need it (the Swarms export names archive files by their time).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionExport {
    /// The session's id.
    pub id: SessionId,
    /// Session metadata.
    #[serde(default)]
    pub metadata: Metadata,
    /// The current messages, oldest first.
    #[serde(default)]
    pub messages: Vec<Message>,
    /// The archives, oldest first.
    #[serde(default)]
    pub archives: Vec<ArchiveExport>,
    /// Title, owner and tags.
    #[serde(default, skip_serializing_if = "SessionLabels::is_empty")]
    pub labels: SessionLabels,
    /// When the session expires (never when `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
    /// When the session was created, when read from a store.
    #[serde(skip)]
    pub created_at: Option<DateTime<Utc>>,
    /// When the session was last written, when read from a store.
    #[serde(skip)]
    pub updated_at: Option<DateTime<Utc>>,
}

impl SessionExport {
    /// An empty session with no metadata.
    pub fn new(id: SessionId) -> Self {
        SessionExport {
            id,
            metadata: Metadata::new(),
            messages: Vec::new(),
            archives: Vec::new(),
            labels: SessionLabels::default(),
            expires_at: None,
            created_at: None,
            updated_at: None,
        }
    }

    /// Every message, archived and current, oldest first.
    pub(crate) fn all_messages(&self) -> impl Iterator<Item = &Message> + Clone {
        let archived = self.archives.iter().flat_map(|a| &a.messages);
        archived.chain(&self.messages)
    }

    /// [`all_messages`](SessionExport::all_messages), to change them.
    fn all_messages_mut(&mut self) -> impl Iterator<Item = &mut Message> {
        let archived = self.archives.iter_mut().flat_map(|a| &mut a.messages);
        archived.chain(&mut self.messages)
    }

    /// Messages in archives and in the session.
    pub fn total_messages(&self) -> u64 {
        let archived: usize = self.archives.iter().map(|a| a.messages.len()).sum();
        (archived + self.messages.len()) as u64
    }

    /// Checks every message as a store would.
    pub fn validate(&self, source: &str) -> Result<()> {
        for message in self.all_messages() {
            message.validate().map_err(|e| {
                Error::corrupt(format!(
                    "{source}: session {:?}: {}",
                    self.id.as_str(),
                    e.message()
                ))
            })?;
        }
        Ok(())
    }
}

/// One archive as exported: the transcript a compaction moved out of the session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArchiveExport {
    /// Its messages, oldest first.
    #[serde(default)]
    pub messages: Vec<Message>,
    /// Its id and time, when read from a store (see [`SessionExport`] for why not serialized).
    #[serde(skip)]
    pub info: Option<ArchiveInfo>,
}

impl ArchiveExport {
    /// An archive of `messages` with no store information.
    pub fn new(messages: Vec<Message>) -> Self {
        ArchiveExport {
            messages,
            info: None,
        }
    }
}

/// Sorts the keys of every metadata map in `doc`, recursively, so the same content always
/// serializes to the same bytes whatever order a store kept the keys in (JSON objects are
/// unordered; PostgreSQL's `jsonb`, for one, reorders them), and each checkpoint's blobs and
/// pending writes ([`canonical_checkpoint`]).
pub fn canonicalize(doc: &mut ExportDocument) {
    doc.sessions.iter_mut().for_each(canonical_session);
    for item in &mut doc.memories {
        canonical_map(&mut item.metadata);
    }
    doc.checkpoints.iter_mut().for_each(canonical_checkpoint);
}

/// [`canonicalize`] for one session.
pub fn canonical_session(session: &mut SessionExport) {
    canonical_map(&mut session.metadata);
    for m in session.all_messages_mut() {
        canonical_map(&mut m.metadata);
    }
}

/// Sorts a map's keys, recursively.
pub fn canonical_map(map: &mut Metadata) {
    let mut entries: Vec<(String, serde_json::Value)> = std::mem::take(map).into_iter().collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (key, mut value) in entries {
        canonical_value(&mut value);
        map.insert(key, value);
    }
}

fn canonical_value(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => canonical_map(map),
        serde_json::Value::Array(items) => items.iter_mut().for_each(canonical_value),
        _ => {}
    }
}

/// A message id derived from `parts`, for formats that keep no ids (Swarms, PraisonAI): the
/// first 32 hex digits of sha256 of the parts joined by NUL. Re-importing the same file gives
/// the same ids, so an import can be re-run without duplicating messages.
pub(crate) fn derived_id(parts: &[&str]) -> MessageId {
    let mut hasher = Sha256::new();
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            hasher.update([0u8]);
        }
        hasher.update(part.as_bytes());
    }
    let digest = hasher.finalize();
    let mut first = [0u8; 16];
    first.copy_from_slice(&digest[..16]);
    MessageId::from_digest(&first)
}

/// What a one-document parser made of `source`: its error as corrupt data named by `source`,
/// or the document, checked as [`ExportDocument::validate`] does.
pub(crate) fn parsed<E: fmt::Display>(
    doc: std::result::Result<ExportDocument, E>, source: &str,
) -> Result<ExportDocument> {
    let doc = doc.map_err(|e| Error::corrupt(format!("{source}: {e}")))?;
    doc.validate(source)?;
    Ok(doc)
}

/// The sessions of a folder format as one document: each of `found` (what
/// [`praisonai::read_files`] or [`swarms::read_folders`] found at `path`: `what` names them)
/// read by `read`. With `session` (an import as that session), `path` must hold only one.
pub(crate) fn read_sessions<T>(
    path: &Path, found: Vec<T>, what: &str, session: Option<&SessionId>,
    read: impl FnMut(T) -> Result<SessionExport>,
) -> Result<ExportDocument> {
    if session.is_some() && found.len() > 1 {
        return Err(Error::invalid_input(format!(
            "{} holds {} {what}; importing as one session needs exactly one",
            path.display(),
            found.len()
        )));
    }
    let sessions = found.into_iter().map(read).collect::<Result<_>>()?;
    Ok(ExportDocument {
        sessions,
        ..ExportDocument::new()
    })
}

/// Parses `text` as a session id, naming `source` in the error.
pub(crate) fn session_id_from(text: &str, source: &str) -> Result<SessionId> {
    SessionId::new(text).map_err(|e| {
        Error::invalid_input(format!(
            "{source}: {}; import it under another session id (the CLI's --session)",
            e.message()
        ))
    })
}
