//! The store's encryption marker: the first encrypted write records the key, a wrong key and
//! no key are refused by it before anything is written, and a rekey moves it last, so an
//! interrupted rekey is resumed. Over core's in-memory store and the file backend.

use std::sync::Arc;

use agentmem_core::{
    AgentMemoryExt, ErrorKind, InMemoryStore, MemoryFilter, MemoryItem, MemoryKind, MemoryStore,
    Message, MessageQuery, Metadata, PropertyChange, Rewind, SessionId, SessionInfo, SessionPatch,
    SessionQuery, SessionStore,
};
use agentmem_crypt::{rekey, EncryptLayer, NoKeyLayer, StoreMarker, MARKER_PROPERTY};
use agentmem_file::Durability;

mod common;
use common::{assert_no_key, assert_wrong_key, first_message, key, sid, stores, with_key, Store};

async fn marker(raw: &Store) -> Option<StoreMarker> {
    raw.store_property(MARKER_PROPERTY)
        .await
        .expect("read the marker")
        .map(|text| serde_json::from_str::<StoreMarker>(&text).expect("a marker"))
}

/// Everything a reader sees of the store, to show a refused write changed nothing.
async fn snapshot(raw: &Store) -> (Vec<SessionInfo>, Vec<MemoryItem>, Option<String>) {
    let sessions = raw.list_sessions().await.expect("list sessions");
    let items = raw
        .list_memories(&MemoryFilter::default())
        .await
        .expect("list items");
    let marker = raw.store_property(MARKER_PROPERTY).await.expect("marker");
    (sessions, items, marker)
}

#[tokio::test]
async fn the_first_encrypted_write_marks_the_store_and_a_wrong_key_is_refused_before_writing() {
    for (raw, _dir) in stores(Durability::Fsync).await {
        let (right, wrong) = (key(), key());
        assert_eq!(marker(&raw).await, None, "a new store is not marked");
        let keyed = with_key(&raw, &right);
        // Reading does not mark it.
        assert_eq!(
            keyed
                .list_memories(&MemoryFilter::default())
                .await
                .expect("list"),
            []
        );
        assert_eq!(marker(&raw).await, None);
        keyed
            .append_one(&sid("a"), Message::user("hello"))
            .await
            .expect("append");
        let marked = marker(&raw).await.expect("marked by the first write");
        assert_eq!(marked.key.key, right.id());
        assert!(!marked.rewriting && marked.from.is_none());
        let stored = raw.store_property(MARKER_PROPERTY).await.expect("marker");
        assert!(!stored.expect("marker").contains(&right.to_base64()));

        // The records can go: the marker stays, and still refuses another key.
        assert!(keyed.delete_session(&sid("a")).await.expect("delete"));
        let before = snapshot(&raw).await;
        let other = with_key(&raw, &wrong);
        assert_wrong_key(
            other.append_one(&sid("b"), Message::user("x")).await,
            "append",
        );
        assert_wrong_key(
            other
                .save_session(&sid("b"), &[Message::user("x")], &Metadata::new())
                .await,
            "save_session",
        );
        assert_wrong_key(
            other
                .put_memory(&MemoryItem::new(MemoryKind::Fact, "x"))
                .await,
            "put_memory",
        );
        assert_wrong_key(other.load(&sid("b"), None).await, "load");
        assert_eq!(snapshot(&raw).await, before, "nothing written");
        // The right key goes on.
        keyed
            .append_one(&sid("b"), Message::user("again"))
            .await
            .expect("append");
        assert_eq!(first_message(&keyed, &sid("b")).await, "again");
    }
}

#[tokio::test]
async fn racing_first_writes_under_two_keys_mark_the_store_once() {
    for (raw, _dir) in stores(Durability::Fsync).await {
        let (one, two) = (key(), key());
        let (a, b) = (with_key(&raw, &one), with_key(&raw, &two));
        let (id_a, id_b) = (sid("a"), sid("b"));
        let (ra, rb) = tokio::join!(
            a.append_one(&id_a, Message::user("one")),
            b.append_one(&id_b, Message::user("two")),
        );
        let won = marker(&raw).await.expect("marked").key.key;
        let (winner, loser) = if won == one.id() { (ra, rb) } else { (rb, ra) };
        winner.expect("the write that marked the store");
        assert_wrong_key(loser, "the write under the other key");
        assert_eq!(raw.list_sessions().await.expect("list").len(), 1);
    }
}

