//! Helpers for backend implementations: the parts of the [`AgentMemory`](crate::AgentMemory)
//! contract every store carries out the same way (archive ids, retention cutoffs, search
//! limits), and reading back what a store wrote (timestamps, ids, percent-escaped names).
//!
//! Each backend calls these instead of keeping its own copy, so the stores agree to the letter
//! (the same archive id after two compactions in one second, the same cutoff for an age too
//! large to subtract, the same empty answer for a query without words).

use chrono::{DateTime, Utc};

use crate::error::{Error, Result};
use crate::lifecycle::Rewind;
use crate::model::{MemoryItem, Message};
use crate::name::ArchiveId;
use crate::name::{MessageId, SessionId};
use crate::scope::ScopeFilter;
use crate::search::{query_terms, rank};
use crate::store::{MemoryFilter, MemoryHit, MemoryStore, MessageHit, RetentionPolicy};

/// What [`MemoryStore::get_context`] returns by default, from `store`'s own search and
/// listing: the items matching `query` (at most 10), else the most recent 20, one `- text`
/// line each. A store or layer that overrides `get_context` (and so cannot call the default)
/// calls this to keep the same answer.
pub async fn memory_context<S: MemoryStore + ?Sized>(
    store: &S, query: Option<&str>,
) -> Result<String> {
    memory_context_in(store, query, &ScopeFilter::All).await
}

/// [`memory_context`] of the items in `scope` only: what an agent in a scope is shown
/// ([`ContextStore::get_context_in`](crate::ContextStore::get_context_in) of every store), so
/// one agent's context never lists another agent's items.
///
/// ```
/// use agentmem_core::support::memory_context_in;
/// use agentmem_core::{InMemoryStore, MemoryItem, MemoryKind, MemoryScope, MemoryStore,
///     ScopeFilter};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = InMemoryStore::new();
/// let alice = MemoryScope::agent("alice");
/// let fact = |text: &str, scope| MemoryItem::new(MemoryKind::Fact, text).in_scope(scope);
/// store.put_memory(&fact("Alice's user likes tea", alice.clone())).await?;
/// store.put_memory(&fact("Bob's user likes coffee", MemoryScope::agent("bob"))).await?;
/// store.put_memory(&fact("The office is in Lisbon", MemoryScope::global())).await?;
/// let seen = ScopeFilter::VisibleFrom(alice);
/// let context = memory_context_in(&store, None, &seen).await?;
/// assert_eq!(context, "- Alice's user likes tea\n- The office is in Lisbon");
/// assert_eq!(memory_context_in(&store, Some("coffee"), &seen).await?, "");
/// // A text stored twice (as a short-term and a long-term item) is listed once.
/// store.put_memory(&MemoryItem::new(MemoryKind::ShortTerm, "The office is in Lisbon")).await?;
/// let context = memory_context_in(&store, None, &seen).await?;
/// assert_eq!(context, "- Alice's user likes tea\n- The office is in Lisbon");
/// # Ok::<(), agentmem_core::Error>(())
/// # }).unwrap();
/// ```
pub async fn memory_context_in<S: MemoryStore + ?Sized>(
    store: &S, query: Option<&str>, scope: &ScopeFilter,
) -> Result<String> {
    let filter = |limit| {
        MemoryFilter::default()
            .with_scope(scope.clone())
            .with_limit(limit)
    };
    let items: Vec<MemoryItem> = match query.map(str::trim) {
        Some(q) if !q.is_empty() => store
            .search_memories(q, &filter(10))
            .await?
            .into_iter()
            .map(|hit| hit.item)
            .collect(),
        _ => store.list_memories(&filter(20)).await?,
    };
    // The same text stored as several items (PraisonAI stores each turn as a short-term and
    // a long-term item) is shown once: a repeat tells the model nothing and costs tokens.
    let mut shown = std::collections::HashSet::new();
    Ok(items
        .iter()
        .filter(|item| shown.insert(item.text.as_str()))
        .map(|item| format!("- {}", item.text))
        .collect::<Vec<_>>()
        .join("\n"))
}

