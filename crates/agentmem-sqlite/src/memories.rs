//! Memory items: upsert by id or by (scope, kind, key), get, list, delete; expired items are
//! skipped by every read.

use agentmem_core::{now, MemoryFilter, MemoryId, MemoryItem};
use rusqlite::types::ToSql;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use crate::error::{corrupt, SqlResult};
use crate::rows::{self, RawMemory, MEMORY_COLUMNS};

/// Stores `item` and returns it as stored.
///
/// An expired item with `item`'s scope, kind and key is deleted first: `item` does not take
/// it over. Then an item with the same scope, kind and key wins over one with the same id: it
/// keeps its id and creation time, and takes everything else from `item`. If another row has
/// `item`'s id, that row is replaced too (deleted), so ids stay unique. Without a key match,
/// the row with `item`'s id is replaced wholesale, or `item` is inserted.
pub(crate) fn put(conn: &mut Connection, item: &MemoryItem) -> SqlResult<MemoryItem> {
    let at = rows::micros(now());
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let metadata = rows::metadata_text(&item.metadata)?;
    let scope = item.scope.stored_form();
    let expires_at = item.expires_at.map(rows::micros);
    let same_key = match &item.key {
        Some(key) => {
            tx.prepare_cached(
                "DELETE FROM agentmem_memories
                 WHERE scope = ?1 AND kind = ?2 AND key = ?3 AND expires_at <= ?4",
            )?
            .execute(params![scope, item.kind.as_str(), key, at])?;
            tx.prepare_cached(
                "SELECT id, item_id, created_at FROM agentmem_memories
                 WHERE scope = ?1 AND kind = ?2 AND key = ?3",
            )?
            .query_row(params![scope, item.kind.as_str(), key], |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, i64>(2)?,
                ))
            })
            .optional()?
        }
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
                "UPDATE agentmem_memories
                 SET text = ?2, metadata = ?3, updated_at = ?4, expires_at = ?5 WHERE id = ?1",
                params![
                    rowid,
                    item.text,
                    metadata,
                    rows::micros(item.updated_at),
                    expires_at
                ],
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
                     (item_id, scope, kind, key, text, metadata, created_at, updated_at, expires_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                 ON CONFLICT (item_id) DO UPDATE SET scope = excluded.scope,
                     kind = excluded.kind, key = excluded.key,
                     text = excluded.text, metadata = excluded.metadata,
                     created_at = excluded.created_at, updated_at = excluded.updated_at,
                     expires_at = excluded.expires_at",
            )?
            .execute(params![
                item.id.as_str(),
                scope,
                item.kind.as_str(),
                item.key,
                item.text,
                metadata,
                rows::micros(item.created_at),
                rows::micros(item.updated_at),
                expires_at,
            ])?;
            item.clone()
        }
    };
    tx.commit()?;
    Ok(stored)
}

/// One item by id; `None` when it has expired.
pub(crate) fn get(conn: &mut Connection, id: &str) -> SqlResult<Option<MemoryItem>> {
    conn.prepare_cached(&format!(
        "SELECT {MEMORY_COLUMNS} FROM agentmem_memories m
         WHERE m.item_id = ?1 AND {}",
        live(2)
    ))?
    .query_row(params![id, rows::micros(now())], |row| {
        RawMemory::read(row, 0)
    })
    .optional()?
    .map(RawMemory::decode)
    .transpose()
}

/// Items matching `filter` (kind, scope, not expired), oldest first; the newest `limit` when
/// limited.
pub(crate) fn list(conn: &mut Connection, filter: &MemoryFilter) -> SqlResult<Vec<MemoryItem>> {
    let kind = filter.kind.map(|k| k.as_str());
    // A negative LIMIT means none in SQLite.
    let limit = filter.limit.map_or(-1, rows::sql_int);
    let at = rows::micros(now());
    let scopes = filter.scope.stored_forms();
    let mut params: Vec<&dyn ToSql> = vec![&kind, &limit, &at];
    params.extend(scopes.iter().flatten().map(|s| s as &dyn ToSql));
    let mut items = conn
        .prepare_cached(&format!(
            "SELECT {MEMORY_COLUMNS} FROM agentmem_memories m
             WHERE (?1 IS NULL OR m.kind = ?1) AND {live}{in_scopes}
             ORDER BY m.created_at DESC, m.id DESC LIMIT ?2",
            live = live(3),
            in_scopes = in_scopes(scopes.as_deref(), 4),
        ))?
        .query_map(params.as_slice(), |row| RawMemory::read(row, 0))?
        .map(|raw| raw?.decode())
        .collect::<SqlResult<Vec<_>>>()?;
    items.reverse();
    Ok(items)
}

