//! Tables, indexes and forward migrations.
//!
//! Each store lives in one PostgreSQL schema. `schema_migrations` records every applied
//! version; opening a store applies the missing ones inside one transaction that holds a
//! transaction-scoped advisory lock keyed on the schema name, so processes starting at once
//! migrate exactly once and everyone else waits, then finds the work done.
//!
//! A migration is a step: DDL, or work done in Rust on the rows (recomputing the
//! client-built `tsvector`s when the word rule changes), in the same transaction.

use agentmem_core::{Error, Result};
use deadpool_postgres::Pool;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Row, Transaction};

use crate::codec::get;
use crate::config::quote_schema;
use crate::error;
use crate::search::tsvector_literal;

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: u32 = 8;

/// First key of the advisory lock (`'amem'` in ASCII), so agentmem's locks do not collide
/// with an application's own one-key advisory locks.
const LOCK_CLASS: i32 = 0x616d_656d;

/// One forward migration: its version, a description, and what it does.
struct Migration {
    version: u32,
    description: &'static str,
    step: Step,
}

/// What a migration does, inside the migrating transaction.
enum Step {
    /// Statements run as they are, with `{s}` standing for the quoted schema.
    Sql(&'static str),
    /// Recomputes every stored `tsvector` (messages, memory items) from the stored text with
    /// this build's [`tsvector_literal`]: see [`rebuild_tsvectors`].
    RebuildTsvectors,
}

impl Step {
    /// Runs the step in `tx` on the quoted schema `s`.
    async fn run(&self, tx: &Transaction<'_>, s: &str) -> Result<()> {
        match self {
            Step::Sql(sql) => tx
                .batch_execute(&sql.replace("{s}", s))
                .await
                .map_err(error::pg),
            Step::RebuildTsvectors => rebuild_tsvectors(tx, s).await,
        }
    }
}

/// Every migration, oldest first. Append new ones; never edit an applied one.
const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        description: "sessions, messages, archives, memory items",
        // Ids use the "C" collation: byte order, which is the order the trait promises
        // (`list_sessions` is ordered by id) and is also cheaper to compare.
        // Metadata is `json`, not `jsonb`: it is only ever stored and returned, never queried,
        // and `json` keeps every valid JSON text exactly (jsonb rejects `\u0000`).
        // `content_raw` holds the exact bytes only when the content contains NUL, which a
        // PostgreSQL `text` value cannot; `content` then holds it with NUL replaced.
        // `tsv` is written by the client from agentmem's own word rule, so matching is the same
        // on every backend (see search.rs).
        // There are no foreign keys: every write goes through this crate, which deletes
        // dependent rows itself, and per-row RI checks would slow batch appends.
        step: Step::Sql(
            r#"
CREATE TABLE {s}.sessions (
    id            text COLLATE "C" PRIMARY KEY,
    metadata      json        NOT NULL,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    next_seq      bigint      NOT NULL,
    message_count bigint      NOT NULL
);
CREATE INDEX sessions_updated_at ON {s}.sessions (updated_at, id);

CREATE TABLE {s}.messages (
    session_id   text COLLATE "C" NOT NULL,
    seq          bigint      NOT NULL,
    id           text        NOT NULL,
    role         text        NOT NULL,
    content      text        NOT NULL,
    content_raw  bytea,
    ts           timestamptz NOT NULL,
    tool_call_id text,
    tool_name    text,
    metadata     json,
    tsv          tsvector    NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE INDEX messages_tsv ON {s}.messages USING gin (tsv);

CREATE TABLE {s}.archives (
    session_id    text COLLATE "C" NOT NULL,
    id            text COLLATE "C" NOT NULL,
    ord           bigint GENERATED ALWAYS AS IDENTITY,
    created_at    timestamptz NOT NULL,
    message_count bigint      NOT NULL,
    PRIMARY KEY (session_id, id)
);
CREATE INDEX archives_ord ON {s}.archives (session_id, ord);

CREATE TABLE {s}.archived_messages (
    session_id   text COLLATE "C" NOT NULL,
    archive_id   text COLLATE "C" NOT NULL,
    seq          bigint      NOT NULL,
    id           text        NOT NULL,
    role         text        NOT NULL,
    content      text        NOT NULL,
    content_raw  bytea,
    ts           timestamptz NOT NULL,
    tool_call_id text,
    tool_name    text,
    metadata     json,
    PRIMARY KEY (session_id, archive_id, seq)
);

CREATE TABLE {s}.memories (
    id         text COLLATE "C" PRIMARY KEY,
    ord        bigint GENERATED ALWAYS AS IDENTITY,
    kind       text        NOT NULL,
    key        text,
    text       text        NOT NULL,
    text_raw   bytea,
    metadata   json,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    tsv        tsvector    NOT NULL
);
CREATE UNIQUE INDEX memories_kind_key ON {s}.memories (kind, key) WHERE key IS NOT NULL;
CREATE INDEX memories_created ON {s}.memories (created_at, ord);
CREATE INDEX memories_tsv ON {s}.memories USING gin (tsv);
"#,
        ),
    },
    Migration {
        version: 2,
        description: "memory item scopes and expiry",
        // `scope` is the scope's stored form (`''` for global); a key becomes unique per
        // (scope, kind) instead of per kind. Existing items become global and never expire.
        // Adding a column with a constant default rewrites no rows.
        step: Step::Sql(
            r#"
ALTER TABLE {s}.memories ADD COLUMN scope text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE {s}.memories ADD COLUMN expires_at timestamptz;
DROP INDEX {s}.memories_kind_key;
CREATE UNIQUE INDEX memories_scope_kind_key ON {s}.memories (scope, kind, key)
    WHERE key IS NOT NULL;
CREATE INDEX memories_scope ON {s}.memories (scope, created_at, ord);
CREATE INDEX memories_expires ON {s}.memories (expires_at) WHERE expires_at IS NOT NULL;
"#,
        ),
    },
    Migration {
        version: 3,
        description: "session labels (title, owner, tags) and expiry",
        // Existing sessions get no labels and never expire (adding nullable columns rewrites
        // no rows). Tags are rows of their own, one per (session, key), indexed by (key,
        // value) for lookups; owners are indexed with the id for paging in id order.
        step: Step::Sql(
            r#"
ALTER TABLE {s}.sessions ADD COLUMN title text;
ALTER TABLE {s}.sessions ADD COLUMN owner text COLLATE "C";
ALTER TABLE {s}.sessions ADD COLUMN expires_at timestamptz;
CREATE INDEX sessions_owner ON {s}.sessions (owner, id) WHERE owner IS NOT NULL;
CREATE INDEX sessions_expires ON {s}.sessions (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE {s}.session_tags (
    session_id text COLLATE "C" NOT NULL,
    key        text COLLATE "C" NOT NULL,
    value      text COLLATE "C" NOT NULL,
    PRIMARY KEY (session_id, key)
);
CREATE INDEX session_tags_key_value ON {s}.session_tags (key, value, session_id);
"#,
        ),
    },
    Migration {
        version: 4,
        description: "store properties",
        // A few named values the store keeps about itself (the encryption layer's marker).
        step: Step::Sql(
            r#"
CREATE TABLE {s}.properties (
    name  text COLLATE "C" PRIMARY KEY,
    value text NOT NULL
);
"#,
        ),
    },
    Migration {
        version: 5,
        description: "checkpoints, their channel values and pending writes",
        // Ids, namespaces and threads are `COLLATE "C"`: checkpoint ids order byte by byte.
        // Opaque values are `bytea`. `metadata` is `json`, which keeps any JSON text exactly;
        // `filter` is the same as `jsonb` for pre-filtering listings (NULL when it cannot be
        // one: `jsonb` rejects `\u0000`). `run_id` is the metadata's `run_id` string as bytes
        // (a JSON string may hold NUL, which `text` cannot). A blob is keyed by a hash of its
        // channel and version (`sql/checkpoints.rs`), so its key stays small whatever their
        // lengths. Pending writes are keyed by their checkpoint's key, task id and index,
        // with no foreign key: they may be written before their checkpoint. New tables only:
        // existing data is not touched.
        step: Step::Sql(
            r#"
CREATE TABLE {s}.checkpoints (
    thread     text COLLATE "C" NOT NULL,
    ns         text COLLATE "C" NOT NULL,
    id         text COLLATE "C" NOT NULL,
    parent     text COLLATE "C",
    body_type  text        NOT NULL,
    body       bytea       NOT NULL,
    channels   text[]      NOT NULL,
    versions   text[]      NOT NULL,
    metadata   json        NOT NULL,
    filter     jsonb,
    run_id     bytea,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (thread, ns, id)
);
CREATE INDEX checkpoints_run ON {s}.checkpoints (run_id) WHERE run_id IS NOT NULL;

CREATE TABLE {s}.checkpoint_blobs (
    thread   text COLLATE "C" NOT NULL,
    ns       text COLLATE "C" NOT NULL,
    key      bytea NOT NULL,
    channel  text  NOT NULL,
    version  text  NOT NULL,
    type_tag text,
    bytes    bytea,
    PRIMARY KEY (thread, ns, key)
);

CREATE TABLE {s}.checkpoint_writes (
    thread        text COLLATE "C" NOT NULL,
    ns            text COLLATE "C" NOT NULL,
    checkpoint_id text COLLATE "C" NOT NULL,
    task_id       text COLLATE "C" NOT NULL,
    idx           bigint NOT NULL,
    channel       text   NOT NULL,
    type_tag      text   NOT NULL,
    bytes         bytea  NOT NULL,
    task_path     text COLLATE "C" NOT NULL,
    PRIMARY KEY (thread, ns, checkpoint_id, task_id, idx)
);
"#,
        ),
    },
    Migration {
        version: 6,
        description: "the knowledge graph: entities, observations, relations",
        // Keys are SHA-256 digests computed by the client (`graph.rs`), so index entries stay
        // 32 bytes whatever the texts' lengths (a relation's three texts may take 3 KiB,
        // above PostgreSQL's btree limit). `seq` comes from `graph_seq` in the order of each
        // call, and orders entities, each entity's observations and relations when read.
        // Observations refer to their entity's seq, so a re-created entity starts empty.
        // New tables only: existing data is not touched.
        step: Step::Sql(
            r#"
CREATE SEQUENCE {s}.graph_seq;

CREATE TABLE {s}.graph_entities (
    seq         bigint PRIMARY KEY,
    name_key    bytea  NOT NULL UNIQUE,
    name        text   NOT NULL,
    entity_type text   NOT NULL
);

CREATE TABLE {s}.graph_observations (
    seq         bigint PRIMARY KEY,
    entity      bigint NOT NULL,
    content_key bytea  NOT NULL,
    content     text   NOT NULL,
    UNIQUE (entity, content_key)
);

CREATE TABLE {s}.graph_relations (
    seq           bigint PRIMARY KEY,
    key           bytea  NOT NULL UNIQUE,
    from_key      bytea  NOT NULL,
    to_key        bytea  NOT NULL,
    from_name     text   NOT NULL,
    to_name       text   NOT NULL,
    relation_type text   NOT NULL
);
CREATE INDEX graph_relations_from ON {s}.graph_relations (from_key);
CREATE INDEX graph_relations_to ON {s}.graph_relations (to_key);
"#,
        ),
    },
    Migration {
        version: 7,
        description: "embedding vectors",
        // Opaque bytes under a 32-byte key the client derives from the embedded text
        // (`vectors.rs`). New table only: existing data is not touched.
        step: Step::Sql(
            r#"
CREATE TABLE {s}.vectors (
    key  bytea PRIMARY KEY,
    data bytea NOT NULL
);
"#,
        ),
    },
    Migration {
        version: 8,
        description: "search terms are Porter stems: tsvectors recomputed",
        // Matching moved from words to their stems (`search.rs`): every stored tsvector is
        // rebuilt from its row's text, as the write path builds it now. Archived messages
        // and the other tables hold none.
        step: Step::RebuildTsvectors,
    },
];

/// Creates the schema when missing and applies every migration it lacks, once, even when
/// several processes open it at the same moment. Fails with
/// [`ErrorKind::Unsupported`](agentmem_core::ErrorKind::Unsupported) when the stored schema
/// is newer than this build.
pub(crate) async fn migrate(pool: &Pool, schema: &str) -> Result<u32> {
    let s = quote_schema(schema);
    let mut client = pool.get().await.map_err(error::pool)?;
    let pg = error::pg;
    let tx = client.transaction().await.map_err(pg)?;
    // Held until commit or rollback; keyed on the schema so unrelated stores never wait.
    // Opening statements are unnamed (typed by hand), so they work behind a pooler too.
    tx.execute_typed(
        "SELECT pg_advisory_xact_lock($1, hashtext($2))",
        &[(&LOCK_CLASS, Type::INT4), (&schema, Type::TEXT)],
    )
    .await
    .map_err(pg)?;
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {s};
         CREATE TABLE IF NOT EXISTS {s}.schema_migrations (
             version     integer PRIMARY KEY,
             description text        NOT NULL,
             applied_at  timestamptz NOT NULL DEFAULT now()
         );"
    ))
    .await
    .map_err(pg)?;
    let row = tx
        .query_typed_one(
            &format!("SELECT coalesce(max(version), 0) FROM {s}.schema_migrations"),
            &[],
        )
        .await
        .map_err(pg)?;
    let current = stored_version(row.try_get::<_, i32>(0).map_err(pg)?)?;
    if current > SCHEMA_VERSION {
        return Err(newer_schema(schema, current));
    }
    for m in MIGRATIONS.iter().filter(|m| m.version > current) {
        m.step.run(&tx, &s).await?;
        tx.execute_typed(
            &format!("INSERT INTO {s}.schema_migrations (version, description) VALUES ($1, $2)"),
            &[
                (&(m.version as i32), Type::INT4),
                (&m.description, Type::TEXT),
            ],
        )
        .await
        .map_err(pg)?;
        tracing::info!(
            schema,
            version = m.version,
            "agentmem-postgres: applied migration"
        );
    }
    tx.commit().await.map_err(pg)?;
    Ok(SCHEMA_VERSION)
}