/// How many hits a memory search returns when its filter sets no limit.
pub const DEFAULT_SEARCH_LIMIT: usize = 10;

/// The number of hits a memory search with `filter` returns at most.
///
/// ```
/// use agentmem_core::support::memory_search_limit;
/// use agentmem_core::MemoryFilter;
/// assert_eq!(memory_search_limit(&MemoryFilter::default()), 10);
/// assert_eq!(memory_search_limit(&MemoryFilter::default().with_limit(3)), 3);
/// ```
pub fn memory_search_limit(filter: &MemoryFilter) -> usize {
    filter.limit.unwrap_or(DEFAULT_SEARCH_LIMIT)
}

/// The distinct terms of `query` (see [`query_terms`]) when a search for at most `limit` hits
/// can find anything; `None` when it cannot (no words, or a limit of 0), so a store answers
/// with no hits without asking its server.
///
/// ```
/// use agentmem_core::support::search_terms;
/// assert_eq!(search_terms("Rust, rusting GO", 5), Some(vec!["rust".into(), "go".into()]));
/// assert_eq!(search_terms("?!", 5), None);
/// assert_eq!(search_terms("rust", 0), None);
/// ```
pub fn search_terms(query: &str, limit: usize) -> Option<Vec<String>> {
    let terms = query_terms(query);
    (limit > 0 && !terms.is_empty()).then_some(terms)
}

/// Drops all but the last `limit` of `items` (nothing when `limit` is `None`): listing
/// memory items keeps the newest, and lists oldest first.
///
/// ```
/// use agentmem_core::support::keep_last;
/// let mut items = vec![1, 2, 3];
/// keep_last(&mut items, Some(2));
/// assert_eq!(items, [2, 3]);
/// keep_last(&mut items, None);
/// assert_eq!(items, [2, 3]);
/// ```
pub fn keep_last<T>(items: &mut Vec<T>, limit: Option<usize>) {
    if let Some(limit) = limit {
        items.drain(..items.len().saturating_sub(limit));
    }
}

/// The items of `items` that `filter` lists: those of its kind and scope that have not
/// expired, oldest first (a stable sort: items created at the same time keep the order given),
/// only the newest `filter.limit`. For backends that hold the items in the client.
pub fn select_memories<'a>(
    items: impl IntoIterator<Item = &'a MemoryItem>, filter: &MemoryFilter,
) -> Vec<MemoryItem> {
    let now = crate::now();
    let mut selected: Vec<MemoryItem> = items
        .into_iter()
        .filter(|item| filter.matches(item, now))
        .cloned()
        .collect();
    selected.sort_by_key(|item| item.created_at);
    keep_last(&mut selected, filter.limit);
    selected
}

/// The items of `items` that `filter` passes (kind, scope, not expired) and that match
/// `query`, ranked with [`rank`] (BM25), best first, at most [`memory_search_limit`]. For
/// backends that search in the client.
pub fn rank_memories<'a>(
    query: &str, items: impl IntoIterator<Item = &'a MemoryItem>, filter: &MemoryFilter,
) -> Vec<MemoryHit> {
    let now = crate::now();
    let candidates: Vec<&MemoryItem> = items
        .into_iter()
        .filter(|item| filter.matches(item, now))
        .collect();
    let texts = candidates.iter().map(|item| item.text.as_str());
    rank(query, texts, memory_search_limit(filter))
        .into_iter()
        .map(|(index, score)| MemoryHit {
            item: candidates[index].clone(),
            score,
        })
        .collect()
}

