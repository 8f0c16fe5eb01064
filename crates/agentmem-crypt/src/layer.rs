//! [`EncryptLayer`] and the store it makes, [`Encrypted`].

use std::future::Future;
use std::sync::Arc;

use agentmem_core::layer::{check_messages, check_session_metadata};
use agentmem_core::support::{
    fork_end, fork_target_exists, memory_search_limit, rank_memories, rank_messages, search_terms,
};
use agentmem_core::{AgentMemoryExt, ScopeFilter, SessionLabels};

use crate::cipher::{
    aad, envelope_len, is_envelope, max_plaintext, open_string, presence, CryptoError, Domain,
    Keyring, Sealer, METADATA_KEY,
};
use crate::clear::store_types::*;
use crate::ids::{candidate_ids, real_id, stored_id};
use crate::items::{older_tokens, open_items, open_one_item, seal_item};
use crate::key::MasterKey;
use crate::marker::{read_marker, Access, MarkerCache, StoreMarker, MARKER_PROPERTY};

/// The most bytes a tool call id or tool name may have after encryption: what
/// [`Message::validate`] allows.
const MAX_TOOL_FIELD_BYTES: usize = 256;

/// The longest tool call id or tool name (in bytes) the layer can store: its envelope must fit
/// in the 256 bytes a store keeps.
pub const MAX_ENCRYPTED_TOOL_FIELD_BYTES: usize = max_plaintext(MAX_TOOL_FIELD_BYTES);

/// The layer that encrypts what a store keeps (see the crate documentation for what is
/// encrypted and how). Wrap any store: `store.with_layer(EncryptLayer::new(&key))`.
#[derive(Debug, Clone)]
pub struct EncryptLayer {
    keys: Keyring,
}

impl EncryptLayer {
    /// Encrypts with `key` and reads what it encrypted.
    pub fn new(key: &MasterKey) -> Self {
        EncryptLayer {
            keys: Keyring::new(key),
        }
    }

    /// Encrypts and reads with the keys of `keys`.
    pub fn with_keyring(keys: Keyring) -> Self {
        EncryptLayer { keys }
    }
    /// Also reads records encrypted with `old` (a rotated-away key), still writing with the
    /// first key: for reading a store while a [`rekey`](crate::rekey) is under way or was
    /// interrupted.
    pub fn with_read_key(mut self, old: &MasterKey) -> Self {
        self.keys = self.keys.with_read_key(old);
        self
    }
}

impl<S: AgentMemory> Layer<S> for EncryptLayer {
    type Store = Encrypted<S>;
    fn layer(&self, inner: S) -> Encrypted<S> {
        Encrypted {
            inner,
            keys: self.keys.clone(),
            marker: Arc::default(),
        }
    }
}

/// A store wearing [`EncryptLayer`]: it encrypts on the way in, decrypts on the way out, and
/// searches in the client. Dereferences to the store inside it (whose methods see
/// ciphertext).
#[derive(Debug, Clone)]
pub struct Encrypted<S> {
    /// The store inside, which sees ciphertext (the checkpoint half in `checkpoints.rs` uses
    /// it too).
    pub(crate) inner: S,
    /// The keys it seals with (the first) and opens with.
    pub(crate) keys: Keyring,
    /// What the store's encryption marker was found to be, shared by clones.
    marker: Arc<MarkerCache>,
}

agentmem_core::holds_inner_store!(Encrypted);

impl<S> Encrypted<S> {
    /// The keys this layer holds.
    pub fn keyring(&self) -> &Keyring {
        &self.keys
    }
}

// ---- messages ----------------------------------------------------------------------------

fn message_aad(session: &SessionId, m: &Message, field: &str, extra: &[u8]) -> Vec<u8> {
    aad(&[
        b"message",
        session.as_str().as_bytes(),
        m.id.as_str().as_bytes(),
        m.role.as_str().as_bytes(),
        field.as_bytes(),
        extra,
    ])
}

/// A tool call id is bound to its session and field only: a call and its result must encrypt
/// it to the same envelope. Its message is bound to it instead (see [`content_aad`]).
fn tool_call_id_aad(session: &SessionId) -> Vec<u8> {
    aad(&[b"message", session.as_str().as_bytes(), b"tool_call_id"])
}

