//! Helpers for the unit tests: a migrated database, and the few queries tests run on it
//! directly (counts, rows, query plans, full-text index checks).

use agentmem_core::{Message, SessionId};
use rusqlite::{Connection, Params, Row};

/// A private in-memory database at the current schema version.
pub(crate) fn migrated() -> Connection {
    let mut conn = Connection::open_in_memory().unwrap();
    crate::schema::migrate(&mut conn, "m").unwrap();
    conn
}

/// A migrated in-memory database holding the session `s` with `messages`, and its id.
pub(crate) fn with_session(messages: &[Message]) -> (Connection, SessionId) {
    let mut conn = migrated();
    crate::sessions::append(&mut conn, "s", messages).unwrap();
    (conn, "s".parse().unwrap())
}

/// Every row `sql` yields with `params` bound, decoded by `decode`.
pub(crate) fn rows<T>(
    conn: &Connection, sql: &str, params: impl Params,
    decode: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
) -> Vec<T> {
    conn.prepare(sql)
        .unwrap()
        .query_map(params, decode)
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

/// The one integer `sql` yields with `params` bound: a count.
pub(crate) fn count(conn: &Connection, sql: &str, params: impl Params) -> i64 {
    conn.query_row(sql, params, |r| r.get(0)).unwrap()
}

/// How many rows `table` holds.
pub(crate) fn rows_in(conn: &Connection, table: &str) -> i64 {
    count(conn, &format!("SELECT count(*) FROM {table}"), [])
}

/// How many rows of the full-text index `fts` match the FTS5 query `query`.
pub(crate) fn fts_hits(conn: &Connection, fts: &str, query: &str) -> i64 {
    count(
        conn,
        &format!("SELECT count(*) FROM {fts} WHERE {fts} MATCH ?1"),
        [query],
    )
}

/// Runs FTS5's integrity check on the index `fts`: it fails when the index and the table it
/// indexes disagree.
pub(crate) fn check_fts(conn: &Connection, fts: &str) {
    conn.execute(
        &format!("INSERT INTO {fts} ({fts}) VALUES ('integrity-check')"),
        [],
    )
    .unwrap();
}

/// The query plan of `sql` (every parameter bound to 1), one line per step: tests check that
/// a statement uses the index meant for it.
pub(crate) fn query_plan(conn: &Connection, sql: &str) -> String {
    let plan = || -> rusqlite::Result<String> {
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
        let params = vec![1i64; stmt.parameter_count()];
        let steps = stmt
            .query_map(rusqlite::params_from_iter(params), |row| {
                row.get::<_, String>(3)
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(steps.join("\n"))
    };
    plan().unwrap_or_else(|e| panic!("EXPLAIN QUERY PLAN {sql}: {e}"))
}

/// Asserts that `sql` finds its rows through `index`, scanning no table or index whole.
pub(crate) fn assert_looks_up(conn: &Connection, sql: &str, index: &str) {
    let plan = query_plan(conn, sql);
    assert!(plan.contains(index), "{sql}: {plan}");
    assert!(!plan.contains("SCAN"), "{sql}: {plan}");
}
