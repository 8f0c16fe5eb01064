//! The statements of checkpoints (tables `checkpoints`, `checkpoint_blobs`,
//! `checkpoint_writes`): putting checkpoints and pending writes, reading them back as tuples,
//! listing threads, and the deleting, pruning and copying of whole threads.
//!
//! Locking (see `checkpoints.rs` for the reasoning): each thread has a transaction-scoped
//! advisory lock, key (`CHECKPOINT_LOCK_CLASS`, a hash of schema and thread computed by the
//! client). A put of a checkpoint or of pending writes takes it shared, as the first step of
//! its one statement; what deletes or copies a thread takes it exclusive, in a statement of
//! its own before any statement that reads. Pending writes are keyed by (thread, namespace,
//! checkpoint id, task id, index) alone: they may come before their checkpoint.

use tokio_postgres::types::Type;

use super::{Build, TEXT_ARRAY, TEXT_TEXT};
use crate::statements::Stmt;

/// First key of the advisory locks on threads (`'amck'` in ASCII): apart from the migration
/// lock (`'amem'`) and from an application's own one-key locks.
pub(crate) const CHECKPOINT_LOCK_CLASS: i32 = 0x616d_636b;

/// Lock key, thread, namespace, id, parent, body type, body, channels, their versions,
/// metadata (`json`), metadata for filtering (`jsonb`, NULL when it cannot be one), run id,
/// creation time; then the blobs: channels, versions, type tags (NULL: emptied), bytes.
const PUT: &[Type] = &[
    Type::INT4,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::BYTEA,
    Type::TEXT_ARRAY,
    Type::TEXT_ARRAY,
    Type::JSON,
    Type::JSONB,
    Type::BYTEA,
    Type::TIMESTAMPTZ,
    Type::TEXT_ARRAY,
    Type::TEXT_ARRAY,
    Type::TEXT_ARRAY,
    Type::BYTEA_ARRAY,
];
/// Lock key, thread, namespace, checkpoint id; then the writes: task ids, indexes, channels,
/// type tags, bytes, task paths.
const PUT_WRITES: &[Type] = &[
    Type::INT4,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT_ARRAY,
    Type::INT8_ARRAY,
    Type::TEXT_ARRAY,
    Type::TEXT_ARRAY,
    Type::BYTEA_ARRAY,
    Type::TEXT_ARRAY,
];
/// Thread (NULL: every thread), namespace (NULL: every namespace), id, before (each NULL:
/// no condition), metadata filter (`jsonb`, NULL: none), limit (NULL: none).
const LIST: &[Type] = &[
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::JSONB,
    Type::INT8,
];
const TEXT_TEXT_TEXT: &[Type] = &[Type::TEXT, Type::TEXT, Type::TEXT];
const INT4_ARRAY: &[Type] = &[Type::INT4_ARRAY];
const BYTEA_ARRAY: &[Type] = &[Type::BYTEA_ARRAY];
const BYTEA_ARRAY_TEXT_ARRAY: &[Type] = &[Type::BYTEA_ARRAY, Type::TEXT_ARRAY];
const NONE: &[Type] = &[];

/// The columns of a checkpoint row, in table order (the order `copy_thread` copies).
const CHECKPOINT_COLUMNS: &str = "thread, ns, id, parent, body_type, body, channels, versions, \
     metadata, filter, run_id, created_at";

/// The key of a blob's (`channel`, `version`) within its thread and namespace: a hash, so the
/// primary key's entries stay far below PostgreSQL's btree limit (~2,700 bytes) whatever the
/// lengths (a channel and a version may each be 1,024 bytes, a thread and a namespace 512).
/// The length prefix keeps `("ab", "c")` apart from `("a", "bc")`.
fn blob_key(channel: &str, version: &str) -> String {
    format!(
        "sha256(int4send(octet_length({channel})) || convert_to({channel}, 'UTF8') \
         || convert_to({version}, 'UTF8'))"
    )
}

