//! The statements on sessions, by area: writing, loading, listing and deleting them
//! ([`SessionSql`]); compaction and archives ([`ArchiveSql`]); fork, rewind, labels and
//! finding sessions ([`LifecycleSql`]); message search ([`SearchSql`]); retention
//! ([`RetentionSql`]).

use tokio_postgres::types::Type;

use super::ranked::{ranked_search, table_size, Ranked};
use super::{
    insert_messages, live_session, prefixed, session_info_columns, without_last, Build,
    INSERT_MESSAGE_COLUMNS, MESSAGES, MESSAGES_AND_METADATA, SELECT_NEW_MESSAGE, TEXT, TEXT_ARRAY,
    TEXT_INT8_TIME, TEXT_TEXT, TEXT_TIME, TIME, UNNEST_MESSAGES,
};
use crate::codec::MESSAGE_COLUMNS;
use crate::statements::Stmt;

statements! {
    /// Writing, loading, listing and deleting sessions.
    SessionSql(s, st) {
        /// Appends `$4..$12` to session `$1` at time `$2`, `$3` messages; one statement. Returns
        /// 1, or 0 (writing nothing, but locking the row) when the session has expired at `$2`.
        // An expired session is not written to (its row is only locked, and the statement
        // returns 0): the caller then deletes it and writes again, in one transaction.
        append: MESSAGES => counted_insert_messages(
            s,
            &format!(
                "INSERT INTO {s}.sessions AS s (id, metadata, created_at, updated_at, next_seq, message_count)
                VALUES ($1, '{{}}', $2, $2, $3, $3)
                ON CONFLICT (id) DO UPDATE SET
                    next_seq = s.next_seq + EXCLUDED.next_seq,
                    message_count = s.message_count + EXCLUDED.message_count,
                    updated_at = GREATEST(s.updated_at, EXCLUDED.updated_at)
                WHERE {live}
                RETURNING s.next_seq - $3 AS first_seq",
                live = live_session(2)
            ),
        ),
        /// Like `append`, but also sets the metadata `$13` and makes the new messages the
        /// session's only counted ones; the old rows are then removed by `delete_before_first`.
        save: MESSAGES_AND_METADATA => counted_insert_messages(
            s,
            &format!(
                "INSERT INTO {s}.sessions AS s (id, metadata, created_at, updated_at, next_seq, message_count)
                VALUES ($1, $13, $2, $2, $3, $3)
                ON CONFLICT (id) DO UPDATE SET
                    metadata = EXCLUDED.metadata,
                    next_seq = s.next_seq + EXCLUDED.next_seq,
                    message_count = EXCLUDED.message_count,
                    updated_at = GREATEST(s.updated_at, EXCLUDED.updated_at)
                WHERE {live}
                RETURNING s.next_seq - $3 AS first_seq",
                live = live_session(2)
            ),
        ),
        /// Deletes the messages of session `$1` older than its current first message.
        delete_before_first: TEXT => format!(
            "DELETE FROM {s}.messages WHERE session_id = $1 AND seq < \
             (SELECT next_seq - message_count FROM {s}.sessions WHERE id = $1)"
        ),
        /// Locks session `$1` unless it has expired at `$2`, returning its `next_seq`,
        /// `message_count`, title, owner and expiry; nothing when it does not exist (or has
        /// expired).
        lock_session: TEXT_TIME => format!(
            "SELECT s.next_seq, s.message_count, s.title, s.owner, s.expires_at
             FROM {s}.sessions s
             WHERE s.id = $1 AND {live} FOR UPDATE",
            live = live_session(2)
        ),
        /// Whether session `$1` exists and has not expired at `$2` (one row, or none).
        live_session: TEXT_TIME => format!(
            "SELECT 1 FROM {s}.sessions s WHERE s.id = $1 AND {live}",
            live = live_session(2)
        ),
        /// Deletes session `$1`'s row if it has expired at `$2`; its dependents go with
        /// `delete_dependents`.
        delete_expired_session: TEXT_TIME => format!(
            "DELETE FROM {s}.sessions WHERE id = $1 AND expires_at <= $2"
        ),
        /// Session `$1` with its last `$2` messages (all when `$2` is NULL), newest first, unless
        /// it has expired at `$3`. Its labels are on one row only (see `session_from`).
        load: TEXT_INT8_TIME => load_sql(s, "$2"),
        /// The summary of every session not expired at `$1`, by id.
        list_sessions: TIME => format!(
            // The tags of every session at once (one grouped scan, merge-joined),
            // not two subqueries per session: those are costed per row, and with
            // ~5,000 sessions the statement crossed `jit_above_cost` (20,000
            // sessions: 226 ms, 23 of them JIT, against 22 ms this way).
            "SELECT {info} FROM {s}.sessions s
             LEFT JOIN (
                 SELECT t.session_id, {TAG_ARRAYS}
                 FROM {s}.session_tags t GROUP BY t.session_id
             ) tg ON tg.session_id = s.id
             WHERE {live} ORDER BY s.id",
            info = session_info_columns(TAGS_JOINED),
            live = live_session(1)
        ),
        /// Deletes session `$1`'s row; its dependents go with `delete_dependents`.
        delete_session: TEXT => format!("DELETE FROM {s}.sessions WHERE id = $1"),
        /// Deletes messages, archives, archived messages and tags of the sessions in `$1`.
        delete_dependents: TEXT_ARRAY => format!(
            "WITH m AS (DELETE FROM {s}.messages WHERE session_id = ANY($1)),
                  a AS (DELETE FROM {s}.archives WHERE session_id = ANY($1)),
                  t AS (DELETE FROM {s}.session_tags WHERE session_id = ANY($1))
             DELETE FROM {s}.archived_messages WHERE session_id = ANY($1)"
        ),
    }
    also {
        /// `load` with the limit written into the statement, one per [`WINDOW_BUCKETS`] entry
        /// (`$2` is then ignored); see [`SessionSql::load_window`].
        load_windows: Vec<Stmt> = WINDOW_BUCKETS
            .iter()
            .map(|limit| st(load_sql(s, &limit.to_string()), TEXT_INT8_TIME))
            .collect(),
    }
}

