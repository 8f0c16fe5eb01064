//! Memory items (B6-B8): facts, insights and notes, each in a scope, with replacement by
//! scope, kind and key, and an optional expiry time. The operations are the `AgentMemory`
//! methods in `store.rs`.

use agentmem_core::{Error, MemoryId, MemoryItem, MemoryKind, MemoryScope, Metadata, Result};
use chrono::{DateTime, Utc};
use tokio_postgres::types::{Json, ToSql};
use tokio_postgres::Row;

use crate::codec::{get, storable_text, text_from};
use crate::search::tsvector_literal;
use crate::statements::Exec;
use crate::store::PostgresStore;

/// How often `put_memory` is retried after losing a race to insert the same scope, kind and
/// key.
pub(crate) const PUT_RETRIES: u32 = 3;

/// The item in `row`, whose first columns are [`crate::sql::memories::MEMORY_COLUMNS`].
pub(crate) fn memory_from_row(row: &Row) -> Result<MemoryItem> {
    let kind: String = get(row, 1)?;
    let kind: MemoryKind = kind
        .parse()
        .map_err(|e| Error::corrupt(format!("stored memory kind does not parse: {e}")))?;
    let metadata: Option<Json<Metadata>> = get(row, 5)?;
    let id: String = get(row, 0)?;
    let scope: String = get(row, 8)?;
    let scope = MemoryScope::from_stored_form(&scope)
        .map_err(|_| Error::corrupt(format!("stored memory scope {scope:?} does not parse")))?;
    Ok(MemoryItem {
        id: MemoryId::new(id)
            .map_err(|e| Error::corrupt(format!("stored memory id is invalid: {e}")))?,
        kind,
        scope,
        key: get(row, 2)?,
        text: text_from(get(row, 3)?, get(row, 4)?)?,
        metadata: metadata.map(|Json(m)| m).unwrap_or_default(),
        created_at: get(row, 6)?,
        updated_at: get(row, 7)?,
        expires_at: get(row, 9)?,
    })
}

impl PostgresStore {
    /// One try of `put_memory`, in one transaction: deletes an item of `item`'s scope, kind
    /// and key that has expired at `now`; then replaces the (live) one of that scope, kind and
    /// key (keeping its id and creation time), else the one with `item`'s id, else inserts
    /// `item`. Returns the stored id and creation time. A `Conflict` means another writer
    /// inserted the same scope, kind and key meanwhile; the next try finds its row.
    pub(crate) async fn put_once(
        &self, item: &MemoryItem, now: DateTime<Utc>,
    ) -> Result<(String, DateTime<Utc>)> {
        let (text, raw) = storable_text(&item.text);
        let metadata = (!item.metadata.is_empty()).then_some(Json(&item.metadata));
        let tsv = tsvector_literal(&item.text);
        let kind = item.kind.as_str();
        let scope = item.scope.stored_form();
        let id = item.id.as_str();
        // The parameters of both `update_by_key` and `upsert`.
        let params: [&(dyn ToSql + Sync); 11] = [
            &id,
            &kind,
            &item.key,
            &text,
            &raw,
            &metadata,
            &item.created_at,
            &item.updated_at,
            &tsv,
            &scope,
            &item.expires_at,
        ];
        run!(self, 0, |client| async {
            let tx = client.transaction().await?;
            if let Some(key) = &item.key {
                tx.execute_st(
                    &self.sql.memories.delete_expired_key,
                    &[&scope, &kind, key, &now],
                )
                .await?;
                if let Some(row) = tx
                    .query_opt_st(&self.sql.memories.update_by_key, &params)
                    .await?
                {
                    let kept: String = row.try_get(0)?;
                    let created: DateTime<Utc> = row.try_get(1)?;
                    // The new item replaces the one with its key, and also any other
                    // item that had its id.
                    tx.execute_st(&self.sql.memories.delete_other, &[&id, &kept])
                        .await?;
                    tx.commit().await?;
                    return Ok((kept, created));
                }
            }
            let row = tx.query_one_st(&self.sql.memories.upsert, &params).await?;
            let stored = (row.try_get(0)?, row.try_get(1)?);
            tx.commit().await?;
            Ok(stored)
        })
    }
}