/// The messages of `candidates` (each with its session) that match `query`, ranked with
/// [`rank`] (BM25), best first (ties in the order given), at most
/// `limit`. For backends that search in the client.
pub fn rank_messages<'a>(
    query: &str, candidates: impl IntoIterator<Item = (&'a SessionId, &'a Message)>, limit: usize,
) -> Vec<MessageHit> {
    let candidates: Vec<(&SessionId, &Message)> = candidates.into_iter().collect();
    let texts = candidates
        .iter()
        .map(|(_, message)| message.content.as_str());
    rank(query, texts, limit)
        .into_iter()
        .map(|(index, score)| {
            let (session, message) = candidates[index];
            MessageHit {
                session: session.clone(),
                message: message.clone(),
                score,
            }
        })
        .collect()
}

/// A timestamp as stored: microseconds since the Unix epoch, the precision agentmem keeps, so
/// a round trip through [`from_micros`] is exact.
pub fn micros(time: DateTime<Utc>) -> i64 {
    time.timestamp_micros()
}

/// Reads a timestamp stored by [`micros`]; `CorruptData` naming `what` when it is out of
/// range.
///
/// ```
/// use agentmem_core::support::{from_micros, micros};
/// let t = agentmem_core::now();
/// assert_eq!(from_micros(micros(t), "the creation time")?, t);
/// assert!(from_micros(i64::MAX, "the creation time").is_err());
/// # Ok::<(), agentmem_core::Error>(())
/// ```
pub fn from_micros(value: i64, what: &str) -> Result<DateTime<Utc>> {
    DateTime::from_timestamp_micros(value)
        .ok_or_else(|| Error::corrupt(format!("{what} holds an out-of-range time {value}")))
}

/// Reads a timestamp stored as decimal text of [`micros`]; `CorruptData` naming `what` when
/// it is not one.
pub fn parse_micros(text: &str, what: &str) -> Result<DateTime<Utc>> {
    let value = text
        .parse::<i64>()
        .map_err(|_| Error::corrupt(format!("{what} {text:?} is not a timestamp")))?;
    from_micros(value, what)
}

/// A session id read back from storage: `CorruptData` when it is not a valid id (something
/// other than agentmem wrote it).
pub fn stored_session_id(id: impl Into<String>) -> Result<SessionId> {
    SessionId::new(id).map_err(|e| Error::corrupt(format!("stored session id is invalid: {e}")))
}

/// An archive id read back from storage: `CorruptData` when it is not a valid id.
pub fn stored_archive_id(id: impl Into<String>) -> Result<ArchiveId> {
    ArchiveId::new(id).map_err(|e| Error::corrupt(format!("stored archive id is invalid: {e}")))
}

/// The id of an archive made at `at` when the session has none from that second:
/// `history_%Y-%m-%d_%H-%M-%S`, as the file backend (and Swarms) name archives.
pub fn archive_id_base(at: DateTime<Utc>) -> String {
    format!("history_{}", at.format("%Y-%m-%d_%H-%M-%S"))
}

/// The id of a new archive made at `at`: [`archive_id_base`] when `is_taken` says it is
/// free, else the first free of the same with `_2`, `_3`, … (further compactions within that
/// second). Always a valid [`ArchiveId`].
///
/// ```
/// use chrono::TimeZone;
/// use agentmem_core::support::free_archive_id;
/// let at = chrono::Utc.with_ymd_and_hms(2026, 4, 20, 14, 30, 45).unwrap();
/// assert_eq!(free_archive_id(at, |_| false), "history_2026-04-20_14-30-45");
/// let taken = ["history_2026-04-20_14-30-45", "history_2026-04-20_14-30-45_2"];
/// assert_eq!(free_archive_id(at, |id| taken.contains(&id)), "history_2026-04-20_14-30-45_3");
/// ```
pub fn free_archive_id(at: DateTime<Utc>, mut is_taken: impl FnMut(&str) -> bool) -> String {
    let base = archive_id_base(at);
    if !is_taken(&base) {
        return base;
    }
    (2u64..)
        .map(|n| format!("{base}_{n}"))
        .find(|candidate| !is_taken(candidate))
        .unwrap_or(base)
}

