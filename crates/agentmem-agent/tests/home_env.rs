//! Process-wide settings read from the environment: `AGENTMEM_HOME` (the default store) and
//! `AGENTMEM_GLOBAL_SESSIONS`. One test in this binary, so no other test in the process
//! reads the environment while it changes.

use std::sync::Arc;

use agentmem_agent::{Agent, AgentConfig};
use agentmem_core::backend::Registry;
use agentmem_core::{AgentMemory, InMemory, Message};
use agentmem_workspace::{session_id, WorkspaceId, GLOBAL_SESSIONS_ENV};

/// The backends `from_config` may open here: the file backend.
fn registry() -> Registry {
    Registry::new().with::<agentmem_file::FileConfig>()
}

#[tokio::test]
async fn environment_switches_home_and_global_sessions() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let home = tmp.path().join("agentmem-home");
    std::env::set_var("AGENTMEM_HOME", &home);
    std::env::remove_var(GLOBAL_SESSIONS_ENV);

    // Off costs nothing: no store, no folder.
    let off = Agent::from_config(AgentConfig::default(), Some("assistant"), &registry())
        .await
        .expect("from config");
    assert!(off.is_none());
    assert!(!home.exists(), "nothing may be created while memory is off");

    // Workspace-scoped by default...
    let workspace = tmp.path().join("project");
    std::fs::create_dir_all(&workspace).expect("folder");
    let store: Arc<dyn AgentMemory> = Arc::new(InMemory::new());
    let config = || {
        AgentConfig::default()
            .with_history(true)
            .with_workspace_dir(&workspace)
    };
    let scoped = Agent::new(config(), store.clone(), Some("assistant")).expect("memory");
    assert!(matches!(scoped.workspace(), Some(WorkspaceId::Dir(_))));
    scoped
        .after_turn(&[Message::user("project detail"), Message::assistant("ok")])
        .await
        .expect("after turn");

    // ...and global when AGENTMEM_GLOBAL_SESSIONS is set: the sha256("global:assistant") id,
    // computed with Python's hashlib, and none of the project's history.
    std::env::set_var(GLOBAL_SESSIONS_ENV, "TRUE");
    let global = Agent::new(config(), store.clone(), Some("assistant")).expect("memory");
    assert_eq!(global.workspace(), Some(&WorkspaceId::Global));
    assert_eq!(
        global.history_session().map(|s| s.as_str()),
        Some("history_9d7d79a1")
    );
    assert_eq!(
        global.history_session(),
        Some(&session_id(&WorkspaceId::Global, Some("assistant")))
    );
    assert!(global
        .context_for_turn(&[])
        .await
        .expect("context")
        .history
        .is_empty());
    std::env::remove_var(GLOBAL_SESSIONS_ENV);

    // The default store is the file backend under AGENTMEM_HOME, opened only when needed.
    let on = Agent::from_config(
        "history".parse().expect("preset"),
        Some("assistant"),
        &registry(),
    )
    .await
    .expect("from config")
    .expect("history is on");
    assert_eq!(on.store().backend(), "file");
    on.after_turn(&[Message::user("hello")])
        .await
        .expect("after turn");
    assert!(home.exists(), "the default store lives under AGENTMEM_HOME");
    std::env::remove_var("AGENTMEM_HOME");
}
