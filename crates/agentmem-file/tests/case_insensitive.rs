//! On a file system that ignores case in names (macOS's and Windows's by default), session
//! names that differ only in case would share one folder. The store refuses the second
//! spelling with `Conflict` and leaves the first session as it was.
//!
//! Needs a folder on such a file system in `AGENTMEM_CASEFOLD_DIR`; `.ci/run` mounts
//! `.ci/casefold_fs.py` (a case-insensitive FUSE mirror) for it. Skipped when unset, unless
//! `AGENTMEM_REQUIRE_SERVICES` is set.

mod common;

use std::path::PathBuf;

use agentmem_core::{AgentMemoryExt, ErrorKind, Message, SessionStore};
use common::{open, sid};

const VAR: &str = "AGENTMEM_CASEFOLD_DIR";

/// The case-insensitive folder, or `None` (the test is skipped) when there is none.
fn casefold_dir() -> Option<PathBuf> {
    match std::env::var_os(VAR).filter(|v| !v.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir)),
        None => agentmem_testkit::service_unavailable(
            "a case-insensitive file system",
            VAR,
            &format!("{VAR} is not set"),
        ),
    }
}

#[tokio::test]
async fn names_differing_only_in_case_are_refused_where_case_is_ignored() {
    let Some(base) = casefold_dir() else { return };
    let dir = tempfile::tempdir_in(&base).expect("temp dir on the case-insensitive file system");
    assert!(
        dir.path().join("AGENTS").exists() || {
            std::fs::create_dir(dir.path().join("probe")).expect("mkdir");
            dir.path().join("PROBE").exists()
        },
        "{VAR} must name a folder on a file system that ignores case"
    );
    let store = open(dir.path()).await;
    store
        .append_one(&sid("Alice"), Message::user("I am Alice"))
        .await
        .expect("the first spelling is stored");

    let err = store
        .append_one(&sid("alice"), Message::user("I am alice"))
        .await
        .expect_err("the second spelling would write into Alice's folder");
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    assert!(err.to_string().contains("`Alice`"), "{err}");

    // Another process (a fresh store) neither reads Alice's messages as alice's nor writes.
    let other = open(dir.path()).await;
    let read = other.load(&sid("alice"), None).await;
    assert_eq!(
        read.as_ref().map_err(|e| e.kind()).err(),
        Some(ErrorKind::Conflict),
        "{read:?}"
    );
    let alice = other
        .messages(&sid("Alice"))
        .await
        .expect("Alice's session reads");
    assert_eq!(alice.len(), 1);
    assert_eq!(alice[0].content, "I am Alice");
    let listed = other.session_ids().await.expect("list");
    assert_eq!(listed, ["Alice"]);
}
