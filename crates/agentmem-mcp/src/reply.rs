//! Tool results as the reference server makes them: the result as pretty JSON text
//! (`JSON.stringify(result, null, 2)`, which serde_json's pretty printer writes byte for byte
//! the same) and as `structuredContent`; failures as `isError` results carrying one text.

use rmcp::model::{CallToolResult, ContentBlock};
use serde::Serialize;
use serde_json::{Map, Value};

/// A result whose text is `shown` as pretty JSON, and whose structured content is `shown` too,
/// as the object `{key: shown}` when a key is given. The text is written from `shown` itself,
/// so its keys keep the order of its fields (`name`, `entityType`, `observations`) whatever
/// order a JSON map keeps.
pub(crate) fn json<T: Serialize + ?Sized>(shown: &T, key: Option<&str>) -> CallToolResult {
    let written = serde_json::to_string_pretty(shown)
        .and_then(|text| Ok((text, serde_json::to_value(shown)?)));
    match written {
        Ok((text, value)) => {
            let structured = match key {
                Some(key) => Value::Object(Map::from_iter([(key.to_string(), value)])),
                None => value,
            };
            with_text(text, structured)
        }
        Err(e) => failure(format!("cannot write the result as JSON: {e}")),
    }
}

/// A result whose text is `text` and whose structured content is `structured`.
pub(crate) fn with_text(text: String, structured: Value) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    // The reference leaves `isError` out of a success.
    result.is_error = None;
    result.structured_content = Some(structured);
    result
}

/// A result `{success: true, message}` with `message` as its text (the reference's answer to
/// the delete tools).
pub(crate) fn done(message: &str) -> CallToolResult {
    with_text(
        message.to_string(),
        serde_json::json!({"success": true, "message": message}),
    )
}

/// A failed call: `isError: true` with `text`.
pub(crate) fn failure(text: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text.into())])
}

/// The reference SDK's text for a call to a tool it does not list.
pub(crate) fn unknown_tool(name: &str) -> CallToolResult {
    failure(format!("MCP error -32602: Tool {name} not found"))
}

/// The reference SDK's text for arguments that do not fit the tool's input schema.
pub(crate) fn invalid_arguments(tool: &str, problems: &[String]) -> CallToolResult {
    failure(format!(
        "MCP error -32602: Input validation error: Invalid arguments for tool {tool}: {}",
        problems.join("\n")
    ))
}
