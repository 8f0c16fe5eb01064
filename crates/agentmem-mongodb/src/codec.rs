//! How model values are stored in BSON documents, and read back.
//!
//! - Timestamps (a memory item's expiry time too) are `i64` microseconds since the Unix
//!   epoch: BSON dates keep milliseconds only, and agentmem timestamps round-trip exactly at
//!   microseconds.
//! - Metadata is stored as one JSON string. Its keys are caller data and may start with `$`
//!   or contain `.`, which MongoDB would read as operators or field paths; as a string value
//!   they are opaque to the server, and JSON keeps every value (big integers, floats, nested
//!   objects) exactly.
//! - Reading back checks every field; anything missing or of the wrong type is
//!   [`CorruptData`](agentmem_core::ErrorKind::CorruptData), naming the field.

use std::future::IntoFuture;

use agentmem_core::support::{from_micros, micros};
use agentmem_core::{
    Error, MemoryId, MemoryItem, MemoryKind, MemoryScope, Message, MessageId, Metadata, Result,
    Role,
};
use chrono::{DateTime, Utc};
use futures_util::TryStreamExt;
use mongodb::bson::spec::BinarySubtype;
use mongodb::bson::{doc, Binary, Bson, Document};
use mongodb::Cursor;

use crate::error::ResultExt;

/// The largest document MongoDB stores: 16 MiB of BSON.
pub(crate) const MAX_DOCUMENT_BYTES: usize = 16 * 1024 * 1024;

/// Room kept under [`MAX_DOCUMENT_BYTES`] for the fields a stored document adds to the
/// encoded ones (session name of at most 128 bytes, epoch, seq, archive id and position).
pub(crate) const DOCUMENT_HEADROOM: usize = 16 * 1024;

/// Counts the bytes written to it: the encoded size without holding the encoding.
#[derive(Default)]
struct ByteCount(usize);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 = self.0.saturating_add(buf.len());
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Refuses `d` (the encoded `what`) with `InvalidInput` when it would not fit in one stored
/// document. Checked before anything is written, so an oversized value leaves no trace (the
/// server or driver would only refuse it after a session had been created or positions
/// reserved).
pub(crate) fn check_size(what: &'static str, d: &Document) -> Result<()> {
    let mut count = ByteCount::default();
    let limit = MAX_DOCUMENT_BYTES - DOCUMENT_HEADROOM;
    let size = match d.to_writer(&mut count) {
        Ok(()) => count.0,
        // Encoding fails only on values BSON cannot hold (a key with a NUL byte, say, which
        // the stored forms never have): report it as the caller's input, not as too large.
        Err(e) => {
            return Err(Error::invalid_input(format!(
                "{what} cannot be encoded as BSON: {e}"
            )))
        }
    };
    if size > limit {
        return Err(Error::invalid_input(format!(
            "{what} is {size} bytes as BSON; MongoDB stores documents of at most 16 MiB \
             ({MAX_DOCUMENT_BYTES} bytes), of which agentmem keeps {DOCUMENT_HEADROOM} for its \
             own fields, so the limit is {limit} bytes"
        )));
    }
    Ok(())
}

/// A BSON binary of `bytes`.
pub(crate) fn binary(bytes: &[u8]) -> Bson {
    Bson::Binary(Binary {
        subtype: BinarySubtype::Generic,
        bytes: bytes.to_vec(),
    })
}

/// Reads the binary field `field`.
pub(crate) fn binary_field(d: &Document, field: &str) -> Result<Vec<u8>> {
    match d.get(field) {
        Some(Bson::Binary(b)) => Ok(b.bytes.clone()),
        Some(other) => Err(Error::corrupt(format!(
            "field `{field}` is {:?}, expected binary data",
            other.element_type()
        ))),
        None => Err(Error::corrupt(format!("field `{field}` is missing"))),
    }
}

/// Every document a find or an aggregation returns.
pub(crate) async fn all_docs(
    query: impl IntoFuture<Output = mongodb::error::Result<Cursor<Document>>>,
) -> Result<Vec<Document>> {
    query.await.mapped()?.try_collect().await.mapped()
}

/// Reads a timestamp stored as [`micros`].
pub(crate) fn time_field(d: &Document, field: &str) -> Result<DateTime<Utc>> {
    from_micros(int_field(d, field)?, &format!("field `{field}`"))
}

/// Reads an optional timestamp stored as [`micros`] (absent or null is `None`).
pub(crate) fn opt_time_field(d: &Document, field: &str) -> Result<Option<DateTime<Utc>>> {
    match d.get(field) {
        None | Some(Bson::Null) => Ok(None),
        Some(_) => time_field(d, field).map(Some),
    }
}

/// Reads an integer field stored as i32 or i64.
pub(crate) fn int_field(d: &Document, field: &str) -> Result<i64> {
    match d.get(field) {
        Some(Bson::Int64(v)) => Ok(*v),
        Some(Bson::Int32(v)) => Ok(i64::from(*v)),
        Some(other) => Err(Error::corrupt(format!(
            "field `{field}` is {:?}, expected an integer",
            other.element_type()
        ))),
        None => Err(Error::corrupt(format!("field `{field}` is missing"))),
    }
}

