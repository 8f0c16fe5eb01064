//! [`GraphStore`] for [`MongoStore`], without transactions (the same on every server).
//!
//! - `graph_entities`: one document per entity, `_id` the digest of its name, holding its
//!   observations in order (see `graph_codec.rs`). A name is unique because `_id` is.
//! - `graph_relations`: one document per relation, `_id` the digest of (from, to, type), with
//!   the keys of both ends (`from_id`, `to_id`, indexed) for deletes and `open_nodes`.
//! - `meta` holds the counter `{_id: "graph_seq", next}` that gives every created entity and
//!   relation its place in creation order (one `$inc` reserves a call's places).
//!
//! Every write touches only the documents it names: creating is one counter update and one
//! unordered insert (duplicate keys are the items that exist), adding or deleting
//! observations one atomic update per entity, deleting two `deleteMany`s. Reads fetch the
//! graph (or, for `open_nodes`, the named entities and the relations touching them) and select
//! in the client with [`KnowledgeGraph::select`], so matching is Rust's Unicode lowercasing.
//!
//! Without transactions a call that writes several documents is not isolated from readers,
//! which may see part of it; see the crate README for the one race left.

use std::collections::{HashMap, HashSet};

use agentmem_core::graph::{entity_not_found, fresh_texts};
use agentmem_core::{
    async_trait, AddedObservations, Entity, Error, GraphQuery, GraphStore, KnowledgeGraph,
    ObservationAddition, ObservationDeletion, Relation, Result,
};
use futures_util::{StreamExt, TryStreamExt};
use mongodb::bson::{doc, Document};
use mongodb::error::ErrorKind as DriverKind;
use mongodb::options::ReturnDocument;
use mongodb::Collection;

use crate::codec::{all_docs, check_size, int_field};
use crate::error::{from_driver, server_code, ResultExt, DUPLICATE_KEY};
use crate::graph_codec::{
    entity_doc, entity_from, entity_key, entity_keys, in_order, observations_from, relation_doc,
    relation_from, relation_key, ENTITY_WHAT, FROM_ID, OBSERVATIONS, SEQ, TO_ID,
};
use crate::retry::{retry, Step};
use crate::store::MongoStore;

/// The `_id`, in `meta`, of the counter of the graph's creation order.
const GRAPH_SEQ: &str = "graph_seq";

/// How many per-entity updates of one call are in flight at once.
const UPDATES_IN_FLIGHT: usize = 8;

/// Server error codes for an update whose result would exceed the document size limit.
const DOCUMENT_TOO_LARGE: [i32; 2] = [10334, 17419];

/// Runs `updates` (one per entity, so in any order), [`UPDATES_IN_FLIGHT`] at a time; their
/// results in the order given.
async fn in_flight<T, F: std::future::Future<Output = Result<T>>>(
    updates: Vec<F>,
) -> Result<Vec<T>> {
    futures_util::stream::iter(updates)
        .buffered(UPDATES_IN_FLIGHT)
        .try_collect()
        .await
}

/// The filter of relations with an end among entity keys `keys`.
fn touching(keys: &[String]) -> Document {
    doc! {"$or": [{FROM_ID: {"$in": keys}}, {TO_ID: {"$in": keys}}]}
}

/// The items of `items` whose key (by `key`) no earlier item has, in order.
fn first_of_each<'a, T, K: Eq + std::hash::Hash>(
    items: &'a [T], key: impl Fn(&'a T) -> K,
) -> Vec<&'a T> {
    let mut seen = HashSet::new();
    items.iter().filter(|i| seen.insert(key(i))).collect()
}

/// Groups per-entity lists by entity, in the order entities are first named: (entity key,
/// the lists' items in call order).
fn by_entity<'a, T>(
    items: &'a [T], name: impl Fn(&T) -> &str, list: impl Fn(&'a T) -> &'a [String],
) -> Vec<(String, Vec<&'a String>)> {
    let mut groups: Vec<(String, Vec<&String>)> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    for item in items {
        let key = entity_key(name(item));
        let slot = *at.entry(key.clone()).or_insert_with(|| {
            groups.push((key, Vec::new()));
            groups.len() - 1
        });
        if let Some((_, texts)) = groups.get_mut(slot) {
            texts.extend(list(item));
        }
    }
    groups
}

impl MongoStore {
    /// Reserves `n` consecutive places in the graph's creation order; the first of them.
    async fn reserve_graph_seq(&self, n: usize) -> Result<i64> {
        let n = i64::try_from(n).map_err(|_| Error::invalid_input("too many graph items"))?;
        retry(|_| async move {
            let reserved = self
                .meta()
                .find_one_and_update(doc! {"_id": GRAPH_SEQ}, doc! {"$inc": {"next": n}})
                .upsert(true)
                .return_document(ReturnDocument::After)
                .await;
            match reserved {
                Ok(Some(d)) => Ok(Step::Done(int_field(&d, "next")? - n + 1)),
                // Two first upserts at once: the loser gets a duplicate key (or, from some
                // compatible servers, no document) and finds the counter on its next try.
                Ok(None) => Ok(Step::RetryNow(Err(Error::backend(
                    "the graph counter upsert kept returning no document",
                )))),
                Err(e) if server_code(&e) == Some(DUPLICATE_KEY) => {
                    Ok(Step::RetryNow(Err(from_driver(e))))
                }
                Err(e) => Err(from_driver(e)),
            }
        })
        .await
    }

