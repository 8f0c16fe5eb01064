//! agentmem's own format as one YAML document, with the same content as [`super::json`].

use agentmem_core::{Error, Result};

use super::ExportDocument;

/// The document as YAML.
pub fn to_string(doc: &ExportDocument) -> Result<String> {
    let mut doc = doc.clone();
    super::canonicalize(&mut doc);
    serde_norway::to_string(&doc)
        .map_err(|e| Error::backend("cannot serialize the export as YAML").with_source(e))
}

/// Parses a YAML export; `source` (a file name) prefixes every error, with line and column.
///
/// ```
/// use agentmem_cli::interop::yaml;
/// let doc = yaml::parse("agentmem_export: 1\nsessions: []\n", "in.yaml").unwrap();
/// assert!(doc.sessions.is_empty());
/// assert!(yaml::parse("agentmem_export: [", "in.yaml").is_err());
/// ```
pub fn parse(text: &str, source: &str) -> Result<ExportDocument> {
    let doc: ExportDocument =
        serde_norway::from_str(text).map_err(|e| Error::corrupt(format!("{source}: {e}")))?;
    doc.validate(source)?;
    Ok(doc)
}
