//! [`McpServer`]: the MCP request handler. It lists the tools and the knowledge-graph resource,
//! checks each call's arguments as the reference server's SDK does, and runs it on the store.

use std::sync::Arc;

use agentmem_core::{AgentMemory, Error, ErrorKind, GraphQuery};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorCode, ErrorData, Implementation,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ServerCapabilities,
    ServerConfig, SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{RoleServer, ServerHandler};

use crate::store_slot::{describe, RecallOpener, StoreOpener, StoreSlot};
use crate::subscriptions::{Subscribers, GRAPH_URI};
use crate::{args, graph_tools, reply, session_tools, tools};
use agentmem_core::one_line;

/// What every connection of one server shares: the store and the subscribers.
#[derive(Debug)]
struct Shared {
    slot: StoreSlot,
    subscribers: Subscribers,
}

/// The MCP handler of one connection to an agentmem store: the reference memory server's nine
/// knowledge-graph tools and its `memory://knowledge-graph` resource, and agentmem's own
/// session and memory tools.
///
/// The store is opened on the first call that needs it, and again on later calls while opening
/// fails; until then each call answers with an error result naming the store. Each connection
/// (an HTTP session) gets its own handler from [`connection`](Self::connection), sharing the
/// store and the resource subscriptions.
///
/// ```
/// use std::sync::Arc;
/// use agentmem_core::{AgentMemory, InMemoryStore};
/// use agentmem_mcp::McpServer;
///
/// let store: Arc<dyn AgentMemory> = Arc::new(InMemoryStore::new());
/// let server = McpServer::with_store(store, "memory://test");
/// assert_eq!(server.store_name(), "memory://test");
/// ```
#[derive(Debug)]
pub struct McpServer {
    shared: Arc<Shared>,
    /// This connection's number among the subscribers.
    id: u64,
}

impl McpServer {
    /// A server over the store `opener` opens, named `display` in error results (give the
    /// URL with any password hidden: [`agentmem_core::redact_url`]).
    pub fn new(display: impl Into<String>, opener: StoreOpener) -> Self {
        Self::build(display.into(), opener, None)
    }

    /// A server over the store `opener` opens that searches memory items by meaning too, with
    /// the recall `recaller` builds over the opened store (`Ok(None)`: keyword search only).
    /// When there is recall, a background indexer embeds what is written (nudged after each
    /// write that adds text), and `search_memory` searches in hybrid mode unless asked
    /// otherwise.
    pub fn with_recall(
        display: impl Into<String>, opener: StoreOpener, recaller: RecallOpener,
    ) -> Self {
        Self::build(display.into(), opener, Some(recaller))
    }

    fn build(display: String, opener: StoreOpener, recaller: Option<RecallOpener>) -> Self {
        let shared = Arc::new(Shared {
            slot: StoreSlot::new(display, opener, recaller),
            subscribers: Subscribers::default(),
        });
        let id = shared.subscribers.new_id();
        McpServer { shared, id }
    }

    /// A server over a store already open.
    pub fn with_store(store: Arc<dyn AgentMemory>, display: impl Into<String>) -> Self {
        let opener: StoreOpener = Arc::new(move || {
            let store = store.clone();
            Box::pin(async move { Ok(store) })
        });
        Self::new(display, opener)
    }

    /// The handler of another connection to the same server: the same store, the same
    /// subscribers.
    pub fn connection(&self) -> McpServer {
        McpServer {
            shared: self.shared.clone(),
            id: self.shared.subscribers.new_id(),
        }
    }

    /// The store's name as error results show it.
    pub fn store_name(&self) -> &str {
        self.shared.slot.display()
    }

    /// The text of a failed call: a missing thing in the store's words alone (a missing
    /// entity reads exactly as from the reference server), what else the caller can fix as
    /// the whole error, and anything else as the error naming the store.
    fn failure_text(&self, error: &Error) -> String {
        match error.kind() {
            ErrorKind::NotFound => error.message().to_string(),
            ErrorKind::InvalidInput | ErrorKind::Conflict => one_line(error),
            _ => describe(self.store_name(), error),
        }
    }

    async fn store(&self) -> Result<Arc<dyn AgentMemory>, String> {
        self.shared
            .slot
            .get()
            .await
            .map_err(|e| describe(self.store_name(), &e))
    }

