//! The JSON-lines files: the session log, the archive log, and torn-tail detection.
//!
//! `session.jsonl`: the first line is a [`SessionHeader`]; every further line is either one
//! [`Message`] object or, for a batch of several messages appended at once, a JSON array of
//! them. A batch on one line is what makes it all-or-nothing after a crash: a torn line takes
//! the whole batch with it, never a part of it.
//!
//! `archive/history_<ts>.jsonl`: an [`ArchiveHeader`] line, then one message per line.

use std::path::Path;

use agentmem_core::{Error, Message, Metadata, Result, SessionId};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::fsutil::{corrupt_line, io_error, read_range};
use crate::repair::Findings;

/// `format` of a session log header.
pub(crate) const SESSION_FORMAT: &str = "agentmem.session";
/// `format` of an archive log header.
pub(crate) const ARCHIVE_FORMAT: &str = "agentmem.archive";
/// Version of both log formats written by this build.
pub(crate) const LOG_VERSION: u32 = 1;

/// The first line of `session.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SessionHeader {
    /// Always [`SESSION_FORMAT`].
    pub(crate) format: String,
    /// Format version.
    pub(crate) version: u32,
    /// When the session was first written.
    pub(crate) created_at: DateTime<Utc>,
    /// When the log was last rewritten (save_session, compaction).
    pub(crate) updated_at: DateTime<Utc>,
    /// How many compactions the session went through: every archive records the generation
    /// it was taken from, which is older than the session's unless the compaction that wrote
    /// it was interrupted before replacing the session.
    pub(crate) generation: u64,
    /// The `**Conversation:**` name in `MEMORY.md`.
    pub(crate) conversation: String,
    /// The `**Created:**` time in `MEMORY.md` (the session's creation, then the last compaction).
    pub(crate) memory_created: DateTime<Utc>,
    /// Session metadata from `save_session`.
    #[serde(default)]
    pub(crate) metadata: Metadata,
}

impl SessionHeader {
    pub(crate) fn new(session: &SessionId, created_at: DateTime<Utc>) -> Self {
        SessionHeader {
            format: SESSION_FORMAT.into(),
            version: LOG_VERSION,
            created_at,
            updated_at: created_at,
            generation: 0,
            conversation: session.as_str().to_string(),
            memory_created: created_at,
            metadata: Metadata::new(),
        }
    }
}

/// The first line of an archive's `.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ArchiveHeader {
    /// Always [`ARCHIVE_FORMAT`].
    pub(crate) format: String,
    /// Format version.
    pub(crate) version: u32,
    /// The session it came from.
    pub(crate) session: SessionId,
    /// The session's generation when it was archived.
    pub(crate) generation: u64,
    /// When the compaction happened.
    pub(crate) created_at: DateTime<Utc>,
    /// How many messages follow.
    pub(crate) message_count: u64,
    /// The `**Conversation:**` name of the archived `MEMORY.md`.
    pub(crate) conversation: String,
    /// The `**Created:**` time of the archived `MEMORY.md` (to regenerate its `.md` exactly).
    pub(crate) memory_created: DateTime<Utc>,
}

/// A log's damaged last line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TornTail {
    /// Its 1-based line number.
    pub(crate) line: u64,
    /// Why it is unusable.
    pub(crate) reason: String,
}

/// The result of reading lines of a log: the parsed records, how many bytes of the input
/// were whole records, the torn last line if there was one, and (when kept, see
/// `keep_bad` of [`scan_lines`]) the complete lines that did not parse.
#[derive(Debug)]
pub(crate) struct Scan<T> {
    pub(crate) records: Vec<T>,
    pub(crate) valid_len: usize,
    pub(crate) lines: u64,
    pub(crate) torn: Option<TornTail>,
    pub(crate) bad: Vec<BadLine>,
}

impl<T> Scan<T> {
    /// The lines of the log `bytes` (the bytes scanned) to set aside, byte for byte: those that
    /// do not parse, and a first line cut off (the whole log one piece without a newline);
    /// what is wrong with them (see [`BadLine::set_aside`]); and the records read.
    pub(crate) fn set_aside(self, bytes: &[u8]) -> (Vec<u8>, String, Vec<T>) {
        let mut bad = self.bad;
        if let Some(torn) = self.torn.filter(|t| t.line == 1) {
            bad.push(BadLine {
                line: 1,
                reason: torn.reason,
                bytes: 0..bytes.len(),
            });
        }
        let (kept, problem) = BadLine::set_aside(bytes, &bad);
        (kept, problem, self.records)
    }
}

/// A complete line of a log that does not parse: not a crash artefact, kept for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadLine {
    /// Its 1-based line number.
    pub(crate) line: u64,
    /// Why it does not parse.
    pub(crate) reason: String,
    /// Its bytes in the input, without the newline.
    pub(crate) bytes: std::ops::Range<usize>,
}

