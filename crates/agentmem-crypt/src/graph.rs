//! The knowledge graph through the encryption layer: every string sealed deterministically, so
//! the store inside still finds an entity by its name, keeps names, relations and an entity's
//! observations unique and deletes by exact value (see the crate README).
//!
//! Each string is stored as an envelope, `agentmem-enc:v1:<key id>:<base64url(nonce ‖
//! ciphertext ‖ tag)>`, AES-256-GCM under a store-wide key derived for the graph
//! ([`Domain::Graph`], HKDF info `agentmem-crypt/v1/graph\0`), its nonce the first 12 bytes of
//! an HMAC-SHA256 of the AAD and the string under a subkey derived with it (as SIV does): the
//! same string in the same place seals to the same envelope under one master key. The AAD
//! names the kind of field and binds it: a name (an entity's, or a relation's end, which the
//! store compares with entity names) to nothing more, an entity type and an observation to
//! their entity's name, a relation type to the relation's ends. So only names show equality
//! across the graph; an observation or type moved to another entity fails to open.
//!
//! Searching is done in the client: the store's graph holds no text it could match.

use std::collections::{HashMap, HashSet};
use std::future::Future;

use agentmem_core::graph::{self, entity_not_found, MAX_GRAPH_NAME_BYTES, MAX_OBSERVATION_BYTES};
use agentmem_core::{
    AddedObservations, AgentMemory, Entity, Error, ErrorKind, GraphQuery, KnowledgeGraph,
    ObservationAddition, ObservationDeletion, Operation, Relation, Result,
};

use crate::cipher::{aad, envelope_key_id, max_plaintext, open_string, Domain, Keyring, Sealer};
use crate::key::KeyId;
use crate::layer::Encrypted;

/// The longest entity name, entity type or relation type (in bytes) the layer can store: its
/// envelope must fit in the [`MAX_GRAPH_NAME_BYTES`] a store keeps. Longer ones are refused
/// with `InvalidInput` before anything is written.
pub const MAX_ENCRYPTED_GRAPH_NAME_BYTES: usize = max_plaintext(MAX_GRAPH_NAME_BYTES);

/// The longest observation (in bytes) the layer can store: its envelope must fit in the
/// [`MAX_OBSERVATION_BYTES`] a store keeps. Longer ones are refused with `InvalidInput` before
/// anything is written.
pub const MAX_ENCRYPTED_OBSERVATION_BYTES: usize = max_plaintext(MAX_OBSERVATION_BYTES);

/// What a graph string is: its part of the AAD, and its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    /// An entity name, or a relation's end (compared with entity names by the store).
    Name,
    /// An entity's type, bound to its name.
    EntityType,
    /// An observation, bound to its entity's name.
    Observation,
    /// A relation's type, bound to its ends.
    RelationType,
}

impl Field {
    fn tag(self) -> &'static [u8] {
        match self {
            Field::Name => b"name",
            Field::EntityType => b"entity-type",
            Field::Observation => b"observation",
            Field::RelationType => b"relation-type",
        }
    }

    /// The longest plaintext of this field the store can keep sealed.
    fn max(self) -> usize {
        match self {
            Field::Observation => MAX_ENCRYPTED_OBSERVATION_BYTES,
            _ => MAX_ENCRYPTED_GRAPH_NAME_BYTES,
        }
    }

    /// What an error calls it (never the text itself: graph strings are what is secret).
    fn what(self) -> &'static str {
        match self {
            Field::Name => "an entity name",
            Field::EntityType => "an entity type",
            Field::Observation => "an observation",
            Field::RelationType => "a relation type",
        }
    }

    /// The AAD of a string of this field in `context` (see the module documentation).
    fn aad(self, context: &[&str]) -> Vec<u8> {
        let mut parts: Vec<&[u8]> = vec![b"graph", self.tag()];
        parts.extend(context.iter().map(|c| c.as_bytes()));
        aad(&parts)
    }

    fn too_long(self, text: &str) -> Error {
        Error::invalid_input(format!(
            "{} is {} bytes; encrypted, it may be at most {} bytes",
            self.what(),
            text.len(),
            self.max()
        ))
    }
}

/// Seals graph strings in one form (under one held key, or as given: the form of a store
/// written without the layer, looked for only while [`encrypt_existing`](crate::encrypt_existing)
/// runs) and opens them under any held key.
pub(crate) struct GraphSealer<'a> {
    sealer: Sealer<'a>,
    /// The key strings are sealed under; `None`: kept as given.
    key: Option<KeyId>,
}

