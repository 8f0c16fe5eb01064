//! Workspace scoping on real repositories built with git2 in temp folders, checked against the
//! `git` binary where one is installed.
#![cfg(feature = "git")]

use std::path::{Path, PathBuf};
use std::process::Command;

use agentmem_workspace::{
    resolve_workspace, root_commit, session_id, workspace_id_with, WorkspaceId,
};
use git2::{Oid, Repository, Signature, Time};

/// Creates a commit with an empty tree at committer time `secs` on `refname` (or none).
fn commit(repo: &Repository, refname: Option<&str>, secs: i64, parents: &[Oid], msg: &str) -> Oid {
    let sig = Signature::new("Test", "test@example.com", &Time::new(secs, 0)).expect("signature");
    let tree_id = repo
        .treebuilder(None)
        .and_then(|b| b.write())
        .expect("empty tree");
    let tree = repo.find_tree(tree_id).expect("tree");
    let parents: Vec<_> = parents
        .iter()
        .map(|p| repo.find_commit(*p).expect("parent"))
        .collect();
    let refs: Vec<_> = parents.iter().collect();
    repo.commit(refname, &sig, &sig, msg, &tree, &refs)
        .expect("commit")
}

/// A repository with a linear history of `n` commits; returns it with its root commit.
fn linear_repo(dir: &Path, n: i64) -> (Repository, Oid) {
    let repo = Repository::init(dir).expect("init");
    let root = commit(&repo, Some("HEAD"), 1_000, &[], "root");
    let mut tip = root;
    for i in 1..n {
        tip = commit(&repo, Some("HEAD"), 1_000 + i * 60, &[tip], "next");
    }
    (repo, root)
}

fn real(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).expect("real path")
}

fn git_available() -> bool {
    let ok = Command::new("git")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        eprintln!("skipping comparison with the git binary: `git` is not installed");
    }
    ok
}