impl SessionSql {
    /// The load statement for a window of `limit` messages. A window up to 1,024 uses a statement with its limit rounded up to a power of two
    /// written in (the caller keeps the newest `limit`): with `LIMIT $2` PostgreSQL costs the
    /// generic plan for a tenth of the session, so it plans the statement anew on every call
    /// (0.2 ms, more than the query itself); with a number its generic plan costs what a
    /// custom one does and, after five calls, is reused.
    pub(crate) fn load_window(&self, limit: Option<usize>) -> &Stmt {
        match limit {
            Some(n) => WINDOW_BUCKETS
                .iter()
                .position(|&bucket| n <= bucket)
                .map_or(&self.load, |i| &self.load_windows[i]),
            None => &self.load,
        }
    }
}

/// The tag arrays from `tg`, a join on [`TAG_ARRAYS`] (no row: no tags).
const TAGS_JOINED: &str = "coalesce(tg.keys, '{}'), coalesce(tg.vals, '{}')";

/// The select list that aggregates tag rows `t` into the arrays `keys` and `vals`, in key
/// order.
const TAG_ARRAYS: &str =
    "array_agg(t.key ORDER BY t.key) AS keys, array_agg(t.value ORDER BY t.key) AS vals";

/// The window sizes that have a load statement of their own (see [`SessionSql::load_window`]).
const WINDOW_BUCKETS: [usize; 7] = [16, 32, 64, 128, 256, 512, 1024];

/// The load statement: session `$1` unless expired at `$3`, with its newest messages up to
/// `limit` (`$2`, or a number).
///
/// The labels go on the newest message's row only (or the one row of a session without
/// messages), not on every row. The newest live message's `seq` and the tags are read once
/// (lateral joins on the one session row), not per message row: a per-row subquery in the
/// select list is costed once per message, which put a 100,000-message load above
/// `jit_above_cost` and made the server spend ~370 ms compiling it (a window function
/// numbering the rows was slower too).
fn load_sql(s: &str, limit: &str) -> String {
    format!(
        "SELECT s.metadata, s.created_at, s.updated_at, s.message_count, s.expires_at,
             CASE WHEN {newest} THEN s.title END,
             CASE WHEN {newest} THEN s.owner END,
             CASE WHEN {newest} THEN coalesce(tg.keys, '{{}}') END,
             CASE WHEN {newest} THEN coalesce(tg.vals, '{{}}') END,
             m.seq, {m_cols}
         FROM {s}.sessions s
         CROSS JOIN LATERAL (
             SELECT max(seq) AS seq FROM {s}.messages WHERE session_id = s.id
         ) top
         CROSS JOIN LATERAL (
             SELECT {TAG_ARRAYS} FROM {s}.session_tags t WHERE t.session_id = s.id
         ) tg
         LEFT JOIN LATERAL (
             SELECT seq, {MESSAGE_COLUMNS}
             FROM {s}.messages
             WHERE session_id = $1 ORDER BY seq DESC LIMIT {limit}
         ) m ON true
         WHERE s.id = $1 AND {live}",
        newest = "(m.seq IS NULL OR m.seq = top.seq)",
        m_cols = prefixed("m", MESSAGE_COLUMNS),
        live = live_session(3)
    )
}

