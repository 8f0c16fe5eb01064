//! The statements of the knowledge graph (tables `graph_entities`, `graph_observations`,
//! `graph_relations`, schema version 6).
//!
//! Keys are SHA-256 digests computed by the client (`graph.rs`): of an entity's name
//! (`name_key`), of an observation's text (`content_key`, unique per entity) and of a
//! relation's three texts, length-prefixed (`key`), so index entries stay 32 bytes whatever
//! the texts' lengths. Every row takes its `seq` from the sequence `graph_seq` in the order
//! of the call (the order `read_graph` lists), while the rows themselves are inserted in key
//! order, so concurrent creates that share names or relations wait for each other in one
//! order and never deadlock.
//!
//! Locking (see `graph.rs` for the reasoning): whatever writes an entity's observations
//! locks its row first (`FOR NO KEY UPDATE`; a delete `FOR UPDATE`), always in `seq` order.

use tokio_postgres::types::Type;

use super::Build;
use crate::statements::Stmt;

/// Entities: names, types, name keys; their observations: entity name keys, texts, keys.
const CREATE_ENTITIES: &[Type] = &[
    Type::TEXT_ARRAY,
    Type::TEXT_ARRAY,
    Type::BYTEA_ARRAY,
    Type::BYTEA_ARRAY,
    Type::TEXT_ARRAY,
    Type::BYTEA_ARRAY,
];
/// Relations: keys, from keys, to keys, froms, tos, types.
const CREATE_RELATIONS: &[Type] = &[
    Type::BYTEA_ARRAY,
    Type::BYTEA_ARRAY,
    Type::BYTEA_ARRAY,
    Type::TEXT_ARRAY,
    Type::TEXT_ARRAY,
    Type::TEXT_ARRAY,
];
/// The distinct entity name keys; the observations: entity name keys, texts, keys.
const ADD_OBSERVATIONS: &[Type] = &[
    Type::BYTEA_ARRAY,
    Type::BYTEA_ARRAY,
    Type::TEXT_ARRAY,
    Type::BYTEA_ARRAY,
];
const BYTEA_ARRAY: &[Type] = &[Type::BYTEA_ARRAY];
const INT8_ARRAY_BYTEA_ARRAY: &[Type] = &[Type::INT8_ARRAY, Type::BYTEA_ARRAY];
const NONE: &[Type] = &[];

/// `rows` (a `SELECT` with an `ord` column, without `ORDER BY`) numbered from the graph's
/// sequence in `ord` order, as `n` with the column `seq` first. (A subquery with `ORDER BY`
/// is never merged into the one around it, so `nextval` runs in that order.)
fn numbered(s: &str, rows: &str) -> String {
    format!(
        "(SELECT nextval('{s}.graph_seq') AS seq, z.*
          FROM ({rows} ORDER BY ord) z) n"
    )
}

/// Deletes, as one statement, the relations `condition` selects, locking them in `seq`
/// order first (so two deletes sharing relations never deadlock), after the common table
/// expressions `before` (empty, or ending with a comma).
fn delete_relations_where(s: &str, before: &str, condition: &str) -> String {
    format!(
        "WITH {before} l AS (
            SELECT seq FROM {s}.graph_relations WHERE {condition} ORDER BY seq FOR UPDATE
        )
        DELETE FROM {s}.graph_relations r USING l WHERE r.seq = l.seq"
    )
}

/// The graph rows `read_graph` decodes (`graph.rs`, `graph_from_rows`): after `with`, the
/// entities `entities` (a relation with `seq`, `name`, `entity_type`), the observations of
/// `observations` (with `o` a `graph_observations`) and the relations `relations` (`r`), as
/// rows of three kinds told apart by `part`:
///
/// | part | seq | owner | a | b | c |
/// |---|---|---|---|---|---|
/// | 0 entity | its seq | | name | type | |
/// | 1 observation | its seq | its entity's seq | text | | |
/// | 2 relation | its seq | | from | to | type |
fn graph_rows(with: &str, entities: &str, observations: &str, relations: &str) -> String {
    format!(
        "{with}
         SELECT 0 AS part, e.seq, NULL::int8 AS owner, e.name AS a, e.entity_type AS b,
             NULL::text AS c
         FROM {entities} e
         UNION ALL
         SELECT 1, o.seq, o.entity, o.content, NULL, NULL FROM {observations}
         UNION ALL
         SELECT 2, r.seq, NULL, r.from_name, r.to_name, r.relation_type FROM {relations}"
    )
}

