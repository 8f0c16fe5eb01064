//! Memory items are scoped like history: each agent, in each workspace, for each owner keeps
//! its own facts, insights and notes; the global scope shares deliberately; short-term notes
//! expire.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agentmem_agent::{Agent, AgentConfig};
use agentmem_core::{
    AgentMemory, ErrorKind, MemoryFilter, MemoryKind, MemoryScope, MemoryStore, Message,
    ScopeFilter,
};
use agentmem_workspace::WorkspaceId;
use common::{after_turn, in_memory, turn_context};

/// Auto-memory and learning on, workspace-scoped by `workspace`, whatever the shell says.
fn remembering(workspace: &Path) -> AgentConfig {
    AgentConfig::default()
        .with_auto_memory(true)
        .with_learn(true)
        .with_workspace_dir(workspace)
        .with_global_sessions(false)
}

fn agent(config: AgentConfig, store: &Arc<dyn AgentMemory>, name: &str) -> Agent {
    Agent::new(config, store.clone(), Some(name)).expect("agent")
}

/// The memory block `agent` injects for a question.
async fn memory_of(agent: &Agent) -> String {
    turn_context(agent, &[Message::user("Who am I?")])
        .await
        .memory
}

/// Checks that `agent`'s memory block mentions every one of `known` and none of `unknown`.
async fn assert_knows(agent: &Agent, known: &[&str], unknown: &[&str]) {
    let memory = memory_of(agent).await;
    for text in known {
        assert!(memory.contains(text), "{text:?} missing from: {memory}");
    }
    for text in unknown {
        assert!(!memory.contains(text), "{text:?} in: {memory}");
    }
}

/// The finding: alice and bob share a store with auto-memory on; bob learning the
/// user is Bob no longer changes what alice knows.
#[tokio::test]
async fn two_agents_on_one_store_keep_their_own_facts() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = in_memory();
    let alice = agent(remembering(dir.path()), &store, "alice");
    let bob = agent(remembering(dir.path()), &store, "bob");
    after_turn(&alice, &[Message::user("My name is Alice.")]).await;
    after_turn(&bob, &[Message::user("My name is Bob.")]).await;

    assert_knows(&alice, &["The user's name is Alice."], &["Bob"]).await;
    assert_knows(&bob, &["The user's name is Bob."], &["Alice"]).await;
    let facts = store
        .list_memories(&MemoryFilter::kind(MemoryKind::Fact))
        .await
        .expect("list");
    assert_eq!(facts.len(), 2, "one `name` fact per agent: {facts:?}");

    let real = std::fs::canonicalize(dir.path()).expect("real path");
    let workspace = WorkspaceId::Dir(real).scope_name();
    assert_eq!(
        alice.memory_scope(),
        &MemoryScope {
            agent: Some("alice".into()),
            workspace,
            owner: None,
        }
    );
}

/// One agent in two projects keeps each project's facts (and insights) to it.
#[tokio::test]
async fn one_agent_in_two_workspaces_keeps_them_apart() {
    let (kyoto, osaka) = (
        tempfile::tempdir().expect("dir"),
        tempfile::tempdir().expect("dir"),
    );
    let store = in_memory();
    let in_kyoto = agent(remembering(kyoto.path()), &store, "assistant");
    let in_osaka = agent(remembering(osaka.path()), &store, "assistant");
    after_turn(
        &in_kyoto,
        &[Message::user("I use Rust. Always answer in English.")],
    )
    .await;
    after_turn(&in_kyoto, &[Message::user("Always answer in English.")]).await;
    after_turn(&in_osaka, &[Message::user("I use Python.")]).await;

    assert_knows(&in_kyoto, &["Rust", "English"], &["Python"]).await;
    assert_knows(&in_osaka, &["Python"], &["Rust", "English"]).await;
}

/// An owner keeps one end user's facts from another's, with the same agent and workspace.
#[tokio::test]
async fn owners_keep_their_users_apart() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = in_memory();
    let for_ada = agent(
        remembering(dir.path()).with_owner("ada"),
        &store,
        "assistant",
    );
    let for_grace = agent(
        remembering(dir.path()).with_owner("grace"),
        &store,
        "assistant",
    );
    after_turn(&for_ada, &[Message::user("My name is Ada.")]).await;
    after_turn(&for_grace, &[Message::user("My name is Grace.")]).await;
    assert_knows(&for_ada, &["Ada"], &["Grace"]).await;
    assert_eq!(for_grace.memory_scope().owner.as_deref(), Some("grace"));
}

