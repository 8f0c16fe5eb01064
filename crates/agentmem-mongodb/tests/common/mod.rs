//! Shared test setup: one driver client per server URL for the whole test process, and a
//! fresh database per test, dropped when the test drops its store (an
//! `agentmem_testkit::TestStore`).
//!
//! The test servers are slow with many concurrent clients, so tests share one `Client`.
//! A client's background tasks (server monitors, pool workers) live on the runtime that
//! created it, and every `#[tokio::test]` has its own runtime that ends with the test, so the
//! shared clients are created on a process-wide runtime of their own.
#![allow(
    dead_code,
    reason = "shared by several test binaries, each using part of it"
)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use agentmem_core::{ErrorKind, Layered, Message, Result, SessionId, SessionStore};
use agentmem_mongodb::mongodb::bson::{doc, Document};
use agentmem_mongodb::mongodb::Client;
use agentmem_mongodb::{MongoConfig, MongoStore, ServerFeatures};
use agentmem_testkit::TestStore;

/// The server with transactions and no text indexes (SecantusDB in CI).
pub const DEFAULT_URL: &str = "mongodb://127.0.0.1:27017/?directConnection=true";
/// The server with `$text` (nx-27017 in CI).
pub const DEFAULT_TEXT_URL: &str = "mongodb://127.0.0.1:27018/?directConnection=true";

pub fn url() -> String {
    agentmem_testkit::env_url("MONGODB_URL", DEFAULT_URL)
}

pub fn text_url() -> String {
    agentmem_testkit::env_url("MONGODB_TEXT_URL", DEFAULT_TEXT_URL)
}

fn driver_runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("mongo-test-driver")
            .enable_all()
            .build()
            .expect("test driver runtime")
    })
}

/// The process-wide client for `url`, with a modest pool.
pub async fn shared_client(url: &str) -> Result<Client> {
    static CLIENTS: OnceLock<Mutex<HashMap<String, Client>>> = OnceLock::new();
    let clients = CLIENTS.get_or_init(Default::default);
    if let Some(client) = clients.lock().unwrap().get(url) {
        return Ok(client.clone());
    }
    let mut options = MongoConfig::new(url)?.client_options().await?;
    options.max_pool_size = Some(8);
    let client = {
        let _guard = driver_runtime().enter();
        Client::with_options(options).map_err(|e| agentmem_core::Error::backend(e.to_string()))?
    };
    Ok(clients
        .lock()
        .unwrap()
        .entry(url.to_string())
        .or_insert(client)
        .clone())
}

/// A fresh store in a database of its own on the server at `url`, or `None` (skipped) when
/// the server is unreachable and services are not required. The database is dropped when the
/// test drops the store.
pub async fn fresh_store(url: &str) -> Option<TestStore<Layered<MongoStore>>> {
    open_store(url, ServerFeatures::ALL).await
}

/// [`fresh_store`] on the server at [`url`].
pub async fn store() -> Option<TestStore<Layered<MongoStore>>> {
    fresh_store(&url()).await
}

/// [`fresh_store`] on the text server at [`text_url`].
pub async fn text_store() -> Option<TestStore<Layered<MongoStore>>> {
    fresh_store(&text_url()).await
}

/// [`store`] holding the session `id` with `messages` appended, and that session's id; `None`
/// (skipped) without a server.
pub async fn store_holding(
    id: &str, messages: &[Message],
) -> Option<(TestStore<Layered<MongoStore>>, SessionId)> {
    holding(store().await?, id, messages).await
}

/// [`text_store`] holding the session `id` with `messages` appended, and that session's id;
/// `None` (skipped) without a server.
pub async fn text_store_holding(
    id: &str, messages: &[Message],
) -> Option<(TestStore<Layered<MongoStore>>, SessionId)> {
    holding(text_store().await?, id, messages).await
}

async fn holding(
    store: TestStore<Layered<MongoStore>>, id: &str, messages: &[Message],
) -> Option<(TestStore<Layered<MongoStore>>, SessionId)> {
    let id: SessionId = id.parse().unwrap();
    store.append(&id, messages).await.unwrap();
    Some((store, id))
}

/// Like [`fresh_store`], with transactions turned off when `transactions` is false (the
/// epoch-switch paths of servers without them).
pub async fn fresh_store_with(
    url: &str, transactions: bool,
) -> Option<TestStore<Layered<MongoStore>>> {
    let mut allowed = ServerFeatures::ALL;
    allowed.transactions = transactions;
    open_store(url, allowed).await
}

