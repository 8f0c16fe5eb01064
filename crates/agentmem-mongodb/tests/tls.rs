//! MongoDB over TLS: `MONGODB_TLS_URL` (default
//! `mongodb://127.0.0.1:27019/?tls=true&directConnection=true`), each test in a database of
//! its own. In CI that is SecantusDB behind a TLS proxy (stunnel, `.ci/mongo-servers.sh`) with
//! a server certificate from a private CA that the URL names with `tlsCAFile`; with
//! compose.yaml, mongod itself in `requireTLS` mode.
//!
//! A store works over TLS (sessions, search, memory items, checkpoints); the port takes TLS only (a client
//! without `tls=true` fails, it does not hang); a server certificate from another CA is
//! refused; and a `tlsCAFile` that cannot be read is the caller's mistake, named.
use agentmem_core::{
    AgentMemoryExt, CheckpointKey, CheckpointNs, CheckpointStore, ErrorKind, Layered, MemoryFilter,
    MemoryItem, MemoryKind, MemoryStore, Message, MessageQuery, PendingWrite, SessionId,
    SessionStore, TypedBytes,
};
use agentmem_mongodb::mongodb::options::Tls;
use agentmem_mongodb::{MongoConfig, MongoStore};
use agentmem_testkit::fixtures::{checkpoint_with_blob, latest_checkpoint};
use agentmem_testkit::ServerNamespace;

const SERVICE: &str = "mongodb (TLS)";

/// A store in a fresh database on the TLS server and the namespace that drops the database,
/// or `None` (skipped; a failure when services are required) when the server cannot be
/// reached. The URL must turn TLS on: a plaintext URL here would test nothing.
async fn tls_store() -> Option<(Layered<MongoStore>, ServerNamespace)> {
    let namespace = ServerNamespace::mongodb_tls("tls");
    let options = MongoConfig::new(namespace.url())
        .unwrap()
        .client_options()
        .await
        .unwrap();
    assert!(
        matches!(options.tls, Some(Tls::Enabled(_))),
        "MONGODB_TLS_URL must turn TLS on (tls=true)"
    );
    match MongoStore::connect(namespace.url()).await {
        Ok(store) => Some((store, namespace)),
        Err(e) => agentmem_testkit::service_unavailable(SERVICE, namespace.url(), &e),
    }
}

/// `url` with query option `key` removed, then, when `value` is given, set to it.
fn with_option(url: &str, key: &str, value: Option<&str>) -> String {
    let mut parsed = url::Url::parse(url).unwrap();
    let kept: Vec<(String, String)> = parsed
        .query_pairs()
        .filter(|(k, _)| !k.eq_ignore_ascii_case(key))
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    {
        let mut query = parsed.query_pairs_mut();
        query.clear();
        for (k, v) in &kept {
            query.append_pair(k, v);
        }
        if let Some(value) = value {
            query.append_pair(key, value);
        }
    }
    parsed.to_string()
}

/// Connecting to `url`, which must fail `Unavailable` (the server is there, but no MongoDB
/// conversation can happen with it); the error chain. Server selection gives up after 2 s
/// instead of 5: a bound on the wait, not a measure.
async fn refused(url: &str) -> String {
    let url = with_option(url, "serverSelectionTimeoutMS", Some("2000"));
    let err = MongoStore::connect(&url)
        .await
        .expect_err("the connection must be refused");
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert_eq!(err.backend_name(), Some("mongodb"), "{err}");
    agentmem_testkit::error_chain(&err)
}

