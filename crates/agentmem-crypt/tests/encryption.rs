//! What the encryption layer promises, over core's in-memory store and the file backend: no
//! plaintext in the store, the key reads it back, another key or none is refused, tampering
//! is caught, and a rekey moves everything readable to the new key.

use std::error::Error as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agentmem_core::{
    AgentMemory, AgentMemoryExt, ErrorKind, InMemoryStore, MemoryFilter, MemoryId, MemoryItem,
    MemoryKind, MemoryScope, MemoryStore, Message, MessageQuery, Metadata, Role, Session,
    SessionId, SessionStore,
};
use agentmem_crypt::{
    encrypt_existing, rekey, CryptoError, EncryptLayer, KeyId, MasterKey, NoKeyLayer,
    ENVELOPE_PREFIX, KEY_TOKEN_PREFIX, MAX_ENCRYPTED_TOOL_FIELD_BYTES, MEMORY_ID_PREFIX,
};
use agentmem_file::{FileConfig, FileStore};

/// Texts that must never appear in the store's bytes.
const SECRETS: &[&str] = &[
    "canaryContentZebra",
    "canaryMessageMetaOtter",
    "canaryToolNameHeron",
    "canaryCallIdLynx",
    "canaryArgumentsMarmot",
    "canaryResultBadger",
    "canarySessionMetaIbis",
    "canaryArchivedWalrus",
    "canarySummaryNewt",
    "canaryMemoryTextMoose",
    "canaryMemoryMetaVole",
    "canaryMemoryKeyGnu",
];

mod common;
use common::{key, sid, with_key as layered, Store};

/// Runs the scenario `$scenario` as two tests: over core's in-memory store and over files.
macro_rules! on_both_stores {
    ($scenario:ident: $in_memory:ident, $on_files:ident) => {
        #[tokio::test]
        async fn $in_memory() {
            $scenario(in_memory()).await;
        }

        #[tokio::test]
        async fn $on_files() {
            let dir = tempfile::tempdir().expect("a temp folder");
            $scenario(file_store(dir.path()).await).await;
        }
    };
}

async fn file_store(root: &Path) -> Store {
    Arc::new(
        FileStore::connect_with(FileConfig::new(root))
            .await
            .expect("open the file store"),
    )
}

fn in_memory() -> Store {
    Arc::new(InMemoryStore::new())
}

/// Core's in-memory store, and the encryption layer over it with a new key.
fn encrypted_in_memory() -> (Store, impl AgentMemory) {
    let raw = in_memory();
    let store = layered(&raw, &key());
    (raw, store)
}

fn crypto_error(err: &agentmem_core::Error) -> Option<&CryptoError> {
    err.source().and_then(|s| s.downcast_ref::<CryptoError>())
}

/// Asserts that `err` is the layer's refusal of a key other than the one that sealed the data.
fn assert_wrong_key(err: &agentmem_core::Error) {
    assert!(
        matches!(crypto_error(err), Some(CryptoError::WrongKey { .. })),
        "{err}"
    );
}

/// Loads `id` through `store`, which must hold it.
async fn load_session(store: &impl SessionStore, id: &SessionId) -> Session {
    store
        .load(id, None)
        .await
        .expect("load")
        .expect("a session")
}

/// Reads `stored` back through `store`: the same item, but for the `updated_at` a backend may
/// stamp when an item is rewritten (the file backend does).
async fn assert_item_reads_back(store: &impl MemoryStore, stored: &MemoryItem) {
    let item = store
        .get_memory(&stored.id)
        .await
        .expect("get")
        .expect("an item");
    assert_eq!(
        item,
        MemoryItem {
            updated_at: item.updated_at,
            ..stored.clone()
        }
    );
}

/// The last line of the file backend's memory log under `root`.
/// The last line of the file backend's memory log that stores an item (not a deletion).
fn last_memory_log_line(root: &Path) -> String {
    let memories = std::fs::read_to_string(root.join("memories.jsonl")).expect("the log");
    memories
        .lines()
        .rfind(|line| line.contains("\"text\""))
        .expect("a line storing an item")
        .to_owned()
}

/// The history written under each key: a message with metadata, a tool call and its result.
fn history() -> Vec<Message> {
    vec![
        Message::user("please remember canaryContentZebra")
            .with_metadata("note", serde_json::json!({"tag": "canaryMessageMetaOtter"})),
        Message::tool_call(
            "canaryCallIdLynx",
            "canaryToolNameHeron",
            r#"{"q":"canaryArgumentsMarmot"}"#,
        ),
        Message::tool_result(
            "canaryCallIdLynx",
            "canaryToolNameHeron",
            "canaryResultBadger",
        ),
    ]
}