impl<'a> GraphSealer<'a> {
    /// Seals with the write key of `keys`.
    pub(crate) fn new(keys: &'a Keyring) -> Self {
        Self::under(keys, Some(keys.write_key()))
    }

    fn under(keys: &'a Keyring, key: Option<KeyId>) -> Self {
        GraphSealer {
            sealer: Sealer::new(keys, Domain::Graph),
            key,
        }
    }

    /// One sealer per form a string may be stored in: under each held key (the write key
    /// first; read keys during a rotation), then as given while plaintext is accepted.
    pub(crate) fn forms(keys: &'a Keyring) -> Vec<Self> {
        let mut forms: Vec<Self> = keys
            .ids()
            .into_iter()
            .map(|id| Self::under(keys, Some(id)))
            .collect();
        if keys.accept_plaintext {
            forms.push(Self::under(keys, None));
        }
        forms
    }

    /// `text` in this form; `None` when its envelope would be longer than a store keeps (then
    /// no stored string is it, so nothing matches it).
    fn lookup(&mut self, field: Field, text: &str, context: &[&str]) -> Result<Option<String>> {
        let Some(key) = self.key else {
            return Ok(Some(text.to_owned()));
        };
        if text.len() > field.max() {
            return Ok(None);
        }
        let aad = field.aad(context);
        self.sealer
            .seal_deterministic_under(key, text.as_bytes(), &aad)
            .map(Some)
    }

    /// `text` sealed to be written; `InvalidInput` when its envelope would be too long.
    fn seal(&mut self, field: Field, text: &str, context: &[&str]) -> Result<String> {
        self.lookup(field, text, context)?
            .ok_or_else(|| field.too_long(text))
    }

    fn open(&mut self, field: Field, value: String, context: &[&str]) -> Result<String> {
        open_string(&mut self.sealer, value, &field.aad(context))
            .map_err(|e| e.at(format!("{} of the knowledge graph", field.what())))
    }

    fn seal_observations(&mut self, name: &str, observations: &[String]) -> Result<Vec<String>> {
        observations
            .iter()
            .map(|o| self.seal(Field::Observation, o, &[name]))
            .collect()
    }

    /// The observations of entity `name` opened (bound to it as
    /// [`seal_observations`](Self::seal_observations) sealed them).
    fn open_observations(&mut self, name: &str, observations: Vec<String>) -> Result<Vec<String>> {
        observations
            .into_iter()
            .map(|o| self.open(Field::Observation, o, &[name]))
            .collect()
    }

    pub(crate) fn seal_entity(&mut self, entity: &Entity) -> Result<Entity> {
        Ok(Entity {
            name: self.seal(Field::Name, &entity.name, &[])?,
            entity_type: self.seal(Field::EntityType, &entity.entity_type, &[&entity.name])?,
            observations: self.seal_observations(&entity.name, &entity.observations)?,
        })
    }

    pub(crate) fn seal_relation(&mut self, relation: &Relation) -> Result<Relation> {
        let ends = [relation.from.as_str(), relation.to.as_str()];
        Ok(Relation {
            from: self.seal(Field::Name, &relation.from, &[])?,
            to: self.seal(Field::Name, &relation.to, &[])?,
            relation_type: self.seal(Field::RelationType, &relation.relation_type, &ends)?,
        })
    }

    /// The relation in this form; `None` when one of its strings cannot be stored sealed.
    fn lookup_relation(&mut self, relation: &Relation) -> Result<Option<Relation>> {
        let ends = [relation.from.as_str(), relation.to.as_str()];
        let from = self.lookup(Field::Name, &relation.from, &[])?;
        let to = self.lookup(Field::Name, &relation.to, &[])?;
        let kind = self.lookup(Field::RelationType, &relation.relation_type, &ends)?;
        Ok(match (from, to, kind) {
            (Some(from), Some(to), Some(relation_type)) => Some(Relation {
                from,
                to,
                relation_type,
            }),
            _ => None,
        })
    }

    /// The names that can be stored, in this form.
    pub(crate) fn lookup_names(&mut self, names: &[String]) -> Result<Vec<String>> {
        let mut out = Vec::with_capacity(names.len());
        for name in names {
            out.extend(self.lookup(Field::Name, name, &[])?);
        }
        Ok(out)
    }

