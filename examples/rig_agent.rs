//! A rig agent whose conversation lives in agentmem on SQLite, continued by a second process.
//!
//! ```sh
//! cargo run --example rig_agent --features rig,sqlite
//! ```
//!
//! The first process asks the agent one question and exits. It then starts this example again
//! as a second process on the same database, which asks a follow-up in the same conversation:
//! rig loads the first exchange from SQLite and sends it to the model with the new question.
//!
//! No network and no API key: the model is rig's scripted offline model, which answers with
//! fixed replies and records what it was sent. With a real provider, replace `scripted_model`
//! with e.g. `openai::Client::from_env().completion_model("gpt-4o")`; nothing else changes.

use std::path::{Path, PathBuf};
use std::process::Command;

use agentmem::rig::rig_core::completion::{AssistantContent, AssistantMessage, Message};
use agentmem::rig::AgentmemConversationMemory;
use agentmem::AgentMemoryExt;
use rig_agent::agent::AgentBuilder;
use rig_agent::test_utils::{MockCompletionModel, MockTurn};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const CONVERSATION: &str = "trip-planning";

fn scripted_model(reply: &str) -> MockCompletionModel {
    MockCompletionModel::from_turns([MockTurn::text(reply)])
}

fn assistant_text(turn: &AssistantMessage) -> String {
    turn.content
        .iter()
        .filter_map(|part| match part {
            AssistantContent::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect()
}

/// One turn of the conversation in this process: open the store, prompt, print what the model
/// was sent and what it answered.
async fn turn(db: &Path, question: &str, reply: &str) -> Result<usize, BoxError> {
    let store = agentmem::open(&format!("sqlite://{}", db.display())).await?;
    let model = scripted_model(reply);
    let agent = AgentBuilder::new(model.clone())
        .preamble("You are a travel assistant.")
        .memory(AgentmemConversationMemory::new(store.clone()).with_history_limit(50))
        .conversation(CONVERSATION)
        .build();

    let answer = agent.prompt(question).await?;
    let pid = std::process::id();
    let sent = model.requests().pop().ok_or("the model was not called")?;
    println!("[process {pid}] user: {question}");
    println!("[process {pid}] the model was sent:");
    for message in &sent.chat_history {
        let (role, text) = match message {
            Message::System { content } => ("system", content.clone()),
            Message::User { .. } => ("user", message.rag_text().unwrap_or_default()),
            Message::Assistant(turn) => ("assistant", assistant_text(turn)),
        };
        println!("[process {pid}]     {role}: {text}");
    }
    println!("[process {pid}] agent: {}", answer.output());

    let session = CONVERSATION.parse()?;
    let stored = store.messages(&session).await?;
    println!(
        "[process {pid}] {} messages stored in {}",
        stored.len(),
        db.display()
    );
    Ok(sent.chat_history.len())
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() == Some("--second-process") {
        let db = PathBuf::from(args.next().ok_or("missing database path")?);
        let sent = turn(
            &db,
            "And what should I pack?",
            "For Lisbon in May: light clothes, sunscreen, comfortable shoes.",
        )
        .await?;
        // The preamble, the first process's question and answer, and the new question.
        if sent != 4 {
            return Err(
                format!("expected the first exchange in the history, got {sent} messages").into(),
            );
        }
        return Ok(());
    }

    let dir = tempfile::tempdir()?;
    let db = dir.path().join("agent.db");
    turn(
        &db,
        "I'm going to Lisbon in May. What's the weather like?",
        "Lisbon in May is sunny, around 22°C.",
    )
    .await?;

    // A new process: nothing is shared with this one but the SQLite file.
    let status = Command::new(std::env::current_exe()?)
        .arg("--second-process")
        .arg(&db)
        .status()?;
    if !status.success() {
        return Err(format!("the second process failed: {status}").into());
    }
    Ok(())
}
