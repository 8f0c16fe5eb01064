//! Process-wide settings read from the environment: `AGENTMEM_HOME` (the default store) and
//! `AGENTMEM_GLOBAL_SESSIONS`. One test in this binary, so no other test in the process
//! reads the environment while it changes.

mod common;

use agentmem_agent::{Agent, AgentConfig};
use agentmem_core::{Message, SessionStore};
use agentmem_workspace::{session_id, WorkspaceId, GLOBAL_SESSIONS_ENV};
use common::{after_turn, from_config, in_memory, turn_context};

#[tokio::test]
async fn environment_switches_home_and_global_sessions() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let home = tmp.path().join("agentmem-home");
    std::env::set_var("AGENTMEM_HOME", &home);
    std::env::remove_var(GLOBAL_SESSIONS_ENV);

    // Off costs nothing: no store, no folder.
    let off = from_config(AgentConfig::default(), Some("assistant")).await;
    assert!(off.is_none());
    assert!(!home.exists(), "nothing may be created while memory is off");

    // Workspace-scoped by default...
    let workspace = tmp.path().join("project");
    std::fs::create_dir_all(&workspace).expect("folder");
    let store = in_memory();
    let config = || {
        AgentConfig::default()
            .with_history(true)
            .with_workspace_dir(&workspace)
    };
    let scoped = Agent::new(config(), store.clone(), Some("assistant")).expect("memory");
    assert!(matches!(scoped.workspace(), Some(WorkspaceId::Dir(_))));
    after_turn(
        &scoped,
        &[Message::user("project detail"), Message::assistant("ok")],
    )
    .await;

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
    assert!(turn_context(&global, &[]).await.history.is_empty());
    std::env::remove_var(GLOBAL_SESSIONS_ENV);

    // The default store is the file backend under AGENTMEM_HOME, opened only when needed.
    let on = from_config("history".parse().expect("preset"), Some("assistant"))
        .await
        .expect("history is on");
    assert_eq!(on.store().expect("a full store").backend(), "file");
    after_turn(&on, &[Message::user("hello")]).await;
    assert!(home.exists(), "the default store lives under AGENTMEM_HOME");
    std::env::remove_var("AGENTMEM_HOME");
}
