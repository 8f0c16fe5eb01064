//! agentmem's own format as one YAML document, with the same content as [`crate::json`].
//!
//! ```
//! use agentmem_core::Message;
//! use agentmem_formats::{yaml, ExportDocument, SessionExport};
//!
//! let mut session = SessionExport::new("demo".parse()?);
//! session.messages.push(Message::user("Hello"));
//! let mut doc = ExportDocument::new();
//! doc.sessions.push(session);
//!
//! let text = yaml::to_string(&doc)?;
//! assert!(text.starts_with("agentmem_export: 1\n"));
//! assert_eq!(yaml::parse(&text, "export.yaml")?, doc);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use agentmem_core::{Error, Result};

use crate::document::parsed;
use crate::ExportDocument;

/// The document as YAML (metadata keys sorted, see [`canonicalize`](crate::canonicalize)).
pub fn to_string(doc: &ExportDocument) -> Result<String> {
    let mut doc = doc.clone();
    crate::canonicalize(&mut doc);
    serde_norway::to_string(&doc)
        .map_err(|e| Error::backend("cannot serialize the export as YAML").with_source(e))
}

/// Parses a YAML export; `source` (a file name) prefixes every error, with line and column.
/// The document is checked as [`ExportDocument::validate`] does.
///
/// ```
/// use agentmem_formats::yaml;
/// let doc = yaml::parse("agentmem_export: 1\nsessions: []\n", "in.yaml").unwrap();
/// assert!(doc.sessions.is_empty());
/// assert!(yaml::parse("agentmem_export: [", "in.yaml").is_err());
/// ```
pub fn parse(text: &str, source: &str) -> Result<ExportDocument> {
    parsed(serde_norway::from_str(text), source)
}

// `read`, `import`, `write` and `export`, as for every one-document format.
crate::fs::document_io!();
