//! Recall by meaning: a store whose URL names the local embedding model (`embedder=local`,
//! all-MiniLM-L6-v2 in pure Rust) and asks for messages to be embedded too
//! (`embed=messages`). The indexer embeds behind the writes; a question that shares no word
//! with the answer is missed by keyword search and found by semantic and hybrid search.
//! SQLite, no server, no network; the model is installed once with
//! `bash crates/agentmem-embed/install-model.sh`.
//!
//! ```text
//! cargo run --example recall --features embed-local,sqlite
//! ```

use agentmem::recall::SearchMode;
use agentmem::{MemoryFilter, MemoryItem, MemoryKind, MemoryStore, Message, MessageQuery};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let url = format!(
        "sqlite://{}?embedder=local&embed=messages",
        dir.path().join("memory.db").display()
    );
    let recall = agentmem::open_recall(&url).await?;
    let store = recall.store();

    for text in [
        "Caroline contacted her mentor for adoption advice",
        "Melanie signed up for a pottery class",
        "The quarterly tax filing is due in April",
    ] {
        store
            .put_memory(&MemoryItem::new(MemoryKind::Fact, text))
            .await?;
    }
    let chat = "chat".parse()?;
    store
        .append(
            &chat,
            &[
                Message::user("I finally booked the flights for our trip to Japan"),
                Message::assistant("Great! When do you leave?"),
            ],
        )
        .await?;

    // Appends never wait for the model: the indexer embeds what has no vector yet.
    let report = recall.index(&mut |_| {}).await?;
    println!("embedded {} of {} texts", report.embedded, report.texts);

    let question = "who is thinking about becoming a parent?";
    for mode in [
        SearchMode::Keyword,
        SearchMode::Semantic,
        SearchMode::Hybrid,
    ] {
        let hits = recall
            .search_memories(question, &MemoryFilter::default(), mode)
            .await?;
        let best = hits.first().map_or("(nothing)", |h| h.item.text.as_str());
        println!("{mode:>8}: {best}");
        if mode != SearchMode::Keyword && !best.contains("adoption") {
            return Err(format!("{mode} search missed the adoption fact").into());
        }
    }

    let scope = MessageQuery {
        session: Some(chat),
        limit: 1,
    };
    let hits = recall
        .search_messages("holiday abroad", &scope, SearchMode::Hybrid)
        .await?;
    let hit = hits.first().ok_or("no message found")?;
    println!(
        "  message: {} (similarity {:.2})",
        hit.message.content,
        hit.similarity.unwrap_or_default()
    );
    if !hit.message.content.contains("Japan") {
        return Err("hybrid search missed the trip message".into());
    }
    Ok(())
}