fn item() -> MemoryItem {
    MemoryItem::new(MemoryKind::Fact, "the user likes canaryMemoryTextMoose")
        .in_scope(MemoryScope::agent("alice"))
        .with_key("likes:canaryMemoryKeyGnu")
        .with_metadata("source", "canaryMemoryMetaVole")
}

/// Writes every kind of record: an archive, a session with metadata, a memory item.
async fn write_everything(store: &impl AgentMemory) -> (SessionId, Vec<Message>, MemoryItem) {
    let id = sid("ada");
    store
        .append(&id, &[Message::user("old turn canaryArchivedWalrus")])
        .await
        .expect("append");
    store
        .compact(&id, &[Message::system("summary canarySummaryNewt")])
        .await
        .expect("compact");
    let mut meta = Metadata::new();
    meta.insert("title".into(), "canarySessionMetaIbis".into());
    let mut messages = vec![Message::system("summary canarySummaryNewt")];
    messages.extend(history());
    store
        .save_session(&id, &messages, &meta)
        .await
        .expect("save the session");
    let stored = store.put_memory(&item()).await.expect("put a memory");
    (id, messages, stored)
}

/// Every file under `root` (recursively) whose bytes contain `needle`.
fn files_containing(root: &Path, needle: &[u8]) -> Vec<PathBuf> {
    all_files(root)
        .into_iter()
        .filter(|path| {
            let bytes = std::fs::read(path).expect("read a file");
            bytes.windows(needle.len()).any(|w| w == needle)
        })
        .collect()
}

/// Every file under `root` (recursively).
fn all_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read a folder") {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}

#[tokio::test]
async fn file_store_keeps_no_plaintext_and_the_key_reads_it_back() {
    let dir = tempfile::tempdir().expect("a temp folder");
    let key = key();
    let raw = file_store(dir.path()).await;
    let (id, messages, stored) = write_everything(&layered(&raw, &key)).await;

    // The test can fail: without the layer, the same records leave their text in the files.
    let plain_dir = tempfile::tempdir().expect("a temp folder");
    write_everything(&file_store(plain_dir.path()).await).await;
    for secret in SECRETS {
        assert!(
            !files_containing(plain_dir.path(), secret.as_bytes()).is_empty(),
            "{secret} is written somewhere without the layer"
        );
    }

    let files = all_files(dir.path());
    assert!(files.len() >= 4, "the store wrote its files: {files:?}");
    for secret in SECRETS {
        let found = files_containing(dir.path(), secret.as_bytes());
        assert!(found.is_empty(), "{secret} is in plaintext in {found:?}");
    }
    // MEMORY.md is written, with ciphertext in place of every message.
    let memory_md = std::fs::read_to_string(dir.path().join("agents/ada/MEMORY.md"))
        .expect("MEMORY.md is written");
    assert_eq!(memory_md.matches(ENVELOPE_PREFIX).count(), messages.len());

    // The same key reads everything back, also after reopening the folder.
    let reopened = file_store(dir.path()).await;
    let store = layered(&reopened, &key);
    let session = load_session(&store, &id).await;
    assert_eq!(session.messages, messages);
    assert_eq!(session.metadata["title"], "canarySessionMetaIbis");
    let archives = store.list_archives(&id).await.expect("list archives");
    let archive = store
        .load_archive(&id, &archives[0].id)
        .await
        .expect("load the archive");
    assert_eq!(archive.messages[0].content, "old turn canaryArchivedWalrus");
    assert_eq!(
        store.get_memory(&stored.id).await.expect("get"),
        Some(stored.clone())
    );
    let hits = store
        .search_messages("canaryresultbadger", &MessageQuery::default())
        .await
        .expect("search");
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].message, messages[3]);
    assert_eq!(
        store.get_context(Some("LIKES")).await.expect("context"),
        "- the user likes canaryMemoryTextMoose"
    );
    // The store's own search sees only ciphertext.
    let bare = reopened
        .search_messages("canaryresultbadger", &MessageQuery::default())
        .await
        .expect("search the bare store");
    assert!(bare.is_empty());
}

