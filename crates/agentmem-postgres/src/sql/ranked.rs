//! The ranked search statements shared by message and memory search: they match the OR of
//! the query terms and score each hit `Σ idf(t) · ts_rank(tsv, t, 1)` (see `search.rs`).
//!
//! Their first parameter, `$1`, is the query terms as `text[]`, each the tsquery text of one
//! term (`search::tsquery_terms`). A statement scans the hits once, keeping each one's key
//! and its `ts_rank` for each term; counts each term's document frequency in those; weighs
//! them; and fetches the best hits' rows by key.
//!
//! Each of the first [`SLOTS`] terms has a column of its own, so scoring is an expression
//! evaluated in the scan: a subquery per hit summing over an array of terms took more than
//! twice as long as the whole search without idf (measured at 100,000 messages), and its
//! estimated cost, charged per hit, puts the statement above `jit_above_cost` from about
//! 120,000 hits (the columns alone: 280,000), where compiling it costs more than running
//! it. So there are two statements per search: one for queries of up to [`SLOTS`] terms,
//! and one for more (a whole message), which scores the terms past the slots with such a
//! subquery, counting each one's frequency in the hits kept.

/// How many query terms are weighed in columns of their own (see the module docs).
pub(crate) const SLOTS: usize = 16;

/// What a ranked search reads and returns.
pub(super) struct Ranked {
    /// The `FROM` list of the searched rows (the searched table aliased), e.g.
    /// `"s".messages m JOIN "s".sessions s ON …`.
    pub from: String,
    /// The searched rows' `tsvector`, e.g. `m.tsv`.
    pub tsv: &'static str,
    /// The condition, besides matching, on the rows searched (filters, liveness): the set the
    /// document frequencies are counted in.
    pub filter: String,
    /// A scalar expression for the size of the searched set (`N`).
    pub size: String,
    /// The columns kept for each hit, taken from the searched table: its primary key and the
    /// columns of `ties`, e.g. `m.session_id, m.seq`.
    pub hit: &'static str,
    /// The searched table (schema-qualified), read again for the best hits.
    pub table: String,
    /// Its primary key columns, e.g. `session_id, seq`.
    pub key: &'static str,
    /// The columns returned before the score, from the table aliased `t`.
    pub columns: String,
    /// The ordering of hits of equal score: columns of `hit`, unqualified.
    pub ties: &'static str,
    /// The limit (a parameter).
    pub limit: &'static str,
}

/// BM25's inverse document frequency of a term in `df` of `n` rows (`n >= df`).
fn idf(df: &str, n: &str) -> String {
    format!("ln(({n} - {df} + 0.5) / ({df} + 0.5) + 1)")
}

/// `f(1), f(2), …, f(SLOTS)` joined by `sep`.
fn each_slot(sep: &str, f: impl Fn(usize) -> String) -> String {
    (1..=SLOTS).map(f).collect::<Vec<_>>().join(sep)
}

/// The statement searching `r`, for queries of up to [`SLOTS`] terms, or of more when
/// `many`: see the module docs.
pub(super) fn ranked_search(r: &Ranked, many: bool) -> String {
    let Ranked {
        from,
        tsv,
        filter,
        size,
        hit,
        table,
        key,
        columns,
        ties,
        limit,
    } = r;
    // Slot `i` holds the `i`-th term's tsquery (NULL past the last term), each hit's
    // `ts_rank` for it (NULL then, as `ts_rank` is strict), the term's document frequency
    // and its weight.
    let slot_queries = each_slot(", ", |i| {
        format!("CAST(($1::text[])[{i}] AS tsquery) AS q{i}")
    });
    let slot_ranks = each_slot(", ", |i| format!("ts_rank({tsv}, p.q{i}, 1) AS r{i}"));
    let slot_counts = each_slot(", ", |i| {
        format!("count(*) FILTER (WHERE h.r{i} > 0)::float8 AS d{i}")
    });
    let slot_dfs = each_slot(", ", |i| format!("d.d{i}"));
    let slot_weights = each_slot(", ", |i| {
        format!("{} AS w{i}", idf(&format!("d.d{i}"), "n.n"))
    });
    let mut score = each_slot(" + ", |i| format!("coalesce(w.w{i} * h.r{i}, 0)"));
    // The terms past the slots, with their document frequencies, counted one by one.
    let (rest_query, rest_tsv, rest_counts, rest_df, rest_weights) = if many {
        score.push_str(
            " + (SELECT sum(x.w * ts_rank(h.tsv, x.q, 1))
                 FROM unnest(w.rest_queries, w.rest_weights) AS x(q, w))",
        );
        (
            format!(", ($1::text[])[{}:] AS rest", SLOTS + 1),
            format!(", {tsv} AS tsv"),
            "r AS MATERIALIZED (
                SELECT CAST(t AS tsquery) AS q,
                    (SELECT count(*) FROM h WHERE h.tsv @@ CAST(t AS tsquery))::float8 AS d
                FROM p, unnest(p.rest) AS t
            ), "
            .to_owned(),
            ", (SELECT max(r.d) FROM r)",
            format!(
                ", (SELECT array_agg(r.q) FROM r) AS rest_queries,
                   (SELECT array_agg({}) FROM r) AS rest_weights",
                idf("r.d", "n.n")
            ),
        )
    } else {
        Default::default()
    };
    // The OR of every term is written inline (not taken from `p`): a custom plan then sees a
    // constant and estimates how many rows match, and a generic one still scans the GIN
    // index with it.
    format!(
        "WITH p AS MATERIALIZED (
            SELECT {slot_queries}{rest_query}
        ), h AS MATERIALIZED (
            SELECT {hit}, {slot_ranks}{rest_tsv}
            FROM {from}, p
            WHERE {tsv} @@ CAST(array_to_string($1::text[], ' | ') AS tsquery) AND {filter}
        ), d AS MATERIALIZED (
            SELECT {slot_counts} FROM h
        ), {rest_counts}n AS MATERIALIZED (
            SELECT greatest(({size})::float8, {slot_dfs}{rest_df}) AS n FROM d
        ), w AS MATERIALIZED (
            SELECT {slot_weights}{rest_weights} FROM d, n
        ), top AS MATERIALIZED (
            SELECT h.*, ({score})::float8 AS score FROM h, w
            ORDER BY score DESC, {ties}
            LIMIT {limit}
        )
        SELECT {columns}, top.score
        FROM top JOIN {table} t USING ({key})
        ORDER BY top.score DESC, {top_ties}",
        top_ties = super::prefixed("top", ties),
    )
}

