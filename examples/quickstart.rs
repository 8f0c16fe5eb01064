//! agentmem in one minute: an agent writes its memory, a new process reopens it and sees the
//! memory preloaded. File backend, no server, no network.
//!
//! ```text
//! cargo run --example quickstart
//! ```
//!
//! The memory goes to `$AGENTMEM_HOME` if set, else a fresh folder in the system temp dir
//! (printed). The example runs itself a second time as a child process, as a restarted agent
//! would be.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentmem::conversation::Conversation;
use agentmem::file::{FileConfig, FileStore};
use agentmem::{AgentMemory, AgentMemoryExt, AgentName, Role, SessionId, SessionStore};

const RESUME_ARG: &str = "--resume-from";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 3 && args[1] == RESUME_ARG {
        return second_process(Path::new(&args[2])).await;
    }

    let home = match std::env::var_os("AGENTMEM_HOME") {
        Some(home) => PathBuf::from(home),
        None => std::env::temp_dir().join(format!("agentmem-quickstart-{}", std::process::id())),
    };
    println!("== first process: writing memory under {}", home.display());
    let convo = open_conversation(&home).await?;
    // Two turns: what the user said, and the agent's reply.
    for (user, reply) in [
        (
            "Hi! I'm Ada. We run analytics on GCP.",
            "Nice to meet you, Ada. I'll keep GCP in mind.",
        ),
        (
            "Shortlist BigQuery and AlloyDB for next week.",
            "Shortlisted: BigQuery, AlloyDB. I'll compare latency and cost.",
        ),
    ] {
        convo.add(Role::User, user).await?;
        convo.add_agent_reply(reply).await?;
    }
    if let Some(path) = convo.memory_path() {
        println!(
            "wrote {} messages to {}",
            convo.len() - convo.preamble_len(),
            path.display()
        );
    }
    drop(convo);

    println!("\n== starting a new process to resume the agent");
    let status = std::process::Command::new(std::env::current_exe()?)
        .arg(RESUME_ARG)
        .arg(&home)
        .status()?;
    if !status.success() {
        return Err(format!("the second process failed: {status}").into());
    }
    Ok(())
}

/// What a restarted agent does: open the same store and build the same conversation.
async fn second_process(home: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let convo = open_conversation(home).await?;
    match convo.preloaded() {
        Some(preload) => println!(
            "preloaded memory, as the model sees it (one system message):\n\n{}",
            preload.text
        ),
        None => return Err("nothing was preloaded".into()),
    }
    // The stored transcript itself is also a plain session in the store.
    let store = convo
        .store()
        .ok_or("persistent conversations have a store")?;
    let session: &SessionId = convo.session_id();
    let stored = store.messages(session).await?;
    println!(
        "({} messages in session {session} of the {} backend)",
        stored.len(),
        store.backend()
    );
    Ok(())
}

async fn open_conversation(home: &Path) -> Result<Conversation, Box<dyn std::error::Error>> {
    let store = FileStore::connect_with(FileConfig::new(home)).await?;
    let agent: AgentName = "QuickstartAgent".parse()?;
    let memory_file = store.memory_md_path(&SessionId::from(agent.clone()));
    let store: Arc<dyn AgentMemory> = Arc::new(store);
    Ok(Conversation::builder(agent)
        .system_prompt("You are a helpful research assistant.")
        .persistent(true)
        .store(store)
        .memory_file(memory_file)
        .build()
        .await?)
}