impl BadLine {
    /// The lines `bad` of `bytes` byte for byte (each with its newline, when it has one), as
    /// they are set aside, and what is wrong with them, for people: `line 2, line 5 does not
    /// parse (<why line 2 does not>)`.
    pub(crate) fn set_aside(bytes: &[u8], bad: &[BadLine]) -> (Vec<u8>, String) {
        let mut kept = Vec::new();
        for line in bad {
            let newline = bytes.get(line.bytes.end) == Some(&b'\n');
            let end = line.bytes.end + usize::from(newline);
            kept.extend_from_slice(&bytes[line.bytes.start..end]);
        }
        let numbers: Vec<String> = bad.iter().map(|b| b.line.to_string()).collect();
        let why = bad.first().map_or("", |b| b.reason.as_str());
        let problem = format!("line {} does not parse ({why})", numbers.join(", line "));
        (kept, problem)
    }
}

/// Parses the lines of `bytes`, whose first line is line number `first_line` of `path`.
///
/// Only the end of the log may be torn (a crash mid-append leaves at most that): a last piece
/// without a newline, or a last line of nothing but NUL bytes (a hole the file system filled
/// with zeros), becomes [`Scan::torn`]. A complete line that does not parse, last or not, is
/// `CorruptData` naming the file and line: an append writes its newline last, so a whole line
/// is not a crash artefact, and dropping it could lose an acknowledged message. With
/// `keep_bad`, such lines are kept in [`Scan::bad`] (with their place in `bytes`) instead of
/// failing the scan, so they can be set aside whole.
pub(crate) fn scan_lines<T>(
    bytes: &[u8], first_line: u64, path: &Path, keep_bad: bool,
    mut parse: impl FnMut(u64, &[u8]) -> std::result::Result<T, String>,
) -> Result<Scan<T>> {
    let mut bad = Vec::new();
    let mut records = Vec::new();
    let mut offset = 0usize;
    let mut line = first_line;
    while offset < bytes.len() {
        let Some(nl) = bytes[offset..].iter().position(|&b| b == b'\n') else {
            return Ok(Scan {
                records,
                valid_len: offset,
                lines: line - first_line,
                torn: Some(TornTail {
                    line,
                    reason: format!(
                        "{} bytes without a newline at the end",
                        bytes.len() - offset
                    ),
                }),
                bad,
            });
        };
        let end = offset + nl;
        match parse(line, &bytes[offset..end]) {
            Ok(record) => records.push(record),
            Err(why) if end + 1 == bytes.len() && bytes[offset..end].iter().all(|&b| b == 0) => {
                return Ok(Scan {
                    records,
                    valid_len: offset,
                    lines: line - first_line,
                    torn: Some(TornTail { line, reason: why }),
                    bad,
                })
            }
            Err(reason) if keep_bad => bad.push(BadLine {
                line,
                reason,
                bytes: offset..end,
            }),
            Err(why) => return Err(corrupt_line(path, line, why)),
        }
        offset = end + 1;
        line += 1;
    }
    Ok(Scan {
        records,
        valid_len: offset,
        lines: line - first_line,
        torn: None,
        bad,
    })
}

/// What [`read_tail`] found past the part of a log read before.
#[derive(Debug)]
pub(crate) enum Tail<T> {
    /// Every new complete line parsed (a torn last line, never acknowledged, was reported and
    /// cut off), and the reader's position moved past them: the records.
    Read(Vec<T>),
    /// Complete lines that do not parse, or a first line cut off: the bytes read and their
    /// scan, for the caller to set aside (the position is left as it was).
    Damaged { bytes: Vec<u8>, scan: Scan<T> },
}

/// Reads an append-only log (`file`, at `path`) from the reader's position (`len` bytes and
/// `lines` lines read, moved past what is read) to its end, as the memory log and a checkpoint thread's log are read:
/// `refuse_newer` checks a whole log's first line; `keep_bad` as in [`scan_lines`]. A first
/// line cut off is damage, not a crash artefact: those logs are created whole by a rename.
pub(crate) fn read_tail<T>(
    file: &std::fs::File, path: &Path, (len, lines): (&mut u64, &mut u64), keep_bad: bool,
    refuse_newer: impl FnOnce(&[u8], &Path) -> Result<()>,
    parse: impl FnMut(u64, &[u8]) -> std::result::Result<T, String>, f: &mut Findings,
) -> Result<Tail<T>> {
    let end = file
        .metadata()
        .map_err(|e| io_error(path, "cannot stat", e))?
        .len();
    let start = *len;
    let bytes = read_range(file, path, start, end)?;
    let whole = start == 0;
    if whole {
        refuse_newer(&bytes, path)?;
    }
    let scan = scan_lines(&bytes, *lines + 1, path, keep_bad, parse)?;
    let headless = whole && scan.torn.as_ref().is_some_and(|t| t.line == 1);
    if !scan.bad.is_empty() || headless {
        return Ok(Tail::Damaged { bytes, scan });
    }
    let valid = start + scan.valid_len as u64;
    if let Some(torn) = &scan.torn {
        f.torn_tail(None, path, file, torn, valid)?;
    }
    *len = valid;
    *lines += scan.lines;
    Ok(Tail::Read(scan.records))
}

