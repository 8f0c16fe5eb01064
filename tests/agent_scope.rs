//! Scope everywhere (issue 31): agents alice and bob share a store, and whichever way an agent
//! gets its context (its own memory block, the store's listing with `store_context` on, or the
//! seed protocol through `Agent::with_context_store`), alice never sees bob's facts, and both
//! see what is shared (globally or in their workspace). On the in-memory store and every backend
//! compiled in, opened through `agentmem::open(url)`; server backends read `REDIS_URL`,
//! `DATABASE_URL` and `MONGODB_URL` and skip only when `AGENTMEM_REQUIRE_SERVICES` is unset.
use std::path::Path;
use std::sync::Arc;

use agentmem::agent::{Agent, AgentConfig};
use agentmem::{AgentMemory, MemoryItem, MemoryKind, MemoryScope, MemoryStore, Message};
mod common;

const ALICE_FACT: &str = "Alice's user likes green tea";
const BOB_FACT: &str = "Bob's user likes black coffee";
const GLOBAL_FACT: &str = "Everyone likes short answers";
const WORKSPACE_FACT: &str = "This project likes small commits";

/// The ways an agent gets the context it injects.
#[derive(Debug, Clone, Copy)]
enum ContextPath {
    /// The agent renders its memory block from the store's items.
    MemoryBlock,
    /// `store_context` on: the store's own listing.
    StoreContext,
    /// The store used through the seed protocol only (`ContextStore`).
    Protocol,
}

/// Agent `name` on `store`, scoped by the workspace of `workspace`, taking its context by `path`.
fn agent(store: &Arc<dyn AgentMemory>, workspace: &Path, name: &str, path: ContextPath) -> Agent {
    let config = AgentConfig::default()
        .with_workspace_dir(workspace)
        .with_global_sessions(false);
    let built = match path {
        ContextPath::MemoryBlock => Agent::new(config, store.clone(), Some(name)),
        ContextPath::StoreContext => {
            Agent::new(config.with_store_context(true), store.clone(), Some(name))
        }
        ContextPath::Protocol => {
            Agent::with_context_store(config, Arc::new(store.clone()), Some(name))
        }
    };
    built.expect("agent")
}

/// Stores each agent's fact in its own scope, and the shared ones.
async fn store_facts(store: &Arc<dyn AgentMemory>, alice: &MemoryScope, bob: &MemoryScope) {
    let workspace = MemoryScope {
        workspace: alice.workspace.clone(),
        ..MemoryScope::global()
    };
    assert!(
        workspace.workspace.is_some(),
        "the agents are workspace-scoped"
    );
    for (text, scope) in [
        (ALICE_FACT, alice.clone()),
        (BOB_FACT, bob.clone()),
        (GLOBAL_FACT, MemoryScope::global()),
        (WORKSPACE_FACT, workspace),
    ] {
        let item = MemoryItem::new(MemoryKind::Fact, text).in_scope(scope);
        store.put_memory(&item).await.expect("put memory");
    }
}

/// The whole check on one store, named `backend` in failures.
async fn alice_never_sees_bobs_facts(backend: &str, store: Arc<dyn AgentMemory>) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let scope_of = |name| {
        agent(&store, dir.path(), name, ContextPath::MemoryBlock)
            .memory_scope()
            .clone()
    };
    store_facts(&store, &scope_of("alice"), &scope_of("bob")).await;

    let viewers = [
        ("alice", ALICE_FACT, BOB_FACT),
        ("bob", BOB_FACT, ALICE_FACT),
    ];
    for path in [
        ContextPath::MemoryBlock,
        ContextPath::StoreContext,
        ContextPath::Protocol,
    ] {
        for (name, own, other) in viewers {
            let agent = agent(&store, dir.path(), name, path);
            assert_eq!(agent.memory_scope(), &scope_of(name), "{backend} {path:?}");
            let turn = [Message::user("Who likes what?")];
            let asked = agent.context_for_turn(&turn).await.expect("context");
            let unasked = agent.system_prompt("").await.expect("system prompt");
            for (query, context) in [("a query", asked.memory), ("no query", unasked)] {
                let at = format!("{backend}, {path:?}, {name}, {query}: {context}");
                for seen in [own, GLOBAL_FACT, WORKSPACE_FACT] {
                    assert!(context.contains(seen), "{seen:?} missing; {at}");
                }
                assert!(!context.contains(other), "{other:?} leaked; {at}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_store() {
    alice_never_sees_bobs_facts("memory", Arc::new(agentmem::InMemoryStore::new())).await;
}

/// Every backend compiled in, one after the other: the local ones in a fresh folder, the
/// servers in a fresh namespace (skipped when unavailable and services are not required).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_backend() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let local = common::local_urls(dir.path());
    for (backend, url) in local {
        let store = common::open(backend, &url).await.expect("local store");
        alice_never_sees_bobs_facts(backend, store).await;
    }

    let servers = common::server_namespaces("scope");
    for (backend, namespace) in servers {
        if let Some(store) = common::open_fresh(backend, namespace).await {
            alice_never_sees_bobs_facts(backend, store.arc()).await;
        }
    }
}
