//! [`GraphStore`] for [`PostgresStore`]: the knowledge graph in three tables (`schema.rs`,
//! version 6), with the statements of `sql/graph.rs`.
//!
//! Each method is one transaction, most of them one statement:
//! - `create_entities` and `create_relations` insert what the client has already made
//!   distinct within the call, `ON CONFLICT DO NOTHING` on the name's (or relation's) key:
//!   of concurrent creates of one name, one inserts and the others wait for its commit and
//!   skip it. Rows are inserted in key order, so creates sharing names never deadlock.
//! - An entity's observations are written only under its row lock: `add_observations` and
//!   `delete_observations` take it `FOR NO KEY UPDATE`, `delete_entities` `FOR UPDATE`, each
//!   in seq order. `add_observations` is one statement: it locks every named entity, and
//!   inserts only when all exist, so a missing one applies nothing, also when a delete races
//!   it. The deletes lock in a statement of their own and delete in a later one, whose
//!   snapshot holds what the writers they waited for committed (a statement's snapshot is
//!   taken before it waits for a lock).
//! - `read_graph` is one statement (one snapshot) returning entities, observations and
//!   relations as rows of three kinds; the query is applied here, with the core's matching
//!   rule (`KnowledgeGraph::select`). `Open` reads only the named entities and the relations
//!   touching them (through the relation ends' indexes).

use std::collections::{HashMap, HashSet};

use agentmem_core::graph::entity_not_found;
use agentmem_core::{
    AddedObservations, Entity, Error, GraphQuery, GraphStore, KnowledgeGraph, ObservationAddition,
    ObservationDeletion, Relation, Result,
};
use async_trait::async_trait;
use ring::digest::{Context, SHA256};
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use crate::codec::get;
use crate::statements::{Exec, Stmt};
use crate::store::{PostgresStore, READ_RETRIES};

/// A SHA-256 digest: the key of a name, an observation or a relation.
type Key = Vec<u8>;

/// The key of a name (or of an observation's text).
pub(crate) fn text_key(text: &str) -> Key {
    ring::digest::digest(&SHA256, text.as_bytes())
        .as_ref()
        .to_vec()
}

/// The key of a relation: its ends length-prefixed, so `("ab", "c")` and `("a", "bc")`
/// differ, then its type.
fn relation_key(relation: &Relation) -> Key {
    let mut digest = Context::new(&SHA256);
    for end in [&relation.from, &relation.to] {
        // Names are at most 1 KiB (the validate layer); a longer one still gets a distinct
        // prefix.
        let len = u64::try_from(end.len()).unwrap_or(u64::MAX);
        digest.update(&len.to_be_bytes());
        digest.update(end.as_bytes());
    }
    digest.update(relation.relation_type.as_bytes());
    digest.finish().as_ref().to_vec()
}

/// The texts of `texts` not in `seen`, each once, in order; they are added to `seen`.
fn fresh<'a>(texts: &'a [String], seen: &mut HashSet<&'a str>) -> Vec<&'a str> {
    texts
        .iter()
        .map(String::as_str)
        .filter(|t| seen.insert(t))
        .collect()
}

/// Observations as statement parameters: each one's entity (by name key), text and key.
#[derive(Default)]
struct ObservationColumns<'a> {
    entities: Vec<Key>,
    contents: Vec<&'a str>,
    keys: Vec<Key>,
}

impl<'a> ObservationColumns<'a> {
    /// Appends `content` of the entity of name key `entity`; returns its key.
    fn push(&mut self, entity: &Key, content: &'a str) -> Key {
        let key = text_key(content);
        self.entities.push(entity.clone());
        self.contents.push(content);
        self.keys.push(key.clone());
        key
    }
}

/// The entities of a call, distinct by name (the first wins), each with its observations
/// made distinct.
fn distinct_entities(entities: &[Entity]) -> Vec<(Key, Entity)> {
    let mut names = HashSet::new();
    entities
        .iter()
        .filter(|e| names.insert(e.name.as_str()))
        .map(|e| {
            let observations = fresh(&e.observations, &mut HashSet::new());
            let entity = Entity {
                name: e.name.clone(),
                entity_type: e.entity_type.clone(),
                observations: observations.into_iter().map(str::to_owned).collect(),
            };
            (text_key(&e.name), entity)
        })
        .collect()
}

