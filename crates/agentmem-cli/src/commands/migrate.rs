//! `agentmem migrate --from URL --to URL [--dry-run]`.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use agentmem_core::{AgentMemory, Error, Result, SessionId};
use agentmem_transfer::{is_encrypted, migrate, GraphReport, MigrateOptions, Progress, SyncReport};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::{open, redact, store_error, Keys};
use crate::output::{count, graph_items, graph_totals, store_totals, when_any, Output};

/// A progress bar on a terminal, one line per session otherwise (both on standard error);
/// the knowledge graph, copied after the sessions, gets one line either way.
enum Shown {
    /// The bar, and whether this is a dry run.
    Bar(ProgressBar, bool),
    Lines {
        done: u64,
        total: u64,
        dry_run: bool,
    },
}

impl Progress for Shown {
    fn start(&mut self, sessions: u64) {
        match self {
            Shown::Bar(bar, _) => bar.set_length(sessions),
            Shown::Lines { total, .. } => *total = sessions,
        }
    }

    fn session(&mut self, id: &SessionId, messages: u64, written: &SyncReport) {
        match self {
            Shown::Bar(bar, _) => {
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
        if let Shown::Bar(bar, _) = self {
            bar.finish_and_clear();
        }
    }

    fn graph(&mut self, copied: &GraphReport) {
        let (Shown::Bar(_, dry_run) | Shown::Lines { dry_run, .. }) = self;
        let dry_run = *dry_run;
        eprintln!(
            "migrate: knowledge graph: {}",
            graph_totals(copied, if dry_run { "to write" } else { "written" })
        );
    }
}

/// The destination's key, as `migrate`'s flags give it.
#[derive(Debug, Default)]
pub struct ToKey {
    /// `--to-key-file`.
    pub file: Option<PathBuf>,
    /// `--decrypt`: no key, plaintext asked for.
    pub decrypt: bool,
}

/// Opens the destination: with its URL's key, else `--to-key-file`'s, else (unless
/// `--decrypt`) the key the source is read with; `true` when it has a key.
async fn open_destination(
    to: &str, keys: &Keys, to_key: &ToKey,
) -> Result<(Arc<dyn AgentMemory>, bool)> {
    if agentmem::url_names_key(to)? {
        if to_key.file.is_some() || to_key.decrypt {
            return Err(Error::invalid_input(format!(
                "destination {} names its encryption key (key_file or key), and {} as well: \
                 give one",
                redact(to),
                if to_key.decrypt {
                    "--decrypt asks for plaintext"
                } else {
                    "--to-key-file names one"
                }
            )));
        }
        let dest = agentmem::open(to).await.map_err(|e| store_error(to, e))?;
        return Ok((dest, true));
    }
    let key = match (&to_key.file, to_key.decrypt) {
        (Some(path), _) => Some(agentmem::key_from_file(path)?),
        (None, true) => None,
        (None, false) => keys.current()?,
    };
    let dest = agentmem::open_with_key(to, key.as_ref())
        .await
        .map_err(|e| store_error(to, e))?;
    Ok((dest, key.is_some()))
}

/// Copies everything from `from` to `to`, then prints what was copied. From an encrypted
/// source the destination must have a key (its records are then ciphertext under it), unless
/// `--decrypt` asks for plaintext.
pub async fn run(
    out: &mut Output, keys: &Keys, from: &str, to: &str, to_key: &ToKey, dry_run: bool, batch: u64,
) -> Result<()> {
    if from == to {
        return Err(Error::invalid_input(format!(
            "--from and --to name the same store {}",
            redact(from)
        )));
    }
    let source = open(from, keys).await?;
    let (dest, dest_has_key) = open_destination(to, keys, to_key).await?;
    if !dest_has_key && !to_key.decrypt && is_encrypted(source.as_ref()).await? {
        return Err(Error::invalid_input(format!(
            "store {} is encrypted and the destination {} has no key: its records would be \
             written in plaintext; give the destination a key (--to-key-file PATH, or \
             key_file=PATH in its URL), or --decrypt to write plaintext",
            redact(from),
            redact(to)
        )));
    }
    let mut progress = if std::io::stderr().is_terminal() {
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} sessions  {msg}") {
            bar.set_style(style);
        }
        Shown::Bar(bar, dry_run)
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
        allow_plaintext: to_key.decrypt,
    };
    let report = migrate(source.as_ref(), dest.as_ref(), options, &mut progress).await?;
    if out.json() {
        return out.json_value(&report);
    }
    let verb = if dry_run { "would copy" } else { "copied" };
    let graph = when_any(graph_items(&report.graph), || {
        format!(
            ", graph of {}",
            graph_totals(&report.graph, if dry_run { "to write" } else { "written" })
        )
    });
    let checkpoints = when_any(report.checkpoints, || {
        format!(
            ", {} of {} written",
            count(report.checkpoints_written, "checkpoint"),
            count(report.threads, "thread")
        )
    });
    out.line(format!(
        "{verb} {} from {} to {}: {}, {} and {} written{checkpoints}{graph}{}",
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
