//! Memory items: upsert by id or by (kind, key), get, list, delete.

use agentmem_core::{MemoryFilter, MemoryId, MemoryItem};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use crate::error::SqlResult;
use crate::rows::{self, RawMemory, MEMORY_COLUMNS};

/// Stores `item` and returns it as stored.
///
/// An item with the same kind and key wins over one with the same id: it keeps its id and
/// creation time, and takes everything else from `item`. If another row has `item`'s id, that
/// row is replaced too (deleted), so ids stay unique. Without a key match, the row with
/// `item`'s id is replaced wholesale, or `item` is inserted.
pub(crate) fn put(conn: &mut Connection, item: &MemoryItem) -> SqlResult<MemoryItem> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let metadata = rows::metadata_text(&item.metadata)?;
    let same_key = match &item.key {
        Some(key) => tx
            .prepare_cached(
                "SELECT id, item_id, created_at FROM agentmem_memories WHERE kind = ?1 AND key = ?2",
            )?
            .query_row(params![item.kind.as_str(), key], |row| {
                Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?, row.get::<_, i64>(2)?))
            })
            .optional()?,
        None => None,
    };
    let stored = match same_key {
        Some((rowid, existing_id, created_at)) => {
            if item.id != existing_id.as_str() {
                tx.execute(
                    "DELETE FROM agentmem_memories WHERE item_id = ?1",
                    [item.id.as_str()],
                )?;
            }
            tx.execute(
                "UPDATE agentmem_memories SET text = ?2, metadata = ?3, updated_at = ?4 WHERE id = ?1",
                params![rowid, item.text, metadata, rows::micros(item.updated_at)],
            )?;
            MemoryItem {
                id: MemoryId::new(existing_id)
                    .map_err(|e| crate::error::corrupt(format!("memory id: {e}")))?,
                created_at: rows::time(created_at)?,
                ..item.clone()
            }
        }
        None => {
            tx.prepare_cached(
                "INSERT INTO agentmem_memories
                     (item_id, kind, key, text, metadata, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT (item_id) DO UPDATE SET kind = excluded.kind, key = excluded.key,
                     text = excluded.text, metadata = excluded.metadata,
                     created_at = excluded.created_at, updated_at = excluded.updated_at",
            )?
            .execute(params![
                item.id.as_str(),
                item.kind.as_str(),
                item.key,
                item.text,
                metadata,
                rows::micros(item.created_at),
                rows::micros(item.updated_at),
            ])?;
            item.clone()
        }
    };
    tx.commit()?;
    Ok(stored)
}

/// One item by id.
pub(crate) fn get(conn: &mut Connection, id: &str) -> SqlResult<Option<MemoryItem>> {
    conn.prepare_cached(&format!(
        "SELECT {MEMORY_COLUMNS} FROM agentmem_memories m WHERE m.item_id = ?1"
    ))?
    .query_row([id], |row| RawMemory::read(row, 0))
    .optional()?
    .map(RawMemory::decode)
    .transpose()
}

/// Items matching `filter`, oldest first; the newest `limit` when limited.
pub(crate) fn list(conn: &mut Connection, filter: &MemoryFilter) -> SqlResult<Vec<MemoryItem>> {
    // A negative LIMIT means none in SQLite.
    let limit = filter.limit.map_or(-1, rows::sql_int);
    let mut items = conn
        .prepare_cached(&format!(
            "SELECT {MEMORY_COLUMNS} FROM agentmem_memories m
             WHERE ?1 IS NULL OR m.kind = ?1
             ORDER BY m.created_at DESC, m.id DESC LIMIT ?2"
        ))?
        .query_map(params![filter.kind.map(|k| k.as_str()), limit], |row| {
            RawMemory::read(row, 0)
        })?
        .map(|raw| raw?.decode())
        .collect::<SqlResult<Vec<_>>>()?;
    items.reverse();
    Ok(items)
}

/// Deletes an item; `false` when it did not exist.
pub(crate) fn delete(conn: &mut Connection, id: &str) -> SqlResult<bool> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let deleted = tx.execute("DELETE FROM agentmem_memories WHERE item_id = ?1", [id])?;
    tx.commit()?;
    Ok(deleted > 0)
}