/// The version recorded in `schema_migrations`.
pub(crate) async fn version(pool: &Pool, schema: &str) -> Result<u32> {
    let client = pool.get().await.map_err(error::pool)?;
    let row = client
        .query_typed_one(
            &format!(
                "SELECT coalesce(max(version), 0) FROM {}.schema_migrations",
                quote_schema(schema)
            ),
            &[],
        )
        .await
        .map_err(error::pg)?;
    stored_version(row.try_get::<_, i32>(0).map_err(error::pg)?)
}

fn stored_version(v: i32) -> Result<u32> {
    u32::try_from(v)
        .map_err(|_| Error::corrupt(format!("schema_migrations holds a negative version {v}")))
}

fn newer_schema(schema: &str, found: u32) -> Error {
    Error::unsupported(format!(
        "schema \"{schema}\" is at version {found}, newer than this build of agentmem-postgres \
         understands (up to {SCHEMA_VERSION}); upgrade agentmem to open it"
    ))
}

/// The most rows [`rebuild_tsvectors`] reads and writes back at once.
const REBUILD_ROWS: i64 = 1_000;
/// The most text (bytes) one batch of [`rebuild_tsvectors`] reads past its first row, so
/// 1,000 rows of megabytes each (tool outputs) are not held at once.
const REBUILD_BYTES: i64 = 16 << 20;