/// A row of `add_observations`: its part, a seq and a key.
fn part_row(row: &Row) -> Result<(i32, i64, Key)> {
    Ok((get(row, 0)?, get(row, 1)?, get(row, 2)?))
}

/// The graph in the rows of `sql/graph.rs`' `graph_rows`, in seq order whatever order the
/// rows came in. Observations of an entity not among the rows are left out.
fn graph_from_rows(rows: &[Row]) -> Result<KnowledgeGraph> {
    let mut entities: Vec<(i64, Entity)> = Vec::new();
    let mut observations: Vec<(i64, i64, String)> = Vec::new();
    let mut relations: Vec<(i64, Relation)> = Vec::new();
    for row in rows {
        let (part, seq): (i32, i64) = (get(row, 0)?, get(row, 1)?);
        match part {
            0 => entities.push((
                seq,
                Entity::new(get::<String>(row, 3)?, get::<String>(row, 4)?),
            )),
            1 => observations.push((seq, get(row, 2)?, get(row, 3)?)),
            2 => relations.push((
                seq,
                Relation::new(
                    get::<String>(row, 3)?,
                    get::<String>(row, 4)?,
                    get::<String>(row, 5)?,
                ),
            )),
            other => return Err(Error::corrupt(format!("graph row of unknown part {other}"))),
        }
    }
    entities.sort_unstable_by_key(|(seq, _)| *seq);
    observations.sort_unstable_by_key(|(seq, _, _)| *seq);
    relations.sort_unstable_by_key(|(seq, _)| *seq);
    let index: HashMap<i64, usize> = entities
        .iter()
        .enumerate()
        .map(|(i, (seq, _))| (*seq, i))
        .collect();
    for (_, entity, content) in observations {
        if let Some(&i) = index.get(&entity) {
            entities[i].1.observations.push(content);
        }
    }
    Ok(KnowledgeGraph {
        entities: entities.into_iter().map(|(_, e)| e).collect(),
        relations: relations.into_iter().map(|(_, r)| r).collect(),
    })
}

/// The observations of one `add_observations` call: per addition, the texts it may add
/// (new within the call for its entity) with their keys, and all of them as columns.
struct Additions<'a> {
    /// The distinct names' keys.
    names: Vec<Key>,
    /// Each name's key.
    key_of: HashMap<&'a str, Key>,
    /// Per addition: its texts with their keys.
    candidates: Vec<Vec<(&'a str, Key)>>,
    /// Every candidate, as statement parameters.
    columns: ObservationColumns<'a>,
}

impl<'a> Additions<'a> {
    /// Lays `additions` out.
    fn new(additions: &'a [ObservationAddition]) -> Self {
        let mut a = Additions {
            names: Vec::new(),
            key_of: HashMap::new(),
            candidates: Vec::with_capacity(additions.len()),
            columns: ObservationColumns::default(),
        };
        // Two additions for one entity: the second adds only what the first did not.
        let mut seen: HashMap<&str, HashSet<&str>> = HashMap::new();
        for addition in additions {
            let name = addition.entity_name.as_str();
            let key = a.key_of.entry(name).or_insert_with(|| {
                let key = text_key(name);
                a.names.push(key.clone());
                key
            });
            let texts = fresh(&addition.contents, seen.entry(name).or_default());
            let candidates = texts
                .into_iter()
                .map(|text| (text, a.columns.push(key, text)))
                .collect();
            a.candidates.push(candidates);
        }
        a
    }
}

impl PostgresStore {
    /// Runs a graph statement that writes, returning its rows (never retried).
    async fn graph_write(&self, st: &Stmt, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        run!(self, 0, |client| async {
            client.query_st(st, params).await
        })
    }

    /// Runs a create statement (never retried), returning the keys of what it created.
    async fn graph_create(
        &self, st: &Stmt, params: &[&(dyn ToSql + Sync)],
    ) -> Result<HashSet<Key>> {
        let rows = self.graph_write(st, params).await?;
        rows.iter().map(|row| get::<Key>(row, 0)).collect()
    }
}