async fn open_store(url: &str, allowed: ServerFeatures) -> Option<TestStore<Layered<MongoStore>>> {
    let client = match shared_client(url).await {
        Ok(c) => c,
        Err(e) => return agentmem_testkit::service_unavailable("mongodb", url, &e),
    };
    let db = agentmem_testkit::unique_namespace("am");
    match MongoStore::from_client_with(client, &db, allowed).await {
        Ok(store) => {
            let store = Arc::new(store);
            let dropped = Arc::clone(&store);
            // On the driver runtime, where the shared client's tasks live (the guard runs the
            // cleanup on a runtime of its own and waits for it).
            Some(
                TestStore::from_arc(store).on_drop(format!("mongodb database {db}"), move || {
                    let store = Arc::clone(&dropped);
                    let task = driver_runtime().spawn(async move { store.drop_database().await });
                    async move {
                        task.await
                            .map_err(|e| e.to_string())?
                            .map_err(|e| e.to_string())
                    }
                }),
            )
        }
        Err(e) if e.kind() == ErrorKind::Unavailable => {
            agentmem_testkit::service_unavailable("mongodb", url, &e)
        }
        Err(e) => panic!("opening a MongoDB store failed: {e}"),
    }
}

/// Every document of `collection` in `store`'s database, as stored.
pub async fn raw(store: &MongoStore, collection: &str) -> Vec<Document> {
    raw_matching(store, collection, doc! {}).await
}

/// The documents of `collection` in `store`'s database that match `filter`, as stored.
pub async fn raw_matching(store: &MongoStore, collection: &str, filter: Document) -> Vec<Document> {
    use futures_util::TryStreamExt;
    store
        .client()
        .database(store.database_name())
        .collection::<Document>(collection)
        .find(filter)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap()
}

/// `n` more handles on `store`'s database, each with a driver client (and pool) of its own,
/// as separate processes would have.
pub async fn handles(store: &MongoStore, n: usize) -> Vec<Layered<MongoStore>> {
    let mut handles = Vec::with_capacity(n);
    for _ in 0..n {
        let options = MongoConfig::new(&url())
            .unwrap()
            .client_options()
            .await
            .unwrap();
        let client = Client::with_options(options).unwrap();
        handles.push(
            MongoStore::from_client(client, store.database_name())
                .await
                .unwrap(),
        );
    }
    handles
}

/// Makes the calls `call(c, i, client)`, for `i` in `0..n`, on each client `c` of three more
/// clients of `store`'s database (see [`handles`]), every call at once; their answers, client
/// by client.
pub async fn on_three_clients_at_once<T, F, Fut>(store: &MongoStore, n: u32, call: F) -> Vec<T>
where
    F: Fn(usize, u32, Layered<MongoStore>) -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let clients = handles(store, 3).await;
    let calls = clients
        .iter()
        .enumerate()
        .flat_map(|(c, client)| (0..n).map(move |i| (c, i, client.clone())))
        .map(|(c, i, client)| call(c, i, client));
    futures_util::future::join_all(calls).await
}

/// The conformance factory on `MONGODB_URL`.
pub async fn conformance_store() -> Option<TestStore> {
    fresh_store(&url()).await.map(TestStore::into_dyn)
}

/// The conformance factory on `MONGODB_URL` with transactions turned off, so compaction and
/// `save_session` take the epoch-switch path of servers without transactions.
pub async fn no_transaction_store() -> Option<TestStore> {
    let mut allowed = ServerFeatures::ALL;
    allowed.transactions = false;
    open_store(&url(), allowed).await.map(TestStore::into_dyn)
}

/// The conformance factory on `MONGODB_TEXT_URL`.
pub async fn text_conformance_store() -> Option<TestStore> {
    fresh_store(&text_url()).await.map(TestStore::into_dyn)
}

/// What [`schema_3_store_migrates_to_terms`] writes: the message it searches for, its terms
/// as stored, and a query that finds it only through stemming.
pub const ADOPTION: &str = "I looked into adoption";
pub const ADOPTION_TERMS: &str = "i look into adopt";
pub const STEMMED_QUERY: &str = "adopting";

