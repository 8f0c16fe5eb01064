//! Retention: one `DELETE` per limit; messages and archives follow by foreign-key
//! cascade, and their full-text entries by trigger.

use agentmem_core::support::retention_cutoff;
use agentmem_core::{now, PurgeReport, RetentionPolicy};
use rusqlite::{Connection, TransactionBehavior};

use crate::error::SqlResult;
use crate::rows;

/// Deletes sessions older than `max_age` (by last write) and all but the `max_sessions` most
/// recently written, in one transaction.
pub(crate) fn purge(conn: &mut Connection, policy: &RetentionPolicy) -> SqlResult<PurgeReport> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut deleted = 0usize;
    if let Some(cutoff) = retention_cutoff(policy, now()) {
        deleted += tx.execute(
            "DELETE FROM agentmem_sessions WHERE updated_at < ?1",
            [rows::micros(cutoff)],
        )?;
    }
    if let Some(keep) = policy.max_sessions {
        // Ties on `updated_at` keep the later-created session (the larger row id).
        deleted += tx.execute(
            "DELETE FROM agentmem_sessions WHERE id NOT IN
                 (SELECT id FROM agentmem_sessions ORDER BY updated_at DESC, id DESC LIMIT ?1)",
            [rows::sql_int(keep)],
        )?;
    }
    tx.commit()?;
    Ok(PurgeReport {
        sessions_deleted: deleted as u64,
    })
}
