//! Reading and writing agent memory as files: agentmem's own lossless formats (`jsonl`,
//! `json`, `yaml`) and the Python frameworks' ones (`swarms`, `praisonai`).
//!
//! Every parser works on text (or a folder) in memory, returns a typed
//! [`Error`] naming the file and line on malformed input, and never
//! panics, so tests and fuzzers can call them directly. Nothing here touches a store: importing
//! is parsing into [`ExportDocument`] and then [`crate::sync::sync_session`].

pub mod json;
pub mod jsonl;
pub mod praisonai;
pub mod swarms;
pub mod yaml;

use std::fmt;
use std::str::FromStr;

use agentmem_core::{ArchiveInfo, Error, MemoryItem, Message, Metadata, Result, SessionId};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The version written in (and required of) agentmem's own export formats.
pub const EXPORT_VERSION: u32 = 1;

/// The file formats `export` writes and `import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// agentmem's own: one JSON record per line (header, sessions, messages, archives, memories).
    Jsonl,
    /// agentmem's own: the same content as one JSON document.
    Json,
    /// agentmem's own: the same content as one YAML document.
    Yaml,
    /// A Swarms agent folder: `MEMORY.md` plus `archive/history_*.md`.
    Swarms,
    /// A praisonaiagents session file `{session_id}.json`.
    PraisonAi,
}

impl Format {
    /// Every format, in the order help texts list them.
    pub const ALL: [Format; 5] = [
        Format::Jsonl,
        Format::Json,
        Format::Yaml,
        Format::Swarms,
        Format::PraisonAi,
    ];

    /// The name used on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Jsonl => "jsonl",
            Format::Json => "json",
            Format::Yaml => "yaml",
            Format::Swarms => "swarms",
            Format::PraisonAi => "praisonai",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Format {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Format::ALL
            .into_iter()
            .find(|f| f.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                Error::invalid_input(format!(
                    "unknown format {s:?}; valid formats are jsonl, json, yaml, swarms, praisonai"
                ))
            })
    }
}

/// Everything an export holds: sessions (with their archives) and memory items.
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
}

impl ExportDocument {
    /// An empty document of the current version.
    pub fn new() -> Self {
        ExportDocument {
            agentmem_export: EXPORT_VERSION,
            sessions: Vec::new(),
            memories: Vec::new(),
        }
    }

    /// Checks what a store would refuse, so an import fails before writing anything: the
    /// version, message and memory ids, and sessions named twice.
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
        Ok(())
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
            created_at: None,
            updated_at: None,
        }
    }

    /// Messages in archives and in the session.
    pub fn total_messages(&self) -> u64 {
        let archived: usize = self.archives.iter().map(|a| a.messages.len()).sum();
        (archived + self.messages.len()) as u64
    }

    /// Checks every message as a store would.
    pub fn validate(&self, source: &str) -> Result<()> {
        let all = self
            .archives
            .iter()
            .flat_map(|a| a.messages.iter())
            .chain(self.messages.iter());
        for message in all {
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
/// unordered; PostgreSQL's `jsonb`, for one, reorders them).
pub fn canonicalize(doc: &mut ExportDocument) {
    doc.sessions.iter_mut().for_each(canonical_session);
    for item in &mut doc.memories {
        canonical_map(&mut item.metadata);
    }
}

/// [`canonicalize`] for one session.
pub fn canonical_session(session: &mut SessionExport) {
    canonical_map(&mut session.metadata);
    let all = session
        .archives
        .iter_mut()
        .flat_map(|a| a.messages.iter_mut())
        .chain(session.messages.iter_mut());
    for m in all {
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
pub fn derived_id(parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            hasher.update([0u8]);
        }
        hasher.update(part.as_bytes());
    }
    hasher
        .finalize()
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Parses `text` as a session id, naming `source` in the error.
pub fn session_id_from(text: &str, source: &str) -> Result<SessionId> {
    SessionId::new(text).map_err(|e| {
        Error::invalid_input(format!(
            "{source}: {}; choose another with --session",
            e.message()
        ))
    })
}
