//! Lossless conversion between rig messages and agentmem messages.
//!
//! One rig [`Message`](RigMessage) becomes one agentmem [`Message`]:
//!
//! | rig | agentmem role | agentmem content (for search, compaction, `MEMORY.md`) |
//! |---|---|---|
//! | `System` | `system` | the instruction text |
//! | `User` with text, images, audio, video, documents | `user` | the text; media as `[image: <url>]` and the like |
//! | `User` holding tool results | `tool`, paired by `tool_call_id` | the results' text or JSON |
//! | `Assistant` | `assistant` (`tool_call_id` set when it calls tools) | the text; calls as `name(arguments)` |
//!
//! The whole rig message is kept in the agentmem message's metadata under [`RIG_METADATA_KEY`],
//! so [`to_rig`] gives back exactly what [`from_rig`] was given: reasoning, provider items,
//! citations, tool-call ids and media references included. Media are kept as rig holds them:
//! a URL or provider file id stays a reference (nothing is fetched), inline data stays inline.
//!
//! Messages written by something other than this adapter (the conversation engine, the CLI,
//! a Swarms import) have no rig metadata; [`to_rig`] builds the rig message from the agentmem
//! fields instead, so a rig agent can continue a history another tool began.

use agentmem_core::{Message, Role};
use rig_core::message::{
    AssistantContent, AssistantMessage, CallId, DocumentSourceKind, Message as RigMessage,
    ToolName, ToolResult, ToolResultContent, UserContent,
};

/// The metadata key holding the rig message as JSON.
pub const RIG_METADATA_KEY: &str = "rig";

/// An agentmem message holding `message`, with a fresh id and the current time.
pub fn from_rig(message: &RigMessage) -> Message {
    let (role, content, tool_call) = match message {
        RigMessage::System { content } => (Role::System, content.clone(), None),
        RigMessage::User { content } => {
            let first_result = content.iter().find_map(|part| match part {
                UserContent::ToolResult(result) => Some(result),
                _ => None,
            });
            let role = if first_result.is_some() {
                Role::Tool
            } else {
                Role::User
            };
            let text = join(content.iter().map(user_text));
            let tool_call = first_result.map(|r| (r.call.to_string(), r.name.to_string()));
            (role, text, tool_call)
        }
        RigMessage::Assistant(turn) => {
            let tool_call = turn
                .tool_calls()
                .next()
                .map(|call| (call.id.to_string(), call.function.name.to_string()));
            let text = join(turn.content.iter().filter_map(assistant_text));
            (Role::Assistant, text, tool_call)
        }
    };
    let mut stored = Message::new(role, content);
    if let Some((call_id, tool)) = tool_call {
        stored.tool_call_id = Some(call_id);
        stored.tool_name = Some(tool);
    }
    match serde_json::to_value(message) {
        Ok(json) => {
            stored.metadata.insert(RIG_METADATA_KEY.to_string(), json);
        }
        // rig's message types serialize infallibly (plain data, string keys); should a future
        // version not, the text form above is still stored and loads back as plain text.
        // The error's category only: its text could quote message content.
        Err(error) => tracing::warn!(
            category = ?error.classify(),
            "a rig message did not serialize; storing its text"
        ),
    }
    stored
}

/// The rig message `message` holds: the stored rig form when there is one, otherwise one built
/// from the agentmem fields (see the module docs).
pub fn to_rig(message: &Message) -> RigMessage {
    if let Some(json) = message.metadata.get(RIG_METADATA_KEY) {
        match serde_json::from_value::<RigMessage>(json.clone()) {
            Ok(rig) => return rig,
            // Written by another rig version: fall back to the text, which is always stored.
            // The error's category and position only: its text could quote message content.
            Err(error) => tracing::warn!(
                message_id = %message.id,
                category = ?error.classify(),
                column = error.column(),
                "stored rig message is unreadable; loading its text instead"
            ),
        }
    }
    from_fields(message)
}

