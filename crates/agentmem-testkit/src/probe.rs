//! The store calls backends' own integration tests repeat to set a store up and look into it:
//! each must succeed, and panics naming the call when the store returns an error (a failed
//! call is a failed test).

use agentmem_core::{
    ErrorKind, MemoryFilter, MemoryHit, MemoryItem, MemoryKind, MemoryStore, MessageHit,
    MessageQuery, SessionStore,
};

/// The live messages matching `text` in every session (the default query), best first.
pub async fn message_hits<S: SessionStore + ?Sized>(store: &S, text: &str) -> Vec<MessageHit> {
    store
        .search_messages(text, &MessageQuery::default())
        .await
        .unwrap_or_else(|e| panic!("search_messages({text:?}) failed: {e}"))
}

/// The memory items matching `text` in every scope and kind (no filter), best first.
pub async fn memory_hits<S: MemoryStore + ?Sized>(store: &S, text: &str) -> Vec<MemoryHit> {
    store
        .search_memories(text, &MemoryFilter::default())
        .await
        .unwrap_or_else(|e| panic!("search_memories({text:?}) failed: {e}"))
}

/// Puts a new memory item for each `(kind, text)` of `items`, in order, returning them as
/// stored.
pub async fn put_memories<S: MemoryStore + ?Sized>(
    store: &S, items: &[(MemoryKind, &str)],
) -> Vec<MemoryItem> {
    let mut stored = Vec::with_capacity(items.len());
    for &(kind, text) in items {
        let item = MemoryItem::new(kind, text);
        stored.push(
            store
                .put_memory(&item)
                .await
                .unwrap_or_else(|e| panic!("put_memory({kind:?}, {text:?}) failed: {e}")),
        );
    }
    stored
}

/// Checks that `parse` (a backend's URL parser) refuses each of `urls` with `InvalidInput`
/// whose message says `says`, and that neither the message nor the error's `Debug` shows
/// `secret` (the password the URLs hold).
pub fn assert_urls_refused<T>(
    parse: impl Fn(&str) -> agentmem_core::Result<T>, urls: &[&str], says: &str, secret: &str,
) {
    for url in urls {
        let Err(err) = parse(url) else {
            panic!("{url:?} was accepted")
        };
        let (shown, debug) = (err.to_string(), format!("{err:?}"));
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{url}: {shown}");
        assert!(shown.contains(says), "{url}: {shown} should say {says:?}");
        assert!(
            !shown.contains(secret) && !debug.contains(secret),
            "{url}: {debug} shows {secret:?}"
        );
    }
}