#[tokio::test]
async fn without_a_key_a_marked_store_refuses_every_write_and_read_before_anything_happens() {
    for (raw, _dir) in stores(Durability::Fsync).await {
        let key = key();
        let keyed = with_key(&raw, &key);
        let id = sid("secret");
        keyed
            .append(&id, &[Message::user("q"), Message::assistant("a")])
            .await
            .expect("append");
        let item = keyed
            .put_memory(&MemoryItem::new(MemoryKind::Fact, "likes tea"))
            .await
            .expect("put");
        let archive = keyed
            .compact(&id, &[Message::system("summary")])
            .await
            .expect("compact");
        let before = snapshot(&raw).await;

        let keyless = raw.clone().with_layer(NoKeyLayer);
        let fresh = sid("fresh");
        let one = [Message::user("plaintext")];
        assert_no_key(
            keyless.save_session(&fresh, &one, &Metadata::new()).await,
            &key,
            "save_session",
        );
        assert_no_key(
            keyless.append(&fresh, &one).await,
            &key,
            "append to a new session",
        );
        assert_no_key(keyless.append(&id, &one).await, &key, "append");
        assert_no_key(keyless.compact(&id, &one).await, &key, "compact");
        assert_no_key(keyless.fork(&id, &fresh, None).await, &key, "fork");
        assert_no_key(keyless.rewind(&id, &Rewind::Last(1)).await, &key, "rewind");
        let patch = SessionPatch::default().owner("mallory");
        assert_no_key(
            keyless.update_session(&id, &patch).await,
            &key,
            "update_session",
        );
        assert_no_key(
            keyless.replace_archive(&id, &archive.id, &one).await,
            &key,
            "replace_archive",
        );
        let new_item = MemoryItem::new(MemoryKind::Fact, "plaintext");
        assert_no_key(keyless.put_memory(&new_item).await, &key, "put_memory");
        assert_no_key(keyless.load(&id, None).await, &key, "load");
        assert_no_key(
            keyless.load_archive(&id, &archive.id).await,
            &key,
            "load_archive",
        );
        assert_no_key(keyless.get_memory(&item.id).await, &key, "get_memory");
        let all = MemoryFilter::default();
        assert_no_key(keyless.list_memories(&all).await, &key, "list_memories");
        assert_no_key(
            keyless.search_memories("tea", &all).await,
            &key,
            "search_memories",
        );
        let query = MessageQuery::default();
        assert_no_key(
            keyless.search_messages("q", &query).await,
            &key,
            "search_messages",
        );
        assert_no_key(keyless.get_context(None).await, &key, "get_context");
        assert_eq!(snapshot(&raw).await, before, "nothing written");

        // Ids, labels and archive summaries are in the clear: listing them needs no key.
        assert_eq!(keyless.list_sessions().await.expect("list")[0].id, id);
        let page = keyless
            .find_sessions(&SessionQuery::default())
            .await
            .expect("find");
        assert_eq!(page.sessions.len(), 1);
        assert_eq!(keyless.list_archives(&id).await.expect("archives").len(), 1);
        // Deleting needs no key either (nothing is written that could mix with ciphertext).
        // The item's id is sealed: without the key it is deleted by its id as stored (what
        // the backend shows), not by the id it was given.
        assert!(!keyless.delete_memory(&item.id).await.expect("delete item"));
        let stored_id = raw
            .list_memories(&MemoryFilter::default())
            .await
            .expect("raw list")[0]
            .id
            .clone();
        assert!(keyless
            .delete_memory(&stored_id)
            .await
            .expect("delete item"));
        assert!(keyless.delete_session(&id).await.expect("delete session"));
        assert_eq!(raw.list_sessions().await.expect("list"), []);
        // The store stays marked: still no plaintext write.
        assert_no_key(
            keyless.append(&fresh, &one).await,
            &key,
            "append after the deletes",
        );
        assert_eq!(raw.list_sessions().await.expect("list"), []);
    }
}