/// A record of a log whose first line, and no other, is a header (`"op": "header"`) naming
/// the log's format and version: the memory log, a checkpoint thread's log, the graph's log.
pub(crate) trait HeadedRecord: serde::de::DeserializeOwned {
    /// The format and version the record names, when it is a header.
    fn header(&self) -> Option<(&str, u32)>;
}

/// A kind of log of [`HeadedRecord`]s: what its messages call it, and the header this build
/// writes.
#[derive(Debug)]
pub(crate) struct HeadedLog {
    /// What its records are called ("not a graph record").
    pub(crate) kind: &'static str,
    /// What the log is called ("not a graph log").
    pub(crate) name: &'static str,
    /// The header's `format`.
    pub(crate) format: &'static str,
    /// The newest version this build reads (and the one it writes).
    pub(crate) version: u32,
}

impl HeadedLog {
    /// Parses line `line` (1-based) of such a log: line 1 is a header of its format and of a
    /// version this build reads, no other line is a header.
    pub(crate) fn parse<T: HeadedRecord>(
        &self, line: u64, bytes: &[u8],
    ) -> std::result::Result<T, String> {
        let record: T = serde_json::from_slice(bytes)
            .map_err(|e| format!("not a {} record: {e}", self.kind))?;
        match (record.header(), line) {
            (Some((format, version)), 1) => {
                if format != self.format {
                    return Err(format!("not a {} (format {format:?})", self.name));
                }
                if version > self.version {
                    return Err(format!(
                        "{} log version {version} is newer than this agentmem understands",
                        self.kind
                    ));
                }
            }
            (Some(_), _) => return Err("a header in the middle of the log".into()),
            (None, 1) => return Err("the log does not start with a header".into()),
            (None, _) => {}
        }
        Ok(record)
    }

    /// `Unsupported` when the log `bytes` start with the header of a newer version (see
    /// [`refuse_newer_header`]).
    pub(crate) fn refuse_newer(&self, bytes: &[u8], path: &Path) -> Result<()> {
        refuse_newer_header(bytes, path, self.version)
    }
}

/// `Unsupported` when the log `bytes` start with a header line (`"op": "header"`) of a version
/// above `max`: its lines are not unreadable, only unknown to this build, so none of them is
/// set aside (the `refuse_newer` of [`read_tail`], for logs whose header has that shape).
pub(crate) fn refuse_newer_header(bytes: &[u8], path: &Path, max: u32) -> Result<()> {
    #[derive(Deserialize)]
    struct Header {
        op: String,
        version: u32,
    }
    let first = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    match serde_json::from_slice::<Header>(first) {
        Ok(header) if header.op == "header" && header.version > max => {
            Err(Error::unsupported(format!(
                "{} has version {}; this agentmem understands up to {max}: upgrade agentmem",
                path.display(),
                header.version
            )))
        }
        _ => Ok(()),
    }
}

/// Writes `line` at the end of the open log `file` (at `path`, whose whole records end at
/// `len`), fsynced under fsync durability. On failure the file is cut back to `len`, so no
/// part of the line stays.
pub(crate) fn append_line(
    file: &mut std::fs::File, path: &Path, len: u64, line: &[u8],
    durability: crate::config::Durability,
) -> Result<()> {
    use std::io::Write;
    let written = file.write_all(line).and_then(|()| {
        if durability == crate::config::Durability::Fsync {
            file.sync_data()
        } else {
            Ok(())
        }
    });
    if let Err(e) = written {
        let _ = file.set_len(len);
        return Err(io_error(path, "cannot append to", e));
    }
    Ok(())
}

/// Parses a session log header line.
pub(crate) fn parse_session_header(line: &[u8]) -> std::result::Result<SessionHeader, String> {
    let header: SessionHeader =
        serde_json::from_slice(line).map_err(|e| format!("not a session header: {e}"))?;
    if header.format != SESSION_FORMAT {
        return Err(format!("not a session header (format {:?})", header.format));
    }
    if header.version > LOG_VERSION {
        return Err(format!(
            "session log version {} is newer than this agentmem understands ({LOG_VERSION})",
            header.version
        ));
    }
    Ok(header)
}