/// Which form of a message content's AAD to build.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ContentAad {
    /// What the layer writes: the content of a message with a tool call id is bound to that
    /// id as well, so a sealed id moved to, or swapped with, another message of the session
    /// fails to open (the id's own envelope cannot name its message, see
    /// [`tool_call_id_aad`]). A message without one has the same AAD in both forms.
    Current,
    /// What the layer wrote before tool call ids were bound: presence only. Read, never
    /// written; a record made in one form never opens in the other (the parts differ).
    Legacy,
}

fn content_aad(session: &SessionId, m: &Message, form: ContentAad) -> Vec<u8> {
    let presence = message_presence(m);
    match (&m.tool_call_id, form) {
        (Some(call), ContentAad::Current) => aad(&[
            b"message",
            session.as_str().as_bytes(),
            m.id.as_str().as_bytes(),
            m.role.as_str().as_bytes(),
            b"content",
            &presence,
            b"tool_call_id",
            call.as_bytes(),
        ]),
        _ => message_aad(session, m, "content", &presence),
    }
}

fn message_presence(m: &Message) -> [u8; 1] {
    presence(&[
        !m.metadata.is_empty(),
        m.tool_name.is_some(),
        m.tool_call_id.is_some(),
    ])
}

fn seal_tool_field(
    sealer: &mut Sealer<'_>, what: &str, value: &str, aad: &[u8], deterministic: bool,
) -> Result<String> {
    if envelope_len(value.len()) > MAX_TOOL_FIELD_BYTES {
        return Err(Error::invalid_input(format!(
            "{what} is {} bytes; encrypted, it may be at most {MAX_ENCRYPTED_TOOL_FIELD_BYTES} bytes",
            value.len()
        )));
    }
    if deterministic {
        sealer.seal_deterministic(value.as_bytes(), aad)
    } else {
        sealer.seal(value.as_bytes(), aad)
    }
}

pub(crate) fn seal_metadata(
    sealer: &mut Sealer<'_>, metadata: &Metadata, aad: &[u8],
) -> Result<Metadata> {
    let mut out = Metadata::new();
    if metadata.is_empty() {
        return Ok(out);
    }
    let json = zeroize::Zeroizing::new(serde_json::to_vec(metadata)?);
    out.insert(METADATA_KEY.to_owned(), sealer.seal(&json, aad)?.into());
    Ok(out)
}

pub(crate) fn open_metadata(
    sealer: &mut Sealer<'_>, metadata: Metadata, aad: &[u8],
) -> std::result::Result<Metadata, CryptoError> {
    if metadata.is_empty() {
        return Ok(metadata);
    }
    let envelope = match (metadata.len(), metadata.get(METADATA_KEY)) {
        (1, Some(serde_json::Value::String(envelope))) => envelope,
        _ if sealer.accepts_plaintext() => return Ok(metadata),
        _ => return Err(CryptoError::NotEncrypted),
    };
    let json = zeroize::Zeroizing::new(sealer.open(envelope, aad)?);
    serde_json::from_slice(&json).map_err(|_| CryptoError::Malformed)
}

fn seal_message(sealer: &mut Sealer<'_>, session: &SessionId, m: &Message) -> Result<Message> {
    let content_aad = content_aad(session, m, ContentAad::Current);
    let tool_call_id = match &m.tool_call_id {
        Some(id) => Some(seal_tool_field(
            sealer,
            "the tool call id",
            id,
            &tool_call_id_aad(session),
            true,
        )?),
        None => None,
    };
    let tool_name = match &m.tool_name {
        Some(name) => Some(seal_tool_field(
            sealer,
            "the tool name",
            name,
            &message_aad(session, m, "tool_name", &[]),
            false,
        )?),
        None => None,
    };
    Ok(Message {
        id: m.id.clone(),
        role: m.role.clone(),
        content: sealer.seal(m.content.as_bytes(), &content_aad)?,
        timestamp: m.timestamp,
        tool_call_id,
        tool_name,
        metadata: seal_metadata(
            sealer,
            &m.metadata,
            &message_aad(session, m, "metadata", &[]),
        )?,
    })
}

