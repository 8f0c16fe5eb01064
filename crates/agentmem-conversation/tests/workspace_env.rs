//! `WORKSPACE_DIR` is read when no workspace dir is configured. A test binary of its own,
//! because it changes the process environment.
#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

use agentmem_conversation::{workspace_dir_from_env, Conversation, WORKSPACE_DIR_ENV};

#[tokio::test]
async fn workspace_dir_falls_back_to_the_environment() {
    std::env::set_var(WORKSPACE_DIR_ENV, "/from/env");
    assert_eq!(workspace_dir_from_env(), Some("/from/env".into()));
    let c = Conversation::builder("EnvAgent".parse().unwrap())
        .build()
        .await
        .unwrap();
    assert_eq!(c.workspace_dir(), Some(std::path::Path::new("/from/env")));
    let c = Conversation::builder("EnvAgent".parse().unwrap())
        .workspace_dir("/configured")
        .build()
        .await
        .unwrap();
    assert_eq!(c.workspace_dir(), Some(std::path::Path::new("/configured")));
    std::env::set_var(WORKSPACE_DIR_ENV, "  ");
    assert_eq!(workspace_dir_from_env(), None);
    std::env::remove_var(WORKSPACE_DIR_ENV);
    let c = Conversation::builder("EnvAgent".parse().unwrap())
        .build()
        .await
        .unwrap();
    assert_eq!(c.workspace_dir(), None);
}
