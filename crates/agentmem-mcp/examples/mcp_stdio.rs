//! An MCP memory server over standard input and output, on an in-memory store:
//!
//! ```sh
//! cargo run -p agentmem-mcp --example mcp_stdio
//! ```
//!
//! then give an MCP client that command (or type JSON-RPC lines). `agentmem --store URL mcp`
//! does the same on any store, opened lazily.

use std::sync::Arc;

use agentmem_core::{AgentMemory, InMemoryStore};
use agentmem_mcp::{serve_stdio, McpServer};

#[tokio::main]
async fn main() -> agentmem_core::Result<()> {
    // The standard layers (validation, tracing), as every opened store wears them.
    let store: Arc<dyn AgentMemory> = Arc::new(agentmem_core::layer::layered(InMemoryStore::new()));
    serve_stdio(McpServer::with_store(store, "memory:")).await
}
