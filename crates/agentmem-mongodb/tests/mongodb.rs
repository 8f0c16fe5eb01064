//! MongoDB-specific behaviour against `MONGODB_URL`: operator injection through metadata,
//! the stored layout, schema versions, error kinds and detected features.
mod common;

use agentmem_core::backend::{BackendConfig, Registry};
use agentmem_core::{
    AgentMemoryExt, ErrorKind, MemoryFilter, MemoryId, MemoryItem, MemoryKind, MemoryScope,
    MemoryStore, Message, MessageId, Metadata, Operation, SessionId, SessionStore,
};
use agentmem_mongodb::mongodb::bson::{doc, Bson, Document};
use agentmem_mongodb::mongodb::options::IndexOptions;
use agentmem_mongodb::mongodb::IndexModel;
use agentmem_mongodb::{MongoConfig, MongoStore, ServerFeatures, SCHEMA_VERSION};
use common::raw;
use serde_json::json;

/// Asserts that the layers labelled `err` with `operation` and this backend's name.
fn assert_labelled(err: &agentmem_core::Error, operation: Operation) {
    assert_eq!(err.operation(), Some(operation), "{err}");
    assert_eq!(err.backend_name(), Some("mongodb"), "{err}");
}

fn sid(s: &str) -> SessionId {
    s.parse().unwrap()
}

/// Every key in `d`, recursively (through sub-documents and arrays).
fn all_keys(d: &Document, out: &mut Vec<String>) {
    for (k, v) in d {
        out.push(k.clone());
        match v {
            Bson::Document(sub) => all_keys(sub, out),
            Bson::Array(items) => {
                for item in items {
                    if let Bson::Document(sub) = item {
                        all_keys(sub, out);
                    }
                }
            }
            _ => {}
        }
    }
}