#[async_trait]
impl GraphStore for PostgresStore {
    async fn create_entities(&self, entities: &[Entity]) -> Result<Vec<Entity>> {
        if entities.is_empty() {
            return Ok(Vec::new());
        }
        let distinct = distinct_entities(entities);
        let names: Vec<&str> = distinct.iter().map(|(_, e)| e.name.as_str()).collect();
        let types: Vec<&str> = distinct
            .iter()
            .map(|(_, e)| e.entity_type.as_str())
            .collect();
        let keys: Vec<&Key> = distinct.iter().map(|(k, _)| k).collect();
        let mut o = ObservationColumns::default();
        for (key, entity) in &distinct {
            for text in &entity.observations {
                o.push(key, text);
            }
        }
        let params: [&(dyn ToSql + Sync); 6] =
            [&names, &types, &keys, &o.entities, &o.contents, &o.keys];
        let created = self
            .graph_create(&self.sql.graph.create_entities, &params)
            .await?;
        Ok(distinct
            .into_iter()
            .filter(|(key, _)| created.contains(key))
            .map(|(_, e)| e)
            .collect())
    }

    async fn create_relations(&self, relations: &[Relation]) -> Result<Vec<Relation>> {
        let mut seen = HashSet::new();
        let distinct: Vec<&Relation> = relations.iter().filter(|r| seen.insert(*r)).collect();
        if distinct.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<Key> = distinct.iter().map(|r| relation_key(r)).collect();
        let froms: Vec<&str> = distinct.iter().map(|r| r.from.as_str()).collect();
        let tos: Vec<&str> = distinct.iter().map(|r| r.to.as_str()).collect();
        let types: Vec<&str> = distinct.iter().map(|r| r.relation_type.as_str()).collect();
        let from_keys: Vec<Key> = froms.iter().map(|n| text_key(n)).collect();
        let to_keys: Vec<Key> = tos.iter().map(|n| text_key(n)).collect();
        let params: [&(dyn ToSql + Sync); 6] = [&keys, &from_keys, &to_keys, &froms, &tos, &types];
        let created = self
            .graph_create(&self.sql.graph.create_relations, &params)
            .await?;
        Ok(distinct
            .into_iter()
            .zip(keys)
            .filter(|(_, key)| created.contains(key))
            .map(|(r, _)| r.clone())
            .collect())
    }

    async fn add_observations(
        &self, additions: &[ObservationAddition],
    ) -> Result<Vec<AddedObservations>> {
        if additions.is_empty() {
            return Ok(Vec::new());
        }
        let a = Additions::new(additions);
        let c = &a.columns;
        let params: [&(dyn ToSql + Sync); 4] = [&a.names, &c.entities, &c.contents, &c.keys];
        let rows = self
            .graph_write(&self.sql.graph.add_observations, &params)
            .await?;
        let mut found: HashMap<Key, i64> = HashMap::new();
        let mut added: HashSet<(i64, Key)> = HashSet::new();
        for row in &rows {
            let (part, seq, key) = part_row(row)?;
            if part == 0 {
                found.insert(key, seq);
            } else {
                added.insert((seq, key));
            }
        }
        let mut results = Vec::with_capacity(additions.len());
        for (addition, candidates) in additions.iter().zip(a.candidates) {
            let name = addition.entity_name.as_str();
            let Some(&entity) = a.key_of.get(name).and_then(|k| found.get(k)) else {
                // The statement inserted nothing: the first missing entity in call order.
                return Err(entity_not_found(name));
            };
            let added_observations = candidates
                .into_iter()
                .filter(|(_, key)| added.contains(&(entity, key.clone())))
                .map(|(text, _)| text.to_owned())
                .collect();
            results.push(AddedObservations {
                entity_name: addition.entity_name.clone(),
                added_observations,
            });
        }
        Ok(results)
    }

