//! `AGENTMEM_GLOBAL_SESSIONS` read from the real environment.
//!
//! The only test in this binary, so nothing else in the process reads the environment while it
//! changes it (every other test passes the switch as a parameter).

use agentmem_workspace::{
    current_workspace_id, global_sessions_requested, session_id, workspace_id, WorkspaceId,
    GLOBAL_SESSIONS_ENV,
};

#[test]
fn env_switch_makes_every_workspace_global() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::env::remove_var(GLOBAL_SESSIONS_ENV);
    assert!(!global_sessions_requested());
    let scoped = workspace_id(dir.path());
    assert!(matches!(scoped, WorkspaceId::Dir(_)), "{scoped}");

    for on in ["1", "true", "Yes"] {
        std::env::set_var(GLOBAL_SESSIONS_ENV, on);
        assert!(global_sessions_requested(), "{on}");
        assert_eq!(workspace_id(dir.path()), WorkspaceId::Global, "{on}");
        assert_eq!(current_workspace_id(), WorkspaceId::Global, "{on}");
        assert_eq!(
            session_id(&workspace_id(dir.path()), Some("assistant")).as_str(),
            "history_9d7d79a1"
        );
    }
    for off in ["0", "false", "off"] {
        std::env::set_var(GLOBAL_SESSIONS_ENV, off);
        assert_eq!(workspace_id(dir.path()), scoped, "{off}");
    }
    std::env::remove_var(GLOBAL_SESSIONS_ENV);
}