fn hostile() -> Metadata {
    let mut m = Metadata::new();
    m.insert(
        "$where".into(),
        json!("function() { sleep(10000); return true; }"),
    );
    m.insert("$set".into(), json!({"epoch": "hijacked", "next": -1}));
    m.insert("a.b".into(), json!({"$gt": "", "c.d": [1, {"$ne": null}]}));
    m.insert("$".into(), json!(u64::MAX));
    m.insert("".into(), json!(-0.5));
    m
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_keys_cannot_inject_operators_or_paths() {
    let Some(store) = common::store().await else {
        return;
    };
    let s = sid("injection");
    let meta = hostile();
    let mut msg = Message::user("hello");
    msg.metadata = meta.clone();
    store.save_session(&s, &[msg.clone()], &meta).await.unwrap();
    store
        .append_one(
            &s,
            msg.clone()
                .with_id(MessageId::new("second").expect("valid message id")),
        )
        .await
        .unwrap();
    let mut item = MemoryItem::new(MemoryKind::Fact, "likes tea").with_key("drink");
    item.metadata = meta.clone();
    store.put_memory(&item).await.unwrap();
    store
        .compact(
            &s,
            &[msg
                .clone()
                .with_id(MessageId::new("summary").expect("valid message id"))],
        )
        .await
        .unwrap();

    // Everything round-trips exactly...
    let loaded = store.load(&s, None).await.unwrap().unwrap();
    assert_eq!(loaded.metadata, meta);
    assert_eq!(
        loaded.messages,
        vec![msg
            .clone()
            .with_id(MessageId::new("summary").expect("valid message id"))]
    );
    let archive = store.list_archives(&s).await.unwrap();
    let archived = store.load_archive(&s, &archive[0].id).await.unwrap();
    assert_eq!(
        archived.messages,
        vec![
            msg.clone(),
            msg.clone()
                .with_id(MessageId::new("second").expect("valid message id"))
        ]
    );
    assert_eq!(store.get_memory(&item.id).await.unwrap().unwrap(), item);

    // ...and no stored document has a field name the server could read as an operator or
    // a path: the metadata is an opaque string.
    for collection in [
        "sessions",
        "heads",
        "messages",
        "archived_messages",
        "memories",
    ] {
        for d in raw(&store, collection).await {
            let mut keys = Vec::new();
            all_keys(&d, &mut keys);
            assert!(
                keys.iter()
                    .all(|k| !k.starts_with('$') && !k.contains('.') && !k.is_empty()),
                "{collection}: {keys:?}"
            );
            if let Some(m) = d.get("metadata") {
                assert!(
                    matches!(m, Bson::String(_) | Bson::Null),
                    "{collection}: {m:?}"
                );
            }
        }
    }
    // The `$set` key did not rewrite the session's own fields.
    let sessions = raw(&store, "sessions").await;
    assert_eq!(sessions.len(), 1);
    assert_ne!(sessions[0].get_str("epoch").unwrap(), "hijacked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn layout_uses_microsecond_integers_and_one_document_per_message() {
    let msgs: Vec<Message> = (0..5).map(|i| Message::user(format!("m{i}"))).collect();
    let Some((store, _)) = common::store_holding("layout", &msgs).await else {
        return;
    };
    let docs = raw(&store, "messages").await;
    assert_eq!(docs.len(), 5);
    let mut seqs: Vec<i64> = docs.iter().map(|d| d.get_i64("seq").unwrap()).collect();
    seqs.sort_unstable();
    assert_eq!(
        seqs,
        vec![0, 1, 2, 3, 4],
        "one batch takes consecutive positions"
    );
    for d in &docs {
        let ts = d.get_i64("ts").unwrap();
        let m = msgs
            .iter()
            .find(|m| m.id == d.get_str("id").unwrap())
            .unwrap();
        assert_eq!(ts, m.timestamp.timestamp_micros());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_version_is_recorded_and_newer_is_refused() {
    let Some(store) = common::store().await else {
        return;
    };
    assert_eq!(store.schema_version().await.unwrap(), SCHEMA_VERSION);
    let meta = store
        .client()
        .database(store.database_name())
        .collection::<Document>("meta");

    // An older (here: absent) version is migrated forward on open.
    meta.delete_many(doc! {}).await.unwrap();
    let reopened = MongoStore::from_client(store.client().clone(), store.database_name())
        .await
        .unwrap();
    assert_eq!(reopened.schema_version().await.unwrap(), SCHEMA_VERSION);

    // A newer one is refused, and left as it is.
    meta.update_one(doc! {"_id": "schema"}, doc! {"$set": {"version": 99}})
        .await
        .unwrap();
    let err = MongoStore::from_client(store.client().clone(), store.database_name())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
    assert!(err.to_string().contains("99"), "{err}");
    assert_labelled(&err, Operation::Open);
    assert_eq!(store.schema_version().await.unwrap(), 99);

    // A malformed version document is corrupt data.
    meta.update_one(doc! {"_id": "schema"}, doc! {"$set": {"version": "one"}})
        .await
        .unwrap();
    assert_eq!(
        store.schema_version().await.unwrap_err().kind(),
        ErrorKind::CorruptData
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_scope_and_expiry_are_fields_of_their_own() {
    let Some(store) = common::store().await else {
        return;
    };
    let at = chrono::DateTime::from_timestamp_micros(4_102_444_800_000_001).unwrap();
    let scoped = MemoryItem::new(MemoryKind::Fact, "likes tea")
        .with_key("drink")
        .in_scope(MemoryScope::agent("alice").with_workspace("git-kyoto"))
        .expiring_at(at);
    let global = MemoryItem::new(MemoryKind::Fact, "likes coffee").with_key("drink");
    store.put_memory(&scoped).await.unwrap();
    store.put_memory(&global).await.unwrap();
    let docs = raw(&store, "memories").await;
    let find = |id: &MemoryId| {
        docs.iter()
            .find(|d| d.get_str("_id") == Ok(id.as_str()))
            .unwrap()
    };
    let d = find(&scoped.id);
    assert_eq!(
        d.get_str("scope").unwrap(),
        "agent:alice/workspace:git-kyoto"
    );
    assert_eq!(d.get_i64("expires").unwrap(), 4_102_444_800_000_001);
    let d = find(&global.id);
    assert_eq!(d.get_str("scope").unwrap(), "", "the global scope");
    assert!(d.get("expires").is_none(), "never expires");
    assert_eq!(store.get_memory(&scoped.id).await.unwrap(), Some(scoped));
}

/// A database of schema version 1 (items without `scope`, keys unique per `kind_key`) opened
/// by two processes at once: both migrate it, old items become global and never expire, and
/// a key can then be used in another scope.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_1_memories_migrate_to_the_global_scope() {
    let Some(store) = common::store().await else {
        return;
    };
    let db = store.client().database(store.database_name());
    let memories = db.collection::<Document>("memories");
    memories.drop_index("scope_kind_key").await.unwrap();
    let v1_index = IndexModel::builder()
        .keys(doc! {"kind_key": 1})
        .options(
            IndexOptions::builder()
                .name("kind_key".to_string())
                .unique(true)
                .sparse(true)
                .build(),
        )
        .build();
    memories.create_index(v1_index).await.unwrap();
    let t = 1_700_000_000_000_001i64;
    memories
        .insert_many([
            doc! {
                "_id": "old-keyed", "kind": "fact", "key": "name", "kind_key": "fact/name",
                "text": "The user's name is Ada", "created": t, "updated": t,
            },
            doc! {
                "_id": "old-plain", "kind": "insight", "text": "likes tea",
                "created": t, "updated": t,
            },
        ])
        .await
        .unwrap();
    db.collection::<Document>("meta")
        .update_one(doc! {"_id": "schema"}, doc! {"$set": {"version": 1}})
        .await
        .unwrap();

    let open = || MongoStore::from_client(store.client().clone(), store.database_name());
    let (first, second) = tokio::join!(open(), open());
    let reopened = first.unwrap();
    second.unwrap();
    assert_eq!(reopened.schema_version().await.unwrap(), SCHEMA_VERSION);
    let indexes = memories.list_index_names().await.unwrap();
    assert!(
        indexes.contains(&"scope_kind_key".to_string()),
        "{indexes:?}"
    );
    assert!(!indexes.contains(&"kind_key".to_string()), "{indexes:?}");
    for d in raw(&reopened, "memories").await {
        assert_eq!(d.get_str("scope").unwrap(), "", "{d:?}");
    }
    let old = reopened
        .get_memory(&MemoryId::new("old-keyed").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert!(old.scope.is_global());
    assert_eq!(old.expires_at, None);
    assert_eq!(old.created_at.timestamp_micros(), t);

    // The key is now unique per scope: alice gets an item of her own, and a global put
    // replaces the old item in place.
    let alice = reopened
        .put_memory(
            &MemoryItem::new(MemoryKind::Fact, "The user's name is Bob")
                .with_key("name")
                .in_scope(MemoryScope::agent("alice")),
        )
        .await
        .unwrap();
    assert_ne!(alice.id, old.id);
    let global = reopened
        .put_memory(&MemoryItem::new(MemoryKind::Fact, "The user's name is Eve").with_key("name"))
        .await
        .unwrap();
    assert_eq!(global.id, old.id);
    assert_eq!(global.created_at, old.created_at);
    let all = reopened
        .list_memories(&MemoryFilter::default())
        .await
        .unwrap();
    assert_eq!(all.len(), 3, "{all:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_stored_documents_are_corrupt_data() {
    let Some((store, s)) = common::store_holding("torn", &[Message::user("fine")]).await else {
        return;
    };
    let messages = store
        .client()
        .database(store.database_name())
        .collection::<Document>("messages");
    messages
        .update_many(doc! {}, doc! {"$set": {"role": 42}})
        .await
        .unwrap();
    let err = store.load(&s, None).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::CorruptData, "{err}");
    assert!(err.to_string().contains("role"), "{err}");
    // The layers label what the backend returns unlabelled.
    assert_labelled(&err, Operation::Load);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taken_position_is_a_conflict() {
    let Some((store, s)) = common::store_holding("taken", &[Message::user("first")]).await else {
        return;
    };
    let db = store.client().database(store.database_name());
    let session = db
        .collection::<Document>("sessions")
        .find_one(doc! {"_id": "taken"})
        .await
        .unwrap()
        .unwrap();
    // A foreign writer took the next position without reserving it.
    db.collection::<Document>("messages")
        .insert_one(doc! {
            "session": "taken", "epoch": session.get_str("epoch").unwrap(), "seq": 1i64,
            "id": "intruder", "role": "user", "content": "x", "ts": 0i64,
        })
        .await
        .unwrap();
    let err = store
        .append_one(&s, Message::user("second"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_documents_are_refused_before_anything_is_written() {
    let Some(store) = common::store().await else {
        return;
    };
    let s = sid("oversized");
    // Over MongoDB's 16 MiB document limit once encoded.
    let huge = "x".repeat(17 * 1024 * 1024);
    let batch = [Message::user("small"), Message::user(huge.clone())];
    let err = store.append(&s, &batch).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(err.to_string().contains("16 MiB"), "{err}");
    let err = store
        .save_session(&s, &batch, &Metadata::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    let mut meta = Metadata::new();
    meta.insert("blob".into(), json!(huge.clone()));
    let err = store
        .save_session(&s, &[Message::user("small")], &meta)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    let err = store
        .put_memory(&MemoryItem::new(MemoryKind::Fact, huge))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    // No session was created and no position reserved: nothing at all was written.
    assert!(store.load(&s, None).await.unwrap().is_none());
    for collection in ["sessions", "heads", "messages", "memories"] {
        assert_eq!(
            raw(&store, collection).await,
            Vec::<Document>::new(),
            "{collection}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_server_is_unavailable_promptly() {
    // Port 1 is never a MongoDB server; the short timeout keeps the test fast.
    let url =
        "mongodb://user:hunter2@127.0.0.1:1/x?directConnection=true&serverSelectionTimeoutMS=300";
    let err = MongoStore::connect(url).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(err.is_temporary());
    assert!(!err.to_string().contains("hunter2"), "{err}");
    let err = MongoStore::connect("mongodb://127.0.0.1:1/bad.name")
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_opens_the_database_named_in_the_url() {
    let url = common::url();
    // Build `…/<db>?…` from the test URL, which names no database.
    let db = agentmem_testkit::unique_namespace("conn");
    let (base, query) = url.split_once('?').unwrap_or((&url, ""));
    let with_db = format!("{}/{db}?{query}", base.trim_end_matches('/'));
    let store = match MongoStore::connect(&with_db).await {
        Ok(s) => s,
        Err(e) => return agentmem_testkit::service_unavailable("mongodb", &url, &e).unwrap_or(()),
    };
    assert_eq!(store.database_name(), db);
    assert_eq!(store.backend(), "mongodb");
    assert!(
        !format!("{store:?}").contains("127.0.0.1"),
        "Debug shows no URL"
    );
    store
        .append_one(&sid("x"), Message::user("hi"))
        .await
        .unwrap();
    assert_eq!(store.list_sessions().await.unwrap().len(), 1);
    store.drop_database().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn features_match_capabilities() {
    let Some(store) = common::store().await else {
        return;
    };
    let f = store.features();
    let caps = store.capabilities();
    assert_eq!(caps.atomic_compaction, f.transactions);
    assert_eq!(caps.indexed_search, f.text_search);
    assert!(caps.durable && caps.cross_process);
    assert_eq!(caps.native_expiry, f.ttl);
    // Turning a feature off sticks; turning on one the server lacks does not.
    let reopen = |allowed: ServerFeatures| {
        MongoStore::from_client_with(store.client().clone(), store.database_name(), allowed)
    };
    let mut off = f;
    off.transactions = false;
    let downgraded = reopen(off).await.unwrap();
    assert!(!downgraded.features().transactions);
    let mut on = f;
    on.text_search = true;
    on.transactions = true;
    assert_eq!(reopen(on).await.unwrap().features(), f);
}

#[tokio::test]
async fn the_registry_opens_mongodb_urls() {
    assert_eq!(<MongoConfig as BackendConfig>::INFO.name, "mongodb");
    let registry = Registry::new().with::<MongoConfig>();
    let srv = "mongodb+srv://cluster.example/db";
    for url in ["mongodb://h:27017/db", srv] {
        assert_eq!(registry.backend_for(url), Some("mongodb"), "{url}");
    }
    // Accepted and resolved through DNS: a name without SRV records is unavailable, not
    // unsupported.
    let unreachable = "mongodb://127.0.0.1:1/x?directConnection=true&serverSelectionTimeoutMS=200";
    for url in [srv, unreachable] {
        let err = registry.open(url).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unavailable, "{url}: {err}");
        if url == unreachable {
            assert_labelled(&err, Operation::Open);
        }
    }
}

/// Labels are stored as plain values (tags as `{k, v}` sub-documents, so `$`- and `.`-keys are
/// never field names); the expiry as microseconds (`expires`) and as a date rounded up to the
/// millisecond (`expires_at`, for the TTL indexes), which every document of the session carries
/// while the expiry is set and none after `persist`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn labels_and_expiry_layout() {
    use agentmem_core::SessionPatch;
    let labelled = [Message::user("a"), Message::user("b")];
    let Some((store, s)) = common::store_holding("labelled", &labelled).await else {
        return;
    };
    store
        .compact(&s, &[Message::system("summary")])
        .await
        .unwrap();
    let at = chrono::DateTime::from_timestamp_micros(4_102_444_800_123_456).unwrap();
    let patch = SessionPatch::default()
        .owner("$gt")
        .tag("$where", "1")
        .tag("a.b", "{\"$ne\": null}")
        .expire_at(at);
    let info = store.update_session(&s, &patch).await.unwrap();
    assert_eq!(info.expires_at, Some(at));
    store.append(&s, &[Message::user("c")]).await.unwrap();

    let sessions = raw(&store, "sessions").await;
    assert_eq!(sessions.len(), 1);
    let d = &sessions[0];
    let mut keys = Vec::new();
    all_keys(d, &mut keys);
    assert!(
        keys.iter().all(|k| !k.starts_with('$') && !k.contains('.')),
        "{keys:?}"
    );
    assert_eq!(d.get_str("owner").unwrap(), "$gt");
    let tags = d.get_array("tags").unwrap();
    assert_eq!(tags.len(), 2);
    assert_eq!(d.get_i64("expires").unwrap(), 4_102_444_800_123_456);
    let ttl = d.get_datetime("expires_at").unwrap().timestamp_millis();
    assert_eq!(ttl, 4_102_444_800_124, "rounded up to the millisecond");
    for coll in ["messages", "archived_messages", "heads"] {
        let docs = raw(&store, coll).await;
        assert!(!docs.is_empty(), "{coll}");
        for d in docs {
            assert_eq!(
                d.get_datetime("expires_at").unwrap().timestamp_millis(),
                ttl,
                "{coll}: {d:?}"
            );
        }
    }
    let loaded = store.load(&s, None).await.unwrap().unwrap();
    assert_eq!(loaded.expires_at, Some(at), "kept to the microsecond");
    assert_eq!(loaded.labels.tags["a.b"], "{\"$ne\": null}");

    store
        .update_session(&s, &SessionPatch::default().persist())
        .await
        .unwrap();
    for coll in ["sessions", "messages", "archived_messages", "heads"] {
        for d in raw(&store, coll).await {
            assert!(d.get("expires_at").is_none(), "{coll}: {d:?}");
            assert!(d.get("expires").is_none(), "{coll}: {d:?}");
        }
    }
}

/// A database of schema version 2 (sessions without labels or expiry) opens at the current
/// version and reads back: no labels, never expires, and can then be labelled and found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_2_sessions_migrate_without_labels() {
    use agentmem_core::{SessionPatch, SessionQuery};
    let written = [Message::user("from version 2")];
    let Some((store, s)) = common::store_holding("old_session", &written).await else {
        return;
    };
    let db = store.client().database(store.database_name());
    // Exactly the fields version 2 wrote, and its indexes.
    let sessions = db.collection::<Document>("sessions");
    for name in ["owner", "tags", "expires"] {
        sessions.drop_index(name).await.unwrap();
    }
    db.collection::<Document>("meta")
        .update_one(doc! {"_id": "schema"}, doc! {"$set": {"version": 2}})
        .await
        .unwrap();
    let d = sessions.find_one(doc! {}).await.unwrap().unwrap();
    let mut keys: Vec<&str> = d.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["_id", "created", "epoch", "next", "updated"]);

    let reopened = MongoStore::from_client(store.client().clone(), store.database_name())
        .await
        .unwrap();
    assert_eq!(reopened.schema_version().await.unwrap(), SCHEMA_VERSION);
    let names = sessions.list_index_names().await.unwrap();
    for name in ["owner", "tags", "expires"] {
        assert!(names.contains(&name.to_string()), "{names:?}");
    }
    let loaded = reopened.load(&s, None).await.unwrap().unwrap();
    assert!(loaded.labels.is_empty());
    assert_eq!(loaded.expires_at, None);
    assert_eq!(loaded.messages.len(), 1);
    reopened
        .update_session(&s, &SessionPatch::default().owner("ada"))
        .await
        .unwrap();
    let page = reopened
        .find_sessions(&SessionQuery::default().owner("ada"))
        .await
        .unwrap();
    assert_eq!(page.sessions.len(), 1);
}

/// A database of schema version 3 (no search terms) is migrated on open, by two processes at
/// once, in more than one batch: search then finds "I looked into adoption" for "adopting".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_3_messages_and_items_get_search_terms() {
    let Some(store) = common::store().await else {
        return;
    };
    common::schema_3_store_migrates_to_terms(&store, 1100).await;
}

/// Both test servers keep TTL indexes (SecantusDB sweeps every 60 s like `mongod`; nx-27017
/// deletes expired documents lazily as collections are read), so expiry is native on both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttl_indexes_are_detected() {
    for url in [common::url(), common::text_url()] {
        let Some(store) = common::fresh_store(&url).await else {
            continue;
        };
        let f = store.features();
        assert!(f.ttl, "{url}: {f:?}");
        assert!(store.capabilities().native_expiry);
        let mut off = ServerFeatures::ALL;
        off.ttl = false;
        let without =
            MongoStore::from_client_with(store.client().clone(), store.database_name(), off)
                .await
                .unwrap();
        assert!(!without.capabilities().native_expiry);
    }
}

/// The TTL indexes delete every document of an expired session, not only its session
/// document: on nx-27017 (`MONGODB_TEXT_URL`), which deletes expired documents as soon as a
/// collection is read, nothing of it is left at once; a TTL monitor (SecantusDB, `mongod`)
/// takes up to a minute, which the test waits for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_deletes_every_document_of_an_expired_session() {
    use agentmem_core::SessionPatch;
    let Some(store) = common::text_store().await else {
        return;
    };
    let (gone, kept) = (sid("gone"), sid("kept"));
    for s in [&gone, &kept] {
        store
            .append(s, &[Message::user("a"), Message::user("b")])
            .await
            .unwrap();
        store.compact(s, &[Message::system("sum")]).await.unwrap();
        store.append(s, &[Message::user("c")]).await.unwrap();
    }
    let past = agentmem_core::now() - chrono::Duration::seconds(5);
    let _ = store
        .update_session(&gone, &SessionPatch::default().expire_at(past))
        .await;
    // nx-27017 deletes at once; a TTL monitor (`mongod`, SecantusDB) within a minute.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(75);
    loop {
        let mut left = Vec::new();
        for coll in ["sessions", "messages", "archived_messages", "heads"] {
            let docs = raw(&store, coll).await;
            assert!(
                !docs.is_empty(),
                "{coll}: the live session's documents stay"
            );
            for d in docs {
                let owner = d.get_str("session").or_else(|_| d.get_str("_id")).unwrap();
                if owner != "kept" {
                    left.push((coll, d));
                }
            }
        }
        if left.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the server kept documents of the expired session: {left:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
}

/// `replace_archive`, with and without transactions, leaves exactly the archive's new
/// messages (stamped with the session's `expires_at`), the other archive and the session's
/// messages untouched, and no garbage (old messages, extra heads); readers racing with it
/// read the old archive or the new one, never a mix or an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replace_archive_layout_and_racing_readers() {
    use agentmem_core::SessionPatch;
    for transactions in [true, false] {
        let Some(store) = common::fresh_store_with(&common::url(), transactions).await else {
            return;
        };
        let s = sid("rekeyed");
        store
            .append(&s, &[Message::user("a"), Message::user("b")])
            .await
            .unwrap();
        let a1 = store.compact(&s, &[Message::system("one")]).await.unwrap();
        let a2 = store.compact(&s, &[Message::system("two")]).await.unwrap();
        store.append(&s, &[Message::user("c")]).await.unwrap();
        let current = store.load(&s, None).await.unwrap().unwrap().messages;
        let at = chrono::Utc::now() + chrono::Duration::days(1);
        store
            .update_session(&s, &SessionPatch::default().expire_at(at))
            .await
            .unwrap();

        let new = vec![Message::user("A"), Message::user("B"), Message::user("C")];
        let info = store.replace_archive(&s, &a1.id, &new).await.unwrap();
        assert_eq!((info.id.clone(), info.message_count), (a1.id.clone(), 3));
        let ttl = raw(&store, "sessions").await[0]
            .get_datetime("expires_at")
            .unwrap()
            .timestamp_millis();
        let archived = raw(&store, "archived_messages").await;
        assert_eq!(archived.len(), 3 + 1, "{transactions}: {archived:?}");
        for d in &archived {
            assert_eq!(
                d.get_datetime("expires_at").unwrap().timestamp_millis(),
                ttl,
                "{transactions}: {d:?}"
            );
        }
        assert_eq!(raw(&store, "heads").await.len(), 1, "{transactions}");
        assert_eq!(raw(&store, "messages").await.len(), 2, "{transactions}");
        assert_eq!(
            store.load(&s, None).await.unwrap().unwrap().messages,
            current
        );
        let other = store.load_archive(&s, &a2.id).await.unwrap();
        let contents: Vec<&str> = other.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(
            contents,
            ["one"],
            "{transactions}: the other archive is untouched"
        );

        let alt = vec![Message::user("x")];
        let writer = async {
            for i in 0..6 {
                let next = if i % 2 == 0 { &alt } else { &new };
                store.replace_archive(&s, &a1.id, next).await.unwrap();
            }
        };
        let reader = async {
            for _ in 0..30 {
                let read = store.load_archive(&s, &a1.id).await.unwrap().messages;
                assert!(
                    read == new || read == alt,
                    "{transactions}: a mix: {read:?}"
                );
            }
        };
        tokio::join!(writer, reader);
        assert_eq!(raw(&store, "archived_messages").await.len(), 3 + 1);
    }
}
