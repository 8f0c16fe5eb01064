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
    addr: SocketAddr,
    method: Method,
    path: &str,
    extra: &[(&str, &str)],
    body: Vec<u8>,
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
    let init = post(addr, "/mcp", &[], initialize()).await;
    assert_eq!(init.status, StatusCode::OK, "{}", init.json);
    assert_eq!(init.json["result"]["serverInfo"]["name"], "agentmem");
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
    let origin = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-06-18"),
        ("origin", "http://localhost:6274"),
    ];
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
    let refused = post(
        addr,
        "/mcp",
        &[("origin", "http://evil.example")],
        initialize(),
    )
    .await;
    assert_refused(&refused, StatusCode::FORBIDDEN, "Origin");
    let allowed = post(
        addr,
        "/mcp",
        &[("origin", "https://app.example")],
        initialize(),
    )
    .await;
    assert_eq!(allowed.status, StatusCode::OK, "{}", allowed.json);

    let refused = post(addr, "/mcp", &[("host", "evil.example")], initialize()).await;
    assert_refused(&refused, StatusCode::FORBIDDEN, "Host");
    let allowed = post(addr, "/mcp", &[("host", "mcp.example:8080")], initialize()).await;
    assert_eq!(allowed.status, StatusCode::OK, "{}", allowed.json);
    let allowed = post(addr, "/mcp", &[("host", "localhost")], initialize()).await;
    assert_eq!(allowed.status, StatusCode::OK, "{}", allowed.json);
}

#[tokio::test]
async fn a_token_is_required_when_set() {
    let mut options = HttpOptions::new("");
    options.token = Some("s3cret-token".into());
    let addr = start(options).await;
    let missing = post(addr, "/mcp", &[], initialize()).await;
    assert_refused(&missing, StatusCode::UNAUTHORIZED, "bearer token");
    assert!(missing.headers["www-authenticate"]
        .to_str()
        .expect("challenge")
        .starts_with("Bearer"));
    let wrong = post(
        addr,
        "/mcp",
        &[("authorization", "Bearer s3cret")],
        initialize(),
    )
    .await;
    assert_refused(&wrong, StatusCode::UNAUTHORIZED, "not valid");
    assert!(wrong.headers["www-authenticate"]
        .to_str()
        .expect("challenge")
        .contains("invalid_token"));
    let right = post(
        addr,
        "/mcp",
        &[("authorization", "Bearer s3cret-token")],
        initialize(),
    )
    .await;
    assert_eq!(right.status, StatusCode::OK, "{}", right.json);
    assert_eq!(right.json["result"]["serverInfo"]["name"], "agentmem");
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
    let init = post(addr, "/mcp", &[], initialize()).await;
    assert_eq!(init.status, StatusCode::OK);
}
