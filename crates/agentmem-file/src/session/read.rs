//! Reading a session log: parsing it whole, and loading its messages (all, or a last-N window
//! read backwards from the end when this process holds the session's state).

use std::path::Path;

use agentmem_core::history::{tail_start, trim_orphans};
use agentmem_core::{Message, Result};

use super::{Current, OpenSession, SessionCtx, SessionSlot, Synced};
use crate::fsutil::{corrupt_line, read_range};
use crate::log::{parse_entry, parse_session_header, scan_lines, BadLine, SessionHeader, TornTail};
use crate::repair::Findings;

enum LogLine {
    Header(SessionHeader),
    Entry(Vec<Message>),
}

/// A whole session log, parsed.
pub(super) struct ParsedLog {
    pub(super) header: SessionHeader,
    pub(super) messages: Vec<Message>,
    /// Bytes of whole lines (the torn tail, if any, starts there).
    pub(super) valid_len: usize,
    /// Whole lines, header included.
    pub(super) lines: u64,
    pub(super) torn: Option<TornTail>,
    /// Complete lines that do not parse (never the header: a log without a readable header is
    /// an error).
    pub(super) bad: Vec<BadLine>,
}

/// Parses a whole session log, keeping the complete lines that do not parse aside.
pub(super) fn parse_log(bytes: &[u8], path: &Path) -> Result<ParsedLog> {
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
            return Err(corrupt_line(
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
            return Err(corrupt_line(path, 1, format!("no session header: {why}")));
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

impl SessionCtx<'_> {
    /// Every message of the (synced) log.
    pub(crate) fn read_all(&self, o: &OpenSession) -> Result<Vec<Message>> {
        let p = &self.paths;
        let bytes = read_range(&o.log, &p.log, 0, o.log_len)?;
        let parsed = parse_log(&bytes, &p.log)?;
        if let Some(bad) = parsed.bad.first() {
            return Err(corrupt_line(&p.log, bad.line, bad.reason.clone()));
        }
        if let Some(torn) = parsed.torn {
            return Err(corrupt_line(&p.log, torn.line, torn.reason));
        }
        Ok(parsed.messages)
    }

    /// The messages of the session after `sync`: `None` when it does not exist.
    pub(crate) fn load<'s>(
        &self, slot: &'s mut SessionSlot, f: &mut Findings,
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
        &self, slot: &'s mut SessionSlot, f: &mut Findings,
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
        &self, slot: &'s mut SessionSlot, limit: Option<usize>, f: &mut Findings,
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
}
