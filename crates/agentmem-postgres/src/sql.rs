//! Every statement a store runs, built once per store with its schema name.
//!
//! The quoted, validated schema is the only thing ever interpolated; every value travels as
//! a bind parameter. Statements are prepared once per pooled connection through
//! deadpool-postgres' statement cache (keyed by the text, so stores in different schemas
//! sharing one pool never mix them up).

use crate::codec::MESSAGE_COLUMNS;

/// The unnest that turns the nine message arrays (`$4`..`$12`) into rows `m`, numbered
/// from 1 in `m.ord`.
const UNNEST_MESSAGES: &str = "unnest($4::text[], $5::text[], $6::text[], $7::bytea[], \
     $8::timestamptz[], $9::text[], $10::text[], $11::json[], $12::text[]) \
     WITH ORDINALITY AS m(id, role, content, content_raw, ts, tool_call_id, tool_name, metadata, tsv, ord)";

const INSERT_MESSAGE_COLUMNS: &str =
    "(session_id, seq, id, role, content, content_raw, ts, tool_call_id, tool_name, metadata, tsv)";

const SELECT_NEW_MESSAGE: &str = "SELECT $1, s.first_seq + m.ord - 1, m.id, m.role, m.content, \
     m.content_raw, m.ts, m.tool_call_id, m.tool_name, m.metadata, m.tsv::tsvector";

/// The statements of one store.
#[derive(Debug)]
pub(crate) struct Sql {
    /// Appends `$4..$12` to session `$1` at time `$2`, `$3` messages; one statement.
    pub append: String,
    /// Like `append`, but also sets the metadata `$13` and makes the new messages the
    /// session's only counted ones; the old rows are then removed by `delete_before_first`.
    pub save: String,
    /// Deletes the messages of session `$1` older than its current first message.
    pub delete_before_first: String,
    /// Locks session `$1` for compaction; returns nothing when it does not exist.
    pub lock_session: String,
    /// Archive ids of session `$1` starting with `$2`.
    pub archive_ids_like: String,
    /// Moves every message of session `$1` into new archive `$2` created at `$3`.
    pub archive_messages: String,
    /// Replaces the (just archived) messages of session `$1` with `$4..$12` at time `$2`.
    pub replace: String,
    /// Session `$1` with its last `$2` messages (all when `$2` is NULL), newest first.
    pub load: String,
    /// Every session's summary, by id.
    pub list_sessions: String,
    /// Deletes session `$1`'s row; its dependents go with `delete_dependents`.
    pub delete_session: String,
    /// Deletes messages, archives and archived messages of the sessions in `$1`.
    pub delete_dependents: String,
    /// Deletes sessions last written before `$1`.
    pub purge_age: String,
    /// Deletes all but the `$1` most recently written sessions.
    pub purge_count: String,
    /// Deletes the memory items expired at `$1` or last updated before `$2` (none when NULL).
    pub purge_memories: String,
    /// Archives of session `$1`, oldest first.
    pub list_archives: String,
    /// Archive `$2` of session `$1` with its messages.
    pub load_archive: String,
    /// Ranked messages matching tsquery text `$1`, at most `$2`.
    pub search_messages: String,
    /// Like `search_messages`, in session `$3` only.
    pub search_session: String,
    /// Deletes the item of scope `$1`, kind `$2` and key `$3` if it has expired at `$4`.
    pub memory_delete_expired_key: String,
    /// Replaces the item of scope `$1`, kind `$2` and key `$3` with `$4..$9`, keeping its id
    /// and creation time.
    pub memory_update_by_key: String,
    /// Inserts an item or replaces the one with the same id.
    pub memory_upsert: String,
    /// Deletes item `$1` unless it is `$2`.
    pub memory_delete_other: String,
    /// Item `$1`, unless it has expired at `$2`.
    pub memory_get: String,
    /// The newest `$2` items (all when NULL) of kind `$1` (any when NULL) not expired at `$3`,
    /// newest first.
    pub memory_list: String,
    /// Like `memory_list`, of the scopes (stored forms) in `$4` only.
    pub memory_list_in_scopes: String,
    /// Ranked items matching tsquery text `$1`, kind `$2` (any when NULL), not expired at
    /// `$4`, at most `$3`.
    pub memory_search: String,
    /// Like `memory_search`, of the scopes (stored forms) in `$5` only.
    pub memory_search_in_scopes: String,
    /// Deletes item `$1`.
    pub memory_delete: String,
}