/// Writes `filler` messages and then [`ADOPTION`] into `store` (a fresh store at the current
/// version), a compacted session and a memory item, turns the database back into one of
/// schema version 3 (no `terms`, the old text indexes where the server has text indexes,
/// version 3 recorded), opens it twice at once, and checks that the migration gave every
/// searchable document its terms and that search then finds by stem.
pub async fn schema_3_store_migrates_to_terms(store: &MongoStore, filler: usize) {
    use agentmem_core::{AgentMemoryExt, MemoryItem, MemoryKind, MemoryStore};
    use agentmem_mongodb::mongodb::options::IndexOptions;
    use agentmem_mongodb::mongodb::IndexModel;
    use agentmem_mongodb::SCHEMA_VERSION;
    use agentmem_testkit::probe::{memory_hits, message_hits};

    let s: SessionId = "old".parse().unwrap();
    let mut messages: Vec<Message> = (0..filler)
        .map(|i| Message::user(format!("filler message number {i}")))
        .collect();
    messages.push(Message::user(ADOPTION));
    store.append(&s, &messages).await.unwrap();
    let compacted: SessionId = "compacted".parse().unwrap();
    store
        .append_one(&compacted, Message::user("adoption papers"))
        .await
        .unwrap();
    store
        .compact(&compacted, &[Message::system("summary: adopted a cat")])
        .await
        .unwrap();
    store
        .put_memory(&MemoryItem::new(
            MemoryKind::Fact,
            "Adoption is on the agenda",
        ))
        .await
        .unwrap();

    // Back to version 3: no terms, and the text indexes over the raw fields.
    let db = store.client().database(store.database_name());
    for (coll, field, old) in [
        ("messages", "content", "content_text"),
        ("memories", "text", "text_text"),
    ] {
        let c = db.collection::<Document>(coll);
        c.update_many(doc! {}, doc! {"$unset": {"terms": ""}})
            .await
            .unwrap();
        // Only where the server has text indexes (a collection holds at most one).
        if store.features().text_search {
            c.drop_index("terms_text").await.unwrap();
            let options = IndexOptions::builder()
                .name(old.to_string())
                .default_language("none".to_string())
                .build();
            let index = IndexModel::builder()
                .keys(doc! {field: "text"})
                .options(options)
                .build();
            c.create_index(index).await.unwrap();
        }
    }
    db.collection::<Document>("meta")
        .update_one(doc! {"_id": "schema"}, doc! {"$set": {"version": 3}})
        .await
        .unwrap();
    for coll in ["messages", "memories"] {
        let with = raw_matching(store, coll, doc! {"terms": {"$exists": true}}).await;
        assert!(with.is_empty(), "{coll}: {with:?}");
    }
    // Written at version 3, nothing is found by stem.
    assert!(message_hits(store, STEMMED_QUERY).await.is_empty());

    let open = || MongoStore::from_client(store.client().clone(), store.database_name());
    let (first, second) = tokio::join!(open(), open());
    let reopened = first.unwrap();
    second.unwrap();
    assert_eq!(reopened.schema_version().await.unwrap(), SCHEMA_VERSION);
    assert_eq!(reopened.features(), store.features());
    for coll in ["messages", "memories"] {
        let docs = raw(store, coll).await;
        assert!(!docs.is_empty(), "{coll}");
        for d in &docs {
            assert!(d.get_str("terms").is_ok(), "{coll}: {d:?}");
        }
        let names = db
            .collection::<Document>(coll)
            .list_index_names()
            .await
            .unwrap();
        assert!(
            !names
                .iter()
                .any(|n| n == "content_text" || n == "text_text"),
            "{coll}: {names:?}"
        );
    }
    let found = raw_matching(store, "messages", doc! {"content": ADOPTION}).await;
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].get_str("terms").unwrap(), ADOPTION_TERMS);
    // No search reads archived messages: they carry no terms.
    let archived = raw(store, "archived_messages").await;
    assert_eq!(archived.len(), 1);
    assert!(archived[0].get("terms").is_none(), "{archived:?}");

    let hits = message_hits(&reopened, STEMMED_QUERY).await;
    let mut texts: Vec<&str> = hits.iter().map(|h| h.message.content.as_str()).collect();
    texts.sort_unstable();
    assert_eq!(texts, [ADOPTION, "summary: adopted a cat"]);
    let hits = memory_hits(&reopened, STEMMED_QUERY).await;
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].item.text, "Adoption is on the agenda");
    // Written after the migration, found by stem too.
    reopened
        .append_one(&s, Message::assistant("They adopt often."))
        .await
        .unwrap();
    assert_eq!(message_hits(&reopened, "adoptions").await.len(), 3);
}
