//! The server driven in-process as a stdio client drives it: raw JSON-RPC lines.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use agentmem_core::{
    AgentMemory, AgentMemoryExt, Error, GraphQuery, MemoryFilter, MemoryKind, MemoryScope,
    MemoryStore, SessionId,
};
use agentmem_mcp::{reference_tools_json, McpServer, StoreOpener};
use common::{each, text, Client, GRAPH_URI};
use serde_json::{json, Value};

#[tokio::test]
async fn lists_the_reference_tools_as_it_does_then_agentmem_tools() {
    let (mut c, _) = Client::fresh().await;
    assert_eq!(
        c.initialized["capabilities"],
        json!({"tools": {"listChanged": true}, "resources": {"subscribe": true, "listChanged": true}})
    );
    let listed = c.request("tools/list", json!({})).await;
    let tools = listed["result"]["tools"].as_array().expect("tools").clone();
    let mut reference: Vec<Value> =
        serde_json::from_str(reference_tools_json()).expect("reference tools");
    for tool in &mut reference {
        // rmcp's Tool has no `execution` field; `taskSupport: "forbidden"` is the default.
        tool.as_object_mut().expect("tool").remove("execution");
    }
    assert_eq!(reference.len(), 9);
    for (ours, theirs) in tools.iter().zip(&reference) {
        assert_eq!(ours, theirs);
        // The schemas byte for byte, key order included (rmcp orders the tool's own keys).
        for part in ["inputSchema", "outputSchema", "annotations"] {
            assert_eq!(ours[part].to_string(), theirs[part].to_string());
        }
    }
    assert_eq!(
        each(&Value::from(&tools[9..]), "name"),
        [
            "append_messages",
            "load_session",
            "list_sessions",
            "store_memory",
            "search_memory",
            "get_context",
            "fork_session",
            "rewind_session"
        ]
    );
    for tool in &tools[9..] {
        assert!(tool["description"].as_str().expect("description").len() > 80);
        assert_eq!(tool["inputSchema"]["type"], "object");
        assert_eq!(tool["outputSchema"]["type"], "object");
    }
}

/// The arguments of `create_entities` for one entity `name` of type `t`, with no observations.
fn entity(name: &str) -> Value {
    json!({"entities": [{"name": name, "entityType": "t", "observations": []}]})
}

/// The reference server's result text: `JSON.stringify(result, null, 2)`.
const ALICE_CREATED: &str = r#"[
  {
    "name": "Alice",
    "entityType": "person",
    "observations": [
      "likes tea"
    ]
  }
]"#;

#[tokio::test]
async fn graph_creates_skip_what_exists_and_a_missing_entity_applies_nothing() {
    let (mut c, _) = Client::fresh().await;
    let alice =
        json!({"name": "Alice", "entityType": "person", "observations": ["likes tea"], "extra": 1});
    let result = c
        .call(
            "create_entities",
            json!({"entities": [alice], "junk": true}),
        )
        .await;
    assert_eq!(text(&result), ALICE_CREATED);
    assert_eq!(
        result["structuredContent"],
        json!({"entities": [{"name": "Alice", "entityType": "person", "observations": ["likes tea"]}]})
    );
    assert_eq!(result.get("isError"), None);

    // Existing names are skipped, and so is a repeat within the call.
    let created = c
        .ok(
            "create_entities",
            json!({"entities": [
                {"name": "Alice", "entityType": "robot", "observations": []},
                {"name": "Bob", "entityType": "person", "observations": []},
                {"name": "Bob", "entityType": "cat", "observations": []},
                {"name": "École", "entityType": "place", "observations": ["Unicode"]}
            ]}),
        )
        .await;
    assert_eq!(each(&created["entities"], "name"), ["Bob", "École"]);
    let empty = c
        .call("create_entities", json!({"entities": [alice]}))
        .await;
    assert_eq!(text(&empty), "[]");

    // Exact duplicate relations are skipped; ends need not exist.
    let knows = json!({"from": "Alice", "to": "Bob", "relationType": "knows"});
    let created = c
        .ok(
            "create_relations",
            json!({"relations": [knows, knows, {"from": "Bob", "to": "Carol", "relationType": "likes"}]}),
        )
        .await;
    assert_eq!(created["relations"].as_array().expect("relations").len(), 2);
    let again = c
        .ok("create_relations", json!({"relations": [knows]}))
        .await;
    assert_eq!(again, json!({"relations": []}));

    // Observations held already are skipped; the result says what was added.
    let added = c
        .call(
            "add_observations",
            json!({"observations": [
                {"entityName": "Alice", "contents": ["likes tea", "plays go"]},
                {"entityName": "Bob", "contents": ["x"]}
            ]}),
        )
        .await;
    assert_eq!(
        text(&added),
        "[\n  {\n    \"entityName\": \"Alice\",\n    \"addedObservations\": [\n      \"plays go\"\n    ]\n  },\n  {\n    \"entityName\": \"Bob\",\n    \"addedObservations\": [\n      \"x\"\n    ]\n  }\n]"
    );
    // A missing entity fails the whole call, in the reference's words, and applies nothing.
    let failed = c
        .fails(
            "add_observations",
            json!({"observations": [
                {"entityName": "Alice", "contents": ["never stored"]},
                {"entityName": "Zed", "contents": ["y"]}
            ]}),
        )
        .await;
    assert_eq!(failed, "Entity with name Zed not found");
    let alice_now = c.ok("open_nodes", json!({"names": ["Alice"]})).await;
    assert_eq!(
        alice_now["entities"][0]["observations"],
        json!(["likes tea", "plays go"])
    );
}

