//! How model values are stored in BSON documents, and read back.
//!
//! - Timestamps (a memory item's expiry time too) are `i64` microseconds since the Unix
//!   epoch: BSON dates keep milliseconds only, and agentmem timestamps round-trip exactly at
//!   microseconds.
//! - Metadata is stored as one JSON string. Its keys are caller data and may start with `$`
//!   or contain `.`, which MongoDB would read as operators or field paths; as a string value
//!   they are opaque to the server, and JSON keeps every value (big integers, floats, nested
//!   objects) exactly.
//! - Messages in `messages` and memory items carry `terms`: the [search terms](index_terms)
//!   of their text (Porter stems, every occurrence, in order) joined by single spaces, which
//!   the text indexes and the regex fallback of search match on (see `search.rs`). It is
//!   computed from the text as stored (ciphertext, in an encrypted store), never read back
//!   into a message or item, and left off archived messages, which no search reads.
//! - Reading back checks every field; anything missing or of the wrong type is
//!   [`CorruptData`](agentmem_core::ErrorKind::CorruptData), naming the field.

use std::future::IntoFuture;

use agentmem_core::search::index_terms;
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

/// The size of `d` (the encoded `what`) as BSON; `InvalidInput` when it cannot be encoded.
pub(crate) fn encoded_size(what: &'static str, d: &Document) -> Result<usize> {
    let mut count = ByteCount::default();
    match d.to_writer(&mut count) {
        Ok(()) => Ok(count.0),
        // Encoding fails only on values BSON cannot hold (a key with a NUL byte, say, which
        // the stored forms never have): report it as the caller's input, not as too large.
        Err(e) => Err(Error::invalid_input(format!(
            "{what} cannot be encoded as BSON: {e}"
        ))),
    }
}

/// Refuses `d` (the encoded `what`) with `InvalidInput` when it would not fit in one stored
/// document. Checked before anything is written, so an oversized value leaves no trace (the
/// server or driver would only refuse it after a session had been created or positions
/// reserved). Returns the size.
pub(crate) fn check_size(what: &'static str, d: &Document) -> Result<usize> {
    let limit = MAX_DOCUMENT_BYTES - DOCUMENT_HEADROOM;
    let size = encoded_size(what, d)?;
    if size > limit {
        return Err(Error::invalid_input(format!(
            "{what} is {size} bytes as BSON; MongoDB stores documents of at most 16 MiB \
             ({MAX_DOCUMENT_BYTES} bytes), of which agentmem keeps {DOCUMENT_HEADROOM} for its \
             own fields, so the limit is {limit} bytes"
        )));
    }
    Ok(size)
}

/// The field of message and memory-item documents holding their search terms (see the
/// module docs).
pub(crate) const TERMS: &str = "terms";

/// Bytes a string field named [`TERMS`] adds to a document besides its value: the type byte,
/// the name and its NUL, the length and the value's NUL.
const TERMS_FIELD_BYTES: usize = 1 + TERMS.len() + 1 + 4 + 1;