/// Deletes an item (expired or not); `false` when there was none with this id.
pub(crate) fn delete(conn: &mut Connection, id: &str) -> SqlResult<bool> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let deleted = tx.execute("DELETE FROM agentmem_memories WHERE item_id = ?1", [id])?;
    tx.commit()?;
    Ok(deleted > 0)
}

/// The memory revision: the counter that triggers on `agentmem_memories` bump with every row
/// inserted, updated or deleted, by any writer of the file (schema 10). One read of one row.
pub(crate) fn revision(conn: &mut Connection) -> SqlResult<u64> {
    let revision: Option<i64> = conn
        .prepare_cached("SELECT revision FROM agentmem_memory_revision WHERE singleton = 1")?
        .query_row([], |row| row.get(0))
        .optional()?;
    match revision {
        Some(n) => u64::try_from(n).map_err(|_| corrupt(format!("memory revision {n}"))),
        None => Err(corrupt(
            "memory revision: the agentmem_memory_revision table is empty",
        )),
    }
}

/// The condition that item `m` has not expired at the time bound to parameter `?{now}`.
pub(crate) fn live(now: usize) -> String {
    format!("(m.expires_at IS NULL OR m.expires_at > ?{now})")
}

/// `AND m.scope IN (…)` with one parameter per stored form, numbered from `?{first}`; empty
/// when `scopes` is `None` (every scope). The parameters are bound by the caller, in order.
pub(crate) fn in_scopes(scopes: Option<&[String]>, first: usize) -> String {
    match scopes {
        None => String::new(),
        Some([]) => " AND 0".to_string(),
        Some(scopes) => {
            let placeholders: Vec<String> = (first..first + scopes.len())
                .map(|n| format!("?{n}"))
                .collect();
            format!(" AND m.scope IN ({})", placeholders.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use agentmem_core::{MemoryKind, MemoryScope};

    use super::*;
    use crate::testing::{migrated, query_plan as plan};

    #[test]
    fn listing_by_scope_uses_the_scope_index() {
        let conn = migrated();
        let scopes = [
            "agent:a/workspace:w".to_string(),
            "agent:a".into(),
            "".into(),
        ];
        for scopes in [&scopes[..1], &scopes[..]] {
            let sql = format!(
                "SELECT {MEMORY_COLUMNS} FROM agentmem_memories m
                 WHERE (?1 IS NULL OR m.kind = ?1) AND {}{}
                 ORDER BY m.created_at DESC, m.id DESC LIMIT ?2",
                live(3),
                in_scopes(Some(scopes), 4)
            );
            let plan = plan(&conn, &sql);
            assert!(plan.contains("agentmem_memories_scope"), "{plan}");
        }
    }

    #[test]
    fn an_unreadable_scope_is_corrupt() {
        let mut conn = migrated();
        let item = MemoryItem::new(MemoryKind::Fact, "x").in_scope(MemoryScope::agent("a"));
        put(&mut conn, &item).unwrap();
        assert_eq!(get(&mut conn, &item.id).unwrap(), Some(item.clone()));
        conn.execute("UPDATE agentmem_memories SET scope = 'agent:a/x:y'", [])
            .unwrap();
        let err = get(&mut conn, &item.id).unwrap_err().into_error("m");
        assert_eq!(err.kind(), agentmem_core::ErrorKind::CorruptData);
        assert!(err.to_string().contains("agent:a/x:y"), "{err}");
        let err = list(&mut conn, &MemoryFilter::default())
            .unwrap_err()
            .into_error("m");
        assert_eq!(err.kind(), agentmem_core::ErrorKind::CorruptData);
    }

    #[test]
    fn the_revision_is_one_primary_key_lookup_and_a_lost_counter_is_corrupt() {
        let mut conn = migrated();
        crate::testing::assert_looks_up(
            &conn,
            "SELECT revision FROM agentmem_memory_revision WHERE singleton = 1",
            "PRIMARY KEY",
        );
        put(&mut conn, &MemoryItem::new(MemoryKind::Fact, "x")).unwrap();
        assert_eq!(revision(&mut conn).unwrap(), 1);
        conn.execute("DELETE FROM agentmem_memory_revision", [])
            .unwrap();
        let err = revision(&mut conn).unwrap_err().into_error("m");
        assert_eq!(err.kind(), agentmem_core::ErrorKind::CorruptData);
        conn.execute(
            "INSERT INTO agentmem_memory_revision (singleton, revision) VALUES (1, -1)",
            [],
        )
        .unwrap();
        let err = revision(&mut conn).unwrap_err().into_error("m");
        assert_eq!(err.kind(), agentmem_core::ErrorKind::CorruptData);
    }
}
