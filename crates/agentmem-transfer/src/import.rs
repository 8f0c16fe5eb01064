//! Writing a document (sessions, memory items, checkpoints and the knowledge graph, as read
//! from files) into a store, checked against the store first so that a conflict writes
//! nothing.

use std::collections::{BTreeMap, HashMap};

use agentmem_core::{
    AgentMemory, CheckpointKey, CheckpointNs, CheckpointQuery, CheckpointTuple, Error,
    MemoryFilter, MemoryItem, PendingWrite, Result, ThreadId, TypedBytes,
};
use agentmem_formats::ExportDocument;
use serde::Serialize;

use crate::graph::{plan_graph, write_graph};
use crate::{sync_session, GraphReport, SyncOptions};

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
    /// Checkpoints in the document.
    pub checkpoints: u64,
    /// Checkpoints written with their channel values (those the store did not hold yet, or
    /// held without some of the channel values the document carries).
    pub checkpoints_written: u64,
    /// Pending writes written (those the store did not hold yet).
    pub writes_written: u64,
    /// What merging the knowledge graph wrote (its keys `entities`, `entities_created`,
    /// `observations_written`, `relations`, `relations_created` beside the others').
    #[serde(flatten)]
    pub graph: GraphReport,
}

/// Imports `doc` into `store`: checks the document ([`ExportDocument::validate`]) and every
/// session, memory item and checkpoint against the store, then writes the sessions one by one
/// ([`sync_session`]: a new session in one write per archive), the memory items the store does
/// not hold yet, the checkpoints (each with its channel values, then its pending writes), and
/// last merges the knowledge graph ([`import_graph`](crate::import_graph)'s rules: entities
/// of new names created, observations and relations the store lacks added).
///
/// An import adds, never overwrites: a session that diverges from the store's copy, a memory
/// item whose id the store holds with other content, one that would replace another item
/// stored under the same scope, kind and key, a checkpoint the store holds with other content
/// (or a channel value or pending write it holds with another value) is a
/// [`Conflict`](agentmem_core::ErrorKind::Conflict), and then nothing is written. What the
/// store holds already (same ids, same content) is skipped, so importing twice adds nothing.
/// The graph merges rather than conflicts: an entity the store holds keeps its type and gains
/// the observations it lacks. A document with checkpoints (or a graph) into a store that keeps
/// none is [`Unsupported`](agentmem_core::ErrorKind::Unsupported), before anything is written.
pub async fn import_document(
    store: &dyn AgentMemory, doc: &ExportDocument,
) -> Result<ImportReport> {
    if !doc.checkpoints.is_empty() && !store.capabilities().checkpoints {
        return Err(Error::unsupported(format!(
            "the document holds {} checkpoint(s) and the {} store keeps no checkpoints; \
             nothing was imported",
            doc.checkpoints.len(),
            store.backend()
        )));
    }
    doc.validate("the imported document")?;
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
    let checkpoint_steps = plan_checkpoints(store, &doc.checkpoints).await?;
    let graph = plan_graph(store, &doc.graph).await?;

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
    report.checkpoints = doc.checkpoints.len() as u64;
    for step in checkpoint_steps {
        let checkpoint = &step.tuple.checkpoint;
        if step.put {
            store.put_checkpoint(checkpoint, &step.tuple.blobs).await?;
            report.checkpoints_written += 1;
        }
        if !step.writes.is_empty() {
            store.put_writes(&checkpoint.key, &step.writes).await?;
            report.writes_written += step.writes.len() as u64;
        }
    }
    report.graph = write_graph(store, graph).await?;
    Ok(report)
}

/// What importing one checkpoint writes: the checkpoint with its blobs (`put`), then the
/// pending writes the store lacks.
#[derive(Debug)]
struct CheckpointStep<'a> {
    tuple: &'a CheckpointTuple,
    put: bool,
    writes: Vec<PendingWrite>,
}

/// Where a channel value is stored within a thread: namespace, channel, version.
type BlobAt<'a> = (&'a CheckpointNs, &'a str, &'a str);

