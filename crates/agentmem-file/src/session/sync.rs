//! Bringing a session's cached state up to date with its files, and repairing what a crash
//! left: a torn last log line, lines that do not parse, a stale or cut `MEMORY.md`,
//! temporary files; a lone Swarms `MEMORY.md` is imported.

use std::fs::File;
use std::path::Path;

use agentmem_core::{now, Error, Message, Result, SessionId};
use agentmem_formats::swarms::{parse_memory_md, render_header, render_memory_md};

use super::read::{parse_log, ParsedLog};
use super::{note_messages, to_utc, OpenSession, SessionCtx, SessionSlot, Synced};
use crate::fsutil::{
    corrupt_line, io_error, list_dir, open_append_with_id, open_append_with_meta, read_range, stat,
    write_atomic, FileId, TMP_PREFIX,
};
use crate::lifecycle::Stamp;
use crate::log::{encode_log, parse_entry, scan_lines, BadLine, SessionHeader};
use crate::repair::{Aside, Findings, RepairKind};

impl SessionCtx<'_> {
    /// Brings `slot` up to date with the files, repairing what a crash left (when
    /// `findings.fix`): a torn last log line, a stale or cut `MEMORY.md`, orphan archives,
    /// temporary files; a lone Swarms `MEMORY.md` is imported.
    ///
    /// A session whose expiry has passed is `Missing` (its files are left for a write or
    /// `purge` to remove; see [`create`](Self::create)), without its log being read.
    pub(crate) fn sync(&self, slot: &mut SessionSlot, f: &mut Findings) -> Result<Synced> {
        if self.ignores_case && slot.open.is_none() {
            // Before any file of the folder is read: it may be another session's.
            if let Err(e) = refuse_case_twin(&self.paths.dir, self.id) {
                slot.forget();
                return Err(e);
            }
        }
        let result = self.sync_lifecycle(slot, f).and_then(|()| {
            if slot.expired_now() {
                slot.open = None;
                return Ok(Synced::Missing);
            }
            self.sync_inner(slot, f)
        });
        if result.is_err() {
            // Whatever failed, read everything afresh next time.
            slot.forget();
        }
        result
    }

    fn sync_inner(&self, slot: &mut SessionSlot, f: &mut Findings) -> Result<Synced> {
        if slot.lease.is_some() && slot.open.is_some() {
            // The lock was held since `open` was last synced: no other process wrote.
            return Ok(Synced::Current);
        }
        let repairs_before = f.list.len();
        let p = &self.paths;
        let meta = match stat(&p.log)? {
            Some(meta) => meta,
            None => {
                slot.open = None;
                if !self.import_swarms(f)? {
                    return Ok(Synced::Missing);
                }
                stat(&p.log)?.ok_or_else(|| {
                    Error::backend(format!("{} vanished after import", p.log.display()))
                })?
            }
        };
        let id = FileId::of(&meta);
        let mut loaded = None;
        let mut changed = false;
        let tail_read = match slot.open.as_mut() {
            Some(o) if o.log_id == id && o.log_len == meta.len() => Some(Ok(())),
            Some(o) if o.log_id == id && o.log_len < meta.len() => {
                changed = true;
                Some(self.read_tail(o, meta.len(), f))
            }
            _ => None,
        };
        match tail_read {
            Some(Ok(())) => {}
            // A whole appended line that does not parse: read the log afresh, which sets it
            // aside (see `quarantine`).
            Some(Err(e)) if !(e.kind() == agentmem_core::ErrorKind::CorruptData && f.fix) => {
                return Err(e)
            }
            _ => {
                let (o, messages) = self.full_load(f)?;
                slot.open = Some(o);
                loaded = Some(messages);
                changed = true;
            }
        }
        let Some(o) = slot.open.as_mut() else {
            return Err(Error::backend("session state missing after sync"));
        };
        let mut modified = meta.modified();
        if f.list.len() > repairs_before {
            // A repair (a torn tail cut away) wrote to the log after `meta` was taken.
            modified = o.log.metadata().and_then(|m| m.modified());
        }
        // Never backwards: this process's own appends noted a time at least the file's.
        o.mtime = o.mtime.max(to_utc(modified));
        self.check_md(o, loaded.as_deref(), changed, f)?;
        Ok(match loaded {
            Some(m) => Synced::Loaded(m),
            None => Synced::Current,
        })
    }

    /// Reads the whole log, repairs a torn tail, sets complete lines that do not parse aside
    /// (see [`quarantine`](Self::quarantine)), cleans the session folder and its archives.
    fn full_load(&self, f: &mut Findings) -> Result<(OpenSession, Vec<Message>)> {
        let p = &self.paths;
        let (mut log, mut meta) = open_append_with_meta(&p.log)?;
        let bytes = read_range(&log, &p.log, 0, meta.len())?;
        let parsed = parse_log(&bytes, &p.log)?;
        let mut log_len = meta.len();
        let mut lines = parsed.lines;
        if let Some(first) = parsed.bad.first() {
            if !f.fix {
                return Err(corrupt_line(&p.log, first.line, first.reason.clone()));
            }
            self.quarantine(&bytes, &parsed, f)?;
            (log, meta) = open_append_with_meta(&p.log)?;
            log_len = meta.len();
            lines = 1 + parsed.messages.len() as u64;
        } else if let Some(torn) = &parsed.torn {
            log_len = parsed.valid_len as u64;
            f.torn_tail(self.id(), &p.log, &log, torn, log_len)?;
        }
        self.clean_folder(f)?;
        self.scan_archives(parsed.header.generation, f)?;
        let open = OpenSession::new(log, &meta, log_len, lines, parsed.header, &parsed.messages);
        Ok((open, parsed.messages))
    }

    /// Sets the complete lines of the log that do not parse aside, byte for byte, in a new file
    /// of `quarantine/`, then replaces the log by its readable lines (a torn tail goes with
    /// them: it was never acknowledged). A whole line is not what a crash leaves, so it is
    /// never deleted: it is kept for people, reported (with its line numbers) as a repair and
    /// by `doctor`, and the session stays readable.
    fn quarantine(&self, bytes: &[u8], parsed: &ParsedLog, f: &mut Findings) -> Result<()> {
        let p = &self.paths;
        let (kept, problem) = BadLine::set_aside(bytes, &parsed.bad);
        let problem = format!("{problem}; the session keeps its readable lines");
        f.quarantine(self.id(), &p.dir, &p.log, Aside::Lines(&kept), problem)?;
        write_atomic(
            &p.dir,
            &p.log,
            &encode_log(&parsed.header, &parsed.messages)?,
        )
    }

    /// Reads what another process appended since this one last looked.
    fn read_tail(&self, o: &mut OpenSession, len: u64, f: &mut Findings) -> Result<()> {
        let p = &self.paths;
        let bytes = read_range(&o.log, &p.log, o.log_len, len)?;
        let scan = scan_lines(&bytes, o.lines + 1, &p.log, false, |_, line| {
            parse_entry(line)
        })?;
        let new_len = o.log_len + scan.valid_len as u64;
        if let Some(torn) = &scan.torn {
            f.torn_tail(self.id(), &p.log, &o.log, torn, new_len)?;
        }
        o.log_len = new_len;
        o.lines += scan.lines;
        for batch in &scan.records {
            o.count += batch.len() as u64;
            note_messages(o, batch);
        }
        Ok(())
    }

    /// Checks cheaply that `MEMORY.md` is the view of the log (header at the start, block of
    /// the last message at the end), when this process cannot know it is; else regenerates it.
    fn check_md(
        &self, o: &mut OpenSession, loaded: Option<&[Message]>, force: bool, f: &mut Findings,
    ) -> Result<()> {
        let p = &self.paths;
        let meta = stat(&p.md)?;
        let unchanged = meta.as_ref().is_some_and(|m| {
            o.md.as_ref().is_some_and(|(_, id)| *id == FileId::of(m)) && m.len() == o.md_len
        });
        if unchanged && !force {
            return Ok(());
        }
        let problem = match &meta {
            None => Some("it is missing".to_string()),
            Some(m) => self.md_mismatch(o, m.len())?,
        };
        match problem {
            None => {
                if let Some(m) = meta {
                    let id = FileId::of(&m);
                    if o.md.as_ref().is_none_or(|(_, old)| *old != id) {
                        o.md = Some(open_append_with_id(&p.md)?);
                    }
                    o.md_len = m.len();
                }
                Ok(())
            }
            Some(why) => {
                f.add(
                    RepairKind::MemoryMdRegenerated,
                    self.id(),
                    p.md.clone(),
                    format!("{why}; regenerated from {}", p.log.display()),
                );
                if f.fix {
                    let messages = match loaded {
                        Some(m) => m.to_vec(),
                        None => self.read_all(o)?,
                    };
                    let text = render_memory_md(
                        &o.header.conversation,
                        o.header.memory_created,
                        &messages,
                    );
                    write_atomic(&p.dir, &p.md, text.as_bytes())?;
                    self.reopen_md(o)?;
                }
                Ok(())
            }
        }
    }

    /// Why `MEMORY.md` (of length `len`) is not the view of the log, or `None` if it is.
    fn md_mismatch(&self, o: &OpenSession, len: u64) -> Result<Option<String>> {
        let p = &self.paths;
        let header = render_header(&o.header.conversation, o.header.memory_created);
        let block = o.last_block.as_deref().unwrap_or("");
        let (hl, bl) = (header.len() as u64, block.len() as u64);
        if len < hl + bl || (block.is_empty() && len != hl) {
            return Ok(Some(format!(
                "it is {len} bytes long, too short or too long for its log (cut off?)"
            )));
        }
        let file = File::open(&p.md).map_err(|e| io_error(&p.md, "cannot open", e))?;
        if read_range(&file, &p.md, 0, hl)? != header.as_bytes() {
            return Ok(Some("its header does not match the session".into()));
        }
        if read_range(&file, &p.md, len - bl, len)? != block.as_bytes() {
            return Ok(Some(
                "it does not end with the block of the last message (cut off or stale)".into(),
            ));
        }
        Ok(None)
    }

    pub(super) fn reopen_md(&self, o: &mut OpenSession) -> Result<()> {
        let p = &self.paths;
        let (file, meta) = open_append_with_meta(&p.md)?;
        o.md_len = meta.len();
        o.md = Some((file, FileId::of(&meta)));
        Ok(())
    }

    /// Removes temporary files left in the session folder by interrupted rewrites.
    fn clean_folder(&self, f: &mut Findings) -> Result<()> {
        let dir = &self.paths.dir;
        let Some(entries) = list_dir(dir)? else {
            return Ok(());
        };
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(TMP_PREFIX) {
                f.temp_file(self.id(), entry.path(), "an interrupted rewrite");
            }
        }
        Ok(())
    }

    /// Imports a `MEMORY.md` that has no log beside it (written by Swarms). `false` when there
    /// is no such file.
    fn import_swarms(&self, f: &mut Findings) -> Result<bool> {
        let p = &self.paths;
        let text = match std::fs::read_to_string(&p.md) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(io_error(&p.md, "cannot read", e)),
        };
        let parsed = parse_memory_md(&text)
            .map_err(|e| Error::corrupt(format!("{}: {}", p.md.display(), e.message())))?;
        f.add(
            RepairKind::Imported,
            self.id(),
            p.md.clone(),
            format!(
                "{} blocks imported into {}",
                parsed.blocks.len(),
                p.log.display()
            ),
        );
        if !f.fix {
            return Ok(false);
        }
        let messages: Vec<Message> = parsed.blocks.iter().map(|b| b.to_message()).collect();
        let mut header = SessionHeader::new(self.id, parsed.created);
        header.conversation = parsed.conversation;
        header.updated_at = now();
        write_atomic(&p.dir, &p.log, &encode_log(&header, &messages)?)?;
        Ok(true)
    }

    /// Whether the files are exactly as this process last saw them, so that `sync` would find
    /// nothing to do (the file lock held).
    pub(crate) fn unchanged(&self, slot: &SessionSlot) -> Result<bool> {
        let Some(o) = slot.open.as_ref() else {
            return Ok(false);
        };
        let Some(log) = stat(&self.paths.log)? else {
            return Ok(false);
        };
        if FileId::of(&log) != o.log_id || log.len() != o.log_len {
            return Ok(false);
        }
        let Some(md) = stat(&self.paths.md)? else {
            return Ok(false);
        };
        if !(o.md.as_ref().is_some_and(|(_, id)| *id == FileId::of(&md)) && md.len() == o.md_len) {
            return Ok(false);
        }
        let sidecar = stat(&self.paths.lifecycle)?.map(|m| Stamp::of(&m));
        Ok(slot.lifecycle.as_ref().is_some_and(|c| c.stamp == sidecar) && !slot.expired_now())
    }
}

