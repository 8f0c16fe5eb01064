//! agentmem's own line format: one JSON record per line.
//!
//! ```text
//! {"agentmem_export":1}
//! {"type":"session","id":"demo","metadata":{},"messages":2,"archives":1}
//! {"type":"message","id":"…","role":"user","content":"…","timestamp":"…"}      × messages
//! {"type":"archive","messages":3}                                               × archives
//! {"type":"message",…}                                                           × its messages
//! {"type":"memory","id":"…","kind":"fact","text":"…","created_at":"…","updated_at":"…"}
//! {"type":"checkpoint","checkpoint":{"thread":"…","ns":"","id":"…",…},"blobs":[…],"writes":[…]}
//! {"type":"entity","name":"Alice","entityType":"person","observations":["likes tea"]}
//! {"type":"relation","from":"Alice","to":"Acme","relationType":"works_at"}
//! ```
//!
//! The header comes first; then each session record, followed by its current messages and then
//! its archives (oldest first), each archive record followed by its messages; then the memory
//! items; then the checkpoints, one record each with the channel values it reads and its
//! pending writes (opaque bytes in base64); then the knowledge graph: its entities (with their
//! observations), then its relations, in the store's order, each record the line the MCP
//! reference memory server writes for it ([`crate::mcp_memory`]). Counts in the session and
//! archive records make a cut-off file an error rather than a smaller import. Field order is
//! fixed and metadata keys are sorted, so the same content always gives the same bytes.
//!
//! A large store need not be whole in memory to be exported: [`write_header`],
//! [`write_session`], [`write_memory`], [`write_checkpoint`] and [`write_graph`] write it
//! record by record.
//!
//! ```
//! use agentmem_core::Message;
//! use agentmem_formats::{jsonl, ExportDocument, SessionExport};
//!
//! let mut session = SessionExport::new("demo".parse()?);
//! session.messages.push(Message::user("Hello"));
//! let mut doc = ExportDocument::new();
//! doc.sessions.push(session);
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("export.jsonl");
//! jsonl::export(&doc, &path)?;
//! assert_eq!(jsonl::import(&path)?, doc);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::io::Write;

