//! The streamable HTTP transport: a normal session, and each refusal (foreign Origin, foreign
//! Host, missing or wrong token, body too large, wrong path) with its JSON-RPC error body.

mod common;

use std::net::SocketAddr;

use agentmem_mcp::{HttpOptions, HttpServer, McpServer};
use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::TcpStream;

/// Starts a server over a fresh in-memory store with `options` (its address replaced by a
/// free loopback port); returns where it listens.
async fn start(mut options: HttpOptions) -> SocketAddr {
    options.addr = "127.0.0.1:0".into();
    let server = McpServer::with_store(common::store(), "memory:http");
    let bound = HttpServer::bind(server, options).await.expect("bind");
    let addr = bound.local_addr();
    assert_eq!(bound.url(), format!("http://{addr}/mcp"));
    tokio::spawn(bound.run());
    addr
}

/// What came back: status, headers, and the body's JSON (from an SSE `data:` line or a JSON
/// body).
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    json: Value,
}

/// POSTs `body` to `path` with the headers a client sends plus `extra`.
async fn post(addr: SocketAddr, path: &str, extra: &[(&str, &str)], body: Vec<u8>) -> Answer {
    send(addr, Method::POST, path, extra, body).await
}

/// Sends a `method` request to `path` with the headers a client sends plus `extra`.
async fn send(
    addr: SocketAddr, method: Method, path: &str, extra: &[(&str, &str)], body: Vec<u8>,
) -> Answer {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(connection);
    let mut request = Request::builder().method(method).uri(path);
    if !extra.iter().any(|(name, _)| *name == "host") {
        request = request.header("host", format!("127.0.0.1:{}", addr.port()));
    }
    let mut request = request
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    let request = request.body(Full::new(Bytes::from(body))).expect("request");
    let response = sender.send_request(request).await.expect("response");
    let status = response.status();
    let headers = response.headers().clone();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    let body = String::from_utf8_lossy(&body).into_owned();
    let json = body
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim)
        .find(|data| data.starts_with('{'))
        .map(str::to_string)
        .unwrap_or(body);
    let json = serde_json::from_str(&json).unwrap_or(Value::String(json));
    Answer {
        status,
        headers,
        json,
    }
}

fn initialize() -> Vec<u8> {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "1"}}
    })
    .to_string()
    .into_bytes()
}

/// POSTs an `initialize` to `/mcp` with the headers a client sends plus `extra`.
async fn initialize_with(addr: SocketAddr, extra: &[(&str, &str)]) -> Answer {
    post(addr, "/mcp", extra, initialize()).await
}

/// Asserts the server answered an `initialize`.
fn assert_initialized(answer: &Answer) {
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.json);
    assert_eq!(answer.json["result"]["serverInfo"]["name"], "agentmem");
}

/// The `WWW-Authenticate` challenge of a refusal.
fn challenge(answer: &Answer) -> &str {
    answer.headers["www-authenticate"]
        .to_str()
        .expect("challenge")
}

/// Asserts a refusal: `status`, a JSON-RPC error body whose message contains `words`.
fn assert_refused(answer: &Answer, status: StatusCode, words: &str) {
    assert_eq!(answer.status, status, "{}", answer.json);
    assert_eq!(
        answer.headers["content-type"], "application/json",
        "{}",
        answer.json
    );
    assert_eq!(answer.json["jsonrpc"], "2.0");
    assert_eq!(answer.json["id"], Value::Null);
    assert!(answer.json["error"]["code"].is_i64(), "{}", answer.json);
    let message = answer.json["error"]["message"].as_str().expect("message");
    assert!(message.contains(words), "{message:?} should say {words:?}");
}

