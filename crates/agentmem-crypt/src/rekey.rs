//! Re-encrypting a whole store under a new master key: [`rekey`] and [`encrypt_existing`].

use std::sync::Arc;

use agentmem_core::layer::Layer;
use agentmem_core::{
    AgentMemory, Error, MemoryFilter, MemoryStore, Operation, PropertyChange, Result, SessionStore,
};
use serde::Serialize;

use crate::cipher::Keyring;
use crate::ids::{candidate_ids, stored_id};
use crate::key::{KeyId, MasterKey};
use crate::layer::EncryptLayer;
use crate::marker::{StoreMarker, MARKER_PROPERTY};
use crate::rekey_graph::rewrite_graph;
use crate::rekey_threads::rewrite_threads;

/// What [`rekey`] or [`encrypt_existing`] rewrote.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct RekeyReport {
    /// Sessions rewritten (messages and metadata) under the new key.
    pub sessions: u64,
    /// Messages in them.
    pub messages: u64,
    /// Memory items rewritten under the new key.
    pub memories: u64,
    /// Archives rewritten under the new key (in place, through
    /// [`SessionStore::replace_archive`](agentmem_core::SessionStore::replace_archive)).
    pub archives: u64,
    /// Checkpoint threads rewritten under the new key (all namespaces, blobs and pending
    /// writes), each moved out to a temporary thread and back (see [`rekey`]).
    pub threads: u64,
    /// Checkpoints in them.
    pub checkpoints: u64,
    /// Knowledge-graph entities rewritten under the new key (with their observations).
    pub entities: u64,
    /// Knowledge-graph relations rewritten under the new key.
    pub relations: u64,
    /// Embedding vectors dropped: they are stored under keyed hashes of their keys, which
    /// cannot be mapped back to rewrite them, so the rewrite clears them all. Re-embed with
    /// `agentmem reindex`.
    pub dropped_vectors: u64,
    /// The key everything rewritten is now encrypted with.
    pub key: Option<KeyId>,
}

/// Re-encrypts every session (its messages and metadata), every memory item, every
/// checkpoint thread and the knowledge graph of `store` from `old` to `new`, one session, item
/// and thread at a time, through the store's own `save_session`, `replace_archive`,
/// `put_memory` and, for a thread, `copy_thread` of the encryption layer (the thread is copied
/// to a temporary thread named by [`rekey_thread_id`](crate::rekey_thread_id), deleted, copied
/// back and the temporary thread deleted, the step under way recorded in
/// [`REKEY_PROPERTY`](crate::REKEY_PROPERTY)). The graph is rewritten first: each entity
/// (with its observations) and relation is created under `new` beside its old form, in the
/// order the store lists them, then the old forms are deleted (see the crate README).
/// Embedding vectors cannot be rewritten (the keys they are stored under are one-way hashes
/// made with the old key): right after the graph, before any session, item or thread, every
/// vector of the store is cleared ([`RekeyReport::dropped_vectors`]; re-embed with
/// `agentmem reindex`).
///
/// Records already under `new` are read and rewritten as well, so an interrupted rekey is
/// finished by running it again (a thread left midway is finished first: each of its
/// checkpoints is whole in it or in its temporary thread at every moment). Run it while
/// nothing else writes the store: an append that lands between a session's load and its
/// rewrite is lost, and so are pending writes made ahead of a checkpoint not stored. Archives
/// are rewritten in place (id and creation time kept). Not rewritten: expired memory items,
/// which no reader sees and a purge deletes. Each rewritten session's `updated_at` becomes the
/// time of the rekey.
///
/// ```
/// use agentmem_core::{AgentMemoryExt, ErrorKind, InMemoryStore, Message, SessionId};
/// use agentmem_crypt::{rekey, EncryptLayer, MasterKey};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let (old, new) = (MasterKey::generate()?, MasterKey::generate()?);
/// let store = std::sync::Arc::new(InMemoryStore::new());
/// let id: SessionId = "demo".parse()?;
/// store.clone().with_layer(EncryptLayer::new(&old)).append_one(&id, Message::user("hi")).await?;
/// let report = rekey(store.clone(), &old, &new).await?;
/// assert_eq!(report.sessions, 1);
/// let with_new = store.clone().with_layer(EncryptLayer::new(&new));
/// assert_eq!(with_new.messages(&id).await?[0].content, "hi");
/// let with_old = store.with_layer(EncryptLayer::new(&old));
/// assert_eq!(with_old.messages(&id).await.unwrap_err().kind(), ErrorKind::InvalidInput);
/// # Ok::<(), agentmem_core::Error>(())
/// # }).unwrap();
/// ```
pub async fn rekey<S: AgentMemory>(
    store: S, old: &MasterKey, new: &MasterKey,
) -> Result<RekeyReport> {
    rewrite(
        store,
        Keyring::new(new).with_read_key(old),
        Keyring::new(new),
        Some(&Keyring::new(old)),
    )
    .await
}

