//! Opening a root folder: its folders, the schema file, and what interrupted deletions and
//! forks left behind.

use std::collections::BTreeMap;
use std::path::Path;

use agentmem_core::{Error, PropertyChange, Result, SessionId};
use serde::{Deserialize, Serialize};

use crate::fsutil::{create_dirs, io_error, open_lock_file, write_atomic, FileLockGuard};
use crate::layout::{fork_folder_target, Layout, TRASH_PREFIX};
use crate::repair::{Aside, Findings, RepairKind};

/// The schema version of the files this build writes.
pub const SCHEMA_VERSION: u32 = 1;

const SCHEMA_FORMAT: &str = "agentmem-file";

/// `<root>/agentmem.json`.
#[derive(Debug, Serialize, Deserialize)]
struct SchemaFile {
    format: String,
    schema_version: u32,
    /// The store properties (see `SessionStore::set_store_property`); left out while there
    /// are none, so a store that never set one has the file older builds wrote.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    properties: BTreeMap<String, String>,
}

impl SchemaFile {
    fn new() -> Self {
        SchemaFile {
            format: SCHEMA_FORMAT.into(),
            schema_version: SCHEMA_VERSION,
            properties: BTreeMap::new(),
        }
    }

    /// The schema file as it is now (a new one when missing).
    fn read(layout: &Layout) -> Result<Self> {
        match std::fs::read(&layout.schema) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                Error::corrupt(format!(
                    "{} is not an agentmem schema file",
                    layout.schema.display()
                ))
                .with_source(e)
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(SchemaFile::new()),
            Err(e) => Err(io_error(&layout.schema, "cannot read", e)),
        }
    }

    fn write(&self, layout: &Layout) -> Result<()> {
        let mut bytes = serde_json::to_vec_pretty(self)
            .map_err(|e| Error::backend("cannot serialize the schema file").with_source(e))?;
        bytes.push(b'\n');
        write_atomic(&layout.root, &layout.schema, &bytes)
    }
}

/// The store property `name`, read from the schema file.
pub(crate) fn read_property(layout: &Layout, name: &str) -> Result<Option<String>> {
    Ok(SchemaFile::read(layout)?.properties.remove(name))
}

/// Sets the store property `name` to `value` when it is `expected`, holding the exclusive
/// lock of `agentmem.lock` from the read to the rename of the new schema file, so another
/// process (or task: each call opens the lock file anew) cannot slip in between.
pub(crate) fn set_property(layout: &Layout, change: &PropertyChange<'_>) -> Result<bool> {
    let lock = open_lock_file(&layout.properties_lock)?;
    let _held = FileLockGuard::exclusive(&lock, &layout.properties_lock)?;
    let mut schema = SchemaFile::read(layout)?;
    if schema.properties.get(change.name).map(String::as_str) != change.expected {
        return Ok(false);
    }
    let (name, value) = (change.name.to_owned(), change.value.to_owned());
    schema.properties.insert(name, value);
    schema.write(layout)?;
    Ok(true)
}

/// Creates the folders and schema file, checks the schema, empties the trash.
pub(crate) fn prepare_root(layout: &Layout) -> Result<Findings> {
    create_dirs(&layout.root)?;
    create_dirs(&layout.agents)?;
    create_dirs(&layout.locks)?;
    let mut findings = Findings::new(true);
    let schema = match std::fs::read(&layout.schema) {
        Ok(bytes) => match serde_json::from_slice::<SchemaFile>(&bytes) {
            Ok(schema) => Some(schema),
            // Cut off, not JSON, another shape, invalid UTF-8: not another program's file
            // (that one names its format), so it is set aside and written anew.
            Err(e) => {
                let problem = format!("not an agentmem schema file ({e})");
                let aside = Aside::WholeFile;
                findings.quarantine(None, &layout.root, &layout.schema, aside, problem)?;
                None
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io_error(&layout.schema, "cannot read", e)),
    };
    match schema {
        Some(schema) => {
            if schema.format != SCHEMA_FORMAT {
                return Err(Error::corrupt(format!(
                    "{} belongs to {:?}, not to the agentmem file backend",
                    layout.schema.display(),
                    schema.format
                )));
            }
            if schema.schema_version > SCHEMA_VERSION {
                return Err(Error::unsupported(format!(
                    "{} has schema version {}; this agentmem understands up to {SCHEMA_VERSION}: upgrade agentmem",
                    layout.root.display(),
                    schema.schema_version
                )));
            }
        }
        None => SchemaFile::new().write(layout)?,
    }
    if let Ok(entries) = std::fs::read_dir(&layout.agents) {
        for entry in entries.flatten() {
            if entry
                .file_name()
                .to_string_lossy()
                .starts_with(TRASH_PREFIX)
            {
                findings.add(
                    RepairKind::Trash,
                    None,
                    entry.path(),
                    "a session folder whose deletion was interrupted",
                );
                // Another process may be removing it at the same time: errors are expected.
                let _ = std::fs::remove_dir_all(entry.path());
            } else if let Some(target) = fork_folder_target(&entry.file_name().to_string_lossy()) {
                remove_unfinished_fork(layout, &target, &entry.path(), &mut findings);
            }
        }
    }
    Ok(findings)
}

/// Removes the folder of a fork into `target` that a crash left unfinished. A fork holds the
/// target's lock while its folder exists, so the folder is removed only when that lock is
/// free (else a fork is running, or a lease is kept: the next open removes it).
fn remove_unfinished_fork(layout: &Layout, target: &SessionId, dir: &Path, f: &mut Findings) {
    let lock_path = layout.session(target).lock;
    let Ok(lock) = open_lock_file(&lock_path) else {
        return;
    };
    if lock.try_lock().is_ok() {
        f.add(
            RepairKind::TempFile,
            Some(target),
            dir.to_path_buf(),
            "left by an interrupted fork; removed",
        );
        let _ = std::fs::remove_dir_all(dir);
        let _ = lock.unlock();
    }
}