/// Alice (person: likes tea, plays go), Bob (person), École (place: Unicode); Alice knows Bob,
/// Bob likes Carol (who is no entity).
async fn seed(c: &mut Client) {
    c.ok(
        "create_entities",
        json!({"entities": [
            {"name": "Alice", "entityType": "person", "observations": ["likes tea", "plays go"]},
            {"name": "Bob", "entityType": "person", "observations": []},
            {"name": "École", "entityType": "place", "observations": ["Unicode"]}
        ]}),
    )
    .await;
    c.ok(
        "create_relations",
        json!({"relations": [
            {"from": "Alice", "to": "Bob", "relationType": "knows"},
            {"from": "Bob", "to": "Carol", "relationType": "likes"}
        ]}),
    )
    .await;
}

#[tokio::test]
async fn graph_search_open_and_delete_follow_the_reference_rules() {
    let (mut c, store) = Client::fresh().await;
    seed(&mut c).await;
    let knows = json!({"from": "Alice", "to": "Bob", "relationType": "knows"});

    // Search: case-insensitive Unicode substring of name, type or observation, with every
    // relation touching a match.
    let found = c.ok("search_nodes", json!({"query": "TEA"})).await;
    assert_eq!(found["entities"][0]["name"], "Alice");
    assert_eq!(found["relations"], json!([knows]));
    let found = c.ok("search_nodes", json!({"query": "éCOLE"})).await;
    assert_eq!(found["entities"][0]["name"], "École");
    let opened = c
        .ok("open_nodes", json!({"names": ["Bob", "nobody"]}))
        .await;
    assert_eq!(opened["entities"].as_array().expect("entities").len(), 1);
    assert_eq!(opened["relations"].as_array().expect("relations").len(), 2);

    // Deletes.
    let result = c
        .call(
            "delete_observations",
            json!({"deletions": [{"entityName": "Alice", "observations": ["likes tea"]},
                                 {"entityName": "Nobody", "observations": ["x"]}]}),
        )
        .await;
    assert_eq!(text(&result), "Observations deleted successfully");
    assert_eq!(
        result["structuredContent"],
        json!({"success": true, "message": "Observations deleted successfully"})
    );
    let gone = c
        .ok(
            "delete_relations",
            json!({"relations": [{"from": "Bob", "to": "Carol", "relationType": "likes"}]}),
        )
        .await;
    assert_eq!(gone["message"], "Relations deleted successfully");
    c.ok(
        "create_relations",
        json!({"relations": [{"from": "Ghost", "to": "Alice", "relationType": "haunts"}]}),
    )
    .await;
    // Deleting an entity deletes every relation naming it, whether or not it exists.
    let result = c
        .call("delete_entities", json!({"entityNames": ["Bob", "Ghost"]}))
        .await;
    assert_eq!(text(&result), "Entities deleted successfully");
    let graph = c.call("read_graph", json!({})).await;
    let structured = &graph["structuredContent"];
    assert_eq!(
        text(&graph),
        serde_json::to_string_pretty(structured).expect("json")
    );
    assert_eq!(
        structured,
        &json!({
            "entities": [
                {"name": "Alice", "entityType": "person", "observations": ["plays go"]},
                {"name": "École", "entityType": "place", "observations": ["Unicode"]}
            ],
            "relations": []
        })
    );
    // What the tools wrote is the store's graph.
    let stored = store.read_graph(&GraphQuery::All).await.expect("graph");
    assert_eq!(serde_json::to_value(&stored).expect("json"), *structured);
}

