//! Every store operation runs in one `agentmem.op` span with the same fields on every backend
//! (backend, op, session, messages, duration, outcome), and neither spans nor events carry
//! message text, memory text, queries or passwords.
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use agentmem::{
    AgentMemory, AgentMemoryExt, MemoryFilter, MemoryKind, MemoryStore, Message, SessionStore,
};
use agentmem::{Operation, RetentionPolicy, SessionId};
mod common;

use agentmem_testkit::probe::{memory_hits, message_hits};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

type Fields = BTreeMap<String, String>;

/// What the capturing layer saw: closed spans with their fields, and every event's fields.
#[derive(Default, Clone)]
struct Captured {
    spans: Arc<Mutex<Vec<(String, Fields)>>>,
    events: Arc<Mutex<Vec<Fields>>>,
}

struct FieldsVisitor<'a>(&'a mut Fields);

impl Visit for FieldsVisitor<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name().to_string(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
}

struct SpanFields(Fields);

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Captured {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Fields::new();
        attrs.record(&mut FieldsVisitor(&mut fields));
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(SpanFields(fields));
        }
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            if let Some(fields) = span.extensions_mut().get_mut::<SpanFields>() {
                values.record(&mut FieldsVisitor(&mut fields.0));
            }
        }
    }
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut fields = Fields::new();
        event.record(&mut FieldsVisitor(&mut fields));
        self.events.lock().expect("lock").push(fields);
    }
    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(&id) {
            let fields = span
                .extensions()
                .get::<SpanFields>()
                .map(|f| f.0.clone())
                .unwrap_or_default();
            self.spans
                .lock()
                .expect("lock")
                .push((span.name().to_string(), fields));
        }
    }
}

const SECRET_TEXT: &str = "zebra-confidential-9431";

/// Runs every trait operation on `store` and checks the spans they left.
async fn check_spans(store: Arc<dyn AgentMemory>, captured: &Captured, secrets: &[&str]) {
    let backend = store.backend().name;
    let session = SessionId::new("traced-session").expect("valid id");
    let mut history = vec![
        Message::user(format!("remember {SECRET_TEXT}")),
        Message::assistant("noted"),
    ];
    store.append(&session, &history).await.expect("append");
    history.push(Message::user("more"));
    store
        .save_session(&session, &history, &Default::default())
        .await
        .expect("save");
    let loaded = store.load(&session, Some(2)).await.expect("load");
    assert_eq!(loaded.map(|s| s.messages.len()), Some(2));
    store.list_sessions().await.expect("list");
    let archive = store
        .compact(&session, &[Message::system("summary")])
        .await
        .expect("compact");
    store.list_archives(&session).await.expect("archives");
    store
        .load_archive(&session, &archive.id)
        .await
        .expect("archive");
    let item = store
        .store_memory(MemoryKind::Fact, &format!("fact {SECRET_TEXT}"))
        .await
        .expect("put");
    store.get_memory(&item.id).await.expect("get");
    store
        .list_memories(&MemoryFilter::default())
        .await
        .expect("list memories");
    memory_hits(&*store, SECRET_TEXT).await;
    message_hits(&*store, SECRET_TEXT).await;
    store.delete_memory(&item.id).await.expect("delete memory");
    store
        .purge(&RetentionPolicy::default())
        .await
        .expect("purge");
    store.schema_version().await.expect("schema");
    let missing = SessionId::new("traced-missing").expect("valid id");
    let error = store
        .compact(&missing, &[])
        .await
        .expect_err("compacting a missing session fails");
    assert_eq!(error.backend_name(), Some(backend), "{error}");
    assert_eq!(error.operation(), Some(Operation::Compact), "{error}");
    store.delete_session(&session).await.expect("delete");
    agentmem_testkit::empty_store(store.as_ref())
        .await
        .expect("remove the test's data");

    let spans = captured.spans.lock().expect("lock").clone();
    let ops: Vec<&Fields> = spans
        .iter()
        .filter(|(name, f)| {
            name == "agentmem.op" && f.get("backend").map(String::as_str) == Some(backend)
        })
        .map(|(_, f)| f)
        .collect();
    let find = |op: &str| -> &Fields {
        ops.iter()
            .rev()
            .find(|f| f.get("op").map(String::as_str) == Some(op))
            .unwrap_or_else(|| panic!("no `{op}` span for {backend}: {ops:#?}"))
    };
    for op in [
        "append",
        "save_session",
        "load",
        "list_sessions",
        "compact",
        "list_archives",
        "load_archive",
        "put_memory",
        "get_memory",
        "list_memories",
        "search_memories",
        "search_messages",
        "delete_memory",
        "purge",
        "schema_version",
        "delete_session",
    ] {
        let fields = find(op);
        assert!(fields.contains_key("duration_us"), "{op}: {fields:?}");
        assert!(fields.contains_key("outcome"), "{op}: {fields:?}");
    }
    let append = find("append");
    assert_eq!(append["session"], "traced-session");
    assert_eq!(append["messages"], "2");
    assert_eq!(append["outcome"], "ok");
    assert_eq!(find("save_session")["messages"], "3");
    assert_eq!(find("load")["messages"], "2", "messages read back");
    let failed = ops
        .iter()
        .find(|f| f.get("session").map(String::as_str) == Some("traced-missing"))
        .expect("a span for the failed compaction");
    assert_eq!(failed["outcome"], "not found");

    let events = captured.events.lock().expect("lock").clone();
    let everything = format!("{spans:?} {events:?}");
    for secret in std::iter::once(SECRET_TEXT).chain(secrets.iter().copied()) {
        assert!(
            !everything.contains(secret),
            "{backend}: `{secret}` leaked into tracing output"
        );
    }
}

