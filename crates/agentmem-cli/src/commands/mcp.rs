//! `agentmem mcp`: serves the store to MCP clients over standard input and output, or over
//! streamable HTTP with `--http` (the `agentmem-mcp` crate). The store is opened the way every
//! other command opens it ([`super::open`], encryption key included), but on first use and
//! again while that fails, so a server started while its backend is down recovers when it
//! returns.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentmem_core::{Error, Result};
use agentmem_mcp::{serve_http, serve_stdio, HttpOptions, McpServer, RecallOpener, StoreOpener};

use super::{open, redact, Keys};
use crate::fsio::io_error;

/// What `agentmem mcp` was asked for.
#[derive(Debug)]
pub struct McpArgs {
    /// `--http ADDR`: serve HTTP there instead of stdio.
    pub http: Option<String>,
    /// `--allow-origin`: browser origins allowed besides loopback ones.
    pub allow_origins: Vec<String>,
    /// `--allow-host`: `Host` values allowed besides loopback names and the address bound.
    pub allow_hosts: Vec<String>,
    /// `--token-file`: the file holding the bearer token HTTP requests must carry.
    pub token_file: Option<PathBuf>,
}

/// Serves the store at `url` until the client closes standard input (stdio) or the process
/// is stopped (HTTP). In stdio mode nothing but JSON-RPC is written to standard output.
pub async fn run(url: &str, keys: &Keys, args: McpArgs) -> Result<()> {
    // A key file that cannot be read is a mistake to report now, not on every call.
    keys.current()?;
    let opener: StoreOpener = {
        let (url, keys) = (url.to_string(), keys.clone());
        Arc::new(move || {
            let (url, keys) = (url.clone(), keys.clone());
            Box::pin(async move { open(&url, &keys).await })
        })
    };
    // With an embedder in the URL, search_memory searches by meaning too and a background
    // indexer embeds what is written.
    let server = if agentmem::embedding_options(url)?.is_some() {
        let owned = url.to_string();
        let recaller: RecallOpener = Arc::new(move |store| agentmem::recall_for(store, &owned));
        McpServer::with_recall(redact(url), opener, recaller)
    } else {
        McpServer::new(redact(url), opener)
    };
    let Some(addr) = args.http else {
        return serve_stdio(server).await;
    };
    let mut options = HttpOptions::new(listen_address(&addr));
    options.allowed_origins = args.allow_origins;
    options.allowed_hosts = args.allow_hosts;
    options.token = args.token_file.as_deref().map(read_token).transpose()?;
    serve_http(server, options).await
}

/// `PORT` and `:PORT` listen on loopback (127.0.0.1); anything else is taken as given.
fn listen_address(addr: &str) -> String {
    let port = addr.strip_prefix(':').unwrap_or(addr);
    if port.parse::<u16>().is_ok() {
        format!("127.0.0.1:{port}")
    } else {
        addr.to_string()
    }
}

/// The token in `path`, surrounding whitespace removed; an empty one is refused.
fn read_token(path: &Path) -> Result<String> {
    let text = std::fs::read_to_string(path).map_err(|e| io_error(path, "read", e))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(Error::invalid_input(format!(
            "the token file {} is empty",
            path.display()
        )));
    }
    Ok(token.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_port_listens_on_loopback() {
        assert_eq!(listen_address("8080"), "127.0.0.1:8080");
        assert_eq!(listen_address(":0"), "127.0.0.1:0");
        assert_eq!(listen_address("0.0.0.0:8080"), "0.0.0.0:8080");
        assert_eq!(listen_address("[::1]:9"), "[::1]:9");
    }
}