#[tokio::test]
async fn bad_calls_are_answered_as_the_reference_sdk_does_and_the_server_goes_on() {
    let (mut c, _) = Client::fresh().await;
    assert_eq!(
        c.fails("no_such_tool", json!({})).await,
        "MCP error -32602: Tool no_such_tool not found"
    );
    let invalid = [
        (
            "create_entities",
            json!({}),
            "Invalid input: expected array, received undefined at entities",
        ),
        (
            "search_nodes",
            json!({"query": 5}),
            "Invalid input: expected string, received number at query",
        ),
        (
            "create_entities",
            json!({"entities": [{"name": "x", "entityType": "t", "observations": [1.5, {"a": 1}]}]}),
            "Invalid input: expected string, received number at entities[0].observations[0]\n\
             Invalid input: expected string, received object at entities[0].observations[1]",
        ),
        (
            "load_session",
            json!({"session_id": "ok", "limit": -1}),
            "Too small: expected number to be >=0 at limit",
        ),
    ];
    for (tool, arguments, problems) in invalid {
        assert_eq!(
            c.fails(tool, arguments).await,
            format!(
                "MCP error -32602: Input validation error: Invalid arguments for tool {tool}: \
                 {problems}"
            )
        );
    }
    // No arguments at all: checked as `{}`.
    let response = c.request("tools/call", json!({"name": "open_nodes"})).await;
    assert_eq!(response["result"]["isError"], true);
    // Arguments that are not an object: a JSON-RPC error, as from the reference.
    let response = c
        .request(
            "tools/call",
            json!({"name": "read_graph", "arguments": "x"}),
        )
        .await;
    assert!(response["error"]["code"].is_i64(), "{response}");
    // A line that is not JSON is passed over.
    c.send_line("this is not json").await;
    let pong = c.request("ping", json!({})).await;
    assert_eq!(pong["result"], json!({}));
    // The server still works.
    let graph = c.ok("read_graph", json!({})).await;
    assert_eq!(graph, json!({"entities": [], "relations": []}));
}

#[tokio::test]
async fn oversized_strings_are_refused_and_nothing_stops() {
    let (mut c, _) = Client::fresh().await;
    let huge = "x".repeat(64 * 1024 + 1);
    let too_long = json!({"entities": [{"name": "A", "entityType": "t", "observations": [huge]}]});
    c.fails_saying("create_entities", too_long, "at most 65536")
        .await;
    c.fails_saying("create_entities", entity("nul\u{0}"), "NUL")
        .await;
    let created = c.ok("create_entities", entity("A")).await;
    assert_eq!(created["entities"][0]["name"], "A");
}

#[tokio::test]
async fn the_graph_resource_reads_lists_and_notifies_subscribers() {
    let (mut c, _) = Client::fresh().await;
    let listed = c.request("resources/list", json!({})).await;
    assert_eq!(
        listed["result"]["resources"],
        json!([{
            "uri": "memory://knowledge-graph",
            "name": "knowledge-graph",
            "title": "Knowledge Graph",
            "description": "The full knowledge graph with all entities and relations",
            "mimeType": "application/json"
        }])
    );
    let read = c.on_graph("resources/read").await;
    assert_eq!(
        read["result"]["contents"],
        json!([{
            "uri": "memory://knowledge-graph",
            "mimeType": "application/json",
            "text": "{\n  \"entities\": [],\n  \"relations\": []\n}"
        }])
    );
    let missing = c
        .request("resources/read", json!({"uri": "memory://other"}))
        .await;
    assert_eq!(
        missing["error"],
        json!({"code": -32602, "message": "MCP error -32602: Resource memory://other not found"})
    );

    // No notification before subscribing.
    c.ok("create_entities", entity("A")).await;
    assert!(c.notifications.is_empty());
    let subscribed = c.on_graph("resources/subscribe").await;
    assert_eq!(subscribed["result"], json!({}));
    c.ok("create_entities", entity("B")).await;
    c.ok("delete_entities", json!({"entityNames": ["nobody"]}))
        .await;
    // Reads do not notify; failed writes do not either.
    c.ok("read_graph", json!({})).await;
    c.fails(
        "add_observations",
        json!({"observations": [{"entityName": "nobody", "contents": ["x"]}]}),
    )
    .await;
    let updated = json!({
        "jsonrpc": "2.0",
        "method": "notifications/resources/updated",
        "params": {"uri": GRAPH_URI}
    });
    assert_eq!(c.notifications, vec![updated.clone(), updated]);
    c.notifications.clear();
    c.on_graph("resources/unsubscribe").await;
    c.ok("create_entities", entity("C")).await;
    c.request("ping", json!({})).await;
    assert!(c.notifications.is_empty());
}