use agentmem_core::{
    CheckpointTuple, Entity, Error, KnowledgeGraph, MemoryItem, Message, Metadata, Relation,
    Result, SessionId, SessionLabels,
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::fs::export_error;
use crate::{ArchiveExport, ExportDocument, SessionExport, EXPORT_VERSION};

#[derive(Serialize, Deserialize)]
struct Header {
    agentmem_export: u32,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Record {
    Session {
        id: SessionId,
        #[serde(default)]
        metadata: Metadata,
        messages: u64,
        archives: u64,
        #[serde(default)]
        labels: SessionLabels,
        #[serde(default)]
        expires_at: Option<DateTime<Utc>>,
    },
    Message(Message),
    Archive {
        messages: u64,
    },
    Memory(MemoryItem),
    Checkpoint(CheckpointTuple),
    Entity(Entity),
    Relation(Relation),
}

/// The same records, borrowed, for writing without copying messages.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum RecordRef<'a> {
    Session {
        id: &'a SessionId,
        metadata: &'a Metadata,
        messages: u64,
        archives: u64,
        #[serde(skip_serializing_if = "SessionLabels::is_empty")]
        labels: &'a SessionLabels,
        #[serde(skip_serializing_if = "Option::is_none")]
        expires_at: Option<DateTime<Utc>>,
    },
    Message(&'a Message),
    Archive {
        messages: u64,
    },
    Memory(&'a MemoryItem),
    Checkpoint(&'a CheckpointTuple),
    Entity(&'a Entity),
    Relation(&'a Relation),
}

fn write_line<W: Write, T: Serialize>(out: &mut W, value: &T) -> Result<()> {
    serde_json::to_writer(&mut *out, value)
        .map_err(|e| Error::backend("cannot serialize a record").with_source(e))?;
    out.write_all(b"\n").map_err(export_error)
}

/// Writes the header line: the first call of an export written record by record.
///
/// ```
/// use agentmem_core::{MemoryItem, MemoryKind, Message};
/// use agentmem_formats::{jsonl, SessionExport};
///
/// let mut out = Vec::new();
/// jsonl::write_header(&mut out)?;
/// for id in ["a", "b"] {
///     // One session at a time, e.g. as read from a store.
///     let mut session = SessionExport::new(id.parse()?);
///     session.messages.push(Message::user(format!("hello from {id}")));
///     jsonl::write_session(&mut out, &session)?;
/// }
/// jsonl::write_memory(&mut out, &MemoryItem::new(MemoryKind::Fact, "likes tea"))?;
/// let doc = jsonl::read(out.as_slice(), "stream")?;
/// assert_eq!((doc.sessions.len(), doc.memories.len()), (2, 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_header<W: Write>(out: &mut W) -> Result<()> {
    write_line(
        out,
        &Header {
            agentmem_export: EXPORT_VERSION,
        },
    )
}

/// Writes one session: its record, its messages, then its archives with their messages.
/// Metadata is written in its map order: canonicalize it first ([`crate::canonical_session`])
/// for deterministic bytes.
pub fn write_session<W: Write>(out: &mut W, session: &SessionExport) -> Result<()> {
    write_line(
        out,
        &RecordRef::Session {
            id: &session.id,
            metadata: &session.metadata,
            messages: session.messages.len() as u64,
            archives: session.archives.len() as u64,
            labels: &session.labels,
            expires_at: session.expires_at,
        },
    )?;
    write_messages(out, &session.messages)?;
    for archive in &session.archives {
        write_line(
            out,
            &RecordRef::Archive {
                messages: archive.messages.len() as u64,
            },
        )?;
        write_messages(out, &archive.messages)?;
    }
    Ok(())
}

fn write_messages<W: Write>(out: &mut W, messages: &[Message]) -> Result<()> {
    for m in messages {
        write_line(out, &RecordRef::Message(m))?;
    }
    Ok(())
}

/// Writes one memory item.
pub fn write_memory<W: Write>(out: &mut W, item: &MemoryItem) -> Result<()> {
    write_line(out, &RecordRef::Memory(item))
}

/// Writes one checkpoint with its blobs and pending writes. Written in the order given:
/// canonicalize it first ([`crate::canonical_checkpoint`]) for deterministic bytes.
///
/// ```
/// use agentmem_core::{Checkpoint, CheckpointKey, CheckpointTuple, TypedBytes};
/// use agentmem_formats::jsonl;
///
/// let key = CheckpointKey { thread: "user:42/chat".parse()?, ns: Default::default(), id: "1".parse()? };
/// let tuple = CheckpointTuple {
///     checkpoint: Checkpoint::new(key, TypedBytes::new("bytes", vec![0, 0xff])),
///     blobs: vec![],
///     writes: vec![],
/// };
/// let mut out = Vec::new();
/// jsonl::write_header(&mut out)?;
/// jsonl::write_checkpoint(&mut out, &tuple)?;
/// let doc = jsonl::read(out.as_slice(), "stream")?;
/// assert_eq!(doc.checkpoints, [tuple]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_checkpoint<W: Write>(out: &mut W, tuple: &CheckpointTuple) -> Result<()> {
    write_line(out, &RecordRef::Checkpoint(tuple))
}

/// Writes the knowledge graph: one record per entity (with its observations), then one per
/// relation, in the graph's order.
///
/// ```
/// use agentmem_core::{Entity, KnowledgeGraph, Relation};
/// use agentmem_formats::jsonl;
///
/// let graph = KnowledgeGraph {
///     entities: vec![Entity::new("Alice", "person").with_observations(["likes tea"])],
///     relations: vec![Relation::new("Alice", "Acme", "works_at")],
/// };
/// let mut out = Vec::new();
/// jsonl::write_header(&mut out)?;
/// jsonl::write_graph(&mut out, &graph)?;
/// assert_eq!(jsonl::read(out.as_slice(), "stream")?.graph, graph);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_graph<W: Write>(out: &mut W, graph: &KnowledgeGraph) -> Result<()> {
    for entity in &graph.entities {
        write_line(out, &RecordRef::Entity(entity))?;
    }
    for relation in &graph.relations {
        write_line(out, &RecordRef::Relation(relation))?;
    }
    Ok(())
}

/// Writes the whole document to `writer` as JSON lines (metadata keys sorted, see
/// [`canonicalize`](crate::canonicalize)) and flushes it.
pub fn write<W: Write>(mut writer: W, doc: &ExportDocument) -> Result<()> {
    let mut doc = doc.clone();
    crate::canonicalize(&mut doc);
    write_header(&mut writer)?;
    for session in &doc.sessions {
        write_session(&mut writer, session)?;
    }
    for item in &doc.memories {
        write_memory(&mut writer, item)?;
    }
    for tuple in &doc.checkpoints {
        write_checkpoint(&mut writer, tuple)?;
    }
    write_graph(&mut writer, &doc.graph)?;
    writer.flush().map_err(export_error)
}

/// The whole document as JSON lines (see [`write()`]).
pub fn to_string(doc: &ExportDocument) -> Result<String> {
    let mut out = Vec::new();
    write(&mut out, doc)?;
    String::from_utf8(out).map_err(|e| Error::backend("export is not UTF-8").with_source(e))
}

// `write` streams (above); the rest as for every text format.
crate::fs::text_io!(ExportDocument, "document": export, read, import);

/// What the parser expects next.
enum Expect {
    /// A session, a memory item, a checkpoint, an entity, a relation, or the end.
    Top,
    /// `left` more messages of the current session, then `archives` archives.
    SessionMessages { left: u64, archives: u64 },
    /// An archive record (of `left` remaining).
    Archive { left: u64 },
    /// `left` more messages of the current archive, then `archives` more archives.
    ArchiveMessages { left: u64, archives: u64 },
}

/// Parses JSON lines; `source` (a file name) prefixes every error, with the line number.
/// The document is checked as [`ExportDocument::validate`] does.
///
/// ```
/// use agentmem_formats::jsonl;
/// let doc = jsonl::parse("{\"agentmem_export\":1}\n", "in.jsonl").unwrap();
/// assert!(doc.sessions.is_empty());
/// let err = jsonl::parse("{\"agentmem_export\":1}\n{\"type\":\"message\"}\n", "in.jsonl").unwrap_err();
/// assert!(err.to_string().contains("in.jsonl line 2"));
/// ```
pub fn parse(text: &str, source: &str) -> Result<ExportDocument> {
    let at = |line: usize, why: String| Error::corrupt(format!("{source} line {line}: {why}"));
    let mut doc = ExportDocument::new();
    let mut lines = text
        .split('\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l.strip_suffix('\r').unwrap_or(l)))
        .filter(|(_, l)| !l.trim().is_empty());

    let (n, first) = lines.next().ok_or_else(|| {
        at(
            1,
            "the file is empty; expected the header {\"agentmem_export\":1}".into(),
        )
    })?;
    let header: Header = serde_json::from_str(first).map_err(|e| {
        at(
            n,
            format!("expected the header {{\"agentmem_export\":1}}: {e}"),
        )
    })?;
    if header.agentmem_export != EXPORT_VERSION {
        return Err(Error::unsupported(format!(
            "{source} line {n}: export version {} is not supported; this agentmem reads version {EXPORT_VERSION}",
            header.agentmem_export
        )));
    }

    let mut expect = Expect::Top;
    let mut last_line = n;
    for (n, line) in lines {
        last_line = n;
        let record: Record = serde_json::from_str(line).map_err(|e| at(n, e.to_string()))?;
        expect = match (expect, record) {
            (
                Expect::Top,
                Record::Session {
                    id,
                    metadata,
                    messages,
                    archives,
                    labels,
                    expires_at,
                },
            ) => {
                let mut s = SessionExport::new(id);
                s.metadata = metadata;
                s.labels = labels;
                s.expires_at = expires_at;
                doc.sessions.push(s);
                next_in_session(messages, archives)
            }
            (Expect::Top, Record::Memory(item)) => {
                doc.memories.push(item);
                Expect::Top
            }
            (Expect::Top, Record::Checkpoint(tuple)) => {
                doc.checkpoints.push(tuple);
                Expect::Top
            }
            (Expect::Top, Record::Entity(entity)) => {
                doc.graph.entities.push(entity);
                Expect::Top
            }
            (Expect::Top, Record::Relation(relation)) => {
                doc.graph.relations.push(relation);
                Expect::Top
            }
            (Expect::SessionMessages { left, archives }, Record::Message(m)) => {
                current(&mut doc)?.messages.push(m);
                next_in_session(left - 1, archives)
            }
            (Expect::Archive { left }, Record::Archive { messages }) => {
                current(&mut doc)?
                    .archives
                    .push(ArchiveExport::new(Vec::new()));
                next_in_archive(messages, left - 1)
            }
            (Expect::ArchiveMessages { left, archives }, Record::Message(m)) => {
                let session = current(&mut doc)?;
                if let Some(a) = session.archives.last_mut() {
                    a.messages.push(m);
                }
                next_in_archive(left - 1, archives)
            }
            (expected, found) => {
                return Err(at(
                    n,
                    format!(
                        "expected {}, found {} record",
                        describe(&expected),
                        kind(&found)
                    ),
                ))
            }
        };
    }
    if !matches!(expect, Expect::Top) {
        return Err(at(
            last_line + 1,
            format!(
                "the file ends early: expected {} (was it cut off?)",
                describe(&expect)
            ),
        ));
    }
    doc.validate(source)?;
    Ok(doc)
}

fn current(doc: &mut ExportDocument) -> Result<&mut SessionExport> {
    doc.sessions
        .last_mut()
        .ok_or_else(|| Error::corrupt("a message record outside any session"))
}

fn next_in_session(messages: u64, archives: u64) -> Expect {
    next(messages, archives, |left, archives| {
        Expect::SessionMessages { left, archives }
    })
}

fn next_in_archive(messages: u64, archives: u64) -> Expect {
    next(messages, archives, |left, archives| {
        Expect::ArchiveMessages { left, archives }
    })
}

/// What follows when `messages` messages (of a session or an archive: `more` expects one of
/// them) and then `archives` archives are still to come.
fn next(messages: u64, archives: u64, more: fn(u64, u64) -> Expect) -> Expect {
    match (messages, archives) {
        (0, 0) => Expect::Top,
        (0, a) => Expect::Archive { left: a },
        (m, a) => more(m, a),
    }
}

fn describe(expect: &Expect) -> String {
    match expect {
        Expect::Top => "a session, memory, checkpoint, entity or relation record".into(),
        Expect::SessionMessages { left, .. } => {
            format!("a message record ({left} more of this session)")
        }
        Expect::Archive { left } => format!("an archive record ({left} more of this session)"),
        Expect::ArchiveMessages { left, .. } => {
            format!("a message record ({left} more of this archive)")
        }
    }
}

fn kind(record: &Record) -> &'static str {
    match record {
        Record::Session { .. } => "a session",
        Record::Message(_) => "a message",
        Record::Archive { .. } => "an archive",
        Record::Memory(_) => "a memory",
        Record::Checkpoint(_) => "a checkpoint",
        Record::Entity(_) => "an entity",
        Record::Relation(_) => "a relation",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentmem_core::{MemoryId, MemoryKind, MessageId, Role};

    fn sample() -> ExportDocument {
        let t = chrono::DateTime::parse_from_rfc3339("2026-04-20T18:35:04.123456Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        let m = |id: &str, text: &str| {
            Message::new(Role::User, text)
                .with_id(MessageId::new(id).expect("valid message id"))
                .with_timestamp(t)
        };
        let mut s = SessionExport::new("demo".parse().unwrap());
        s.metadata.insert("b".into(), 1.into());
        s.metadata.insert("a".into(), "x".into());
        s.messages = vec![m("m3", "now")];
        s.archives = vec![
            ArchiveExport::new(vec![m("m1", "one"), m("m2", "two")]),
            ArchiveExport::new(vec![]),
        ];
        let mut doc = ExportDocument::new();
        doc.sessions.push(s);
        let mut item = MemoryItem::new(MemoryKind::Fact, "likes tea").with_key("drink");
        item.id = MemoryId::new("f1").unwrap();
        item.created_at = t;
        item.updated_at = t;
        doc.memories.push(item);
        doc.graph = KnowledgeGraph {
            entities: vec![Entity::new("Alice", "person").with_observations(["likes tea"])],
            relations: vec![Relation::new("Alice", "Acme", "works_at")],
        };
        doc
    }

    #[test]
    fn round_trips_byte_for_byte() {
        let text = to_string(&sample()).unwrap();
        let doc = parse(&text, "x").unwrap();
        assert_eq!(doc, sample());
        assert_eq!(to_string(&doc).unwrap(), text);
        assert!(text.starts_with("{\"agentmem_export\":1}\n{\"type\":\"session\",\"id\":\"demo\",\"metadata\":{\"a\":\"x\",\"b\":1},\"messages\":1,\"archives\":2}\n"), "{text}");
        // The graph's records are the MCP reference server's lines, last.
        let graph = crate::mcp_memory::to_string(&sample().graph).unwrap();
        assert!(text.ends_with(&format!("{graph}\n")), "{text}");
    }

    #[test]
    fn graph_records_come_anywhere_at_the_top_level() {
        let text = concat!(
            "{\"agentmem_export\":1}\n",
            "{\"type\":\"relation\",\"from\":\"A\",\"to\":\"B\",\"relationType\":\"r\"}\n",
            "{\"type\":\"entity\",\"name\":\"A\",\"entityType\":\"t\",\"observations\":[]}\n",
            "{\"type\":\"session\",\"id\":\"s\",\"messages\":1,\"archives\":0}\n",
            "{\"type\":\"entity\",\"name\":\"B\",\"entityType\":\"t\",\"observations\":[]}\n",
        );
        let err = parse(text, "f").unwrap_err();
        assert!(
            err.to_string()
                .contains("f line 5: expected a message record"),
            "{err}"
        );
        let text = text.replace("\"messages\":1", "\"messages\":0");
        let doc = parse(&text, "f").unwrap();
        let names: Vec<&str> = doc.graph.entities.iter().map(|e| e.name.as_str()).collect();
        assert_eq!((names, doc.graph.relations.len()), (vec!["A", "B"], 1));
    }

    #[test]
    fn truncation_and_misplaced_records_name_the_line() {
        let text = to_string(&sample()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        // Drop the first message of the first archive (line 5): line 6, the next archive
        // record, comes where a message should.
        let cut: String = lines
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != 4)
            .map(|(_, l)| format!("{l}\n"))
            .collect();
        let err = parse(&cut, "f.jsonl").unwrap_err();
        assert!(err.to_string().contains("f.jsonl line 6"), "{err}");
        let short: String = lines[..3].iter().map(|l| format!("{l}\n")).collect();
        let err = parse(&short, "f.jsonl").unwrap_err();
        assert!(err.to_string().contains("ends early"), "{err}");
        for cut in (0..text.len()).filter(|c| text.is_char_boundary(*c)) {
            // Every prefix parses or fails cleanly; only whole-line cuts can succeed.
            if let Ok(doc) = parse(&text[..cut], "f") {
                assert!(doc.sessions.len() <= 1);
            }
        }
        for bad in [
            "",
            "[]\n",
            "{\"agentmem_export\":2}\n",
            "{\"agentmem_export\":1}\nnot json\n",
        ] {
            assert!(parse(bad, "f").is_err(), "{bad:?}");
        }
    }
}
