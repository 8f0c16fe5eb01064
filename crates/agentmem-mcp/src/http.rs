//! Serving MCP over streamable HTTP at `/mcp`, guarded as the MCP specification asks of a
//! local server: the `Host` header must name the server (loopback names, the address it is
//! bound to, and the hosts allowed by hand), a browser's `Origin` must be a loopback origin or
//! one allowed by hand (DNS-rebinding protection), request bodies are limited (4 MiB by
//! default), and with a token every request must carry it as `Authorization: Bearer …`.
//! Every refusal answers with a JSON-RPC error body.

use std::convert::Infallible;
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use agentmem_core::{Error, Result};
use bytes::Bytes;
use http::header::{HeaderValue, AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, WWW_AUTHENTICATE};
use http::{Method, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use subtle::ConstantTimeEq;
use tokio::net::TcpListener;

use crate::McpServer;

/// The path the server answers at.
pub const MCP_PATH: &str = "/mcp";

/// The largest request body accepted by default: 4 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// The browser origins always allowed: pages served from this machine, on any port.
pub const LOOPBACK_ORIGINS: [&str; 3] =
    ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"];

/// The `Host` names always allowed (any port).
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

type Body = BoxBody<Bytes, Infallible>;

/// How to serve over HTTP.
#[derive(Clone)]
pub struct HttpOptions {
    /// Where to listen, `host:port` (port 0 picks a free one).
    pub addr: String,
    /// Browser origins allowed besides [`LOOPBACK_ORIGINS`] (`https://app.example:443`,
    /// `http://host:*`). A request without `Origin` (not from a browser) is not checked.
    pub allowed_origins: Vec<String>,
    /// `Host` header values allowed besides the loopback names and the address bound
    /// (`example.com`, `example.com:8080`): needed when clients reach the server by a name.
    pub allowed_hosts: Vec<String>,
    /// The bearer token every request must carry, when set.
    pub token: Option<String>,
    /// The largest request body accepted, in bytes (413 above it).
    pub max_body_bytes: usize,
}

impl HttpOptions {
    /// Options to listen at `addr` with nothing allowed beyond loopback and no token.
    pub fn new(addr: impl Into<String>) -> Self {
        HttpOptions {
            addr: addr.into(),
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            token: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        }
    }
}

impl fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpOptions")
            .field("addr", &self.addr)
            .field("allowed_origins", &self.allowed_origins)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("token", &self.token.as_ref().map(|_| "***"))
            .field("max_body_bytes", &self.max_body_bytes)
            .finish()
    }
}

/// An HTTP server bound to its address, not yet serving.
pub struct HttpServer {
    listener: TcpListener,
    local: SocketAddr,
    gate: Arc<Gate>,
}

impl fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpServer")
            .field("local", &self.local)
            .finish_non_exhaustive()
    }
}

/// Serves `server` over HTTP as `options` say until the process ends, after writing
/// `agentmem mcp: listening on http://ADDR/mcp` to standard error.
pub async fn serve_http(server: McpServer, options: HttpOptions) -> Result<()> {
    let bound = HttpServer::bind(server, options).await?;
    eprintln!("agentmem mcp: listening on {}", bound.url());
    bound.run().await
}

impl HttpServer {
    /// Binds `options.addr`; each HTTP session gets its own [`McpServer::connection`].
    pub async fn bind(server: McpServer, options: HttpOptions) -> Result<Self> {
        let listener = TcpListener::bind(&options.addr)
            .await
            .map_err(|e| Error::unavailable(format!("cannot listen on {}: {e}", options.addr)))?;
        let local = listener
            .local_addr()
            .map_err(|e| Error::unavailable(format!("cannot listen on {}: {e}", options.addr)))?;
        let config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(allowed_hosts(&options, local))
            .with_allowed_origins(
                LOOPBACK_ORIGINS
                    .iter()
                    .map(|o| o.to_string())
                    .chain(options.allowed_origins.iter().cloned()),
            )
            .enforce_origin_validation()
            .with_max_request_body_bytes(options.max_body_bytes);
        let service = StreamableHttpService::new(
            move || Ok(server.connection()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let gate = Arc::new(Gate {
            service,
            token: options.token.clone(),
            max_body_bytes: options.max_body_bytes,
        });
        Ok(HttpServer {
            listener,
            local,
            gate,
        })
    }

    /// The address bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The endpoint's URL: `http://ADDR/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}{MCP_PATH}", self.local)
    }

    /// Accepts and serves connections until the process ends.
    pub async fn run(self) -> Result<()> {
        loop {
            let stream = match self.listener.accept().await {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors and the like: wait for some to be freed.
                    tracing::warn!(error = %e, "agentmem mcp: accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let gate = self.gate.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request| {
                    let gate = gate.clone();
                    async move { Ok::<_, Infallible>(gate.respond(request).await) }
                });
                let served = http1::Builder::new()
                    .timer(TokioTimer::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
                if let Err(e) = served {
                    tracing::debug!(error = %e, "agentmem mcp: HTTP connection ended");
                }
            });
        }
    }
}