statements! {
    /// Checkpoints, their channel values (blobs) and pending writes.
    CheckpointSql(s, st) {
        /// Takes the exclusive advisory lock of each thread key in `$1` (sorted, distinct: the
        /// same order everywhere, so two callers never deadlock), until the transaction ends.
        lock_threads: INT4_ARRAY => format!(
            "SELECT pg_advisory_xact_lock({CHECKPOINT_LOCK_CLASS}, k)
             FROM unnest($1::int4[]) WITH ORDINALITY AS x(k, o)
             ORDER BY o"
        ),
        /// Stores checkpoint `$2..$13` (replacing the one at its key, whose pending writes
        /// stay) and the blobs `$14..$17` (replacing those at their keys), in one statement,
        /// after taking the shared lock of thread key `$1`.
        // Every row written comes from `l`, so nothing is written before the lock is held: a
        // delete holding it exclusive has committed by then. What this statement writes reads
        // nothing from its snapshot (the upserts see the latest rows), so that snapshot being
        // older than the lock does not matter. The blobs come sorted (by channel and
        // version) and are written before the checkpoint row (the main statement runs before
        // an unreferenced CTE): the same order for every put, so two puts never deadlock.
        put: PUT => format!(
            "WITH l AS (
                SELECT pg_advisory_xact_lock_shared({CHECKPOINT_LOCK_CLASS}, $1::int4)
            ), c AS (
                INSERT INTO {s}.checkpoints AS c ({CHECKPOINT_COLUMNS})
                SELECT $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13 FROM l
                ON CONFLICT (thread, ns, id) DO UPDATE SET
                    parent = EXCLUDED.parent, body_type = EXCLUDED.body_type,
                    body = EXCLUDED.body, channels = EXCLUDED.channels,
                    versions = EXCLUDED.versions, metadata = EXCLUDED.metadata,
                    filter = EXCLUDED.filter, run_id = EXCLUDED.run_id,
                    created_at = EXCLUDED.created_at
            )
            INSERT INTO {s}.checkpoint_blobs AS b
                (thread, ns, key, channel, version, type_tag, bytes)
            SELECT $2, $3, {key}, v.channel, v.version, v.type_tag, v.bytes
            FROM l, unnest($14::text[], $15::text[], $16::text[], $17::bytea[])
                WITH ORDINALITY AS v(channel, version, type_tag, bytes, o)
            ORDER BY v.o
            ON CONFLICT (thread, ns, key) DO UPDATE SET
                type_tag = EXCLUDED.type_tag, bytes = EXCLUDED.bytes",
            key = blob_key("v.channel", "v.version")
        ),
        /// Stores the writes `$5..$10` made after checkpoint (`$2`, `$3`, `$4`), stored or
        /// not, after taking the shared lock of thread key `$1`: an existing (task id, index)
        /// is replaced when the index is negative, else kept.
        // As in `put`, every row written comes from `l`: a delete or copy of the thread
        // holding the lock exclusive has committed before any of them is written, and one
        // that asks for it later waits for this statement's commit, so its statements see
        // these writes. The writes come sorted by (task id, index): concurrent puts of the
        // same writes lock their rows in one order.
        put_writes: PUT_WRITES => format!(
            "WITH l AS (
                SELECT pg_advisory_xact_lock_shared({CHECKPOINT_LOCK_CLASS}, $1::int4)
            )
            INSERT INTO {s}.checkpoint_writes AS w
                (thread, ns, checkpoint_id, task_id, idx, channel, type_tag, bytes, task_path)
            SELECT $2, $3, $4, v.task_id, v.idx, v.channel, v.type_tag, v.bytes, v.task_path
            FROM l, unnest($5::text[], $6::int8[], $7::text[], $8::text[], $9::bytea[],
                $10::text[]) WITH ORDINALITY AS v(task_id, idx, channel, type_tag, bytes,
                task_path, o)
            ORDER BY v.o
            ON CONFLICT (thread, ns, checkpoint_id, task_id, idx) DO UPDATE SET
                channel = EXCLUDED.channel, type_tag = EXCLUDED.type_tag,
                bytes = EXCLUDED.bytes, task_path = EXCLUDED.task_path
            WHERE EXCLUDED.idx < 0"
        ),
        /// The newest checkpoint of thread `$1` in namespace `$2`, as tuple rows.
        get_latest: TEXT_TEXT => tuple_rows(
            s,
            &format!(
                "SELECT * FROM {s}.checkpoints WHERE thread = $1 AND ns = $2
                 ORDER BY id DESC LIMIT 1"
            ),
        ),
        /// Checkpoint `$3` of thread `$1` in namespace `$2`, as tuple rows.
        get_by_id: TEXT_TEXT_TEXT => tuple_rows(
            s,
            &format!("SELECT * FROM {s}.checkpoints WHERE thread = $1 AND ns = $2 AND id = $3"),
        ),
        /// The checkpoints of thread `$1` passing the `LIST` conditions, newest first, at most
        /// `$6`, as tuple rows.
        list_thread: LIST => tuple_rows(s, &listed(s, "thread = $1")),
        /// Like `list_thread`, of every thread (`$1` is NULL).
        list_all: LIST => tuple_rows(s, &listed(s, "$1::text IS NULL")),
        /// Every thread holding a checkpoint, by id, with its count and newest creation time.
        list_threads: NONE => format!(
            "SELECT thread, count(*), max(created_at) FROM {s}.checkpoints
             GROUP BY thread ORDER BY thread"
        ),
        /// The threads holding a checkpoint of one of the runs `$1` (run ids' bytes).
        run_threads: BYTEA_ARRAY => format!(
            "SELECT DISTINCT thread FROM {s}.checkpoints WHERE run_id = ANY($1::bytea[])"
        ),
        /// Deletes the checkpoints of runs `$1` in threads `$2` (locked) with their pending
        /// writes (no other writes: those made ahead of a checkpoint not stored yet stay).
        // Both deletes read one snapshot, taken after the lock: the same checkpoints.
        delete_runs: BYTEA_ARRAY_TEXT_ARRAY => format!(
            "WITH w AS (
                DELETE FROM {s}.checkpoint_writes w
                USING {s}.checkpoints c
                WHERE c.run_id = ANY($1::bytea[]) AND c.thread = ANY($2::text[])
                    AND w.thread = c.thread AND w.ns = c.ns AND w.checkpoint_id = c.id
            )
            DELETE FROM {s}.checkpoints
            WHERE run_id = ANY($1::bytea[]) AND thread = ANY($2::text[])"
        ),
        /// Deletes every checkpoint of threads `$1` (locked).
        delete_threads: TEXT_ARRAY => format!(
            "DELETE FROM {s}.checkpoints WHERE thread = ANY($1::text[])"
        ),
        /// Deletes every checkpoint of threads `$1` (locked) but the newest of each namespace.
        delete_older: TEXT_ARRAY => format!(
            "DELETE FROM {s}.checkpoints c
             USING (
                 SELECT thread, ns, max(id) AS newest FROM {s}.checkpoints
                 WHERE thread = ANY($1::text[]) GROUP BY thread, ns
             ) n
             WHERE c.thread = n.thread AND c.ns = n.ns AND c.id < n.newest"
        ),
        /// Deletes, in threads `$1` (locked), every pending write but those of a stored
        /// checkpoint (so after a prune keeping the latest, all but its writes; after a
        /// delete of everything, all) and the blobs no checkpoint of their namespace reads.
        // A statement after the checkpoints' delete: its snapshot holds every write committed
        // by a `put_writes` the lock waited for.
        clean_threads: TEXT_ARRAY => clean(
            s,
            &format!(
                "w AS (
                    DELETE FROM {s}.checkpoint_writes w
                    WHERE w.thread = ANY($1::text[]) AND NOT EXISTS (
                        SELECT 1 FROM {s}.checkpoints c
                        WHERE c.thread = w.thread AND c.ns = w.ns AND c.id = w.checkpoint_id)
                ),"
            )
        ),
        /// Deletes, in threads `$1` (locked), the blobs no checkpoint of their namespace reads
        /// (pending writes stay).
        clean_blobs: TEXT_ARRAY => clean(s, ""),
        /// Whether thread `$1` holds a checkpoint, and whether thread `$2` does.
        threads_held: TEXT_TEXT => format!(
            "SELECT EXISTS (SELECT 1 FROM {s}.checkpoints WHERE thread = $1),
                    EXISTS (SELECT 1 FROM {s}.checkpoints WHERE thread = $2)"
        ),
        /// Copies every checkpoint and blob of thread `$1` to thread `$2` (both locked; `$2`
        /// holds nothing), with the pending writes of those checkpoints (not those made ahead
        /// of a checkpoint not stored); returns how many checkpoints.
        copy_thread: TEXT_TEXT => format!(
            "WITH c AS (
                INSERT INTO {s}.checkpoints ({CHECKPOINT_COLUMNS})
                SELECT $2, ns, id, parent, body_type, body, channels, versions, metadata,
                    filter, run_id, created_at
                FROM {s}.checkpoints WHERE thread = $1
                RETURNING 1
            ), b AS (
                INSERT INTO {s}.checkpoint_blobs
                    (thread, ns, key, channel, version, type_tag, bytes)
                SELECT $2, ns, key, channel, version, type_tag, bytes
                FROM {s}.checkpoint_blobs WHERE thread = $1
            ), w AS (
                INSERT INTO {s}.checkpoint_writes
                    (thread, ns, checkpoint_id, task_id, idx, channel, type_tag, bytes, task_path)
                SELECT $2, w.ns, w.checkpoint_id, w.task_id, w.idx, w.channel, w.type_tag,
                    w.bytes, w.task_path
                FROM {s}.checkpoint_writes w
                WHERE w.thread = $1 AND EXISTS (
                    SELECT 1 FROM {s}.checkpoints c
                    WHERE c.thread = $1 AND c.ns = w.ns AND c.id = w.checkpoint_id)
            )
            SELECT count(*) FROM c"
        ),
    }
}