#[tokio::test]
async fn a_session_initializes_and_calls_tools() {
    let addr = start(HttpOptions::new("")).await;
    let init = initialize_with(addr, &[]).await;
    assert_initialized(&init);
    let session = init.headers["mcp-session-id"]
        .to_str()
        .expect("session id")
        .to_string();
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-06-18"),
    ];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let answer = post(addr, "/mcp", &headers, initialized.to_string().into_bytes()).await;
    assert_eq!(answer.status, StatusCode::ACCEPTED);
    let call = json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "create_entities", "arguments": {"entities": [
            {"name": "Alice", "entityType": "person", "observations": ["x"]}
        ]}}
    });
    let answer = post(addr, "/mcp", &headers, call.to_string().into_bytes()).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(
        answer.json["result"]["structuredContent"]["entities"][0]["name"],
        "Alice"
    );
    // A browser page on this machine may call it too.
    let origin = [headers[0], headers[1], ("origin", "http://localhost:6274")];
    let read = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                      "params": {"name": "read_graph", "arguments": {}}});
    let answer = post(addr, "/mcp", &origin, read.to_string().into_bytes()).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(
        answer.json["result"]["structuredContent"]["entities"][0]["observations"],
        json!(["x"])
    );
    // Ending the session: 200, as clients expect.
    let ended = send(addr, Method::DELETE, "/mcp", &headers, Vec::new()).await;
    assert_eq!(ended.status, StatusCode::OK);
    let gone = post(addr, "/mcp", &headers, read.to_string().into_bytes()).await;
    assert_refused(&gone, StatusCode::NOT_FOUND, "ession");
}

#[tokio::test]
async fn foreign_origins_and_hosts_are_refused() {
    let mut options = HttpOptions::new("");
    options.allowed_origins = vec!["https://app.example:443".into()];
    options.allowed_hosts = vec!["mcp.example".into()];
    let addr = start(options).await;
    // Each header sent, and what a refusal of it names (`None`: allowed).
    let cases = [
        ("origin", "http://evil.example", Some("Origin")),
        ("origin", "https://app.example", None),
        ("host", "evil.example", Some("Host")),
        ("host", "mcp.example:8080", None),
        ("host", "localhost", None),
    ];
    for (name, value, refusal) in cases {
        let answer = initialize_with(addr, &[(name, value)]).await;
        match refusal {
            Some(words) => assert_refused(&answer, StatusCode::FORBIDDEN, words),
            None => assert_initialized(&answer),
        }
    }
}

#[tokio::test]
async fn a_token_is_required_when_set() {
    let mut options = HttpOptions::new("");
    options.token = Some("s3cret-token".into());
    let addr = start(options).await;
    let missing = initialize_with(addr, &[]).await;
    assert_refused(&missing, StatusCode::UNAUTHORIZED, "bearer token");
    assert!(challenge(&missing).starts_with("Bearer"));
    let wrong = initialize_with(addr, &[("authorization", "Bearer s3cret")]).await;
    assert_refused(&wrong, StatusCode::UNAUTHORIZED, "not valid");
    assert!(challenge(&wrong).contains("invalid_token"));
    let right = initialize_with(addr, &[("authorization", "Bearer s3cret-token")]).await;
    assert_initialized(&right);
}

#[tokio::test]
async fn oversized_bodies_and_other_paths_are_refused() {
    let mut options = HttpOptions::new("");
    options.max_body_bytes = 1024;
    let addr = start(options).await;
    let mut big = json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {}}).to_string();
    big.push_str(&" ".repeat(4096));
    let refused = post(addr, "/mcp", &[], big.into_bytes()).await;
    assert_refused(&refused, StatusCode::PAYLOAD_TOO_LARGE, "1024 bytes");
    let refused = post(addr, "/other", &[], initialize()).await;
    assert_refused(&refused, StatusCode::NOT_FOUND, "/mcp");
    let refused = post(addr, "/mcp", &[], b"{not json".to_vec()).await;
    assert_eq!(refused.json["error"]["code"], -32700, "{}", refused.json);
    // Still serving.
    assert_initialized(&initialize_with(addr, &[]).await);
}