    fn lookup_relations(&mut self, relations: &[Relation]) -> Result<Vec<Relation>> {
        let mut out = Vec::with_capacity(relations.len());
        for relation in relations {
            out.extend(self.lookup_relation(relation)?);
        }
        Ok(out)
    }

    fn lookup_deletions(
        &mut self, deletions: &[ObservationDeletion],
    ) -> Result<Vec<ObservationDeletion>> {
        let mut out = Vec::with_capacity(deletions.len());
        for deletion in deletions {
            let name = deletion.entity_name.as_str();
            let Some(entity_name) = self.lookup(Field::Name, name, &[])? else {
                continue;
            };
            let mut observations = Vec::with_capacity(deletion.observations.len());
            for o in &deletion.observations {
                observations.extend(self.lookup(Field::Observation, o, &[name])?);
            }
            out.push(ObservationDeletion {
                entity_name,
                observations,
            });
        }
        Ok(out)
    }

    pub(crate) fn open_entity(&mut self, entity: Entity) -> Result<Entity> {
        let name = self.open(Field::Name, entity.name, &[])?;
        let entity_type = self.open(Field::EntityType, entity.entity_type, &[&name])?;
        let observations = self.open_observations(&name, entity.observations)?;
        Ok(Entity {
            name,
            entity_type,
            observations,
        })
    }

    pub(crate) fn open_relation(&mut self, relation: Relation) -> Result<Relation> {
        let from = self.open(Field::Name, relation.from, &[])?;
        let to = self.open(Field::Name, relation.to, &[])?;
        let relation_type =
            self.open(Field::RelationType, relation.relation_type, &[&from, &to])?;
        Ok(Relation {
            from,
            to,
            relation_type,
        })
    }

    fn open_added(&mut self, added: AddedObservations) -> Result<AddedObservations> {
        let entity_name = self.open(Field::Name, added.entity_name, &[])?;
        let added_observations = self.open_observations(&entity_name, added.added_observations)?;
        Ok(AddedObservations {
            entity_name,
            added_observations,
        })
    }

    /// Opens a graph as a store returned it, in its order, with the forms of one entity or
    /// relation merged (see [`merge_forms`]).
    pub(crate) fn open_graph(&mut self, graph: KnowledgeGraph) -> Result<KnowledgeGraph> {
        let entities = graph
            .entities
            .into_iter()
            .map(|e| self.open_entity(e))
            .collect::<Result<_>>()?;
        let relations = graph
            .relations
            .into_iter()
            .map(|r| self.open_relation(r))
            .collect::<Result<_>>()?;
        Ok(merge_forms(KnowledgeGraph {
            entities,
            relations,
        }))
    }
}

/// One entity or relation stored in two forms (under a read key and the write key, while a
/// rotation or an interrupted rekey left both) is shown once: at its first place, with the
/// observations of every form, each once. Under one key the store keeps no such doubles.
fn merge_forms(graph: KnowledgeGraph) -> KnowledgeGraph {
    let mut at: HashMap<String, usize> = HashMap::with_capacity(graph.entities.len());
    let mut entities: Vec<Entity> = Vec::with_capacity(graph.entities.len());
    for entity in graph.entities {
        match at.get(&entity.name).and_then(|&i| entities.get_mut(i)) {
            Some(first) => {
                for o in entity.observations {
                    if !first.observations.contains(&o) {
                        first.observations.push(o);
                    }
                }
            }
            None => {
                at.insert(entity.name.clone(), entities.len());
                entities.push(entity);
            }
        }
    }
    let mut seen = HashSet::with_capacity(graph.relations.len());
    let mut relations = graph.relations;
    relations.retain(|r| seen.insert(r.clone()));
    KnowledgeGraph {
        entities,
        relations,
    }
}

/// The key the first sealed string of `graph` names: what a reader without a key is refused
/// for (see [`NoKeyLayer`](crate::NoKeyLayer)).
pub(crate) fn graph_key(graph: &KnowledgeGraph) -> Option<KeyId> {
    let entity_strings = graph.entities.iter().flat_map(|e| {
        [e.name.as_str(), e.entity_type.as_str()]
            .into_iter()
            .chain(e.observations.iter().map(String::as_str))
    });
    let relation_strings = graph
        .relations
        .iter()
        .flat_map(|r| [r.from.as_str(), r.to.as_str(), r.relation_type.as_str()]);
    entity_strings
        .chain(relation_strings)
        .find_map(envelope_key_id)
}

