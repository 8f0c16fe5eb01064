//! The agentmem home folder.

use std::path::PathBuf;

use agentmem_core::{Error, Result};

/// The environment variable naming the agentmem home folder.
pub const HOME_ENV: &str = "AGENTMEM_HOME";

/// The agentmem home: `$AGENTMEM_HOME` when set and not empty, else `$HOME/.agentmem`
/// (the same rule as the file backend's default root, so both agree).
///
/// `InvalidInput` when neither variable is set.
pub fn agentmem_home() -> Result<PathBuf> {
    if let Some(home) = std::env::var_os(HOME_ENV).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(home));
    }
    match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        Some(home) => Ok(PathBuf::from(home).join(".agentmem")),
        None => Err(Error::invalid_input(
            "no agentmem home: set AGENTMEM_HOME (or HOME)",
        )),
    }
}