/// The `terms` of `text` in at most `budget` bytes: every occurrence of its
/// [`index_terms`], in order, joined by single spaces, which keeps `$text`'s term frequencies.
/// A text too large for that alongside itself in one document (a wordy text of megabytes)
/// keeps each distinct term once instead, in order of first appearance, as many as fit: every
/// term stays searchable (short of a pathological text of thousands of huge distinct words),
/// only `$text` no longer counts repeats. Terms are never a reason to refuse a text: one that
/// fits in a document is stored, whatever all its terms would cost.
pub(crate) fn terms_within(text: &str, budget: usize) -> String {
    let terms = index_terms(text);
    let all = terms.iter().map(String::len).sum::<usize>() + terms.len().saturating_sub(1);
    if all <= budget {
        return terms.join(" ");
    }
    let mut seen = std::collections::HashSet::new();
    let mut out = String::new();
    for t in &terms {
        if !seen.insert(t.as_str()) {
            continue;
        }
        let needed = t.len() + usize::from(!out.is_empty());
        if out.len() + needed > budget {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(t);
    }
    out
}

/// The room left for `terms` in a document of `size` bytes (at most the stored limit less
/// [`DOCUMENT_HEADROOM`]).
pub(crate) fn terms_budget(size: usize) -> usize {
    (MAX_DOCUMENT_BYTES - DOCUMENT_HEADROOM).saturating_sub(size + TERMS_FIELD_BYTES)
}

/// `d` (an encoded document of `size` bytes, holding `text`) completed with its `terms` (see
/// [`terms_within`]).
fn with_terms((mut d, size): (Document, usize), text: &str) -> Document {
    d.insert(TERMS, terms_within(text, terms_budget(size)));
    d
}

/// The projection that leaves out [`TERMS`]: reads that decode messages or memory items
/// never need them, and they are about as large as the text.
pub(crate) fn without_terms() -> Document {
    doc! {TERMS: 0}
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

/// The fields of a message in `messages`, with its [`TERMS`], to be merged into a document
/// that also says where it lives. (The validate layer has checked the message.)
pub(crate) fn message_fields(m: &Message) -> Result<Document> {
    Ok(with_terms(encoded_message(m)?, &m.content))
}

/// The fields of an archived message: those of [`message_fields`] but [`TERMS`] (no search
/// reads archives).
pub(crate) fn archived_message_fields(m: &Message) -> Result<Document> {
    Ok(encoded_message(m)?.0)
}

/// A message's fields but [`TERMS`], and their size.
fn encoded_message(m: &Message) -> Result<(Document, usize)> {
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
/// time (left out when the item never expires), `terms` its [`TERMS`]. (The validate layer
/// has checked the item.)
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
    Ok(with_terms(
        with_metadata("a memory item", d, &item.metadata)?,
        &item.text,
    ))
}

/// `d` (the encoded `what`) completed with `metadata` (left out when empty), once it is
/// known to fit in a stored document (see [`check_size`]), and its size.
fn with_metadata(
    what: &'static str, mut d: Document, metadata: &Metadata,
) -> Result<(Document, usize)> {
    let meta = metadata_to_bson(metadata)?;
    if meta != Bson::Null {
        d.insert("metadata", meta);
    }
    let size = check_size(what, &d)?;
    Ok((d, size))
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
    fn messages_and_items_carry_their_stemmed_terms_but_archives_do_not() {
        let m = Message::user("I looked into adoption; adoption, again!");
        let d = message_fields(&m).unwrap();
        assert_eq!(
            d.get_str(TERMS).unwrap(),
            "i look into adopt adopt again",
            "every occurrence, in order"
        );
        assert!(archived_message_fields(&m).unwrap().get(TERMS).is_none());
        // Never read back into the message.
        assert_eq!(message_from(&d).unwrap(), m);
        let item = MemoryItem::new(MemoryKind::Fact, "Adopted cats");
        let d = memory_doc(&item).unwrap();
        assert_eq!(d.get_str(TERMS).unwrap(), "adopt cat");
        assert_eq!(memory_from(&d).unwrap(), item);
        assert_eq!(
            message_fields(&Message::user("?!")).unwrap().get_str(TERMS),
            Ok("")
        );
    }

    #[test]
    fn terms_too_large_for_the_document_keep_each_term_once() {
        let text = "adoption adopted cats cat dogs";
        assert_eq!(terms_within(text, 100), "adopt adopt cat cat dog");
        assert_eq!(terms_within(text, 13), "adopt cat dog");
        assert_eq!(
            terms_within(text, 9),
            "adopt cat",
            "as many as fit, the first ones"
        );
        assert_eq!(terms_within(text, 0), "");
        // A wordy text near the limit still fits in one document with its terms.
        let limit = MAX_DOCUMENT_BYTES - DOCUMENT_HEADROOM;
        let wordy = "ab ".repeat((limit - 1024) / 3);
        let d = message_fields(&Message::user(wordy)).unwrap();
        assert_eq!(d.get_str(TERMS).unwrap(), "ab");
        assert!(check_size("a message", &d).is_ok());
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