/// Recomputes the `tsv` of every message and memory item in the quoted schema `s` from its
/// stored text, with [`tsvector_literal`], exactly as the write path computes it: from the
/// text as given, which is `content` (`text`) unless `content_raw` (`text_raw`) holds its
/// exact bytes (see `codec::storable_text`). An encrypting layer above the store hands it
/// ciphertext, which is what is stored and what the write path indexed; so it is here.
///
/// Rows are read in primary key order in batches (keyset pagination: each batch starts past
/// the last key of the one before), and each batch is written back by one `UPDATE … FROM
/// unnest(…)`, skipping rows whose tsvector does not change.
async fn rebuild_tsvectors(tx: &Transaction<'_>, s: &str) -> Result<()> {
    // The keyset scan would miss rows a writer of an older build inserts behind it, or
    // overwrite an update made meanwhile: writers wait until the migration commits (readers
    // do not).
    tx.batch_execute(&format!(
        "LOCK TABLE {s}.messages, {s}.memories IN SHARE ROW EXCLUSIVE MODE"
    ))
    .await
    .map_err(error::pg)?;
    let messages = rebuild_messages(tx, s).await?;
    let memories = rebuild_memories(tx, s).await?;
    tracing::info!(
        schema = s,
        messages,
        memories,
        "agentmem-postgres: recomputed search tsvectors"
    );
    Ok(())
}

