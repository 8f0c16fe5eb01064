//! The whole conformance suite on the file backend, each test in a fresh folder.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentmem_core::AgentMemory;
use agentmem_file::{Durability, FileConfig, FileMemory};

const PREFIX: &str = "agentmem-file-conformance-";

/// The folders must outlive the stores, which the tests drop at their end, so they are kept
/// on disk and removed by a later run once the process that made them is gone (its pid is in
/// the name; `/proc` tells whether it still runs).
fn remove_folders_of_finished_runs(temp: &Path) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.split('-').next())
        else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

fn fresh_folder() -> PathBuf {
    static CLEANED: std::sync::Once = std::sync::Once::new();
    let temp = std::env::temp_dir();
    CLEANED.call_once(|| remove_folders_of_finished_runs(&temp));
    tempfile::Builder::new()
        .prefix(&format!("{PREFIX}{}-", std::process::id()))
        .tempdir_in(&temp)
        .expect("create a temp folder")
        .keep()
}

async fn store() -> Option<Arc<dyn AgentMemory>> {
    // Buffered: the suite checks behaviour, not power-loss durability (tested elsewhere).
    let config = FileConfig::new(fresh_folder()).with_durability(Durability::Buffered);
    Some(Arc::new(
        FileMemory::connect_with(config)
            .await
            .expect("open the file store"),
    ))
}

agentmem_testkit::conformance_tests!(store);
