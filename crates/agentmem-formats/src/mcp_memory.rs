//! The file of the MCP reference memory server (`@modelcontextprotocol/server-memory`,
//! `memory.jsonl`): the knowledge graph only, one JSON object a line.
//!
//! ```text
//! {"type":"entity","name":"Alice","entityType":"person","observations":["likes tea"]}
//! {"type":"relation","from":"Alice","to":"Acme","relationType":"works_at"}
//! ```
//!
//! Written exactly as the server's `saveGraph` writes it, so the server reads it back as the
//! same graph: the entities, then the relations, each line `JSON.stringify` of its fields in
//! this order, lines joined by `\n` with no final newline (an empty graph is an empty file).
//!
//! Read as the server's `loadGraph` reads it: lines that are empty or only whitespace are
//! skipped (so a final newline, or none, and `\r\n` line ends all read the same), objects of
//! another `type` are passed over, and keys besides the record's own are ignored. A line that
//! is not a JSON object, or an entity or relation missing a field or holding a field of the
//! wrong type, is a `CorruptData` error naming the line; the whole text is parsed before
//! anything is returned, so a malformed file never reaches a store in part.
//!
//! The graph is returned as the file holds it: a file the server wrote may hold two entities
//! of one name or an observation twice. An import merges it by agentmem's rules
//! (`agentmem-transfer`'s `import_graph`), keeping the first.
//!
//! ```
//! use agentmem_core::{Entity, KnowledgeGraph, Relation};
//! use agentmem_formats::mcp_memory;
//!
//! let graph = KnowledgeGraph {
//!     entities: vec![Entity::new("Alice", "person").with_observations(["likes tea"])],
//!     relations: vec![Relation::new("Alice", "Acme", "works_at")],
//! };
//! let text = mcp_memory::to_string(&graph)?;
//! assert_eq!(
//!     text,
//!     "{\"type\":\"entity\",\"name\":\"Alice\",\"entityType\":\"person\",\"observations\":[\"likes tea\"]}\n\
//!      {\"type\":\"relation\",\"from\":\"Alice\",\"to\":\"Acme\",\"relationType\":\"works_at\"}"
//! );
//! assert_eq!(mcp_memory::parse(&text, "memory.jsonl")?, graph);
//! assert_eq!(mcp_memory::parse(&format!("{text}\n\n"), "memory.jsonl")?, graph);
//! # Ok::<(), agentmem_core::Error>(())
//! ```

use std::path::Path;

use agentmem_core::{Entity, Error, KnowledgeGraph, Relation, Result};
use serde::Serialize;
use serde_json::Value;

use crate::graph::validate_graph;
use crate::ExportDocument;