    async fn delete_entities(&self, names: &[String]) -> Result<u64> {
        if names.is_empty() {
            return Ok(0);
        }
        let keys: Vec<Key> = names.iter().map(|n| text_key(n)).collect();
        let sql = &self.sql.graph;
        let deleted = run!(self, 0, |client| async {
            let tx = client.transaction().await?;
            let seqs: Vec<i64> = tx.column_st(&sql.delete_entities, &[&keys]).await?;
            tx.execute_st(&sql.delete_entity_links, &[&seqs, &keys])
                .await?;
            tx.commit().await?;
            Ok(seqs.len())
        })?;
        Ok(deleted as u64)
    }

    async fn delete_observations(&self, deletions: &[ObservationDeletion]) -> Result<u64> {
        let mut wanted: Vec<(Key, Key)> = Vec::new();
        let mut seen = HashSet::new();
        for d in deletions {
            let entity = text_key(&d.entity_name);
            for text in d
                .observations
                .iter()
                .filter(|t| seen.insert((&d.entity_name, *t)))
            {
                wanted.push((entity.clone(), text_key(text)));
            }
        }
        if wanted.is_empty() {
            return Ok(0);
        }
        let mut names: Vec<&Key> = wanted.iter().map(|(e, _)| e).collect();
        names.sort_unstable();
        names.dedup();
        let sql = &self.sql.graph;
        let deleted = run!(self, 0, |client| async {
            let tx = client.transaction().await?;
            let mut seq_of: HashMap<Key, i64> = HashMap::new();
            for row in tx.query_st(&sql.lock_entities, &[&names]).await? {
                seq_of.insert(row.try_get(1)?, row.try_get(0)?);
            }
            let (entities, keys): (Vec<i64>, Vec<&Key>) = wanted
                .iter()
                .filter_map(|(e, k)| seq_of.get(e).map(|seq| (*seq, k)))
                .unzip();
            let deleted = if entities.is_empty() {
                0
            } else {
                tx.execute_st(&sql.delete_observations, &[&entities, &keys])
                    .await?
            };
            tx.commit().await?;
            Ok(deleted)
        })?;
        Ok(deleted)
    }

    async fn delete_relations(&self, relations: &[Relation]) -> Result<u64> {
        if relations.is_empty() {
            return Ok(0);
        }
        let keys: Vec<Key> = relations.iter().map(relation_key).collect();
        run!(self, 0, |client| async {
            client
                .execute_st(&self.sql.graph.delete_relations, &[&keys])
                .await
        })
    }

    async fn read_graph(&self, query: &GraphQuery) -> Result<KnowledgeGraph> {
        let sql = &self.sql.graph;
        let rows = match query {
            GraphQuery::Open(names) if names.is_empty() => return Ok(KnowledgeGraph::default()),
            GraphQuery::Open(names) => {
                let keys: Vec<Key> = names.iter().map(|n| text_key(n)).collect();
                run!(self, READ_RETRIES, |client| async {
                    client.query_st(&sql.read_named, &[&keys]).await
                })?
            }
            GraphQuery::All | GraphQuery::Search(_) => run!(self, READ_RETRIES, |client| async {
                client.query_st(&sql.read_all, &[]).await
            })?,
        };
        Ok(graph_from_rows(&rows)?.select(query))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relation_keys_keep_the_ends_apart() {
        let a = relation_key(&Relation::new("ab", "c", "t"));
        let b = relation_key(&Relation::new("a", "bc", "t"));
        let c = relation_key(&Relation::new("a", "b", "ct"));
        assert_ne!(a, b);
        assert_ne!(b, c);
        assert_eq!(a.len(), 32);
    }

    #[test]
    fn additions_skip_what_an_earlier_one_of_the_call_adds() {
        let additions = [
            ObservationAddition {
                entity_name: "A".into(),
                contents: vec!["x".into(), "y".into(), "x".into()],
            },
            ObservationAddition {
                entity_name: "A".into(),
                contents: vec!["y".into(), "z".into()],
            },
        ];
        let a = Additions::new(&additions);
        let texts: Vec<Vec<&str>> = a
            .candidates
            .iter()
            .map(|c| c.iter().map(|(t, _)| *t).collect())
            .collect();
        assert_eq!(texts, [vec!["x", "y"], vec!["z"]]);
        assert_eq!(a.names.len(), 1);
        assert_eq!(a.columns.contents, ["x", "y", "z"]);
    }
}