/// On a file system that ignores case, `Conflict` when the folder `dir` of session `id` is
/// there under another spelling (the folder of a session whose name differs only in case):
/// the two sessions would share one folder, while distinct names must never collide.
fn refuse_case_twin(dir: &Path, id: &SessionId) -> Result<()> {
    let Some(parent) = dir.parent() else {
        return Ok(());
    };
    let Some(entries) = list_dir(parent)? else {
        return Ok(());
    };
    let names: Vec<std::ffi::OsString> = entries.flatten().map(|e| e.file_name()).collect();
    match case_twin(&names, id.as_str()) {
        Some(twin) => Err(Error::conflict(format!(
            "session `{id}` would share its folder with session `{twin}`: this file system \
             ignores case in names, so names that differ only in case collide; use another name"
        ))),
        None => Ok(()),
    }
}

/// Among the folder names `names`, the one that spells `id` with other case, when `id` itself
/// is not there (on a file system that ignores case, at most one spelling exists).
fn case_twin(names: &[std::ffi::OsString], id: &str) -> Option<String> {
    if names.iter().any(|n| n == id) {
        return None;
    }
    let folded = id.to_lowercase();
    names
        .iter()
        .filter_map(|n| n.to_str())
        .find(|n| n.to_lowercase() == folded)
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use super::case_twin;

    fn names(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    /// On a file system that ignores case, `alice`'s folder path finds `Alice`'s folder: the
    /// listing shows the other spelling and not `alice` itself, which is the collision.
    #[test]
    fn a_folder_spelled_with_other_case_is_a_twin() {
        let listing = names(&["Alice", "bob", ".trash-x", "ÉLODIE"]);
        assert_eq!(case_twin(&listing, "alice").as_deref(), Some("Alice"));
        assert_eq!(case_twin(&listing, "élodie").as_deref(), Some("ÉLODIE"));
        assert_eq!(case_twin(&listing, "Alice"), None, "its own folder");
        assert_eq!(case_twin(&listing, "carol"), None, "a new session");
        assert_eq!(case_twin(&names(&["alice", "Alice"]), "alice"), None);
    }
}
