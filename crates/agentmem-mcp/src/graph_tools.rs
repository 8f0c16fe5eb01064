//! The reference memory server's nine tools over [`GraphStore`]: the same arguments, the same
//! results (text and structured), the store's rules (which are the reference's).

use agentmem_core::{
    AgentMemory, Entity, GraphQuery, ObservationAddition, ObservationDeletion, Relation, Result,
};
use rmcp::model::{CallToolResult, JsonObject};

use crate::args::field;
use crate::reply;

/// What a graph tool call did.
pub(crate) struct GraphCall {
    /// The tool's result.
    pub(crate) result: CallToolResult,
    /// Whether the tool writes the graph (subscribers hear of each such call, as from the
    /// reference server, whether or not it changed anything).
    pub(crate) writes: bool,
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
    store: &dyn AgentMemory, name: &str, args: JsonObject,
) -> Result<GraphCall> {
    let query = match name {
        "read_graph" => GraphQuery::All,
        "search_nodes" => GraphQuery::Search(field(args, "query")?),
        "open_nodes" => GraphQuery::Open(field(args, "names")?),
        _ => {
            let result = write(store, name, args).await?;
            return Ok(GraphCall {
                result,
                writes: true,
            });
        }
    };
    let graph = store.read_graph(&query).await?;
    Ok(GraphCall {
        result: reply::json(&graph, None),
        writes: false,
    })
}

/// Runs the graph tool `name` that writes: a create answers with what it made, a delete with
/// the reference's message.
async fn write(store: &dyn AgentMemory, name: &str, args: JsonObject) -> Result<CallToolResult> {
    Ok(match name {
        "create_entities" => {
            let entities: Vec<Entity> = field(args, "entities")?;
            reply::json(&store.create_entities(&entities).await?, Some("entities"))
        }
        "create_relations" => {
            let relations: Vec<Relation> = field(args, "relations")?;
            reply::json(
                &store.create_relations(&relations).await?,
                Some("relations"),
            )
        }
        "add_observations" => {
            let additions: Vec<ObservationAddition> = field(args, "observations")?;
            reply::json(&store.add_observations(&additions).await?, Some("results"))
        }
        "delete_entities" => {
            let names: Vec<String> = field(args, "entityNames")?;
            store.delete_entities(&names).await?;
            reply::done("Entities deleted successfully")
        }
        "delete_observations" => {
            let deletions: Vec<ObservationDeletion> = field(args, "deletions")?;
            store.delete_observations(&deletions).await?;
            reply::done("Observations deleted successfully")
        }
        "delete_relations" => {
            let relations: Vec<Relation> = field(args, "relations")?;
            store.delete_relations(&relations).await?;
            reply::done("Relations deleted successfully")
        }
        other => {
            return Err(agentmem_core::Error::invalid_input(format!(
                "{other} is not a knowledge-graph tool"
            )))
        }
    })
}