/// Runs `git <args>`, which must succeed, and returns what it printed.
fn git(args: &[&str]) -> Vec<u8> {
    let out = Command::new("git").args(args).output().expect("run git");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// What the git binary says: the last line of `git rev-list --max-parents=0 HEAD`.
fn git_cli_root(dir: &Path) -> String {
    let dir = dir.to_str().expect("utf-8 path");
    let out = git(&["-C", dir, "rev-list", "--max-parents=0", "HEAD"]);
    String::from_utf8(out)
        .expect("utf-8")
        .lines()
        .last()
        .expect("a root")
        .to_string()
}

/// A commit of a history: its name (also its message), the ref it lands on, its committer
/// time and the names of its parents (earlier commits).
type Spec<'a> = (&'a str, &'a str, i64, &'a [&'a str]);

/// Builds the history `commits` in a new repository at `dir` and checks that its root is the
/// commit named `root`, as the git binary says.
fn assert_history_root(dir: &Path, commits: &[Spec<'_>], root: &str) {
    let repo = Repository::init(dir).expect("init");
    let mut made = std::collections::HashMap::new();
    for &(name, refname, secs, parents) in commits {
        let parents: Vec<Oid> = parents.iter().map(|p| made[p]).collect();
        made.insert(name, commit(&repo, Some(refname), secs, &parents, name));
    }
    assert_matches_git_cli(dir, made[root]);
}

fn assert_matches_git_cli(dir: &Path, expected: Oid) {
    let ours = root_commit(dir).expect("readable").expect("has commits");
    assert_eq!(ours, expected.to_string());
    if git_available() {
        assert_eq!(
            git_cli_root(dir),
            ours,
            "git rev-list disagrees in {}",
            dir.display()
        );
    }
}

#[test]
fn checkout_subfolder_worktree_and_clone_share_one_id() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let main = tmp.path().join("main");
    let (repo, root) = linear_repo(&main, 3);
    let expected = WorkspaceId::Git(root.to_string());
    assert_eq!(resolve_workspace(&main), expected);

    let sub = main.join("src/deep");
    std::fs::create_dir_all(&sub).expect("subfolder");
    assert_eq!(resolve_workspace(&sub), expected);

    let wt_path = tmp.path().join("linked-worktree");
    repo.worktree("linked", &wt_path, None)
        .expect("add worktree");
    assert_eq!(resolve_workspace(&wt_path), expected);

    let clone_path = tmp.path().join("elsewhere/second-clone");
    Repository::clone(main.to_str().expect("utf-8 path"), &clone_path).expect("clone");
    assert_eq!(resolve_workspace(&clone_path), expected);

    // One agent, one history across all of them; another agent gets its own.
    let id = session_id(&expected, Some("assistant"));
    assert_eq!(
        session_id(&resolve_workspace(&wt_path), Some("assistant")),
        id
    );
    assert_eq!(
        session_id(&resolve_workspace(&clone_path), Some("assistant")),
        id
    );
    assert_ne!(session_id(&expected, Some("reviewer")), id);
}

#[test]
fn unrelated_repositories_get_different_ids() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (_, a) = linear_repo(&tmp.path().join("a"), 1);
    let repo_b = Repository::init(tmp.path().join("b")).expect("init");
    let b = commit(&repo_b, Some("HEAD"), 2_000, &[], "another root");
    assert_ne!(a, b);
    assert_ne!(
        resolve_workspace(&tmp.path().join("a")),
        resolve_workspace(&tmp.path().join("b"))
    );
}

#[test]
fn several_roots_pick_the_last_root_git_rev_list_prints() {
    let tmp = tempfile::tempdir().expect("temp dir");

    // Root r1 with a child x on HEAD, root r2 on another branch, then a merge of x and r2, at
    // these committer times.
    let two_roots = |[r1, x, r2, merge]: [i64; 4]| -> [Spec<'static>; 4] {
        [
            ("r1", "HEAD", r1, &[]),
            ("x", "HEAD", x, &["r1"]),
            ("r2", "refs/heads/other", r2, &[]),
            ("merge", "HEAD", merge, &["x", "r2"]),
        ]
    };
    // Older root reached later: git lists M, X, r2, r1; the last root is r1.
    let dated = two_roots([100, 300, 200, 400]);
    assert_history_root(&tmp.path().join("dated"), &dated, "r1");
    // Clock skew: r1 is dated after r2 but hides behind an old commit, so git reaches it last.
    // Picking the oldest root by date would answer r2 here.
    let skewed = two_roots([500, 100, 300, 600]);
    assert_history_root(&tmp.path().join("skewed"), &skewed, "r1");

    // Equal dates: ties keep the order parents were reached (an octopus merge of three roots).
    let octopus = |parents: &'static [&'static str]| -> [Spec<'static>; 4] {
        [
            ("a", "refs/heads/a", 100, &[]),
            ("b", "refs/heads/b", 100, &[]),
            ("c", "refs/heads/c", 100, &[]),
            ("octopus", "HEAD", 200, parents),
        ]
    };
    let (ties, reversed) = (octopus(&["a", "b", "c"]), octopus(&["c", "b", "a"]));
    assert_history_root(&tmp.path().join("ties"), &ties, "c");
    assert_history_root(&tmp.path().join("ties-reversed"), &reversed, "a");
}

#[test]
fn random_merged_histories_agree_with_git_binary() {
    if !git_available() {
        return;
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    // A small linear congruential generator: deterministic shapes without a rand dependency.
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |n: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % n
    };
    for seed in 0..8 {
        let dir = tmp.path().join(format!("random-{seed}"));
        let repo = Repository::init(&dir).expect("init");
        let mut commits: Vec<Oid> = Vec::new();
        for i in 0..40 {
            // Few distinct dates, so ties and skew are common.
            let time = 1_000 + next(12) as i64 * 10;
            let parents: Vec<Oid> = if commits.is_empty() || next(6) == 0 {
                Vec::new()
            } else {
                let mut ps = vec![commits[next(commits.len() as u64) as usize]];
                if next(3) == 0 {
                    let other = commits[next(commits.len() as u64) as usize];
                    if !ps.contains(&other) {
                        ps.push(other);
                    }
                }
                ps
            };
            commits.push(commit(&repo, None, time, &parents, &format!("c{i}")));
        }
        // HEAD merges every commit that nothing else descends from, so all roots are reachable.
        let heads: Vec<Oid> = commits
            .iter()
            .copied()
            .filter(|c| {
                !commits.iter().any(|other| {
                    repo.find_commit(*other)
                        .expect("commit")
                        .parent_ids()
                        .any(|p| p == *c)
                })
            })
            .collect();
        commit(
            &repo,
            Some("HEAD"),
            1_000 + next(12) as i64 * 10,
            &heads,
            "head",
        );
        let ours = root_commit(&dir).expect("readable").expect("has commits");
        assert_eq!(git_cli_root(&dir), ours, "seed {seed}");
    }
}

