//! Store properties: rows of `agentmem_properties` (name, value).

use agentmem_core::PropertyChange;
use rusqlite::{Connection, OptionalExtension};

use crate::error::SqlResult;

/// The value of property `name`, if set.
pub(crate) fn get(conn: &Connection, name: &str) -> SqlResult<Option<String>> {
    Ok(conn
        .query_row(
            "SELECT value FROM agentmem_properties WHERE name = ?1",
            [name],
            |row| row.get(0),
        )
        .optional()?)
}

/// Sets property `name` to `value` when it is `expected`, in one statement (so one step
/// under SQLite's write lock); whether a row changed.
pub(crate) fn set(conn: &Connection, change: &PropertyChange<'_>) -> SqlResult<bool> {
    let (name, expected, value) = (change.name, change.expected, change.value);
    let changed = match expected {
        None => conn.execute(
            "INSERT INTO agentmem_properties (name, value) VALUES (?1, ?2)
             ON CONFLICT (name) DO NOTHING",
            (name, value),
        )?,
        Some(expected) => conn.execute(
            "UPDATE agentmem_properties SET value = ?2 WHERE name = ?1 AND value = ?3",
            (name, value, expected),
        )?,
    };
    Ok(changed == 1)
}