#[tokio::test]
async fn concurrent_calls_on_one_connection_lose_no_write() {
    let (mut c, store) = Client::fresh().await;
    c.ok("create_entities", entity("counter")).await;
    // A hundred calls in flight at once, as the reference server loses 98 of.
    for i in 0..100 {
        let call = json!({
            "jsonrpc": "2.0", "id": 1000 + i, "method": "tools/call",
            "params": {"name": "add_observations", "arguments": {"observations": [
                {"entityName": "counter", "contents": [format!("write {i}")]}
            ]}}
        });
        c.send(&call).await;
    }
    for i in 0..100 {
        let response = c.response(&json!(1000 + i)).await;
        assert_eq!(response["result"].get("isError"), None, "{response}");
    }
    let graph = store
        .read_graph(&GraphQuery::Open(vec!["counter".into()]))
        .await
        .expect("graph");
    assert_eq!(graph.entities[0].observations.len(), 100);
}

#[tokio::test]
async fn session_tools_write_what_the_store_reads_and_the_reverse() {
    let (mut c, store) = Client::fresh().await;
    let appended = c
        .ok(
            "append_messages",
            json!({"session_id": "chat-1", "messages": [
                {"role": "user", "content": "What is 2+2?"},
                {"role": "assistant", "content": "4", "metadata": {"model": "m"}},
                {"role": "assistant", "content": "{}", "tool_call_id": "c1", "tool_name": "calc"},
                {"role": "tool", "content": "4", "tool_call_id": "c1", "tool_name": "calc"}
            ]}),
        )
        .await;
    let ids = appended["message_ids"].as_array().expect("ids").clone();
    assert_eq!(ids.len(), 4);
    // The store (and so the CLI) reads the same session.
    let id: SessionId = "chat-1".parse().expect("id");
    let stored = store.messages(&id).await.expect("messages");
    assert_eq!(stored.len(), 4);
    assert_eq!(stored[1].metadata["model"], "m");
    assert_eq!(stored[3].tool_name.as_deref(), Some("calc"));
    assert_eq!(json!(stored[0].id), ids[0]);

    // What the store holds, the tools read.
    store
        .append_one(
            &"other".parse().expect("id"),
            agentmem_core::Message::user("hi"),
        )
        .await
        .expect("append");
    let listed = c.ok("list_sessions", json!({})).await;
    assert_eq!(each(&listed["sessions"], "id"), ["chat-1", "other"]);
    let loaded = c
        .ok("load_session", json!({"session_id": "chat-1", "limit": 3}))
        .await;
    assert_eq!(loaded["exists"], true);
    assert_eq!(loaded["total_messages"], 4);
    assert_eq!(each(&loaded["messages"], "content"), ["4", "{}", "4"]);
    let missing = c.ok("load_session", json!({"session_id": "nope"})).await;
    assert_eq!(
        missing,
        json!({"session_id": "nope", "exists": false, "total_messages": 0, "messages": []})
    );

    let forked = c
        .ok(
            "fork_session",
            json!({"session_id": "chat-1", "new_session_id": "what-if", "at_message_id": ids[1]}),
        )
        .await;
    assert_eq!(forked["session"]["message_count"], 2);
    let rewound = c
        .ok("rewind_session", json!({"session_id": "chat-1", "last": 2}))
        .await;
    assert_eq!(rewound["removed"].as_array().expect("removed").len(), 2);
    let rewound = c
        .ok(
            "rewind_session",
            json!({"session_id": "chat-1", "after_message_id": ids[0]}),
        )
        .await;
    assert_eq!(rewound["removed"][0]["content"], "4");
    assert_eq!(store.messages(&id).await.expect("messages").len(), 1);

    // Failures a caller can fix, in the store's words.
    let fixable = [
        (
            "append_messages",
            json!({"session_id": "../x", "messages": []}),
            "invalid session id",
        ),
        (
            "append_messages",
            json!({"session_id": "x", "messages": [{"role": "", "content": "c"}]}),
            "invalid role",
        ),
        (
            "rewind_session",
            json!({"session_id": "chat-1"}),
            "exactly one of",
        ),
        (
            "fork_session",
            json!({"session_id": "chat-1", "new_session_id": "what-if"}),
            "exists",
        ),
    ];
    for (tool, arguments, words) in fixable {
        c.fails_saying(tool, arguments, words).await;
    }
}