    /// Runs one tool call; every failure is a result, never a protocol error.
    async fn run_tool(&self, name: &str, args: rmcp::model::JsonObject) -> CallToolResult {
        let catalog = match tools::catalog() {
            Ok(catalog) => catalog,
            Err(e) => return reply::failure(e.message),
        };
        let Some(schema) = catalog.input_schema(name) else {
            return reply::unknown_tool(name);
        };
        let problems = args::problems(schema, &args);
        if !problems.is_empty() {
            return reply::invalid_arguments(name, &problems);
        }
        let store = match self.store().await {
            Ok(store) => store,
            Err(text) => return reply::failure(text),
        };
        // Built with the store, on the first call (starting the background indexer); only
        // search_memory uses it.
        let recall = self.shared.slot.recall(&store).await;
        if let Err(e) = &recall {
            tracing::warn!(error = %one_line(e), "recall by meaning is unavailable");
        }
        if graph_tools::handles(name) {
            return match graph_tools::call(store.as_ref(), name, args).await {
                Ok(call) => {
                    if call.writes {
                        self.shared.subscribers.graph_updated(self.id).await;
                    }
                    call.result
                }
                Err(e) => reply::failure(self.failure_text(&e)),
            };
        }
        match session_tools::call(store.as_ref(), recall, name, args).await {
            Some(Ok(result)) => {
                if session_tools::adds_text(name) {
                    self.shared.slot.nudge().await;
                }
                result
            }
            Some(Err(e)) => reply::failure(self.failure_text(&e)),
            None => reply::unknown_tool(name),
        }
    }
}

impl Drop for McpServer {
    fn drop(&mut self) {
        self.shared.subscribers.remove(self.id);
    }
}

/// The `memory://knowledge-graph` resource as the reference server lists it.
fn graph_resource() -> Resource {
    Resource::new(GRAPH_URI, "knowledge-graph")
        .with_title("Knowledge Graph")
        .with_description("The full knowledge graph with all entities and relations")
        .with_mime_type("application/json")
}

const INSTRUCTIONS: &str = "Persistent memory shared by every agent and program using this \
agentmem store. A knowledge graph of entities (people, projects, things: a name, a type and \
observations) and the relations between them (create_entities, add_observations, \
create_relations, search_nodes, open_nodes, read_graph, and the delete tools); conversation \
sessions (append_messages, load_session, list_sessions, fork_session, rewind_session); and \
remembered facts (store_memory, search_memory, get_context).";

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_resources_list_changed()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(
                Implementation::new("agentmem", env!("CARGO_PKG_VERSION"))
                    .with_title("agentmem memory server"),
            )
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self, _request: Option<PaginatedRequestParams>, _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            tools::catalog()?.tools.clone(),
        ))
    }

    async fn call_tool(
        &self, request: CallToolRequestParams, _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        Ok(self.run_tool(&request.name, args).await.into())
    }

    async fn list_resources(
        &self, _request: Option<PaginatedRequestParams>, _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![graph_resource()]))
    }

    async fn read_resource(
        &self, request: ReadResourceRequestParams, _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if request.uri != GRAPH_URI {
            // The reference SDK's words, its error code prefix included.
            return Err(ErrorData::new(
                ErrorCode::INVALID_PARAMS,
                format!("MCP error -32602: Resource {} not found", request.uri),
                None,
            ));
        }
        let store = self
            .store()
            .await
            .map_err(|text| ErrorData::internal_error(text, None))?;
        let graph = store
            .read_graph(&GraphQuery::All)
            .await
            .map_err(|e| ErrorData::internal_error(self.failure_text(&e), None))?;
        let text = serde_json::to_string_pretty(&graph)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let contents = ResourceContents::text(text, GRAPH_URI).with_mime_type("application/json");
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self, request: SubscribeRequestParams, context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // As the reference: any URI is accepted; only the graph's is ever notified.
        if request.uri == GRAPH_URI {
            self.shared.subscribers.subscribe(self.id, context.peer);
        }
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self, request: UnsubscribeRequestParams, _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if request.uri == GRAPH_URI {
            self.shared.subscribers.remove(self.id);
        }
        Ok(())
    }

    fn accepted_subscription_filter(
        &self, requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let wants_graph = requested
            .resource_subscriptions
            .as_ref()
            .is_some_and(|uris| uris.iter().any(|uri| uri == GRAPH_URI));
        wants_graph.then(|| {
            SubscriptionFilter::builder()
                .resource_subscription(GRAPH_URI)
                .build()
        })
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let subscribers = &self.shared.subscribers;
        let id = subscribers.new_id();
        subscribers.listen(id, self.id, context.sink().clone());
        context.cancelled().await;
        subscribers.remove(id);
        Ok(())
    }
}
