//! Session ids and workspace ids through the public API, with hash vectors computed
//! independently: `python3 -c "import hashlib; print(hashlib.sha256(b'global:agent').hexdigest()[:8])"`.

use std::path::PathBuf;

use agentmem_workspace::{is_truthy, session_id, session_id_for_key, WorkspaceId};

#[test]
fn session_ids_match_python_hashlib_vectors() {
    let git = WorkspaceId::Git("0123456789abcdef0123456789abcdef01234567".into());
    let dir = WorkspaceId::Dir(PathBuf::from("/home/me/projects/my-app"));
    let cases = [
        (&WorkspaceId::Global, Some("agent"), "history_69b3b98c"),
        (&WorkspaceId::Global, Some("assistant"), "history_9d7d79a1"),
        (
            &WorkspaceId::Global,
            Some("ResearchAgent"),
            "history_b690ce3f",
        ),
        (&git, Some("assistant"), "history_f4dc4192"),
        (&dir, Some("agent"), "history_e7074293"),
        (&dir, Some("assistant"), "history_ddc5f565"),
    ];
    for (workspace, agent, expected) in cases {
        assert_eq!(
            session_id(workspace, agent).as_str(),
            expected,
            "{workspace}:{agent:?}"
        );
    }
    let sha = WorkspaceId::Git("8f5c1e0000000000000000000000000000000000".into());
    assert_eq!(session_id(&sha, None).as_str(), "history_1b451777");
    let unicode = WorkspaceId::Dir(PathBuf::from("/tmp/ünï cødé"));
    assert_eq!(session_id(&unicode, None).as_str(), "history_5dbd7b8e");
    assert_eq!(
        session_id_for_key("global:agent").as_str(),
        "history_69b3b98c"
    );
}

#[test]
fn missing_or_empty_agent_name_means_agent() {
    let named = session_id(&WorkspaceId::Global, Some("agent"));
    assert_eq!(session_id(&WorkspaceId::Global, None), named);
    assert_eq!(session_id(&WorkspaceId::Global, Some("")), named);
    assert_ne!(
        session_id(&WorkspaceId::Global, Some("Agent")),
        named,
        "names are case-sensitive"
    );
}

#[test]
fn different_workspaces_give_different_ids_for_one_agent() {
    let a = WorkspaceId::Dir(PathBuf::from("/projects/a"));
    let b = WorkspaceId::Dir(PathBuf::from("/projects/b"));
    assert_ne!(
        session_id(&a, Some("assistant")),
        session_id(&b, Some("assistant"))
    );
    // Never the old name-only id, so a pre-scoping `assistant` session is not adopted.
    assert_ne!(session_id(&a, Some("assistant")).as_str(), "assistant");
}

#[test]
fn workspace_ids_display_and_parse_back() {
    for text in [
        "global",
        "dir:/home/me/projects/my-app",
        "git:0123456789abcdef0123456789abcdef01234567",
    ] {
        let id: WorkspaceId = text.parse().expect("valid workspace id");
        assert_eq!(id.to_string(), text);
    }
    for bad in [
        "",
        "Global",
        "git:XYZ",
        "git:0123",
        "dir:relative/path",
        "svn:1",
    ] {
        let err = bad.parse::<WorkspaceId>().expect_err(bad);
        assert_eq!(err.kind(), agentmem_core::ErrorKind::InvalidInput, "{bad}");
    }
    assert!(WorkspaceId::Global.is_global());
}

#[test]
fn global_switch_accepts_exactly_1_true_yes_in_any_case() {
    for on in ["1", "true", "TRUE", "True", "yes", "YES", "yEs"] {
        assert!(is_truthy(on), "{on}");
    }
    for off in [
        "", "0", "false", "no", "on", "y", " true", "true ", "2", "enabled",
    ] {
        assert!(!is_truthy(off), "{off:?}");
    }
}
