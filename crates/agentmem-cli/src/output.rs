//! Writing results to standard output: text tables for people, JSON for scripts.

use std::io::Write;

use agentmem_core::{Error, Result};
use chrono::{DateTime, Utc};
use serde::Serialize;

/// Standard output, buffered. A closed pipe (`agentmem show x | head`) stops the writing
/// quietly instead of failing the command.
pub struct Output {
    json: bool,
    out: Box<dyn Write>,
    closed: bool,
}

impl Output {
    /// Buffered standard output; `json` selects JSON listings.
    pub fn stdout(json: bool) -> Self {
        Output {
            json,
            out: Box::new(std::io::BufWriter::new(std::io::stdout())),
            closed: false,
        }
    }

    /// Whether `--json` was given.
    pub fn json(&self) -> bool {
        self.json
    }

    /// Writes `text` as is: for data (JSON, exports), never for text a person reads.
    pub fn raw(&mut self, text: &str) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        match self.out.write_all(text.as_bytes()) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            Err(e) => Err(Error::io("could not write the output", e)),
        }
    }

    /// Writes one line for people, made [`printable`]: every human-readable output goes
    /// through here or [`text`](Self::text), so stored text cannot drive the terminal.
    pub fn line(&mut self, text: impl std::fmt::Display) -> Result<()> {
        self.text(&format!("{text}\n"))
    }

    /// Writes `text` (any number of lines) for people, made [`printable`].
    pub fn text(&mut self, text: &str) -> Result<()> {
        self.raw(&printable(text))
    }

    /// Writes `value` as pretty JSON and a newline, as is: JSON escapes control characters
    /// itself, and a script reads the stored text unchanged.
    pub fn json_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        let text = serde_json::to_string_pretty(value)
            .map_err(|e| Error::backend("cannot serialize the output").with_source(e))?;
        self.raw(&format!("{text}\n"))
    }

    /// Writes `items`: as a JSON list with `--json`, else as a table under `header`, a row an
    /// item made by `row`.
    pub fn listing<T: Serialize>(
        &mut self, items: &[T], header: &[&str], row: impl Fn(&T) -> Vec<String>,
    ) -> Result<()> {
        if self.json {
            return self.json_value(items);
        }
        let rows: Vec<Vec<String>> = items.iter().map(row).collect();
        self.table(header, &rows)
    }

    /// Writes rows as left-aligned columns under `header`.
    pub fn table(&mut self, header: &[&str], rows: &[Vec<String>]) -> Result<()> {
        // Escaped before measuring, so a hostile cell does not skew the columns.
        let rows: Vec<Vec<String>> = rows
            .iter()
            .map(|row| row.iter().map(|cell| printable(cell)).collect())
            .collect();
        let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let render = |cells: &mut dyn Iterator<Item = &str>| {
            let mut line = String::new();
            for (i, (cell, w)) in cells.zip(&widths).enumerate() {
                if i + 1 == widths.len() {
                    line.push_str(cell);
                } else {
                    line.push_str(&format!("{cell:<w$}  "));
                }
            }
            line.trim_end().to_string()
        };
        self.line(render(&mut header.iter().copied()))?;
        for row in &rows {
            self.line(render(&mut row.iter().map(String::as_str)))?;
        }
        Ok(())
    }

    /// Flushes what is buffered.
    pub fn finish(&mut self) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        match self.out.flush() {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                Err(Error::io("could not write the output", e))
            }
            _ => Ok(()),
        }
    }
}

/// A time for people: `2026-04-20 18:35:04Z`.
pub fn time(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%SZ").to_string()
}

/// `text` on one line, cut to `max` characters with `…`.
pub fn snippet(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() <= max {
        flat
    } else {
        let mut s: String = flat.chars().take(max.saturating_sub(1)).collect();
        s.push('…');
        s
    }
}

/// `text` safe to print on a terminal: line breaks and tabs kept, every other control
/// character (escape sequences, carriage returns, C1 controls) and the bidirectional
/// overrides shown as `\u{..}`, so stored text cannot move the cursor, recolour or retitle
/// the terminal, nor make a line read in another order than it is stored.
pub fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let bidi_control = matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        if (c.is_control() && c != '\n' && c != '\t') || bidi_control {
            out.push_str(&c.escape_unicode().to_string());
        } else {
            out.push(c);
        }
    }
    out
}

/// `n` and the noun, plural unless `n` is 1: `1 session`, `3 sessions`, `2 memory items`.
pub fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else if let Some(stem) = noun
        .strip_suffix('y')
        .filter(|s| !s.ends_with(['a', 'e', 'o', 'u']))
    {
        format!("{n} {stem}ies")
    } else {
        format!("{n} {noun}s")
    }
}

/// What a whole store holds, as `rekey` and `migrate` report it:
/// `3 sessions (12 messages, 1 archive) and 2 memory items`.
pub fn store_totals(sessions: u64, messages: u64, archives: u64, memories: u64) -> String {
    format!(
        "{} ({}, {}) and {}",
        count(sessions, "session"),
        count(messages, "message"),
        count(archives, "archive"),
        count(memories, "memory item")
    )
}

/// `part` of a summary line, or nothing when there are none of what it counts (`n` is 0): a
/// store without checkpoints gets the summary it always had.
pub fn when_any(n: u64, part: impl FnOnce() -> String) -> String {
    if n == 0 {
        String::new()
    } else {
        part()
    }
}

/// What merging a knowledge graph wrote, as `import` and `migrate` report it:
/// `5 entities (3 new; 12 observations written) and 4 relations (2 new)`; `verb` names the
/// writing (`written`, or `to write` in a dry run).
pub fn graph_totals(graph: &agentmem_transfer::GraphReport, verb: &str) -> String {
    format!(
        "{} ({} new; {} {verb}) and {} ({} new)",
        count(graph.entities, "entity"),
        graph.entities_created,
        count(graph.observations_written, "observation"),
        count(graph.relations, "relation"),
        graph.relations_created
    )
}

/// How many entities and relations a merged graph held (for [`when_any`]).
pub fn graph_items(graph: &agentmem_transfer::GraphReport) -> u64 {
    graph.entities + graph.relations
}
