//! How the knowledge graph is stored: one document per entity in `graph_entities`, one per
//! relation in `graph_relations`, keyed by digests of their names, and read back.
//!
//! - Keys are hex SHA-256 digests: names may take 1 KiB, more than some servers allow in an
//!   index key (1024 bytes before MongoDB 4.2), and a digest is 64 bytes whatever the name.
//!   Names and types are only ever string values, never field names or `$` expressions.
//! - `seq` is the item's place in creation order, from the counter document in `meta`.
//! - An entity's observations are an array in its document, in the order they were added, so
//!   `$addToSet` appends only the new ones and `$pullAll` removes some, each atomic on the one
//!   document.

use std::collections::HashSet;

use agentmem_core::{Entity, Error, Relation, Result};
use mongodb::bson::{doc, Bson, Document};
use sha2::{Digest, Sha256};

use crate::codec::{check_size, int_field, str_field};

/// The place of an entity or relation in creation order.
pub(crate) const SEQ: &str = "seq";
/// An entity's observations, in the order they were added.
pub(crate) const OBSERVATIONS: &str = "observations";
/// The key of a relation's `from` entity (its `_id` in `graph_entities`).
pub(crate) const FROM_ID: &str = "from_id";
/// The key of a relation's `to` entity.
pub(crate) const TO_ID: &str = "to_id";

/// What [`check_size`] calls an entity document.
pub(crate) const ENTITY_WHAT: &str = "an entity with its observations";

fn hex(digest: &[u8]) -> String {
    use std::fmt::Write;
    digest.iter().fold(String::with_capacity(64), |mut s, b| {
        // Writing to a String cannot fail.
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The `_id` of the entity named `name`.
pub(crate) fn entity_key(name: &str) -> String {
    hex(&Sha256::digest(name.as_bytes()))
}

/// The `_id` of a relation: the digest of its three texts, each preceded by its length, so
/// that no two relations digest the same input.
pub(crate) fn relation_key(r: &Relation) -> String {
    let mut hasher = Sha256::new();
    for text in [&r.from, &r.to, &r.relation_type] {
        hasher.update((text.len() as u64).to_le_bytes());
        hasher.update(text.as_bytes());
    }
    hex(&hasher.finalize())
}

/// The keys of `names`, each once.
pub(crate) fn entity_keys<'a>(names: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    let mut seen = HashSet::new();
    names
        .into_iter()
        .map(|n| entity_key(n))
        .filter(|k| seen.insert(k.clone()))
        .collect()
}

/// The document of `e` (whose observations are unique) at place 0 in creation order; the
/// caller sets [`SEQ`]. `InvalidInput` when it would not fit in one document.
pub(crate) fn entity_doc(e: &Entity) -> Result<Document> {
    let d = doc! {
        "_id": entity_key(&e.name),
        "name": &e.name,
        "entity_type": &e.entity_type,
        OBSERVATIONS: &e.observations,
        SEQ: 0_i64,
    };
    check_size(ENTITY_WHAT, &d)?;
    Ok(d)
}

/// The document of `r` at place 0 in creation order; the caller sets [`SEQ`].
pub(crate) fn relation_doc(r: &Relation) -> Document {
    doc! {
        "_id": relation_key(r),
        "from": &r.from,
        "to": &r.to,
        "relation_type": &r.relation_type,
        FROM_ID: entity_key(&r.from),
        TO_ID: entity_key(&r.to),
        SEQ: 0_i64,
    }
}

/// The observations stored in entity document `d`.
pub(crate) fn observations_from(d: &Document) -> Result<Vec<String>> {
    let corrupt = || Error::corrupt(format!("field `{OBSERVATIONS}` is not an array of strings"));
    match d.get(OBSERVATIONS) {
        Some(Bson::Array(items)) => items
            .iter()
            .map(|o| match o {
                Bson::String(s) => Ok(s.clone()),
                _ => Err(corrupt()),
            })
            .collect(),
        _ => Err(corrupt()),
    }
}

/// The entity stored in `d`, with its place in creation order.
pub(crate) fn entity_from(d: &Document) -> Result<(i64, Entity)> {
    Ok((
        int_field(d, SEQ)?,
        Entity {
            name: str_field(d, "name")?.to_owned(),
            entity_type: str_field(d, "entity_type")?.to_owned(),
            observations: observations_from(d)?,
        },
    ))
}

/// The relation stored in `d`, with its place in creation order.
pub(crate) fn relation_from(d: &Document) -> Result<(i64, Relation)> {
    Ok((
        int_field(d, SEQ)?,
        Relation::new(
            str_field(d, "from")?,
            str_field(d, "to")?,
            str_field(d, "relation_type")?,
        ),
    ))
}

/// `docs` read with `from`, in creation order.
pub(crate) fn in_order<T>(
    docs: &[Document], from: impl Fn(&Document) -> Result<(i64, T)>,
) -> Result<Vec<T>> {
    let mut items = docs.iter().map(from).collect::<Result<Vec<_>>>()?;
    items.sort_by_key(|(seq, _)| *seq);
    Ok(items.into_iter().map(|(_, item)| item).collect())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

    use super::*;

    #[test]
    fn keys_are_digests_that_keep_relations_apart() {
        assert_eq!(entity_key("Alice").len(), 64);
        assert_ne!(entity_key("Alice"), entity_key("alice"));
        // Lengths keep the three texts apart: "ab"+"c" is not "a"+"bc".
        let a = relation_key(&Relation::new("ab", "c", "t"));
        let b = relation_key(&Relation::new("a", "bc", "t"));
        assert_ne!(a, b);
        assert_eq!(a, relation_key(&Relation::new("ab", "c", "t")));
    }

    #[test]
    fn entities_and_relations_round_trip_in_order() {
        let e = Entity::new("Alice", "person").with_observations(["a", "b"]);
        let mut first = entity_doc(&e).unwrap();
        first.insert(SEQ, 7_i64);
        let mut second = entity_doc(&Entity::new("Bob", "person")).unwrap();
        second.insert(SEQ, 3_i64);
        let read = in_order(&[first, second], entity_from).unwrap();
        assert_eq!(read[0].name, "Bob");
        assert_eq!(read[1], e);
        let r = Relation::new("Alice", "Bob", "knows");
        let d = relation_doc(&r);
        assert_eq!(d.get_str(FROM_ID).unwrap(), entity_key("Alice"));
        assert_eq!(relation_from(&d).unwrap(), (0, r));
    }

    #[test]
    fn malformed_graph_documents_are_corrupt_data() {
        let mut d = entity_doc(&Entity::new("Alice", "person")).unwrap();
        d.insert(OBSERVATIONS, vec![Bson::Int32(1)]);
        let err = entity_from(&d).unwrap_err();
        assert_eq!(err.kind(), agentmem_core::ErrorKind::CorruptData);
        d.remove(OBSERVATIONS);
        assert!(entity_from(&d).is_err());
        let mut r = relation_doc(&Relation::new("a", "b", "c"));
        r.remove("to");
        assert!(relation_from(&r).unwrap_err().message().contains("`to`"));
    }

    #[test]
    fn oversized_entities_are_invalid_input() {
        let big = "x".repeat(64 * 1024);
        let observations: Vec<String> = (0..300).map(|i| format!("{i}{big}")).collect();
        let e = Entity::new("Alice", "person").with_observations(observations);
        let err = entity_doc(&e).unwrap_err();
        assert_eq!(err.kind(), agentmem_core::ErrorKind::InvalidInput);
    }
}
