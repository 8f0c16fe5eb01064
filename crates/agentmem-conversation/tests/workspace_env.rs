//! The workspace folder: configured, else `WORKSPACE_DIR`, else `./agent_workspace`; a
//! persistent conversation without a store keeps `agents/<name>/MEMORY.md` there, with
//! headings in local time. A test binary of its own, because it changes the process
//! environment; the local-time checks run in a child process with `TZ` set.
use std::path::Path;
use std::process::Command;

use agentmem_conversation::{
    workspace_dir_from_env, Conversation, DEFAULT_WORKSPACE_DIR, WORKSPACE_DIR_ENV,
};
use agentmem_core::{AgentMemoryExt, Message, Role};
use chrono::{TimeZone, Utc};

/// Set in the child process that runs `in_central_european_time`.
const CHILD: &str = "AGENTMEM_CONVERSATION_TZ_CHILD";

async fn persistent(agent: &str) -> Conversation {
    Conversation::builder(agent.parse().unwrap())
        .persistent(true)
        .build()
        .await
        .unwrap()
}

#[tokio::test]
async fn workspace_dir_falls_back_to_the_environment_then_the_default() {
    std::env::set_var(WORKSPACE_DIR_ENV, "/from/env");
    assert_eq!(workspace_dir_from_env(), Some("/from/env".into()));
    let c = Conversation::builder("EnvAgent".parse().unwrap())
        .build()
        .await
        .unwrap();
    assert_eq!(c.workspace_dir(), Path::new("/from/env"));
    let c = Conversation::builder("EnvAgent".parse().unwrap())
        .workspace_dir("/configured")
        .build()
        .await
        .unwrap();
    assert_eq!(c.workspace_dir(), Path::new("/configured"));

    // Persistent without a store: the file store in `$WORKSPACE_DIR`.
    let workspace = tempfile::tempdir().unwrap();
    std::env::set_var(WORKSPACE_DIR_ENV, workspace.path());
    let c = persistent("EnvAgent").await;
    let memory = workspace.path().join("agents/EnvAgent/MEMORY.md");
    assert_eq!(c.memory_path(), Some(memory.clone()));
    c.add(Role::User, "Stored in the workspace.").await.unwrap();
    assert!(std::fs::read_to_string(&memory)
        .unwrap()
        .contains("Stored in the workspace."));
    drop(c);
    let again = persistent("EnvAgent").await;
    assert!(again.messages()[0]
        .content
        .contains("Stored in the workspace."));

    std::env::set_var(WORKSPACE_DIR_ENV, "  ");
    assert_eq!(workspace_dir_from_env(), None);
    std::env::remove_var(WORKSPACE_DIR_ENV);
    let c = Conversation::builder("EnvAgent".parse().unwrap())
        .build()
        .await
        .unwrap();
    assert_eq!(c.workspace_dir(), Path::new(DEFAULT_WORKSPACE_DIR));
}

#[test]
fn default_workspace_and_local_times() {
    let cwd = tempfile::tempdir().unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "in_central_european_time", "--nocapture"])
        .current_dir(cwd.path())
        .env_remove(WORKSPACE_DIR_ENV)
        // UTC+1, summer UTC+2 (a POSIX rule: no zone database needed).
        .env("TZ", "CET-1CEST,M3.5.0,M10.5.0/3")
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("1 passed"),
        "the child ran no check: {stdout}"
    );
    assert!(cwd
        .path()
        .join("agent_workspace/agents/LocalAgent/MEMORY.md")
        .is_file());
}

#[tokio::test]
async fn in_central_european_time() {
    if std::env::var_os(CHILD).is_none() {
        return; // run by `default_workspace_and_local_times` in a folder of its own
    }
    let agents = Path::new(DEFAULT_WORKSPACE_DIR).join("agents");
    let c = persistent("LocalAgent").await;
    assert_eq!(c.workspace_dir(), Path::new(DEFAULT_WORKSPACE_DIR));
    assert_eq!(c.memory_path(), Some(agents.join("LocalAgent/MEMORY.md")));
    let t = Utc.with_ymd_and_hms(2026, 4, 20, 18, 35, 4).unwrap();
    c.add_message(Message::user("Compare BigQuery and AlloyDB.").with_timestamp(t))
        .await
        .unwrap();
    // The heading shows the local clock (UTC+2 in April); the log keeps the UTC instant.
    let md = std::fs::read_to_string(agents.join("LocalAgent/MEMORY.md")).unwrap();
    assert!(md.contains("### User — 2026-04-20T20:35:04\n"), "{md}");
    let log = std::fs::read_to_string(agents.join("LocalAgent/session.jsonl")).unwrap();
    assert!(log.contains("2026-04-20T18:35:04"), "{log}");
    drop(c);
    let c = persistent("LocalAgent").await;
    assert!(c.messages()[0]
        .content
        .contains("### User — 2026-04-20T20:35:04\n"));
    let stored = c.store().unwrap().messages(c.session_id()).await.unwrap();
    assert_eq!(stored[0].timestamp, t);

    // A folder Swarms wrote in this zone: its naive times are local times, and the file is
    // left as it was (our rendering of the imported messages is the same bytes).
    let swarms = "# Agent Memory\n\n**Conversation:** SwarmsAgent_id_1_conversation\n**Created:** 2026-04-20T20:33:12\n\n---\n\n## Interaction Log\n\n\
                  ### User — 2026-04-20T20:35:04.123456\n\nWe prefer GCP.\n\n---\n\n\
                  ### SwarmsAgent — 2026-10-25T02:30:00\n\nNoted.\n\n---\n\n";
    std::fs::create_dir_all(agents.join("SwarmsAgent")).unwrap();
    std::fs::write(agents.join("SwarmsAgent/MEMORY.md"), swarms).unwrap();
    let c = persistent("SwarmsAgent").await;
    let stored = c.store().unwrap().messages(c.session_id()).await.unwrap();
    assert_eq!(
        stored[0].timestamp,
        t + chrono::Duration::microseconds(123_456)
    );
    // 02:30 on the night the clocks go back is shown twice: the earlier instant is taken.
    assert_eq!(
        stored[1].timestamp,
        Utc.with_ymd_and_hms(2026, 10, 25, 0, 30, 0).unwrap()
    );
    assert_eq!(
        std::fs::read_to_string(agents.join("SwarmsAgent/MEMORY.md")).unwrap(),
        swarms
    );
    // The formats crate's folder import reads the same local times.
    let doc = agentmem_formats::swarms::import(DEFAULT_WORKSPACE_DIR).unwrap();
    let imported = doc
        .sessions
        .iter()
        .find(|s| s.id.as_str() == "SwarmsAgent")
        .unwrap();
    let times: Vec<_> = imported.messages.iter().map(|m| m.timestamp).collect();
    let stored: Vec<_> = stored.iter().map(|m| m.timestamp).collect();
    assert_eq!(times, stored);
}
