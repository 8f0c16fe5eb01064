//! Compaction (A6) and archives.

use agentmem_core::{now, Archive, ArchiveId, ArchiveInfo, Error, Message, Result, SessionId};
use chrono::{DateTime, Utc};

use crate::codec::{count, get, message_from_row, MessageColumns};
use crate::sessions::message_params;
use crate::store::{PostgresMemory, READ_RETRIES};

/// The first archive id not in `taken`: `history_%Y-%m-%d_%H-%M-%S`, then `_2`, `_3`, …
/// for further compactions within the same second.
fn free_archive_id(at: DateTime<Utc>, taken: &[String]) -> String {
    let base = format!("history_{}", at.format("%Y-%m-%d_%H-%M-%S"));
    if !taken.contains(&base) {
        return base;
    }
    (2u64..)
        .map(|n| format!("{base}_{n}"))
        .find(|candidate| !taken.contains(candidate))
        .unwrap_or(base)
}

impl PostgresMemory {
    pub(crate) async fn compact_impl(
        &self,
        session: &SessionId,
        replacement: &[Message],
    ) -> Result<ArchiveInfo> {
        let columns = MessageColumns::new(replacement)?;
        let n = columns.len();
        let at = now();
        let id = session.as_str();
        let params = message_params(&id, &at, &n, &columns);
        let base = format!("history_{}", at.format("%Y-%m-%d_%H-%M-%S"));
        let outcome = run!(self, 0, |client| async {
            let tx = client.transaction().await?;
            // The session row's lock orders this against appends: one that got the lock
            // first is archived, one that waits lands after the replacement.
            let lock = tx.prepare_cached(&self.sql.lock_session).await?;
            if tx.query_opt(&lock, &[&id]).await?.is_none() {
                return Ok(None);
            }
            let ids = tx.prepare_cached(&self.sql.archive_ids_like).await?;
            let taken = tx
                .query(&ids, &[&id, &base])
                .await?
                .iter()
                .map(|row| row.try_get(0))
                .collect::<Result<Vec<String>, _>>()?;
            let archive = free_archive_id(at, &taken);
            let move_st = tx.prepare_cached(&self.sql.archive_messages).await?;
            let archived: i64 = tx
                .query_one(&move_st, &[&id, &archive, &at])
                .await?
                .try_get(0)?;
            let replace = tx.prepare_cached(&self.sql.replace).await?;
            tx.execute(&replace, &params).await?;
            tx.commit().await?;
            Ok(Some((archive, archived)))
        })?;
        let Some((archive, archived)) = outcome else {
            return Err(Error::not_found(format!(
                "session `{session}` does not exist"
            )));
        };
        Ok(ArchiveInfo {
            id: ArchiveId::new(archive)?,
            session: session.clone(),
            created_at: at,
            message_count: count(archived)?,
        })
    }

    pub(crate) async fn list_archives_impl(&self, session: &SessionId) -> Result<Vec<ArchiveInfo>> {
        let id = session.as_str();
        let rows = run!(self, READ_RETRIES, |client| async {
            let st = client.prepare_cached(&self.sql.list_archives).await?;
            client.query(&st, &[&id]).await
        })?;
        rows.iter()
            .map(|row| {
                Ok(ArchiveInfo {
                    id: archive_id(get(row, 0)?)?,
                    session: session.clone(),
                    created_at: get(row, 1)?,
                    message_count: count(get(row, 2)?)?,
                })
            })
            .collect()
    }

    pub(crate) async fn load_archive_impl(
        &self,
        session: &SessionId,
        archive: &ArchiveId,
    ) -> Result<Archive> {
        let id = session.as_str();
        let archive_name = archive.as_str();
        let rows = run!(self, READ_RETRIES, |client| async {
            let st = client.prepare_cached(&self.sql.load_archive).await?;
            client.query(&st, &[&id, &archive_name]).await
        })?;
        let Some(first) = rows.first() else {
            return Err(Error::not_found(format!(
                "archive `{archive}` of session `{session}` does not exist"
            )));
        };
        let created_at = get(first, 0)?;
        let message_count = count(get(first, 1)?)?;
        let mut numbered = Vec::with_capacity(rows.len());
        for row in &rows {
            if let Some(seq) = get::<Option<i64>>(row, 2)? {
                numbered.push((seq, message_from_row(row, 3)?));
            }
        }
        numbered.sort_unstable_by_key(|(seq, _)| *seq);
        Ok(Archive {
            info: ArchiveInfo {
                id: archive.clone(),
                session: session.clone(),
                created_at,
                message_count,
            },
            messages: numbered.into_iter().map(|(_, m)| m).collect(),
        })
    }
}

fn archive_id(id: String) -> Result<ArchiveId> {
    ArchiveId::new(id).map_err(|e| Error::corrupt(format!("stored archive id is invalid: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn archive_ids_get_a_suffix_within_one_second() {
        let at = Utc
            .with_ymd_and_hms(2026, 4, 20, 14, 30, 45)
            .single()
            .expect("valid time");
        assert_eq!(free_archive_id(at, &[]), "history_2026-04-20_14-30-45");
        let taken = vec!["history_2026-04-20_14-30-45".to_string()];
        assert_eq!(free_archive_id(at, &taken), "history_2026-04-20_14-30-45_2");
        let mut taken = taken;
        taken.push("history_2026-04-20_14-30-45_2".into());
        assert_eq!(free_archive_id(at, &taken), "history_2026-04-20_14-30-45_3");
    }
}
