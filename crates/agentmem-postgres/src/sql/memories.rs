//! The statements of memory items: upserts, reads, listings and search.

use tokio_postgres::types::Type;

use super::ranked::{ranked_search, table_size, Ranked};
use super::{prefixed, without_last, Build, TEXT, TEXT_TEXT, TEXT_TIME};
use crate::statements::Stmt;

/// Scope, kind, key, time.
const MEMORY_KEY_TIME: &[Type] = &[Type::TEXT, Type::TEXT, Type::TEXT, Type::TIMESTAMPTZ];
/// An item's columns, the parameters of `upsert` and `update_by_key`: id, kind, key, text,
/// raw text, metadata, created, updated, tsvector text, scope, expiry.
const MEMORY_ITEM: &[Type] = &[
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::BYTEA,
    Type::JSON,
    Type::TIMESTAMPTZ,
    Type::TIMESTAMPTZ,
    Type::TEXT,
    Type::TEXT,
    Type::TIMESTAMPTZ,
];
/// Kind, limit, time, scopes.
const MEMORY_LIST_IN_SCOPES: &[Type] =
    &[Type::TEXT, Type::INT8, Type::TIMESTAMPTZ, Type::TEXT_ARRAY];
/// `MEMORY_LIST_IN_SCOPES` without the scopes.
const MEMORY_LIST: &[Type] = without_last(MEMORY_LIST_IN_SCOPES);
/// Query terms, kind, limit, time, scopes.
const MEMORY_SEARCH_IN_SCOPES: &[Type] = &[
    Type::TEXT_ARRAY,
    Type::TEXT,
    Type::INT8,
    Type::TIMESTAMPTZ,
    Type::TEXT_ARRAY,
];
/// `MEMORY_SEARCH_IN_SCOPES` without the scopes.
const MEMORY_SEARCH: &[Type] = without_last(MEMORY_SEARCH_IN_SCOPES);

/// The columns of a memory item row, in the order `memory_from_row` reads them.
pub(crate) const MEMORY_COLUMNS: &str =
    "id, kind, key, text, text_raw, metadata, created_at, updated_at, scope, expires_at";

/// The condition that a memory item has not expired at `$n`.
fn live(n: usize) -> String {
    format!("(expires_at IS NULL OR expires_at > ${n})")
}

statements! {
    /// Memory items.
    MemorySql(s, st) {
        /// Deletes the item of scope `$1`, kind `$2` and key `$3` if it has expired at `$4`.
        delete_expired_key: MEMORY_KEY_TIME => format!(
            "DELETE FROM {s}.memories
             WHERE scope = $1 AND kind = $2 AND key = $3 AND expires_at <= $4"
        ),
        /// Replaces the item of scope `$10`, kind `$2` and key `$3` with the item `$1..$11`
        /// (`upsert`'s parameters), keeping its id and creation time (`$1` and `$7` unused).
        update_by_key: MEMORY_ITEM => format!(
            "UPDATE {s}.memories SET text = $4, text_raw = $5, metadata = $6,
                 updated_at = $8, tsv = $9::text::tsvector, expires_at = $11
             WHERE scope = $10 AND kind = $2 AND key = $3
             RETURNING id, created_at"
        ),
        /// Inserts an item or replaces the one with the same id.
        upsert: MEMORY_ITEM => format!(
            "INSERT INTO {s}.memories AS t
                 (id, kind, key, text, text_raw, metadata, created_at, updated_at, tsv,
                  scope, expires_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::text::tsvector, $10, $11)
             ON CONFLICT (id) DO UPDATE SET
                 kind = EXCLUDED.kind, key = EXCLUDED.key, text = EXCLUDED.text,
                 text_raw = EXCLUDED.text_raw, metadata = EXCLUDED.metadata,
                 created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at,
                 tsv = EXCLUDED.tsv, scope = EXCLUDED.scope, expires_at = EXCLUDED.expires_at
             RETURNING id, created_at"
        ),
        /// Deletes item `$1` unless it is `$2`.
        delete_other: TEXT_TEXT => format!("DELETE FROM {s}.memories WHERE id = $1 AND id <> $2"),
        /// Item `$1`, unless it has expired at `$2`.
        get: TEXT_TIME => format!(
            "SELECT {MEMORY_COLUMNS} FROM {s}.memories WHERE id = $1 AND {live}",
            live = live(2)
        ),
        /// The newest `$2` items (all when NULL) of kind `$1` (any when NULL) not expired at `$3`,
        /// newest first.
        list: MEMORY_LIST => memory_list(s, ""),
        /// Like `memory_list`, of the scopes (stored forms) in `$4` only.
        list_in_scopes: MEMORY_LIST_IN_SCOPES => memory_list(s, " AND scope = ANY($4::text[])"),
        /// Ranked items matching any of the query terms `$1` (see `ranked_search`), of kind `$2`
        /// (any when NULL), not expired at `$4`, at most `$3`.
        search: MEMORY_SEARCH => memory_search(s, "", false),
        /// Like `search`, for more than `SLOTS` terms.
        search_many: MEMORY_SEARCH => memory_search(s, "", true),
        /// Like `search`, of the scopes (stored forms) in `$5` only.
        search_in_scopes: MEMORY_SEARCH_IN_SCOPES => memory_search(s, IN_SCOPES, false),
        /// Like `search_in_scopes`, for more than `SLOTS` terms.
        search_in_scopes_many: MEMORY_SEARCH_IN_SCOPES => memory_search(s, IN_SCOPES, true),
        /// Deletes item `$1`.
        delete: TEXT => format!("DELETE FROM {s}.memories WHERE id = $1"),
    }
}

/// The condition on items of the scopes (stored forms) in `$5`.
const IN_SCOPES: &str = " AND scope = ANY($5::text[])";

/// The `memory_list` statement, with `and` added to its condition.
fn memory_list(s: &str, and: &str) -> String {
    format!(
        "SELECT {MEMORY_COLUMNS} FROM {s}.memories
         WHERE ($1::text IS NULL OR kind = $1) AND {live}{and}
         ORDER BY created_at DESC, ord DESC
         LIMIT $2",
        live = live(3)
    )
}

/// The `memory_search` statement, with `and` added to its condition, for queries of up to
/// `SLOTS` terms or of more when `many`.
fn memory_search(s: &str, and: &str, many: bool) -> String {
    ranked_search(
        &Ranked {
            from: format!("{s}.memories i"),
            tsv: "i.tsv",
            filter: format!(
                "($2::text IS NULL OR i.kind = $2) AND {live}{and}",
                live = live(4)
            ),
            // The whole table, not only the items the filter keeps: counting those would
            // cost a scan of them on every search.
            size: table_size(&format!("{s}.memories")),
            hit: "i.id, i.created_at, i.ord",
            table: format!("{s}.memories"),
            key: "id",
            columns: prefixed("t", MEMORY_COLUMNS),
            ties: "created_at, ord",
            limit: "$3",
        },
        many,
    )
}