/// Like [`insert_messages`], returning how many session rows were written: 1, or 0 when the
/// session's upsert skipped the row (its `WHERE` did not hold), and no message was inserted.
fn counted_insert_messages(s: &str, session: &str) -> String {
    format!(
        "WITH s AS (
            {session}
        ), inserted AS (
            INSERT INTO {s}.messages {INSERT_MESSAGE_COLUMNS}
            {SELECT_NEW_MESSAGE} FROM s, {UNNEST_MESSAGES}
        )
        SELECT count(*) FROM s"
    )
}

const ARCHIVE_MESSAGES: &[Type] = &[Type::TEXT, Type::TEXT, Type::TIMESTAMPTZ];
const TEXT_TEXT_TIME: &[Type] = &[Type::TEXT, Type::TEXT, Type::TIMESTAMPTZ];
/// Session, archive, new message count.
const TEXT_TEXT_INT8: &[Type] = &[Type::TEXT, Type::TEXT, Type::INT8];
/// Session, archive, first position, then the first eight message arrays of
/// `UNNEST_MESSAGES` (`$4..$11`: archived messages have no tsvector).
const ARCHIVED_MESSAGES: &[Type] = with_message_arrays!([Type::TEXT, Type::TEXT, Type::INT8], []);

/// The unnest that turns the eight message arrays `$4`..`$11` of an archive's messages
/// into rows `m`, numbered from 1 in `m.ord`.
const UNNEST_ARCHIVED_MESSAGES: &str = "unnest($4::text[], $5::text[], $6::text[], $7::bytea[], \
     $8::timestamptz[], $9::text[], $10::text[], $11::json[]) \
     WITH ORDINALITY AS m(id, role, content, content_raw, ts, tool_call_id, tool_name, metadata, ord)";

statements! {
    /// Compaction and archives.
    ArchiveSql(s, st) {
        /// Archive ids of session `$1` starting with `$2`.
        archive_ids_like: TEXT_TEXT => format!(
            "SELECT id FROM {s}.archives WHERE session_id = $1 AND starts_with(id, $2)"
        ),
        /// Moves every message of session `$1` into new archive `$2` created at `$3`.
        archive_messages: ARCHIVE_MESSAGES => format!(
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
        /// Replaces the (just archived) messages of session `$1` with `$4..$12` at time `$2`.
        replace: MESSAGES => insert_messages(
            s,
            &format!(
                "UPDATE {s}.sessions SET
                    next_seq = next_seq + $3,
                    message_count = $3,
                    updated_at = GREATEST(updated_at, $2)
                WHERE id = $1
                RETURNING next_seq - $3 AS first_seq"
            ),
        ),
        /// Takes a key-share lock on session `$1` unless it has expired at `$2` (one row, or
        /// none): the row cannot be deleted (by `delete_session`, `purge` or a write starting
        /// it afresh) until the transaction ends, while appends and compactions go on.
        pin_session: TEXT_TIME => format!(
            "SELECT 1 FROM {s}.sessions s WHERE s.id = $1 AND {live} FOR KEY SHARE",
            live = live_session(2)
        ),
        /// Sets the message count of archive `$2` of session `$1` to `$3`, locking its row;
        /// returns its creation time (nothing when there is no such archive).
        recount_archive: TEXT_TEXT_INT8 => format!(
            "UPDATE {s}.archives SET message_count = $3
             WHERE session_id = $1 AND id = $2
             RETURNING created_at"
        ),
        /// Deletes the messages of archive `$2` of session `$1`; returns their first position
        /// (NULL when it held none).
        clear_archive: TEXT_TEXT => format!(
            "WITH gone AS (
                DELETE FROM {s}.archived_messages WHERE session_id = $1 AND archive_id = $2
                RETURNING seq
            )
            SELECT min(seq) FROM gone"
        ),
        /// Inserts `$4..$11` as the messages of archive `$2` of session `$1`, from position `$3`.
        fill_archive: ARCHIVED_MESSAGES => format!(
            "INSERT INTO {s}.archived_messages (session_id, archive_id, seq, {MESSAGE_COLUMNS})
             SELECT $1, $2, $3 + m.ord - 1, {m_cols} FROM {UNNEST_ARCHIVED_MESSAGES}",
            m_cols = prefixed("m", MESSAGE_COLUMNS)
        ),
        /// Archives of session `$1`, oldest first (none when it has expired at `$2`).
        list_archives: TEXT_TIME => format!(
            "SELECT a.id, a.created_at, a.message_count FROM {s}.archives a
             WHERE a.session_id = $1
                 AND EXISTS (SELECT 1 FROM {s}.sessions s WHERE s.id = $1 AND {live})
             ORDER BY a.ord",
            live = live_session(2)
        ),
        /// Archive `$2` of session `$1` with its messages (nothing when it has expired at `$3`).
        load_archive: TEXT_TEXT_TIME => format!(
            "SELECT a.created_at, a.message_count, m.seq, {m_cols}
             FROM {s}.archives a
             LEFT JOIN {s}.archived_messages m
                 ON m.session_id = a.session_id AND m.archive_id = a.id
             WHERE a.session_id = $1 AND a.id = $2
                 AND EXISTS (SELECT 1 FROM {s}.sessions s WHERE s.id = $1 AND {live})",
            m_cols = prefixed("m", MESSAGE_COLUMNS),
            live = live_session(3)
        ),
    }
}

