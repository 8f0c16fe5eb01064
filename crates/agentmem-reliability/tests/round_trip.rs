//! Accepted means readable, on every backend: arbitrary messages and memory items (roles,
//! unicode, sizes, metadata shapes and depths, tool fields) are either refused with
//! `InvalidInput` and leave nothing behind, or read back equal through a fresh connection.
use std::sync::Arc;

use agentmem_core::{
    AgentMemory, ErrorKind, MemoryItem, MemoryKind, MemoryScope, Message, Metadata, Role, SessionId,
};
use chrono::{TimeZone, Utc};
use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestRunner};
use serde_json::Value;

mod common;

use common::fuzz::nasty_string;

/// Cases per backend: each opens a fresh connection, so the server backends keep it small.
const CASES: u32 = 32;

/// Text an agent could hand over: anything, with a bias to the awkward.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => nasty_string(),
        1 => (1usize..20_000).prop_map(|n| "é漢 ".repeat(n / 4 + 1)),
    ]
}

/// A role: the standard ones, agent names (some a store must refuse), any string.
fn role() -> impl Strategy<Value = Role> {
    prop_oneof![
        8 => Just(Role::System),
        8 => Just(Role::User),
        8 => Just(Role::Assistant),
        8 => Just(Role::Tool),
        8 => "[A-Za-z\u{e9}\u{6f22}][A-Za-z0-9\u{e9} _.-]{0,20}[a-z]".prop_map(Role::Agent),
        1 => nasty_string().prop_map(Role::Agent),
        1 => Just(Role::Agent("User".into())),
        1 => Just(Role::Agent(" bob".into())),
        1 => Just(Role::Agent("a".repeat(129))),
    ]
}

