//! Writing a session log and its `MEMORY.md` view: appends (new bytes only), and whole
//! rewrites through a temporary file and a rename (create, save, rewind).

use std::fs::File;
use std::io::Write;

use agentmem_core::support::rewind_keep;
use agentmem_core::{now, Error, Message, Metadata, Result, Rewind};
use agentmem_formats::swarms::{render_block, render_memory_md};

use super::{not_found, OpenSession, SessionCtx, SessionSlot, Synced};
use crate::commit::Ticket;
use crate::config::Durability;
use crate::fsutil::{create_dirs, io_error, open_append_with_meta, sync_dir, write_atomic};
use crate::log::{encode_append, encode_log, SessionHeader};
use crate::repair::Findings;

impl SessionCtx<'_> {
    /// Appends `messages` (not empty): new bytes only, one write per file; on failure both
    /// files are cut back to their previous lengths, so nothing is half-written. Under
    /// [`Durability::Fsync`] the caller must wait on the returned ticket, without the locks,
    /// before acknowledging the append.
    pub(crate) fn append(
        &self, slot: &mut SessionSlot, messages: &[Message], f: &mut Findings,
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

    /// Appends to a session `sync` found current (see [`append`](Self::append)).
    pub(crate) fn append_existing(
        &self, slot: &mut SessionSlot, messages: &[Message],
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
        &self, slot: &mut SessionSlot, messages: &[Message], metadata: Metadata,
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

    /// Makes the session exactly `messages` with `metadata`.
    pub(crate) fn save(
        &self, slot: &mut SessionSlot, messages: &[Message], metadata: Metadata, f: &mut Findings,
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

    /// Removes the messages after the point `to` names and returns them, oldest first: the
    /// log and then `MEMORY.md` rewritten with the kept messages, each atomically (as
    /// `save_session` does), so a crash leaves the old state or the new one (a stale
    /// `MEMORY.md` is regenerated from the log). Labels, expiry and archives stay.
    pub(crate) fn rewind(
        &self, slot: &mut SessionSlot, to: &Rewind, f: &mut Findings,
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
    pub(super) fn rewrite(
        &self, slot: &mut SessionSlot, header: SessionHeader, messages: &[Message],
    ) -> Result<()> {
        let p = &self.paths;
        slot.open = None;
        write_atomic(&p.dir, &p.log, &encode_log(&header, messages)?)?;
        let text = render_memory_md(&header.conversation, header.memory_created, messages);
        write_atomic(&p.dir, &p.md, text.as_bytes())?;
        let (log, meta) = open_append_with_meta(&p.log)?;
        let lines = 1 + messages.len() as u64;
        let mut open = OpenSession::new(log, &meta, meta.len(), lines, header, messages);
        self.reopen_md(&mut open)?;
        slot.open = Some(open);
        Ok(())
    }
}
