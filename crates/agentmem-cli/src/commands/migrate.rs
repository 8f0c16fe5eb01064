//! `agentmem migrate --from URL --to URL [--dry-run]`.

use std::io::IsTerminal;

use agentmem_core::{Error, Result, SessionId};
use agentmem_transfer::{migrate, MigrateOptions, Progress, SyncReport};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::{open, redact, Keys};
use crate::output::{count, store_totals, Output};

/// A progress bar on a terminal, one line per session otherwise (both on standard error).
enum Shown {
    Bar(ProgressBar),
    Lines {
        done: u64,
        total: u64,
        dry_run: bool,
    },
}

impl Progress for Shown {
    fn start(&mut self, sessions: u64) {
        match self {
            Shown::Bar(bar) => bar.set_length(sessions),
            Shown::Lines { total, .. } => *total = sessions,
        }
    }

    fn session(&mut self, id: &SessionId, messages: u64, written: &SyncReport) {
        match self {
            Shown::Bar(bar) => {
                bar.set_message(id.to_string());
                bar.inc(1);
            }
            Shown::Lines {
                done,
                total,
                dry_run,
            } => {
                *done += 1;
                let verb = if *dry_run { "would write" } else { "wrote" };
                eprintln!(
                    "migrate: [{done}/{total}] session {id}: {}, {verb} {} and {}",
                    count(messages, "message"),
                    count(written.messages_written, "message"),
                    count(written.archives_written, "archive")
                );
            }
        }
    }

    fn finish(&mut self) {
        if let Shown::Bar(bar) = self {
            bar.finish_and_clear();
        }
    }
}

/// Copies everything from `from` to `to`, then prints what was copied.
pub async fn run(
    out: &mut Output,
    keys: &Keys,
    from: &str,
    to: &str,
    dry_run: bool,
    batch: u64,
) -> Result<()> {
    if from == to {
        return Err(Error::invalid_input(format!(
            "--from and --to name the same store {}",
            redact(from)
        )));
    }
    let source = open(from, keys).await?;
    let dest = open(to, keys).await?;
    let mut progress = if std::io::stderr().is_terminal() {
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} sessions  {msg}") {
            bar.set_style(style);
        }
        Shown::Bar(bar)
    } else {
        Shown::Lines {
            done: 0,
            total: 0,
            dry_run,
        }
    };
    let options = MigrateOptions {
        batch: usize::try_from(batch).unwrap_or(usize::MAX),
        dry_run,
    };
    let report = migrate(source.as_ref(), dest.as_ref(), options, &mut progress).await?;
    if out.json() {
        return out.json_value(&report);
    }
    let verb = if dry_run { "would copy" } else { "copied" };
    out.line(format!(
        "{verb} {} from {} to {}: {}, {} and {} written{}",
        store_totals(
            report.sessions,
            report.messages,
            report.archives,
            report.memories
        ),
        redact(from),
        redact(to),
        count(report.messages_written, "message"),
        count(report.archives_written, "archive"),
        count(report.memories_written, "memory item"),
        if report.verified {
            "; counts verified"
        } else {
            ""
        }
    ))
}
