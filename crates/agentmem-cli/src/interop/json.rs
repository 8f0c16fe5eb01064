//! agentmem's own format as one JSON document: `{"agentmem_export": 1, "sessions": […],
//! "memories": […]}`, pretty-printed, with the same content as [`super::jsonl`].

use agentmem_core::{Error, Result};

use super::ExportDocument;

/// The document as pretty JSON with a final newline.
pub fn to_string(doc: &ExportDocument) -> Result<String> {
    let mut doc = doc.clone();
    super::canonicalize(&mut doc);
    let mut text = serde_json::to_string_pretty(&doc)
        .map_err(|e| Error::backend("cannot serialize the export").with_source(e))?;
    text.push('\n');
    Ok(text)
}

/// Parses a JSON export; `source` (a file name) prefixes every error, with line and column.
///
/// ```
/// use agentmem_cli::interop::json;
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