/// Parses an archive log header line.
pub(crate) fn parse_archive_header(line: &[u8]) -> std::result::Result<ArchiveHeader, String> {
    let header: ArchiveHeader =
        serde_json::from_slice(line).map_err(|e| format!("not an archive header: {e}"))?;
    if header.format != ARCHIVE_FORMAT {
        return Err(format!(
            "not an archive header (format {:?})",
            header.format
        ));
    }
    if header.version > LOG_VERSION {
        return Err(format!(
            "archive version {} is newer than this agentmem understands ({LOG_VERSION})",
            header.version
        ));
    }
    Ok(header)
}

/// Parses one entry line of a session log: a message, or an array of messages (a batch).
pub(crate) fn parse_entry(line: &[u8]) -> std::result::Result<Vec<Message>, String> {
    if line.first() == Some(&b'[') {
        serde_json::from_slice(line).map_err(|e| format!("not a batch of messages: {e}"))
    } else {
        serde_json::from_slice::<Message>(line)
            .map(|m| vec![m])
            .map_err(|e| format!("not a message: {e}"))
    }
}

/// Serializes `value` as one line (JSON never contains a raw newline).
pub(crate) fn push_line<T: Serialize>(out: &mut Vec<u8>, value: &T) -> Result<()> {
    serde_json::to_writer(&mut *out, value)
        .map_err(|e| Error::backend("cannot serialize a record").with_source(e))?;
    out.push(b'\n');
    Ok(())
}

/// The entry line for an append of `messages`: one object for one message, an array for a
/// batch (see the module docs).
pub(crate) fn encode_append(messages: &[Message]) -> Result<Vec<u8>> {
    // Room for the content and the fixed fields, so the buffer rarely grows while encoding.
    let content: usize = messages.iter().map(|m| m.content.len()).sum();
    let mut out = Vec::with_capacity(content + 256 * messages.len());
    match messages {
        [one] => push_line(&mut out, one)?,
        many => push_line(&mut out, &many)?,
    }
    Ok(out)
}

/// A whole log (a session's, with a [`SessionHeader`], or an archive's, with an
/// [`ArchiveHeader`]): the header, then one message per line.
pub(crate) fn encode_log(header: &impl Serialize, messages: &[Message]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    push_line(&mut out, header)?;
    for m in messages {
        push_line(&mut out, m)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_num(_: u64, l: &[u8]) -> std::result::Result<u32, String> {
        std::str::from_utf8(l)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| "not a number".to_string())
    }

    #[test]
    fn torn_tails_and_corrupt_middles() {
        let p = Path::new("x.jsonl");
        let s = scan_lines(b"1\n2\n", 1, p, false, parse_num).unwrap();
        assert_eq!((s.records, s.valid_len, s.torn), (vec![1, 2], 4, None));
        let s = scan_lines(b"1\n2\n3", 1, p, false, parse_num).unwrap();
        assert_eq!(s.records, vec![1, 2]);
        assert_eq!(s.valid_len, 4);
        assert_eq!(s.torn.unwrap().line, 3);
        let s = scan_lines(b"1\n2\n\0\0\0\n", 5, p, false, parse_num).unwrap();
        assert_eq!(s.valid_len, 4);
        assert_eq!(s.torn.unwrap().line, 7);
        // A whole last line that does not parse is not torn: it is reported, never dropped.
        let e = scan_lines(b"1\n2\nx\n", 5, p, false, parse_num).unwrap_err();
        assert_eq!(e.kind(), agentmem_core::ErrorKind::CorruptData);
        assert!(e.to_string().contains("x.jsonl line 7"), "{e}");
        let e = scan_lines(b"1\nx\n3\n", 1, p, false, parse_num).unwrap_err();
        assert_eq!(e.kind(), agentmem_core::ErrorKind::CorruptData);
        assert!(e.to_string().contains("x.jsonl line 2"), "{e}");
        // Kept aside instead when asked: the records around it and its place.
        let s = scan_lines(b"1\nx\n3\n", 1, p, true, parse_num).unwrap();
        assert_eq!((s.records, s.valid_len, s.torn), (vec![1, 3], 6, None));
        assert_eq!((s.bad[0].line, s.bad[0].bytes.clone()), (2, 2..3));
    }

    #[test]
    fn batches_are_one_line() {
        let msgs = vec![Message::user("a\nb"), Message::assistant("c")];
        let line = encode_append(&msgs).unwrap();
        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
        assert_eq!(parse_entry(&line[..line.len() - 1]).unwrap(), msgs);
        let one = encode_append(&msgs[..1]).unwrap();
        assert_eq!(one[0], b'{');
        assert_eq!(parse_entry(&one[..one.len() - 1]).unwrap(), msgs[..1]);
    }
}