async fn wrong_key_and_no_key_are_refused(raw: Store) {
    let key = key();
    let (id, _, stored) = write_everything(&layered(&raw, &key)).await;

    // No key: the bare store shows envelopes, never the text.
    let bare = load_session(&raw, &id).await;
    for m in &bare.messages {
        assert!(m.content.starts_with(ENVELOPE_PREFIX), "{:?}", m.content);
        assert!(m.content.contains(&key.id().to_string()));
    }
    let tool = &bare.messages[2];
    assert!(tool
        .tool_call_id
        .as_deref()
        .is_some_and(|v| v.starts_with(ENVELOPE_PREFIX)));
    assert!(tool
        .tool_name
        .as_deref()
        .is_some_and(|v| v.starts_with(ENVELOPE_PREFIX)));
    let bare_item = raw
        .list_memories(&MemoryFilter::default())
        .await
        .expect("list")
        .pop()
        .expect("an item");
    // The id is sealed too: the store knows the item by a stand-in only.
    assert!(bare_item.id.as_str().starts_with(MEMORY_ID_PREFIX));
    assert!(raw.get_memory(&stored.id).await.expect("get").is_none());
    assert!(bare_item.text.starts_with(ENVELOPE_PREFIX));
    // The key is a stand-in, equal for equal keys (so upserts by key still work).
    let token = bare_item.key.clone().expect("a key");
    assert!(token.starts_with(KEY_TOKEN_PREFIX), "{token}");
    let again = layered(&raw, &key)
        .put_memory(&item())
        .await
        .expect("put again");
    assert_eq!(again.id, stored.id, "replaced by key");
    let stored_key = raw
        .get_memory(&bare_item.id)
        .await
        .expect("get")
        .and_then(|i| i.key);
    assert_eq!(stored_key, Some(token));

    // No key, through the layer a program wears without one: a typed error naming the key.
    let keyless = raw.clone().with_layer(NoKeyLayer);
    let err = keyless
        .load(&id, None)
        .await
        .expect_err("no key is refused");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(
        crypto_error(&err),
        Some(&CryptoError::NoKey { found: key.id() })
    );
    assert!(err.to_string().contains("no encryption key"), "{err}");
    for err in [
        keyless.get_memory(&stored.id).await.expect_err("get"),
        keyless.get_context(None).await.expect_err("context"),
        keyless
            .load_archive(&id, &raw.list_archives(&id).await.expect("list")[0].id)
            .await
            .expect_err("archive"),
        keyless
            .append_one(&id, Message::user("plaintext"))
            .await
            .expect_err("no mixing"),
        keyless
            .put_memory(&MemoryItem::new(MemoryKind::Fact, "plaintext"))
            .await
            .expect_err("no mixing"),
    ] {
        assert!(
            matches!(crypto_error(&err), Some(CryptoError::NoKey { .. })),
            "{err}"
        );
    }
    assert_eq!(
        layered(&raw, &key)
            .messages(&id)
            .await
            .expect("messages")
            .len(),
        4,
        "nothing appended"
    );

    // Another key: a typed error naming both keys, never garbage.
    let other = key_other(&key);
    let wrong = layered(&raw, &other);
    let err = wrong
        .load(&id, None)
        .await
        .expect_err("the wrong key is refused");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    match crypto_error(&err) {
        Some(CryptoError::WrongKey { found, held }) => {
            assert_eq!(*found, key.id());
            assert_eq!(held, &[other.id()]);
        }
        e => panic!("expected WrongKey, got {e:?}"),
    }
    assert!(err.to_string().contains("wrong encryption key"), "{err}");
    for err in [
        wrong.get_memory(&stored.id).await.expect_err("get"),
        wrong
            .list_memories(&MemoryFilter::default())
            .await
            .expect_err("list"),
        wrong.get_context(None).await.expect_err("context"),
        wrong
            .search_messages("zebra", &MessageQuery::default())
            .await
            .expect_err("search"),
    ] {
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    }
    // Listing needs no key: ids, counts and times are plaintext.
    assert_eq!(wrong.list_sessions().await.expect("list")[0].id, id);
}

fn key_other(key: &MasterKey) -> MasterKey {
    let other = self::key();
    assert_ne!(other.id(), key.id());
    other
}

on_both_stores!(wrong_key_and_no_key_are_refused: wrong_key_and_no_key_are_refused_in_memory, wrong_key_and_no_key_are_refused_on_files);

/// Rewrites the first message of `id` in the bare store with `change` applied.
async fn tamper(raw: &Store, id: &SessionId, change: impl FnOnce(&mut Message)) {
    let mut session = load_session(raw, id).await;
    change(&mut session.messages[0]);
    raw.save_session(id, &session.messages, &session.metadata)
        .await
        .expect("save");
}

fn flip(envelope: &str) -> String {
    // A character in the middle of the base64 payload, changed to another base64 character.
    let mut bytes = envelope.as_bytes().to_vec();
    let at = ENVELOPE_PREFIX.len() + 17 + (bytes.len() - ENVELOPE_PREFIX.len() - 17) / 2;
    bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
    String::from_utf8(bytes).expect("ASCII")
}

