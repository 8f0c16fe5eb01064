//! Swarms: the `MEMORY.md` text and agent folders (`MEMORY.md` plus `archive/history_*.md`),
//! both directions.
//!
//! # `MEMORY.md`
//!
//! A Swarms agent with persistent memory keeps `agents/<name>/MEMORY.md`:
//!
//! ```text
//! # Agent Memory\n
//! \n
//! **Conversation:** {conversation}\n
//! **Created:** {iso time}\n
//! \n
//! ---\n
//! \n
//! ## Interaction Log\n
//! \n
//! ### {role} — {iso time}\n        (one block per message, an em dash U+2014)
//! \n
//! {content, stripped}\n
//! \n
//! ---\n
//! \n
//! ```
//!
//! Swarms writes local time with Python's `datetime.isoformat()` on a naive datetime
//! (`2026-04-20T18:35:04.123456`, the fraction only when it is not zero, see
//! [`crate::time::isoformat_in`]) and skips messages whose content is blank. agentmem writes
//! the same: [`render_memory_md`] and [`parse_memory_md`] use the local zone
//! ([`chrono::Local`]: `TZ`, else the system's), the `_in` functions any zone. A naive time is
//! read as its earlier instant when the local clock shows it twice (the hour the clocks go
//! back), so rendering then parsing in one zone gives every instant back except the second
//! pass through that hour, one hour early; the file backend keeps exact UTC times in
//! `session.jsonl` and only parses `MEMORY.md` files that Swarms wrote.
//!
//! ```
//! use agentmem_core::Message;
//! use agentmem_formats::swarms::{parse_memory_md_in, render_block_in, render_header_in};
//! use chrono::{FixedOffset, TimeZone};
//!
//! let new_york_winter = FixedOffset::west_opt(5 * 3600).unwrap();
//! let t = chrono::Utc.with_ymd_and_hms(2026, 1, 20, 18, 35, 4).unwrap();
//! let mut text = render_header_in("ResearchAgent", t, &new_york_winter);
//! text += &render_block_in(&Message::user("Hello").with_timestamp(t), &new_york_winter).unwrap();
//! assert!(text.ends_with("### User — 2026-01-20T13:35:04\n\nHello\n\n---\n\n"));
//! let parsed = parse_memory_md_in(&text, &new_york_winter)?;
//! assert_eq!(parsed.blocks[0].content, "Hello");
//! assert_eq!(parsed.blocks[0].timestamp, t);
//! # Ok::<(), agentmem_core::Error>(())
//! ```
//!
//! ## The format is ambiguous
//!
//! Plain `MEMORY.md` cannot represent every message exactly: content is stripped, blank
//! content is dropped, and content that itself contains a line `---` followed by a blank line
//! and a line `### X — <iso time>` reads back as two blocks, because nothing escapes it.
//! [`parse_memory_md`] takes the first reading (the shortest block). That is why the file
//! backend keeps a structured log (`session.jsonl`) beside `MEMORY.md` and treats `MEMORY.md`
//! as a view derived from it; parsing is only for importing files written by Swarms.
//!
//! # Agent folders
//!
//! A Swarms agent with persistent memory keeps `<workspace>/agents/<agent name>/MEMORY.md`
//! and, after each compaction, a copy of the file as it was in
//! `archive/history_%Y-%m-%d_%H-%M-%S.md`. Importing ([`read_agent_folder`], [`import`]) reads
//! the archives in time order as the session's archives and `MEMORY.md` as its current
//! messages; each block becomes a message with its role and time. `MEMORY.md` keeps no ids, so
//! ids are derived from the session, the file and the block's position and text
//! (re-importing the same folder gives the same ids).
//!
//! The headers (`**Conversation:**`, `**Created:**`) and archive file names are kept in the
//! session metadata under [`SWARMS_KEY`], so exporting an imported folder
//! ([`render_agent_folder`], [`write_agent_folder`], [`export`]) writes the same files again.
//! What the format cannot carry is lost on export: ids, tool pairing, metadata, blank messages,
//! memory items and checkpoints. Times are written and read in local time, as Swarms writes them; an
//! imported header is kept as written, so it is written back the same on any machine.
//!
//! ```
//! use agentmem_core::Message;
//! use agentmem_formats::{swarms, ExportDocument, SessionExport};
//!
//! let workspace = tempfile::tempdir()?;
//! let mut session = SessionExport::new("ResearchAgent".parse()?);
//! session.messages = vec![Message::user("Compare BigQuery and AlloyDB")];
//! let mut doc = ExportDocument::new();
//! doc.sessions.push(session);
//!
//! // One agent folder per session: <workspace>/ResearchAgent/MEMORY.md.
//! swarms::export(&doc, workspace.path())?;
//! assert!(workspace.path().join("ResearchAgent/MEMORY.md").is_file());
//!
//! let back = swarms::import(workspace.path())?;
//! assert_eq!(back.sessions[0].id.as_str(), "ResearchAgent");
//! assert_eq!(back.sessions[0].messages[0].content, "Compare BigQuery and AlloyDB");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod memory_md;