/// Deletes, in threads `$1`, the blobs no checkpoint of their namespace reads, after the
/// common table expressions `before` (empty, or ending with a comma).
fn clean(s: &str, before: &str) -> String {
    format!(
        "WITH {before} r AS (
            SELECT DISTINCT c.thread, c.ns, {key} AS key
            FROM {s}.checkpoints c,
                unnest(c.channels, c.versions) AS v(channel, version)
            WHERE c.thread = ANY($1::text[])
        )
        DELETE FROM {s}.checkpoint_blobs b
        WHERE b.thread = ANY($1::text[]) AND NOT EXISTS (
            SELECT 1 FROM r WHERE r.thread = b.thread AND r.ns = b.ns AND r.key = b.key)",
        key = blob_key("v.channel", "v.version")
    )
}

/// The checkpoints of threads `thread_condition` passing the `LIST` parameters' conditions
/// (`$2..$5`), newest first (then by thread and namespace), at most `$6`.
///
/// The metadata condition is a pre-filter: `jsonb` containment holds for every checkpoint
/// whose metadata has the filter's keys with equal values, and for some others (`1.0`
/// contains `1`, `[1, 2]` contains `[1]`); rows whose metadata is no `jsonb` (it holds
/// `\u0000`) pass. The client decides with `CheckpointQuery::matches`.
fn listed(s: &str, thread_condition: &str) -> String {
    format!(
        "SELECT * FROM {s}.checkpoints
         WHERE {thread_condition}
             AND ($2::text IS NULL OR ns = $2)
             AND ($3::text IS NULL OR id = $3)
             AND ($4::text IS NULL OR id < $4)
             AND ($5::jsonb IS NULL OR filter IS NULL OR filter @> $5)
         ORDER BY id DESC, thread, ns
         LIMIT $6"
    )
}