/// Reads a required string field.
pub(crate) fn str_field<'d>(d: &'d Document, field: &str) -> Result<&'d str> {
    match d.get(field) {
        Some(Bson::String(s)) => Ok(s),
        Some(other) => Err(Error::corrupt(format!(
            "field `{field}` is {:?}, expected a string",
            other.element_type()
        ))),
        None => Err(Error::corrupt(format!("field `{field}` is missing"))),
    }
}

/// Reads an optional string field (absent or null is `None`).
pub(crate) fn opt_str_field(d: &Document, field: &str) -> Result<Option<String>> {
    match d.get(field) {
        None | Some(Bson::Null) => Ok(None),
        Some(Bson::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(Error::corrupt(format!(
            "field `{field}` is {:?}, expected a string",
            other.element_type()
        ))),
    }
}

/// Metadata as stored: a JSON string (see the module docs).
pub(crate) fn metadata_to_bson(metadata: &Metadata) -> Result<Bson> {
    if metadata.is_empty() {
        return Ok(Bson::Null);
    }
    Ok(Bson::String(serde_json::to_string(metadata)?))
}

/// Reads metadata stored by [`metadata_to_bson`] (absent or null is empty).
pub(crate) fn metadata_field(d: &Document, field: &str) -> Result<Metadata> {
    match opt_str_field(d, field)? {
        None => Ok(Metadata::new()),
        Some(json) => serde_json::from_str(&json)
            .map_err(|e| Error::corrupt(format!("field `{field}` is not a JSON object: {e}"))),
    }
}

/// The fields of a message, to be merged into a document that also says where it lives.
/// (The validate layer has checked the message.)
pub(crate) fn message_fields(m: &Message) -> Result<Document> {
    let mut d = doc! {
        "id": m.id.as_str(),
        "role": m.role.as_str(),
        "content": &m.content,
        "ts": micros(m.timestamp),
    };
    if let Some(id) = &m.tool_call_id {
        d.insert("tool_call_id", id);
    }
    if let Some(name) = &m.tool_name {
        d.insert("tool_name", name);
    }
    with_metadata("a message", d, &m.metadata)
}

/// Reads a message stored with [`message_fields`].
pub(crate) fn message_from(d: &Document) -> Result<Message> {
    let role = str_field(d, "role")?;
    let role = Role::parse(role)
        .map_err(|e| Error::corrupt(format!("stored role is invalid: {}", e.message())))?;
    Ok(Message {
        id: MessageId::new(str_field(d, "id")?)
            .map_err(|e| Error::corrupt(format!("stored message id: {e}")))?,
        role,
        content: str_field(d, "content")?.to_string(),
        timestamp: time_field(d, "ts")?,
        tool_call_id: opt_str_field(d, "tool_call_id")?,
        tool_name: opt_str_field(d, "tool_name")?,
        metadata: metadata_field(d, "metadata")?,
    })
}

/// The stored form of `kind` and `key`, present only when the item has a key: `kind/key`,
/// unambiguous because no kind name contains `/`. The unique index on (`scope`, `kind_key`),
/// partial to the documents that have a `kind_key`, makes a key unique per scope and kind.
pub(crate) fn kind_key(kind: MemoryKind, key: Option<&str>) -> Option<String> {
    key.map(|k| format!("{}/{k}", kind.as_str()))
}

/// A memory item as stored; `_id` is its id, `scope` the scope's
/// [stored form](MemoryScope::stored_form) (`""` for the global scope), `expires` the expiry
/// time (left out when the item never expires). (The validate layer has checked the item.)
pub(crate) fn memory_doc(item: &MemoryItem) -> Result<Document> {
    let mut d = doc! {
        "_id": item.id.as_str(),
        "kind": item.kind.as_str(),
        "scope": item.scope.stored_form(),
        "text": &item.text,
        "created": micros(item.created_at),
        "updated": micros(item.updated_at),
    };
    if let Some(at) = item.expires_at {
        d.insert("expires", micros(at));
    }
    if let Some(key) = &item.key {
        d.insert("key", key);
    }
    if let Some(kk) = kind_key(item.kind, item.key.as_deref()) {
        d.insert("kind_key", kk);
    }
    with_metadata("a memory item", d, &item.metadata)
}

/// `d` (the encoded `what`) completed with `metadata` (left out when empty), once it is
/// known to fit in a stored document (see [`check_size`]).
fn with_metadata(what: &'static str, mut d: Document, metadata: &Metadata) -> Result<Document> {
    let meta = metadata_to_bson(metadata)?;
    if meta != Bson::Null {
        d.insert("metadata", meta);
    }
    check_size(what, &d)?;
    Ok(d)
}

/// Reads a memory item stored with [`memory_doc`]. A document without `scope` (written by a
/// build before schema version 2 after this one migrated the database) is global.
pub(crate) fn memory_from(d: &Document) -> Result<MemoryItem> {
    let kind = str_field(d, "kind")?;
    let kind: MemoryKind = kind
        .parse()
        .map_err(|_| Error::corrupt(format!("stored memory kind {kind:?} is unknown")))?;
    let scope = match opt_str_field(d, "scope")? {
        None => MemoryScope::global(),
        Some(stored) => MemoryScope::from_stored_form(&stored)
            .map_err(|e| Error::corrupt(format!("field `scope`: {}", e.message())))?,
    };
    Ok(MemoryItem {
        id: MemoryId::new(str_field(d, "_id")?)
            .map_err(|e| Error::corrupt(format!("stored memory id: {e}")))?,
        kind,
        scope,
        key: opt_str_field(d, "key")?,
        text: str_field(d, "text")?.to_string(),
        metadata: metadata_field(d, "metadata")?,
        created_at: time_field(d, "created")?,
        updated_at: time_field(d, "updated")?,
        expires_at: opt_time_field(d, "expires")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentmem_core::ErrorKind;
    use serde_json::json;

    #[test]
    fn messages_round_trip_with_operator_like_metadata_keys() {
        let m = Message::tool_result("c1", "search", "ok")
            .with_metadata("$where", json!("sleep(1000)"))
            .with_metadata("a.b", json!({"$gt": "", "x.y": [1, 2.5, null]}))
            .with_metadata("big", json!(u64::MAX));
        let d = message_fields(&m).unwrap();
        // Only plain field names reach the server; the metadata is one opaque string.
        assert!(d.keys().all(|k| !k.starts_with('$') && !k.contains('.')));
        assert!(matches!(d.get("metadata"), Some(Bson::String(_))));
        assert_eq!(message_from(&d).unwrap(), m);
    }

    #[test]
    fn documents_over_the_size_limit_are_invalid_input() {
        let limit = MAX_DOCUMENT_BYTES - DOCUMENT_HEADROOM;
        // Just fits: the content plus the other fields' few hundred bytes.
        let fits = Message::user("x".repeat(limit - 1024));
        assert!(message_fields(&fits).is_ok());
        let big = Message::user("x".repeat(limit));
        let err = message_fields(&big).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert!(err.to_string().contains("16 MiB"), "{err}");
        // Large metadata counts too, and so do memory items.
        let meta = Message::user("small").with_metadata("blob", json!("y".repeat(limit)));
        assert_eq!(
            message_fields(&meta).unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
        let item = MemoryItem::new(MemoryKind::Fact, "z".repeat(limit));
        assert_eq!(
            memory_doc(&item).unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
    }

    #[test]
    fn malformed_documents_are_corrupt_data() {
        let m = Message::user("hi");
        let mut d = message_fields(&m).unwrap();
        d.insert("ts", "yesterday");
        let err = message_from(&d).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::CorruptData);
        assert!(err.to_string().contains("`ts`"), "{err}");
        let mut d = message_fields(&m).unwrap();
        d.insert("metadata", "[1]");
        assert_eq!(message_from(&d).unwrap_err().kind(), ErrorKind::CorruptData);
        let mut d = message_fields(&m).unwrap();
        d.remove("role");
        assert_eq!(message_from(&d).unwrap_err().kind(), ErrorKind::CorruptData);
    }

    #[test]
    fn memory_items_round_trip() {
        let item = MemoryItem::new(MemoryKind::Fact, "likes tea")
            .with_key("drink")
            .with_metadata("$set", json!({"importance": 0.8}));
        let d = memory_doc(&item).unwrap();
        assert_eq!(d.get_str("kind_key").unwrap(), "fact/drink");
        assert_eq!(d.get_str("scope").unwrap(), "", "the global scope");
        assert!(d.get("expires").is_none(), "never expires");
        assert_eq!(memory_from(&d).unwrap(), item);

        // A scope and an expiry time (at microseconds) round-trip too.
        let at = chrono::DateTime::from_timestamp_micros(1_750_000_000_123_456).unwrap();
        let scoped = item
            .in_scope(MemoryScope::agent("alice").with_owner("ada@example.com"))
            .expiring_at(at);
        let d = memory_doc(&scoped).unwrap();
        assert_eq!(
            d.get_str("scope").unwrap(),
            "agent:alice/owner:ada@example.com"
        );
        assert_eq!(d.get_i64("expires").unwrap(), 1_750_000_000_123_456);
        assert_eq!(memory_from(&d).unwrap(), scoped);

        // Written before schema version 2: no scope field, so global.
        let mut d = memory_doc(&MemoryItem::new(MemoryKind::Fact, "old")).unwrap();
        d.remove("scope");
        assert!(memory_from(&d).unwrap().scope.is_global());
    }

    #[test]
    fn unreadable_scopes_and_expiry_times_are_corrupt_data() {
        let item = MemoryItem::new(MemoryKind::Fact, "x");
        for (field, value) in [
            ("scope", Bson::String("agent:a/agent:b".into())),
            ("scope", Bson::Int32(1)),
            ("expires", Bson::String("tomorrow".into())),
        ] {
            let mut d = memory_doc(&item).unwrap();
            d.insert(field, value);
            let err = memory_from(&d).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::CorruptData, "{field}");
            assert!(err.to_string().contains(field), "{err}");
        }
    }
}