fn open_message(sealer: &mut Sealer<'_>, session: &SessionId, m: Message) -> Result<Message> {
    let Message {
        id,
        role,
        content,
        timestamp,
        tool_call_id,
        tool_name,
        metadata,
    } = m;
    let mut out = Message {
        id,
        role,
        content: String::new(),
        timestamp,
        tool_call_id: None,
        tool_name: None,
        metadata: Metadata::new(),
    };
    let opened = (|| {
        out.metadata = open_metadata(
            sealer,
            metadata,
            &message_aad(session, &out, "metadata", &[]),
        )?;
        if let Some(name) = tool_name {
            let aad = message_aad(session, &out, "tool_name", &[]);
            out.tool_name = Some(open_string(sealer, name, &aad)?);
        }
        if let Some(call) = tool_call_id {
            out.tool_call_id = Some(open_string(sealer, call, &tool_call_id_aad(session))?);
        }
        out.content = if sealer.accepts_plaintext() && !is_envelope(&content) {
            content
        } else {
            let current = content_aad(session, &out, ContentAad::Current);
            let bytes = match sealer.open(&content, &current) {
                // Written before tool call ids were bound to their message: the legacy AAD.
                Err(CryptoError::Tampered) if out.tool_call_id.is_some() => {
                    sealer.open(&content, &content_aad(session, &out, ContentAad::Legacy))?
                }
                opened => opened?,
            };
            String::from_utf8(bytes).map_err(|_| CryptoError::Malformed)?
        };
        Ok::<(), CryptoError>(())
    })();
    opened.map_err(|e| e.at(format!("message `{}` of session `{session}`", out.id)))?;
    Ok(out)
}

fn seal_messages(
    keys: &Keyring, session: &SessionId, messages: &[Message],
) -> Result<Vec<Message>> {
    check_messages(messages)?;
    let mut sealer = Sealer::new(keys, Domain::Session(session));
    messages
        .iter()
        .map(|m| seal_message(&mut sealer, session, m))
        .collect()
}

fn open_messages(
    keys: &Keyring, session: &SessionId, messages: Vec<Message>,
) -> Result<Vec<Message>> {
    let mut sealer = Sealer::new(keys, Domain::Session(session));
    messages
        .into_iter()
        .map(|m| open_message(&mut sealer, session, m))
        .collect()
}

fn session_metadata_aad(session: &SessionId) -> Vec<u8> {
    aad(&[b"session", session.as_str().as_bytes(), b"metadata"])
}

fn open_session(keys: &Keyring, session: Session) -> Result<Session> {
    let mut sealer = Sealer::new(keys, Domain::Session(&session.id));
    let metadata = open_metadata(
        &mut sealer,
        session.metadata,
        &session_metadata_aad(&session.id),
    )
    .map_err(|e| e.at(format!("the metadata of session `{}`", session.id)))?;
    let messages = session
        .messages
        .into_iter()
        .map(|m| open_message(&mut sealer, &session.id, m))
        .collect::<Result<Vec<_>>>()?;
    Ok(Session {
        messages,
        metadata,
        ..session
    })
}

// ---- the store ---------------------------------------------------------------------------