/// The checkpoints `candidates` selects (whole `checkpoints` rows) with the blobs they read
/// and their pending writes, in one statement, so from one snapshot: rows of three kinds
/// told apart by the first column, in the layout `checkpoint_rows::TupleRows` reads:
///
/// | # | column | checkpoint (0) | blob (1) | write (2) |
/// |---|---|---|---|---|
/// | 1, 2 | thread, ns | ✓ | ✓ | ✓ |
/// | 3 | id | ✓ | | its checkpoint's |
/// | 4 | name | parent | channel | task id |
/// | 5 | detail | | version | channel |
/// | 6 | task_path | | | ✓ |
/// | 7, 8 | type_tag, bytes | body | value (NULL: emptied) | value |
/// | 9 | idx | | | ✓ |
/// | 10, 11 | channels, versions | ✓ | | |
/// | 12, 13 | metadata, created_at | ✓ | | |
///
/// A blob read by several of the checkpoints comes once.
fn tuple_rows(s: &str, candidates: &str) -> String {
    format!(
        "WITH c AS ({candidates})
         SELECT 0 AS part, c.thread, c.ns, c.id, c.parent AS name, NULL::text AS detail,
             NULL::text AS task_path, c.body_type AS type_tag, c.body AS bytes,
             NULL::int8 AS idx, c.channels, c.versions, c.metadata, c.created_at
         FROM c
         UNION ALL
         SELECT 1, b.thread, b.ns, NULL, b.channel, b.version, NULL, b.type_tag, b.bytes,
             NULL, NULL, NULL, NULL, NULL
         FROM (
             SELECT DISTINCT c.thread, c.ns, v.channel, v.version
             FROM c, unnest(c.channels, c.versions) AS v(channel, version)
         ) r
         JOIN {s}.checkpoint_blobs b
             ON b.thread = r.thread AND b.ns = r.ns AND b.key = {key}
                 AND b.channel = r.channel AND b.version = r.version
         UNION ALL
         SELECT 2, w.thread, w.ns, w.checkpoint_id, w.task_id, w.channel, w.task_path,
             w.type_tag, w.bytes, w.idx, NULL, NULL, NULL, NULL
         FROM c
         JOIN {s}.checkpoint_writes w
             ON w.thread = c.thread AND w.ns = c.ns AND w.checkpoint_id = c.id",
        key = blob_key("r.channel", "r.version")
    )
}

