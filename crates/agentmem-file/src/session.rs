//! One session's files: syncing the cached state with the disk, repairs, appends, rewrites,
//! compaction and archives. Every function here runs on a blocking thread with the session's
//! file lock held (see `store.rs`).

use std::fs::File;
use std::io::Write;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use agentmem_core::history::{tail_start, trim_orphans};
use agentmem_core::support::{archive_not_found, fork_end, fork_target_exists, rewind_keep};
use agentmem_core::{
    now, Archive, ArchiveId, ArchiveInfo, Error, Message, MessageId, Metadata, Result, Rewind,
    SessionId, SessionInfo, SessionPatch,
};
use agentmem_formats::swarms::{
    archive_file_stem, parse_memory_md, render_block, render_header, render_memory_md,
};
use chrono::{DateTime, SubsecRound, Utc};

use crate::commit::{GroupCommit, Ticket};
use crate::config::Durability;
use crate::fsutil::{
    create_dirs, io_error, list_dir, open_append, stat, sync_dir, write_atomic, FileId, TMP_PREFIX,
};
use crate::layout::{fork_folder_name, SessionPaths, QUARANTINE_DIR, REPLACE_PREFIX, TRASH_PREFIX};
use crate::lease::Lease;
use crate::lifecycle::{CachedLifecycle, Lifecycle, Stamp};
use crate::log::{
    encode_append, encode_log, parse_archive_header, parse_entry, parse_session_header, scan_lines,
    ArchiveHeader, BadLine, SessionHeader, ARCHIVE_FORMAT, LOG_VERSION,
};
use crate::repair::{Findings, RepairKind};

/// What this process knows about one session; kept between operations so an append costs a
/// handful of system calls. Guarded by the session's in-process mutex.
#[derive(Debug, Default)]
pub(crate) struct SessionSlot {
    /// The open lock file (locked while an operation runs, and while `lease` lasts).
    pub(crate) lock_file: Option<File>,
    /// Set while this process keeps the file lock between operations (see `lease.rs`): then
    /// no other process has touched the files since `open` was last brought up to date.
    pub(crate) lease: Option<Lease>,
    /// The group commit of durable appends (see `commit.rs`).
    pub(crate) group: Arc<GroupCommit>,
    /// The session's paths, made once (they are joined and formatted strings).
    pub(crate) paths: Option<Arc<SessionPaths>>,
    /// The session's open files and summary, when it exists and has been read.
    pub(crate) open: Option<OpenSession>,
    /// Its labels and expiry as last read from `lifecycle.json` (`None`: not read yet).
    pub(crate) lifecycle: Option<CachedLifecycle>,
}

impl SessionSlot {
    /// The session's labels and expiry as last synced (none when not read).
    pub(crate) fn lifecycle(&self) -> Lifecycle {
        self.lifecycle
            .as_ref()
            .map(|c| c.data.clone())
            .unwrap_or_default()
    }

    /// Whether the cached expiry has passed.
    pub(crate) fn expired_now(&self) -> bool {
        self.lifecycle
            .as_ref()
            .is_some_and(|c| c.data.expires_at.is_some() && c.data.is_expired_at(now()))
    }

    /// Forgets everything cached about the files (the next operation reads them afresh).
    pub(crate) fn forget(&mut self) {
        self.open = None;
        self.lifecycle = None;
    }

    /// The summary of the session after a sync that found it.
    pub(crate) fn info(&self, id: &SessionId) -> Option<SessionInfo> {
        let o = self.open.as_ref()?;
        let lifecycle = self.lifecycle();
        Some(SessionInfo {
            id: id.clone(),
            message_count: o.count,
            created_at: o.header.created_at,
            updated_at: o.updated_at(),
            labels: lifecycle.labels,
            expires_at: lifecycle.expires_at,
        })
    }
}

/// The open files of an existing session and what this process last saw of them.
#[derive(Debug)]
pub(crate) struct OpenSession {
    log: Arc<File>,
    log_id: FileId,
    log_len: u64,
    /// Physical lines in the log, the header included (for error messages).
    lines: u64,
    md: Option<(File, FileId)>,
    md_len: u64,
    pub(crate) header: SessionHeader,
    pub(crate) count: u64,
    /// The `MEMORY.md` block of the last message with non-blank content.
    last_block: Option<String>,
    last_timestamp: Option<DateTime<Utc>>,
    mtime: Option<DateTime<Utc>>,
}

/// A session as `sync` left it: its state, and its messages when the sync read them all
/// anyway.
struct Current<'s> {
    open: &'s OpenSession,
    loaded: Option<Vec<Message>>,
}

