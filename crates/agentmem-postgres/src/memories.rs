//! Memory items (B6-B8): facts, insights and notes, with replacement by kind and key.

use agentmem_core::{Error, ErrorKind, MemoryFilter, MemoryItem, MemoryKind, Metadata, Result};
use chrono::{DateTime, Utc};
use tokio_postgres::types::Json;
use tokio_postgres::Row;

use crate::codec::{get, storable_text, text_from};
use crate::search::tsvector_literal;
use crate::store::{PostgresMemory, READ_RETRIES};

/// How often `put_memory` is retried after losing a race to insert the same kind and key.
const PUT_RETRIES: u32 = 3;

/// The item in `row`, whose first columns are [`crate::sql::MEMORY_COLUMNS`].
pub(crate) fn memory_from_row(row: &Row) -> Result<MemoryItem> {
    let kind: String = get(row, 1)?;
    let kind: MemoryKind = kind
        .parse()
        .map_err(|e| Error::corrupt(format!("stored memory kind does not parse: {e}")))?;
    let metadata: Option<Json<Metadata>> = get(row, 5)?;
    Ok(MemoryItem {
        id: get(row, 0)?,
        kind,
        key: get(row, 2)?,
        text: text_from(get(row, 3)?, get(row, 4)?)?,
        metadata: metadata.map(|Json(m)| m).unwrap_or_default(),
        created_at: get(row, 6)?,
        updated_at: get(row, 7)?,
    })
}

impl PostgresMemory {
    pub(crate) async fn put_memory_impl(&self, item: &MemoryItem) -> Result<MemoryItem> {
        let (text, raw) = storable_text(&item.text);
        let metadata = (!item.metadata.is_empty()).then_some(Json(&item.metadata));
        let tsv = tsvector_literal(&item.text);
        let kind = item.kind.as_str();
        let mut attempt = 0;
        loop {
            let result: Result<(String, DateTime<Utc>)> = run!(self, 0, |client| async {
                let tx = client.transaction().await?;
                if let Some(key) = &item.key {
                    let st = tx.prepare_cached(&self.sql.memory_update_by_key).await?;
                    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 7] =
                        [&kind, key, &text, &raw, &metadata, &item.updated_at, &tsv];
                    if let Some(row) = tx.query_opt(&st, &params).await? {
                        let kept: String = row.try_get(0)?;
                        let created: DateTime<Utc> = row.try_get(1)?;
                        // The new item replaces the one with its key, and also any other
                        // item that had its id.
                        let st = tx.prepare_cached(&self.sql.memory_delete_other).await?;
                        tx.execute(&st, &[&item.id, &kept]).await?;
                        tx.commit().await?;
                        return Ok((kept, created));
                    }
                }
                let st = tx.prepare_cached(&self.sql.memory_upsert).await?;
                let params: [&(dyn tokio_postgres::types::ToSql + Sync); 9] = [
                    &item.id,
                    &kind,
                    &item.key,
                    &text,
                    &raw,
                    &metadata,
                    &item.created_at,
                    &item.updated_at,
                    &tsv,
                ];
                let row = tx.query_one(&st, &params).await?;
                let stored = (row.try_get(0)?, row.try_get(1)?);
                tx.commit().await?;
                Ok(stored)
            });
            match result {
                Ok((id, created_at)) => {
                    return Ok(MemoryItem {
                        id,
                        created_at,
                        ..item.clone()
                    })
                }
                // Another writer inserted the same kind and key between our update and
                // insert; the update now finds its row.
                Err(e) if e.kind() == ErrorKind::Conflict && attempt < PUT_RETRIES => {
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    pub(crate) async fn get_memory_impl(&self, id: &str) -> Result<Option<MemoryItem>> {
        let row = run!(self, READ_RETRIES, |client| async {
            let st = client.prepare_cached(&self.sql.memory_get).await?;
            client.query_opt(&st, &[&id]).await
        })?;
        row.map(|row| memory_from_row(&row)).transpose()
    }

    pub(crate) async fn list_memories_impl(
        &self,
        filter: &MemoryFilter,
    ) -> Result<Vec<MemoryItem>> {
        let kind = filter.kind.map(|k| k.as_str());
        // NULL means no LIMIT.
        let limit = filter.limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX));
        let rows = run!(self, READ_RETRIES, |client| async {
            let st = client.prepare_cached(&self.sql.memory_list).await?;
            client.query(&st, &[&kind, &limit]).await
        })?;
        // Fetched newest first so a limit keeps the newest; returned oldest first.
        let mut items = rows
            .iter()
            .map(memory_from_row)
            .collect::<Result<Vec<_>>>()?;
        items.reverse();
        Ok(items)
    }

    pub(crate) async fn delete_memory_impl(&self, id: &str) -> Result<bool> {
        let deleted = run!(self, 0, |client| async {
            let st = client.prepare_cached(&self.sql.memory_delete).await?;
            client.execute(&st, &[&id]).await
        })?;
        Ok(deleted > 0)
    }
}