/// A table holding a client-built `tsvector` in `tsv`, for [`rebuild_tsvectors`].
struct Indexed {
    /// The table's name in the schema.
    table: &'static str,
    /// Its primary key columns.
    key: &'static str,
    /// The condition that a row's key is above the cursor, parameters `$3`…
    after: &'static str,
    /// The text column, and the one with the exact bytes when the text holds NUL.
    text: &'static str,
    raw: &'static str,
}

const MESSAGES_TSV: Indexed = Indexed {
    table: "messages",
    key: "session_id, seq",
    after: "(session_id, seq) > ($3, $4)",
    text: "content",
    raw: "content_raw",
};

const MEMORIES_TSV: Indexed = Indexed {
    table: "memories",
    key: "id",
    after: "id > $3",
    text: "text",
    raw: "text_raw",
};

impl Indexed {
    /// The key columns, the text and its raw bytes of one batch of rows in the quoted schema
    /// `s`: up to [`REBUILD_ROWS`] rows with keys above `cursor` (the first batch when
    /// empty), in key order, ending once they carry more than [`REBUILD_BYTES`] of text (but
    /// holding at least one row).
    async fn batch(
        &self, tx: &Transaction<'_>, s: &str, cursor: &[(&(dyn ToSql + Sync), Type)],
    ) -> Result<Vec<Row>> {
        let Indexed {
            table,
            key,
            after,
            text,
            raw,
        } = self;
        let condition = if cursor.is_empty() { "true" } else { after };
        // `octet_length` reads a value's size from its header without fetching it from
        // TOAST, so only the rows kept are read whole (by the join).
        let sql = format!(
            "WITH page AS (
                SELECT {key},
                       row_number() OVER w AS n,
                       sum(octet_length({text}) + coalesce(octet_length({raw}), 0)) OVER w AS upto
                FROM {s}.{table}
                WHERE {condition}
                WINDOW w AS (ORDER BY {key})
                ORDER BY {key}
                LIMIT $1
            )
            SELECT {key}, t.{text}, t.{raw}
            FROM page JOIN {s}.{table} t USING ({key})
            WHERE page.n = 1 OR page.upto <= $2
            ORDER BY {key}"
        );
        let mut params: Vec<(&(dyn ToSql + Sync), Type)> =
            vec![(&REBUILD_ROWS, Type::INT8), (&REBUILD_BYTES, Type::INT8)];
        params.extend_from_slice(cursor);
        tx.query_typed(&sql, &params).await.map_err(error::pg)
    }
}

