//! Retention: deleting sessions by age and by count, and memory items that have expired or
//! were not updated for too long.

use agentmem_core::Result;
use chrono::{DateTime, Utc};

use crate::statements::Exec;
use crate::store::PostgresStore;

/// How often a purge that lost a deadlock to another purge is run again.
pub(crate) const PURGE_RETRIES: u32 = 3;

impl PostgresStore {
    /// One try of a purge, in one transaction: deletes the sessions expired at `now`, those
    /// last written before `cutoff` and all but the `keep` most recently written, with their messages and
    /// archives, and the memory items expired at `now` or last updated before
    /// `memory_cutoff`. Returns how many sessions and memory items it deleted.
    pub(crate) async fn purge_once(
        &self, cutoff: Option<DateTime<Utc>>, keep: Option<i64>, now: DateTime<Utc>,
        memory_cutoff: Option<DateTime<Utc>>,
    ) -> Result<(usize, u64)> {
        run!(self, 0, |client| async {
            let tx = client.transaction().await?;
            let mut doomed: Vec<String> = Vec::new();
            // One statement per rule. Each deletes (and so locks) the session rows first;
            // their messages and archives go in a later statement, whose snapshot sees every
            // append committed before those locks were taken.
            // Expired sessions go first, whatever the policy; the rules below then count
            // only live ones.
            for row in tx
                .query_st(&self.sql.retention.purge_expired, &[&now])
                .await?
            {
                doomed.push(row.try_get(0)?);
            }
            if let Some(cutoff) = cutoff {
                for row in tx
                    .query_st(&self.sql.retention.purge_age, &[&cutoff])
                    .await?
                {
                    doomed.push(row.try_get(0)?);
                }
            }
            if let Some(keep) = keep {
                for row in tx
                    .query_st(&self.sql.retention.purge_count, &[&keep])
                    .await?
                {
                    doomed.push(row.try_get(0)?);
                }
            }
            if !doomed.is_empty() {
                tx.execute_st(&self.sql.sessions.delete_dependents, &[&doomed])
                    .await?;
            }
            let memories = tx
                .execute_st(&self.sql.retention.purge_memories, &[&now, &memory_cutoff])
                .await?;
            tx.commit().await?;
            Ok((doomed.len(), memories))
        })
    }
}
