//! Transactions begun and committed with cached statements.
//!
//! rusqlite's `Transaction` parses `BEGIN …` and `COMMIT` afresh on every call (it runs them
//! through `execute_batch`); on the small calls (append one message, load a window) that
//! parsing is a measurable share of the work, so the store keeps them prepared instead.

use std::ops::Deref;

use rusqlite::Connection;

use crate::error::SqlResult;

/// An open transaction on a connection, rolled back when dropped uncommitted.
pub(crate) struct Tx<'c> {
    conn: &'c Connection,
    open: bool,
}

impl<'c> Tx<'c> {
    /// Begins an `IMMEDIATE` transaction: the write lock is taken now, so the transaction
    /// never has to upgrade a read snapshot (which could fail with `SQLITE_BUSY` at once).
    pub(crate) fn immediate(conn: &'c Connection) -> SqlResult<Tx<'c>> {
        Self::begin(conn, "BEGIN IMMEDIATE")
    }

    /// Begins a deferred transaction: reads in it share one snapshot.
    pub(crate) fn deferred(conn: &'c Connection) -> SqlResult<Tx<'c>> {
        Self::begin(conn, "BEGIN")
    }

    fn begin(conn: &'c Connection, sql: &str) -> SqlResult<Tx<'c>> {
        conn.prepare_cached(sql)?.execute([])?;
        Ok(Tx { conn, open: true })
    }

    /// Commits. On failure the transaction is still open, and dropping it rolls it back.
    pub(crate) fn commit(mut self) -> SqlResult<()> {
        self.conn.prepare_cached("COMMIT")?.execute([])?;
        self.open = false;
        Ok(())
    }
}

impl Deref for Tx<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Drop for Tx<'_> {
    fn drop(&mut self) {
        // SQLite may already have rolled back on its own (e.g. after SQLITE_FULL); a pooled
        // connection left inside a transaction is rolled back when next leased anyway.
        if self.open && !self.conn.is_autocommit() {
            if let Err(e) = self.conn.execute_batch("ROLLBACK") {
                tracing::warn!(error = %e, "rolling back a SQLite transaction failed");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_or_rolls_back_when_dropped() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (x INTEGER)").unwrap();
        let count = |conn: &Connection| -> i64 {
            conn.query_row("SELECT count(*) FROM t", [], |r| r.get(0))
                .unwrap()
        };
        {
            let tx = Tx::immediate(&conn).unwrap();
            tx.execute("INSERT INTO t VALUES (1)", []).unwrap();
        }
        assert!(conn.is_autocommit());
        assert_eq!(count(&conn), 0);
        let tx = Tx::deferred(&conn).unwrap();
        tx.execute("INSERT INTO t VALUES (1)", []).unwrap();
        tx.commit().unwrap();
        assert!(conn.is_autocommit());
        assert_eq!(count(&conn), 1);
    }
}