/// The tsvector text of the row's text in columns `text` and `text + 1` (the text and its
/// exact bytes when it holds NUL).
fn row_tsvector(row: &Row, text: usize) -> Result<String> {
    let raw: Option<&[u8]> = get(row, text + 1)?;
    Ok(match raw {
        // Invalid UTF-8 here is damage the read path reports; the index takes what it can
        // rather than failing the migration (and so every open of the store).
        Some(bytes) => tsvector_literal(&String::from_utf8_lossy(bytes)),
        None => tsvector_literal(get(row, text)?),
    })
}

/// [`rebuild_tsvectors`] for messages, keyed by `(session_id, seq)`; returns how many rows
/// changed.
async fn rebuild_messages(tx: &Transaction<'_>, s: &str) -> Result<u64> {
    let update = format!(
        "UPDATE {s}.messages m SET tsv = u.tsv::tsvector
         FROM unnest($1::text[], $2::int8[], $3::text[]) AS u(session_id, seq, tsv)
         WHERE m.session_id = u.session_id AND m.seq = u.seq AND m.tsv <> u.tsv::tsvector"
    );
    let mut changed = 0;
    let mut last: Option<(String, i64)> = None;
    loop {
        let rows = match &last {
            None => MESSAGES_TSV.batch(tx, s, &[]).await?,
            Some((session, seq)) => {
                let cursor: [(&(dyn ToSql + Sync), Type); 2] =
                    [(session, Type::TEXT), (seq, Type::INT8)];
                MESSAGES_TSV.batch(tx, s, &cursor).await?
            }
        };
        let Some(end) = rows.last() else {
            return Ok(changed);
        };
        last = Some((get(end, 0)?, get(end, 1)?));
        let mut sessions = Vec::with_capacity(rows.len());
        let mut seqs = Vec::with_capacity(rows.len());
        let mut tsvs = Vec::with_capacity(rows.len());
        for row in &rows {
            sessions.push(get::<&str>(row, 0)?);
            seqs.push(get::<i64>(row, 1)?);
            tsvs.push(row_tsvector(row, 2)?);
        }
        changed += tx
            .execute_typed(
                &update,
                &[
                    (&sessions, Type::TEXT_ARRAY),
                    (&seqs, Type::INT8_ARRAY),
                    (&tsvs, Type::TEXT_ARRAY),
                ],
            )
            .await
            .map_err(error::pg)?;
    }
}

