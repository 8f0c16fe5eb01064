//! Every statement a store runs, built once per store with its schema name.
//!
//! The quoted, validated schema is the only thing ever interpolated; every value travels as
//! a bind parameter, of the type given here. Statements are prepared once per pooled
//! connection through deadpool-postgres' statement cache (keyed by the text and types, so
//! stores in different schemas sharing one pool never mix them up), or sent unnamed every
//! time behind a pooler (see [`Stmt`]).

/// Declares a struct of statements and its `new(s, st)`: each statement with its doc, the
/// types of its parameters and its text (an expression that may use the quoted schema `s`),
/// built by `st`. Fields that are not one statement go in `also`, with their type and value.
macro_rules! statements {
    (
        $(#[$meta:meta])*
        $name:ident($s:ident, $st:ident) {
            $( $(#[$doc:meta])* $field:ident: $types:expr => $sql:expr, )*
        }
        $( also { $( $(#[$also_doc:meta])* $also:ident: $also_ty:ty = $also_value:expr, )* } )?
    ) => {
        $(#[$meta])*
        #[derive(Debug)]
        pub(crate) struct $name {
            $( $(#[$doc])* pub(crate) $field: Stmt, )*
            $($( $(#[$also_doc])* pub(crate) $also: $also_ty, )*)?
        }

        impl $name {
            /// The statements for the quoted schema `s`, each built by `st`.
            pub(super) fn new($s: &str, $st: &Build) -> Self {
                $name {
                    $( $field: $st($sql, $types), )*
                    $($( $also: $also_value, )*)?
                }
            }
        }
    };
}

/// The parameter types `$head`, then those of the eight message arrays (`MessageColumns`'
/// `message_arrays`: ids, roles, contents, raw contents, times, tool call ids, tool names,
/// metadata), then `$tail`.
macro_rules! with_message_arrays {
    ([$($head:expr),*], [$($tail:expr),*]) => {
        &[
            $($head,)*
            Type::TEXT_ARRAY,
            Type::TEXT_ARRAY,
            Type::TEXT_ARRAY,
            Type::BYTEA_ARRAY,
            Type::TIMESTAMPTZ_ARRAY,
            Type::TEXT_ARRAY,
            Type::TEXT_ARRAY,
            Type::JSON_ARRAY,
            $($tail,)*
        ]
    };
}

pub(crate) mod checkpoints;
pub(crate) mod graph;
mod memories;
mod ranked;
mod sessions;
mod vectors;

use tokio_postgres::types::Type;

use self::checkpoints::CheckpointSql;
use self::graph::GraphSql;
use self::memories::MemorySql;
use self::sessions::{ArchiveSql, LifecycleSql, RetentionSql, SearchSql, SessionSql};
use self::vectors::VectorSql;
use crate::statements::Stmt;

pub(crate) use self::ranked::SLOTS;

/// The statements of one store, by area.
#[derive(Debug)]
pub(crate) struct Sql {
    /// Writing, loading, listing and deleting sessions.
    pub(crate) sessions: SessionSql,
    /// Compaction and archives.
    pub(crate) archives: ArchiveSql,
    /// Fork, rewind, labels and finding sessions.
    pub(crate) lifecycle: LifecycleSql,
    /// Searching messages.
    pub(crate) search: SearchSql,
    /// Memory items.
    pub(crate) memories: MemorySql,
    /// Purging sessions and memory items.
    pub(crate) retention: RetentionSql,
    /// Checkpoints, their channel values and pending writes.
    pub(crate) checkpoints: CheckpointSql,
    /// The knowledge graph.
    pub(crate) graph: GraphSql,
    /// Embedding vectors.
    pub(crate) vectors: VectorSql,
}

impl Sql {
    /// The statements for the quoted schema `s`, prepared once per connection when `named`.
    pub(crate) fn new(s: &str, named: bool) -> Self {
        let st = move |sql: String, types: &'static [Type]| Stmt::new(sql, types, named);
        Sql {
            sessions: SessionSql::new(s, &st),
            archives: ArchiveSql::new(s, &st),
            lifecycle: LifecycleSql::new(s, &st),
            search: SearchSql::new(s, &st),
            memories: MemorySql::new(s, &st),
            retention: RetentionSql::new(s, &st),
            checkpoints: CheckpointSql::new(s, &st),
            graph: GraphSql::new(s, &st),
            vectors: VectorSql::new(s, &st),
        }
    }
}

/// `types` without the last one.
const fn without_last(types: &'static [Type]) -> &'static [Type] {
    types.split_at(types.len() - 1).0
}

/// Builds one statement from its text and parameter types (named or not, as the store's).
type Build = dyn Fn(String, &'static [Type]) -> Stmt;

/// The parameters of `save_session`: those of the append-shaped statements
/// (`MessageColumns::params`: session id, time, count, then the nine message arrays of
/// `UNNEST_MESSAGES`, the tsvectors last), then the session's metadata.
const MESSAGES_AND_METADATA: &[Type] = with_message_arrays!(
    [Type::TEXT, Type::TIMESTAMPTZ, Type::INT8],
    [Type::TEXT_ARRAY, Type::JSON]
);
/// The parameters of the append-shaped statements: `MESSAGES_AND_METADATA` without the
/// metadata.
const MESSAGES: &[Type] = without_last(MESSAGES_AND_METADATA);
const TEXT: &[Type] = &[Type::TEXT];
const TEXT_TEXT: &[Type] = &[Type::TEXT, Type::TEXT];
const TEXT_TIME: &[Type] = &[Type::TEXT, Type::TIMESTAMPTZ];
const TEXT_ARRAY: &[Type] = &[Type::TEXT_ARRAY];
const TIME: &[Type] = &[Type::TIMESTAMPTZ];
const TEXT_INT8_TIME: &[Type] = &[Type::TEXT, Type::INT8, Type::TIMESTAMPTZ];

/// The unnest that turns the nine message arrays (`$4`..`$12`) into rows `m`, numbered
/// from 1 in `m.ord`.
const UNNEST_MESSAGES: &str = "unnest($4::text[], $5::text[], $6::text[], $7::bytea[], \
     $8::timestamptz[], $9::text[], $10::text[], $11::json[], $12::text[]) \
     WITH ORDINALITY AS m(id, role, content, content_raw, ts, tool_call_id, tool_name, metadata, tsv, ord)";

const INSERT_MESSAGE_COLUMNS: &str =
    "(session_id, seq, id, role, content, content_raw, ts, tool_call_id, tool_name, metadata, tsv)";

const SELECT_NEW_MESSAGE: &str = "SELECT $1, s.first_seq + m.ord - 1, m.id, m.role, m.content, \
     m.content_raw, m.ts, m.tool_call_id, m.tool_name, m.metadata, m.tsv::tsvector";

/// The columns of a session summary, in the order `session_info` reads them, for sessions
/// `s`: id, count, times, title, owner, expiry, then `tags`: the tag keys and their values (in
/// key order), as `sessions::tags_per_row` or `sessions::TAGS_JOINED` give them.
fn session_info_columns(tags: &str) -> String {
    format!(
        "s.id, s.message_count, s.created_at, s.updated_at, s.title, s.owner, s.expires_at, {tags}"
    )
}

/// The condition that session `s` has not expired at `$n`.
fn live_session(n: usize) -> String {
    format!("(s.expires_at IS NULL OR s.expires_at > ${n})")
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

/// A store in a fresh schema of the test server (`DATABASE_URL`), with the schema's name, for
/// the plan tests here (each drops its schema); `None` when the server is unavailable and not
/// required.
#[cfg(test)]
pub(crate) async fn test_store() -> Option<(agentmem_core::Layered<crate::PostgresStore>, String)> {
    let url = agentmem_testkit::env_url("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test");
    let schema = agentmem_testkit::unique_namespace("amtest");
    let sep = if url.contains('?') { '&' } else { '?' };
    match crate::PostgresStore::connect(&format!("{url}{sep}schema={schema}")).await {
        Ok(store) => Some((store, schema)),
        Err(e) => agentmem_testkit::service_unavailable("postgres", &url, &e),
    }
}

/// [`test_store`] holding what the SQL `rows` (given the schema's name) writes directly, for
/// the plan tests (only the plans count), with a connection of the store's pool.
#[cfg(test)]
pub(crate) async fn test_store_holding(
    rows: impl FnOnce(&str) -> String,
) -> Option<(
    agentmem_core::Layered<crate::PostgresStore>,
    deadpool_postgres::Object,
)> {
    let (store, schema) = test_store().await?;
    let client = store.pool().get().await.expect("connection");
    client
        .batch_execute(&rows(&schema))
        .await
        .expect("rows written directly");
    Some((store, client))
}

/// The plans (`EXPLAIN (FORMAT JSON)`, as text) of statements run with the parameters
/// paired with them.
#[cfg(test)]
pub(crate) async fn plan_texts(
    client: &tokio_postgres::Client,
    plans: &[(
        &crate::statements::Stmt,
        Vec<&(dyn tokio_postgres::types::ToSql + Sync)>,
    )],
) -> Vec<String> {
    let mut texts = Vec::new();
    for (st, params) in plans {
        let explain = format!("EXPLAIN (FORMAT JSON) {}", st.text());
        let plan: serde_json::Value = client
            .query_one(&explain, params)
            .await
            .expect("explain")
            .get(0);
        texts.push(plan.to_string());
    }
    texts
}

#[cfg(test)]
mod tests {
    use agentmem_core::{Message, SessionId, SessionStore};

    /// The load of a long session and the listing of many sessions must be planned as cheap as
    /// they are: per-row subqueries in the select list are costed once per row, and above
    /// `jit_above_cost` the server compiles the statement with LLVM on every execution (~370 ms
    /// for a 100,000-message load).
    #[tokio::test]
    async fn loads_and_listings_are_planned_without_subplans_or_jit() {
        let Some((store, schema)) = crate::sql::test_store().await else {
            return;
        };
        let session = SessionId::new("long").expect("id");
        let batch: Vec<Message> = (0..10_000)
            .map(|i| Message::user(format!("m{i}")))
            .collect();
        store.append(&session, &batch).await.expect("append");
        let client = store.pool().get().await.expect("connection");
        client
            .batch_execute(&format!(
                "ANALYZE \"{schema}\".messages; ANALYZE \"{schema}\".sessions"
            ))
            .await
            .expect("analyze");
        let jit_above: f64 = client
            .query_one("SELECT current_setting('jit_above_cost')::float8", &[])
            .await
            .expect("setting")
            .get(0);
        let explain = format!("EXPLAIN (FORMAT JSON) {}", store.sql.sessions.load.text());
        let (id, all, at) = (session.as_str(), None::<i64>, agentmem_core::now());
        let plan: serde_json::Value = client
            .query_one(&explain, &[&id, &all, &at])
            .await
            .expect("explain")
            .get(0);
        let cost = plan[0]["Plan"]["Total Cost"].as_f64().expect("total cost");
        let text = plan.to_string();
        assert!(!text.contains("SubPlan"), "{text}");
        assert!(
            jit_above < 0.0 || cost < jit_above,
            "a 10,000-message load costs {cost}, above jit_above_cost {jit_above}: {text}"
        );

        // The same for listing 20,000 sessions (rows written directly: only the plan counts).
        client
            .batch_execute(&format!(
                "INSERT INTO \"{schema}\".sessions
                     (id, metadata, created_at, updated_at, next_seq, message_count)
                 SELECT 'listed-' || i, '{{}}', now(), now(), 1, 0
                 FROM generate_series(1, 20000) AS i;
                 INSERT INTO \"{schema}\".session_tags (session_id, key, value)
                 SELECT 'listed-' || i, 'k', 'v' FROM generate_series(1, 20000, 3) AS i;
                 ANALYZE \"{schema}\".sessions; ANALYZE \"{schema}\".session_tags"
            ))
            .await
            .expect("many sessions");
        let explain = format!(
            "EXPLAIN (FORMAT JSON) {}",
            store.sql.sessions.list_sessions.text()
        );
        let plan: serde_json::Value = client
            .query_one(&explain, &[&at])
            .await
            .expect("explain list")
            .get(0);
        let cost = plan[0]["Plan"]["Total Cost"].as_f64().expect("total cost");
        let text = plan.to_string();
        store.drop_schema().await.expect("drop schema");
        assert!(!text.contains("SubPlan"), "{text}");
        assert!(
            jit_above < 0.0 || cost < jit_above,
            "listing 20,000 sessions costs {cost}, above jit_above_cost {jit_above}: {text}"
        );
    }
}
