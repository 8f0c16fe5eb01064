//! Retention: one `DELETE` for expired sessions and one per limit; messages and archives follow by foreign-key
//! cascade, and their full-text entries by trigger. Memory items go in one more `DELETE`
//! (expired, or not updated since the memory cutoff), with their full-text entries by trigger.

use agentmem_core::support::{memory_retention_cutoff, retention_cutoff};
use agentmem_core::{now, PurgeReport, RetentionPolicy};
use rusqlite::{params, Connection, TransactionBehavior};

use crate::error::SqlResult;
use crate::rows;

/// Deletes expired sessions, sessions older than `max_age` (by last write) and all but the `max_sessions` most
/// recently written, and memory items that have expired or were last updated longer than
/// `max_memory_age` ago, in one transaction.
pub(crate) fn purge(conn: &mut Connection, policy: &RetentionPolicy) -> SqlResult<PurgeReport> {
    let at = now();
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    // Expired sessions go whatever the policy (the partial index on `expires_at` finds them).
    let mut deleted = tx.execute(
        "DELETE FROM agentmem_sessions WHERE expires_at <= ?1",
        [rows::micros(at)],
    )?;
    if let Some(cutoff) = retention_cutoff(policy, at) {
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
    // Without a memory cutoff, `updated_at < NULL` holds for no row.
    let memory_cutoff = memory_retention_cutoff(policy, at).map(rows::micros);
    let memories_deleted = tx.execute(
        "DELETE FROM agentmem_memories WHERE expires_at <= ?1 OR updated_at < ?2",
        params![rows::micros(at), memory_cutoff],
    )?;
    tx.commit()?;
    Ok(PurgeReport {
        sessions_deleted: deleted as u64,
        memories_deleted: memories_deleted as u64,
    })
}