/// The `Host` values allowed: loopback names, the address bound (unless it is the unspecified
/// address, which no client sends), the host named in `addr`, and those allowed by hand.
fn allowed_hosts(options: &HttpOptions, local: SocketAddr) -> Vec<String> {
    let mut hosts: Vec<String> = LOOPBACK_HOSTS.iter().map(|h| h.to_string()).collect();
    if !local.ip().is_unspecified() {
        hosts.push(local.ip().to_string());
    }
    if let Some((host, _port)) = options.addr.rsplit_once(':') {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let unspecified = host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_unspecified());
        if !host.is_empty() && !unspecified {
            hosts.push(host.to_string());
        }
    }
    hosts.extend(options.allowed_hosts.iter().cloned());
    hosts
}

/// What stands before rmcp's service: the path, the token, and JSON-RPC error bodies.
struct Gate {
    service: StreamableHttpService<McpServer, LocalSessionManager>,
    token: Option<String>,
    max_body_bytes: usize,
}

impl Gate {
    async fn respond(&self, request: Request<Incoming>) -> Response<Body> {
        if request.uri().path() != MCP_PATH {
            return refusal(
                StatusCode::NOT_FOUND,
                -32000,
                "Not Found: the MCP endpoint is /mcp",
            );
        }
        if let Some(token) = &self.token {
            if let Some(refused) = check_token(&request, token) {
                return refused;
            }
        }
        // A body announced too large is refused before it is read (rmcp would read up to the
        // limit first, and a client that waits for an answer before sending would hang).
        let announced = request
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if announced.is_some_and(|n| n > self.max_body_bytes as u64) {
            return refusal(
                StatusCode::PAYLOAD_TOO_LARGE,
                -32000,
                &format!(
                    "Payload Too Large: request bodies are limited to {} bytes",
                    self.max_body_bytes
                ),
            );
        }
        let ends_session = request.method() == Method::DELETE;
        let mut response = self.service.handle(request).await;
        // rmcp accepts a session's end with 202; clients (Python's among them) expect 200 or
        // 204 and warn otherwise.
        if ends_session && response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::OK;
        }
        as_jsonrpc_error(response).await
    }
}

/// `None` when `request` carries `token`; else the 401 answer.
fn check_token(request: &Request<Incoming>, token: &str) -> Option<Response<Body>> {
    let given = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, value) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| value.trim())
        });
    let (challenge, message) = match given {
        Some(given) if bool::from(given.as_bytes().ct_eq(token.as_bytes())) => return None,
        Some(_) => (
            r#"Bearer realm="agentmem", error="invalid_token""#,
            "Unauthorized: the bearer token is not valid",
        ),
        None => (
            r#"Bearer realm="agentmem""#,
            "Unauthorized: this server needs a bearer token (Authorization: Bearer TOKEN)",
        ),
    };
    let mut response = refusal(StatusCode::UNAUTHORIZED, -32000, message);
    response
        .headers_mut()
        .insert(WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
    Some(response)
}

/// A refusal with status `status` and the JSON-RPC error `{code, message}` (no request id).
fn refusal(status: StatusCode, code: i64, message: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(error_body(code, message)).boxed());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn error_body(code: i64, message: &str) -> Bytes {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": code, "message": message},
    });
    Bytes::from(body.to_string())
}

/// rmcp answers refusals (403 for a foreign Host or Origin, 413 for a body too large, 406,
/// 415, …) in plain text; this gives them a JSON-RPC error body with the same words, keeping
/// the status and the other headers. Other answers pass unchanged.
async fn as_jsonrpc_error(response: Response<Body>) -> Response<Body> {
    let plain = !response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json") || v.starts_with("text/event-stream"));
    let status = response.status();
    if !(plain && (status.is_client_error() || status.is_server_error())) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = match body.collect().await {
        Ok(collected) => String::from_utf8_lossy(&collected.to_bytes()).into_owned(),
        Err(never) => match never {},
    };
    let code = if text.starts_with("fail to deserialize") {
        -32700
    } else if status == StatusCode::NOT_FOUND {
        -32001
    } else {
        -32000
    };
    parts.headers.remove(CONTENT_LENGTH);
    parts
        .headers
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Response::from_parts(parts, Full::new(error_body(code, &text)).boxed())
}