use std::path::{Path, PathBuf};

use agentmem_core::{Error, Message, Result, SessionId};
use chrono::{DateTime, Local, Utc};
use serde_json::{Map, Value};

pub use memory_md::{
    archive_file_stem, parse_memory_md, parse_memory_md_in, render_block, render_block_in,
    render_header, render_header_in, render_memory_md, render_memory_md_in, ParsedBlock,
    ParsedMemory,
};

use crate::document::{derived_id, read_sessions, session_id_from};
use crate::fs::{create_dir_all, find_in_dir, io_error, read_to_string, write_atomic};
use crate::time::{isoformat_in, parse_iso_time_in};
use crate::{ArchiveExport, ExportDocument, Format, SessionExport};

/// The session metadata key holding the Swarms headers and archive file names.
pub const SWARMS_KEY: &str = "swarms";

/// The active memory file's name.
pub const MEMORY_FILE: &str = "MEMORY.md";
/// The archive folder's name.
pub const ARCHIVE_DIR: &str = "archive";

/// Parses one `MEMORY.md` text into messages. `source` names the file in errors, `part`
/// (`MEMORY.md` or the archive's stem) goes into the derived ids.
pub fn parse_messages(
    text: &str, source: &str, session: &SessionId, part: &str,
) -> Result<Vec<Message>> {
    parse_file(text, source, session, part).map(|(_, messages)| messages)
}

/// A file's header as kept in the session metadata: its conversation name and created time
/// (local, as Swarms wrote it).
fn header_value(conversation: &str, created: DateTime<Utc>) -> Map<String, Value> {
    let mut header = Map::new();
    header.insert(
        "conversation".into(),
        Value::String(conversation.to_string()),
    );
    header.insert(
        "created".into(),
        Value::String(isoformat_in(created, &Local)),
    );
    header
}

/// [`parse_messages`], also returning the header as kept in the session metadata.
fn parse_file(
    text: &str, source: &str, session: &SessionId, part: &str,
) -> Result<(Map<String, Value>, Vec<Message>)> {
    let parsed = parse_memory_md(text).map_err(|e| {
        // `parse_memory_md` names the file `MEMORY.md`; say which file it really is.
        let msg = e.message();
        let msg = msg.strip_prefix("MEMORY.md ").unwrap_or(msg);
        Error::corrupt(format!("{source} {msg}"))
    })?;
    let header = header_value(&parsed.conversation, parsed.created);
    let messages = parsed
        .blocks
        .iter()
        .enumerate()
        .map(|(i, block)| {
            // The heading's time as written (the local rendering of what was read from it).
            let time = isoformat_in(block.timestamp, &Local);
            let index = i.to_string();
            let id = derived_id(&[
                "swarms",
                session.as_str(),
                part,
                &index,
                block.role.as_str(),
                &time,
                &block.content,
            ]);
            block.to_message().with_id(id)
        })
        .collect();
    Ok((header, messages))
}

/// The sort key of an archive file stem `history_<ts>[_<n>]`: the time part, then `n`, so
/// `_10` sorts after `_9` and the unsuffixed first one comes first.
fn archive_order(stem: &str) -> (String, u64) {
    let rest = stem.strip_prefix("history_").unwrap_or(stem);
    // `%Y-%m-%d_%H-%M-%S` is 19 characters; anything after is `_<n>`.
    match rest.get(..19).zip(rest.get(19..)) {
        Some((time, suffix)) => {
            let n = suffix
                .strip_prefix('_')
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            (time.to_string(), n)
        }
        None => (rest.to_string(), 0),
    }
}