/// The error of an `add_observations` the store refused with an entity of `sealed` missing
/// (its message names the sealed name, which no other name contains), naming the entity as
/// the caller did; other errors as they are.
fn not_found_in_plaintext(
    error: Error, additions: &[ObservationAddition], sealed: &[ObservationAddition],
) -> Error {
    if error.kind() != ErrorKind::NotFound {
        return error;
    }
    additions
        .iter()
        .zip(sealed)
        .find(|(_, s)| error.message().contains(s.entity_name.as_str()))
        .map_or(error, |(a, _)| entity_not_found(&a.entity_name))
}

// ---- the store's graph operations ------------------------------------------------------

impl<S: AgentMemory> Encrypted<S> {
    /// `create_entities`: every string sealed (after the checks a store makes, on the
    /// plaintext), what the store created opened.
    pub(crate) async fn create_sealed_entities(&self, entities: &[Entity]) -> Result<Vec<Entity>> {
        self.run(Operation::CreateEntities, async {
            graph::check_entities(entities)?;
            let mut sealer = GraphSealer::new(&self.keys);
            let sealed = entities
                .iter()
                .map(|e| sealer.seal_entity(e))
                .collect::<Result<Vec<_>>>()?;
            let created = self.inner.create_entities(&sealed).await?;
            created.into_iter().map(|e| sealer.open_entity(e)).collect()
        })
        .await
    }

    /// `create_relations`: sealed as [`create_sealed_entities`](Self::create_sealed_entities).
    pub(crate) async fn create_sealed_relations(
        &self, relations: &[Relation],
    ) -> Result<Vec<Relation>> {
        self.run(Operation::CreateRelations, async {
            graph::check_relations(relations)?;
            let mut sealer = GraphSealer::new(&self.keys);
            let sealed = relations
                .iter()
                .map(|r| sealer.seal_relation(r))
                .collect::<Result<Vec<_>>>()?;
            let created = self.inner.create_relations(&sealed).await?;
            created
                .into_iter()
                .map(|r| sealer.open_relation(r))
                .collect()
        })
        .await
    }

    /// `add_observations`: names and observations sealed; a missing entity is reported by the
    /// name the caller gave. An entity whose name is too long to be stored sealed cannot
    /// exist: the call fails with the first missing entity, found with one read.
    pub(crate) async fn add_sealed_observations(
        &self, additions: &[ObservationAddition],
    ) -> Result<Vec<AddedObservations>> {
        self.run(Operation::AddObservations, async {
            graph::check_additions(additions)?;
            let mut sealer = GraphSealer::new(&self.keys);
            let mut sealed = Vec::with_capacity(additions.len());
            // The first name that cannot be stored, and how many additions come before it.
            let mut unstorable = None;
            for a in additions {
                // Every observation is checked first: too long is `InvalidInput`, as a store
                // refuses input before it looks for entities.
                let contents = sealer.seal_observations(&a.entity_name, &a.contents)?;
                match sealer.lookup(Field::Name, &a.entity_name, &[])? {
                    Some(entity_name) => sealed.push(ObservationAddition {
                        entity_name,
                        contents,
                    }),
                    None => {
                        unstorable.get_or_insert((a.entity_name.as_str(), sealed.len()));
                    }
                }
            }
            if let Some((name, before)) = unstorable {
                let earlier = sealed.get(..before).unwrap_or_default();
                return Err(self.first_missing(additions, earlier, name).await);
            }
            match self.inner.add_observations(&sealed).await {
                Ok(added) => added.into_iter().map(|a| sealer.open_added(a)).collect(),
                Err(e) => Err(not_found_in_plaintext(e, additions, &sealed)),
            }
        })
        .await
    }

    /// The error of an `add_observations` naming `unstorable`, which cannot exist: the first
    /// entity of `sealed` (the additions before it) that is missing, else `unstorable`.
    async fn first_missing(
        &self, additions: &[ObservationAddition], sealed: &[ObservationAddition], unstorable: &str,
    ) -> Error {
        let names = sealed.iter().map(|s| s.entity_name.clone()).collect();
        let found = match self.inner.read_graph(&GraphQuery::Open(names)).await {
            Ok(found) => found,
            Err(e) => return e,
        };
        let held: HashSet<String> = found.entities.into_iter().map(|e| e.name).collect();
        let missing = additions
            .iter()
            .zip(sealed)
            .find(|(_, s)| !held.contains(&s.entity_name))
            .map_or(unstorable, |(a, _)| a.entity_name.as_str());
        entity_not_found(missing)
    }

