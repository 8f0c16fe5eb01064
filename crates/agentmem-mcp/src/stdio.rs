//! Serving one client over standard input and output (or any pair of byte streams): one
//! JSON-RPC message per line. Nothing else is written to the output stream.

use agentmem_core::{Error, Result};
use rmcp::service::ServerInitializeError;
use rmcp::ServiceExt;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::McpServer;

/// Serves `server` over standard input and output until the client closes its end.
pub async fn serve_stdio(server: McpServer) -> Result<()> {
    serve_io(server, tokio::io::stdin(), tokio::io::stdout()).await
}

/// Serves `server` to the client at the other end of `read` and `write` (a pipe, a socket,
/// an in-process duplex) until it closes its end. A client that goes away before starting the
/// session ends it as quietly.
pub async fn serve_io<R, W>(server: McpServer, read: R, write: W) -> Result<()>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let running = match server.serve((read, write)).await {
        Ok(running) => running,
        Err(ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(e) => return Err(Error::backend(format!("MCP session did not start: {e}"))),
    };
    running
        .waiting()
        .await
        .map_err(|e| Error::backend(format!("MCP session ended abnormally: {e}")))?;
    Ok(())
}
