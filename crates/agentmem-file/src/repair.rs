//! Reports of what the backend found damaged (after a crash or a hand edit) and repaired.

use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use agentmem_core::{Error, SessionId};
use chrono::{DateTime, Utc};

use crate::fsutil::{create_dirs, io_error, sync_dir, write_atomic};
use crate::layout::QUARANTINE_DIR;
use crate::log::TornTail;

/// What was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RepairKind {
    /// The last line of a log (`session.jsonl`, `memories.jsonl`, a checkpoint thread's or
    /// the graph's log), or the last record of the vector log, was cut off or unreadable, as a
    /// crash in the middle of an append leaves it; it is truncated away (that append was never
    /// acknowledged).
    TornTail,
    /// `MEMORY.md` did not match `session.jsonl` (cut off, missing, stale after an interrupted
    /// compaction, or edited); it is regenerated from `session.jsonl`.
    MemoryMdRegenerated,
    /// An archive written by a compaction that did not finish (its generation is not older
    /// than the session's); it is removed, since the session still holds those messages.
    OrphanArchive,
    /// An archive's `.md` view was missing; it is regenerated from the archive's `.jsonl`.
    ArchiveMdRegenerated,
    /// An archive replacement (`replace_archive`) that did not finish: its new log was
    /// written whole beside the archive, its `.md` view perhaps too; the replacement is
    /// finished from it (or, when that new log is unreadable, the old archive's `.md` is
    /// regenerated and the new log removed), so the archive's two files agree again.
    ArchiveReplacement,
    /// A temporary file left by an interrupted rewrite; it is removed.
    TempFile,
    /// A session folder left half-deleted in the trash; it is removed.
    Trash,
    /// A `MEMORY.md` without `session.jsonl` (written by Swarms): it is imported into a new
    /// `session.jsonl`.
    Imported,
    /// Complete lines of a log (`session.jsonl`, `memories.jsonl`) that do not parse (edited,
    /// or damaged by something other than a crash): set aside byte for byte in a
    /// `quarantine/` folder (the session's, or the root's for the memory log), never deleted;
    /// the log keeps its readable lines. For the binary vector log: a record that does not
    /// read, with what follows it (set aside in `vectors/quarantine/`).
    Quarantined,
    /// A whole file that cannot be read as what it should be (an archive's `.jsonl`, a
    /// session's `lifecycle.json`, the root's `agentmem.json`): cut off, not JSON, JSON of
    /// another shape, invalid UTF-8. Moved byte for byte into a `quarantine/` folder, never
    /// deleted; the store goes on without it (the archive not listed, the session
    /// unlabelled, the schema file written anew).
    QuarantinedFile,
}

impl RepairKind {
    /// A short lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            RepairKind::TornTail => "torn tail",
            RepairKind::MemoryMdRegenerated => "MEMORY.md regenerated",
            RepairKind::OrphanArchive => "orphan archive",
            RepairKind::ArchiveMdRegenerated => "archive .md regenerated",
            RepairKind::ArchiveReplacement => "archive replacement finished",
            RepairKind::TempFile => "temporary file",
            RepairKind::Trash => "trash",
            RepairKind::Imported => "imported MEMORY.md",
            RepairKind::Quarantined => "quarantined lines",
            RepairKind::QuarantinedFile => "quarantined file",
        }
    }
}

/// One problem found in the stored files, and whether it was repaired.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RepairReport {
    /// What was found.
    pub kind: RepairKind,
    /// The session concerned, if any.
    pub session: Option<SessionId>,
    /// The file or folder concerned.
    pub path: PathBuf,
    /// What exactly was wrong, for people.
    pub detail: String,
    /// Whether it was repaired (`false` when only checked).
    pub repaired: bool,
    /// When it was found.
    pub at: DateTime<Utc>,
}

impl fmt::Display for RepairReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{}: {} ({})",
            self.kind.as_str(),
            if self.repaired { ", repaired" } else { "" },
            self.path.display(),
            self.detail
        )
    }
}

/// What [`Findings::quarantine`] sets aside.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Aside<'a> {
    /// These bytes, the lines of a log that do not parse (the caller then rewrites the log
    /// from its readable lines).
    Lines(&'a [u8]),
    /// The whole file, moved (renamed) into the quarantine folder.
    WholeFile,
}

/// Collects findings during one operation: whether to fix them, and what was found.
#[derive(Debug)]
pub(crate) struct Findings {
    pub(crate) fix: bool,
    /// Whether to read every file whole (`FileStore::check`), not only what the operation
    /// needs (of an archive, its header).
    pub(crate) deep: bool,
    pub(crate) list: Vec<RepairReport>,
}

impl Findings {
    pub(crate) fn new(fix: bool) -> Self {
        Findings {
            fix,
            deep: false,
            list: Vec::new(),
        }
    }

