//! agentmem's own format as one JSON document: `{"agentmem_export": 1, "sessions": […],
//! "memories": […], "checkpoints": […], "graph": {"entities": […], "relations": […]}}`
//! (`checkpoints` and `graph` only when there are some), pretty-printed, with the same content
//! as [`crate::jsonl`].
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

use agentmem_core::{Error, Result};

use crate::document::parsed;
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
    parsed(serde_json::from_str(text), source)
}

crate::fs::text_io!(ExportDocument, "document": read, import, write, export);