async fn expect_tampered(store: &impl AgentMemory, id: &SessionId) {
    let err = store.load(id, None).await.expect_err("tampering is caught");
    assert_eq!(err.kind(), ErrorKind::CorruptData, "{err}");
    assert_eq!(crypto_error(&err), Some(&CryptoError::Tampered), "{err}");
}

async fn tampering_is_refused(raw: Store) {
    let key = key();
    let store = layered(&raw, &key);
    let (a, b) = (sid("a"), sid("b"));
    let reset = |id: SessionId| {
        let store = &store;
        async move {
            store
                .save_session(&id, &history(), &Metadata::new())
                .await
                .expect("save")
        }
    };
    reset(a.clone()).await;
    store.load(&a, None).await.expect("untouched reads");

    // A flipped byte.
    tamper(&raw, &a, |m| m.content = flip(&m.content)).await;
    expect_tampered(&store, &a).await;

    // Ciphertext moved from session `a` to session `b` (same message id, same key).
    reset(a.clone()).await;
    store
        .save_session(&b, &history()[..1], &Metadata::new())
        .await
        .expect("save b");
    let from_a = load_session(&raw, &a).await.messages[0].clone();
    let mut in_b = load_session(&raw, &b).await.messages;
    in_b[0] = from_a.clone();
    raw.save_session(&b, &in_b, &Metadata::new())
        .await
        .expect("save");
    expect_tampered(&store, &b).await;

    // A role raised from user to system.
    tamper(&raw, &a, |m| m.role = Role::System).await;
    expect_tampered(&store, &a).await;

    // Metadata stripped.
    reset(a.clone()).await;
    tamper(&raw, &a, |m| m.metadata.clear()).await;
    expect_tampered(&store, &a).await;

    // Plaintext where ciphertext belongs.
    reset(a.clone()).await;
    tamper(&raw, &a, |m| m.content = "injected".into()).await;
    let err = store
        .load(&a, None)
        .await
        .expect_err("plaintext is refused");
    assert_eq!(err.kind(), ErrorKind::CorruptData);
    assert_eq!(crypto_error(&err), Some(&CryptoError::NotEncrypted));
}

on_both_stores!(tampering_is_refused: tampering_is_refused_in_memory, tampering_is_refused_on_files);

/// A byte flipped in the file itself (not through the store) is caught too.
#[tokio::test]
async fn a_byte_flipped_on_disk_is_refused() {
    let dir = tempfile::tempdir().expect("a temp folder");
    let key = key();
    let id = sid("disk");
    {
        let raw = file_store(dir.path()).await;
        layered(&raw, &key)
            .append_one(&id, Message::user("canaryContentZebra"))
            .await
            .expect("append");
    }
    let log = dir.path().join("agents/disk/session.jsonl");
    let text = std::fs::read_to_string(&log).expect("the log");
    let start = text.find(ENVELOPE_PREFIX).expect("an envelope in the log");
    let end = start + text[start..].find('"').expect("the envelope ends");
    let flipped = text.replacen(&text[start..end], &flip(&text[start..end]), 1);
    assert_ne!(flipped, text);
    std::fs::write(&log, flipped).expect("write the log");
    let raw = file_store(dir.path()).await;
    expect_tampered(&layered(&raw, &key), &id).await;
}

async fn rekey_moves_everything_to_the_new_key(raw: Store) -> (KeyId, KeyId) {
    let (old, new) = (key(), key());
    let (id, messages, stored) = write_everything(&layered(&raw, &old)).await;

    let report = rekey(raw.clone(), &old, &new).await.expect("rekey");
    assert_eq!(report.sessions, 1);
    assert_eq!(report.messages, messages.len() as u64);
    assert_eq!(report.memories, 1);
    assert_eq!(report.archives, 1);
    assert_eq!(report.key, Some(new.id()));

    let with_new = layered(&raw, &new);
    let session = load_session(&with_new, &id).await;
    assert_eq!(session.messages, messages);
    assert_eq!(session.metadata["title"], "canarySessionMetaIbis");
    assert_item_reads_back(&with_new, &stored).await;
    let bare = load_session(&raw, &id).await;
    assert!(bare
        .messages
        .iter()
        .all(|m| m.content.contains(&new.id().to_string())));

    // The old key is refused for everything rewritten.
    let with_old = layered(&raw, &old);
    let err = with_old.load(&id, None).await.expect_err("old key");
    assert_wrong_key(&err);
    let err = with_old.get_memory(&stored.id).await.expect_err("old key");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);

    // Archives are rewritten in place: the new key alone reads them, the old key no longer.
    let archive = &with_new.list_archives(&id).await.expect("list")[0];
    let archived = with_new
        .load_archive(&id, &archive.id)
        .await
        .expect("the archive under the new key");
    assert_eq!(
        archived.messages[0].content,
        "old turn canaryArchivedWalrus"
    );
    let err = with_old
        .load_archive(&id, &archive.id)
        .await
        .expect_err("archive under the old key");
    assert_wrong_key(&err);

    // Running it again (an interrupted rekey finished) changes nothing readable.
    rekey(raw.clone(), &old, &new).await.expect("rekey again");
    assert_eq!(with_new.messages(&id).await.expect("messages"), messages);
    (old.id(), new.id())
}

