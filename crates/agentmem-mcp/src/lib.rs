//! An MCP (Model Context Protocol) memory server over any agentmem store, built on the official
//! Rust SDK (`rmcp`): what `agentmem --store URL mcp` runs.
//!
//! It is a drop-in for the reference memory server `@modelcontextprotocol/server-memory`
//! (release 2026.8.31): the same nine knowledge-graph tools (names, descriptions, input and
//! output schemas, annotations), the same results (pretty JSON text and `structuredContent`),
//! the same errors, and its `memory://knowledge-graph` resource with update notifications. The
//! graph lives in the store ([`agentmem_core::GraphStore`]), so many server processes, over
//! stdio or HTTP, share it without losing writes. agentmem's own tools add conversation
//! sessions and memory items, read and written as the CLI and the libraries do.
//!
//! ```no_run
//! use std::sync::Arc;
//! use agentmem_core::{AgentMemory, InMemoryStore};
//! use agentmem_mcp::{serve_http, serve_stdio, HttpOptions, McpServer, StoreOpener};
//!
//! # async fn run() -> agentmem_core::Result<()> {
//! // The store is opened on first use (and retried while that fails).
//! let opener: StoreOpener = Arc::new(|| {
//!     Box::pin(async { Ok(Arc::new(InMemoryStore::new()) as Arc<dyn AgentMemory>) })
//! });
//! let server = McpServer::new("memory:", opener);
//! serve_stdio(server).await?;
//! # Ok(()) }
//! # async fn http(server: McpServer) -> agentmem_core::Result<()> {
//! // Or over HTTP, at http://127.0.0.1:8080/mcp:
//! serve_http(server, HttpOptions::new("127.0.0.1:8080")).await?;
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs, clippy::unwrap_used)]

mod args;
mod graph_tools;
mod http;
mod reply;
mod server;
mod session_tools;
mod stdio;
mod store_slot;
mod subscriptions;
mod tools;

pub use http::{
    serve_http, HttpOptions, HttpServer, DEFAULT_MAX_BODY_BYTES, LOOPBACK_ORIGINS, MCP_PATH,
};
pub use server::McpServer;
pub use stdio::{serve_io, serve_stdio};
pub use store_slot::{OpenFuture, RecallOpener, StoreOpener};
pub use subscriptions::GRAPH_URI;
pub use tools::reference_tools_json;