/// Source, target, last position copied (all when NULL), time.
const FORK_COPY: &[Type] = &[Type::TEXT, Type::TEXT, Type::INT8, Type::TIMESTAMPTZ];
/// Session, title, owner, expiry, tag keys removed, tag keys set, their values.
const UPDATE_LABELS: &[Type] = &[
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TIMESTAMPTZ,
    Type::TEXT_ARRAY,
    Type::TEXT_ARRAY,
    Type::TEXT_ARRAY,
];
/// Cursor, time, updated since, updated before, tag keys, tag values, limit, owner.
const FIND_SESSIONS_OF_OWNER: &[Type] = &[
    Type::TEXT,
    Type::TIMESTAMPTZ,
    Type::TIMESTAMPTZ,
    Type::TIMESTAMPTZ,
    Type::TEXT_ARRAY,
    Type::TEXT_ARRAY,
    Type::INT8,
    Type::TEXT,
];
/// `FIND_SESSIONS_OF_OWNER` without the owner.
const FIND_SESSIONS: &[Type] = without_last(FIND_SESSIONS_OF_OWNER);

statements! {
    /// Fork, rewind, labels and finding sessions.
    LifecycleSql(s, st) {
        /// Like `lock_session`, with a shared lock (the source of a fork), returning `next_seq`
        /// and `message_count`.
        lock_session_shared: TEXT_TIME => format!(
            "SELECT s.next_seq, s.message_count FROM {s}.sessions s
             WHERE s.id = $1 AND {live} FOR SHARE",
            live = live_session(2)
        ),
        /// The position of the last message with id `$2` in session `$1` (NULL when none).
        message_seq: TEXT_TEXT => format!(
            "SELECT max(seq) FROM {s}.messages WHERE session_id = $1 AND id = $2"
        ),
        /// Removes the messages of session `$1` from position `$2` on, written at `$3`; returns
        /// them.
        // The session row is locked: the delete's snapshot holds every append made
        // before. `next_seq` moves back with the count, so the first position stays.
        rewind: TEXT_INT8_TIME => format!(
            "WITH gone AS (
                DELETE FROM {s}.messages WHERE session_id = $1 AND seq >= $2
                RETURNING seq, {MESSAGE_COLUMNS}
            ), n AS (
                SELECT count(*) AS n FROM gone
            ), u AS (
                UPDATE {s}.sessions SET
                    next_seq = next_seq - n.n,
                    message_count = message_count - n.n,
                    updated_at = GREATEST(updated_at, $3)
                FROM n WHERE id = $1 AND n.n > 0
            )
            SELECT seq, {MESSAGE_COLUMNS} FROM gone"
        ),
        /// Creates session `$2` as a copy of session `$1` (locked) with its messages up to position
        /// `$3` (all when NULL), at time `$4`; nothing when `$2` exists. Returns its summary.
        // Positions are copied as they are, so the copy's window
        // (`next_seq - message_count` ..) starts where the source's does.
        fork_copy: FORK_COPY => format!(
            "WITH src AS (
                SELECT count(*) AS n, coalesce(max(seq) + 1, 0) AS next
                FROM {s}.messages
                WHERE session_id = $1 AND ($3::int8 IS NULL OR seq <= $3)
            ), target AS (
                INSERT INTO {s}.sessions
                    (id, metadata, created_at, updated_at, next_seq, message_count, title, owner)
                SELECT $2, s.metadata, $4, $4, src.next, src.n, s.title, s.owner
                FROM {s}.sessions s, src WHERE s.id = $1
                ON CONFLICT (id) DO NOTHING
                RETURNING id, message_count, created_at, updated_at, title, owner
            ), copied AS (
                INSERT INTO {s}.messages {INSERT_MESSAGE_COLUMNS}
                SELECT target.id, o.seq, {o_cols}, o.tsv
                FROM {s}.messages o, target
                WHERE o.session_id = $1 AND ($3::int8 IS NULL OR o.seq <= $3)
            ), tags AS (
                INSERT INTO {s}.session_tags (session_id, key, value)
                SELECT target.id, g.key, g.value FROM {s}.session_tags g, target
                WHERE g.session_id = $1
                RETURNING key, value
            )
            SELECT target.message_count, target.created_at, target.updated_at,
                target.title, target.owner,
                ARRAY(SELECT key FROM tags ORDER BY key),
                ARRAY(SELECT value FROM tags ORDER BY key)
            FROM target",
            o_cols = prefixed("o", MESSAGE_COLUMNS)
        ),
        /// The tags of session `$1`.
        session_tags: TEXT => format!(
            "SELECT key, value FROM {s}.session_tags WHERE session_id = $1"
        ),
        /// Sets the title `$2`, owner `$3` and expiry `$4` of session `$1` (locked), removes its
        /// tags `$5` and sets tags `$6` to values `$7`; returns its count and times.
        // The removed and the set keys are disjoint (one patch entry per key).
        update_labels: UPDATE_LABELS => format!(
            "WITH removed AS (
                DELETE FROM {s}.session_tags WHERE session_id = $1 AND key = ANY($5::text[])
            ), added AS (
                INSERT INTO {s}.session_tags (session_id, key, value)
                SELECT $1, k, v FROM unnest($6::text[], $7::text[]) AS x(k, v)
                ON CONFLICT (session_id, key) DO UPDATE SET value = EXCLUDED.value
            )
            UPDATE {s}.sessions SET title = $2, owner = $3, expires_at = $4
            WHERE id = $1
            RETURNING message_count, created_at, updated_at, expires_at"
        ),
        /// One page of live sessions: see [`find_sessions`](fn@find_sessions).
        find_sessions: FIND_SESSIONS => find_sessions(s, ""),
        /// Like `find_sessions`, of owner `$8` only.
        find_sessions_of_owner: FIND_SESSIONS_OF_OWNER => find_sessions(s, " AND s.owner = $8"),
    }
}