/// One line as the server writes it: `type` first, then the record's fields in order.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Line<'a> {
    Entity(&'a Entity),
    Relation(&'a Relation),
}

fn line_text(line: &Line<'_>) -> Result<String> {
    // serde_json escapes strings as JSON.stringify does (`"`, `\`, control characters as
    // \b \t \n \f \r or lowercase \u00xx; everything else as is).
    serde_json::to_string(line)
        .map_err(|e| Error::backend("cannot serialize a line").with_source(e))
}

/// The graph as the server's `saveGraph` writes it (see the [module docs](self)).
pub fn to_string(graph: &KnowledgeGraph) -> Result<String> {
    let entities = graph.entities.iter().map(Line::Entity);
    let relations = graph.relations.iter().map(Line::Relation);
    let lines = entities
        .chain(relations)
        .map(|line| line_text(&line))
        .collect::<Result<Vec<_>>>()?;
    Ok(lines.join("\n"))
}

// `export` writes the file whole, as the server does (through a temporary file and a rename).
crate::fs::text_io!(KnowledgeGraph, "graph": write, export, read, import);

/// Parses the server's file (see the [module docs](self)); `source` (a file name) prefixes
/// every error, with the line number. Texts a store would refuse (NUL, oversized) are refused
/// too, naming the entity or relation.
///
/// ```
/// use agentmem_formats::mcp_memory;
/// let text = "{\"type\":\"entity\",\"name\":\"A\",\"entityType\":\"t\",\"observations\":[]}\n\
///             \n  \n{\"type\":\"note\",\"text\":\"passed over\"}\n";
/// let graph = mcp_memory::parse(text, "memory.jsonl")?;
/// assert_eq!(graph.entities.len(), 1);
/// let err = mcp_memory::parse("{\"type\":\"relation\",\"from\":\"A\"}", "memory.jsonl").unwrap_err();
/// assert!(err.to_string().contains("memory.jsonl line 1"), "{err}");
/// # Ok::<(), agentmem_core::Error>(())
/// ```
pub fn parse(text: &str, source: &str) -> Result<KnowledgeGraph> {
    // Node reads a byte-order mark as a character, which JSON.parse refuses; accepting it
    // costs nothing.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut graph = KnowledgeGraph::default();
    for (i, line) in text.split('\n').enumerate() {
        if line.chars().all(js_whitespace) {
            continue;
        }
        let at = |why: String| Error::corrupt(format!("{source} line {}: {why}", i + 1));
        // Into a `Value` first: a repeated key keeps its last value, as in JSON.parse.
        let value: Value = serde_json::from_str(line).map_err(|e| at(without_line(&e)))?;
        let Value::Object(fields) = value else {
            return Err(at("expected a JSON object".into()));
        };
        match fields.get("type").and_then(Value::as_str) {
            Some("entity") => graph.entities.push(
                serde_json::from_value(Value::Object(fields))
                    .map_err(|e| at(format!("an entity: {e}")))?,
            ),
            Some("relation") => graph.relations.push(
                serde_json::from_value(Value::Object(fields))
                    .map_err(|e| at(format!("a relation: {e}")))?,
            ),
            // The server passes over any other record.
            _ => {}
        }
    }
    validate_graph(&graph, source)?;
    Ok(graph)
}

/// A JSON error naming the column only: its line is always 1, the file's is named already.
fn without_line(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let position = format!(" at line {} column {}", e.line(), e.column());
    match text.strip_suffix(&position) {
        Some(message) => format!("{message} (column {})", e.column()),
        None => text,
    }
}

/// Whether `c` is whitespace to JavaScript's `String.prototype.trim`, which the server uses to
/// skip blank lines: Unicode's `White_Space` but U+0085, plus the byte-order mark U+FEFF.
fn js_whitespace(c: char) -> bool {
    (c.is_whitespace() && c != '\u{85}') || c == '\u{feff}'
}

/// The document holding the graph of the file at `path` (what [`Format::McpMemory`]
/// imports).
///
/// [`Format::McpMemory`]: crate::Format::McpMemory
pub(crate) fn import_document(path: &Path) -> Result<ExportDocument> {
    Ok(ExportDocument {
        graph: import(path)?,
        ..ExportDocument::new()
    })
}

/// Writes the graph of `doc` to `path`; a document holding anything else is refused
/// (`InvalidInput`), since the format keeps the graph only.
pub(crate) fn export_document(doc: &ExportDocument, path: &Path) -> Result<()> {
    graph_only(doc)?;
    export(&doc.graph, path)
}

/// Refuses a document holding sessions, memory items or checkpoints.
pub(crate) fn graph_only(doc: &ExportDocument) -> Result<()> {
    let other = [
        (doc.sessions.len(), "session(s)"),
        (doc.memories.len(), "memory item(s)"),
        (doc.checkpoints.len(), "checkpoint(s)"),
    ];
    match other.iter().find(|(n, _)| *n > 0) {
        Some((n, what)) => Err(Error::invalid_input(format!(
            "the mcp-memory format keeps the knowledge graph only, and the document holds {n} \
             {what}: export them in agentmem's own formats (jsonl, json, yaml)"
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentmem_core::ErrorKind;

    fn graph() -> KnowledgeGraph {
        KnowledgeGraph {
            entities: vec![
                Entity::new("Alice", "person").with_observations(["likes tea", "lives in Kyoto"]),
                Entity::new("Ünïcødé 日本 \u{1f600}", "thing \"quoted\"").with_observations([
                    "tab\there",
                    "line\nbreak\r",
                    "\u{1}\u{1f}\u{7f}",
                    "\\/",
                ]),
                Entity::new("empty", ""),
            ],
            relations: vec![
                Relation::new("Alice", "Ünïcødé 日本 \u{1f600}", "knows"),
                Relation::new("Alice", "nobody", "\u{2028}\u{2029}"),
            ],
        }
    }

    #[test]
    fn round_trips_with_and_without_a_final_newline() {
        let text = to_string(&graph()).unwrap();
        assert!(!text.ends_with('\n'));
        assert_eq!(text.lines().count(), 5);
        for variant in [
            text.clone(),
            format!("{text}\n"),
            format!("\n\n{}\n \t\n", text.replace('\n', "\n\n   \n")),
            text.replace('\n', "\r\n"),
        ] {
            assert_eq!(parse(&variant, "m").unwrap(), graph(), "{variant:?}");
        }
        assert_eq!(to_string(&KnowledgeGraph::default()).unwrap(), "");
        assert!(parse("", "m").unwrap().is_empty());
        assert!(parse("\n \u{a0}\u{feff}\n", "m").unwrap().is_empty());
    }

    /// The bytes JSON.stringify gives: no spaces, keys in the server's order, control
    /// characters escaped in their short or lowercase \u00xx form, the rest as is.
    #[test]
    fn writes_what_save_graph_writes() {
        let text = to_string(&graph()).unwrap();
        let lines: Vec<&str> = text.split('\n').collect();
        assert_eq!(
            lines[0],
            r#"{"type":"entity","name":"Alice","entityType":"person","observations":["likes tea","lives in Kyoto"]}"#
        );
        assert_eq!(
            lines[1],
            "{\"type\":\"entity\",\"name\":\"Ünïcødé 日本 \u{1f600}\",\"entityType\":\"thing \\\"quoted\\\"\",\
             \"observations\":[\"tab\\there\",\"line\\nbreak\\r\",\"\\u0001\\u001f\u{7f}\",\"\\\\/\"]}"
        );
        assert_eq!(
            lines[4],
            "{\"type\":\"relation\",\"from\":\"Alice\",\"to\":\"nobody\",\"relationType\":\"\u{2028}\u{2029}\"}"
        );
    }

    #[test]
    fn other_records_and_extra_keys_are_passed_over() {
        let text = concat!(
            r#"{"type":"entity","name":"A","entityType":"t","observations":["x","x"],"extra":1}"#,
            "\n",
            r#"{"type":"Entity","name":"B"}"#,
            "\n",
            r#"{"name":"C"}"#,
            "\n",
            r#"{"type":7}"#,
            "\n",
            r#"{"type":"entity","name":"A","entityType":"u","observations":[]}"#,
            "\n",
            r#"{"type":"relation","relationType":"r","to":"B","from":"A","type":"relation"}"#,
        );
        let graph = parse(text, "m").unwrap();
        // As the file holds it: duplicates are the import's to merge.
        assert_eq!(graph.entities.len(), 2);
        assert_eq!(graph.entities[0].observations, ["x", "x"]);
        assert_eq!(graph.relations, [Relation::new("A", "B", "r")]);
    }

    #[test]
    fn a_malformed_line_is_an_error_naming_it() {
        let good = r#"{"type":"entity","name":"A","entityType":"t","observations":[]}"#;
        for (bad, line) in [
            (format!("{good}\n\n{{\"type\":\"entity\""), 3),
            (format!("{good}\nnot json"), 2),
            (format!("{good}\n[1]"), 2),
            (format!("{good}\nnull"), 2),
            (format!("\n{good}\n{{\"type\":\"entity\",\"name\":\"B\"}}"), 3),
            (
                format!("{{\"type\":\"entity\",\"name\":1,\"entityType\":\"t\",\"observations\":[]}}\n{good}"),
                1,
            ),
            (format!("{good}\n{{\"type\":\"relation\",\"from\":\"A\",\"to\":null,\"relationType\":\"r\"}}"), 2),
            (
                format!("{good}\n{{\"type\":\"entity\",\"name\":\"B\",\"entityType\":\"t\",\"observations\":[1]}}"),
                2,
            ),
            (format!("{good} {good}"), 1),
        ] {
            let err = parse(&bad, "memory.jsonl").unwrap_err();
            assert_eq!(err.kind(), ErrorKind::CorruptData, "{bad:?}");
            assert!(
                err.message().starts_with(&format!("memory.jsonl line {line}: ")),
                "{bad:?}: {err}"
            );
        }
        let err = parse("{\"type\":\"entity\"", "m").unwrap_err();
        assert_eq!(
            err.message(),
            "m line 1: EOF while parsing an object (column 16)"
        );
        let nul = r#"{"type":"entity","name":"A\u0000","entityType":"t","observations":[]}"#;
        assert_eq!(parse(nul, "m").unwrap_err().kind(), ErrorKind::CorruptData);
    }

    #[test]
    fn every_prefix_parses_or_fails_cleanly() {
        let text = to_string(&graph()).unwrap();
        for cut in (0..text.len()).filter(|c| text.is_char_boundary(*c)) {
            let _ = parse(&text[..cut], "m");
        }
    }

    #[test]
    fn only_the_graph_is_exported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memory.jsonl");
        let mut doc = ExportDocument::new();
        doc.graph = graph();
        export_document(&doc, &path).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            to_string(&graph()).unwrap()
        );
        assert_eq!(import_document(&path).unwrap(), doc);
        doc.memories.push(agentmem_core::MemoryItem::new(
            agentmem_core::MemoryKind::Fact,
            "f",
        ));
        let err = export_document(&doc, &path).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert!(err.message().contains("memory item"), "{err}");
    }
}
