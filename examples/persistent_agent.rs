//! A persistent agent on the file backend: preload, write-through, automatic compression.
//!
//! ```text
//! cargo run --example persistent_agent          # first run: no memory yet
//! cargo run --example persistent_agent          # second run: shows the preloaded MEMORY.md
//! cargo run --example persistent_agent -- 400   # context length 400: compacts, shows the archive
//! ```
//!
//! Memory lives under `$WORKSPACE_DIR` (else a folder in the system temp dir):
//! `agents/ResearchAgent/MEMORY.md` and `agents/ResearchAgent/archive/history_<time>.md`.
//! The "model" is a stand-in that echoes a canned reply, so no network is needed; the
//! summarizer is the extractive one.

use std::path::PathBuf;
use std::sync::Arc;

use agentmem::conversation::{
    workspace_dir_from_env, Compressor, Conversation, ExtractiveSummarizer, MemorySearchTool,
};
use agentmem::file::{FileConfig, FileStore};
use agentmem::{AgentName, Role, SessionId};

/// A stand-in for a model call.
fn fake_model(task: &str) -> String {
    format!("Noted: {task} I will remember that and build on it next time.")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let context_length: usize = match std::env::args().nth(1) {
        Some(arg) => arg
            .parse()
            .map_err(|_| format!("the context length must be a number, got {arg:?}"))?,
        None => 16_000,
    };
    let workspace: PathBuf = workspace_dir_from_env()
        .unwrap_or_else(|| std::env::temp_dir().join("agentmem-persistent-agent-demo"));

    // On the file backend the store root is the workspace dir, as in Swarms:
    // $WORKSPACE_DIR/agents/<agent name>/MEMORY.md
    let store = FileStore::connect_with(FileConfig::new(&workspace)).await?;
    let agent: AgentName = "ResearchAgent".parse()?;
    let session = SessionId::from(agent.clone());

    let convo = Conversation::builder(agent)
        .system_prompt("You are a research assistant who remembers earlier sessions.")
        .rules("Be concise. Cite sources.")
        .persistent(true)
        .store(Arc::new(store.clone()))
        .memory_file(store.memory_md_path(&session))
        .workspace_dir(&workspace)
        .context_length(context_length)
        .compressor(Compressor::new(Arc::new(ExtractiveSummarizer::new())))
        .build()
        .await?;

    println!("workspace:      {}", workspace.display());
    if let Some(path) = convo.memory_path() {
        println!("memory file:    {}", path.display());
    }
    println!("context length: {context_length} tokens\n");
    match convo.preloaded() {
        Some(p) => println!(
            "Preloaded memory ({} block(s) kept, {} left out by the token budget):\n{}\n",
            p.kept, p.dropped, p.text
        ),
        None => println!("No stored memory yet: this is the first run.\n"),
    }

    let tasks = [
        "My name is Ada and I prefer GCP for latency reasons.",
        "Compare BigQuery and AlloyDB for a 50 ms dashboard.",
        "We decided to shortlist BigQuery; load sample data next.",
    ];
    for task in tasks {
        // The top of an agent loop iteration: compress when the prompt nears the context.
        if let Some(done) = convo.maybe_compress().await? {
            println!(
                "Compacted: {} -> {} tokens.",
                done.tokens_before, done.tokens_after
            );
            if let Some(archive) = &done.archive {
                let file = store
                    .archive_dir(&session)
                    .join(format!("{}.md", archive.id));
                println!(
                    "Archived {} message(s) to {} (exists: {})\n",
                    archive.message_count,
                    file.display(),
                    file.exists()
                );
            }
        }
        convo.add(Role::User, task).await?;
        convo.add_agent_reply(fake_model(task)).await?;
        println!("> {task}\n< {}\n", convo.last_content().unwrap_or_default());
    }

    println!(
        "Prompt now: {} messages, {} tokens.",
        convo.len(),
        convo.token_count()
    );
    let tool = MemorySearchTool::new(Arc::new(convo));
    println!(
        "\n{} {{\"query\": \"BigQuery\"}} ->\n{}",
        tool.name(),
        tool.call(serde_json::json!({"query": "BigQuery", "limit": 3}))
            .await?
    );
    Ok(())
}