/// Runs `check` with the capturing subscriber as this thread's default (tests run on a
/// current-thread runtime, so every span of the test is created on this thread).
async fn traced<F, Fut>(check: F)
where
    F: FnOnce(Captured) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let captured = Captured::default();
    let subscriber = tracing_subscriber::registry().with(captured.clone());
    let _default = tracing::subscriber::set_default(subscriber);
    check(captured).await;
}

#[tokio::test]
async fn in_memory_store() {
    traced(|captured| async move {
        check_spans(Arc::new(agentmem::InMemoryStore::new()), &captured, &[]).await;
    })
    .await;
}

/// Checks the spans of the store at the URL that `url_in` gives for a new temporary folder.
#[cfg(any(feature = "file", feature = "sqlite"))]
async fn check_local_store(url_in: fn(&std::path::Path) -> String) {
    traced(|captured| async move {
        let dir = tempfile::tempdir().expect("temporary folder");
        let url = url_in(dir.path());
        // The standard stack alone: the no-key layer `open` adds with feature `encryption`
        // makes reads of its own, whose spans these checks would find.
        let store = agentmem::open_unguarded(&url)
            .await
            .unwrap_or_else(|e| panic!("open {url}: {e}"));
        check_spans(store, &captured, &[]).await;
    })
    .await;
}

/// Checks the spans of the `service` store in `namespace`, when its server is reachable.
#[cfg(any(feature = "redis", feature = "mongodb"))]
async fn check_server_store(service: &str, namespace: common::ServerNamespace) {
    traced(|captured| async move {
        if let Some(store) = common::open_fresh(service, namespace).await {
            check_spans(store.arc(), &captured, &[]).await;
        }
    })
    .await;
}

#[cfg(feature = "file")]
#[tokio::test]
async fn file_backend() {
    check_local_store(|dir| format!("file://{}?durability=buffered", dir.display())).await;
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn sqlite_backend() {
    check_local_store(|dir| format!("sqlite://{}", dir.join("traced.db").display())).await;
}

#[cfg(feature = "redis")]
#[tokio::test]
async fn redis_backend() {
    check_server_store("redis", common::ServerNamespace::redis("traced")).await;
}

/// With a password in the URL (trust authentication ignores it), the password appears in no
/// span, no event and not in the store's `Debug`.
#[cfg(feature = "postgres")]
#[tokio::test]
async fn postgres_backend() {
    traced(|captured| async move {
        let namespace = common::ServerNamespace::postgres("traced");
        let mut url = url::Url::parse(namespace.url()).expect("a valid PostgreSQL URL");
        let password = "hunter2-secret-pw";
        if url.password().is_none() {
            url.set_password(Some(password)).expect("set a password");
        }
        let secret = url.password().unwrap_or(password).to_string();
        let url = url.to_string();
        match agentmem::open_unguarded(&url).await {
            Ok(store) => {
                assert!(!format!("{store:?}").contains(&secret), "{store:?}");
                check_spans(store, &captured, &[&secret]).await;
            }
            Err(e) => {
                assert!(!e.to_string().contains(&secret), "{e}");
                agentmem_testkit::service_unavailable::<()>("postgres", &url, &e);
            }
        }
    })
    .await;
}

#[cfg(feature = "mongodb")]
#[tokio::test]
async fn mongodb_backend() {
    check_server_store("mongodb", common::ServerNamespace::mongodb("traced")).await;
}