    /// Records a finding; `repaired` is whether it was fixed (only ever when `fix`).
    pub(crate) fn add(
        &mut self, kind: RepairKind, session: Option<&SessionId>, path: PathBuf,
        detail: impl Into<String>,
    ) {
        let report = RepairReport {
            kind,
            session: session.cloned(),
            path,
            detail: detail.into(),
            repaired: self.fix,
            at: agentmem_core::now(),
        };
        tracing::warn!(report = %report, "agentmem file backend: damaged data found");
        self.list.push(report);
    }

    /// Records the temporary file at `path` (in the folder of `session`, if any), left by
    /// `left_by`, and removes it when fixing. (Another process may be removing it at the same
    /// time: a failed removal is expected.)
    pub(crate) fn temp_file(&mut self, session: Option<&SessionId>, path: PathBuf, left_by: &str) {
        if self.fix {
            let _ = std::fs::remove_file(&path);
        }
        self.add(
            RepairKind::TempFile,
            session,
            path,
            format!("left by {left_by}"),
        );
    }

    /// Sets `what` of the file `source` (of `session`, if any), unreadable because of
    /// `problem`, aside byte for byte in a new file of `<folder>/quarantine/`, named after
    /// `source` with the time and a random suffix (`session.jsonl` →
    /// `session-<time>-<random>.jsonl`), so nothing there is ever overwritten, and records it.
    /// The one way the backend takes unreadable data out of its files: set aside first, never
    /// deleted. When only checking, records what would be set aside and changes nothing.
    /// `None` when nothing was set aside (only checking, or the whole file was moved away
    /// meanwhile by another process).
    pub(crate) fn quarantine(
        &mut self, session: Option<&SessionId>, folder: &Path, source: &Path, what: Aside<'_>,
        problem: impl fmt::Display,
    ) -> Result<Option<PathBuf>, Error> {
        let dir = folder.join(QUARANTINE_DIR);
        let kind = match what {
            Aside::Lines(_) => RepairKind::Quarantined,
            Aside::WholeFile => RepairKind::QuarantinedFile,
        };
        if !self.fix {
            let detail = format!("{problem}; to be set aside in {}", dir.display());
            self.add(kind, session, source.to_path_buf(), detail);
            return Ok(None);
        }
        let name = source.file_name().map(Path::new).unwrap_or(source);
        let stem = name.file_stem().unwrap_or_default().to_string_lossy();
        let ext = name
            .extension()
            .map_or_else(String::new, |e| format!(".{}", e.to_string_lossy()));
        let file = dir.join(format!(
            "{stem}-{}-{}{ext}",
            agentmem_core::now().format("%Y%m%dT%H%M%S%.6fZ"),
            &agentmem_core::new_id()[..8]
        ));
        create_dirs(&dir)?;
        match what {
            Aside::Lines(bytes) => write_atomic(&dir, &file, bytes)?,
            Aside::WholeFile => {
                match std::fs::rename(source, &file) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                    Err(e) => return Err(io_error(source, "cannot move into quarantine", e)),
                }
                // Both folder entries changed: the new name, and the old one gone.
                sync_dir(&dir)?;
                sync_dir(source.parent().unwrap_or(folder))?;
            }
        }
        let detail = format!("{problem}; set aside in {}", file.display());
        self.add(kind, session, source.to_path_buf(), detail);
        Ok(Some(file))
    }

    /// Records the torn last line of the log at `path` (of `session`, if any) and, when
    /// fixing, truncates the open `log` to `valid_len`, its whole records.
    pub(crate) fn torn_tail(
        &mut self, session: Option<&SessionId>, path: &Path, log: &File, torn: &TornTail,
        valid_len: u64,
    ) -> Result<(), Error> {
        self.add(
            RepairKind::TornTail,
            session,
            path.to_path_buf(),
            format!(
                "line {}: {}; truncated to the last whole record",
                torn.line, torn.reason
            ),
        );
        if self.fix {
            log.set_len(valid_len)
                .and_then(|()| log.sync_all())
                .map_err(|e| io_error(path, "cannot truncate the torn tail of", e))?;
        }
        Ok(())
    }
}

/// Every repair made by one `FileStore`, for `FileStore::repairs`.
#[derive(Debug, Default)]
pub(crate) struct RepairLog {
    reports: Mutex<Vec<RepairReport>>,
}

impl RepairLog {
    pub(crate) fn extend(&self, findings: &Findings) {
        if findings.list.is_empty() || !findings.fix {
            return;
        }
        let mut reports = self.reports.lock().unwrap_or_else(|p| p.into_inner());
        reports.extend(findings.list.iter().cloned());
    }

    pub(crate) fn all(&self) -> Vec<RepairReport> {
        self.reports
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}