/// The columns of a memory item row, in the order `memory_from_row` reads them.
pub(crate) const MEMORY_COLUMNS: &str =
    "id, kind, key, text, text_raw, metadata, created_at, updated_at, scope, expires_at";

/// The condition that a memory item has not expired at `$n`.
fn live(n: usize) -> String {
    format!("(expires_at IS NULL OR expires_at > ${n})")
}

impl Sql {
    /// The statements for the quoted schema `s`.
    pub(crate) fn new(s: &str) -> Self {
        let append = insert_messages(
            s,
            &format!(
                "INSERT INTO {s}.sessions AS s (id, metadata, created_at, updated_at, next_seq, message_count)
                VALUES ($1, '{{}}', $2, $2, $3, $3)
                ON CONFLICT (id) DO UPDATE SET
                    next_seq = s.next_seq + EXCLUDED.next_seq,
                    message_count = s.message_count + EXCLUDED.message_count,
                    updated_at = GREATEST(s.updated_at, EXCLUDED.updated_at)
                RETURNING s.next_seq - $3 AS first_seq"
            ),
        );
        let save = insert_messages(
            s,
            &format!(
                "INSERT INTO {s}.sessions AS s (id, metadata, created_at, updated_at, next_seq, message_count)
                VALUES ($1, $13, $2, $2, $3, $3)
                ON CONFLICT (id) DO UPDATE SET
                    metadata = EXCLUDED.metadata,
                    next_seq = s.next_seq + EXCLUDED.next_seq,
                    message_count = EXCLUDED.message_count,
                    updated_at = GREATEST(s.updated_at, EXCLUDED.updated_at)
                RETURNING s.next_seq - $3 AS first_seq"
            ),
        );
        let replace = insert_messages(
            s,
            &format!(
                "UPDATE {s}.sessions SET
                    next_seq = next_seq + $3,
                    message_count = $3,
                    updated_at = GREATEST(updated_at, $2)
                WHERE id = $1
                RETURNING next_seq - $3 AS first_seq"
            ),
        );
        Sql {
            append,
            save,
            replace,
            delete_before_first: format!(
                "DELETE FROM {s}.messages WHERE session_id = $1 AND seq < \
                 (SELECT next_seq - message_count FROM {s}.sessions WHERE id = $1)"
            ),
            lock_session: format!("SELECT next_seq FROM {s}.sessions WHERE id = $1 FOR UPDATE"),
            archive_ids_like: format!(
                "SELECT id FROM {s}.archives WHERE session_id = $1 AND starts_with(id, $2)"
            ),
            archive_messages: format!(
                "WITH moved AS (
                    DELETE FROM {s}.messages WHERE session_id = $1
                    RETURNING seq, {MESSAGE_COLUMNS}
                ), kept AS (
                    INSERT INTO {s}.archived_messages (session_id, archive_id, seq, {MESSAGE_COLUMNS})
                    SELECT $1, $2, seq, {MESSAGE_COLUMNS} FROM moved
                    RETURNING 1
                )
                INSERT INTO {s}.archives (session_id, id, created_at, message_count)
                SELECT $1, $2, $3, count(*) FROM kept
                RETURNING message_count"
            ),
            load: format!(
                "SELECT s.metadata, s.created_at, s.updated_at, s.message_count, m.seq, {m_cols}
                 FROM {s}.sessions s
                 LEFT JOIN LATERAL (
                     SELECT seq, {MESSAGE_COLUMNS} FROM {s}.messages
                     WHERE session_id = $1 ORDER BY seq DESC LIMIT $2
                 ) m ON true
                 WHERE s.id = $1",
                m_cols = prefixed("m", MESSAGE_COLUMNS)
            ),
            list_sessions: format!(
                "SELECT id, message_count, created_at, updated_at FROM {s}.sessions ORDER BY id"
            ),
            delete_session: format!("DELETE FROM {s}.sessions WHERE id = $1"),
            delete_dependents: format!(
                "WITH m AS (DELETE FROM {s}.messages WHERE session_id = ANY($1)),
                      a AS (DELETE FROM {s}.archives WHERE session_id = ANY($1))
                 DELETE FROM {s}.archived_messages WHERE session_id = ANY($1)"
            ),
            purge_age: format!("DELETE FROM {s}.sessions WHERE updated_at < $1 RETURNING id"),
            purge_count: format!(
                "DELETE FROM {s}.sessions WHERE id IN (
                     SELECT id FROM {s}.sessions ORDER BY updated_at DESC, id OFFSET $1
                 ) RETURNING id"
            ),
            list_archives: format!(
                "SELECT id, created_at, message_count FROM {s}.archives
                 WHERE session_id = $1 ORDER BY ord"
            ),
            load_archive: format!(
                "SELECT a.created_at, a.message_count, m.seq, {m_cols}
                 FROM {s}.archives a
                 LEFT JOIN {s}.archived_messages m
                     ON m.session_id = a.session_id AND m.archive_id = a.id
                 WHERE a.session_id = $1 AND a.id = $2",
                m_cols = prefixed("m", MESSAGE_COLUMNS)
            ),
            search_messages: format!(
                "SELECT session_id, {MESSAGE_COLUMNS}, ts_rank(tsv, q, 1)::float8 AS score
                 FROM {s}.messages, CAST($1::text AS tsquery) AS q
                 WHERE tsv @@ q
                 ORDER BY score DESC, session_id, seq
                 LIMIT $2"
            ),
            search_session: format!(
                "SELECT session_id, {MESSAGE_COLUMNS}, ts_rank(tsv, q, 1)::float8 AS score
                 FROM {s}.messages, CAST($1::text AS tsquery) AS q
                 WHERE session_id = $3 AND tsv @@ q
                 ORDER BY score DESC, seq
                 LIMIT $2"
            ),
            purge_memories: format!(
                "DELETE FROM {s}.memories WHERE expires_at <= $1 OR updated_at < $2"
            ),
            memory_delete_expired_key: format!(
                "DELETE FROM {s}.memories
                 WHERE scope = $1 AND kind = $2 AND key = $3 AND expires_at <= $4"
            ),
            memory_update_by_key: format!(
                "UPDATE {s}.memories SET text = $4, text_raw = $5, metadata = $6,
                     updated_at = $7, tsv = $8::text::tsvector, expires_at = $9
                 WHERE scope = $1 AND kind = $2 AND key = $3
                 RETURNING id, created_at"
            ),
            memory_upsert: format!(
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
            memory_delete_other: format!("DELETE FROM {s}.memories WHERE id = $1 AND id <> $2"),
            memory_get: format!(
                "SELECT {MEMORY_COLUMNS} FROM {s}.memories WHERE id = $1 AND {live}",
                live = live(2)
            ),
            memory_list: memory_list(s, ""),
            memory_list_in_scopes: memory_list(s, " AND scope = ANY($4::text[])"),
            memory_search: memory_search(s, ""),
            memory_search_in_scopes: memory_search(s, " AND scope = ANY($5::text[])"),
            memory_delete: format!("DELETE FROM {s}.memories WHERE id = $1"),
        }
    }
}

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

/// The `memory_search` statement, with `and` added to its condition.
fn memory_search(s: &str, and: &str) -> String {
    format!(
        "SELECT {MEMORY_COLUMNS}, ts_rank(tsv, q, 1)::float8 AS score
         FROM {s}.memories, CAST($1::text AS tsquery) AS q
         WHERE tsv @@ q AND ($2::text IS NULL OR kind = $2) AND {live}{and}
         ORDER BY score DESC, created_at, ord
         LIMIT $3",
        live = live(4)
    )
}

/// `WITH s AS (<session>) INSERT …`: `session` writes the session row of `$1` at time `$2`
/// for `$3` new messages and returns `first_seq`, where the messages `$4..$12` are then
/// inserted (in schema `s`).
fn insert_messages(s: &str, session: &str) -> String {
    format!(
        "WITH s AS (
            {session}
        )
        INSERT INTO {s}.messages {INSERT_MESSAGE_COLUMNS}
        {SELECT_NEW_MESSAGE} FROM s, {UNNEST_MESSAGES}"
    )
}

/// `a, b` → `p.a, p.b`.
fn prefixed(prefix: &str, columns: &str) -> String {
    columns
        .split(", ")
        .map(|c| format!("{prefix}.{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}