/// Encrypts a store written without the layer: every session, memory item, checkpoint
/// thread and the knowledge graph is read as plaintext (or as ciphertext under `key`, so running it again is
/// harmless) and rewritten encrypted under `key`. The same rules as [`rekey`] apply, archives
/// and the move of each thread through a temporary one included, and so do the vectors: the
/// plaintext ones (whose keys show which texts they embed) are cleared, not encrypted.
pub async fn encrypt_existing<S: AgentMemory>(store: S, key: &MasterKey) -> Result<RekeyReport> {
    let mut reading = Keyring::new(key);
    reading.accept_plaintext = true;
    rewrite(store, reading, Keyring::new(key), None).await
}

/// Reads everything through `reading` and writes it back through `writing` (the new key
/// alone: each item is rewritten by its id, so the writer need not look for items whose key
/// has a stand-in under an older key).
///
/// The store's marker says what is going on: before the first record is rewritten it
/// becomes "being rewritten to `writing`'s key from `from`'s" (refused before anything is
/// written when `reading` holds neither the marked key nor, mid-rewrite, the key rewritten
/// from), and only once everything is rewritten "encrypted with `writing`'s key". An
/// interrupted rewrite leaves the first, which names both keys, so either key still opens
/// the store and running the same rewrite again finishes it.
async fn rewrite<S: AgentMemory>(
    store: S, reading: Keyring, writing: Keyring, from: Option<&Keyring>,
) -> Result<RekeyReport> {
    let mut report = RekeyReport {
        key: Some(writing.write_key()),
        ..RekeyReport::default()
    };
    let store = Arc::new(store);
    let before = store.store_property(MARKER_PROPERTY).await?;
    if let Some(text) = &before {
        StoreMarker::parse(text)?.accept(&reading, Operation::Open)?;
    }
    let rewriting = StoreMarker::rewriting(&writing, from)?.to_json()?;
    let done = StoreMarker::of(&writing)?.to_json()?;
    set_marker(&*store, before.as_deref(), &rewriting).await?;
    let (read_keys, write_keys) = (reading.clone(), writing.clone());
    let raw = store.clone();
    let reader = EncryptLayer::with_keyring(reading).layer(store.clone());
    let writer = EncryptLayer::with_keyring(writing).layer(store);
    // First: it seals every string anew before it writes, so a graph it cannot rewrite stops
    // the rekey before any record is rewritten. `reader` writes with the new key.
    let graph = rewrite_graph(&reader).await?;
    report.entities = graph.entities;
    report.relations = graph.relations;
    report.dropped_vectors = drop_vectors(&*raw).await?;
    for info in reader.list_sessions().await? {
        // Deleted since it was listed: nothing to rewrite.
        let Some(session) = reader.load(&info.id, None).await? else {
            continue;
        };
        writer
            .save_session(&session.id, &session.messages, &session.metadata)
            .await?;
        report.sessions += 1;
        report.messages += session.messages.len() as u64;
        for info in reader.list_archives(&session.id).await? {
            let archive = reader.load_archive(&session.id, &info.id).await?;
            writer
                .replace_archive(&session.id, &info.id, &archive.messages)
                .await?;
            report.archives += 1;
        }
    }
    for item in reader.list_memories(&MemoryFilter::default()).await? {
        writer.put_memory(&item).await?;
        // The item is stored under its id sealed with the new key: the form it was read
        // under (sealed with the old key, or as given) goes.
        let current = stored_id(&write_keys, &item.id)?;
        for other in candidate_ids(&read_keys, &item.id)? {
            if other != current {
                raw.delete_memory(&other).await?;
            }
        }
        report.memories += 1;
    }
    // `reader` writes with the new key: through it a thread's copy opens what is stored and
    // seals it anew.
    let threads = rewrite_threads(&reader).await?;
    report.threads = threads.threads;
    report.checkpoints = threads.checkpoints;
    set_marker(&*writer, Some(&rewriting), &done).await?;
    Ok(report)
}

/// Clears every vector of `store` (none when it keeps no vectors): the rewrite's only way to
/// leave none sealed under the old key, or in plaintext. Done before any session, item or
/// thread is rewritten, with the marker already naming the new key: a rewrite interrupted at
/// any later point has left no vector that is not under the new key (a rerun clears those
/// too, counting them again), and the old key's vectors never stay behind. A vector is looked
/// up only under its key's hash made with a held key, so one sealed under another key is
/// never found, let alone opened with the wrong key.
async fn drop_vectors<S: AgentMemory + ?Sized>(store: &S) -> Result<u64> {
    if !store.capabilities().vectors {
        return Ok(0);
    }
    store.clear_vectors().await
}

/// Swaps the marker from `expected` to `value`; `Conflict` when another process changed it
/// meanwhile (a second rekey, or a writer marking the store), which this one must not
/// overwrite.
async fn set_marker<S: AgentMemory + ?Sized>(
    store: &S, expected: Option<&str>, value: &str,
) -> Result<()> {
    if expected == Some(value) {
        return Ok(());
    }
    if store
        .set_store_property(&PropertyChange::replace(MARKER_PROPERTY, expected, value))
        .await?
    {
        Ok(())
    } else {
        Err(Error::conflict(
            "the store's encryption marker changed while it was being rekeyed: is another \
             rekey running? Run it again when nothing else writes the store",
        ))
    }
}
