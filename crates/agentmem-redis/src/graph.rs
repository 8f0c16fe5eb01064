//! [`GraphStore`] for [`RedisStore`]: each operation is one Lua script on the store's slot
//! (`lua/graph_*.lua`, on top of `lua/graph.lua`), so a change and its indexes happen in one
//! atomic step, also on a Redis Cluster, and `add_observations` checks every entity and adds
//! in the same step. A write touches only the entities and relations it names (and, for
//! `delete_entities`, the relations naming them, found through per-name indexes); reads of
//! the whole graph or a search read it in one script, and the exact Unicode matching of a
//! search is done here with [`KnowledgeGraph::select`].

use std::collections::HashSet;

use agentmem_core::graph::{
    check_additions, check_deletions, check_entities, check_names, check_relations,
    entity_not_found,
};
use agentmem_core::{
    async_trait, AddedObservations, Entity, Error, GraphQuery, GraphStore, KnowledgeGraph,
    ObservationAddition, ObservationDeletion, Relation, Result,
};
use redis::ScriptInvocation;

use crate::store::RedisStore;

/// The separator of a relation's parts in its stored form (no graph text holds NUL).
const SEP: char = '\0';

/// `texts` without repeats, the first of equal ones kept, in order.
fn unique(texts: &[String]) -> Vec<&String> {
    let mut seen = HashSet::new();
    texts.iter().filter(|t| seen.insert(t.as_str())).collect()
}

/// The items at `positions` (1-based, as the scripts answer) of `items`, in that order.
fn picked<T>(items: Vec<T>, positions: &[usize]) -> Result<Vec<T>> {
    let mut items: Vec<Option<T>> = items.into_iter().map(Some).collect();
    positions
        .iter()
        .map(|&p| {
            p.checked_sub(1)
                .and_then(|i| items.get_mut(i))
                .and_then(Option::take)
                .ok_or_else(|| bad_reply(format!("position {p}")))
        })
        .collect()
}

fn bad_reply(what: impl std::fmt::Display) -> Error {
    Error::corrupt(format!(
        "unexpected {what} in a knowledge-graph script's reply"
    ))
}

/// Adds `from`, `to` and `type` of each relation to a script's arguments.
fn relation_args(inv: &mut ScriptInvocation<'_>, relations: &[Relation]) {
    for r in relations {
        inv.arg(&r.from).arg(&r.to).arg(&r.relation_type);
    }
}

/// The scripts' flag of texts of which one goes beyond ASCII (a search decides those in
/// the client).
fn wide<'a>(mut texts: impl Iterator<Item = &'a String>) -> &'static str {
    if texts.any(|t| !t.is_ascii()) {
        "1"
    } else {
        "0"
    }
}

/// Adds each list's name, [`wide`] flag when `flag`, length and texts to a script's
/// arguments.
fn list_args<'a>(
    inv: &mut ScriptInvocation<'_>, flag: bool,
    lists: impl IntoIterator<Item = (&'a str, Vec<&'a String>)>,
) {
    for (name, texts) in lists {
        inv.arg(name);
        if flag {
            inv.arg(wide(texts.iter().copied()));
        }
        inv.arg(texts.len());
        for text in texts {
            inv.arg(text.as_str());
        }
    }
}