impl<S: AgentMemory> Encrypted<S> {
    /// Checks the store's encryption marker before `op` (see `marker.rs`): a store marked
    /// with a key this layer does not hold is refused (`InvalidInput`, [`CryptoError::WrongKey`])
    /// before anything is read or written. Listing ids and labels, and deleting, are not
    /// checked (as without a key: see [`NoKeyLayer`](crate::NoKeyLayer)).
    ///
    /// The first write of ciphertext marks an unmarked store with the write key
    /// (insert-if-absent: of racing writers one marks it, the others check their keys
    /// against its marker). A layer that writes with a key other than the marked one (during
    /// a rotation, holding the marked key as a read key) first marks the store as being
    /// rewritten from the marked key to its own, so that neither key alone claims the store.
    ///
    /// The marker is read once per store handle: once the layer's keys passed it and its
    /// first write marked it, nothing more is read (a mark is never removed). An unmarked
    /// store is read again only before a write of ciphertext, until that write marks it.
    async fn check_store(&self, op: Operation) -> Result<()> {
        let access = Access::of(op);
        let done = match access {
            Access::Property | Access::Listing | Access::Delete => true,
            Access::WriteCiphertext => self.marker.marked() == Some(self.keys.write_key()),
            _ => self.marker.marked().is_some() || self.marker.seen_unmarked(),
        };
        if done {
            return Ok(());
        }
        let mut found = read_marker(&self.inner).await?;
        if access == Access::WriteCiphertext {
            let ours = match &found {
                None => Some(StoreMarker::of(&self.keys)?),
                Some((_, marker)) if marker.key.key != self.keys.write_key() => {
                    marker.accept(&self.keys, op)?;
                    Some(StoreMarker::rewriting_from(&self.keys, marker.key.clone())?)
                }
                Some(_) => None,
            };
            if let Some(ours) = ours {
                let expected = found.as_ref().map(|(text, _)| text.as_str());
                let value = ours.to_json()?;
                if self
                    .inner
                    .set_store_property(&PropertyChange::replace(MARKER_PROPERTY, expected, &value))
                    .await?
                {
                    self.marker.seen(Some(&ours));
                    return Ok(());
                }
                // Another writer changed it first: check these keys against its marker.
                found = read_marker(&self.inner).await?;
            }
        }
        let found = found.map(|(_, marker)| marker);
        if let Some(marker) = &found {
            marker.accept(&self.keys, op)?;
        }
        self.marker.seen(found.as_ref());
        Ok(())
    }

    /// Runs `work` after [`check_store`](Self::check_store), labelling an error that has no
    /// operation yet (one raised here rather than by the store inside) with `op` and the
    /// backend.
    pub(crate) async fn run<T>(
        &self, op: Operation, work: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        let checked_work = async {
            self.check_store(op).await?;
            work.await
        };
        checked_work.await.map_err(|e| {
            if e.operation().is_none() {
                e.with_operation(op).with_backend(self.inner.backend().name)
            } else {
                e
            }
        })
    }
}

