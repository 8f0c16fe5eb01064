//! Test messages that carry their writer and sequence number, with content derived from both,
//! so a stored message can be checked for being intact and in its writer's order.

use agentmem_core::{Message, MessageId, Role};

/// Metadata key holding the writer's label.
pub const WRITER_KEY: &str = "w";
/// Metadata key holding the sequence number within the writer.
pub const SEQ_KEY: &str = "i";

/// The id of message `seq` of `writer`: `{writer}-{seq:06}`.
pub fn message_id(writer: &str, seq: u64) -> MessageId {
    MessageId::new(format!("{writer}-{seq:06}")).expect("writer names make valid message ids")
}

/// The content of message `seq` of `writer`: several lines, non-ASCII text and a length that
/// varies with `seq`, so a torn, interleaved or re-encoded record shows.
pub fn content(writer: &str, seq: u64) -> String {
    let filler = "x".repeat(64 + (seq as usize * 37) % 400);
    format!("{writer} #{seq}\nmulti-line — é ✓ 日本\n{filler}\n---\nend {seq}")
}

/// Message `seq` of `writer`, with its deterministic id, content and tags.
pub fn message(writer: &str, seq: u64) -> Message {
    Message::user(content(writer, seq))
        .with_id(message_id(writer, seq))
        .with_metadata(WRITER_KEY, writer)
        .with_metadata(SEQ_KEY, seq)
}

/// The writer and sequence number of a tagged message; `Ok(None)` for a message without
/// tags (a compaction summary, for instance); `Err` when the message is tagged but not intact.
pub fn decode(m: &Message) -> Result<Option<(String, u64)>, String> {
    let Some(writer) = m.metadata.get(WRITER_KEY) else {
        return Ok(None);
    };
    let writer = writer
        .as_str()
        .ok_or_else(|| format!("message {}: writer tag is not a string", m.id))?;
    let seq = m
        .metadata
        .get(SEQ_KEY)
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(|| format!("message {}: sequence tag missing or not a number", m.id))?;
    if m.id != message_id(writer, seq) {
        return Err(format!(
            "message {} carries the tags of {}",
            m.id,
            message_id(writer, seq)
        ));
    }
    if m.role != Role::User {
        return Err(format!("message {}: role changed to {}", m.id, m.role));
    }
    if m.content != content(writer, seq) {
        return Err(format!(
            "message {}: content is not intact ({} bytes, expected {})",
            m.id,
            m.content.len(),
            content(writer, seq).len()
        ));
    }
    Ok(Some((writer.to_string(), seq)))
}
