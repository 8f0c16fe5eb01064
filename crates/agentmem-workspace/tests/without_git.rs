//! Without the `git` feature repositories are plain folders: `dir:<real path>` (documented).
#![cfg(not(feature = "git"))]

use agentmem_workspace::{resolve_workspace, WorkspaceId};

#[test]
fn repositories_are_scoped_by_folder_without_the_git_feature() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let repo = git2::Repository::init(tmp.path()).expect("init");
    let sig = git2::Signature::now("Test", "test@example.com").expect("signature");
    let tree_id = repo
        .treebuilder(None)
        .and_then(|b| b.write())
        .expect("empty tree");
    let tree = repo.find_tree(tree_id).expect("tree");
    repo.commit(Some("HEAD"), &sig, &sig, "root", &tree, &[])
        .expect("commit");
    let sub = tmp.path().join("sub");
    std::fs::create_dir_all(&sub).expect("subfolder");
    let real = std::fs::canonicalize(&sub).expect("real path");
    assert_eq!(resolve_workspace(&sub), WorkspaceId::Dir(real));
}