/// Checks every checkpoint of the document against the store, one thread at a time (one
/// listing of the thread answers all its checks), and returns what to write; a conflict
/// anywhere is an error before anything is written.
async fn plan_checkpoints<'a>(
    store: &dyn AgentMemory, tuples: &'a [CheckpointTuple],
) -> Result<Vec<CheckpointStep<'a>>> {
    let mut by_thread: BTreeMap<&ThreadId, Vec<&CheckpointTuple>> = BTreeMap::new();
    for tuple in tuples {
        by_thread
            .entry(&tuple.checkpoint.key.thread)
            .or_default()
            .push(tuple);
    }
    let mut steps = Vec::new();
    for (thread, tuples) in by_thread {
        let stored = store
            .list_checkpoints(&CheckpointQuery::thread(thread.clone()))
            .await?;
        let by_key: HashMap<&CheckpointKey, &CheckpointTuple> =
            stored.iter().map(|t| (&t.checkpoint.key, t)).collect();
        let mut values: HashMap<BlobAt<'_>, &Option<TypedBytes>> = HashMap::new();
        for t in &stored {
            for blob in &t.blobs {
                let at = (
                    &t.checkpoint.key.ns,
                    blob.channel.as_str(),
                    blob.version.as_str(),
                );
                values.insert(at, &blob.value);
            }
        }
        for tuple in tuples {
            let held = by_key.get(&tuple.checkpoint.key).copied();
            if let Some(step) = checkpoint_import_plan(tuple, held, &values)? {
                steps.push(step);
            }
        }
    }
    Ok(steps)
}

/// What importing `tuple` would do to a store holding `held` at its key and the channel values
/// `values` in its thread: `None` when the store holds it all already; `Conflict` when the
/// store holds the checkpoint with other content, one of its channel values with another value
/// (which the import would replace under the store's other checkpoints), or one of its pending
/// writes with another value.
fn checkpoint_import_plan<'a>(
    tuple: &'a CheckpointTuple, held: Option<&CheckpointTuple>,
    values: &HashMap<BlobAt<'_>, &Option<TypedBytes>>,
) -> Result<Option<CheckpointStep<'a>>> {
    let key = &tuple.checkpoint.key;
    let conflict = |why: String| {
        Error::conflict(format!(
            "checkpoint {:?} of thread {:?} (namespace {:?}): {why}; nothing was imported",
            key.id.as_str(),
            key.thread.as_str(),
            key.ns.as_str()
        ))
    };
    let mut missing_blob = false;
    for blob in &tuple.blobs {
        match values.get(&(&key.ns, blob.channel.as_str(), blob.version.as_str())) {
            Some(value) if **value != blob.value => {
                return Err(conflict(format!(
                    "the store holds the value of channel {:?} at version {:?} with other content",
                    blob.channel, blob.version
                )))
            }
            Some(_) => {}
            None => missing_blob = true,
        }
    }
    let Some(held) = held else {
        return Ok(Some(CheckpointStep {
            tuple,
            put: true,
            writes: tuple.writes.clone(),
        }));
    };
    if held.checkpoint != tuple.checkpoint {
        return Err(conflict("it differs from the one in the store".into()));
    }
    let mut writes = Vec::new();
    for write in &tuple.writes {
        let same_place = held
            .writes
            .iter()
            .find(|w| w.task_id == write.task_id && w.idx == write.idx);
        match same_place {
            Some(w) if w == write => {}
            Some(_) => {
                return Err(conflict(format!(
                    "the store holds its pending write {} of task {:?} with other content",
                    write.idx, write.task_id
                )))
            }
            None => writes.push(write.clone()),
        }
    }
    if !missing_blob && writes.is_empty() {
        return Ok(None);
    }
    Ok(Some(CheckpointStep {
        tuple,
        put: missing_blob,
        writes,
    }))
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
            checkpoints: 0,
            checkpoints_written: 0,
            writes_written: 0,
            graph: GraphReport::default(),
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
            r#"{"sessions":0,"sessions_created":0,"messages_written":0,"archives_written":0,"memories":0,"memories_written":0,"checkpoints":0,"checkpoints_written":0,"writes_written":0,"entities":0,"entities_created":0,"observations_written":0,"relations":0,"relations_created":0}"#
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
