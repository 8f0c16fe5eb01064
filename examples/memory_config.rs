//! Agent memory configuration and workspace-scoped history (`agentmem::agent`).
//!
//! Two runs of one agent in the same repository see the same history, whichever checkout or
//! worktree they run in; with `AGENTMEM_GLOBAL_SESSIONS=1` the agent uses the global session
//! instead, and the repository's history is not there.
//!
//! ```text
//! cargo run --example memory_config            # from anywhere inside a git repository
//! ```

use agentmem::agent::{Agent, AgentConfig};
use agentmem::workspace::{current_workspace_id, GLOBAL_SESSIONS_ENV};
use agentmem::{MemoryKind, Message};

/// One run of the agent: inject memory, "answer", save the turn.
async fn run_agent(url: &str, question: &str, answer: &str) -> agentmem::Result<()> {
    // The `session` preset: history on, last 10 messages; the store is a throwaway folder.
    let config: AgentConfig = "session".parse()?;
    let config = config.with_url(url).with_auto_memory(true);
    let Some(agent) = Agent::from_config(config, Some("assistant"), &agentmem::registry()).await?
    else {
        unreachable!("the session preset turns history on");
    };
    let session = agent
        .history_session()
        .map(|s| s.to_string())
        .unwrap_or_default();
    let workspace = agent.workspace().map(|w| w.to_string()).unwrap_or_default();
    println!("  workspace {workspace}\n  session   {session}");
    // Facts and notes are kept to this agent in this workspace, like its history.
    println!("  memories  {}", agent.memory_scope());

    let turn = vec![Message::user(question)];
    let context = agent.context_for_turn(&turn).await?;
    if context.history.is_empty() {
        println!("  history:  (none)");
    }
    for m in &context.history {
        println!("  history:  {}: {}", m.role, m.content);
    }
    let mut conversation = context.messages("You are a helpful assistant.", &turn);
    conversation.push(Message::assistant(answer));
    let report = agent.after_turn(&conversation).await?;
    println!(
        "  saved {} messages, learned {} facts",
        report.saved,
        report.facts.len()
    );
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> agentmem::Result<()> {
    let home = tempfile::tempdir()?;
    let url = format!("file://{}", home.path().display());
    println!("current workspace: {}", current_workspace_id());

    println!("run 1:");
    run_agent(
        &url,
        "Hi, I'm Alice and I use Rust.",
        "Nice to meet you, Alice!",
    )
    .await?;
    println!("run 2 (same repository: sees run 1):");
    run_agent(&url, "What's my name?", "Your name is Alice.").await?;

    // Opting out of workspace scoping: every project shares the global session.
    // (Set here for the demonstration; normally it comes from the shell.)
    std::env::set_var(GLOBAL_SESSIONS_ENV, "1");
    println!("run 3 ({GLOBAL_SESSIONS_ENV}=1: the global session, without run 1 and 2):");
    run_agent(&url, "What's my name?", "I don't know yet.").await?;
    std::env::remove_var(GLOBAL_SESSIONS_ENV);

    // Manual memory goes into the system prompt of every later run.
    let config = AgentConfig::enabled().with_url(&url);
    let agent = Agent::from_config(config, Some("assistant"), &agentmem::registry())
        .await?
        .ok_or_else(|| agentmem::Error::invalid_input("memory is off"))?;
    agent
        .store_memory("User prefers dark mode", MemoryKind::LongTerm)
        .await?;
    println!(
        "system prompt:\n{}",
        agent.system_prompt("You are a helpful assistant.").await?
    );
    Ok(())
}
