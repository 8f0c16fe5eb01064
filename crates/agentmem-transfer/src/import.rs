//! Writing a document (sessions and memory items, as read from files) into a store, checked
//! against the store first so that a conflict writes nothing.

use agentmem_core::{AgentMemory, Error, MemoryFilter, MemoryItem, Result};
use agentmem_formats::ExportDocument;
use serde::Serialize;

use crate::{sync_session, SyncOptions};

/// What an import wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ImportReport {
    /// Sessions in the document.
    pub sessions: u64,
    /// Sessions created in the store.
    pub sessions_created: u64,
    /// Messages written (archived ones included).
    pub messages_written: u64,
    /// Archives created.
    pub archives_written: u64,
    /// Memory items in the document.
    pub memories: u64,
    /// Memory items written (those the store did not hold yet).
    pub memories_written: u64,
}

/// Imports `doc` into `store`: checks every session and memory item against the store, then
/// writes the sessions one by one ([`sync_session`]: a new session in one write per archive)
/// and the memory items the store does not hold yet.
///
/// An import adds, never overwrites: a session that diverges from the store's copy, a memory
/// item whose id the store holds with other content, or one that would replace another item
/// stored under the same scope, kind and key, is a
/// [`Conflict`](agentmem_core::ErrorKind::Conflict), and then nothing is written. What the
/// store holds already (same ids, same content) is skipped, so importing twice adds nothing.
pub async fn import_document(
    store: &dyn AgentMemory,
    doc: &ExportDocument,
) -> Result<ImportReport> {
    let plan = SyncOptions {
        dry_run: true,
        ..SyncOptions::default()
    };
    for session in &doc.sessions {
        sync_session(store, session, plan).await?;
    }
    // One listing of the store's items answers every item's check.
    let stored = if doc.memories.is_empty() {
        Vec::new()
    } else {
        store.list_memories(&MemoryFilter::default()).await?
    };
    let mut new_items = Vec::new();
    for item in &doc.memories {
        if memory_import_plan(&stored, item)? {
            new_items.push(item);
        }
    }

    let mut report = ImportReport::default();
    for session in &doc.sessions {
        let written = sync_session(store, session, SyncOptions::default()).await?;
        report.sessions += 1;
        report.sessions_created += u64::from(written.created);
        report.messages_written += written.messages_written;
        report.archives_written += written.archives_written;
    }
    report.memories = doc.memories.len() as u64;
    for item in new_items {
        store.put_memory(item).await?;
        report.memories_written += 1;
    }
    Ok(report)
}

/// What importing `item` would do to a store holding `stored`: `Ok(true)` to write it,
/// `Ok(false)` when the store holds it already (same id, same content), and `Conflict` when
/// the store holds something else under its id, or another item under its scope, kind and key
/// (which the import would replace).
fn memory_import_plan(stored: &[MemoryItem], item: &MemoryItem) -> Result<bool> {
    if let Some(existing) = stored.iter().find(|m| m.id == item.id) {
        if existing == item {
            return Ok(false);
        }
        return Err(Error::conflict(format!(
            "memory item `{}` differs from the one in the store; nothing was imported",
            item.id
        )));
    }
    if let Some(key) = &item.key {
        let same_key = stored.iter().find(|m| item.shares_key_with(m));
        if let Some(other) = same_key {
            return Err(Error::conflict(format!(
                "memory item `{}` would replace `{}`, stored under the same scope ({}), kind and \
                 key `{key}`; nothing was imported",
                item.id, other.id, item.scope
            )));
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentmem_core::{ErrorKind, InMemoryStore, MemoryKind, MemoryStore, Message, SessionStore};
    use agentmem_formats::SessionExport;

    /// A fact stored under the key `sky`.
    fn keyed(text: &str) -> MemoryItem {
        MemoryItem {
            key: Some("sky".into()),
            ..MemoryItem::new(MemoryKind::Fact, text)
        }
    }

    fn document() -> ExportDocument {
        let mut session = SessionExport::new("s".parse().unwrap());
        session.messages = vec![Message::user("hello"), Message::assistant("hi")];
        let mut doc = ExportDocument::new();
        doc.sessions.push(session);
        doc.memories.push(keyed("the sky is blue"));
        doc
    }

    #[tokio::test]
    async fn imports_once_and_a_second_import_adds_nothing() {
        let store = InMemoryStore::new();
        let doc = document();
        let first = import_document(&store, &doc).await.unwrap();
        let expected = ImportReport {
            sessions: 1,
            sessions_created: 1,
            messages_written: 2,
            archives_written: 0,
            memories: 1,
            memories_written: 1,
        };
        assert_eq!(first, expected);
        let second = import_document(&store, &doc).await.unwrap();
        assert_eq!((second.sessions_created, second.messages_written), (0, 0));
        assert_eq!(second.memories_written, 0);
        assert_eq!(
            store
                .load(&"s".parse().unwrap(), None)
                .await
                .unwrap()
                .unwrap()
                .messages
                .len(),
            2
        );
    }

    /// The `agentmem import --json` summary is this report: its keys are part of the CLI's output.
    #[test]
    fn the_report_serializes_with_stable_keys() {
        let json = serde_json::to_string(&ImportReport::default()).unwrap();
        assert_eq!(
            json,
            r#"{"sessions":0,"sessions_created":0,"messages_written":0,"archives_written":0,"memories":0,"memories_written":0}"#
        );
    }

    #[tokio::test]
    async fn a_conflicting_memory_item_writes_nothing() {
        let store = InMemoryStore::new();
        let stored = store.put_memory(&keyed("the sky is grey")).await.unwrap();
        let err = import_document(&store, &document()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Conflict);
        assert!(err.message().contains("would replace"), "{}", err.message());
        assert!(store
            .load(&"s".parse().unwrap(), None)
            .await
            .unwrap()
            .is_none());
        let items = store.list_memories(&MemoryFilter::default()).await.unwrap();
        assert_eq!(items, [stored]);
    }

    #[test]
    fn an_item_held_with_other_content_is_a_conflict() {
        let item = MemoryItem::new(MemoryKind::Fact, "a");
        assert!(memory_import_plan(&[], &item).unwrap());
        assert!(!memory_import_plan(std::slice::from_ref(&item), &item).unwrap());
        let mut changed = item.clone();
        changed.text = "b".into();
        let err = memory_import_plan(&[changed], &item).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Conflict);
    }
}