    /// Inserts the documents of `items` (distinct keys) at new places in creation order, in
    /// one unordered insert; returns the items whose key was new. A duplicate key is an item
    /// that exists, stored earlier or by a concurrent call.
    async fn insert_new<T>(
        &self, coll: Collection<Document>, items: Vec<(T, Document)>,
    ) -> Result<Vec<T>> {
        if items.is_empty() {
            return Ok(Vec::new());
        }
        let first = self.reserve_graph_seq(items.len()).await?;
        let (items, mut docs): (Vec<T>, Vec<Document>) = items.into_iter().unzip();
        for (d, seq) in docs.iter_mut().zip(first..) {
            d.insert(SEQ, seq);
        }
        let mut inserted = vec![true; items.len()];
        if let Err(e) = coll.insert_many(docs).ordered(false).await {
            let DriverKind::InsertMany(failure) = e.kind.as_ref() else {
                return Err(from_driver(e));
            };
            let errors = failure.write_errors.as_deref().unwrap_or_default();
            if failure.write_concern_error.is_some()
                || errors.iter().any(|w| w.code != DUPLICATE_KEY)
            {
                return Err(from_driver(e));
            }
            for w in errors {
                if let Some(slot) = inserted.get_mut(w.index) {
                    *slot = false;
                }
            }
        }
        Ok(items
            .into_iter()
            .zip(inserted)
            .filter_map(|(item, new)| new.then_some(item))
            .collect())
    }

    /// The entity documents of `keys`, by key.
    async fn entities_by_key(&self, keys: &[String]) -> Result<HashMap<String, Document>> {
        let docs = all_docs(self.graph_entities().find(doc! {"_id": {"$in": keys}})).await?;
        Ok(docs
            .into_iter()
            .filter_map(|d| Some((d.get_str("_id").ok()?.to_owned(), d)))
            .collect())
    }

    /// Appends `texts` to the entity `key` of place `seq`, skipping those it holds; what it
    /// held before, or `None` when it was deleted (or deleted and created again) since it
    /// was checked: the call then counts as made before that delete.
    async fn append_observations(
        &self, key: &str, seq: i64, texts: Vec<String>,
    ) -> Result<Option<Vec<String>>> {
        if texts.is_empty() {
            return Ok(None);
        }
        let before = self
            .graph_entities()
            .find_one_and_update(
                doc! {"_id": key, SEQ: seq},
                doc! {"$addToSet": {OBSERVATIONS: {"$each": texts}}},
            )
            .projection(doc! {OBSERVATIONS: 1})
            .return_document(ReturnDocument::Before)
            .await;
        match before {
            Ok(d) => d.as_ref().map(observations_from).transpose(),
            // Grown past the limit by a concurrent addition since the check.
            Err(e) if server_code(&e).is_some_and(|c| DOCUMENT_TOO_LARGE.contains(&c)) => {
                Err(Error::invalid_input(format!(
                    "{ENTITY_WHAT} would exceed MongoDB's 16 MiB document limit"
                ))
                .with_source(e))
            }
            Err(e) => Err(from_driver(e)),
        }
    }
}

/// The results of `additions`, in call order, given what each entity held before the call
/// (by key): each addition reports the contents its entity did not hold yet, counting the
/// earlier additions of the call.
fn report_additions(
    additions: &[ObservationAddition], before: HashMap<&String, Vec<String>>,
) -> Vec<AddedObservations> {
    let mut held: HashMap<String, HashSet<String>> = before
        .into_iter()
        .map(|(k, v)| (k.clone(), v.into_iter().collect()))
        .collect();
    additions
        .iter()
        .map(|a| {
            let set = held.entry(entity_key(&a.entity_name)).or_default();
            let added = fresh_texts(&a.contents, |o| set.contains(o));
            set.extend(added.iter().cloned());
            AddedObservations {
                entity_name: a.entity_name.clone(),
                added_observations: added,
            }
        })
        .collect()
}

#[async_trait]
impl GraphStore for MongoStore {
    async fn create_entities(&self, entities: &[Entity]) -> Result<Vec<Entity>> {
        let items = first_of_each(entities, |e| e.name.as_str())
            .into_iter()
            .map(|e| {
                let e = Entity {
                    observations: fresh_texts(&e.observations, |_| false),
                    ..e.clone()
                };
                // Encoded and size-checked before anything is written.
                let d = entity_doc(&e)?;
                Ok((e, d))
            })
            .collect::<Result<Vec<_>>>()?;
        self.insert_new(self.graph_entities(), items).await
    }

    async fn create_relations(&self, relations: &[Relation]) -> Result<Vec<Relation>> {
        let items = first_of_each(relations, |r| r)
            .into_iter()
            .map(|r| (r.clone(), relation_doc(r)))
            .collect();
        self.insert_new(self.graph_relations(), items).await
    }