#[test]
fn shallow_clone_is_scoped_by_its_shallow_root() {
    if !git_available() {
        return;
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let origin = tmp.path().join("origin");
    let (repo, root) = linear_repo(&origin, 4);
    let tip = repo
        .head()
        .and_then(|h| h.peel_to_commit())
        .expect("tip")
        .id();
    let shallow = tmp.path().join("shallow");
    let url = format!("file://{}", real(&origin).display());
    let into = shallow.to_str().expect("utf-8 path");
    git(&["clone", "--quiet", "--depth", "1", &url, into]);
    assert!(Repository::open(&shallow).expect("open").is_shallow());

    // git treats the shallow boundary as parentless: the tip is the root there.
    assert_eq!(git_cli_root(&shallow), tip.to_string());
    assert_eq!(
        resolve_workspace(&shallow),
        WorkspaceId::Git(tip.to_string())
    );
    assert_ne!(
        resolve_workspace(&shallow),
        WorkspaceId::Git(root.to_string())
    );
}

#[test]
fn empty_repository_is_its_work_tree_root_until_the_first_commit() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("empty");
    let repo = Repository::init(&dir).expect("init");
    let sub = dir.join("sub");
    std::fs::create_dir_all(&sub).expect("subfolder");
    let expected = WorkspaceId::Dir(real(&dir));
    assert_eq!(resolve_workspace(&dir), expected);
    assert_eq!(
        resolve_workspace(&sub),
        expected,
        "subfolders agree on the root"
    );
    assert_eq!(root_commit(&dir).expect("readable"), None);

    let first = commit(&repo, Some("HEAD"), 1_000, &[], "first");
    assert_eq!(resolve_workspace(&sub), WorkspaceId::Git(first.to_string()));
}

#[test]
fn bare_repository_is_its_root_commit_or_its_path_when_empty() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let origin = tmp.path().join("origin");
    let (_, root) = linear_repo(&origin, 2);
    let bare = tmp.path().join("bare.git");
    git2::build::RepoBuilder::new()
        .bare(true)
        .clone(origin.to_str().expect("utf-8 path"), &bare)
        .expect("bare clone");
    assert_eq!(resolve_workspace(&bare), WorkspaceId::Git(root.to_string()));
    if git_available() {
        assert_eq!(git_cli_root(&bare), root.to_string());
    }

    let empty_bare = tmp.path().join("empty.git");
    Repository::init_bare(&empty_bare).expect("init bare");
    assert_eq!(
        resolve_workspace(&empty_bare),
        WorkspaceId::Dir(real(&empty_bare))
    );
}

#[test]
fn plain_folders_are_their_real_path_and_missing_ones_global() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("plain");
    std::fs::create_dir_all(&dir).expect("folder");
    assert_eq!(resolve_workspace(&dir), WorkspaceId::Dir(real(&dir)));
    assert!(matches!(root_commit(&dir), Err(e) if e.kind() == agentmem_core::ErrorKind::NotFound));

    #[cfg(unix)]
    {
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).expect("symlink");
        assert_eq!(
            resolve_workspace(&link),
            WorkspaceId::Dir(real(&dir)),
            "links are resolved"
        );
    }
    assert_eq!(
        resolve_workspace(&tmp.path().join("missing")),
        WorkspaceId::Global
    );
    assert_eq!(workspace_id_with(&dir, true), WorkspaceId::Global);
    assert_eq!(workspace_id_with(&dir, false), WorkspaceId::Dir(real(&dir)));
}
