//! The conversation on the file backend: preload is `MEMORY.md` byte for byte, archives are
//! files, write-through survives restarts, failures leave consistent state.
mod common;

use std::path::Path;
use std::sync::Arc;

use agentmem_conversation::templates::{PRELOAD_PREFIX, SUMMARY_PREFIX};
use agentmem_conversation::{Compressor, Conversation, ExtractiveSummarizer};
use agentmem_core::{AgentMemory, AgentMemoryExt, Layered, Role};
use agentmem_file::{Durability, FileConfig, FileStore};
use common::{join_all, name, spawn_adders, transcript};

async fn file_store(root: &Path) -> Arc<Layered<FileStore>> {
    Arc::new(
        FileStore::connect_with(FileConfig::new(root).with_durability(Durability::Buffered))
            .await
            .unwrap(),
    )
}

async fn open(store: &Arc<Layered<FileStore>>, agent: &str, context_length: usize) -> Conversation {
    let agent = name(agent);
    Conversation::builder(agent.clone())
        .system_prompt("You are a research assistant.")
        .rules("Cite sources.")
        .persistent(true)
        .store(store.clone())
        .memory_file(store.memory_md_path(&agent.into()))
        .workspace_dir(store.root())
        .context_length(context_length)
        .compressor(Compressor::new(Arc::new(ExtractiveSummarizer::new())))
        .build()
        .await
        .unwrap()
}

/// Drops `convo` and opens its agent again on `store`; checks that the preload (after the
/// system prompt and rules) is `MEMORY.md` byte for byte; returns the new conversation and
/// the file.
async fn reopen_preloading_the_file(
    convo: Conversation, store: &Arc<Layered<FileStore>>,
) -> (Conversation, String) {
    let path = convo.memory_path().unwrap();
    let agent = convo.agent_name().as_str().to_string();
    drop(convo);
    let file = std::fs::read_to_string(path).unwrap();
    let convo = open(store, &agent, 16_000).await;
    assert_eq!(
        convo.messages()[2].content,
        format!("{PRELOAD_PREFIX}{file}")
    );
    (convo, file)
}

fn archive_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("history_") && n.ends_with(".md"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test]
async fn preload_is_the_memory_md_file_byte_for_byte_before_and_after_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let store = file_store(dir.path()).await;
    let convo = open(&store, "ResearchAgent", 16_000).await;
    let path = convo.memory_path().unwrap();
    assert_eq!(path, dir.path().join("agents/ResearchAgent/MEMORY.md"));
    assert_eq!(convo.workspace_dir(), dir.path());
    convo
        .add(Role::User, "Research cloud database options.")
        .await
        .unwrap();
    convo
        .add_agent_reply("I recommend BigQuery.")
        .await
        .unwrap();
    let (second, file) = reopen_preloading_the_file(convo, &store).await;
    assert!(file.contains("### ResearchAgent — "));
    assert_eq!(second.messages().len(), 3);
    assert!(
        !file.contains("You are a research assistant."),
        "the system prompt was stored"
    );

    second
        .compact("The user wants a warehouse; BigQuery recommended.")
        .await
        .unwrap();
    let (_third, file) = reopen_preloading_the_file(second, &store).await;
    assert!(file.contains(&format!(
        "{SUMMARY_PREFIX}The user wants a warehouse; BigQuery recommended.\n\n---\n\n"
    )));
    assert!(!file.contains("Research cloud database options."));
}

#[tokio::test]
async fn two_compactions_in_one_second_keep_both_archive_files() {
    let dir = tempfile::tempdir().unwrap();
    let store = file_store(dir.path()).await;
    let convo = open(&store, "Twice", 16_000).await;
    convo.add(Role::User, "first transcript").await.unwrap();
    let a = convo.compact("s1").await.unwrap().archive.unwrap();
    convo.add(Role::User, "second transcript").await.unwrap();
    let b = convo.compact("s2").await.unwrap().archive.unwrap();
    assert_ne!(a.id, b.id);
    let archive_dir = store.archive_dir(convo.session_id());
    let files = archive_files(&archive_dir);
    assert_eq!(files, {
        let mut v = vec![format!("{}.md", a.id), format!("{}.md", b.id)];
        v.sort();
        v
    });
    let first = std::fs::read_to_string(archive_dir.join(format!("{}.md", a.id))).unwrap();
    let second = std::fs::read_to_string(archive_dir.join(format!("{}.md", b.id))).unwrap();
    assert!(first.contains("first transcript") && !first.contains("second transcript"));
    assert!(
        second.contains("second transcript") && !second.contains(&format!("{SUMMARY_PREFIX}s2"))
    );
    assert!(second.contains(&format!("{SUMMARY_PREFIX}s1")));
}

#[tokio::test]
async fn a_store_failure_at_any_call_leaves_memory_and_files_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let counter = std::sync::atomic::AtomicUsize::new(0);
    common::failure_at_each_call_leaves_memory_and_store_consistent(|| {
        let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let root = dir.path().join(format!("run{n}"));
        async move { file_store(&root).await as Arc<dyn AgentMemory> }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_adds_reach_the_file_in_memory_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = file_store(dir.path()).await;
    let convo = Arc::new(open(&store, "Busy", 16_000).await);
    join_all(spawn_adders(&convo, 4, 20)).await;
    let memory = transcript(&convo);
    assert_eq!(memory.len(), 80);
    let reopened = file_store(dir.path()).await;
    assert_eq!(reopened.messages(convo.session_id()).await.unwrap(), memory);
    // MEMORY.md lists the blocks in the same order.
    let file = std::fs::read_to_string(convo.memory_path().unwrap()).unwrap();
    let positions: Vec<usize> = memory
        .iter()
        .map(|m| file.find(&format!("\n\n{}\n\n---\n\n", m.content)).unwrap())
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]));
}

#[tokio::test]
async fn auto_compression_writes_archives_and_the_restart_loads_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let store = file_store(dir.path()).await;
    let convo = open(&store, "Looper", 600).await;
    convo
        .add(Role::User, "My name is Ada and I prefer GCP.")
        .await
        .unwrap();
    let mut archives = Vec::new();
    for i in 0..40 {
        if let Some(done) = convo.maybe_compress().await.unwrap() {
            archives.push(done.archive.unwrap());
        }
        convo
            .add(Role::User, format!("Step {i}: keep analysing the options."))
            .await
            .unwrap();
    }
    assert!(!archives.is_empty());
    let files = archive_files(&store.archive_dir(convo.session_id()));
    assert_eq!(files.len(), archives.len());
    drop(convo);
    let restarted = open(&store, "Looper", 600).await;
    let preload = &restarted.messages()[2].content;
    assert!(preload.contains(SUMMARY_PREFIX));
    assert!(preload.contains("My name is Ada and I prefer GCP."));
    assert!(!preload.contains("Step 0:"));
}
