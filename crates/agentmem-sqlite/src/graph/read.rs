//! Reading the graph, from one snapshot (a deferred transaction).
//!
//! The whole graph is three scans in row id order. A search scans the entities and their
//! observations and keeps those [`GraphQuery::entity_filter`] accepts (the matching is Rust's,
//! Unicode lowercase); opening names looks up only those entities. The relations touching the
//! entities kept are then looked up by name on the relation indexes, or, when many entities
//! are kept, found by one scan of the relations.

use std::collections::{BTreeMap, HashMap, HashSet};

use agentmem_core::{Entity, GraphQuery, KnowledgeGraph, Relation};
use rusqlite::{Connection, OptionalExtension, Row};

use crate::error::SqlResult;
use crate::tx::Tx;

/// Above this many entities kept, the relations touching them are found by one scan of the
/// relations rather than by two index lookups per entity.
const MOST_RELATION_LOOKUPS: usize = 512;

/// One entity's observations, in the order added (by the unique key's index, then sorted).
pub(super) const OBSERVATIONS_OF: &str =
    "SELECT content FROM agentmem_graph_observations WHERE entity_id = ?1 ORDER BY id";
/// Every relation, in creation order.
pub(super) const ALL_RELATIONS: &str =
    "SELECT id, from_name, to_name, relation_type FROM agentmem_graph_relations ORDER BY id";
/// The relations from one name (by the unique key's index; the caller orders them).
pub(super) const RELATIONS_FROM: &str =
    "SELECT id, from_name, to_name, relation_type FROM agentmem_graph_relations
     WHERE from_name = ?1";
/// The relations to one name (by `agentmem_graph_relations_to`; the caller orders them).
pub(super) const RELATIONS_TO: &str =
    "SELECT id, from_name, to_name, relation_type FROM agentmem_graph_relations
     WHERE to_name = ?1";

/// The part of the graph `query` selects.
pub(super) fn read(conn: &mut Connection, query: &GraphQuery) -> SqlResult<KnowledgeGraph> {
    let tx = Tx::deferred(conn)?;
    let graph = match query {
        GraphQuery::All => KnowledgeGraph {
            entities: all_entities(&tx)?,
            relations: all_relations(&tx)?,
        },
        GraphQuery::Search(_) | GraphQuery::Open(_) => {
            let candidates = match query {
                GraphQuery::Open(names) => named_entities(&tx, names)?,
                _ => all_entities(&tx)?,
            };
            let entities: Vec<Entity> = match query.entity_filter() {
                Some(keep) => candidates.into_iter().filter(|e| keep(e)).collect(),
                None => candidates,
            };
            let relations = touching(&tx, &entities)?;
            KnowledgeGraph {
                entities,
                relations,
            }
        }
    };
    tx.commit()?;
    Ok(graph)
}

/// Every entity with its observations, in order.
fn all_entities(conn: &Connection) -> SqlResult<Vec<Entity>> {
    let mut entities = Vec::new();
    let mut index = HashMap::new();
    let mut stmt = conn
        .prepare_cached("SELECT id, name, entity_type FROM agentmem_graph_entities ORDER BY id")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        index.insert(row.get::<_, i64>(0)?, entities.len());
        entities.push(Entity::new(
            row.get::<_, String>(1)?,
            row.get::<_, String>(2)?,
        ));
    }
    let mut stmt = conn
        .prepare_cached("SELECT entity_id, content FROM agentmem_graph_observations ORDER BY id")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        // The foreign key keeps every observation's entity; one without is passed over.
        if let Some(&i) = index.get(&row.get::<_, i64>(0)?) {
            entities[i].observations.push(row.get(1)?);
        }
    }
    Ok(entities)
}

/// The entities named in `names` that exist, in creation order, with their observations.
fn named_entities(conn: &Connection, names: &[String]) -> SqlResult<Vec<Entity>> {
    let mut found = BTreeMap::new();
    {
        let mut stmt = conn.prepare_cached(
            "SELECT id, entity_type FROM agentmem_graph_entities WHERE name = ?1",
        )?;
        let unique: HashSet<&String> = names.iter().collect();
        for name in unique {
            let row = stmt
                .query_row([name], |row| {
                    Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
                })
                .optional()?;
            if let Some((id, entity_type)) = row {
                found.insert(id, Entity::new(name.clone(), entity_type));
            }
        }
    }
    let mut stmt = conn.prepare_cached(OBSERVATIONS_OF)?;
    let mut entities = Vec::with_capacity(found.len());
    for (id, mut entity) in found {
        entity.observations = stmt
            .query_map([id], |row| row.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        entities.push(entity);
    }
    Ok(entities)
}

/// Every relation with an end among `entities`' names, in creation order.
fn touching(conn: &Connection, entities: &[Entity]) -> SqlResult<Vec<Relation>> {
    let names: HashSet<&str> = entities.iter().map(|e| e.name.as_str()).collect();
    if names.len() > MOST_RELATION_LOOKUPS {
        let mut relations = all_relations(conn)?;
        relations.retain(|r| names.contains(r.from.as_str()) || names.contains(r.to.as_str()));
        return Ok(relations);
    }
    // Keyed by row id: creation order, and a relation between two kept entities once.
    let mut found = BTreeMap::new();
    for sql in [RELATIONS_FROM, RELATIONS_TO] {
        let mut stmt = conn.prepare_cached(sql)?;
        for name in &names {
            for row in stmt.query_map([name], relation_row)? {
                let (id, relation) = row?;
                found.insert(id, relation);
            }
        }
    }
    Ok(found.into_values().collect())
}

/// Every relation, in creation order.
fn all_relations(conn: &Connection) -> SqlResult<Vec<Relation>> {
    let mut stmt = conn.prepare_cached(ALL_RELATIONS)?;
    let relations = stmt
        .query_map([], |row| relation_row(row).map(|(_, relation)| relation))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(relations)
}

/// A row of [`ALL_RELATIONS`], [`RELATIONS_FROM`] or [`RELATIONS_TO`]: its id and relation.
fn relation_row(row: &Row<'_>) -> rusqlite::Result<(i64, Relation)> {
    Ok((
        row.get(0)?,
        Relation::new(
            row.get::<_, String>(1)?,
            row.get::<_, String>(2)?,
            row.get::<_, String>(3)?,
        ),
    ))
}