statements! {
    /// Entities, their observations and the relations between them.
    GraphSql(s, st) {
        /// Creates the entities `$1..$3` (distinct names) whose names are new, with their
        /// observations `$4..$6` (distinct per entity); returns the name keys of those created.
        // Entities are numbered in call order and inserted in key order (see the module
        // docs). A name inserted by a concurrent create makes this one wait for its commit,
        // then skip it. Observations go only to entities this statement created, which no
        // one else sees yet.
        create_entities: CREATE_ENTITIES => format!(
            "WITH e AS (
                INSERT INTO {s}.graph_entities AS g (seq, name_key, name, entity_type)
                SELECT n.seq, n.key, n.name, n.type
                FROM {entities}
                ORDER BY n.key
                ON CONFLICT (name_key) DO NOTHING
                RETURNING g.seq, g.name_key
            ), o AS (
                INSERT INTO {s}.graph_observations (seq, entity, content_key, content)
                SELECT n.seq, n.entity, n.key, n.content
                FROM {observations}
            )
            SELECT name_key FROM e",
            entities = numbered(
                s,
                "SELECT * FROM unnest($1::text[], $2::text[], $3::bytea[])
                     WITH ORDINALITY AS x(name, type, key, ord)",
            ),
            observations = numbered(
                s,
                "SELECT e.seq AS entity, y.key, y.content, y.ord
                 FROM unnest($4::bytea[], $5::text[], $6::bytea[])
                     WITH ORDINALITY AS y(entity_key, content, key, ord)
                 JOIN e ON e.name_key = y.entity_key",
            ),
        ),
        /// Creates the relations `$1..$6` (distinct) that are new; returns the keys of
        /// those created.
        create_relations: CREATE_RELATIONS => format!(
            "INSERT INTO {s}.graph_relations AS g
                (seq, key, from_key, to_key, from_name, to_name, relation_type)
            SELECT n.seq, n.key, n.from_key, n.to_key, n.from_name, n.to_name, n.type
            FROM {relations}
            ORDER BY n.key
            ON CONFLICT (key) DO NOTHING
            RETURNING g.key",
            relations = numbered(
                s,
                "SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::bytea[], $4::text[],
                     $5::text[], $6::text[])
                     WITH ORDINALITY AS x(key, from_key, to_key, from_name, to_name, type, ord)",
            ),
        ),
        /// Locks the entities of name keys `$1` (distinct) and, only when every one exists,
        /// adds the observations `$2..$4` each does not hold; returns the entities found
        /// (part 0: seq, name key) and the observations added (part 1: entity seq, key).
        // The count in the one-time filter reads every row of `e` before a row is inserted,
        // so all the locks are held (taken in seq order) before the first insert, and a
        // missing entity inserts nothing. Then the rows `e` locked are the ones of those
        // names in the snapshot, found through the name index (however many observations
        // come, never a scan of `e` per observation). The conflict check sees the latest rows, not the
        // statement's snapshot: what another writer of these entities committed while this
        // one waited for the locks is held, not added twice.
        add_observations: ADD_OBSERVATIONS => format!(
            "WITH e AS (
                SELECT seq, name_key FROM {s}.graph_entities
                WHERE name_key = ANY($1::bytea[])
                ORDER BY seq
                FOR NO KEY UPDATE
            ), o AS (
                INSERT INTO {s}.graph_observations AS g (seq, entity, content_key, content)
                SELECT n.seq, n.entity, n.key, n.content
                FROM {observations}
                ON CONFLICT (entity, content_key) DO NOTHING
                RETURNING g.entity, g.content_key
            )
            SELECT 0 AS part, seq, name_key FROM e
            UNION ALL
            SELECT 1, entity, content_key FROM o",
            observations = numbered(
                s,
                &format!(
                    "SELECT g.seq AS entity, y.key, y.content, y.ord
                     FROM unnest($2::bytea[], $3::text[], $4::bytea[])
                         WITH ORDINALITY AS y(entity_key, content, key, ord)
                     JOIN {s}.graph_entities g ON g.name_key = y.entity_key
                     WHERE (SELECT count(*) FROM e) = cardinality($1::bytea[])"
                ),
            ),
        ),
        /// Locks the entities of name keys `$1`, in seq order, until the transaction ends;
        /// returns their seqs and name keys.
        lock_entities: BYTEA_ARRAY => format!(
            "SELECT seq, name_key FROM {s}.graph_entities
             WHERE name_key = ANY($1::bytea[])
             ORDER BY seq
             FOR NO KEY UPDATE"
        ),
        /// Deletes the observations (entity seq `$1`, key `$2`) of locked entities.
        delete_observations: INT8_ARRAY_BYTEA_ARRAY => format!(
            "DELETE FROM {s}.graph_observations o
             USING unnest($1::int8[], $2::bytea[]) AS x(entity, key)
             WHERE o.entity = x.entity AND o.content_key = x.key"
        ),
        /// Deletes the entities of name keys `$1` (locking them in seq order first); returns
        /// their seqs.
        delete_entities: BYTEA_ARRAY => format!(
            "WITH l AS (
                SELECT seq FROM {s}.graph_entities
                WHERE name_key = ANY($1::bytea[])
                ORDER BY seq
                FOR UPDATE
            )
            DELETE FROM {s}.graph_entities g USING l WHERE g.seq = l.seq
            RETURNING g.seq"
        ),
        /// Deletes the observations of the deleted entities of seqs `$1` and every relation
        /// from or to a name of keys `$2`.
        // A statement after `delete_entities`, so its snapshot holds every observation
        // committed by a writer that held an entity's lock before the delete took it.
        delete_entity_links: INT8_ARRAY_BYTEA_ARRAY => delete_relations_where(
            s,
            &format!(
                "o AS (
                    DELETE FROM {s}.graph_observations WHERE entity = ANY($1::int8[])
                ),"
            ),
            "from_key = ANY($2::bytea[]) OR to_key = ANY($2::bytea[])",
        ),
        /// Deletes the relations of keys `$1`.
        delete_relations: BYTEA_ARRAY => delete_relations_where(s, "", "key = ANY($1::bytea[])"),
        /// The whole graph, as graph rows.
        read_all: NONE => graph_rows(
            "",
            &format!("{s}.graph_entities"),
            &format!("{s}.graph_observations o"),
            &format!("{s}.graph_relations r"),
        ),
        /// The entities of name keys `$1` with their observations and the relations from or
        /// to one of them, as graph rows.
        read_named: BYTEA_ARRAY => graph_rows(
            &format!(
                "WITH f AS (
                    SELECT seq, name_key, name, entity_type FROM {s}.graph_entities
                    WHERE name_key = ANY($1::bytea[])
                )"
            ),
            "f",
            &format!("f JOIN {s}.graph_observations o ON o.entity = f.seq"),
            &format!(
                "{s}.graph_relations r
                 WHERE r.from_key = ANY(ARRAY(SELECT name_key FROM f))
                     OR r.to_key = ANY(ARRAY(SELECT name_key FROM f))"
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use agentmem_core::{Entity, GraphQuery, GraphStore, Relation};
    use tokio_postgres::types::ToSql;

    use crate::statements::Stmt;

    /// SHA-256 of `name`'s UTF-8 bytes in SQL: the key `graph.rs` computes.
    fn key(name: &str) -> String {
        format!("sha256(convert_to({name}, 'UTF8'))")
    }

    /// With 20,000 entities, observations and relations, the statements that touch a few of
    /// them walk indexes: a write's cost does not grow with the graph.
    #[tokio::test]
    async fn writes_and_open_walk_indexes() {
        let Some((store, client)) = crate::sql::test_store_holding(|schema| {
            format!(
                "INSERT INTO \"{schema}\".graph_entities (seq, name_key, name, entity_type)
                 SELECT i, {name_key}, 'e' || i, 't' FROM generate_series(1, 20000) i;
                 INSERT INTO \"{schema}\".graph_observations (seq, entity, content_key, content)
                 SELECT 20000 + i, i, {content_key}, 'o' || i FROM generate_series(1, 20000) i;
                 INSERT INTO \"{schema}\".graph_relations
                     (seq, key, from_key, to_key, from_name, to_name, relation_type)
                 SELECT 40000 + i, {relation_key}, {name_key}, {to_key}, 'e' || i,
                     'e' || (i % 20000 + 1), 'r'
                 FROM generate_series(1, 20000) i;
                 SELECT setval('\"{schema}\".graph_seq', 60000);
                 ANALYZE \"{schema}\".graph_entities; ANALYZE \"{schema}\".graph_observations;
                 ANALYZE \"{schema}\".graph_relations",
                name_key = key("'e' || i"),
                content_key = key("'o' || i"),
                relation_key = key("'e' || i || '>r'"),
                to_key = key("'e' || (i % 20000 + 1)"),
            )
        })
        .await
        else {
            return;
        };
        let sql = &store.sql.graph;
        let keys: Vec<Vec<u8>> = vec![crate::graph::text_key("e7")];
        let texts = vec!["new"];
        let seqs = vec![7i64];
        let plans: [(&Stmt, Vec<&(dyn ToSql + Sync)>); 6] = [
            (&sql.read_named, vec![&keys]),
            (&sql.add_observations, vec![&keys, &keys, &texts, &keys]),
            (&sql.lock_entities, vec![&keys]),
            (&sql.delete_observations, vec![&seqs, &keys]),
            (&sql.delete_entities, vec![&keys]),
            (&sql.delete_entity_links, vec![&seqs, &keys]),
        ];
        let texts = crate::sql::plan_texts(&client, &plans).await;
        let opened = store.read_graph(&GraphQuery::Open(vec!["e7".into()])).await;
        store.drop_schema().await.expect("drop schema");
        let opened = opened.expect("open");
        assert_eq!(
            opened.entities,
            [Entity::new("e7", "t").with_observations(["o7"])]
        );
        assert_eq!(
            opened.relations,
            [
                Relation::new("e6", "e7", "r"),
                Relation::new("e7", "e8", "r")
            ]
        );
        for text in texts {
            assert!(!text.contains("Seq Scan"), "{text}");
        }
    }
}