/// When a purge at `now` under `policy` expires sessions last written before the returned
/// time: `None` when the policy sets no age, or one reaching back before any time chrono
/// represents (nothing stored is that old).
///
/// ```
/// use std::time::Duration;
/// use agentmem_core::support::retention_cutoff;
/// use agentmem_core::RetentionPolicy;
/// let now = agentmem_core::now();
/// let day = RetentionPolicy { max_age: Some(Duration::from_secs(86_400)), ..Default::default() };
/// assert_eq!(retention_cutoff(&day, now), Some(now - chrono::Duration::days(1)));
/// let forever = RetentionPolicy { max_age: Some(Duration::MAX), ..Default::default() };
/// assert_eq!(retention_cutoff(&forever, now), None);
/// assert_eq!(retention_cutoff(&RetentionPolicy::default(), now), None);
/// ```
pub fn retention_cutoff(policy: &RetentionPolicy, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    age_cutoff(policy.max_age?, now)
}

/// When a purge at `now` under `policy` deletes memory items last updated before the
/// returned time (as [`retention_cutoff`], for `max_memory_age`).
pub fn memory_retention_cutoff(
    policy: &RetentionPolicy, now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    age_cutoff(policy.max_memory_age?, now)
}

fn age_cutoff(age: std::time::Duration, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    now.checked_sub_signed(chrono::Duration::from_std(age).ok()?)
}

/// Whether a purge at `now` with the memory cutoff `cutoff` (see [`memory_retention_cutoff`])
/// deletes `item`: it has expired, or was last updated before the cutoff.
pub fn memory_is_purged(
    item: &MemoryItem, cutoff: Option<DateTime<Utc>>, now: DateTime<Utc>,
) -> bool {
    item.is_expired_at(now) || cutoff.is_some_and(|cutoff| item.updated_at < cutoff)
}

/// How many of `messages` (a session's current messages, oldest first) a fork at `at` copies:
/// up to and including `at`, or all of them. `NotFound` when `at` is not among them.
pub fn fork_end(messages: &[Message], source: &SessionId, at: Option<&MessageId>) -> Result<usize> {
    match at {
        None => Ok(messages.len()),
        Some(at) => position_of(messages, source, at).map(|i| i + 1),
    }
}

/// How many of `messages` (a session's current messages, oldest first) a rewind to `to`
/// keeps. `NotFound` when [`Rewind::After`] names none of them.
pub fn rewind_keep(messages: &[Message], session: &SessionId, to: &Rewind) -> Result<usize> {
    match to {
        Rewind::Last(n) => Ok(messages.len().saturating_sub(*n)),
        Rewind::After(id) => position_of(messages, session, id).map(|i| i + 1),
    }
}

/// The index of the last message with id `id` (ids are unique unless a caller reused one; the
/// last keeps the most).
fn position_of(messages: &[Message], session: &SessionId, id: &MessageId) -> Result<usize> {
    messages
        .iter()
        .rposition(|m| &m.id == id)
        .ok_or_else(|| message_not_found(session, id))
}

/// The error for a fork or rewind at a message the session does not hold.
pub fn message_not_found(session: &SessionId, id: &MessageId) -> Error {
    Error::not_found(format!(
        "session `{session}` holds no message `{id}` (archived messages do not count)"
    ))
}

/// The error for an archive the session does not have.
pub fn archive_not_found(session: &SessionId, archive: &ArchiveId) -> Error {
    Error::not_found(format!(
        "archive `{archive}` of session `{session}` does not exist"
    ))
}

/// The error for a fork whose target session already exists.
pub fn fork_target_exists(target: &SessionId) -> Error {
    Error::conflict(format!(
        "cannot fork into `{target}`: that session exists (delete it first, or pick a new id)"
    ))
}

