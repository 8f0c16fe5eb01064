//! The reference memory server's nine tools over [`GraphStore`]: the same arguments, the same
//! results (text and structured), the store's rules (which are the reference's).

use agentmem_core::{
    AgentMemory, Entity, GraphQuery, ObservationAddition, ObservationDeletion, Relation, Result,
};
use rmcp::model::{CallToolResult, JsonObject};
use serde::Deserialize;

use crate::args::parse;
use crate::reply;

/// What a graph tool call did.
pub(crate) struct GraphCall {
    /// The tool's result.
    pub(crate) result: CallToolResult,
    /// Whether the tool writes the graph (subscribers hear of each such call, as from the
    /// reference server, whether or not it changed anything).
    pub(crate) writes: bool,
}

#[derive(Deserialize)]
struct Entities {
    entities: Vec<Entity>,
}

#[derive(Deserialize)]
struct Relations {
    relations: Vec<Relation>,
}

#[derive(Deserialize)]
struct Additions {
    observations: Vec<ObservationAddition>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EntityNames {
    entity_names: Vec<String>,
}

#[derive(Deserialize)]
struct Deletions {
    deletions: Vec<ObservationDeletion>,
}

#[derive(Deserialize)]
struct Search {
    query: String,
}

#[derive(Deserialize)]
struct Names {
    names: Vec<String>,
}

/// Whether `name` is one of the reference server's tools.
pub(crate) fn handles(name: &str) -> bool {
    matches!(
        name,
        "create_entities"
            | "create_relations"
            | "add_observations"
            | "delete_entities"
            | "delete_observations"
            | "delete_relations"
            | "read_graph"
            | "search_nodes"
            | "open_nodes"
    )
}

/// Runs the graph tool `name` (one [`handles`]).
pub(crate) async fn call(
    store: &dyn AgentMemory,
    name: &str,
    args: JsonObject,
) -> Result<GraphCall> {
    let write = |result| GraphCall {
        result,
        writes: true,
    };
    let read = |query: GraphQuery| async move {
        let graph = store.read_graph(&query).await?;
        Ok(GraphCall {
            result: reply::json(&graph, None),
            writes: false,
        })
    };
    match name {
        "create_entities" => {
            async {
                let Entities { entities } = parse(args)?;
                let created = store.create_entities(&entities).await?;
                Ok(write(reply::json(&created, Some("entities"))))
            }
            .await
        }
        "create_relations" => {
            async {
                let Relations { relations } = parse(args)?;
                let created = store.create_relations(&relations).await?;
                Ok(write(reply::json(&created, Some("relations"))))
            }
            .await
        }
        "add_observations" => {
            async {
                let Additions { observations } = parse(args)?;
                let added = store.add_observations(&observations).await?;
                Ok(write(reply::json(&added, Some("results"))))
            }
            .await
        }
        "delete_entities" => {
            async {
                let EntityNames { entity_names } = parse(args)?;
                store.delete_entities(&entity_names).await?;
                Ok(write(reply::done("Entities deleted successfully")))
            }
            .await
        }
        "delete_observations" => {
            async {
                let Deletions { deletions } = parse(args)?;
                store.delete_observations(&deletions).await?;
                Ok(write(reply::done("Observations deleted successfully")))
            }
            .await
        }
        "delete_relations" => {
            async {
                let Relations { relations } = parse(args)?;
                store.delete_relations(&relations).await?;
                Ok(write(reply::done("Relations deleted successfully")))
            }
            .await
        }
        "read_graph" => read(GraphQuery::All).await,
        "search_nodes" => match parse::<Search>(args) {
            Ok(Search { query }) => read(GraphQuery::Search(query)).await,
            Err(e) => Err(e),
        },
        "open_nodes" => match parse::<Names>(args) {
            Ok(Names { names }) => read(GraphQuery::Open(names)).await,
            Err(e) => Err(e),
        },
        other => Err(agentmem_core::Error::invalid_input(format!(
            "{other} is not a knowledge-graph tool"
        ))),
    }
}
