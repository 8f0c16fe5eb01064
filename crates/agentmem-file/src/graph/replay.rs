//! The graph's log replayed into a cached [`GraphState`] (the shared machinery is in
//! `replayed.rs`): bringing the cache up to date with what other processes appended (only the
//! new lines when the file is the same one) and setting aside what does not parse. Every
//! function here that changes a file runs on a blocking thread with the graph's in-process
//! mutex and exclusive file lock held.

use std::sync::Arc;

use agentmem_core::{GraphState, Result};

use super::record::{encode_log, Record, GRAPH_KIND};
use crate::cursor::{read_records, sync_log, Damage, LogCache, LogCursor};
use crate::layout::{Layout, LogPaths};
use crate::log::push_line;
use crate::repair::Findings;
use crate::replayed::{LogCtx, LogKind, Slot};
use crate::store::Inner;

/// The knowledge graph's log, `graph/graph.jsonl`, as a [`LogKind`].
#[derive(Debug)]
pub(crate) enum GraphLog {}

/// The cached replay of the graph's log. Guarded by its in-process mutex.
pub(crate) type GraphSlot = Slot<GraphLog>;

impl LogCache for GraphSlot {
    type Record = Record;

    fn cursor(&mut self) -> &mut LogCursor {
        &mut self.cursor
    }

    fn reset(&mut self) {
        Slot::reset(self);
    }

    fn apply(&mut self, record: Record) {
        record.apply(&mut self.state);
    }
}

impl LogKind for GraphLog {
    type State = GraphState;
    type Record = Record;
    const NAME: &'static str = "graph log";
    const INTERRUPTED: &'static str = "an interrupted graph rewrite";
    const COMPACT_RECORDS_PER_ITEM: u64 = 4;

    fn slot(inner: &Inner) -> &Arc<tokio::sync::Mutex<GraphSlot>> {
        &inner.graph
    }

    fn paths(layout: &Layout) -> LogPaths {
        layout.graph()
    }

    fn live(state: &GraphState) -> u64 {
        let (entities, relations) = state.len();
        (entities + relations) as u64
    }

    fn header() -> Result<Vec<u8>> {
        Record::header().line()
    }

    fn push(record: &Record, out: &mut Vec<u8>) -> Result<()> {
        push_line(out, record)
    }

    fn encode_log(state: &GraphState) -> Result<Vec<u8>> {
        encode_log(state)
    }

    /// Truncates a torn last line and sets complete lines that do not parse aside (see
    /// [`quarantine`]).
    fn sync(ctx: &LogCtx<'_, Self>, slot: &mut GraphSlot, f: &mut Findings) -> Result<()> {
        let reopened = |f: &mut Findings| ctx.clean_temp_files(f);
        sync_log(slot, &ctx.paths.log, f, reopened, |slot, f| {
            // Damage is set aside from a whole read only, so the rewrite starts from every
            // record.
            let keep_bad = slot.cursor.len == 0;
            read_records(
                slot,
                &ctx.paths.log,
                &GRAPH_KIND,
                keep_bad,
                f,
                |slot, damage, f| quarantine(ctx, slot, damage, f),
            )
        })
    }
}

/// Sets the complete lines of the whole log that do not parse (and a first line cut off)
/// aside, byte for byte, in `graph/quarantine/`, then rewrites the log from its readable
/// records (a torn tail goes with them: it was never acknowledged).
fn quarantine(
    ctx: &LogCtx<'_, GraphLog>, slot: &mut GraphSlot, damage: Damage<Record>, f: &mut Findings,
) -> Result<()> {
    damage.keep_readable(slot, &ctx.paths.dir, &ctx.paths.log, f)?;
    // Only checking: the log stays as it is (the cache, a scratch one, holds the rest).
    if !f.fix {
        return Ok(());
    }
    ctx.rewrite(slot)
}