#[tokio::test]
async fn a_store_marked_by_another_handle_is_refused_before_the_next_plaintext_write() {
    for (raw, _dir) in stores(Durability::Fsync).await {
        let key = key();
        let keyless = raw.clone().with_layer(NoKeyLayer);
        keyless
            .append_one(&sid("plain"), Message::user("before"))
            .await
            .expect("a plain store takes plaintext");
        assert_eq!(
            keyless.messages(&sid("plain")).await.expect("load").len(),
            1
        );
        // Another handle (another process, in life) encrypts into it.
        with_key(&raw, &key)
            .append_one(&sid("secret"), Message::user("hidden"))
            .await
            .expect("append");
        let before = snapshot(&raw).await;
        assert_no_key(
            keyless
                .append_one(&sid("plain"), Message::user("after"))
                .await,
            &key,
            "the next plaintext write of the same handle",
        );
        assert_eq!(snapshot(&raw).await, before, "nothing written");
    }
}

/// Without a key a plain store works as before (`conformance_no_key.rs` runs the whole suite
/// so); its writes never mark it.
#[tokio::test]
async fn plaintext_writes_without_a_key_leave_the_store_unmarked() {
    for (raw, _dir) in stores(Durability::Fsync).await {
        let keyless = raw.clone().with_layer(NoKeyLayer);
        let id = sid("plain");
        let one = Message::user("one");
        keyless.append_one(&id, one).await.expect("append");
        let item = MemoryItem::new(MemoryKind::Fact, "likes tea");
        keyless.put_memory(&item).await.expect("put");
        assert_eq!(keyless.messages(&id).await.expect("load").len(), 1);
        assert_eq!(marker(&raw).await, None);
    }
}

/// A layer (in a module of its own: with `LayeredStore` in scope, calls on stores are
/// ambiguous).
mod failing {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use agentmem_core::layer::LayeredStore;
    use agentmem_core::{async_trait, AgentMemory, Error, Message, Metadata, Result, SessionId};

    use super::Store;

    /// Fails the `n`th `save_session` (counting from 1) and every one after it, as a crash in the
    /// middle of a rekey would stop it.
    #[derive(Debug)]
    pub(crate) struct FailingSaves {
        pub(crate) inner: Store,
        pub(crate) saves: AtomicUsize,
        pub(crate) fail_from: usize,
    }

    #[async_trait]
    impl LayeredStore for FailingSaves {
        type Inner = dyn AgentMemory;

        fn inner(&self) -> &dyn AgentMemory {
            &*self.inner
        }

        async fn save_session(&self, id: &SessionId, m: &[Message], meta: &Metadata) -> Result<()> {
            if self.saves.fetch_add(1, Ordering::SeqCst) + 1 >= self.fail_from {
                return Err(Error::unavailable("the process died"));
            }
            self.inner.save_session(id, m, meta).await
        }
    }
}

use failing::FailingSaves;