    /// Checks that every entity exists (and would still fit in a document), then applies one
    /// `$addToSet` per entity, conditional on the entity being the one checked (its `seq`),
    /// and reports from each update's before-image.
    async fn add_observations(
        &self, additions: &[ObservationAddition],
    ) -> Result<Vec<AddedObservations>> {
        if additions.is_empty() {
            return Ok(Vec::new());
        }
        let groups = by_entity(additions, |a| &a.entity_name, |a| &a.contents);
        let keys: Vec<String> = groups.iter().map(|(k, _)| k.clone()).collect();
        let found = self.entities_by_key(&keys).await?;
        if let Some(missing) = additions
            .iter()
            .find(|a| !found.contains_key(&entity_key(&a.entity_name)))
        {
            return Err(entity_not_found(&missing.entity_name));
        }
        let mut updates = Vec::with_capacity(groups.len());
        for (key, texts) in &groups {
            let Some(d) = found.get(key) else {
                continue;
            };
            let checked = observations_from(d)?;
            // All of the texts go to `$addToSet`, which skips what the entity holds when it
            // applies; the size check counts the ones it did not hold when checked.
            let texts = fresh_texts(texts.iter().copied(), |_| false);
            let held: HashSet<&str> = checked.iter().map(String::as_str).collect();
            let mut grown = d.clone();
            let mut all = checked.clone();
            all.extend(texts.iter().filter(|t| !held.contains(t.as_str())).cloned());
            grown.insert(OBSERVATIONS, all);
            check_size(ENTITY_WHAT, &grown)?;
            updates.push((key, int_field(d, SEQ)?, texts, checked));
        }
        // Each update's before-image is what that entity held just before the call's change.
        let applied = updates
            .into_iter()
            .map(|(key, seq, texts, checked)| async move {
                let before = self.append_observations(key, seq, texts).await?;
                Ok((key, before.unwrap_or(checked)))
            });
        let held: HashMap<&String, Vec<String>> =
            in_flight(applied.collect()).await?.into_iter().collect();
        Ok(report_additions(additions, held))
    }

    /// The entities, then every relation touching one of the names.
    async fn delete_entities(&self, names: &[String]) -> Result<u64> {
        let keys = entity_keys(names);
        if keys.is_empty() {
            return Ok(0);
        }
        let deleted = self
            .graph_entities()
            .delete_many(doc! {"_id": {"$in": &keys}})
            .await
            .mapped()?
            .deleted_count;
        self.graph_relations()
            .delete_many(touching(&keys))
            .await
            .mapped()?;
        Ok(deleted)
    }

    /// One `$pullAll` per entity; the count from each before-image.
    async fn delete_observations(&self, deletions: &[ObservationDeletion]) -> Result<u64> {
        let groups = by_entity(deletions, |d| &d.entity_name, |d| &d.observations);
        let removed = groups.into_iter().map(|(key, texts)| async move {
            let doomed = fresh_texts(texts, |_| false);
            let before = self
                .graph_entities()
                .find_one_and_update(
                    doc! {"_id": key},
                    doc! {"$pullAll": {OBSERVATIONS: &doomed}},
                )
                .projection(doc! {OBSERVATIONS: 1})
                .return_document(ReturnDocument::Before)
                .await
                .mapped()?;
            let Some(before) = before else {
                return Ok(0);
            };
            let doomed: HashSet<&String> = doomed.iter().collect();
            let held = observations_from(&before)?;
            Ok(held.iter().filter(|o| doomed.contains(o)).count() as u64)
        });
        Ok(in_flight(removed.collect()).await?.iter().sum())
    }

    async fn delete_relations(&self, relations: &[Relation]) -> Result<u64> {
        if relations.is_empty() {
            return Ok(0);
        }
        let keys: HashSet<String> = relations.iter().map(relation_key).collect();
        let keys: Vec<String> = keys.into_iter().collect();
        let done = self
            .graph_relations()
            .delete_many(doc! {"_id": {"$in": keys}})
            .await
            .mapped()?;
        Ok(done.deleted_count)
    }

    /// The whole graph, or for `Open` the named entities and the relations touching them,
    /// then the selection in the client.
    async fn read_graph(&self, query: &GraphQuery) -> Result<KnowledgeGraph> {
        let (entities, relations) = match query {
            GraphQuery::Open(names) => {
                let keys = entity_keys(names);
                (doc! {"_id": {"$in": &keys}}, touching(&keys))
            }
            _ => (doc! {}, doc! {}),
        };
        let (entity_coll, relation_coll) = (self.graph_entities(), self.graph_relations());
        let entities = entity_coll.find(entities).projection(doc! {"_id": 0});
        let relations = relation_coll
            .find(relations)
            .projection(doc! {"_id": 0, FROM_ID: 0, TO_ID: 0});
        let (entities, relations) =
            futures_util::future::try_join(all_docs(entities), all_docs(relations)).await?;
        let graph = KnowledgeGraph {
            entities: in_order(&entities, entity_from)?,
            relations: in_order(&relations, relation_from)?,
        };
        Ok(graph.select(query))
    }
}