/// Reads an agent folder (`MEMORY.md` and `archive/history_*.md`) as session `session`.
pub fn read_agent_folder(dir: &Path, session: SessionId) -> Result<SessionExport> {
    let memory = dir.join(MEMORY_FILE);
    let text = read_to_string(&memory)?;
    let mut export = SessionExport::new(session);
    let (mut kept, messages) = parse_file(
        &text,
        &memory.display().to_string(),
        &export.id,
        MEMORY_FILE,
    )?;
    export.messages = messages;
    let archive_dir = dir.join(ARCHIVE_DIR);
    let mut archives: Vec<(String, PathBuf)> = Vec::new();
    match std::fs::read_dir(&archive_dir) {
        Ok(entries) => {
            for entry in entries {
                let entry = entry.map_err(|e| io_error(&archive_dir, "list", e))?;
                let name = entry.file_name().to_string_lossy().into_owned();
                if let Some(stem) = name
                    .strip_suffix(".md")
                    .filter(|s| s.starts_with("history_"))
                {
                    archives.push((stem.to_string(), entry.path()));
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_error(&archive_dir, "list", e)),
    }
    archives.sort_by_key(|(stem, _)| archive_order(stem));
    let mut kept_archives = Vec::new();
    for (stem, path) in archives {
        let text = read_to_string(&path)?;
        let (mut header, messages) =
            parse_file(&text, &path.display().to_string(), &export.id, &stem)?;
        header.insert("file".into(), Value::String(stem));
        kept_archives.push(Value::Object(header));
        export.archives.push(ArchiveExport::new(messages));
    }
    kept.insert("archives".into(), Value::Array(kept_archives));
    export
        .metadata
        .insert(SWARMS_KEY.into(), Value::Object(kept));
    Ok(export)
}

/// The agent folders under `path`, each with the session id it imports as by default (its
/// folder name): `path` itself when it holds `MEMORY.md` (or is one), else every subfolder of
/// `path/agents` (a Swarms workspace) or of `path` that holds one.
pub fn find_agent_folders(path: &Path) -> Result<Vec<(PathBuf, String)>> {
    let name_of = |dir: &Path| {
        dir.canonicalize()
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_default()
    };
    if path.is_file() {
        let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        let name = name_of(&dir);
        return Ok(vec![(dir, name)]);
    }
    if path.join(MEMORY_FILE).is_file() {
        return Ok(vec![(path.to_path_buf(), name_of(path))]);
    }
    let base = if path.join("agents").is_dir() {
        path.join("agents")
    } else {
        path.to_path_buf()
    };
    find_in_dir(
        &base,
        |entry| {
            let dir = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            dir.join(MEMORY_FILE).is_file().then_some((dir, name))
        },
        || {
            format!(
                "{}: no {MEMORY_FILE} there, nor in an agent folder below it",
                path.display()
            )
        },
    )
}

/// The files of a session's agent folder, as (path relative to the folder, content):
/// `MEMORY.md` and one `archive/history_<time>[_<n>].md` per archive.
///
/// Headers carry the session id as the conversation; `**Created:**` is when the file was
/// started (the session's creation, then each compaction), as Swarms writes it. Archives
/// read from a store are named by their compaction time; others by their last message's
/// time (or the Unix epoch when empty).
pub fn render_agent_folder(session: &SessionExport) -> Vec<(PathBuf, String)> {
    let epoch = DateTime::<Utc>::UNIX_EPOCH;
    // What an import kept: headers and archive file names (see the module docs).
    let kept = session.metadata.get(SWARMS_KEY).and_then(Value::as_object);
    let kept_str = |map: Option<&Map<String, Value>>, key: &str| {
        map.and_then(|m| m.get(key))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let kept_archives: Vec<&Map<String, Value>> = kept
        .and_then(|k| k.get("archives"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_object).collect())
        .unwrap_or_default();
    let conversation = |kept: Option<&Map<String, Value>>| {
        kept_str(kept, "conversation").unwrap_or_else(|| session.id.as_str().to_string())
    };
    // The kept time, as written, when it parses.
    let kept_time = |map: Option<&Map<String, Value>>| {
        kept_str(map, "created").and_then(|t| parse_iso_time_in(&t, &Local))
    };
    let first_time = |messages: &[Message]| messages.first().map(|m| m.timestamp);
    let created = session
        .created_at
        .or_else(|| {
            session
                .archives
                .first()
                .and_then(|a| first_time(&a.messages))
        })
        .or_else(|| first_time(&session.messages))
        .unwrap_or(epoch);
    let mut files = Vec::new();
    let mut started = created;
    let mut stems: Vec<String> = Vec::new();
    for (k, archive) in session.archives.iter().enumerate() {
        let kept = kept_archives.get(k).copied();
        let compacted = archive
            .info
            .as_ref()
            .map(|i| i.created_at)
            .or_else(|| archive.messages.last().map(|m| m.timestamp))
            .unwrap_or(started);
        let header_time = kept_time(kept).unwrap_or(started);
        // The imported file name when there is one; else the compaction time, with `_2`,
        // `_3`, … for more compactions in one second rather than overwriting.
        let mut stem = kept_str(kept, "file")
            .filter(|s| {
                s.starts_with("history_") && agentmem_core::validate_name("archive", s).is_ok()
            })
            .unwrap_or_else(|| archive_file_stem(compacted, 0));
        let mut n = 0;
        while stems.contains(&stem) {
            n += 1;
            stem = archive_file_stem(compacted, n);
        }
        files.push((
            Path::new(ARCHIVE_DIR).join(format!("{stem}.md")),
            render_memory_md(&conversation(kept), header_time, &archive.messages),
        ));
        stems.push(stem);
        started = compacted;
    }
    // The kept header holds while no compaction happened since the import.
    let active = kept.filter(|_| kept_archives.len() == session.archives.len());
    files.insert(
        0,
        (
            PathBuf::from(MEMORY_FILE),
            render_memory_md(
                &conversation(kept),
                kept_time(active).unwrap_or(started),
                &session.messages,
            ),
        ),
    );
    files
}

/// Writes a session's agent folder into `dir` (created if missing): the files of
/// [`render_agent_folder`], each written whole through a temporary file and readable by its
/// owner only. Files of the same names are replaced; other files are left alone.
pub fn write_agent_folder(dir: impl AsRef<Path>, session: &SessionExport) -> Result<()> {
    let dir = dir.as_ref();
    for (relative, text) in render_agent_folder(session) {
        write_atomic(&dir.join(relative), text.as_bytes())?;
    }
    Ok(())
}

/// Reads the agent folders at `path` (see [`find_agent_folders`]), each as the session named
/// by its folder, and checks the document as [`ExportDocument::validate`] does.
pub fn import(path: impl AsRef<Path>) -> Result<ExportDocument> {
    Format::Swarms.import(path)
}

/// [`import`] without the final check; with `session`, `path` must hold exactly one agent
/// folder, read as that session.
pub(crate) fn read_folders(path: &Path, session: Option<&SessionId>) -> Result<ExportDocument> {
    let folders = find_agent_folders(path)?;
    read_sessions(path, folders, "agent folders", session, |(dir, name)| {
        let id = match session {
            Some(id) => id.clone(),
            None => session_id_from(&name, &dir.display().to_string())?,
        };
        read_agent_folder(&dir, id)
    })
}

/// Writes every session of `doc` as an agent folder `dir/<session id>/` (see
/// [`write_agent_folder`]), which [`import`] of `dir` reads back. `MEMORY.md` has no place for
/// memory items or checkpoints: `doc.memories` and `doc.checkpoints` are not written.
pub fn export(doc: &ExportDocument, dir: impl AsRef<Path>) -> Result<()> {
    let dir = dir.as_ref();
    create_dir_all(dir)?;
    for session in &doc.sessions {
        write_agent_folder(dir.join(session.id.as_str()), session)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentmem_core::Role;
    use chrono::TimeZone;

    #[test]
    fn archive_files_sort_by_time_then_suffix() {
        let mut stems = vec![
            "history_2026-04-20_14-30-45_10",
            "history_2026-04-20_14-30-45_2",
            "history_2026-04-20_14-30-45",
            "history_2026-04-19_23-59-59",
        ];
        stems.sort_by_key(|s| archive_order(s));
        assert_eq!(
            stems,
            [
                "history_2026-04-19_23-59-59",
                "history_2026-04-20_14-30-45",
                "history_2026-04-20_14-30-45_2",
                "history_2026-04-20_14-30-45_10",
            ]
        );
    }

    #[test]
    fn rendered_folder_parses_back_to_the_same_messages() {
        let t = |s| Utc.with_ymd_and_hms(2026, 4, 20, 10, 0, s).unwrap();
        let id: SessionId = "ResearchAgent".parse().unwrap();
        let mut s = SessionExport::new(id.clone());
        s.archives = vec![ArchiveExport::new(vec![
            Message::user("q").with_timestamp(t(1)),
            Message::new(Role::Agent("ResearchAgent".into()), "a").with_timestamp(t(2)),
        ])];
        s.messages = vec![Message::system("summary").with_timestamp(t(3))];
        let files = render_agent_folder(&s);
        assert_eq!(files[0].0, PathBuf::from("MEMORY.md"));
        assert_eq!(
            files[1].0,
            PathBuf::from("archive/history_2026-04-20_10-00-02.md")
        );
        let back = parse_messages(&files[1].1, "a", &id, "x").unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back[1].role, Role::Agent("ResearchAgent".into()));
        assert_eq!(back[1].timestamp, t(2));
        let err = parse_messages("# Agent Memory\n", "dir/MEMORY.md", &id, "m").unwrap_err();
        assert!(err.to_string().contains("dir/MEMORY.md line 2"), "{err}");
    }
}