#[tokio::test]
async fn an_interrupted_rekey_leaves_both_keys_named_and_running_it_again_finishes_it() {
    for (raw, _dir) in stores(Durability::Fsync).await {
        let (old, new) = (key(), key());
        let ids: Vec<SessionId> = ["s1", "s2", "s3"].into_iter().map(sid).collect();
        for id in &ids {
            with_key(&raw, &old)
                .append_one(id, Message::user(format!("in {id}")))
                .await
                .expect("append");
        }
        let failing = FailingSaves {
            inner: raw.clone(),
            saves: Default::default(),
            fail_from: 2,
        };
        let err = rekey(failing, &old, &new).await.expect_err("interrupted");
        assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");

        // Mid-rekey: the marker names the new key and the old one, and says so.
        let midway = marker(&raw).await.expect("marked");
        assert!(midway.rewriting);
        assert_eq!(midway.key.key, new.id());
        assert_eq!(midway.from.as_ref().map(|f| f.key), Some(old.id()));
        // Neither key alone is refused by the marker; no key still is.
        let sessions = with_key(&raw, &new).list_sessions().await.expect("list");
        assert_eq!(sessions.len(), 3);
        let with_old = with_key(&raw, &old);
        assert_eq!(
            with_old
                .messages(&ids[2])
                .await
                .expect("not yet rekeyed")
                .len(),
            1
        );
        let keyless = raw.clone().with_layer(NoKeyLayer);
        assert_no_key(
            keyless.append_one(&ids[0], Message::user("x")).await,
            &new,
            "append",
        );

        // Running it again finishes it, and only then is the store the new key's alone.
        let report = rekey(raw.clone(), &old, &new).await.expect("resumed");
        assert_eq!(report.sessions, 3);
        let done = marker(&raw).await.expect("marked");
        assert!(!done.rewriting && done.from.is_none());
        assert_eq!(done.key.key, new.id());
        let with_new = with_key(&raw, &new);
        for id in &ids {
            assert_eq!(first_message(&with_new, id).await, format!("in {id}"));
        }
        assert_wrong_key(
            with_key(&raw, &old).load(&ids[0], None).await,
            "the old key",
        );
        assert_wrong_key(
            with_key(&raw, &old)
                .append_one(&sid("late"), Message::user("x"))
                .await,
            "a write under the old key",
        );
        // A rekey from a key the store is not under is refused before anything is written.
        let before = snapshot(&raw).await;
        assert_wrong_key(
            rekey(raw.clone(), &old, &key()).await,
            "rekey from the old key",
        );
        assert_eq!(snapshot(&raw).await, before);
    }
}

#[tokio::test]
async fn writing_with_a_new_key_that_reads_the_marked_one_marks_the_store_as_being_rewritten() {
    for (raw, _dir) in stores(Durability::Fsync).await {
        let (old, new) = (key(), key());
        with_key(&raw, &old)
            .append_one(&sid("a"), Message::user("old"))
            .await
            .expect("append");
        let rotating = raw
            .clone()
            .with_layer(EncryptLayer::new(&new).with_read_key(&old));
        rotating
            .append_one(&sid("b"), Message::user("new"))
            .await
            .expect("append");
        let rotated = marker(&raw).await.expect("marked");
        assert!(rotated.rewriting);
        assert_eq!(rotated.key.key, new.id());
        assert_eq!(rotated.from.map(|f| f.key), Some(old.id()));
        assert_eq!(
            with_key(&raw, &new)
                .messages(&sid("b"))
                .await
                .expect("load")
                .len(),
            1
        );
    }
}

/// The key check value, not the key id, decides: a marker naming the key's id with another
/// check value (copied from elsewhere, or edited) is refused, and the stored value is the
/// same for every handle of one key.
#[tokio::test]
async fn a_marker_with_the_right_key_id_but_another_check_value_is_refused() {
    for (raw, _dir) in stores(Durability::Fsync).await {
        let key = key();
        let probe: Store = Arc::new(InMemoryStore::new());
        with_key(&probe, &key)
            .append_one(&sid("a"), Message::user("x"))
            .await
            .expect("append");
        let genuine = marker(&probe).await.expect("marked");
        let forged = serde_json::json!({
            "v": 1,
            "key": key.id().to_string(),
            "check": "AAAAAAAAAAAAAAAAAAAAAA",
        })
        .to_string();
        assert_ne!(genuine.key.check, "AAAAAAAAAAAAAAAAAAAAAA");
        assert!(raw
            .set_store_property(&PropertyChange::insert(MARKER_PROPERTY, &forged))
            .await
            .expect("plant a marker"));
        let before = snapshot(&raw).await;
        assert_wrong_key(
            with_key(&raw, &key)
                .append_one(&sid("b"), Message::user("x"))
                .await,
            "a forged check value",
        );
        assert_eq!(snapshot(&raw).await, before);
        // Another handle of the same key marks a store with the same check value.
        let again: Store = Arc::new(InMemoryStore::new());
        with_key(&again, &key)
            .append_one(&sid("a"), Message::user("y"))
            .await
            .expect("append");
        assert_eq!(marker(&again).await, Some(genuine));
    }
}