/// The tag arrays of session `s` (schema `{s}`) read by two subqueries of their own, for a
/// statement that returns few sessions (a page).
fn tags_per_row(s: &str) -> String {
    format!(
        "ARRAY(SELECT t.key FROM {s}.session_tags t WHERE t.session_id = s.id ORDER BY t.key),
         ARRAY(SELECT t.value FROM {s}.session_tags t WHERE t.session_id = s.id ORDER BY t.key)"
    )
}

/// One page of live sessions, with `and` added to the condition: ids after `$1` (`''` for
/// the first page), not expired at `$2`, written at or after `$3` and before `$4` (either
/// NULL: no bound), carrying every tag `$5[i]` = `$6[i]`; at most `$7`, by id.
///
/// The tag condition runs once (a hashed subplan over the `(key, value)` index); every value
/// is a bind parameter, so labels match literally.
fn find_sessions(s: &str, and: &str) -> String {
    format!(
        "SELECT {info} FROM {s}.sessions s
         WHERE s.id > $1 AND {live}
             AND ($3::timestamptz IS NULL OR s.updated_at >= $3)
             AND ($4::timestamptz IS NULL OR s.updated_at < $4)
             AND (cardinality($5::text[]) = 0 OR s.id IN (
                 SELECT t.session_id FROM {s}.session_tags t
                 JOIN unnest($5::text[], $6::text[]) AS q(key, value)
                     ON t.key = q.key AND t.value = q.value
                 GROUP BY t.session_id
                 HAVING count(*) = cardinality($5::text[])))
             {and}
         ORDER BY s.id
         LIMIT $7",
        info = session_info_columns(&tags_per_row(s)),
        live = live_session(2)
    )
}

