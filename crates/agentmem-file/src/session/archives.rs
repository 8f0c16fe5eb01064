//! Compaction and archives: `archive/history_<ts>.jsonl` and its `.md` view, their listing,
//! loading, replacement, and the repair of interrupted compactions and replacements.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use agentmem_core::support::archive_not_found;
use agentmem_core::{now, Archive, ArchiveId, ArchiveInfo, Error, ErrorKind, Message, Result};
use agentmem_formats::swarms::{archive_file_stem, render_memory_md};

use super::{not_found, SessionCtx, SessionSlot, Synced};
use crate::fsutil::{
    corrupt_line, create_dirs, io_error, list_dir, remove_if_exists, stat, sync_dir, write_atomic,
    TMP_PREFIX,
};
use crate::layout::REPLACE_PREFIX;
use crate::log::{
    encode_log, parse_archive_header, parse_entry, scan_lines, ArchiveHeader, ARCHIVE_FORMAT,
    LOG_VERSION,
};
use crate::repair::{Aside, Findings, RepairKind};

impl SessionCtx<'_> {
    /// Archives the current messages and replaces them with `replacement`. Order of
    /// writes: archive log, archive view, session log, session view; a crash before the session
    /// log is replaced leaves an orphan archive (removed by the next sync), after it a stale
    /// view (regenerated). Either way the old or the new state, and no transcript is lost.
    pub(crate) fn compact(
        &self, slot: &mut SessionSlot, replacement: &[Message], f: &mut Findings,
    ) -> Result<ArchiveInfo> {
        let Some((messages, o)) = self.load(slot, f)? else {
            return Err(not_found(self.id));
        };
        let header = o.header.clone();
        let p = &self.paths;
        create_dirs(&p.archive)?;
        let t = now();
        let mut stem = None;
        for n in 0..10_000u32 {
            let candidate = archive_file_stem(t, n);
            if stat(&p.archive.join(format!("{candidate}.jsonl")))?.is_none()
                && stat(&p.archive.join(format!("{candidate}.md")))?.is_none()
            {
                stem = Some(candidate);
                break;
            }
        }
        let stem = stem.ok_or_else(|| Error::conflict("too many archives in one second"))?;
        let archive_header = ArchiveHeader {
            format: ARCHIVE_FORMAT.into(),
            version: LOG_VERSION,
            session: self.id.clone(),
            generation: header.generation,
            created_at: t,
            message_count: messages.len() as u64,
            conversation: header.conversation.clone(),
            memory_created: header.memory_created,
        };
        let result = (|| {
            write_atomic(
                &p.archive,
                &p.archive.join(format!("{stem}.jsonl")),
                &encode_log(&archive_header, &messages)?,
            )?;
            let md = p.archive.join(format!("{stem}.md"));
            write_view(&p.archive, &md, &archive_header, &messages)?;
            let mut next = header.clone();
            next.generation += 1;
            next.memory_created = t;
            next.updated_at = t;
            self.rewrite(slot, next, replacement)
        })();
        if result.is_err() {
            slot.open = None;
        }
        result?;
        Ok(self.archive_info(ArchiveId::new(stem)?, &archive_header))
    }

    /// The archives, oldest first.
    pub(crate) fn list_archives(
        &self, slot: &mut SessionSlot, f: &mut Findings,
    ) -> Result<Vec<ArchiveInfo>> {
        let Some(archives) = self.synced_archives(slot, f)? else {
            return Ok(Vec::new());
        };
        archives
            .into_iter()
            .map(|(stem, h)| Ok(self.archive_info(ArchiveId::new(stem)?, &h)))
            .collect()
    }

    /// One archive, or `NotFound`.
    pub(crate) fn load_archive(
        &self, slot: &mut SessionSlot, archive: &ArchiveId, f: &mut Findings,
    ) -> Result<Archive> {
        let listed = self.synced_archives(slot, f)?.unwrap_or_default();
        if !listed.iter().any(|(stem, _)| stem == archive.as_str()) {
            return Err(archive_not_found(self.id, archive));
        }
        let path = self.paths.archive.join(format!("{archive}.jsonl"));
        self.read_or_quarantine(&path, archive.as_str(), f)?
            .ok_or_else(|| archive_not_found(self.id, archive))
    }

    /// Replaces the messages of one archive with `messages`, keeping its file names (its id),
    /// its header (session, generation, so its place among the archives, creation time, the
    /// `**Created:**` of its view) but the count; `NotFound` when the session (or an expired
    /// one) or the archive does not exist, changing nothing.
    ///
    /// Order of writes, each atomic (temporary file, fsync, rename, fsync of the folder): the
    /// new log as `archive/.replace-<stem>.jsonl`, the new `<stem>.md`, then that log renamed
    /// over `<stem>.jsonl`. A crash before the first rename leaves the old archive; after it,
    /// the pending log tells the next scan to finish the replacement (see
    /// [`finish_replacement`](Self::finish_replacement)), which every reader of archives runs
    /// first: a reader sees the old archive or the new one, and its `.md` always ends up the
    /// view of its log. Current messages, labels and the other archives are not touched.
    pub(crate) fn replace_archive(
        &self, slot: &mut SessionSlot, archive: &ArchiveId, messages: &[Message], f: &mut Findings,
    ) -> Result<ArchiveInfo> {
        let listed = self.synced_archives(slot, f)?.unwrap_or_default();
        let Some((stem, mut header)) = listed
            .into_iter()
            .find(|(stem, _)| stem == archive.as_str())
        else {
            return Err(archive_not_found(self.id, archive));
        };
        header.message_count = messages.len() as u64;
        let dir = &self.paths.archive;
        let pending = dir.join(format!("{REPLACE_PREFIX}{stem}.jsonl"));
        let target = dir.join(format!("{stem}.jsonl"));
        let md = dir.join(format!("{stem}.md"));
        write_atomic(dir, &pending, &encode_log(&header, messages)?)?;
        let result = (|| {
            write_view(dir, &md, &header, messages)?;
            std::fs::rename(&pending, &target)
                .map_err(|e| io_error(&target, "cannot rename a new version into", e))?;
            sync_dir(dir)
        })();
        if let Err(e) = result {
            // Back to the old archive when possible: its view first, and only then the pending
            // log removed (it marks a `.md` that may be the new one). If this fails too, the
            // pending log stays and the next scan finishes the replacement.
            if stat(&pending).ok().flatten().is_some()
                && self.restore_archive_md(&target, &md).is_ok()
            {
                let _ = remove_if_exists(&pending);
                let _ = sync_dir(dir);
            }
            return Err(e);
        }
        Ok(self.archive_info(archive.clone(), &header))
    }

    /// The session's archives as [`scan_archives`](Self::scan_archives) finds them after a
    /// sync; `None` when the session does not exist (or has expired).
    fn synced_archives(
        &self, slot: &mut SessionSlot, f: &mut Findings,
    ) -> Result<Option<Vec<(String, ArchiveHeader)>>> {
        if let Synced::Missing = self.sync(slot, f)? {
            return Ok(None);
        }
        let generation = slot.open.as_ref().map_or(0, |o| o.header.generation);
        self.scan_archives(generation, f).map(Some)
    }

    /// What the listing says of the archive `id` of this session, whose header is `header`.
    fn archive_info(&self, id: ArchiveId, header: &ArchiveHeader) -> ArchiveInfo {
        ArchiveInfo {
            id,
            session: self.id.clone(),
            created_at: header.created_at,
            message_count: header.message_count,
        }
    }

    /// The session's archives (stem and header), oldest first. Archives whose generation is
    /// not older than the session's are orphans of an interrupted compaction (the session
    /// still holds their messages): removed. A missing `.md` view is regenerated.
    pub(crate) fn scan_archives(
        &self, generation: u64, f: &mut Findings,
    ) -> Result<Vec<(String, ArchiveHeader)>> {
        let dir = &self.paths.archive;
        let Some(entries) = list_dir(dir)? else {
            return Ok(Vec::new());
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| io_error(dir, "cannot list", e))?;
            names.push((
                entry.file_name().to_string_lossy().into_owned(),
                entry.path(),
            ));
        }
        // Interrupted replacements first, so the archives below are read as they end up.
        for (name, path) in &names {
            if name.starts_with(REPLACE_PREFIX) {
                self.finish_replacement(name, path, f)?;
            }
        }
        let mut found = Vec::new();
        for (name, path) in names {
            if name.starts_with(TMP_PREFIX) {
                f.temp_file(self.id(), path, "an interrupted compaction");
                continue;
            }
            // Only our own archives; a Swarms `history_*.md` without a log is left alone.
            let Some(stem) = name
                .strip_suffix(".jsonl")
                .filter(|s| s.starts_with("history_"))
            else {
                continue;
            };
            // A check reads each archive whole, so that it finds damage anywhere in one.
            let header = if f.deep {
                read_archive(&path).map(|(header, _)| header)
            } else {
                read_archive_header(&path)
            };
            let Some(header) = self.or_quarantine(&path, header, f)? else {
                continue;
            };
            let md = dir.join(format!("{stem}.md"));
            if header.generation >= generation {
                f.add(
                    RepairKind::OrphanArchive,
                    self.id(),
                    path.clone(),
                    format!(
                        "archive of generation {} but the session is at generation {generation}: its compaction did not finish; removed",
                        header.generation
                    ),
                );
                if f.fix {
                    remove_if_exists(&md)?;
                    remove_if_exists(&path)?;
                    sync_dir(dir)?;
                }
                continue;
            }
            if stat(&md)?.is_none() {
                f.add(
                    RepairKind::ArchiveMdRegenerated,
                    self.id(),
                    md.clone(),
                    "missing; regenerated from the archive log",
                );
                if f.fix {
                    let Some(archive) = self.read_or_quarantine(&path, stem, f)? else {
                        continue;
                    };
                    write_view(dir, &md, &header, &archive.messages)?;
                }
            }
            found.push((stem.to_string(), header));
        }
        found.sort_by(|a, b| {
            a.1.generation
                .cmp(&b.1.generation)
                .then_with(|| a.0.cmp(&b.0))
        });
        Ok(found)
    }

    /// Finishes the replacement of an archive that a crash interrupted, given its new log
    /// `path` (named `name`, `.replace-<stem>.jsonl`; see [`replace_archive`](Self::replace_archive)).
    /// That log was written whole before the archive's `.md` was touched, so when it reads as
    /// the archive's it is the new state: the `.md` is written from it and it is renamed over
    /// the archive's log. When it cannot finish (no such archive, the new log unreadable,
    /// another generation's), the `.md` is regenerated from the archive's own log (the old
    /// state) and the new log removed. Either way the two files agree again.
    fn finish_replacement(&self, name: &str, path: &Path, f: &mut Findings) -> Result<()> {
        let dir = &self.paths.archive;
        let stem = name
            .strip_prefix(REPLACE_PREFIX)
            .and_then(|s| s.strip_suffix(".jsonl"))
            .filter(|s| s.starts_with("history_") && ArchiveId::new(*s).is_ok());
        let Some(stem) = stem else {
            return self.drop_pending(path, "not the new log of any archive; removed", f);
        };
        let target = dir.join(format!("{stem}.jsonl"));
        let md = dir.join(format!("{stem}.md"));
        let current = match stat(&target)? {
            Some(_) => self.header_or_quarantine(&target, f)?,
            None => None,
        };
        let current = match current {
            Some(header) => header,
            // The archive itself is gone (its session was compacted away by a crash repair,
            // or it was unreadable and set aside).
            None => {
                let why = "the new log of an archive that no longer exists; removed";
                return self.drop_pending(path, why, f);
            }
        };
        let replacement = match read_archive(path) {
            Ok((header, messages)) => (header.session == current.session
                && header.generation == current.generation
                && header.created_at == current.created_at)
                .then_some((header, messages)),
            Err(e) if e.kind() == ErrorKind::CorruptData => None,
            Err(e) => return Err(e),
        };
        match replacement {
            Some((header, messages)) => {
                f.add(
                    RepairKind::ArchiveReplacement,
                    self.id(),
                    target.clone(),
                    format!(
                        "its replacement was interrupted; finished from {}",
                        path.display()
                    ),
                );
                if f.fix {
                    write_view(dir, &md, &header, &messages)?;
                    std::fs::rename(path, &target)
                        .map_err(|e| io_error(&target, "cannot rename a new version into", e))?;
                    sync_dir(dir)?;
                }
            }
            None => {
                f.add(
                    RepairKind::ArchiveReplacement,
                    self.id(),
                    target.clone(),
                    format!(
                        "its replacement was interrupted and {} is not a readable new version; \
                         kept as it was, its .md regenerated, the new version removed",
                        path.display()
                    ),
                );
                if f.fix {
                    self.restore_archive_md(&target, &md)?;
                    remove_if_exists(path)?;
                    sync_dir(dir)?;
                }
            }
        }
        Ok(())
    }

    /// Records the pending log `path` of a replacement that cannot be finished (`why`) and,
    /// when fixing, removes it.
    fn drop_pending(&self, path: &Path, why: &str, f: &mut Findings) -> Result<()> {
        f.add(
            RepairKind::ArchiveReplacement,
            self.id(),
            path.to_path_buf(),
            why,
        );
        if f.fix {
            remove_if_exists(path)?;
            sync_dir(&self.paths.archive)?;
        }
        Ok(())
    }

    /// The header of the archive log `path`; `None` when it is unreadable, then moved into
    /// the session's `quarantine/` (see [`Findings::quarantine`]).
    fn header_or_quarantine(&self, path: &Path, f: &mut Findings) -> Result<Option<ArchiveHeader>> {
        self.or_quarantine(path, read_archive_header(path), f)
    }

    /// The archive whose log is `path` (named `<stem>.jsonl`); `None` when it is unreadable,
    /// then moved into the session's `quarantine/`. Archives are written whole and renamed
    /// into place, so damage anywhere in one is not a crash artefact.
    fn read_or_quarantine(
        &self, path: &Path, stem: &str, f: &mut Findings,
    ) -> Result<Option<Archive>> {
        self.or_quarantine(path, read_archive_file(path, stem), f)
    }

    /// `read`, what was read of the archive log `path`; when it is `CorruptData`, the log is
    /// moved into the session's `quarantine/` (its `.md` view stays, as a Swarms archive
    /// without a log) and the answer is `None`.
    fn or_quarantine<T>(
        &self, path: &Path, read: Result<T>, f: &mut Findings,
    ) -> Result<Option<T>> {
        match read {
            Ok(value) => Ok(Some(value)),
            Err(e) if e.kind() == ErrorKind::CorruptData => {
                refuse_newer(path)?;
                f.quarantine(self.id(), &self.paths.dir, path, Aside::WholeFile, &e)?;
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Rewrites the archive `.md` view `md` from the archive log `log`.
    fn restore_archive_md(&self, log: &Path, md: &Path) -> Result<()> {
        let (header, messages) = read_archive(log)?;
        write_view(&self.paths.archive, md, &header, &messages)
    }
}

/// Writes `md`, in folder `dir`, as the view of the archive `header` with `messages`.
fn write_view(dir: &Path, md: &Path, header: &ArchiveHeader, messages: &[Message]) -> Result<()> {
    let view = render_memory_md(&header.conversation, header.memory_created, messages);
    write_atomic(dir, md, view.as_bytes())
}

/// The archive whose log is `path` (named `<stem>.jsonl`).
fn read_archive_file(path: &Path, stem: &str) -> Result<Archive> {
    let (header, messages) = read_archive(path)?;
    Ok(Archive {
        info: ArchiveInfo {
            id: ArchiveId::new(stem)?,
            session: header.session,
            created_at: header.created_at,
            message_count: messages.len() as u64,
        },
        messages,
    })
}

/// The header and messages of the archive log `path`.
fn read_archive(path: &Path) -> Result<(ArchiveHeader, Vec<Message>)> {
    let bytes = std::fs::read(path).map_err(|e| io_error(path, "cannot read", e))?;
    let mut header = None;
    let scan = scan_lines(&bytes, 1, path, false, |line, bytes| {
        if line == 1 {
            header = Some(parse_archive_header(bytes)?);
            Ok(Vec::new())
        } else {
            parse_entry(bytes)
        }
    })?;
    if let Some(torn) = scan.torn {
        // Archives are written whole and renamed into place: damage is not a crash artefact.
        return Err(corrupt_line(path, torn.line, torn.reason));
    }
    let header = header.ok_or_else(|| corrupt_line(path, 1, "missing archive header"))?;
    Ok((header, scan.records.into_iter().flatten().collect()))
}

fn read_archive_header(path: &Path) -> Result<ArchiveHeader> {
    parse_archive_header(&first_line(path)?).map_err(|why| corrupt_line(path, 1, why))
}

/// The first line of the file `path`, without its newline.
fn first_line(path: &Path) -> Result<Vec<u8>> {
    let file = File::open(path).map_err(|e| io_error(path, "cannot open", e))?;
    let mut first = Vec::new();
    BufReader::new(file)
        .read_until(b'\n', &mut first)
        .map_err(|e| io_error(path, "cannot read", e))?;
    if first.last() == Some(&b'\n') {
        first.pop();
    }
    Ok(first)
}

/// `Unsupported` when the archive log `path` was written by a newer agentmem: it is not
/// unreadable, only unknown to this build, so it is not set aside.
fn refuse_newer(path: &Path) -> Result<()> {
    match serde_json::from_slice::<ArchiveHeader>(&first_line(path)?) {
        Ok(header) if header.version > LOG_VERSION => Err(Error::unsupported(format!(
            "{} has version {}; this agentmem understands up to {LOG_VERSION}: upgrade agentmem",
            path.display(),
            header.version
        ))),
        _ => Ok(()),
    }
}
