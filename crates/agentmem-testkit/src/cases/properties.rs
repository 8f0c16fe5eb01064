//! Store properties: named values a store keeps about itself, set by compare-and-set.

use agentmem_core::{
    AgentMemory, ErrorKind, PropertyChange, MAX_PROPERTY_NAME_BYTES, MAX_PROPERTY_VALUE_BYTES,
};

use super::assert_kind;

async fn get(store: &dyn AgentMemory, name: &str) -> Option<String> {
    store
        .store_property(name)
        .await
        .unwrap_or_else(|e| panic!("store_property({name:?}) failed: {e}"))
}

async fn set(store: &dyn AgentMemory, name: &str, expected: Option<&str>, value: &str) -> bool {
    store
        .set_store_property(&PropertyChange::replace(name, expected, value))
        .await
        .unwrap_or_else(|e| panic!("set_store_property({name:?}, {expected:?}) failed: {e}"))
}

/// A property never set reads as `None`; setting one leaves the others unset.
pub async fn missing_store_property_is_none(store: &dyn AgentMemory) {
    assert_eq!(get(store, "test.missing").await, None);
    assert!(set(store, "test.one", None, "1").await);
    assert_eq!(get(store, "test.missing").await, None);
    assert_eq!(get(store, "test.one").await.as_deref(), Some("1"));
}

/// `expected: None` inserts only when the property is absent; `Some(current)` replaces it;
/// any other expectation changes nothing and returns `false`.
pub async fn store_property_is_compare_and_set(store: &dyn AgentMemory) {
    let name = "test.cas";
    assert!(set(store, name, None, "first").await, "insert when absent");
    assert!(
        !set(store, name, None, "again").await,
        "insert when present"
    );
    assert_eq!(get(store, name).await.as_deref(), Some("first"));
    assert!(
        !set(store, name, Some("other"), "x").await,
        "stale expectation"
    );
    assert_eq!(get(store, name).await.as_deref(), Some("first"));
    assert!(set(store, name, Some("first"), "second").await, "swap");
    assert_eq!(get(store, name).await.as_deref(), Some("second"));
    // Values are kept exactly, the longest one allowed included.
    let long = format!("{}é", "v".repeat(MAX_PROPERTY_VALUE_BYTES - 2));
    assert!(set(store, name, Some("second"), &long).await);
    assert_eq!(get(store, name).await.as_deref(), Some(long.as_str()));
    assert!(
        set(store, name, Some(&long), "").await,
        "an empty value is a value"
    );
    assert_eq!(get(store, name).await.as_deref(), Some(""));
    assert!(
        !set(store, name, None, "x").await,
        "an empty value is still set"
    );
}

/// Names outside the rule, and values too long or holding NUL, are `InvalidInput` and
/// change nothing.
pub async fn invalid_store_properties_are_refused(store: &dyn AgentMemory) {
    let long_name = format!("a{}", "b".repeat(MAX_PROPERTY_NAME_BYTES));
    for name in ["", "1abc", "has space", "../x", "ünï", long_name.as_str()] {
        assert_kind(
            store.store_property(name).await,
            ErrorKind::InvalidInput,
            &format!("store_property({name:?})"),
        );
        assert_kind(
            store
                .set_store_property(&PropertyChange::insert(name, "v"))
                .await,
            ErrorKind::InvalidInput,
            &format!("set_store_property({name:?})"),
        );
    }
    let too_long = "v".repeat(MAX_PROPERTY_VALUE_BYTES + 1);
    for value in [too_long.as_str(), "nul\0inside"] {
        assert_kind(
            store
                .set_store_property(&PropertyChange::insert("test.value", value))
                .await,
            ErrorKind::InvalidInput,
            "set_store_property with a bad value",
        );
    }
    assert_eq!(get(store, "test.value").await, None);
}

/// Of racing inserts of one property, exactly one wins, and its value is the one kept; of
/// racing swaps from one value, exactly one wins too.
pub async fn racing_store_property_inserts_have_one_winner(store: &dyn AgentMemory) {
    const RACERS: usize = 8;
    let name = "test.race";
    let values: Vec<String> = (0..RACERS).map(|i| format!("racer-{i}")).collect();
    let won =
        futures_util::future::join_all(values.iter().map(|v| set(store, name, None, v))).await;
    let winners: Vec<&String> = values
        .iter()
        .zip(&won)
        .filter(|(_, w)| **w)
        .map(|(v, _)| v)
        .collect();
    assert_eq!(
        winners.len(),
        1,
        "racing inserts: exactly one wins, got {winners:?}"
    );
    assert_eq!(get(store, name).await.as_ref(), Some(winners[0]));
    let current = winners[0].clone();
    let next: Vec<String> = values.iter().map(|v| format!("{v}-2")).collect();
    let won =
        futures_util::future::join_all(next.iter().map(|v| set(store, name, Some(&current), v)))
            .await;
    assert_eq!(
        won.iter().filter(|w| **w).count(),
        1,
        "racing swaps: exactly one wins"
    );
}