impl OpenSession {
    /// The state of the open `log` (whose metadata is `meta`), of which the first `log_len`
    /// bytes, `lines` lines, hold `header` and `messages`.
    fn new(
        log: File,
        meta: &std::fs::Metadata,
        log_len: u64,
        lines: u64,
        header: SessionHeader,
        messages: &[Message],
    ) -> Self {
        let mut open = OpenSession {
            log: Arc::new(log),
            log_id: FileId::of(meta),
            log_len,
            lines,
            md: None,
            md_len: 0,
            header,
            count: messages.len() as u64,
            last_block: None,
            last_timestamp: None,
            mtime: to_utc(meta.modified()),
        };
        note_messages(&mut open, messages);
        open
    }

    /// When the session was last written: the latest of its last rewrite, its last message's
    /// time and the log's modification time. The message time keeps the order of writes
    /// exact (file times are only as fine as the kernel's clock tick); the file time covers
    /// messages appended with old timestamps.
    pub(crate) fn updated_at(&self) -> DateTime<Utc> {
        let mut t = self.header.updated_at.max(self.header.created_at);
        if let Some(ts) = self.last_timestamp {
            t = t.max(ts);
        }
        if let Some(m) = self.mtime {
            t = t.max(m);
        }
        t
    }
}

/// The outcome of [`SessionCtx::sync`].
pub(crate) enum Synced {
    /// The session does not exist.
    Missing,
    /// The cached state is current; messages were not read.
    Current,
    /// The whole log was read; here are its messages.
    Loaded(Vec<Message>),
}

/// One session's identity and paths, for the duration of one operation.
pub(crate) struct SessionCtx<'a> {
    pub(crate) id: &'a SessionId,
    pub(crate) paths: Arc<SessionPaths>,
    pub(crate) durability: Durability,
    /// Whether the file system ignores case in names: then a session's folder may be another
    /// session's whose name differs only in case, which `sync` refuses.
    pub(crate) ignores_case: bool,
}