#[cfg(test)]
mod tests {
    use agentmem_core::CheckpointStore;
    use tokio_postgres::types::ToSql;

    use crate::statements::Stmt;

    /// Reading one checkpoint among many, and one thread's among many threads, walks the
    /// primary keys: no sequential scan of a checkpoint table.
    #[tokio::test]
    async fn reads_walk_the_primary_keys() {
        // 200 threads of 100 checkpoints, each reading 4 channels.
        let Some((store, client)) = crate::sql::test_store_holding(|schema| {
            format!(
                "INSERT INTO \"{schema}\".checkpoints
                     (thread, ns, id, body_type, body, channels, versions, metadata, created_at)
                 SELECT 't' || t, '', lpad(i::text, 5, '0'), 'b', '\\x00',
                     ARRAY['a', 'b', 'c', 'd'], ARRAY[i::text, i::text, i::text, i::text],
                     '{{}}', now()
                 FROM generate_series(1, 200) t, generate_series(1, 100) i;
                 INSERT INTO \"{schema}\".checkpoint_blobs
                     (thread, ns, key, channel, version, type_tag, bytes)
                 SELECT 't' || t, '', {key}, c, i::text, 'b', '\\x00'
                 FROM generate_series(1, 200) t, generate_series(1, 100) i,
                     unnest(ARRAY['a', 'b', 'c', 'd']) c;
                 INSERT INTO \"{schema}\".checkpoint_writes
                     (thread, ns, checkpoint_id, task_id, idx, channel, type_tag, bytes,
                      task_path)
                 SELECT 't' || t, '', lpad(i::text, 5, '0'), 'task', 0, 'x', 'b', '\\x00', ''
                 FROM generate_series(1, 200) t, generate_series(1, 100) i;
                 ANALYZE \"{schema}\".checkpoints; ANALYZE \"{schema}\".checkpoint_blobs;
                 ANALYZE \"{schema}\".checkpoint_writes",
                key = super::blob_key("c", "i::text")
            )
        })
        .await
        else {
            return;
        };
        let sql = &store.sql.checkpoints;
        let (thread, ns, id) = ("t7", "", "00042");
        let (none, limit) = (None::<&str>, Some(10i64));
        let filter = None::<tokio_postgres::types::Json<serde_json::Value>>;
        let plans: [(&Stmt, Vec<&(dyn ToSql + Sync)>); 3] = [
            (&sql.get_latest, vec![&thread, &ns]),
            (&sql.get_by_id, vec![&thread, &ns, &id]),
            (
                &sql.list_thread,
                vec![&thread, &ns, &none, &none, &filter, &limit],
            ),
        ];
        let texts = crate::sql::plan_texts(&client, &plans).await;
        let rows = store
            .get_checkpoint(
                &"t7".parse().expect("thread"),
                &Default::default(),
                Some(&id.parse().expect("id")),
            )
            .await;
        store.drop_schema().await.expect("drop schema");
        let got = rows.expect("get").expect("stored");
        assert_eq!((got.blobs.len(), got.writes.len()), (4, 1));
        for text in texts {
            assert!(!text.contains("Seq Scan"), "{text}");
        }
    }
}
