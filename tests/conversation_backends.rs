//! The conversation engine (A4–A6) on every backend compiled in, opened through
//! `agentmem::open(url)`: write-through, preload after a restart, compaction, concurrent adds.
//! Server backends read `REDIS_URL`, `DATABASE_URL` and `MONGODB_URL` and skip only when
//! `AGENTMEM_REQUIRE_SERVICES` is unset.
use std::sync::Arc;

use agentmem::conversation::Conversation;
use agentmem::{AgentMemory, AgentMemoryExt, Role, SessionId, SessionStore};
mod common;

const PRELOAD_HEAD: &str = "[Persistent Memory — MEMORY.md]\nThe following is this conversation's persistent memory from prior sessions. Use it to continue context coherently.\n\n";
const SUMMARY_HEAD: &str = "[Compressed Memory Summary]\nThe following is a compressed summary of earlier conversation turns, replacing the raw transcript to stay within the context window.\n\n";

async fn conversation(store: &Arc<dyn AgentMemory>) -> Conversation {
    Conversation::builder("ResearchAgent".parse().expect("valid agent name"))
        .system_prompt("You are a research assistant.")
        .rules("Be concise.")
        .persistent(true)
        .store(store.clone())
        .build()
        .await
        .expect("build a persistent conversation")
}

/// One backend through the whole life of a persistent agent.
async fn agent_lifecycle(store: Arc<dyn AgentMemory>) {
    let session = SessionId::new("ResearchAgent").expect("valid session id");

    // Write-through: every add reaches the store at once; the static prompt never does.
    let first = conversation(&store).await;
    assert!(first.preloaded().is_none(), "nothing stored yet");
    first
        .add(Role::User, "We prefer GCP for latency.")
        .await
        .expect("add");
    first
        .add_agent_reply("Noted: GCP, low latency.")
        .await
        .expect("reply");
    let stored = store.messages(&session).await.expect("load");
    assert_eq!(
        stored
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>(),
        ["We prefer GCP for latency.", "Noted: GCP, low latency."]
    );
    drop(first);

    // Preload: a restarted agent sees the stored memory as one system message after the
    // system prompt and rules, and does not write it back.
    let second = conversation(&store).await;
    let preload = second.preloaded().expect("memory preloaded").text.clone();
    assert!(preload.starts_with(PRELOAD_HEAD), "{preload}");
    assert!(preload.contains("### User — ") && preload.contains("We prefer GCP for latency."));
    let messages = second.messages();
    assert_eq!(messages[0].role, Role::System);
    assert_eq!(messages[2].content, preload);
    assert_eq!(store.messages(&session).await.expect("load").len(), 2);

    // Compaction: the transcript moves to an archive and the summary replaces it.
    let done = second
        .compact("The user prefers GCP.")
        .await
        .expect("compact");
    let archive = done.archive.expect("the transcript was archived");
    assert_eq!(archive.message_count, 2);
    let archived = store
        .load_archive(&session, &archive.id)
        .await
        .expect("archive");
    assert_eq!(archived.messages, stored);
    let after = store.messages(&session).await.expect("load");
    assert_eq!(after.len(), 1);
    assert_eq!(
        after[0].content,
        format!("{SUMMARY_HEAD}The user prefers GCP.")
    );
    drop(second);

    // After a restart the summary, not the raw transcript, is what loads.
    let third = Arc::new(conversation(&store).await);
    let preload = third.preloaded().expect("summary preloaded").text.clone();
    assert!(preload.contains("The user prefers GCP."));
    assert!(!preload.contains("Noted: GCP, low latency."));

    // Concurrent adds from several tasks: one order, the same in memory and in the store.
    let tasks: Vec<_> = (0..4)
        .map(|t| {
            let convo = third.clone();
            tokio::spawn(async move {
                for i in 0..10 {
                    convo
                        .add(Role::User, format!("task {t} message {i}"))
                        .await
                        .expect("concurrent add");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("task");
    }
    // In memory the adds follow system prompt, rules and the preload; in the store, the summary.
    let added = |contents: Vec<String>| -> Vec<String> {
        contents
            .into_iter()
            .filter(|c| c.starts_with("task "))
            .collect()
    };
    let in_memory = added(third.messages().into_iter().map(|m| m.content).collect());
    let stored = store.messages(&session).await.expect("load");
    assert_eq!(stored.len(), 41, "the summary and 40 adds");
    let in_store = added(stored.into_iter().map(|m| m.content).collect());
    assert_eq!(in_store.len(), 40);
    assert_eq!(in_memory, in_store);
    agentmem_testkit::empty_store(store.as_ref())
        .await
        .expect("remove the test's data");
}

#[cfg(feature = "file")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn file_backend() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let url = format!("file://{}?durability=buffered", dir.path().display());
    agent_lifecycle(common::open("file", &url).await.expect("file store")).await;
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_backend() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let url = format!("sqlite://{}", dir.path().join("agent.db").display());
    agent_lifecycle(common::open("sqlite", &url).await.expect("sqlite store")).await;
}

/// [`agent_lifecycle`] on a fresh namespace of a server (skipped when it is unavailable and
/// services are not required).
#[cfg(any(feature = "redis", feature = "postgres", feature = "mongodb"))]
async fn server_lifecycle(service: &str, namespace: common::ServerNamespace) {
    if let Some(store) = common::open_fresh(service, namespace).await {
        agent_lifecycle(store.arc()).await;
    }
}

#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_backend() {
    server_lifecycle("redis", common::ServerNamespace::redis("convo")).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_backend() {
    server_lifecycle("postgres", common::ServerNamespace::postgres("convo")).await;
}

#[cfg(feature = "mongodb")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mongodb_backend() {
    server_lifecycle("mongodb", common::ServerNamespace::mongodb("convo")).await;
}
