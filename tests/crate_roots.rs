//! The workspace lint table leaves `missing_docs` and `clippy::unwrap_used` to each library's
//! and binary's root (tests, benches and examples are no public API, and there a failed unwrap
//! is a failed test). This test fails when a crate root lacks them, so a new crate cannot
//! silently drop the rules.

use std::fs;
use std::path::{Path, PathBuf};

/// The attribute every library and binary root carries.
const ROOT_LINTS: &str = "#![warn(missing_docs, clippy::unwrap_used)]";

/// `dir`'s entries, sorted; none when `dir` does not exist.
fn entries(dir: &Path) -> Vec<PathBuf> {
    let Ok(read) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = read
        .map(|entry| entry.expect("a directory entry").path())
        .collect();
    paths.sort();
    paths
}

/// Every library and binary root of the workspace: the facade's `src/lib.rs`, and each
/// crate's `src/lib.rs`, `src/main.rs` and `src/bin/*.rs`.
fn crate_roots(workspace: &Path) -> Vec<PathBuf> {
    let mut roots = vec![workspace.join("src/lib.rs")];
    for krate in entries(&workspace.join("crates")) {
        let src = krate.join("src");
        roots.extend(
            ["lib.rs", "main.rs"]
                .iter()
                .map(|name| src.join(name))
                .filter(|path| path.is_file()),
        );
        roots.extend(
            entries(&src.join("bin"))
                .into_iter()
                .filter(|path| path.extension().is_some_and(|e| e == "rs")),
        );
    }
    roots
}

#[test]
fn every_crate_root_warns_on_missing_docs_and_unwraps() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"));
    let roots = crate_roots(workspace);
    assert!(
        roots.len() > 15,
        "found only {} crate roots under {}",
        roots.len(),
        workspace.display()
    );
    let missing: Vec<String> = roots
        .iter()
        .filter(|root| {
            !fs::read_to_string(root)
                .expect("a readable crate root")
                .lines()
                .any(|line| line.trim() == ROOT_LINTS)
        })
        .map(|root| root.display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "these crate roots lack `{ROOT_LINTS}`:\n{}",
        missing.join("\n")
    );
}
