//! Test helpers: a raw JSON-RPC client over an in-process duplex (so tests see exactly the
//! bytes a client would), stores, and a small JSON Schema checker for output schemas.
#![allow(dead_code)]

use std::sync::Arc;

use agentmem_core::{AgentMemory, InMemoryStore};
use agentmem_mcp::{serve_io, McpServer};
use serde_json::{json, Map, Value};
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};

/// The URI of the graph resource.
pub const GRAPH_URI: &str = "memory://knowledge-graph";

/// An in-memory store behind the standard layers (validation included), as stores open.
pub fn store() -> Arc<dyn AgentMemory> {
    Arc::new(agentmem_core::layer::layered(InMemoryStore::new()))
}

/// A client connected to `server` in-process, already initialized.
pub struct Client {
    write: WriteHalf<DuplexStream>,
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    next_id: u64,
    /// Notifications received while waiting for responses, in order.
    pub notifications: Vec<Value>,
    /// What `initialize` answered.
    pub initialized: Value,
    /// Each tool's output schema, once listed.
    output_schemas: Map<String, Value>,
}

impl Client {
    /// Starts `server` on one end of a duplex and initializes a session from the other.
    pub async fn start(server: McpServer) -> Client {
        let (mine, theirs) = tokio::io::duplex(1 << 20);
        let (read, write) = tokio::io::split(theirs);
        tokio::spawn(serve_io(server, read, write));
        let (read, write) = tokio::io::split(mine);
        let mut client = Client {
            write,
            lines: BufReader::new(read).lines(),
            next_id: 0,
            notifications: Vec::new(),
            initialized: Value::Null,
            output_schemas: Map::new(),
        };
        let init = client
            .request(
                "initialize",
                json!({
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "test", "version": "1"}
                }),
            )
            .await;
        client.initialized = init["result"].clone();
        client
            .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        client
    }

    /// A client of a fresh server over a fresh in-memory store.
    pub async fn fresh() -> (Client, Arc<dyn AgentMemory>) {
        let store = store();
        let client = Client::start(McpServer::with_store(store.clone(), "memory:test")).await;
        (client, store)
    }

    /// Writes one line.
    pub async fn send_line(&mut self, line: &str) {
        self.write
            .write_all(format!("{line}\n").as_bytes())
            .await
            .expect("write to the server");
    }

    /// Writes one message.
    pub async fn send(&mut self, message: &Value) {
        self.send_line(&message.to_string()).await;
    }

    /// The next message the server writes.
    pub async fn next_message(&mut self) -> Value {
        let line = self
            .lines
            .next_line()
            .await
            .expect("read from the server")
            .expect("the server answers");
        serde_json::from_str(&line).expect("the server writes JSON lines")
    }

    /// Waits for the response with `id`, keeping notifications seen on the way.
    pub async fn response(&mut self, id: &Value) -> Value {
        loop {
            let message = self.next_message().await;
            if message.get("id") == Some(id) && message.get("method").is_none() {
                return message;
            }
            if message.get("method").is_some() && message.get("id").is_none() {
                self.notifications.push(message);
            }
        }
    }

    /// Sends a request and returns the whole response message.
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = json!(self.next_id);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        self.response(&id).await
    }

    /// Calls a tool; returns its result (the response's `result`).
    pub async fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let response = self
            .request("tools/call", json!({"name": tool, "arguments": arguments}))
            .await;
        assert!(response.get("error").is_none(), "{tool}: {response}");
        response["result"].clone()
    }

    /// Calls a tool that must succeed; returns its structured content, after checking that
    /// it fits the tool's output schema (as clients check it).
    pub async fn ok(&mut self, tool: &str, arguments: Value) -> Value {
        if self.output_schemas.is_empty() {
            let listed = self.request("tools/list", json!({})).await;
            for t in listed["result"]["tools"].as_array().expect("tools") {
                let name = t["name"].as_str().expect("name").to_string();
                self.output_schemas.insert(name, t["outputSchema"].clone());
            }
        }
        let result = self.call(tool, arguments).await;
        assert_eq!(result.get("isError"), None, "{tool} failed: {result}");
        let structured = result["structuredContent"].clone();
        let problems = schema_problems(&self.output_schemas[tool], &structured, "$");
        assert!(problems.is_empty(), "{tool}: {problems:?} in {structured}");
        structured
    }

    /// Calls a tool that must fail; returns the text of its error result.
    pub async fn fails(&mut self, tool: &str, arguments: Value) -> String {
        let result = self.call(tool, arguments).await;
        assert_eq!(result["isError"], true, "{tool} should fail: {result}");
        assert_eq!(result.get("structuredContent"), None);
        text(&result).to_string()
    }

    /// Calls a tool that must fail with a text that contains `words`.
    pub async fn fails_saying(&mut self, tool: &str, arguments: Value, words: &str) {
        let failed = self.fails(tool, arguments).await;
        assert!(
            failed.contains(words),
            "{tool}: {failed:?} should say {words:?}"
        );
    }

    /// Sends `method` (`resources/read`, `resources/subscribe`, …) for the graph resource;
    /// returns the whole response message.
    pub async fn on_graph(&mut self, method: &str) -> Value {
        self.request(method, json!({"uri": GRAPH_URI})).await
    }
}

/// The string `key` of each object in the array `list`.
pub fn each<'a>(list: &'a Value, key: &str) -> Vec<&'a str> {
    list.as_array()
        .expect("an array")
        .iter()
        .map(|item| item[key].as_str().expect("a string"))
        .collect()
}

/// The single text of a tool result.
pub fn text(result: &Value) -> &str {
    let content = result["content"].as_array().expect("content");
    assert_eq!(content.len(), 1, "one content block: {result}");
    assert_eq!(content[0]["type"], "text");
    content[0]["text"].as_str().expect("text")
}

/// The problems of `value` under `schema` (the JSON Schema subset the tools use:
/// type, properties, required, additionalProperties false, items, enum).
pub fn schema_problems(schema: &Value, value: &Value, path: &str) -> Vec<String> {
    let mut found = Vec::new();
    let kind = schema.get("type").and_then(Value::as_str);
    let fits = match (kind, value) {
        (None, _) => true,
        (Some("object"), Value::Object(_)) | (Some("array"), Value::Array(_)) => true,
        (Some("string"), Value::String(_)) | (Some("boolean"), Value::Bool(_)) => true,
        (Some("number"), Value::Number(_)) => true,
        (Some("integer"), Value::Number(n)) => n.is_i64() || n.is_u64(),
        _ => false,
    };
    if !fits {
        return vec![format!("{path}: {value} is not {kind:?}")];
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
        if !allowed.contains(value) {
            found.push(format!("{path}: {value} not in {allowed:?}"));
        }
    }
    if let Value::Object(map) = value {
        found.extend(object_problems(schema, map, path));
    }
    if let (Value::Array(items), Some(item_schema)) = (value, schema.get("items")) {
        for (i, item) in items.iter().enumerate() {
            found.extend(schema_problems(item_schema, item, &format!("{path}[{i}]")));
        }
    }
    found
}

fn object_problems(schema: &Value, map: &Map<String, Value>, path: &str) -> Vec<String> {
    let mut found = Vec::new();
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for name in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = name.as_str().unwrap_or_default();
        if !map.contains_key(name) {
            found.push(format!("{path}.{name}: missing"));
        }
    }
    for (key, value) in map {
        match properties.get(key) {
            Some(sub) => found.extend(schema_problems(sub, value, &format!("{path}.{key}"))),
            None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                found.push(format!("{path}.{key}: not allowed"))
            }
            None => {}
        }
    }
    found
}