/// Decodes `%XX` escapes; `None` when an escape is malformed or the result is not UTF-8.
///
/// ```
/// use agentmem_core::support::percent_decode;
/// assert_eq!(percent_decode("x%20y%3F.db").as_deref(), Some("x y?.db"));
/// assert_eq!(percent_decode("bad%2"), None);
/// assert_eq!(percent_decode("%FF"), None);
/// ```
pub fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A JSON value written canonically: compact, object keys sorted by bytes, `-0.0` as `0.0`,
/// everything else as serde_json writes it. Two values are equal (as `serde_json::Value`
/// compares them) exactly when their canonical forms are, so a store can match stored JSON by
/// comparing or hashing text.
///
/// ```
/// use agentmem_core::support::canonical_json;
/// use serde_json::json;
/// assert_eq!(canonical_json(&json!({"b": [1, {"y": -0.0, "x": "é"}], "a": null})),
///     r#"{"a":null,"b":[1,{"x":"é","y":0.0}]}"#);
/// ```
pub fn canonical_json(value: &serde_json::Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::from(k.as_str()).to_string());
                out.push(':');
                write_canonical(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(v, out);
            }
            out.push(']');
        }
        Value::Number(n) if n.is_f64() && n.as_f64() == Some(0.0) => out.push_str("0.0"),
        other => out.push_str(&other.to_string()),
    }
}

/// The `N` bytes that exactly `2 * N` hex digits (either case) spell; `None` for anything else.
/// Fixed-size ids (vector keys, key ids) are stored and shown this way.
///
/// ```
/// use agentmem_core::support::hex_bytes;
/// assert_eq!(hex_bytes::<2>("0aFf"), Some([0x0a, 0xff]));
/// assert_eq!(hex_bytes::<2>("0aF"), None);
/// assert_eq!(hex_bytes::<2>("0aFg"), None);
/// assert_eq!(hex_bytes::<1>("+f"), None);
/// ```
pub fn hex_bytes<const N: usize>(hex: &str) -> Option<[u8; N]> {
    if hex.len() != 2 * N {
        return None;
    }
    let mut bytes = [0u8; N];
    for (byte, pair) in bytes.iter_mut().zip(hex.as_bytes().chunks_exact(2)) {
        let digit = |d: u8| char::from(d).to_digit(16);
        *byte = u8::try_from(digit(pair[0])? * 16 + digit(pair[1])?).ok()?;
    }
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use serde_json::json;

    #[test]
    fn canonical_json_is_equal_exactly_when_values_are() {
        let a: serde_json::Value =
            serde_json::from_str(r#"{"b":[1,{"y":2,"x":1}],"a":-0.0}"#).unwrap();
        let b: serde_json::Value =
            serde_json::from_str(r#"{"a":0.0,"b":[1,{"x":1,"y":2}]}"#).unwrap();
        assert_eq!(a, b);
        assert_eq!(canonical_json(&a), canonical_json(&b));
        for (x, y) in [
            (json!(42), json!("42")),
            (json!(1), json!(1.0)),
            (json!({"k": 1}), json!({})),
            (json!([1, "2"]), json!([1])),
            (json!(null), json!("null")),
        ] {
            assert_ne!(x, y);
            assert_ne!(canonical_json(&x), canonical_json(&y), "{x} / {y}");
        }
    }

    #[test]
    fn archive_ids_get_a_suffix_within_one_second() {
        let at = Utc
            .with_ymd_and_hms(2026, 4, 20, 14, 30, 45)
            .single()
            .expect("valid time");
        assert_eq!(
            free_archive_id(at, |_| false),
            "history_2026-04-20_14-30-45"
        );
        let mut taken = vec!["history_2026-04-20_14-30-45".to_string()];
        let is_taken = |taken: &[String], id: &str| taken.iter().any(|t| t == id);
        assert_eq!(
            free_archive_id(at, |id| is_taken(&taken, id)),
            "history_2026-04-20_14-30-45_2"
        );
        taken.push("history_2026-04-20_14-30-45_2".into());
        assert_eq!(
            free_archive_id(at, |id| is_taken(&taken, id)),
            "history_2026-04-20_14-30-45_3"
        );
    }
}