// Every operation is handled here or in the macro's list of those that pass through, none
// forwarded by default: an operation added to the store must be looked at for what it could
// write or show in the clear.
layered_store_passing_the_clear! {
    Encrypted;

    /// The inner store's, except `indexed_search`: searches decrypt and rank in the client.
    fn capabilities(&self) -> Capabilities {
        let mut capabilities = self.inner.capabilities();
        capabilities.indexed_search = false;
        capabilities
    }

    async fn save_session(
        &self, id: &SessionId, history: &[Message], meta: &Metadata,
    ) -> Result<()> {
        self.run(Operation::SaveSession, async {
            // Sealed, metadata nested deeper than the limit could not be parsed back.
            check_session_metadata(meta)?;
            let sealed = seal_messages(&self.keys, id, history)?;
            let mut sealer = Sealer::new(&self.keys, Domain::Session(id));
            let meta = seal_metadata(&mut sealer, meta, &session_metadata_aad(id))?;
            self.inner.save_session(id, &sealed, &meta).await
        })
        .await
    }

    async fn append(&self, session: &SessionId, messages: &[Message]) -> Result<()> {
        self.run(Operation::Append, async {
            let sealed = seal_messages(&self.keys, session, messages)?;
            self.inner.append(session, &sealed).await
        })
        .await
    }

    async fn load(&self, session: &SessionId, limit: Option<usize>) -> Result<Option<Session>> {
        self.run(Operation::Load, async {
            match self.inner.load(session, limit).await? {
                Some(stored) => open_session(&self.keys, stored).map(Some),
                None => Ok(None),
            }
        })
        .await
    }

    async fn compact(&self, session: &SessionId, replacement: &[Message]) -> Result<ArchiveInfo> {
        self.run(Operation::Compact, async {
            let sealed = seal_messages(&self.keys, session, replacement)?;
            self.inner.compact(session, &sealed).await
        })
        .await
    }

    async fn load_archive(&self, session: &SessionId, archive: &ArchiveId) -> Result<Archive> {
        self.run(Operation::LoadArchive, async {
            let stored = self.inner.load_archive(session, archive).await?;
            Ok(Archive {
                messages: open_messages(&self.keys, &stored.info.session, stored.messages)?,
                info: stored.info,
            })
        })
        .await
    }

    /// Loads every session in scope, decrypts it and ranks in the client with core's BM25
    /// (the store's own index holds only ciphertext): the cost grows with every message
    /// stored, not with the hits.
    async fn search_messages(&self, query: &str, scope: &MessageQuery) -> Result<Vec<MessageHit>> {
        self.run(Operation::SearchMessages, async {
            if search_terms(query, scope.limit).is_none() {
                return Ok(Vec::new());
            }
            let ids = match &scope.session {
                Some(id) => vec![id.clone()],
                None => self.inner.session_ids().await?,
            };
            let mut sessions = Vec::with_capacity(ids.len());
            for id in ids {
                if let Some(stored) = self.inner.load(&id, None).await? {
                    let messages = open_messages(&self.keys, &id, stored.messages)?;
                    sessions.push((id, messages));
                }
            }
            let candidates = sessions
                .iter()
                .flat_map(|(id, messages)| messages.iter().map(move |m| (id, m)));
            Ok(rank_messages(query, candidates, scope.limit))
        })
        .await
    }

    /// Not one atomic step on the store: each session's messages are encrypted under a key
    /// derived from its id and bound to it, so the store's own fork (which copies ciphertext)
    /// would make a session no key opens. The layer reads and decrypts `source`, refuses an
    /// existing `target` (`Conflict`), then writes the copy re-encrypted under `target`'s key
    /// with one `save_session` and copies the labels with one `update_session`. A writer racing
    /// with it may see `target` for a moment without its labels, and a session created under
    /// `target` between the check and the write is replaced (see the crate README).
    async fn fork(
        &self, source: &SessionId, target: &SessionId, at: Option<&MessageId>,
    ) -> Result<SessionInfo> {
        self.run(Operation::Fork, async {
            if self.inner.load(target, Some(0)).await?.is_some() {
                return Err(fork_target_exists(target));
            }
            let Some(stored) = self.inner.load(source, None).await? else {
                return Err(Error::not_found(format!(
                    "session `{source}` does not exist"
                )));
            };
            let mut from = open_session(&self.keys, stored)?;
            let end = fork_end(&from.messages, source, at)?;
            from.messages.truncate(end);
            LayeredStore::save_session(self, target, &from.messages, &from.metadata).await?;
            let patch = SessionPatch::between(&SessionLabels::default(), &from.labels);
            if patch.is_empty() {
                match self.inner.load(target, Some(0)).await? {
                    Some(copy) => Ok(copy.info()),
                    None => Err(Error::not_found(format!(
                        "session `{target}` was deleted while it was being forked"
                    ))),
                }
            } else {
                self.inner.update_session(target, &patch).await
            }
        })
        .await
    }

    /// The store's own rewind (message ids are in the clear), decrypting what it removed.
    async fn rewind(&self, session: &SessionId, to: &Rewind) -> Result<Vec<Message>> {
        self.run(Operation::Rewind, async {
            let removed = self.inner.rewind(session, to).await?;
            open_messages(&self.keys, session, removed)
        })
        .await
    }

    /// Encrypts the messages under the session's key, as `compact` does for an archive.
    async fn replace_archive(
        &self, session: &SessionId, archive: &ArchiveId, messages: &[Message],
    ) -> Result<ArchiveInfo> {
        self.run(Operation::ReplaceArchive, async {
            let sealed = seal_messages(&self.keys, session, messages)?;
            self.inner.replace_archive(session, archive, &sealed).await
        })
        .await
    }

    /// As the trait's default (which this layer cannot call, having overridden it): the items
    /// matching `query` through this layer's client-side search, else the most recent 20,
    /// decrypted.
    async fn get_context(&self, query: Option<&str>) -> Result<String> {
        self.run(
            Operation::GetContext,
            agentmem_core::support::memory_context(self, query),
        )
        .await
    }

    async fn put_memory(&self, item: &MemoryItem) -> Result<MemoryItem> {
        self.run(Operation::PutMemory, async {
            let mut sealed = seal_item(&self.keys, item)?;
            // Under a read key, the same key has another stand-in, which the store's upsert by
            // key cannot match: find such an item and replace it by id instead.
            let older = older_tokens(&self.keys, item)?;
            let mut replaced = None;
            if !older.is_empty() {
                let same_place = MemoryFilter::kind(item.kind)
                    .with_scope(ScopeFilter::Exactly(item.scope.clone()));
                let listed = self.inner.list_memories(&same_place).await?;
                if !listed.iter().any(|i| i.key == sealed.key) {
                    let older_item = listed
                        .iter()
                        .find(|i| i.key.as_ref().is_some_and(|k| older.contains(k)));
                    if let Some(existing) = older_item {
                        // It keeps its id and creation time, the id now sealed under the write
                        // key (the AAD of an item with a key names the stand-in, not the id);
                        // its former form goes once this one is stored.
                        let id = real_id(&self.keys, &existing.id)
                            .map_err(|e| e.at(format!("memory item `{}`", existing.id)))?;
                        sealed.id = stored_id(&self.keys, &id)?;
                        sealed.created_at = existing.created_at;
                        replaced = Some(existing.id.clone());
                    }
                }
            }
            let stored = self.inner.put_memory(&sealed).await?;
            if let Some(former) = replaced.filter(|former| *former != stored.id) {
                self.inner.delete_memory(&former).await?;
            }
            // The same item under another form of its id (written before ids were sealed, or
            // sealed under a read key) is the one this put replaces: removed once the new
            // form is stored (one delete per form, usually one: the id as given).
            for other in candidate_ids(&self.keys, &item.id)? {
                if other != sealed.id && other != stored.id {
                    self.inner.delete_memory(&other).await?;
                }
            }
            open_one_item(&self.keys, stored)
        })
        .await
    }

    /// Looks the item up under each form of its id, the current (sealed under the write key)
    /// first: a miss costs one read per form (two with one key).
    async fn get_memory(&self, id: &MemoryId) -> Result<Option<MemoryItem>> {
        self.run(Operation::GetMemory, async {
            for stored_id in candidate_ids(&self.keys, id)? {
                if let Some(item) = self.inner.get_memory(&stored_id).await? {
                    let opened = open_one_item(&self.keys, item)?;
                    if &opened.id != id {
                        return Err(CryptoError::Tampered
                            .at(format!("memory item `{stored_id}` (looked up as `{id}`)")));
                    }
                    return Ok(Some(opened));
                }
            }
            Ok(None)
        })
        .await
    }

    /// Deletes the item under every form of its id (see
    /// [`get_memory`](agentmem_core::MemoryStore::get_memory)).
    async fn delete_memory(&self, id: &MemoryId) -> Result<bool> {
        self.run(Operation::DeleteMemory, async {
            let mut deleted = false;
            for stored_id in candidate_ids(&self.keys, id)? {
                deleted |= self.inner.delete_memory(&stored_id).await?;
            }
            Ok(deleted)
        })
        .await
    }

    async fn list_memories(&self, filter: &MemoryFilter) -> Result<Vec<MemoryItem>> {
        self.run(Operation::ListMemories, async {
            let items = self.inner.list_memories(filter).await?;
            open_items(&self.keys, items)
        })
        .await
    }

    /// Lists every item the filter passes, decrypts them and ranks in the client (see
    /// [`search_messages`](agentmem_core::SessionStore::search_messages)).
    async fn search_memories(&self, query: &str, filter: &MemoryFilter) -> Result<Vec<MemoryHit>> {
        self.run(Operation::SearchMemories, async {
            if search_terms(query, memory_search_limit(filter)).is_none() {
                return Ok(Vec::new());
            }
            let everything = MemoryFilter {
                limit: None,
                ..filter.clone()
            };
            let items = LayeredStore::list_memories(self, &everything).await?;
            Ok(rank_memories(query, &items, filter))
        })
        .await
    }

    // Checkpoints: see `checkpoints.rs` (listing threads and deleting pass through).

    async fn put_checkpoint(&self, checkpoint: &Checkpoint, blobs: &[ChannelBlob]) -> Result<()> {
        self.put_sealed_checkpoint(checkpoint, blobs).await
    }

    async fn put_writes(&self, at: &CheckpointKey, writes: &[PendingWrite]) -> Result<()> {
        self.put_sealed_writes(at, writes).await
    }

    async fn get_checkpoint(
        &self, thread: &ThreadId, ns: &CheckpointNs, id: Option<&CheckpointId>,
    ) -> Result<Option<CheckpointTuple>> {
        self.get_opened_checkpoint(thread, ns, id).await
    }

    async fn list_checkpoints(&self, query: &CheckpointQuery) -> Result<Vec<CheckpointTuple>> {
        self.list_opened_checkpoints(query).await
    }

    /// Reads, opens and re-seals under `target`'s key: not the store's own atomic copy (see
    /// the crate README).
    async fn copy_thread(&self, source: &ThreadId, target: &ThreadId) -> Result<u64> {
        self.copy_thread_resealed(source, target).await
    }

    // The knowledge graph: see `graph.rs` (every string sealed deterministically).

    async fn create_entities(&self, entities: &[Entity]) -> Result<Vec<Entity>> {
        self.create_sealed_entities(entities).await
    }

    async fn create_relations(&self, relations: &[Relation]) -> Result<Vec<Relation>> {
        self.create_sealed_relations(relations).await
    }

    async fn add_observations(
        &self, additions: &[ObservationAddition],
    ) -> Result<Vec<AddedObservations>> {
        self.add_sealed_observations(additions).await
    }

    async fn delete_entities(&self, names: &[String]) -> Result<u64> {
        self.delete_sealed_entities(names).await
    }

    async fn delete_observations(&self, deletions: &[ObservationDeletion]) -> Result<u64> {
        self.delete_sealed_observations(deletions).await
    }

    async fn delete_relations(&self, relations: &[Relation]) -> Result<u64> {
        self.delete_sealed_relations(relations).await
    }

    /// Reads the whole graph and selects in the client, except for names opened under one
    /// key (see `graph.rs`).
    async fn read_graph(&self, query: &GraphQuery) -> Result<KnowledgeGraph> {
        self.read_opened_graph(query).await
    }

    // Embedding vectors: see `vectors.rs` (sealed, under keyed hashes of their keys; clearing
    // passes through).

    async fn put_vectors(&self, vectors: &[StoredVector]) -> Result<()> {
        self.put_sealed_vectors(vectors).await
    }

    async fn get_vectors(&self, keys: &[VectorKey]) -> Result<Vec<StoredVector>> {
        self.get_opened_vectors(keys).await
    }

    async fn delete_vectors(&self, keys: &[VectorKey]) -> Result<u64> {
        self.delete_sealed_vectors(keys).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_written_before_tool_call_ids_were_bound_still_opens() {
        let keys = Keyring::for_tests(3);
        let session: SessionId = "old".parse().unwrap();
        let mut sealer = Sealer::new(&keys, Domain::Session(&session));
        let m = Message::tool_result("call_1", "lookup", "42");
        let mut old = seal_message(&mut sealer, &session, &m).unwrap();
        // As the layer sealed content before: presence only, not the tool call id.
        let legacy = content_aad(&session, &m, ContentAad::Legacy);
        assert_ne!(legacy, content_aad(&session, &m, ContentAad::Current));
        old.content = sealer.seal(m.content.as_bytes(), &legacy).unwrap();
        assert_eq!(open_message(&mut sealer, &session, old).unwrap(), m);
    }

    #[test]
    fn a_message_without_a_tool_call_id_has_one_content_aad() {
        let session: SessionId = "s".parse().unwrap();
        let m = Message::user("hello");
        assert_eq!(
            content_aad(&session, &m, ContentAad::Current),
            content_aad(&session, &m, ContentAad::Legacy)
        );
    }

    #[test]
    fn the_longest_tool_field_is_the_longest_whose_envelope_fits() {
        assert_eq!(MAX_ENCRYPTED_TOOL_FIELD_BYTES, 139);
        assert!(envelope_len(MAX_ENCRYPTED_TOOL_FIELD_BYTES) <= MAX_TOOL_FIELD_BYTES);
        assert!(envelope_len(MAX_ENCRYPTED_TOOL_FIELD_BYTES + 1) > MAX_TOOL_FIELD_BYTES);
    }
}