/// The global scope shares deliberately: what a global agent stores every agent sees, and an
/// agent's own items stay its own.
#[tokio::test]
async fn the_global_scope_is_shared_on_purpose() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = in_memory();
    let shared = remembering(dir.path()).with_memory_scope(MemoryScope::global());
    let team = agent(shared, &store, "team");
    team.store_memory("The project ships on Fridays", MemoryKind::LongTerm)
        .await
        .expect("store");
    let alice = agent(remembering(dir.path()), &store, "alice");
    alice
        .store_memory("Alice's private note", MemoryKind::LongTerm)
        .await
        .expect("store");
    assert_knows(&alice, &["ships on Fridays", "private"], &[]).await;
    let bob = agent(remembering(dir.path()), &store, "bob");
    assert_knows(&bob, &["ships on Fridays"], &["private"]).await;
    let global = store
        .list_memories(
            &MemoryFilter::default().with_scope(ScopeFilter::Exactly(MemoryScope::global())),
        )
        .await
        .expect("list");
    assert_eq!(global.len(), 1);
}

/// Short-term notes expire after the configured time (one day by default); long-term ones
/// never do.
#[tokio::test]
async fn short_term_notes_expire() {
    let store = in_memory();
    // A time to live of zero: expired as soon as stored (no clock in the test).
    let config = AgentConfig::default()
        .with_session_id("s")
        .with_short_term_ttl(Some(Duration::ZERO));
    let quick = agent(config, &store, "quick");
    let note = quick
        .store_memory("Current task: the dashboard", MemoryKind::ShortTerm)
        .await
        .expect("store");
    assert_eq!(note.expires_at, Some(note.created_at));
    quick
        .store_memory("Keep this", MemoryKind::LongTerm)
        .await
        .expect("store");
    assert_knows(&quick, &["Keep this"], &["the dashboard"]).await;
    let hour = AgentConfig::default()
        .with_session_id("s")
        .with_short_term_ttl(Some(Duration::from_secs(3600)));
    let patient = agent(hour, &store, "patient");
    patient
        .store_memory("Current task: the report", MemoryKind::ShortTerm)
        .await
        .expect("store");
    assert_knows(&patient, &["the report"], &["the dashboard"]).await;

    let default = agent(AgentConfig::default().with_session_id("s"), &store, "slow");
    let note = default
        .store_memory("Current task: tests", MemoryKind::ShortTerm)
        .await
        .expect("store");
    let ttl = note.expires_at.expect("expires") - note.created_at;
    assert_eq!(
        ttl.to_std().ok(),
        Some(agentmem_agent::DEFAULT_SHORT_TERM_TTL)
    );
    let forever = agent(
        AgentConfig::default()
            .with_session_id("s")
            .with_short_term_ttl(None),
        &store,
        "forever",
    );
    let note = forever
        .store_memory("Current task: docs", MemoryKind::ShortTerm)
        .await
        .expect("store");
    assert_eq!(note.expires_at, None);
}

/// An explicit session id scopes memory like history: to the agent alone. Agent names that
/// are not valid scope parts get a stable hashed form; a bad owner is refused up front.
#[tokio::test]
async fn scopes_follow_the_config_and_the_name() {
    let store = in_memory();
    let explicit = agent(
        AgentConfig::default().with_session_id("chat"),
        &store,
        "alice",
    );
    assert_eq!(explicit.memory_scope(), &MemoryScope::agent("alice"));
    let odd = agent(
        AgentConfig::default().with_session_id("chat"),
        &store,
        "Agent #1",
    );
    let again = agent(
        AgentConfig::default().with_session_id("chat"),
        &store,
        "Agent #1",
    );
    let name = odd.memory_scope().agent.clone().expect("an agent part");
    assert!(name.starts_with("agent-"), "{name}");
    assert_eq!(again.memory_scope(), odd.memory_scope());
    odd.store_memory("noted", MemoryKind::LongTerm)
        .await
        .expect("a hashed name stores");
    let err = Agent::new(
        AgentConfig::default().with_owner("a/b"),
        store.clone(),
        None,
    )
    .expect_err("an owner with a slash");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
}