#[tokio::test]
async fn rekey_moves_everything_to_the_new_key_in_memory() {
    rekey_moves_everything_to_the_new_key(in_memory()).await;
}

#[tokio::test]
async fn rekey_moves_everything_to_the_new_key_on_files() {
    let dir = tempfile::tempdir().expect("a temp folder");
    let raw = file_store(dir.path()).await;
    let (old, new) = rekey_moves_everything_to_the_new_key(raw).await;
    // No session file names the old key any more; archives still do, and so do the superseded
    // lines of the memory log until the file backend compacts it (its last line is the
    // item under the new key).
    let last = last_memory_log_line(dir.path());
    assert!(
        last.contains(&new.to_string()) && !last.contains(&old.to_string()),
        "{last}"
    );
    for file in all_files(dir.path()) {
        let name = file.to_string_lossy();
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        if text.contains(ENVELOPE_PREFIX)
            && !name.contains("/archive/")
            && !name.ends_with("memories.jsonl")
        {
            let ids: std::collections::BTreeSet<&str> = text
                .match_indices(ENVELOPE_PREFIX)
                .map(|(i, _)| &text[i + ENVELOPE_PREFIX.len()..i + ENVELOPE_PREFIX.len() + 16])
                .collect();
            assert_eq!(
                ids.len(),
                1,
                "{name} holds envelopes under one key: {ids:?}"
            );
        }
    }
}

#[tokio::test]
async fn an_existing_plaintext_store_can_be_encrypted() {
    let dir = tempfile::tempdir().expect("a temp folder");
    let raw = file_store(dir.path()).await;
    let (id, messages, stored) = write_everything(&raw).await;
    let key = key();
    let report = encrypt_existing(raw.clone(), &key).await.expect("encrypt");
    assert_eq!((report.sessions, report.memories), (1, 1));
    let store = layered(&raw, &key);
    assert_eq!(store.messages(&id).await.expect("messages"), messages);
    assert_item_reads_back(&store, &stored).await;
    // The superseded lines of the file backend's memory log stay until it compacts the log:
    // everything else, archives included, is ciphertext now.
    let last = last_memory_log_line(dir.path());
    assert!(!last.contains("canaryMemoryTextMoose") && last.contains(ENVELOPE_PREFIX));
    for secret in [
        "canaryContentZebra",
        "canaryToolNameHeron",
        "canarySessionMetaIbis",
        "canaryArchivedWalrus",
    ] {
        let found: Vec<PathBuf> = files_containing(dir.path(), secret.as_bytes());
        assert!(found.is_empty(), "{secret} is still in {found:?}");
    }
}

#[tokio::test]
async fn tool_fields_longer_than_an_envelope_allows_are_refused_before_writing() {
    let (_, store) = encrypted_in_memory();
    let id = sid("tools");
    let longest = "c".repeat(MAX_ENCRYPTED_TOOL_FIELD_BYTES);
    let call = Message::tool_call(longest.clone(), "t", "{}");
    store
        .append_one(&id, call.clone())
        .await
        .expect("the longest id fits");
    assert_eq!(store.messages(&id).await.expect("messages"), vec![call]);
    let too_long = Message::tool_call(format!("{longest}c"), "t", "{}");
    let err = store.append_one(&id, too_long).await.expect_err("too long");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.to_string().contains("tool call id"), "{err}");
    assert_eq!(
        store.messages(&id).await.expect("messages").len(),
        1,
        "nothing written"
    );
}

