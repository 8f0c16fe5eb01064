//! Writing the graph: each operation one `IMMEDIATE` transaction of keyed statements.
//!
//! The unique indexes decide what is new (`INSERT … ON CONFLICT DO NOTHING` changes no row for
//! a name, relation or observation already stored, or stored earlier in the same call), so a
//! skip needs no read first, and SQLite's single writer lock makes the decision hold across
//! handles and processes: concurrent creates of one name leave exactly one entity.

use agentmem_core::graph::entity_not_found;
use agentmem_core::{
    AddedObservations, Entity, ObservationAddition, ObservationDeletion, Relation,
};
use rusqlite::{Connection, OptionalExtension, Params};

use crate::error::SqlResult;
use crate::tx::Tx;

const INSERT_OBSERVATION: &str = "INSERT INTO agentmem_graph_observations (entity_id, content)
     VALUES (?1, ?2) ON CONFLICT (entity_id, content) DO NOTHING";

/// Runs `f` in one `IMMEDIATE` transaction, committed when it succeeds (rolled back, having
/// applied nothing, when it fails).
fn immediate<T>(conn: &mut Connection, f: impl FnOnce(&Tx<'_>) -> SqlResult<T>) -> SqlResult<T> {
    let tx = Tx::immediate(conn)?;
    let value = f(&tx)?;
    tx.commit()?;
    Ok(value)
}

/// Runs the statement `sql` once with each of `each`, returning how many rows it changed in
/// all.
fn changes<P: Params>(
    conn: &Connection, sql: &str, each: impl IntoIterator<Item = P>,
) -> SqlResult<u64> {
    let mut stmt = conn.prepare_cached(sql)?;
    let mut total = 0;
    for params in each {
        total += stmt.execute(params)? as u64;
    }
    Ok(total)
}

/// The row id of the entity named `name`, if it exists.
fn entity_id(conn: &Connection, name: &str) -> SqlResult<Option<i64>> {
    let id = conn
        .prepare_cached("SELECT id FROM agentmem_graph_entities WHERE name = ?1")?
        .query_row([name], |row| row.get(0))
        .optional()?;
    Ok(id)
}

/// Runs the `INSERT … ON CONFLICT DO NOTHING` statement `sql` once with the `params` of each
/// of `items`, in order; returns what `created` makes of each item that inserted a row (given
/// the new row's id), skipping those already stored (earlier ones of `items` included).
fn insert_new<'a, I, P: Params, T>(
    conn: &Connection, sql: &str, items: &'a [I], params: impl Fn(&'a I) -> P,
    mut created: impl FnMut(&'a I, i64) -> SqlResult<T>,
) -> SqlResult<Vec<T>> {
    let mut insert = conn.prepare_cached(sql)?;
    let mut new = Vec::new();
    for item in items {
        if insert.execute(params(item))? == 1 {
            new.push(created(item, conn.last_insert_rowid())?);
        }
    }
    Ok(new)
}

/// Adds `contents` to entity `id` in order, skipping those it holds (earlier ones of
/// `contents` included); returns those added.
fn add_to(conn: &Connection, id: i64, contents: &[String]) -> SqlResult<Vec<String>> {
    insert_new(
        conn,
        INSERT_OBSERVATION,
        contents,
        |c| (id, c),
        |c, _| Ok(c.clone()),
    )
}

/// Creates the entities whose names are new, each with its observations (repeats kept once);
/// returns those created, as stored.
pub(super) fn create_entities(
    conn: &mut Connection, entities: &[Entity],
) -> SqlResult<Vec<Entity>> {
    immediate(conn, |tx| {
        insert_new(
            tx,
            "INSERT INTO agentmem_graph_entities (name, entity_type) VALUES (?1, ?2)
             ON CONFLICT (name) DO NOTHING",
            entities,
            |entity| (&entity.name, &entity.entity_type),
            |entity, id| {
                Ok(Entity {
                    name: entity.name.clone(),
                    entity_type: entity.entity_type.clone(),
                    observations: add_to(tx, id, &entity.observations)?,
                })
            },
        )
    })
}

/// Creates the relations that are new; returns those created.
pub(super) fn create_relations(
    conn: &mut Connection, relations: &[Relation],
) -> SqlResult<Vec<Relation>> {
    immediate(conn, |tx| {
        insert_new(
            tx,
            "INSERT INTO agentmem_graph_relations (from_name, to_name, relation_type)
             VALUES (?1, ?2, ?3) ON CONFLICT (from_name, to_name, relation_type) DO NOTHING",
            relations,
            relation_key,
            |relation, _| Ok(relation.clone()),
        )
    })
}

/// Adds observations to existing entities. Every entity is looked up first, inside the
/// transaction: a missing one fails the call before anything is written.
pub(super) fn add_observations(
    conn: &mut Connection, additions: &[ObservationAddition],
) -> SqlResult<Vec<AddedObservations>> {
    immediate(conn, |tx| {
        let mut ids = Vec::with_capacity(additions.len());
        for addition in additions {
            match entity_id(tx, &addition.entity_name)? {
                Some(id) => ids.push(id),
                None => return Err(entity_not_found(&addition.entity_name).into()),
            }
        }
        additions
            .iter()
            .zip(ids)
            .map(|(addition, id)| {
                Ok(AddedObservations {
                    entity_name: addition.entity_name.clone(),
                    added_observations: add_to(tx, id, &addition.contents)?,
                })
            })
            .collect()
    })
}

/// Deletes the named entities (their observations go by cascade) and every relation naming
/// one of `names`; returns how many entities went.
pub(super) fn delete_entities(conn: &mut Connection, names: &[String]) -> SqlResult<u64> {
    immediate(conn, |tx| {
        let each = || names.iter().map(|name| [name]);
        let removed = changes(
            tx,
            "DELETE FROM agentmem_graph_entities WHERE name = ?1",
            each(),
        )?;
        // Two statements, so each walks its own index.
        changes(
            tx,
            "DELETE FROM agentmem_graph_relations WHERE from_name = ?1",
            each(),
        )?;
        changes(
            tx,
            "DELETE FROM agentmem_graph_relations WHERE to_name = ?1",
            each(),
        )?;
        Ok(removed)
    })
}

/// Deletes observations from entities, passing over missing entities and observations;
/// returns how many went.
pub(super) fn delete_observations(
    conn: &mut Connection, deletions: &[ObservationDeletion],
) -> SqlResult<u64> {
    immediate(conn, |tx| {
        let mut removed = 0;
        for deletion in deletions {
            let Some(id) = entity_id(tx, &deletion.entity_name)? else {
                continue;
            };
            removed += changes(
                tx,
                "DELETE FROM agentmem_graph_observations WHERE entity_id = ?1 AND content = ?2",
                deletion.observations.iter().map(|content| (id, content)),
            )?;
        }
        Ok(removed)
    })
}

/// Deletes the relations equal to one of `relations`; returns how many went.
pub(super) fn delete_relations(conn: &mut Connection, relations: &[Relation]) -> SqlResult<u64> {
    immediate(conn, |tx| {
        changes(
            tx,
            "DELETE FROM agentmem_graph_relations
             WHERE from_name = ?1 AND to_name = ?2 AND relation_type = ?3",
            relations.iter().map(relation_key),
        )
    })
}

/// A relation's columns, bound in the order of its unique key.
fn relation_key(relation: &Relation) -> (&str, &str, &str) {
    (&relation.from, &relation.to, &relation.relation_type)
}
