//! Git repositories as workspaces (feature `git`).
//!
//! A repository is identified by its root commit, exactly as `git rev-list --max-parents=0 HEAD`
//! would report it (the last line of its output), so ids agree with PraisonAI's. Defined results:
//!
//! - **Clones and linked worktrees** share their history, hence their root commit and id.
//! - **Several root commits** (histories joined by a merge): git lists commits newest first by
//!   committer date, ties in the order they were reached; the *last* root listed wins. This is
//!   reproduced here, not approximated, and checked against the `git` binary in the tests.
//! - **Shallow clones**: the commits at the shallow boundary count as roots (git treats them as
//!   parentless), so a `--depth 1` clone is `git:<its tip>` and differs from a full clone until
//!   it is deepened or unshallowed. Again what `git rev-list` prints there.
//! - **An empty repository** (no commit on `HEAD`, where `git rev-list` fails):
//!   `dir:<real path of the work tree root>`; it becomes `git:<first commit>` after the first
//!   commit. (PraisonAI would use the current directory instead of the root.)
//! - **A bare repository** with commits: `git:<root commit>`, like its clones; an empty bare
//!   repository: `dir:<real path of the bare repository>`.
//! - Replace refs and the legacy `info/grafts` file are not honoured.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};
use std::path::Path;

use agentmem_core::{Error, ErrorKind, Result};
use git2::{Oid, Repository};

use crate::WorkspaceId;

/// The root commit of the repository holding `path` (full lowercase hex id): the last line of
/// `git rev-list --max-parents=0 HEAD` run there.
///
/// `Ok(None)` when `HEAD` has no commit yet (an empty repository or an unborn branch).
/// Errors: `NotFound` when `path` is in no repository; `Backend` (with git's error as source)
/// when the repository cannot be read.
pub fn root_commit(path: &Path) -> Result<Option<String>> {
    let repo = Repository::discover(path).map_err(|e| {
        Error::new(
            ErrorKind::NotFound,
            format!("no git repository at or above {}", path.display()),
        )
        .with_source(e)
    })?;
    Ok(root_commit_of(&repo)
        .map_err(|e| Error::backend("cannot walk the git history").with_source(e))?
        .map(|oid| oid.to_string()))
}

/// The workspace of `path` when it lies in a repository; `None` when it does not, or when the
/// repository cannot be read (the caller then falls back to the folder itself).
pub(crate) fn repository_workspace(path: &Path) -> Option<WorkspaceId> {
    let repo = Repository::discover(path).ok()?;
    match root_commit_of(&repo) {
        Ok(Some(oid)) => Some(WorkspaceId::Git(oid.to_string())),
        Ok(None) => {
            let root = repo.workdir().unwrap_or_else(|| repo.path());
            std::fs::canonicalize(root).ok().map(WorkspaceId::Dir)
        }
        Err(_) => None,
    }
}

/// Walks history from `HEAD` in `git rev-list`'s default order and returns the last parentless
/// commit met; `None` when `HEAD` is unborn.
fn root_commit_of(repo: &Repository) -> std::result::Result<Option<Oid>, git2::Error> {
    let head = match repo.head() {
        Ok(head) => head,
        Err(e)
            if matches!(
                e.code(),
                git2::ErrorCode::UnbornBranch | git2::ErrorCode::NotFound
            ) =>
        {
            return Ok(None)
        }
        Err(e) => return Err(e),
    };
    let start = head.peel_to_commit()?;
    let shallow = shallow_boundary(repo);

    // git (revision.c, unlimited walk) keeps a list sorted by committer date, newest first,
    // inserting each newly seen parent after every entry of the same date; popping the head of
    // that list is the same as popping a max-heap on (date, earliest insertion).
    let mut queue = BinaryHeap::new();
    let mut seen = HashSet::new();
    let mut order: u64 = 0;
    seen.insert(start.id());
    queue.push((start.time().seconds(), Reverse(order), start.id()));
    let mut last_root = None;
    while let Some((_, _, oid)) = queue.pop() {
        let commit = repo.find_commit(oid)?;
        if shallow.contains(&oid) || commit.parent_count() == 0 {
            last_root = Some(oid);
            continue;
        }
        for parent in commit.parent_ids() {
            if seen.insert(parent) {
                order += 1;
                let time = repo.find_commit(parent)?.time().seconds();
                queue.push((time, Reverse(order), parent));
            }
        }
    }
    Ok(last_root)
}

/// The commits listed in the repository's `shallow` file, which git treats as parentless.
/// Read directly so the result does not depend on how libgit2 grafts shallow commits.
fn shallow_boundary(repo: &Repository) -> HashSet<Oid> {
    if !repo.is_shallow() {
        return HashSet::new();
    }
    std::fs::read_to_string(repo.commondir().join("shallow"))
        .map(|text| {
            text.lines()
                .filter_map(|line| Oid::from_str(line.trim()).ok())
                .collect()
        })
        .unwrap_or_default()
}