/// [`rebuild_tsvectors`] for memory items, keyed by `id`; returns how many rows changed.
async fn rebuild_memories(tx: &Transaction<'_>, s: &str) -> Result<u64> {
    let update = format!(
        "UPDATE {s}.memories i SET tsv = u.tsv::tsvector
         FROM unnest($1::text[], $2::text[]) AS u(id, tsv)
         WHERE i.id = u.id AND i.tsv <> u.tsv::tsvector"
    );
    let mut changed = 0;
    let mut last: Option<String> = None;
    loop {
        let rows = match &last {
            None => MEMORIES_TSV.batch(tx, s, &[]).await?,
            Some(id) => MEMORIES_TSV.batch(tx, s, &[(id, Type::TEXT)]).await?,
        };
        let Some(end) = rows.last() else {
            return Ok(changed);
        };
        last = Some(get(end, 0)?);
        let mut ids = Vec::with_capacity(rows.len());
        let mut tsvs = Vec::with_capacity(rows.len());
        for row in &rows {
            ids.push(get::<&str>(row, 0)?);
            tsvs.push(row_tsvector(row, 1)?);
        }
        changed += tx
            .execute_typed(
                &update,
                &[(&ids, Type::TEXT_ARRAY), (&tsvs, Type::TEXT_ARRAY)],
            )
            .await
            .map_err(error::pg)?;
    }
}
