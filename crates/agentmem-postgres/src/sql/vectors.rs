//! The statements of embedding vectors (table `vectors`, schema version 7).
//!
//! Rows are written and locked in key order (the client sorts a put's keys, a delete locks
//! `ORDER BY key` first), so concurrent puts and deletes sharing keys wait for each other in
//! one order and never deadlock.

use tokio_postgres::types::Type;

use super::Build;
use crate::statements::Stmt;

/// Keys and data, in key order.
const KEYS_AND_DATA: &[Type] = &[Type::BYTEA_ARRAY, Type::BYTEA_ARRAY];
const KEYS: &[Type] = &[Type::BYTEA_ARRAY];
const NONE: &[Type] = &[];

statements! {
    /// Embedding vectors by key.
    VectorSql(s, st) {
        /// Stores the vectors `$1` (keys, distinct) and `$2` (data), replacing what a key held.
        // `ON CONFLICT DO UPDATE` may touch a row only once per statement: the client makes
        // the keys distinct (the last of a repeated key wins).
        put: KEYS_AND_DATA => format!(
            "INSERT INTO {s}.vectors (key, data)
             SELECT v.key, v.data FROM unnest($1::bytea[], $2::bytea[]) AS v(key, data)
             ORDER BY v.key
             ON CONFLICT (key) DO UPDATE SET data = EXCLUDED.data"
        ),
        /// The vectors of keys `$1` (a repeated key gives one row).
        get: KEYS => format!(
            "SELECT key, data FROM {s}.vectors WHERE key = ANY($1::bytea[])"
        ),
        /// Deletes the vectors of keys `$1`, locking them in key order first.
        delete: KEYS => format!(
            "WITH l AS (
                SELECT key FROM {s}.vectors WHERE key = ANY($1::bytea[])
                ORDER BY key
                FOR UPDATE
            )
            DELETE FROM {s}.vectors t USING l WHERE t.key = l.key"
        ),
        /// Deletes every vector.
        clear: NONE => format!("DELETE FROM {s}.vectors"),
    }
}
