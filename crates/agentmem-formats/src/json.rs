//! agentmem's own format as one JSON document: `{"agentmem_export": 1, "sessions": […],
//! "memories": […]}`, pretty-printed, with the same content as [`crate::jsonl`].
//!
//! ```
//! use agentmem_core::Message;
//! use agentmem_formats::{json, ExportDocument, SessionExport};
//!
//! let mut session = SessionExport::new("demo".parse()?);
//! session.messages.push(Message::user("Hello"));
//! let mut doc = ExportDocument::new();
//! doc.sessions.push(session);
//!
//! let mut out = Vec::new();
//! json::write(&mut out, &doc)?;
//! assert_eq!(json::read(out.as_slice(), "export.json")?, doc);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::io::{Read, Write};
use std::path::Path;

use agentmem_core::{Error, Result};

use crate::fs::{read_text, read_to_string, write_all, write_atomic};
use crate::ExportDocument;

/// The document as pretty JSON with a final newline (metadata keys sorted, see
/// [`canonicalize`](crate::canonicalize)).
pub fn to_string(doc: &ExportDocument) -> Result<String> {
    let mut doc = doc.clone();
    crate::canonicalize(&mut doc);
    let mut text = serde_json::to_string_pretty(&doc)
        .map_err(|e| Error::backend("cannot serialize the export").with_source(e))?;
    text.push('\n');
    Ok(text)
}

/// Parses a JSON export; `source` (a file name) prefixes every error, with line and column.
/// The document is checked as [`ExportDocument::validate`] does.
///
/// ```
/// use agentmem_formats::json;
/// let doc = json::parse("{\"agentmem_export\": 1, \"sessions\": []}", "in.json").unwrap();
/// assert!(doc.memories.is_empty());
/// assert!(json::parse("{\"sessions\": 3}", "in.json").unwrap_err().to_string().contains("in.json"));
/// ```
pub fn parse(text: &str, source: &str) -> Result<ExportDocument> {
    let doc: ExportDocument =
        serde_json::from_str(text).map_err(|e| Error::corrupt(format!("{source}: {e}")))?;
    doc.validate(source)?;
    Ok(doc)
}

/// [`parse`]s everything `reader` yields (UTF-8 text).
pub fn read<R: Read>(reader: R, source: &str) -> Result<ExportDocument> {
    parse(&read_text(reader, source)?, source)
}

/// [`parse`]s the file at `path`.
pub fn import(path: impl AsRef<Path>) -> Result<ExportDocument> {
    let path = path.as_ref();
    parse(&read_to_string(path)?, &path.display().to_string())
}

/// Writes the document ([`to_string`]) to `writer`.
pub fn write<W: Write>(writer: W, doc: &ExportDocument) -> Result<()> {
    write_all(writer, to_string(doc)?.as_bytes())
}

/// Writes the document ([`to_string`]) to the file `path`, whole (through a temporary file
/// and a rename) and readable by its owner only.
pub fn export(doc: &ExportDocument, path: impl AsRef<Path>) -> Result<()> {
    write_atomic(path.as_ref(), to_string(doc)?.as_bytes())
}