/// Sessions, search and memory items over TLS: what is written is read back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_works_over_tls() {
    let Some((store, _namespace)) = tls_store().await else {
        return;
    };
    let id: SessionId = "over tls".parse().unwrap();
    let messages = [
        Message::user("compare bigquery and alloydb"),
        Message::assistant("alloydb is postgres compatible"),
    ];
    store.append(&id, &messages).await.unwrap();
    store
        .append_one(&id, Message::user("and spanner?"))
        .await
        .unwrap();
    let loaded = store.load(&id, None).await.unwrap().unwrap();
    assert_eq!(loaded.messages.len(), 3);
    assert_eq!(loaded.messages[..2], messages);
    let hits = store
        .search_messages("alloydb postgres", &MessageQuery::default())
        .await
        .unwrap();
    assert!(!hits.is_empty(), "no hit over TLS");
    assert!(hits[0].message.content.contains("alloydb"), "{hits:?}");

    let item = store
        .put_memory(&MemoryItem::new(MemoryKind::Fact, "the link is encrypted").with_key("tls"))
        .await
        .unwrap();
    let items = store.list_memories(&MemoryFilter::default()).await.unwrap();
    assert_eq!(items, vec![item.clone()]);
    assert_eq!(store.get_memory(&item.id).await.unwrap(), Some(item));
    assert_eq!(store.list_sessions().await.unwrap().len(), 1);
}

/// A client trusting another CA refuses the server's certificate: the store does not open
/// (`Unavailable`: the handshake fails on every try), and nothing falls back to plaintext.
/// Checkpoints over TLS: a checkpoint with its channel value and pending write is read back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_work_over_tls() {
    let Some((store, _namespace)) = tls_store().await else {
        return;
    };
    let at = CheckpointKey {
        thread: "over tls".parse().unwrap(),
        ns: CheckpointNs::root(),
        id: "1ef0".parse().unwrap(),
    };
    let (checkpoint, value) = checkpoint_with_blob(
        at.clone(),
        TypedBytes::new("msgpack", vec![0, 255]),
        "messages",
        "1",
        Some(TypedBytes::new("json", b"[]".to_vec())),
    );
    store
        .put_checkpoint(&checkpoint, std::slice::from_ref(&value))
        .await
        .unwrap();
    let write = PendingWrite {
        task_id: "task".into(),
        idx: 0,
        channel: "messages".into(),
        value: TypedBytes::new("json", b"1".to_vec()),
        task_path: String::new(),
    };
    store
        .put_writes(&at, std::slice::from_ref(&write))
        .await
        .unwrap();
    let got = latest_checkpoint(&store, &at).await.unwrap();
    assert_eq!(got.checkpoint, checkpoint);
    assert_eq!(got.blobs, vec![value]);
    assert_eq!(got.writes, vec![write]);
    assert!(store.delete_thread(&at.thread).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_certificate_from_another_ca_is_refused() {
    let Some((_, namespace)) = tls_store().await else {
        return;
    };
    let other = agentmem_testkit::servers::other_ca_file();
    let url = with_option(
        namespace.url(),
        "tlsCAFile",
        Some(&other.display().to_string()),
    );
    let why = refused(&url).await;
    assert!(why.contains("TLS handshake"), "{why}");
    assert!(why.contains("UnknownIssuer"), "{why}");
}

/// The TLS port speaks TLS only: a client without `tls=true` gets no answer it can read and
/// fails `Unavailable` once server selection gives up; it does not hang.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plaintext_to_the_tls_port_fails() {
    let Some((_, namespace)) = tls_store().await else {
        return;
    };
    let url = with_option(namespace.url(), "tls", None);
    let url = with_option(&url, "tlsCAFile", None);
    let why = refused(&url).await;
    assert!(why.contains("MongoDB server unavailable"), "{why}");
}

/// A `tlsCAFile` that cannot be read is the caller's mistake, named with the option and the
/// path, before any connection is tried.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_ca_file_is_invalid_input() {
    let url = agentmem_testkit::servers::mongodb_tls_url();
    let missing = std::env::temp_dir().join(agentmem_testkit::unique_namespace("no_ca"));
    let missing = missing.join("ca.pem").display().to_string();
    let url = with_option(&url, "tlsCAFile", Some(&missing));
    let err = MongoStore::connect(&url).await.expect_err("no CA file");
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(err.to_string().contains("tlsCAFile"), "{err}");
    assert!(err.to_string().contains(&missing), "{err}");
    assert_eq!(err.backend_name(), Some("mongodb"), "{err}");
}
