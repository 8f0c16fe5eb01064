//! Reading a store out in an order that depends on its content only, so that exporting the
//! same content twice (from any backend) gives the same bytes.

use std::io::Write;

use agentmem_core::{
    AgentMemory, AgentMemoryExt, CheckpointQuery, CheckpointTuple, Error, MemoryFilter, MemoryItem,
    Operation, Result, SessionId, ThreadId,
};
use agentmem_formats::{canonical_checkpoint, canonical_map, jsonl, ExportDocument, SessionExport};

use crate::{export_graph, read_session};

/// Every session's id, in byte order (stores order by id too, but a database collation may
/// not be byte order, and exports must not depend on the store): core's
/// [`AgentMemoryExt::session_ids`], which sorts them in the client.
pub async fn session_ids(store: &dyn AgentMemory) -> Result<Vec<SessionId>> {
    store.session_ids().await
}

/// Every memory item, oldest first, ties broken by id, metadata keys sorted.
pub async fn all_memories(store: &dyn AgentMemory) -> Result<Vec<MemoryItem>> {
    let mut items = store.list_memories(&MemoryFilter::default()).await?;
    items.sort_by(|a, b| {
        a.created_at
            .cmp(&b.created_at)
            .then_with(|| a.id.cmp(&b.id))
    });
    for item in &mut items {
        canonical_map(&mut item.metadata);
    }
    Ok(items)
}

/// One whole session ([`read_session`]); a missing session is
/// [`NotFound`](agentmem_core::ErrorKind::NotFound).
pub async fn export_session(store: &dyn AgentMemory, id: &SessionId) -> Result<SessionExport> {
    read_session(store, id)
        .await?
        .ok_or_else(|| Error::not_found(format!("session {:?} does not exist", id.as_str())))
}

/// Every thread holding a checkpoint, in byte order; none when the store keeps no checkpoints,
/// so such a store exports as it did before checkpoints existed
/// ([`AgentMemoryExt::thread_ids`]).
pub async fn thread_ids(store: &dyn AgentMemory) -> Result<Vec<ThreadId>> {
    store.thread_ids().await
}

/// Every checkpoint of `thread`, in every namespace, with the channel values it reads and its
/// pending writes: ordered by namespace then id (byte order), each canonical
/// ([`canonical_checkpoint`]). Empty when the thread holds none.
pub async fn export_thread(
    store: &dyn AgentMemory, thread: &ThreadId,
) -> Result<Vec<CheckpointTuple>> {
    let query = CheckpointQuery::thread(thread.clone());
    let mut tuples = store.list_checkpoints(&query).await?;
    tuples.sort_by(|a, b| a.checkpoint.key.cmp(&b.checkpoint.key));
    tuples.iter_mut().for_each(canonical_checkpoint);
    Ok(tuples)
}

/// Every session (by id, [`session_ids`]), every memory item ([`all_memories`]), every
/// checkpoint (by thread, [`thread_ids`] and [`export_thread`]) and the knowledge graph
/// ([`export_graph`]) as one document, whole in memory; [`write_jsonl`] streams instead.
pub async fn export_document(store: &dyn AgentMemory) -> Result<ExportDocument> {
    let mut doc = ExportDocument::new();
    for id in session_ids(store).await? {
        doc.sessions.push(export_session(store, &id).await?);
    }
    doc.memories = all_memories(store).await?;
    for thread in thread_ids(store).await? {
        doc.checkpoints.extend(export_thread(store, &thread).await?);
    }
    doc.graph = export_graph(store).await?;
    Ok(doc)
}

/// What an export holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportCounts {
    /// Sessions.
    pub sessions: u64,
    /// Messages, archived ones included.
    pub messages: u64,
    /// Memory items.
    pub memories: u64,
    /// Checkpoints (each with its channel values and pending writes).
    pub checkpoints: u64,
    /// Entities of the knowledge graph.
    pub entities: u64,
    /// Relations of the knowledge graph.
    pub relations: u64,
}

/// Writes everything `store` holds to `out` as agentmem JSON lines (the content of
/// [`export_document`], in the same order), one session (and one checkpoint thread) at a time,
/// so a large store is never whole in memory (the knowledge graph, last, is read whole). `out`
/// is flushed at the end.
pub async fn write_jsonl<W: Write>(store: &dyn AgentMemory, out: &mut W) -> Result<ExportCounts> {
    let mut counts = ExportCounts::default();
    jsonl::write_header(out)?;
    for id in session_ids(store).await? {
        let session = export_session(store, &id).await?;
        counts.sessions += 1;
        counts.messages += session.total_messages();
        jsonl::write_session(out, &session)?;
    }
    for item in all_memories(store).await? {
        counts.memories += 1;
        jsonl::write_memory(out, &item)?;
    }
    for thread in thread_ids(store).await? {
        for tuple in export_thread(store, &thread).await? {
            counts.checkpoints += 1;
            jsonl::write_checkpoint(out, &tuple)?;
        }
    }
    let graph = export_graph(store).await?;
    counts.entities = graph.entities.len() as u64;
    counts.relations = graph.relations.len() as u64;
    jsonl::write_graph(out, &graph)?;
    out.flush()
        .map_err(|e| Error::from(e).with_operation(Operation::Export))?;
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentmem_core::{ErrorKind, InMemoryStore, MemoryKind, MemoryStore, Message, SessionStore};

    #[tokio::test]
    async fn jsonl_holds_the_document_in_byte_order() {
        let store = InMemoryStore::new();
        for id in ["b", "B", "a"] {
            let id: SessionId = id.parse().unwrap();
            store
                .append(&id, &[Message::user(format!("in {id}"))])
                .await
                .unwrap();
        }
        store
            .put_memory(&MemoryItem::new(MemoryKind::Fact, "the sky is blue"))
            .await
            .unwrap();

        let doc = export_document(&store).await.unwrap();
        let ids: Vec<&str> = doc.sessions.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["B", "a", "b"]);
        assert_eq!(doc.memories.len(), 1);

        let mut out = Vec::new();
        let counts = write_jsonl(&store, &mut out).await.unwrap();
        let expected = ExportCounts {
            sessions: 3,
            messages: 3,
            memories: 1,
            checkpoints: 0,
            entities: 0,
            relations: 0,
        };
        assert_eq!(counts, expected);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            jsonl::to_string(&doc).unwrap()
        );
    }

    #[tokio::test]
    async fn a_missing_session_is_not_found() {
        let store = InMemoryStore::new();
        let err = export_session(&store, &"nope".parse().unwrap())
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotFound);
        assert_eq!(err.message(), "session \"nope\" does not exist");
    }
}
