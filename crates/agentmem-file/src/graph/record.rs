//! The lines of `graph/graph.jsonl`: a header, then one record a write that changed the graph,
//! holding what it changed (its effect, not its request), so that replaying the records in
//! order through [`GraphState`] rebuilds the graph exactly. A write is one line, so a crash
//! that tears the line takes the whole write with it.

use agentmem_core::{
    AddedObservations, Entity, GraphState, ObservationAddition, ObservationDeletion, Relation,
    Result,
};
use serde::{Deserialize, Serialize};

use crate::log::{push_line, HeadedLog, HeadedRecord};

/// The graph log: the header this build writes (the newest version it reads), and what its
/// messages call it.
pub(crate) const GRAPH_KIND: HeadedLog = HeadedLog {
    kind: "graph",
    name: "graph log",
    format: "agentmem.graph",
    version: 1,
};

/// One line of the graph log. The names of the operations are the store's methods'.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum Record {
    /// The first line.
    Header { format: String, version: u32 },
    /// Entities created, as stored: new names, each observation once.
    CreateEntities { entities: Vec<Entity> },
    /// Relations created (each new).
    CreateRelations { relations: Vec<Relation> },
    /// The observations `add_observations` added, by entity (those new to it, in order);
    /// entities that gained nothing are left out.
    AddObservations { added: Vec<AddedObservations> },
    /// The names `delete_entities` was given: it removed those entities and every relation
    /// naming one of them.
    DeleteEntities { names: Vec<String> },
    /// The deletions `delete_observations` was given (it removed something).
    DeleteObservations { deletions: Vec<ObservationDeletion> },
    /// The relations `delete_relations` was given (it removed something).
    DeleteRelations { relations: Vec<Relation> },
}

impl Record {
    /// The header of a log this build writes.
    pub(crate) fn header() -> Self {
        Record::Header {
            format: GRAPH_KIND.format.into(),
            version: GRAPH_KIND.version,
        }
    }

    /// The record as one line, newline included.
    pub(crate) fn line(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        push_line(&mut out, self)?;
        Ok(out)
    }

    /// Replays the record on `state`. A record written by this store always applies as it did;
    /// after lines were set aside (see `replay.rs`) an addition may name an entity whose
    /// creation went with them: that addition is passed over, never a failure of the replay.
    pub(crate) fn apply(self, state: &mut GraphState) {
        match self {
            Record::Header { .. } => {}
            Record::CreateEntities { entities } => {
                state.create_entities(&entities);
            }
            Record::CreateRelations { relations } => {
                state.create_relations(&relations);
            }
            Record::AddObservations { added } => {
                let additions: Vec<ObservationAddition> = added
                    .into_iter()
                    .filter(|a| state.has_entity(&a.entity_name))
                    .map(|a| ObservationAddition {
                        entity_name: a.entity_name,
                        contents: a.added_observations,
                    })
                    .collect();
                // Every entity named exists (filtered above), so nothing is refused.
                if let Err(e) = state.add_observations(&additions) {
                    tracing::warn!(error = %e, "a graph log record does not apply");
                }
            }
            Record::DeleteEntities { names } => {
                state.delete_entities(&names);
            }
            Record::DeleteObservations { deletions } => {
                state.delete_observations(&deletions);
            }
            Record::DeleteRelations { relations } => {
                state.delete_relations(&relations);
            }
        }
    }
}

/// A whole log holding `state`: the header, then one line an entity and one a relation, in
/// their order (so a damaged line costs one entity or relation, never the graph).
pub(crate) fn encode_log(state: &GraphState) -> Result<Vec<u8>> {
    let graph = state.graph();
    let mut out = Record::header().line()?;
    for entity in graph.entities {
        let entities = vec![entity];
        push_line(&mut out, &Record::CreateEntities { entities })?;
    }
    for relation in graph.relations {
        let relations = vec![relation];
        push_line(&mut out, &Record::CreateRelations { relations })?;
    }
    Ok(out)
}

impl HeadedRecord for Record {
    fn header(&self) -> Option<(&str, u32)> {
        match self {
            Record::Header { format, version } => Some((format, *version)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentmem_core::GraphQuery;
    use std::path::Path;

    fn parse_record(line: u64, bytes: &[u8]) -> std::result::Result<Record, String> {
        GRAPH_KIND.parse(line, bytes)
    }

    fn replay(bytes: &[u8]) -> GraphState {
        let mut state = GraphState::default();
        for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
            if !line.is_empty() {
                parse_record(i as u64 + 1, line)
                    .expect("parses")
                    .apply(&mut state);
            }
        }
        state
    }

    #[test]
    fn a_whole_log_replays_to_the_same_graph() {
        let mut state = GraphState::default();
        state.create_entities(&[
            Entity::new("b", "t").with_observations(["1", "2"]),
            Entity::new("a", "t"),
        ]);
        state.create_relations(&[Relation::new("a", "b", "r"), Relation::new("x", "y", "r")]);
        let bytes = encode_log(&state).expect("encode");
        assert_eq!(bytes.iter().filter(|&&b| b == b'\n').count(), 5);
        let all = &GraphQuery::All;
        assert_eq!(replay(&bytes).read(all), state.read(all));
    }

    #[test]
    fn additions_to_entities_set_aside_are_passed_over() {
        let added = vec![
            AddedObservations {
                entity_name: "gone".into(),
                added_observations: vec!["x".into()],
            },
            AddedObservations {
                entity_name: "here".into(),
                added_observations: vec!["y".into()],
            },
        ];
        let mut state = GraphState::default();
        state.create_entities(&[Entity::new("here", "t")]);
        Record::AddObservations { added }.apply(&mut state);
        let graph = state.read(&GraphQuery::All);
        assert_eq!(graph.entities[0].observations, ["y"]);
    }

    #[test]
    fn headers_are_checked() {
        let header = Record::header().line().expect("line");
        let header = &header[..header.len() - 1];
        assert!(parse_record(1, header).is_ok());
        assert!(parse_record(2, header).is_err());
        let names = br#"{"op":"delete_entities","names":["a"]}"#;
        assert!(parse_record(1, names).is_err());
        assert!(parse_record(2, names).is_ok());
        let newer = br#"{"op":"header","format":"agentmem.graph","version":99}"#;
        assert!(parse_record(1, newer).is_err());
        let e = GRAPH_KIND
            .refuse_newer(newer, Path::new("x"))
            .expect_err("newer");
        assert_eq!(e.kind(), agentmem_core::ErrorKind::Unsupported);
        let other = br#"{"op":"header","format":"agentmem.memories","version":1}"#;
        assert!(parse_record(1, other).is_err());
    }
}