fn from_fields(message: &Message) -> RigMessage {
    let tool = message
        .tool_name
        .as_deref()
        .and_then(|name| ToolName::try_from(name).ok());
    match (&message.role, &message.tool_call_id, tool) {
        (Role::System, _, _) => RigMessage::system(message.content.clone()),
        (Role::Tool, Some(call), Some(name)) => RigMessage::User {
            content: vec![UserContent::ToolResult(ToolResult {
                call: CallId::from_wire(call.clone()),
                name,
                content: vec![ToolResultContent::text(message.content.clone())],
                is_error: false,
            })],
        },
        (Role::Assistant | Role::Agent(_), Some(call), Some(name)) => {
            let arguments = serde_json::from_str(&message.content)
                .unwrap_or_else(|_| serde_json::Value::String(message.content.clone()));
            RigMessage::Assistant(AssistantMessage::new(vec![AssistantContent::tool_call(
                call.clone(),
                name,
                arguments,
            )]))
        }
        (Role::Assistant | Role::Agent(_), _, _) => RigMessage::assistant(message.content.clone()),
        // A user message, or a tool result whose pairing was lost: plain user text.
        (Role::User | Role::Tool, _, _) => RigMessage::user(message.content.clone()),
    }
}

fn join(parts: impl Iterator<Item = String>) -> String {
    parts
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

fn user_text(part: &UserContent) -> String {
    match part {
        UserContent::Text(text) => text.text.clone(),
        UserContent::ToolResult(result) => join(result.content.iter().map(tool_result_text)),
        UserContent::Image(image) => media("image", &image.data),
        UserContent::Audio(audio) => media("audio", &audio.data),
        UserContent::Video(video) => media("video", &video.data),
        UserContent::Document(document) => match &document.data {
            // A document given as text is content the agent read: keep it searchable.
            DocumentSourceKind::String(text) => text.clone(),
            other => media("document", other),
        },
    }
}

fn assistant_text(part: &AssistantContent) -> Option<String> {
    match part {
        AssistantContent::Text(text) => Some(text.text.clone()),
        AssistantContent::ToolCall(call) => Some(format!(
            "{}({})",
            call.function.name,
            serde_json::Value::Object(call.function.arguments.clone())
        )),
        AssistantContent::Image(image) => Some(media("image", &image.data)),
        // Reasoning and provider-only items are kept in the rig form, not in the text that
        // searches and summaries read.
        _ => None,
    }
}

fn tool_result_text(part: &ToolResultContent) -> String {
    match part {
        ToolResultContent::Text(text) => text.text.clone(),
        ToolResultContent::Json { value } => value.to_string(),
        ToolResultContent::Image(image) => media("image", &image.data),
    }
}

/// A media item in the text form: its reference when it has one, never inline data.
fn media(kind: &str, source: &DocumentSourceKind) -> String {
    match source {
        DocumentSourceKind::Url(url) => format!("[{kind}: {url}]"),
        DocumentSourceKind::FileId(id) => format!("[{kind}: file {id}]"),
        _ => format!("[{kind}]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_rig_form_another_version_cannot_read_loads_as_text() {
        let mut stored = from_rig(&RigMessage::user("hello"));
        stored.metadata.insert(
            RIG_METADATA_KEY.to_string(),
            serde_json::json!({"role": "narrator", "content": 42}),
        );
        assert_eq!(to_rig(&stored), RigMessage::user("hello"));
    }

    #[test]
    fn text_forms_keep_references_and_never_inline_data() {
        let message = RigMessage::User {
            content: vec![
                UserContent::image_url("https://example.com/a.png", None, None),
                UserContent::image_base64("AAAA", None, None),
                UserContent::document_url("https://example.com/d.pdf", None),
            ],
        };
        let stored = from_rig(&message);
        assert_eq!(
            stored.content,
            "[image: https://example.com/a.png]\n[image]\n[document: https://example.com/d.pdf]"
        );
        assert_eq!(to_rig(&stored), message);
    }
}