enum LogLine {
    Header(SessionHeader),
    Entry(Vec<Message>),
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

/// A file time as a model time (microseconds, like every agentmem time).
fn to_utc(t: std::io::Result<std::time::SystemTime>) -> Option<DateTime<Utc>> {
    t.ok().map(|t| DateTime::<Utc>::from(t).trunc_subsecs(6))
}

fn read_range(file: &File, path: &Path, start: u64, end: u64) -> Result<Vec<u8>> {
    let len = usize::try_from(end.saturating_sub(start))
        .map_err(|_| Error::backend(format!("{} is too large to read", path.display())))?;
    let mut buf = vec![0u8; len];
    file.read_exact_at(&mut buf, start)
        .map_err(|e| io_error(path, "cannot read", e))?;
    Ok(buf)
}

impl SessionCtx<'_> {
    fn id(&self) -> Option<&SessionId> {
        Some(self.id)
    }

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
        let result = self.sync_lifecycle(slot).and_then(|()| {
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

    /// Brings the cached labels and expiry up to date with `lifecycle.json`: a `stat`, and a
    /// read when it changed (nothing under a lease: no other process wrote).
    fn sync_lifecycle(&self, slot: &mut SessionSlot) -> Result<()> {
        if slot.lease.is_some() && slot.open.is_some() && slot.lifecycle.is_some() {
            return Ok(());
        }
        let path = &self.paths.lifecycle;
        let stamp = stat(path)?.map(|m| Stamp::of(&m));
        if slot.lifecycle.as_ref().is_some_and(|c| c.stamp == stamp) {
            return Ok(());
        }
        slot.lifecycle = None;
        slot.lifecycle = Some(crate::lifecycle::read(path)?);
        Ok(())
    }

    /// Replaces the session's labels and expiry with `data` (the sidecar written atomically,
    /// or removed when `data` is empty).
    fn write_lifecycle(&self, slot: &mut SessionSlot, data: Lifecycle) -> Result<()> {
        let p = &self.paths;
        slot.lifecycle = None;
        let stamp = if data.is_empty() {
            if stat(&p.lifecycle)?.is_some() {
                remove_if_exists(&p.lifecycle)?;
                sync_dir(&p.dir)?;
            }
            None
        } else {
            write_atomic(&p.dir, &p.lifecycle, &crate::lifecycle::encode(&data)?)?;
            stat(&p.lifecycle)?.map(|m| Stamp::of(&m))
        };
        slot.lifecycle = Some(CachedLifecycle { stamp, data });
        Ok(())
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
        let mut log = open_append(&p.log)?;
        let mut meta = log
            .metadata()
            .map_err(|e| io_error(&p.log, "cannot stat", e))?;
        let bytes = read_range(&log, &p.log, 0, meta.len())?;
        let parsed = parse_log(&bytes, &p.log)?;
        let mut log_len = meta.len();
        let mut lines = parsed.lines;
        if let Some(first) = parsed.bad.first() {
            if !f.fix {
                return Err(crate::fsutil::corrupt_line(
                    &p.log,
                    first.line,
                    first.reason.clone(),
                ));
            }
            self.quarantine(&bytes, &parsed, f)?;
            log = open_append(&p.log)?;
            meta = log
                .metadata()
                .map_err(|e| io_error(&p.log, "cannot stat", e))?;
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
        let dir = p.dir.join(QUARANTINE_DIR);
        create_dirs(&dir)?;
        let file = dir.join(format!(
            "session-{}-{}.jsonl",
            now().format("%Y%m%dT%H%M%S%.6fZ"),
            &agentmem_core::new_id()[..8]
        ));
        let mut kept = Vec::new();
        for bad in &parsed.bad {
            kept.extend_from_slice(&bytes[bad.bytes.clone()]);
            kept.push(b'\n');
        }
        write_atomic(&dir, &file, &kept)?;
        write_atomic(
            &p.dir,
            &p.log,
            &encode_log(&parsed.header, &parsed.messages)?,
        )?;
        let numbers: Vec<String> = parsed.bad.iter().map(|b| b.line.to_string()).collect();
        f.add(
            RepairKind::Quarantined,
            self.id(),
            p.log.clone(),
            format!(
                "line {} does not parse ({}); set aside in {}, the session keeps its readable lines",
                numbers.join(", line "),
                parsed.bad[0].reason,
                file.display()
            ),
        );
        Ok(())
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
        &self,
        o: &mut OpenSession,
        loaded: Option<&[Message]>,
        force: bool,
        f: &mut Findings,
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
                        let file = open_append(&p.md)?;
                        let fid = FileId::of(
                            &file
                                .metadata()
                                .map_err(|e| io_error(&p.md, "cannot stat", e))?,
                        );
                        o.md = Some((file, fid));
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

    fn reopen_md(&self, o: &mut OpenSession) -> Result<()> {
        let p = &self.paths;
        let file = open_append(&p.md)?;
        let meta = file
            .metadata()
            .map_err(|e| io_error(&p.md, "cannot stat", e))?;
        o.md_len = meta.len();
        o.md = Some((file, FileId::of(&meta)));
        Ok(())
    }

    /// Every message of the (synced) log.
    pub(crate) fn read_all(&self, o: &OpenSession) -> Result<Vec<Message>> {
        let p = &self.paths;
        let bytes = read_range(&o.log, &p.log, 0, o.log_len)?;
        let parsed = parse_log(&bytes, &p.log)?;
        if let Some(bad) = parsed.bad.first() {
            return Err(crate::fsutil::corrupt_line(
                &p.log,
                bad.line,
                bad.reason.clone(),
            ));
        }
        if let Some(torn) = parsed.torn {
            return Err(crate::fsutil::corrupt_line(&p.log, torn.line, torn.reason));
        }
        Ok(parsed.messages)
    }

    /// The messages of the session after `sync`: `None` when it does not exist.
    pub(crate) fn load<'s>(
        &self,
        slot: &'s mut SessionSlot,
        f: &mut Findings,
    ) -> Result<Option<(Vec<Message>, &'s OpenSession)>> {
        let Some(Current { open: o, loaded }) = self.current(slot, f)? else {
            return Ok(None);
        };
        let messages = match loaded {
            Some(m) => m,
            None => self.read_all(o)?,
        };
        Ok(Some((messages, o)))
    }

    /// The session after `sync`; `None` when it does not exist.
    fn current<'s>(
        &self,
        slot: &'s mut SessionSlot,
        f: &mut Findings,
    ) -> Result<Option<Current<'s>>> {
        let loaded = match self.sync(slot, f)? {
            Synced::Missing => return Ok(None),
            Synced::Loaded(m) => Some(m),
            Synced::Current => None,
        };
        Ok(slot.open.as_ref().map(|open| Current { open, loaded }))
    }

    /// The session after `sync`, its messages cut to the last `limit` (without orphaned tool
    /// results, C7: `history::tail`) when a limit is given, and its total number of messages;
    /// `None` when it does not exist.
    ///
    /// When this process already holds the session's state (the usual case: every load after
    /// the first), a window smaller than the session is read backwards from the end of the log
    /// (`tail.rs`): only its last lines are parsed, and the total is the count kept since the
    /// log was last read whole. The first load, a window that covers the whole session, and
    /// anything the backwards reader cannot vouch for take the whole-log path of [`Self::load`],
    /// which gives the same messages.
    pub(crate) fn load_window<'s>(
        &self,
        slot: &'s mut SessionSlot,
        limit: Option<usize>,
        f: &mut Findings,
    ) -> Result<Option<(Vec<Message>, u64, &'s OpenSession)>> {
        let Some(Current { open: o, loaded }) = self.current(slot, f)? else {
            return Ok(None);
        };
        if let (None, Some(n)) = (&loaded, limit) {
            if (n as u64) < o.count {
                let window =
                    crate::tail::last_messages(&o.log, &self.paths.log, o.log_len, o.lines, n)?;
                if let Some(window) = window {
                    // `n` is less than the total, so the window is not the whole session.
                    return Ok(Some((trim_orphans(window, false), o.count, o)));
                }
            }
        }
        let mut messages = match loaded {
            Some(m) => m,
            None => self.read_all(o)?,
        };
        let total = messages.len() as u64;
        if let Some(n) = limit {
            let start = tail_start(&messages, n);
            if start > 0 {
                // `split_off` copies the window out, so the whole log's vector is freed.
                messages = messages.split_off(start);
            }
        }
        Ok(Some((messages, total, o)))
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

    /// The session's archives (stem and header), oldest first. Archives whose generation is
    /// not older than the session's are orphans of an interrupted compaction (the session
    /// still holds their messages): removed. A missing `.md` view is regenerated.
    pub(crate) fn scan_archives(
        &self,
        generation: u64,
        f: &mut Findings,
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
            let header = read_archive_header(&path)?;
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
                    let archive = self.read_archive_file(&path, stem)?;
                    let text = render_memory_md(
                        &header.conversation,
                        header.memory_created,
                        &archive.messages,
                    );
                    write_atomic(dir, &md, text.as_bytes())?;
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

    fn read_archive_file(&self, path: &Path, stem: &str) -> Result<Archive> {
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
            return Err(crate::fsutil::corrupt_line(path, torn.line, torn.reason));
        }
        let header =
            header.ok_or_else(|| crate::fsutil::corrupt_line(path, 1, "missing archive header"))?;
        let messages: Vec<Message> = scan.records.into_iter().flatten().collect();
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
            f.add(
                RepairKind::ArchiveReplacement,
                self.id(),
                path.to_path_buf(),
                "not the new log of any archive; removed",
            );
            if f.fix {
                remove_if_exists(path)?;
                sync_dir(dir)?;
            }
            return Ok(());
        };
        let target = dir.join(format!("{stem}.jsonl"));
        let md = dir.join(format!("{stem}.md"));
        let current = match stat(&target)? {
            Some(_) => Some(read_archive_header(&target)?),
            None => None,
        };
        let Some(current) = current else {
            // The archive itself is gone (its session was compacted away by a crash repair).
            f.add(
                RepairKind::ArchiveReplacement,
                self.id(),
                path.to_path_buf(),
                "the new log of an archive that no longer exists; removed",
            );
            if f.fix {
                remove_if_exists(path)?;
                sync_dir(dir)?;
            }
            return Ok(());
        };
        let replacement = match self.read_archive_file(path, stem) {
            Ok(archive) => {
                let header = read_archive_header(path)?;
                (header.session == current.session
                    && header.generation == current.generation
                    && header.created_at == current.created_at)
                    .then_some((header, archive.messages))
            }
            Err(e) if e.kind() == agentmem_core::ErrorKind::CorruptData => None,
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
                    let view =
                        render_memory_md(&header.conversation, header.memory_created, &messages);
                    write_atomic(dir, &md, view.as_bytes())?;
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
                    self.restore_archive_md(&target, stem, &md)?;
                    remove_if_exists(path)?;
                    sync_dir(dir)?;
                }
            }
        }
        Ok(())
    }

    /// Rewrites the archive `.md` view `md` from the archive log `log` (of `stem`).
    fn restore_archive_md(&self, log: &Path, stem: &str, md: &Path) -> Result<()> {
        let header = read_archive_header(log)?;
        let archive = self.read_archive_file(log, stem)?;
        let view = render_memory_md(
            &header.conversation,
            header.memory_created,
            &archive.messages,
        );
        write_atomic(&self.paths.archive, md, view.as_bytes())
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
        &self,
        slot: &mut SessionSlot,
        archive: &ArchiveId,
        messages: &[Message],
        f: &mut Findings,
    ) -> Result<ArchiveInfo> {
        if let Synced::Missing = self.sync(slot, f)? {
            return Err(archive_not_found(self.id, archive));
        }
        let generation = slot.open.as_ref().map_or(0, |o| o.header.generation);
        let Some((stem, mut header)) = self
            .scan_archives(generation, f)?
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
            let view = render_memory_md(&header.conversation, header.memory_created, messages);
            write_atomic(dir, &md, view.as_bytes())?;
            std::fs::rename(&pending, &target)
                .map_err(|e| io_error(&target, "cannot rename a new version into", e))?;
            sync_dir(dir)
        })();
        if let Err(e) = result {
            // Back to the old archive when possible: its view first, and only then the pending
            // log removed (it marks a `.md` that may be the new one). If this fails too, the
            // pending log stays and the next scan finishes the replacement.
            if stat(&pending).ok().flatten().is_some()
                && self.restore_archive_md(&target, &stem, &md).is_ok()
            {
                let _ = remove_if_exists(&pending);
                let _ = sync_dir(dir);
            }
            return Err(e);
        }
        Ok(ArchiveInfo {
            id: archive.clone(),
            session: self.id.clone(),
            created_at: header.created_at,
            message_count: header.message_count,
        })
    }

    /// One archive, or `NotFound`.
    pub(crate) fn load_archive(
        &self,
        slot: &mut SessionSlot,
        archive: &ArchiveId,
        f: &mut Findings,
    ) -> Result<Archive> {
        let missing = || archive_not_found(self.id, archive);
        if let Synced::Missing = self.sync(slot, f)? {
            return Err(missing());
        }
        let generation = slot.open.as_ref().map_or(0, |o| o.header.generation);
        let listed = self.scan_archives(generation, f)?;
        if !listed.iter().any(|(stem, _)| stem == archive.as_str()) {
            return Err(missing());
        }
        let path = self.paths.archive.join(format!("{archive}.jsonl"));
        self.read_archive_file(&path, archive.as_str())
    }

    /// The archives, oldest first.
    pub(crate) fn list_archives(
        &self,
        slot: &mut SessionSlot,
        f: &mut Findings,
    ) -> Result<Vec<ArchiveInfo>> {
        if let Synced::Missing = self.sync(slot, f)? {
            return Ok(Vec::new());
        }
        let generation = slot.open.as_ref().map_or(0, |o| o.header.generation);
        self.scan_archives(generation, f)?
            .into_iter()
            .map(|(stem, h)| {
                Ok(ArchiveInfo {
                    id: ArchiveId::new(stem)?,
                    session: self.id.clone(),
                    created_at: h.created_at,
                    message_count: h.message_count,
                })
            })
            .collect()
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

    /// Appends `messages` (not empty): new bytes only, one write per file; on failure both
    /// files are cut back to their previous lengths, so nothing is half-written. Under
    /// [`Durability::Fsync`] the caller must wait on the returned ticket, without the locks,
    /// before acknowledging the append.
    pub(crate) fn append(
        &self,
        slot: &mut SessionSlot,
        messages: &[Message],
        f: &mut Findings,
    ) -> Result<Option<Ticket>> {
        if let Synced::Missing = self.sync(slot, f)? {
            // A new session's files are written whole and synced.
            return self.create(slot, messages, Metadata::new()).map(|()| None);
        }
        let result = self.append_existing(slot, messages);
        if result.is_err() {
            slot.open = None;
        }
        result
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

    /// Appends to a session `sync` found current (see [`append`](Self::append)).
    pub(crate) fn append_existing(
        &self,
        slot: &mut SessionSlot,
        messages: &[Message],
    ) -> Result<Option<Ticket>> {
        let p = &self.paths;
        let Some(o) = slot.open.as_mut() else {
            return Err(Error::backend("session state missing before append"));
        };
        let Some((md, _)) = o.md.as_mut() else {
            return Err(Error::backend(format!("{} is not open", p.md.display())));
        };
        let line = encode_append(messages)?;
        let mut blocks = String::new();
        let mut last_block = None;
        for m in messages {
            if let Some(block) = render_block(m) {
                blocks.push_str(&block);
                last_block = Some(block);
            }
        }
        let (log_start, md_start) = (o.log_len, o.md_len);
        let undo = |log: &File, md: &File| {
            // Best effort: if even this fails, the next sync re-reads and repairs.
            let _ = log.set_len(log_start);
            let _ = md.set_len(md_start);
        };
        if let Err(e) = (&*o.log).write_all(&line) {
            undo(&o.log, md);
            return Err(io_error(&p.log, "cannot append to", e));
        }
        if !blocks.is_empty() {
            if let Err(e) = md.write_all(blocks.as_bytes()) {
                undo(&o.log, md);
                return Err(io_error(&p.md, "cannot append to", e));
            }
        }
        // Only the log is synced for a durable append: `MEMORY.md` is its view, and a view
        // that a crash left short or stale is regenerated from the log on the next access.
        let ticket =
            (self.durability == Durability::Fsync).then(|| slot.group.written(&o.log, &p.log));
        o.log_len += line.len() as u64;
        o.md_len += blocks.len() as u64;
        o.lines += 1;
        o.count += messages.len() as u64;
        if last_block.is_some() {
            o.last_block = last_block;
        }
        if let Some(m) = messages.last() {
            o.last_timestamp = Some(m.timestamp);
        }
        // The log's modification time, without asking the file system (see `updated_at`).
        o.mtime = o.mtime.max(Some(now()));
        Ok(ticket)
    }

    /// Creates the session with `messages`: the log first, then its view, each written whole.
    /// An expired session there before is removed first (its messages, archives, labels and
    /// expiry: the new session starts bare); a sidecar left without a log is dropped.
    fn create(
        &self,
        slot: &mut SessionSlot,
        messages: &[Message],
        metadata: Metadata,
    ) -> Result<()> {
        self.clear_for_create(slot)?;
        let new_folder = !self.paths.dir.exists();
        create_dirs(&self.paths.dir)?;
        if new_folder {
            // The folder's entry in `agents/` must reach the disk too, or a crash can lose the
            // whole session although its files were synced.
            if let Some(agents) = self.paths.dir.parent() {
                sync_dir(agents)?;
            }
        }
        let mut header = SessionHeader::new(self.id, now());
        header.metadata = metadata;
        self.rewrite(slot, header, messages)
    }

    /// Before a session is created where `sync` found none: removes an expired session's
    /// folder (renamed into the trash first, as a deletion), or a sidecar without a log.
    fn clear_for_create(&self, slot: &mut SessionSlot) -> Result<()> {
        let Some(cached) = slot.lifecycle.as_ref() else {
            return Ok(());
        };
        if cached.stamp.is_none() {
            return Ok(());
        }
        if cached.data.is_expired_at(now()) {
            slot.forget();
            remove_session_dir(&self.paths.dir)?;
        } else {
            remove_if_exists(&self.paths.lifecycle)?;
        }
        slot.lifecycle = Some(CachedLifecycle::default());
        Ok(())
    }

    /// Changes the session's labels and expiry as `patch` says; `NotFound` when it does not
    /// exist or has expired.
    pub(crate) fn update(
        &self,
        slot: &mut SessionSlot,
        patch: &SessionPatch,
        f: &mut Findings,
    ) -> Result<SessionInfo> {
        if let Synced::Missing = self.sync(slot, f)? {
            return Err(not_found(self.id));
        }
        let mut next = slot.lifecycle();
        patch.apply(&mut next.labels, &mut next.expires_at)?;
        self.write_lifecycle(slot, next)?;
        slot.info(self.id)
            .ok_or_else(|| Error::backend("session state missing after update"))
    }

    /// Removes the messages after the point `to` names and returns them, oldest first: the
    /// log and then `MEMORY.md` rewritten with the kept messages, each atomically (as
    /// `save_session` does), so a crash leaves the old state or the new one (a stale
    /// `MEMORY.md` is regenerated from the log). Labels, expiry and archives stay.
    pub(crate) fn rewind(
        &self,
        slot: &mut SessionSlot,
        to: &Rewind,
        f: &mut Findings,
    ) -> Result<Vec<Message>> {
        let Some((mut messages, o)) = self.load(slot, f)? else {
            return Err(not_found(self.id));
        };
        let keep = rewind_keep(&messages, self.id, to)?;
        if keep >= messages.len() {
            return Ok(Vec::new());
        }
        let removed = messages.split_off(keep);
        let mut header = o.header.clone();
        // Never backwards: the removed messages may have carried later times.
        header.updated_at = now().max(o.updated_at());
        self.rewrite(slot, header, &messages)?;
        Ok(removed)
    }

    /// Replaces the log and then `MEMORY.md` with `header` and `messages`, each atomically. A
    /// crash between the two leaves a stale `MEMORY.md`, which the next sync regenerates.
    fn rewrite(
        &self,
        slot: &mut SessionSlot,
        header: SessionHeader,
        messages: &[Message],
    ) -> Result<()> {
        let p = &self.paths;
        slot.open = None;
        write_atomic(&p.dir, &p.log, &encode_log(&header, messages)?)?;
        let text = render_memory_md(&header.conversation, header.memory_created, messages);
        write_atomic(&p.dir, &p.md, text.as_bytes())?;
        let log = open_append(&p.log)?;
        let meta = log
            .metadata()
            .map_err(|e| io_error(&p.log, "cannot stat", e))?;
        let lines = 1 + messages.len() as u64;
        let mut open = OpenSession::new(log, &meta, meta.len(), lines, header, messages);
        self.reopen_md(&mut open)?;
        slot.open = Some(open);
        Ok(())
    }

    /// Makes the session exactly `messages` with `metadata`.
    pub(crate) fn save(
        &self,
        slot: &mut SessionSlot,
        messages: &[Message],
        metadata: Metadata,
        f: &mut Findings,
    ) -> Result<()> {
        match self.sync(slot, f)? {
            Synced::Missing => self.create(slot, messages, metadata),
            _ => {
                let Some(o) = slot.open.as_ref() else {
                    return Err(Error::backend("session state missing before save"));
                };
                let mut header = o.header.clone();
                header.metadata = metadata;
                header.updated_at = now();
                self.rewrite(slot, header, messages)
            }
        }
    }

    /// Archives the current messages and replaces them with `replacement`. Order of
    /// writes: archive log, archive view, session log, session view; a crash before the session
    /// log is replaced leaves an orphan archive (removed by the next sync), after it a stale
    /// view (regenerated). Either way the old or the new state, and no transcript is lost.
    pub(crate) fn compact(
        &self,
        slot: &mut SessionSlot,
        replacement: &[Message],
        f: &mut Findings,
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
            let view = render_memory_md(&header.conversation, header.memory_created, &messages);
            write_atomic(
                &p.archive,
                &p.archive.join(format!("{stem}.md")),
                view.as_bytes(),
            )?;
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
        Ok(ArchiveInfo {
            id: ArchiveId::new(stem)?,
            session: self.id.clone(),
            created_at: t,
            message_count: archive_header.message_count,
        })
    }
}

/// The error for an operation on a session that does not exist (or has expired).
pub(crate) fn not_found(id: &SessionId) -> Error {
    Error::not_found(format!("session `{id}` does not exist"))
}

/// Removes a session's folder: renamed into the trash of its parent first (and the parent
/// synced), so a crash never leaves half a session; the next open empties the trash.
pub(crate) fn remove_session_dir(dir: &Path) -> Result<()> {
    let Some(agents) = dir.parent() else {
        return Err(Error::backend(format!("{} has no parent", dir.display())));
    };
    let trash = agents.join(format!("{TRASH_PREFIX}{}", agentmem_core::new_id()));
    std::fs::rename(dir, &trash).map_err(|e| io_error(dir, "cannot move to the trash", e))?;
    sync_dir(agents)?;
    std::fs::remove_dir_all(&trash).map_err(|e| io_error(&trash, "cannot remove", e))
}

/// Writes a new file `path` whole (mode 0600) and fsyncs it.
fn write_new(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(crate::fsutil::FILE_MODE)
        .open(path)
        .map_err(|e| io_error(path, "cannot create", e))?;
    file.write_all(bytes)
        .map_err(|e| io_error(path, "cannot write", e))?;
    file.sync_all()
        .map_err(|e| io_error(path, "cannot fsync", e))
}

/// Copies the messages of `source` up to and including `at` (all when `None`), its metadata
/// and labels into the new session `target` (no archives, no expiry), with both sessions'
/// locks held by the caller.
///
/// `Conflict` when `target` exists (and has not expired); `NotFound` when `source` does not,
/// or does not hold `at`. The target is built whole in a folder `agents/.fork-<random>-<id>`
/// (files fsynced, then the folder) and renamed into place, so a crash leaves no half target;
/// an expired target's folder is moved to the trash just before. A fork folder left by a crash
/// is removed when a store opens (see `store.rs`).
pub(crate) fn fork(
    source: &SessionCtx<'_>,
    source_slot: &mut SessionSlot,
    target: &SessionCtx<'_>,
    target_slot: &mut SessionSlot,
    at: Option<&MessageId>,
    f: &mut Findings,
) -> Result<SessionInfo> {
    if !matches!(target.sync(target_slot, f)?, Synced::Missing) {
        return Err(fork_target_exists(target.id));
    }
    let Some((mut messages, o)) = source.load(source_slot, f)? else {
        return Err(not_found(source.id));
    };
    let end = fork_end(&messages, source.id, at)?;
    messages.truncate(end);
    let mut header = SessionHeader::new(target.id, now());
    header.metadata = o.header.metadata.clone();
    let lifecycle = Lifecycle {
        labels: source_slot.lifecycle().labels,
        expires_at: None,
    };

    let dir = &target.paths.dir;
    let Some(agents) = dir.parent() else {
        return Err(Error::backend(format!("{} has no parent", dir.display())));
    };
    let building = agents.join(fork_folder_name(target.id));
    let result = (|| {
        create_dirs(&building)?;
        write_new(
            &building.join(crate::layout::SESSION_LOG),
            &encode_log(&header, &messages)?,
        )?;
        let text = render_memory_md(&header.conversation, header.memory_created, &messages);
        write_new(&building.join(crate::layout::MEMORY_MD), text.as_bytes())?;
        if !lifecycle.is_empty() {
            write_new(
                &building.join(crate::lifecycle::LIFECYCLE_FILE),
                &crate::lifecycle::encode(&lifecycle)?,
            )?;
        }
        sync_dir(&building)?;
        target_slot.forget();
        if stat(dir)?.is_some() {
            // An expired session, or a folder holding no session (a crash right after its
            // creation): gone before the fork takes its place.
            remove_session_dir(dir)?;
        }
        std::fs::rename(&building, dir)
            .map_err(|e| io_error(dir, "cannot rename a fork into", e))?;
        sync_dir(agents)
    })();
    if result.is_err() {
        target_slot.forget();
        if stat(&building).ok().flatten().is_some() {
            let _ = std::fs::remove_dir_all(&building);
        }
    }
    result?;
    match target.sync(target_slot, f)? {
        Synced::Missing => Err(Error::backend(format!(
            "the fork `{}` vanished after it was written",
            target.id
        ))),
        _ => target_slot
            .info(target.id)
            .ok_or_else(|| Error::backend("session state missing after fork")),
    }
}

/// Updates the cached last block and time with newly seen `messages`.
fn note_messages(o: &mut OpenSession, messages: &[Message]) {
    for m in messages {
        if let Some(block) = render_block(m) {
            o.last_block = Some(block);
        }
        o.last_timestamp = Some(m.timestamp);
    }
}

/// A whole session log, parsed.
struct ParsedLog {
    header: SessionHeader,
    messages: Vec<Message>,
    /// Bytes of whole lines (the torn tail, if any, starts there).
    valid_len: usize,
    /// Whole lines, header included.
    lines: u64,
    torn: Option<crate::log::TornTail>,
    /// Complete lines that do not parse (never the header: a log without a readable header is
    /// an error).
    bad: Vec<BadLine>,
}

/// Parses a whole session log, keeping the complete lines that do not parse aside.
fn parse_log(bytes: &[u8], path: &Path) -> Result<ParsedLog> {
    let scan = scan_lines(bytes, 1, path, true, |line, bytes| {
        if line == 1 {
            parse_session_header(bytes).map(LogLine::Header)
        } else {
            parse_entry(bytes).map(LogLine::Entry)
        }
    })?;
    let mut records = scan.records.into_iter();
    let header = match (records.next(), scan.bad.first()) {
        (Some(LogLine::Header(h)), _) => h,
        (_, Some(bad)) if bad.line == 1 => {
            return Err(crate::fsutil::corrupt_line(
                path,
                1,
                format!("no session header: {}", bad.reason),
            ));
        }
        _ => {
            // The log is created whole by a rename, so a missing header is not a crash artefact.
            let why = scan
                .torn
                .map_or_else(|| "the file is empty".to_string(), |t| t.reason);
            return Err(crate::fsutil::corrupt_line(
                path,
                1,
                format!("no session header: {why}"),
            ));
        }
    };
    let mut messages = Vec::new();
    for record in records {
        if let LogLine::Entry(batch) = record {
            messages.extend(batch);
        }
    }
    Ok(ParsedLog {
        header,
        messages,
        valid_len: scan.valid_len,
        lines: scan.lines,
        torn: scan.torn,
        bad: scan.bad,
    })
}

fn read_archive_header(path: &Path) -> Result<ArchiveHeader> {
    let file = File::open(path).map_err(|e| io_error(path, "cannot open", e))?;
    let mut first = Vec::new();
    BufReader::new(file)
        .read_until(b'\n', &mut first)
        .map_err(|e| io_error(path, "cannot read", e))?;
    if first.last() == Some(&b'\n') {
        first.pop();
    }
    parse_archive_header(&first).map_err(|why| crate::fsutil::corrupt_line(path, 1, why))
}

fn remove_if_exists(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_error(path, "cannot remove", e)),
    }
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
