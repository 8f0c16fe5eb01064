//! The knowledge graph of the MCP memory server (`agentmem mcp` serves it to any MCP client) in
//! an agentmem store: entities with observations, relations between them, the reference
//! server's duplicate rules, search, and two handles writing at once without losing anything.
//! SQLite, no server.
//!
//! ```text
//! cargo run --example knowledge_graph --features sqlite
//! ```

use agentmem::{AgentMemory, Entity, GraphQuery, GraphStore, ObservationAddition, Relation};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite://{}", dir.path().join("memory.db").display());
    let store = agentmem::open(&url).await?;

    store
        .create_entities(&[
            Entity::new("Ada", "person").with_observations(["writes Rust"]),
            Entity::new("Acme", "company"),
        ])
        .await?;
    store
        .create_relations(&[Relation::new("Ada", "Acme", "works_at")])
        .await?;
    // An existing name is skipped, as the reference server does.
    let again = store
        .create_entities(&[Entity::new("Ada", "robot")])
        .await?;
    assert!(again.is_empty(), "Ada exists already");

    // Two handles (as two server processes would be) add observations at once.
    let other = agentmem::open(&url).await?;
    tokio::try_join!(
        note_facts(store.as_ref(), "first"),
        note_facts(other.as_ref(), "second")
    )?;

    let found = store.read_graph(&GraphQuery::Search("RUST".into())).await?;
    let ada = &found.entities[0];
    println!(
        "search \"RUST\": {} ({}), {} observations, relations: {:?}",
        ada.name,
        ada.entity_type,
        ada.observations.len(),
        found.relations
    );
    if ada.observations.len() != 41 || found.relations.len() != 1 {
        return Err("an observation or the relation was lost".into());
    }

    store.delete_entities(&["Acme".into()]).await?;
    let graph = store.read_graph(&GraphQuery::All).await?;
    println!(
        "after deleting Acme: {} entity, {} relations (its relation went with it)",
        graph.entities.len(),
        graph.relations.len()
    );
    if !graph.relations.is_empty() {
        return Err("deleting an entity must delete its relations".into());
    }
    Ok(())
}

/// Adds 20 observations to Ada through `store`, one call each, as `who`.
async fn note_facts(store: &dyn AgentMemory, who: &str) -> agentmem::Result<()> {
    for i in 0..20 {
        let addition = ObservationAddition {
            entity_name: "Ada".into(),
            contents: vec![format!("{who} noted fact {i}")],
        };
        store.add_observations(&[addition]).await?;
    }
    Ok(())
}