/// Query terms, limit, time.
const SEARCH: &[Type] = &[Type::TEXT_ARRAY, Type::INT8, Type::TIMESTAMPTZ];
/// Query terms, limit, session, time.
const SEARCH_SESSION: &[Type] = &[Type::TEXT_ARRAY, Type::INT8, Type::TEXT, Type::TIMESTAMPTZ];

statements! {
    /// Searching messages.
    SearchSql(s, st) {
        /// Ranked messages matching any of the query terms `$1` (at most `SLOTS` of them; see
        /// `ranked_search`), at most `$2`, of sessions not expired at `$3`.
        messages: SEARCH => ranked_search(&all_messages(s), false),
        /// Like `messages`, for more than `SLOTS` terms.
        messages_many: SEARCH => ranked_search(&all_messages(s), true),
        /// Ranked messages matching any of the query terms `$1` (at most `SLOTS` of them), at
        /// most `$2`, in session `$3` unless it has expired at `$4`.
        in_session: SEARCH_SESSION => ranked_search(&session_messages(s), false),
        /// Like `in_session`, for more than `SLOTS` terms.
        in_session_many: SEARCH_SESSION => ranked_search(&session_messages(s), true),
    }
}

/// The messages searched by `SearchSql::messages`: those of live sessions.
fn all_messages(s: &str) -> Ranked {
    searched_messages(
        s,
        live_session(3),
        table_size(&format!("{s}.messages")),
        "session_id, seq",
    )
}

/// The messages searched by `SearchSql::in_session`: those of one session.
fn session_messages(s: &str) -> Ranked {
    searched_messages(
        s,
        format!("m.session_id = $3 AND s.id = $3 AND {}", live_session(4)),
        // The session's live messages, all of which the search covers.
        format!("(SELECT message_count FROM {s}.sessions WHERE id = $3)"),
        "seq",
    )
}

/// The messages of `filter` (on messages `m` of sessions `s`), `size` of them, ranked with
/// equal scores ordered by `ties`.
fn searched_messages(s: &str, filter: String, size: String, ties: &'static str) -> Ranked {
    Ranked {
        from: format!("{s}.messages m JOIN {s}.sessions s ON s.id = m.session_id"),
        tsv: "m.tsv",
        filter,
        size,
        hit: "m.session_id, m.seq",
        table: format!("{s}.messages"),
        key: "session_id, seq",
        columns: format!("t.session_id, {}", prefixed("t", MESSAGE_COLUMNS)),
        ties,
        limit: "$2",
    }
}

const TIME_TIME: &[Type] = &[Type::TIMESTAMPTZ, Type::TIMESTAMPTZ];
const INT8: &[Type] = &[Type::INT8];

statements! {
    /// Purging sessions and memory items.
    RetentionSql(s, st) {
        /// Deletes the sessions expired at `$1`.
        purge_expired: TIME => format!(
            "DELETE FROM {s}.sessions WHERE expires_at <= $1 RETURNING id"
        ),
        /// Deletes sessions last written before `$1`.
        purge_age: TIME => format!("DELETE FROM {s}.sessions WHERE updated_at < $1 RETURNING id"),
        /// Deletes all but the `$1` most recently written sessions.
        purge_count: INT8 => format!(
            "DELETE FROM {s}.sessions WHERE id IN (
                 SELECT id FROM {s}.sessions ORDER BY updated_at DESC, id OFFSET $1
             ) RETURNING id"
        ),
        /// Deletes the memory items expired at `$1` or last updated before `$2` (none when NULL).
        purge_memories: TIME_TIME => format!(
            "DELETE FROM {s}.memories WHERE expires_at <= $1 OR updated_at < $2"
        ),
    }
}