/// What `add_observations` added to each entity, from the script's reply after its status:
/// per addition the count of new contents and their positions (1-based) in its list.
fn added_from(additions: &[ObservationAddition], reply: &[i64]) -> Result<Vec<AddedObservations>> {
    let mut rest = reply.iter();
    let mut number = || {
        rest.next()
            .and_then(|&n| usize::try_from(n).ok())
            .ok_or_else(|| bad_reply("end or number"))
    };
    additions
        .iter()
        .map(|addition| {
            let count = number()?;
            let added = (0..count)
                .map(|_| {
                    let position = number()?;
                    position
                        .checked_sub(1)
                        .and_then(|i| addition.contents.get(i))
                        .cloned()
                        .ok_or_else(|| bad_reply(format!("position {position}")))
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(AddedObservations {
                entity_name: addition.entity_name.clone(),
                added_observations: added,
            })
        })
        .collect()
}

/// A creation number as the scripts return it (a sorted-set score).
fn number(text: &str) -> Result<f64> {
    text.parse()
        .map_err(|_| bad_reply(format!("number `{text}`")))
}

/// The entities of `read_graph`'s reply (name, number and string each: the type, then
/// `NUL observation` per observation), in creation order.
fn entities_from(flat: Vec<String>) -> Result<Vec<Entity>> {
    let mut numbered = Vec::with_capacity(flat.len() / 3);
    let mut rest = flat.into_iter();
    while let Some(name) = rest.next() {
        let (Some(at), Some(packed)) = (rest.next(), rest.next()) else {
            return Err(bad_reply("end of an entity"));
        };
        let mut parts = packed.split(SEP);
        let entity_type = parts.next().unwrap_or_default().to_string();
        let entity = Entity {
            name,
            entity_type,
            observations: parts.map(str::to_string).collect(),
        };
        numbered.push((number(&at)?, entity));
    }
    numbered.sort_by(|a, b| a.0.total_cmp(&b.0));
    Ok(numbered.into_iter().map(|(_, e)| e).collect())
}

/// The relations of `read_graph`'s reply (stored form and number each), each once, in
/// creation order.
fn relations_from(flat: Vec<String>) -> Result<Vec<Relation>> {
    let mut numbered = Vec::with_capacity(flat.len() / 2);
    let mut seen = HashSet::new();
    let mut rest = flat.into_iter();
    while let (Some(member), Some(at)) = (rest.next(), rest.next()) {
        if !seen.insert(member.clone()) {
            continue;
        }
        let mut parts = member.splitn(3, SEP);
        let (Some(from), Some(to), Some(relation_type)) =
            (parts.next(), parts.next(), parts.next())
        else {
            return Err(bad_reply("relation"));
        };
        numbered.push((number(&at)?, Relation::new(from, to, relation_type)));
    }
    numbered.sort_by(|a, b| a.0.total_cmp(&b.0));
    Ok(numbered.into_iter().map(|(_, r)| r).collect())
}

/// Runs a script that answers a count (the deletions).
async fn count(store: &RedisStore, inv: &ScriptInvocation<'_>) -> Result<u64> {
    store.invoke(inv).await
}

/// The knowledge graph on Redis. Arguments are checked here too (the validate layer checks
/// them first), since the stored forms rely on texts without NUL.
#[async_trait]
impl GraphStore for RedisStore {
    async fn create_entities(&self, entities: &[Entity]) -> Result<Vec<Entity>> {
        check_entities(entities)?;
        // As stored: each observation once.
        let stored: Vec<Entity> = entities
            .iter()
            .map(|e| Entity {
                observations: unique(&e.observations).into_iter().cloned().collect(),
                ..e.clone()
            })
            .collect();
        let mut inv = self.keys.invoke(&self.scripts.graph_create_entities);
        for e in &stored {
            let texts = [&e.name, &e.entity_type].into_iter();
            inv.arg(&e.name)
                .arg(&e.entity_type)
                .arg(wide(texts.chain(&e.observations)))
                .arg(e.observations.len());
            for o in &e.observations {
                inv.arg(o);
            }
        }
        let created: Vec<usize> = self.invoke(&inv).await?;
        picked(stored, &created)
    }

    async fn create_relations(&self, relations: &[Relation]) -> Result<Vec<Relation>> {
        check_relations(relations)?;
        let mut inv = self.keys.invoke(&self.scripts.graph_create_relations);
        relation_args(&mut inv, relations);
        let created: Vec<usize> = self.invoke(&inv).await?;
        picked(relations.to_vec(), &created)
    }

    async fn add_observations(
        &self, additions: &[ObservationAddition],
    ) -> Result<Vec<AddedObservations>> {
        check_additions(additions)?;
        let mut inv = self.keys.invoke(&self.scripts.graph_add_observations);
        let lists = additions
            .iter()
            .map(|a| (a.entity_name.as_str(), a.contents.iter().collect()));
        list_args(&mut inv, true, lists);
        let reply: Vec<i64> = self.invoke(&inv).await?;
        match reply.split_first() {
            Some((1, rest)) => added_from(additions, rest),
            Some((0, [position])) => {
                let missing = usize::try_from(*position)
                    .ok()
                    .and_then(|p| p.checked_sub(1))
                    .and_then(|i| additions.get(i))
                    .ok_or_else(|| bad_reply(format!("position {position}")))?;
                Err(entity_not_found(&missing.entity_name))
            }
            _ => Err(bad_reply("status")),
        }
    }

    async fn delete_entities(&self, names: &[String]) -> Result<u64> {
        check_names(names)?;
        let mut inv = self.keys.invoke(&self.scripts.graph_delete_entities);
        for name in names {
            inv.arg(name);
        }
        count(self, &inv).await
    }

    async fn delete_observations(&self, deletions: &[ObservationDeletion]) -> Result<u64> {
        check_deletions(deletions)?;
        let mut inv = self.keys.invoke(&self.scripts.graph_delete_observations);
        let lists = deletions
            .iter()
            .map(|d| (d.entity_name.as_str(), unique(&d.observations)));
        list_args(&mut inv, false, lists);
        count(self, &inv).await
    }

    async fn delete_relations(&self, relations: &[Relation]) -> Result<u64> {
        check_relations(relations)?;
        let mut inv = self.keys.invoke(&self.scripts.graph_delete_relations);
        relation_args(&mut inv, relations);
        count(self, &inv).await
    }

    /// One script: the whole graph for `All`; for `Search`, the entities that may match
    /// (the script decides ASCII texts exactly; any text with other characters comes here)
    /// and the relations naming them; for `Open`, only the named entities and the relations
    /// naming them. The query's own rule ([`KnowledgeGraph::select`]) then picks the answer.
    async fn read_graph(&self, query: &GraphQuery) -> Result<KnowledgeGraph> {
        query.validate()?;
        let mut inv = self.keys.invoke(&self.scripts.graph_read);
        match query {
            GraphQuery::All => inv.arg("all"),
            GraphQuery::Search(text) => inv.arg("search").arg(text.to_lowercase()),
            GraphQuery::Open(names) => {
                inv.arg("open");
                for name in unique(names) {
                    inv.arg(name);
                }
                &mut inv
            }
        };
        let (entities, relations): (Vec<String>, Vec<String>) = self.invoke(&inv).await?;
        let graph = KnowledgeGraph {
            entities: entities_from(entities)?,
            relations: relations_from(relations)?,
        };
        Ok(graph.select(query))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_decode_in_creation_order() {
        let flat = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let entities = entities_from(flat(&["b", "7", "t\0x\0", "a", "3", "u"])).unwrap();
        let a = Entity::new("a", "u");
        let b = Entity::new("b", "t").with_observations(["x", ""]);
        assert_eq!(entities, [a, b]);
        let rels = relations_from(flat(&["a\0b\0r", "9", "c\0d\0r", "2", "a\0b\0r", "9"]));
        let rels = rels.unwrap();
        assert_eq!(
            rels,
            [Relation::new("c", "d", "r"), Relation::new("a", "b", "r")]
        );
    }

    #[test]
    fn malformed_replies_are_corrupt_data() {
        let flat = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let kind = |r: Result<Vec<Entity>>| r.map(|_| ()).unwrap_err().kind();
        let corrupt = agentmem_core::ErrorKind::CorruptData;
        assert_eq!(
            kind(entities_from(flat(&["a", "t", "1", "2", "x"]))),
            corrupt
        );
        assert_eq!(kind(entities_from(flat(&["a", "t", "one", "0"]))), corrupt);
        let bad_relation = relations_from(flat(&["a\0b", "1"])).unwrap_err();
        assert_eq!(bad_relation.kind(), corrupt);
        assert_eq!(picked(vec![1], &[2]).unwrap_err().kind(), corrupt);
        assert_eq!(picked(vec![1], &[0]).unwrap_err().kind(), corrupt);
    }
}