/// The size of table `table` (schema-qualified, quoted) as the planner knows it
/// (`pg_class.reltuples`, kept by (auto)vacuum and analyze), or counted when it has not been
/// analyzed yet (a new table: small, until autovacuum's first analyze).
pub(super) fn table_size(table: &str) -> String {
    format!(
        "(SELECT CASE WHEN c.reltuples > 0 THEN c.reltuples::float8
                      ELSE (SELECT count(*) FROM {table})::float8 END
          FROM pg_class c WHERE c.oid = to_regclass('{table}'))"
    )
}

#[cfg(test)]
mod tests {
    /// 100 sessions of 1,000 messages, each holding `caroline said` (`{s}`: the schema).
    const COMMON_WORDS_IN_EVERY_ROW: &str = "
        INSERT INTO \"{s}\".sessions (id, metadata, created_at, updated_at, next_seq, message_count)
        SELECT 's' || i, '{}', now(), now(), 1000, 1000 FROM generate_series(1, 100) AS i;
        INSERT INTO \"{s}\".messages (session_id, seq, id, role, content, ts, tsv)
        SELECT 's' || (i % 100 + 1), i, 'm' || i, 'user', 'caroline said ' || i, now(),
               ('caroline:1 said:2 ' || i || ':3')::tsvector
        FROM generate_series(1, 100000) AS i;
        ANALYZE \"{s}\".messages; ANALYZE \"{s}\".sessions;";

    /// A search whose terms are in every one of 100,000 messages is planned below
    /// `jit_above_cost`: compiling the statement would take longer than running it. (Rows
    /// written directly: only the plan counts.)
    #[tokio::test]
    async fn searches_of_common_words_are_planned_without_jit() {
        let rows = |schema: &str| COMMON_WORDS_IN_EVERY_ROW.replace("{s}", schema);
        let Some((store, client)) = crate::sql::test_store_holding(rows).await else {
            return;
        };
        let jit_above: f64 = client
            .query_one("SELECT current_setting('jit_above_cost')::float8", &[])
            .await
            .expect("setting")
            .get(0);
        let few = vec!["'caroline'".to_owned(), "'said'".to_owned()];
        let many: Vec<String> = (0..=super::SLOTS)
            .map(|i| format!("'{}'", if i == 0 { "caroline" } else { "said" }))
            .collect();
        let (limit, at) = (20i64, agentmem_core::now());
        let search = &store.sql.search;
        let plans = crate::sql::plan_texts(
            &client,
            &[
                (&search.messages, vec![&few, &limit, &at]),
                (&search.messages_many, vec![&many, &limit, &at]),
            ],
        )
        .await;
        store.drop_schema().await.expect("drop schema");
        for plan in &plans {
            let plan: serde_json::Value = serde_json::from_str(plan).expect("json");
            let cost = plan[0]["Plan"]["Total Cost"].as_f64().expect("total cost");
            assert!(
                jit_above < 0.0 || cost < jit_above,
                "searching 100,000 matching messages costs {cost}, above jit_above_cost \
                 {jit_above}: {plan}"
            );
        }
    }
}