#[tokio::test]
async fn memory_tools_store_items_the_store_lists_and_scope_them_by_agent() {
    let (mut c, store) = Client::fresh().await;
    let stored = c
        .ok(
            "store_memory",
            json!({"text": "The user prefers metric units", "agent": "alice"}),
        )
        .await;
    assert_eq!(stored["memory"]["kind"], "long_term");
    assert_eq!(stored["memory"]["scope"], json!({"agent": "alice"}));
    for arguments in [
        json!({"text": "The office is in Lisbon", "long_term": false}),
        json!({"text": "Bob's user likes coffee", "agent": "bob", "key": "drink"}),
        json!({"text": "Bob's user likes tea", "agent": "bob", "key": "drink"}),
    ] {
        c.ok("store_memory", arguments).await;
    }

    // The store (and so the CLI's `memories`) lists them with those kinds and scopes.
    let items = store
        .list_memories(&MemoryFilter::default())
        .await
        .expect("items");
    assert_eq!(items.len(), 3, "the keyed item was replaced");
    let alices = store
        .list_memories(
            &MemoryFilter::kind(MemoryKind::LongTerm).visible_from(MemoryScope::agent("alice")),
        )
        .await
        .expect("items");
    assert_eq!(alices.len(), 1);
    assert_eq!(alices[0].text, "The user prefers metric units");

    let found = c
        .ok("search_memory", json!({"query": "likes", "agent": "alice"}))
        .await;
    assert_eq!(found["results"], json!([]));
    let found = c.ok("search_memory", json!({"query": "likes tea"})).await;
    assert_eq!(found["results"][0]["item"]["text"], "Bob's user likes tea");
    let limited = c
        .ok("search_memory", json!({"query": "user", "limit": 1}))
        .await;
    assert_eq!(limited["results"].as_array().expect("results").len(), 1);

    let context = c
        .call("get_context", json!({"query": "units", "agent": "alice"}))
        .await;
    assert_eq!(text(&context), "- The user prefers metric units");
    assert_eq!(
        context["structuredContent"],
        json!({"context": "- The user prefers metric units"})
    );
    let everything = c.ok("get_context", json!({})).await;
    assert_eq!(
        everything["context"]
            .as_str()
            .expect("context")
            .lines()
            .count(),
        3
    );
}

#[tokio::test]
async fn a_store_that_cannot_be_opened_is_named_and_retried_on_the_next_call() {
    let down = Arc::new(AtomicBool::new(true));
    let store = common::store();
    let opener: StoreOpener = {
        let (down, store) = (down.clone(), store.clone());
        Arc::new(move || {
            let (down, store) = (down.clone(), store.clone());
            Box::pin(async move {
                if down.load(Ordering::SeqCst) {
                    Err(Error::unavailable("connection refused"))
                } else {
                    Ok(store as Arc<dyn AgentMemory>)
                }
            })
        })
    };
    let name = agentmem_core::redact_url("redis://user:secret@db.example:6379/0");
    let mut c = Client::start(McpServer::new(name, opener)).await;
    // Listing needs no store.
    let listed = c.request("tools/list", json!({})).await;
    assert_eq!(
        listed["result"]["tools"].as_array().expect("tools").len(),
        17
    );
    let failed = c.fails("read_graph", json!({})).await;
    assert_eq!(
        failed,
        "store redis://user:***@db.example:6379/0: unavailable: connection refused"
    );
    assert!(!failed.contains("secret"));
    let read = c.on_graph("resources/read").await;
    assert!(read["error"]["message"]
        .as_str()
        .expect("message")
        .contains("db.example"));
    down.store(false, Ordering::SeqCst);
    let graph = c.ok("read_graph", json!({})).await;
    assert_eq!(graph, json!({"entities": [], "relations": []}));
}

#[tokio::test]
async fn a_write_on_one_connection_notifies_subscribers_on_the_others() {
    let server = McpServer::with_store(common::store(), "memory:shared");
    let mut watcher = Client::start(server.connection()).await;
    let mut writer = Client::start(server).await;
    watcher.on_graph("resources/subscribe").await;
    writer.ok("create_entities", entity("A")).await;
    assert!(
        writer.notifications.is_empty(),
        "the writer did not subscribe"
    );
    // The watcher hears of it (in the background: wait for it, however long it takes).
    let heard = watcher.next_message().await;
    assert_eq!(heard["method"], "notifications/resources/updated");
    assert_eq!(heard["params"]["uri"], GRAPH_URI);
    // Both see the one graph.
    let graph = watcher.ok("read_graph", json!({})).await;
    assert_eq!(graph["entities"][0]["name"], "A");
}