/// A JSON value nested up to `depth` levels, with every scalar kind.
fn json(depth: u32) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        Just(Value::from(u64::MAX)),
        (-1.0e9f64..1.0e9).prop_map(|f| Value::from((f * 1000.0).round() / 1000.0)),
        nasty_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(depth, 64, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(nasty_string(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A value nested exactly `levels` deep (arrays in arrays), past the depth limit or not.
fn deep(levels: usize) -> Value {
    (0..levels).fold(Value::from("bottom"), |v, _| Value::Array(vec![v]))
}

fn metadata() -> impl Strategy<Value = Metadata> {
    prop_oneof![
        12 => proptest::collection::btree_map(nasty_string(), json(3), 0..5)
            .prop_map(|m| m.into_iter().collect()),
        1 => (60usize..70).prop_map(|n| {
            let mut m = Metadata::new();
            m.insert("args".into(), deep(n));
            m
        }),
    ]
}

/// None (weighted `none`), a text matching `regex` (weighted `matching`), or (weighted 1)
/// anything.
fn optional_text(
    none: u32, regex: &'static str, matching: u32,
) -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        none => Just(None),
        matching => regex.prop_map(Some),
        1 => nasty_string().prop_map(Some),
    ]
}

/// A tool call id or name: none, an identifier, or (rarely) anything.
fn tool_field() -> impl Strategy<Value = Option<String>> {
    optional_text(3, "[a-zA-Z0-9_.:-]{1,40}", 3)
}

fn message() -> impl Strategy<Value = Message> {
    (
        role(),
        text(),
        metadata(),
        tool_field(),
        tool_field(),
        0i64..4_000_000_000,
    )
        .prop_map(|(role, content, metadata, call, tool, secs)| {
            let mut m = Message::new(role, content).with_timestamp(
                Utc.timestamp_opt(secs, 0).unwrap()
                    + chrono::Duration::microseconds(secs % 999_983),
            );
            m.metadata = metadata;
            m.tool_call_id = call;
            m.tool_name = tool;
            m
        })
}

/// A scope part: none, a name, or (rarely) anything, which the rule may refuse.
fn scope_part() -> impl Strategy<Value = Option<String>> {
    optional_text(4, "[a-zA-Z0-9_.@+-]{1,20}( [a-z0-9]{1,8})?", 3)
}

fn memory_item() -> impl Strategy<Value = MemoryItem> {
    let scope = (scope_part(), scope_part(), scope_part()).prop_map(|(agent, workspace, owner)| {
        MemoryScope {
            agent,
            workspace,
            owner,
        }
    });
    // Expiry in the future only: an expired item reads back as absent, by design.
    let expires = proptest::option::of(1i64..3_000_000_000_000_000);
    (
        text(),
        proptest::option::of(nasty_string()),
        metadata(),
        scope,
        expires,
    )
        .prop_map(|(text, key, metadata, scope, expires)| {
            let mut item = MemoryItem::new(MemoryKind::Fact, text).in_scope(scope);
            item.key = key;
            item.metadata = metadata;
            if let Some(micros) = expires {
                let at = item.created_at + chrono::Duration::microseconds(micros);
                item = item.expiring_at(at);
            }
            item
        })
}

/// One case: append `batch` and put `item`; what was accepted reads back equal through a new
/// connection to `url`, what was refused is `InvalidInput` and left nothing. Returns how many
/// of the two writes were accepted.
async fn check(
    url: &str, store: &Arc<dyn AgentMemory>, session: &SessionId, batch: Vec<Message>,
    item: MemoryItem,
) -> Result<u32, TestCaseError> {
    let mut accepted = 0;
    // One rule decides what is storable: a write is refused exactly when the rule refuses it,
    // on every backend alike.
    let storable = batch.iter().all(|m| m.validate().is_ok());
    let item_storable = item.validate().is_ok();
    let appended = store.append(session, &batch).await;
    let put = store.put_memory(&item).await;
    let fresh = agentmem::open(url).await.unwrap();
    let loaded = fresh.load(session, None).await;
    match appended {
        Ok(()) => {
            let loaded = loaded.map_err(|e| {
                TestCaseError::fail(format!("{url}: an acknowledged batch does not load: {e}"))
            })?;
            prop_assert!(storable, "{}: accepted a batch the rule refuses", url);
            prop_assert_eq!(loaded.map(|s| s.messages), Some(batch), "{}", url);
            accepted += 1;
        }
        Err(e) => {
            prop_assert!(!storable, "{}: refused a storable batch: {}", url, e);
            prop_assert_eq!(e.kind(), ErrorKind::InvalidInput, "{}: {}", url, e);
            prop_assert!(loaded.unwrap().is_none(), "{}: a refused batch wrote", url);
        }
    }
    match put {
        Ok(stored) => {
            let back = fresh.get_memory(&stored.id).await.map_err(|e| {
                TestCaseError::fail(format!("{url}: an acknowledged item does not load: {e}"))
            })?;
            prop_assert!(item_storable, "{}: accepted an item the rule refuses", url);
            prop_assert_eq!(back, Some(stored), "{}", url);
            accepted += 1;
        }
        Err(e) => {
            prop_assert!(!item_storable, "{}: refused a storable item: {}", url, e);
            prop_assert_eq!(e.kind(), ErrorKind::InvalidInput, "{}: {}", url, e);
            prop_assert!(
                fresh.get_memory(&item.id).await.unwrap().is_none(),
                "{}",
                url
            );
        }
    }
    Ok(accepted)
}

/// Runs the property on the store at `url` (skipping a server that is not there, unless
/// services are required).
fn property(service: &str, url: String) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let Some(store) = rt.block_on(common::open_or_skip(service, &url)) else {
        return;
    };
    let mut runner = TestRunner::new(ProptestConfig {
        cases: CASES,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let n = std::sync::atomic::AtomicU32::new(0);
    let accepted = std::sync::atomic::AtomicU32::new(0);
    let strategy = (proptest::collection::vec(message(), 1..6), memory_item());
    let result = runner.run(&strategy, |(batch, item)| {
        let case = n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let session: SessionId = format!("rt{case}").parse().unwrap();
        let ok = rt.block_on(check(&url, &store, &session, batch, item))?;
        accepted.fetch_add(ok, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    });
    rt.block_on(common::drop_namespace(&url));
    if let Err(e) = result {
        panic!("{service}: {e}");
    }
    // Most writes are storable: the property must have read many back, not only refusals.
    let accepted = accepted.into_inner();
    eprintln!(
        "{service}: {accepted} of {} writes accepted and read back",
        2 * CASES
    );
    assert!(
        accepted >= CASES / 2,
        "{service}: only {accepted} writes accepted"
    );
}

#[test]
fn file_accepted_means_readable() {
    let dir = tempfile::tempdir().unwrap();
    property("file", format!("file://{}", dir.path().display()));
}

#[test]
fn sqlite_accepted_means_readable() {
    let dir = tempfile::tempdir().unwrap();
    property(
        "sqlite",
        format!("sqlite://{}", dir.path().join("rt.db").display()),
    );
}

#[test]
fn redis_accepted_means_readable() {
    let ns = agentmem_testkit::unique_namespace("rt");
    property("redis", common::redis_url(&ns));
}

#[test]
fn postgres_accepted_means_readable() {
    let ns = agentmem_testkit::unique_namespace("rt");
    property("postgres", common::postgres_url(&ns));
}

#[test]
fn mongodb_accepted_means_readable() {
    let ns = agentmem_testkit::unique_namespace("rt");
    property("mongodb", common::mongo_url(&ns));
}
