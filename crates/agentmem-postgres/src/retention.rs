//! Retention (C9): deleting sessions by age and by count.

use agentmem_core::{now, ErrorKind, PurgeReport, Result, RetentionPolicy};
use chrono::{DateTime, Datelike, Utc};

use crate::store::PostgresMemory;

/// How often a purge that lost a deadlock to another purge is run again.
const PURGE_RETRIES: u32 = 3;

impl PostgresMemory {
    pub(crate) async fn purge_impl(&self, policy: &RetentionPolicy) -> Result<PurgeReport> {
        if policy.max_age.is_none() && policy.max_sessions.is_none() {
            return Ok(PurgeReport::default());
        }
        // Ages are measured on the client's clock, the one `updated_at` was written with.
        // An age reaching before year 1 expires nothing (and such a cutoff could not even be
        // bound: PostgreSQL timestamps end in 4714 BC).
        let cutoff: Option<DateTime<Utc>> = policy.max_age.and_then(|age| {
            chrono::Duration::from_std(age)
                .ok()
                .and_then(|age| now().checked_sub_signed(age))
                .filter(|cutoff| cutoff.year() >= 1)
        });
        let keep = policy
            .max_sessions
            .map(|n| i64::try_from(n).unwrap_or(i64::MAX));
        // Two purges running at once may lock the same sessions in opposite orders; the
        // loser of the resulting deadlock is rolled back whole and simply runs again.
        let mut attempt = 0;
        let deleted = loop {
            let result = self.purge_once(cutoff, keep).await;
            match result {
                Err(e) if e.kind() == ErrorKind::Conflict && attempt < PURGE_RETRIES => {
                    attempt += 1
                }
                other => break other?,
            }
        };
        Ok(PurgeReport {
            sessions_deleted: deleted as u64,
        })
    }

    async fn purge_once(&self, cutoff: Option<DateTime<Utc>>, keep: Option<i64>) -> Result<usize> {
        run!(self, 0, |client| async {
            let tx = client.transaction().await?;
            let mut doomed: Vec<String> = Vec::new();
            // One statement per rule. Each deletes (and so locks) the session rows first;
            // their messages and archives go in a later statement, whose snapshot sees every
            // append committed before those locks were taken.
            if let Some(cutoff) = cutoff {
                let st = tx.prepare_cached(&self.sql.purge_age).await?;
                for row in tx.query(&st, &[&cutoff]).await? {
                    doomed.push(row.try_get(0)?);
                }
            }
            if let Some(keep) = keep {
                let st = tx.prepare_cached(&self.sql.purge_count).await?;
                for row in tx.query(&st, &[&keep]).await? {
                    doomed.push(row.try_get(0)?);
                }
            }
            if !doomed.is_empty() {
                let st = tx.prepare_cached(&self.sql.delete_dependents).await?;
                tx.execute(&st, &[&doomed]).await?;
            }
            tx.commit().await?;
            Ok(doomed.len())
        })
    }
}