    /// A delete `op` by every form a string may be stored in (one form unless the layer holds
    /// read keys): the plaintext `check`ed, then `delete` called with the arguments `lookup`
    /// makes in each form, a form with nothing to delete passed over. The counts are summed.
    async fn delete_in_each_form<T, F>(
        &self, op: Operation, check: impl FnOnce() -> Result<()>,
        mut lookup: impl FnMut(&mut GraphSealer<'_>) -> Result<Vec<T>>,
        delete: impl Fn(Vec<T>) -> F,
    ) -> Result<u64>
    where
        F: Future<Output = Result<u64>>,
    {
        self.run(op, async {
            check()?;
            let mut sealed = Vec::new();
            for mut form in GraphSealer::forms(&self.keys) {
                sealed.push(lookup(&mut form)?);
            }
            let mut removed = 0;
            for args in sealed.into_iter().filter(|args| !args.is_empty()) {
                removed += delete(args).await?;
            }
            Ok(removed)
        })
        .await
    }

    /// `delete_entities`, by every form of each name (names too long to be stored sealed
    /// cannot exist and are passed over).
    pub(crate) async fn delete_sealed_entities(&self, names: &[String]) -> Result<u64> {
        self.delete_in_each_form(
            Operation::DeleteEntities,
            || graph::check_names(names),
            |form| form.lookup_names(names),
            |sealed| async move { self.inner.delete_entities(&sealed).await },
        )
        .await
    }

    /// `delete_observations`, by every form (as [`delete_sealed_entities`](Self::delete_sealed_entities)).
    pub(crate) async fn delete_sealed_observations(
        &self, deletions: &[ObservationDeletion],
    ) -> Result<u64> {
        self.delete_in_each_form(
            Operation::DeleteObservations,
            || graph::check_deletions(deletions),
            |form| form.lookup_deletions(deletions),
            |sealed| async move { self.inner.delete_observations(&sealed).await },
        )
        .await
    }

    /// `delete_relations`, by every form (as [`delete_sealed_entities`](Self::delete_sealed_entities)).
    pub(crate) async fn delete_sealed_relations(&self, relations: &[Relation]) -> Result<u64> {
        self.delete_in_each_form(
            Operation::DeleteRelations,
            || graph::check_relations(relations),
            |form| form.lookup_relations(relations),
            |sealed| async move { self.inner.delete_relations(&sealed).await },
        )
        .await
    }

    /// `read_graph`: the whole graph read and opened; a search selects in the client
    /// (`KnowledgeGraph::select`, the store holds no text to match). Opening names asks the
    /// store for their sealed forms, unless the layer holds read keys (then every form may be
    /// stored: the whole graph is read and selected in the client, in the store's order).
    pub(crate) async fn read_opened_graph(&self, query: &GraphQuery) -> Result<KnowledgeGraph> {
        self.run(Operation::ReadGraph, async {
            query.validate()?;
            let mut forms = GraphSealer::forms(&self.keys);
            let stored = match (query, forms.as_mut_slice()) {
                (GraphQuery::Open(names), [only]) => {
                    let names = only.lookup_names(names)?;
                    self.inner.read_graph(&GraphQuery::Open(names)).await?
                }
                _ => self.inner.read_graph(&GraphQuery::All).await?,
            };
            let opened = GraphSealer::new(&self.keys).open_graph(stored)?;
            Ok(opened.select(query))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cipher::{envelope_len, CryptoError};

    #[test]
    fn the_longest_graph_strings_are_the_longest_whose_envelopes_fit() {
        assert_eq!(MAX_ENCRYPTED_GRAPH_NAME_BYTES, 715);
        assert_eq!(MAX_ENCRYPTED_OBSERVATION_BYTES, 49_099);
        for (max, stored) in [
            (MAX_ENCRYPTED_GRAPH_NAME_BYTES, MAX_GRAPH_NAME_BYTES),
            (MAX_ENCRYPTED_OBSERVATION_BYTES, MAX_OBSERVATION_BYTES),
        ] {
            assert!(envelope_len(max) <= stored);
            assert!(envelope_len(max + 1) > stored);
        }
        let keys = Keyring::for_tests(1);
        let mut sealer = GraphSealer::new(&keys);
        let name = "n".repeat(MAX_ENCRYPTED_GRAPH_NAME_BYTES);
        let sealed = sealer.seal(Field::Name, &name, &[]).unwrap();
        assert_eq!(sealed.len(), envelope_len(name.len()));
        assert!(sealed.len() <= MAX_GRAPH_NAME_BYTES);
        let err = sealer
            .seal(Field::Name, &format!("{name}n"), &[])
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert!(!err.to_string().contains("nnnn"), "{err}");
    }

    #[test]
    fn equal_strings_seal_equally_and_fields_apart() {
        let keys = Keyring::for_tests(2);
        let mut a = GraphSealer::new(&keys);
        let mut b = GraphSealer::new(&keys);
        let alice = a.seal(Field::Name, "Alice", &[]).unwrap();
        assert_eq!(alice, b.seal(Field::Name, "Alice", &[]).unwrap());
        assert_ne!(alice, a.seal(Field::Name, "alice", &[]).unwrap());
        let as_type = a.seal(Field::EntityType, "Alice", &["x"]).unwrap();
        assert_ne!(alice, as_type, "a field kind seals apart from another");
        let of_bob = a.seal(Field::Observation, "tea", &["Bob"]).unwrap();
        assert_ne!(
            of_bob,
            a.seal(Field::Observation, "tea", &["Carol"]).unwrap()
        );
        // Moved to another entity, an observation does not open.
        let err = a
            .open(Field::Observation, of_bob.clone(), &["Carol"])
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::CorruptData);
        assert_eq!(a.open(Field::Observation, of_bob, &["Bob"]).unwrap(), "tea");
        let other_key = keys_sealed_name(3, "Alice");
        assert_ne!(alice, other_key, "another master key seals apart");
    }

    fn keys_sealed_name(byte: u8, name: &str) -> String {
        let keys = Keyring::for_tests(byte);
        let sealed = GraphSealer::new(&keys).seal(Field::Name, name, &[]);
        sealed.unwrap()
    }

    #[test]
    fn an_entity_and_a_relation_round_trip() {
        let keys = Keyring::for_tests(4);
        let mut sealer = GraphSealer::new(&keys);
        let entity = Entity::new("Alice", "person").with_observations(["likes tea", ""]);
        let sealed = sealer.seal_entity(&entity).unwrap();
        assert!(sealed.name.starts_with(crate::ENVELOPE_PREFIX));
        assert_eq!(
            graph_key(&KnowledgeGraph {
                entities: vec![sealed.clone()],
                relations: Vec::new()
            }),
            Some(keys.write_key())
        );
        assert_eq!(sealer.open_entity(sealed).unwrap(), entity);
        let relation = Relation::new("Alice", "Acme", "works_at");
        let sealed = sealer.seal_relation(&relation).unwrap();
        assert_eq!(sealed.from, sealer.seal(Field::Name, "Alice", &[]).unwrap());
        assert_eq!(sealer.open_relation(sealed).unwrap(), relation);
    }

    #[test]
    fn plaintext_is_refused_unless_accepted() {
        let mut keys = Keyring::for_tests(5);
        let plain = Entity::new("Alice", "person");
        let err = GraphSealer::new(&keys)
            .open_entity(plain.clone())
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::CorruptData);
        let source = std::error::Error::source(&err).and_then(|s| s.downcast_ref());
        assert_eq!(source, Some(&CryptoError::NotEncrypted));
        keys.accept_plaintext = true;
        assert_eq!(
            GraphSealer::new(&keys).open_entity(plain.clone()).unwrap(),
            plain
        );
        assert_eq!(GraphSealer::forms(&keys).len(), 2, "sealed, and as given");
    }

    #[test]
    fn forms_of_one_entity_are_shown_once() {
        let graph = KnowledgeGraph {
            entities: vec![
                Entity::new("A", "t").with_observations(["1", "2"]),
                Entity::new("B", "t"),
                Entity::new("A", "t").with_observations(["2", "3"]),
            ],
            relations: vec![Relation::new("A", "B", "r"), Relation::new("A", "B", "r")],
        };
        let merged = merge_forms(graph);
        assert_eq!(merged.entities.len(), 2);
        assert_eq!(merged.entities[0].observations, ["1", "2", "3"]);
        assert_eq!(merged.relations.len(), 1);
    }
}