#[tokio::test]
async fn a_tool_call_and_its_result_share_one_envelope_so_windows_keep_them_together() {
    let (raw, store) = encrypted_in_memory();
    let id = sid("window");
    let mut messages = history();
    messages.push(Message::assistant("done"));
    store.append(&id, &messages).await.expect("append");
    let bare = raw.messages(&id).await.expect("messages");
    assert_eq!(bare[1].tool_call_id, bare[2].tool_call_id);
    // The same id in another session encrypts differently.
    store
        .append(&sid("other"), &messages)
        .await
        .expect("append");
    let other = raw.messages(&sid("other")).await.expect("messages");
    assert_ne!(other[1].tool_call_id, bare[1].tool_call_id);
    // A window of two would start at the result: it is left out with its call.
    for (limit, first_kept) in [(2, 3), (3, 1)] {
        let window = store
            .load(&id, Some(limit))
            .await
            .expect("load")
            .expect("a session");
        assert_eq!(
            window.messages,
            messages[first_kept..],
            "a window of {limit}"
        );
    }
}

/// Two calls and their results: sealed tool call ids (and names) moved between messages of
/// one session are refused, though each id's envelope alone still opens in that session.
#[tokio::test]
async fn tool_call_ids_swapped_or_moved_between_messages_are_refused() {
    let (raw, store) = encrypted_in_memory();
    let id = sid("calls");
    let messages = vec![
        Message::tool_call("call_a", "lookup", r#"{"q":"a"}"#),
        Message::tool_result("call_a", "lookup", "result a"),
        Message::tool_call("call_b", "lookup", r#"{"q":"b"}"#),
        Message::tool_result("call_b", "lookup", "result b"),
    ];
    let reset = || async {
        store
            .save_session(&id, &messages, &Metadata::new())
            .await
            .expect("save");
        assert_eq!(load_session(&store, &id).await.messages, messages);
    };
    let rewrite = |change: fn(&mut Vec<Message>)| {
        let raw = &raw;
        let id = &id;
        async move {
            let mut session = load_session(raw, id).await;
            change(&mut session.messages);
            raw.save_session(id, &session.messages, &session.metadata)
                .await
                .expect("save");
        }
    };
    type Forgery = (&'static str, fn(&mut Vec<Message>));
    let swaps: [Forgery; 4] = [
        ("the ids of the two calls swapped", |m| {
            let (a, b) = (m[0].tool_call_id.clone(), m[2].tool_call_id.clone());
            m[0].tool_call_id = b;
            m[2].tool_call_id = a;
        }),
        ("the ids of the two results swapped", |m| {
            let b = m[3].tool_call_id.take();
            m[3].tool_call_id = std::mem::replace(&mut m[1].tool_call_id, b);
        }),
        ("call b's id moved onto result a", |m| {
            m[1].tool_call_id = m[2].tool_call_id.clone();
        }),
        ("the tool names of a call and a result swapped", |m| {
            let (a, b) = (m[0].tool_name.clone(), m[3].tool_name.clone());
            m[0].tool_name = b;
            m[3].tool_name = a;
        }),
    ];
    for (what, change) in swaps {
        reset().await;
        rewrite(change).await;
        let err = store.load(&id, None).await.expect_err(what);
        assert_eq!(err.kind(), ErrorKind::CorruptData, "{what}: {err}");
        assert_eq!(crypto_error(&err), Some(&CryptoError::Tampered), "{what}");
    }
}

/// A writer of the backend who extends, removes or adds an item's expiry (to keep it past
/// its time, or to hide it) is caught when the item is read.
#[tokio::test]
async fn an_items_expiry_changed_in_the_store_is_refused() {
    let (raw, store) = encrypted_in_memory();
    const DAY: Duration = Duration::from_secs(86_400);
    let tomorrow = agentmem_core::now() + DAY;
    let expiring = MemoryItem::new(MemoryKind::ShortTerm, "until tomorrow").expiring_at(tomorrow);
    let lasting = MemoryItem::new(MemoryKind::Fact, "for good").with_key("forever");
    for item in [&expiring, &lasting] {
        let stored = store.put_memory(item).await.expect("put");
        assert_eq!(&stored, item);
        assert_eq!(
            store.get_memory(&item.id).await.expect("get").as_ref(),
            Some(item)
        );
    }
    let changes = [
        (&expiring, Some(tomorrow + 365 * DAY), "extended"),
        (&expiring, None, "removed"),
        (
            &expiring,
            Some(tomorrow + Duration::from_micros(1)),
            "moved by 1 µs",
        ),
        (&lasting, Some(tomorrow), "added"),
    ];
    for (item, forged, what) in changes {
        let mut stored = raw
            .list_memories(&MemoryFilter::kind(item.kind))
            .await
            .expect("raw list")
            .pop()
            .expect("the stored item");
        let honest = stored.clone();
        stored.expires_at = forged;
        raw.put_memory(&stored).await.expect("raw put");
        let err = store
            .list_memories(&MemoryFilter::kind(item.kind))
            .await
            .expect_err(what);
        assert_eq!(err.kind(), ErrorKind::CorruptData, "{what}: {err}");
        assert_eq!(crypto_error(&err), Some(&CryptoError::Tampered), "{what}");
        raw.put_memory(&honest).await.expect("raw put back");
        assert_eq!(
            store
                .list_memories(&MemoryFilter::kind(item.kind))
                .await
                .expect("list"),
            std::slice::from_ref(item),
            "{what}: put back"
        );
    }
}

/// The agent's insight ids are `insight_` and an unkeyed hash of the insight's text: through
/// the layer the store sees a sealed id instead, and the item is still found, replaced (by id
/// and by key) and deleted by the id it was given, before and after a rekey.
#[tokio::test]
async fn memory_ids_are_sealed_so_an_insight_id_reveals_nothing() {
    let raw = in_memory();
    let (old, new) = (key(), key());
    let store = layered(&raw, &old);
    let hash = "9f2b6c1d0e4a7b3c5d8e1f2a3b4c5d6e";
    let id: MemoryId = format!("insight_{hash}").parse().expect("an id");
    let insight = MemoryItem {
        id: id.clone(),
        ..MemoryItem::new(MemoryKind::Insight, "prefers short answers")
            .with_key("preference:prefers short answers")
    };
    let raw_items = || async {
        raw.list_memories(&MemoryFilter::default())
            .await
            .expect("raw list")
    };
    assert_eq!(store.put_memory(&insight).await.expect("put"), insight);
    let sealed = raw_items().await;
    assert_eq!(sealed.len(), 1);
    let stored_id = sealed[0].id.as_str().to_owned();
    assert!(stored_id.starts_with(MEMORY_ID_PREFIX), "{stored_id}");
    assert!(
        !stored_id.contains(hash) && !stored_id.contains("insight"),
        "{stored_id}"
    );
    assert!(raw.get_memory(&id).await.expect("raw get").is_none());
    assert_eq!(
        store.get_memory(&id).await.expect("get"),
        Some(insight.clone())
    );

    // Upsert by id, then by key with a fresh id: one item, still known by its id.
    let seen_twice = MemoryItem {
        text: "prefers very short answers".into(),
        ..insight.clone()
    };
    assert_eq!(
        store.put_memory(&seen_twice).await.expect("put"),
        seen_twice
    );
    let by_key = MemoryItem::new(MemoryKind::Insight, "prefers terse answers")
        .with_key("preference:prefers short answers");
    let replaced = store.put_memory(&by_key).await.expect("put by key");
    assert_eq!(replaced.id, id, "an upsert by key keeps the stored id");
    assert_eq!(raw_items().await.len(), 1);
    assert!(store.get_memory(&by_key.id).await.expect("get").is_none());

    // A rekey moves the id to the new key and leaves no copy under the old one.
    rekey(raw.clone(), &old, &new).await.expect("rekey");
    let rekeyed = raw_items().await;
    assert_eq!(rekeyed.len(), 1);
    assert_ne!(rekeyed[0].id.as_str(), stored_id);
    let store = layered(&raw, &new);
    assert_eq!(
        store.get_memory(&id).await.expect("get").map(|i| i.text),
        Some("prefers terse answers".into())
    );
    assert!(store.delete_memory(&id).await.expect("delete"));
    assert!(!store.delete_memory(&id).await.expect("delete again"));
    assert!(raw_items().await.is_empty());
}

#[tokio::test]
async fn errors_are_labelled_and_capabilities_say_search_is_in_the_client() {
    let (raw, store) = encrypted_in_memory();
    assert!(!store.capabilities().indexed_search);
    let mut deep = serde_json::json!("leaf");
    for _ in 0..70 {
        deep = serde_json::json!([deep]);
    }
    let mut meta = Metadata::new();
    meta.insert("deep".into(), deep);
    let err = store
        .save_session(&sid("deep"), &[], &meta)
        .await
        .expect_err("too deep to read back");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(err.operation(), Some(agentmem_core::Operation::SaveSession));
    assert!(raw.list_sessions().await.expect("list").is_empty());
}

/// During a rotation (a layer writing with the new key and reading the old), a put with the key
/// of an item written under the old key replaces that item, as a store's upsert by key would.
#[tokio::test]
async fn upsert_by_key_finds_items_written_under_a_read_key() {
    let raw = in_memory();
    let (old, new) = (key(), key());
    let first = layered(&raw, &old).put_memory(&item()).await.expect("put");
    let rotating = raw
        .clone()
        .with_layer(EncryptLayer::new(&new).with_read_key(&old));
    let newer = MemoryItem::new(MemoryKind::Fact, "the user likes tea")
        .in_scope(MemoryScope::agent("alice"))
        .with_key("likes:canaryMemoryKeyGnu");
    let stored = rotating.put_memory(&newer).await.expect("put");
    assert_eq!(stored.id, first.id, "the item with the key was replaced");
    assert_eq!(stored.created_at, first.created_at);
    let all = rotating
        .list_memories(&MemoryFilter::default())
        .await
        .expect("list");
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].text, "the user likes tea");
    // It is under the new key now.
    let with_new = layered(&raw, &new);
    assert_eq!(
        with_new
            .get_memory(&first.id)
            .await
            .expect("get")
            .map(|i| i.text),
        Some("the user likes tea".into())
    );
}

/// A fork through the layer re-encrypts the copy under the target's own key (the store's
/// ciphertext cannot be copied: it is bound to the source), keeps metadata and labels, and
/// leaves the source alone; a rewind returns the removed messages decrypted; labels stay in
/// the clear; without a key, fork and rewind of an encrypted session are refused and remove
/// nothing.
async fn lifecycle_through_the_layer(raw: Store) {
    let key = key();
    let store = layered(&raw, &key);
    let (source, target) = (sid("fork-src"), sid("fork-dst"));
    let mut meta = Metadata::new();
    meta.insert("title".into(), "canarySessionMetaIbis".into());
    let messages = history();
    store
        .save_session(&source, &messages, &meta)
        .await
        .expect("save");
    let patch = agentmem_core::SessionPatch::default()
        .owner("ada")
        .tag("project", "kyoto");
    store
        .update_session(&source, &patch)
        .await
        .expect("label the source");

    let info = store
        .fork(&source, &target, Some(&messages[1].id))
        .await
        .expect("fork");
    assert_eq!(info.id, target);
    assert_eq!(info.message_count, 2);
    assert_eq!(info.labels.owner.as_deref(), Some("ada"));
    let forked = load_session(&store, &target).await;
    assert_eq!(forked.messages, messages[..2]);
    assert_eq!(forked.metadata, meta);
    assert_eq!(
        forked.labels.tags.get("project").map(String::as_str),
        Some("kyoto")
    );
    // The copy is sealed under the target's key: its envelopes differ from the source's.
    let (bare_source, bare_target) = (
        load_session(&raw, &source).await,
        load_session(&raw, &target).await,
    );
    assert!(bare_target.messages[0].content.starts_with(ENVELOPE_PREFIX));
    assert_ne!(
        bare_target.messages[0].content,
        bare_source.messages[0].content
    );
    assert_eq!(
        bare_target.labels.owner.as_deref(),
        Some("ada"),
        "labels are clear"
    );
    assert_eq!(
        store
            .fork(&source, &target, None)
            .await
            .expect_err("the target exists")
            .kind(),
        ErrorKind::Conflict
    );
    assert_eq!(
        store
            .fork(&sid("none"), &sid("fresh"), None)
            .await
            .expect_err("no source")
            .kind(),
        ErrorKind::NotFound
    );
    let page = store
        .find_sessions(&agentmem_core::SessionQuery::default().owner("ada"))
        .await
        .expect("find");
    let found: Vec<_> = page.sessions.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(found, ["fork-dst", "fork-src"]);

    // Without a key: refused before anything is removed or copied.
    let keyless = raw.clone().with_layer(NoKeyLayer);
    let err = keyless
        .rewind(&source, &agentmem_core::Rewind::Last(1))
        .await
        .expect_err("no key");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(matches!(
        crypto_error(&err),
        Some(CryptoError::NoKey { .. })
    ));
    let err = keyless
        .fork(&source, &sid("keyless-copy"), None)
        .await
        .expect_err("no key");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(raw
        .load(&sid("keyless-copy"), None)
        .await
        .expect("load")
        .is_none());
    assert_eq!(store.messages(&source).await.expect("read").len(), 3);

    let removed = store
        .rewind(&source, &agentmem_core::Rewind::Last(2))
        .await
        .expect("rewind");
    assert_eq!(removed, messages[1..]);
    assert_eq!(store.messages(&source).await.expect("read"), messages[..1]);
}

on_both_stores!(lifecycle_through_the_layer: lifecycle_through_the_layer_in_memory, lifecycle_through_the_layer_on_files);
