//! Opening a root folder: its folders, the schema file, and what interrupted deletions and
//! forks left behind.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

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
            Ok(bytes) => Self::parse(layout, &bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(SchemaFile::new()),
            Err(e) => Err(io_error(&layout.schema, "cannot read", e)),
        }
    }

    fn parse(layout: &Layout, bytes: &[u8]) -> Result<Self> {
        serde_json::from_slice(bytes).map_err(|e| {
            Error::corrupt(format!(
                "{} is not an agentmem schema file",
                layout.schema.display()
            ))
            .with_source(e)
        })
    }

    fn write(&self, layout: &Layout) -> Result<()> {
        let mut bytes = serde_json::to_vec_pretty(self)
            .map_err(|e| Error::backend("cannot serialize the schema file").with_source(e))?;
        bytes.push(b'\n');
        write_atomic(&layout.root, &layout.schema, &bytes)
    }
}

/// The schema file's properties as last read, kept with an open handle of the file they came
/// from, so that a property read (the encryption guard makes one before every write) costs a
/// `stat` rather than a read and a parse. Every write of the schema file replaces it by a
/// rename, and the open handle keeps the replaced file's inode from being reused, so a `stat`
/// finding the same inode, size and modification time finds the file these were read from.
#[derive(Debug, Default)]
pub(crate) struct PropertyCache(Mutex<Option<CachedProperties>>);

#[derive(Debug)]
struct CachedProperties {
    /// Holds the inode `stamp` names.
    _file: File,
    stamp: FileStamp,
    properties: BTreeMap<String, String>,
}

/// What tells one schema file from its replacements.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileStamp {
    device: u64,
    inode: u64,
    len: u64,
    modified: Option<SystemTime>,
}

impl FileStamp {
    #[cfg(unix)]
    fn of(meta: &std::fs::Metadata) -> Option<Self> {
        use std::os::unix::fs::MetadataExt;
        Some(FileStamp {
            device: meta.dev(),
            inode: meta.ino(),
            len: meta.len(),
            modified: meta.modified().ok(),
        })
    }

    /// Without inode numbers a replaced file cannot be told apart: nothing is cached.
    #[cfg(not(unix))]
    fn of(_: &std::fs::Metadata) -> Option<Self> {
        None
    }
}

impl PropertyCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<CachedProperties>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The store property `name` when the schema file is the one last read (a `stat`, cheap
    /// enough for the async thread); `None` when it has to be read.
    pub(crate) fn get(&self, layout: &Layout, name: &str) -> Option<Option<String>> {
        let stamp = FileStamp::of(&std::fs::metadata(&layout.schema).ok()?)?;
        let cached = self.lock();
        let cached = cached.as_ref().filter(|c| c.stamp == stamp)?;
        Some(cached.properties.get(name).cloned())
    }
}

/// The store property `name`, read from the schema file (and kept in `cache`).
pub(crate) fn read_property(
    layout: &Layout, cache: &PropertyCache, name: &str,
) -> Result<Option<String>> {
    let mut file = match File::open(&layout.schema) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error(&layout.schema, "cannot read", e)),
    };
    // The stamp of the handle read, so the properties cached are this file's.
    let stamp = file
        .metadata()
        .map_err(|e| io_error(&layout.schema, "cannot read", e))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| io_error(&layout.schema, "cannot read", e))?;
    let properties = SchemaFile::parse(layout, &bytes)?.properties;
    let found = properties.get(name).cloned();
    if let Some(stamp) = FileStamp::of(&stamp) {
        *cache.lock() = Some(CachedProperties {
            _file: file,
            stamp,
            properties,
        });
    }
    Ok(found)
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
            // (that one names its format), so it is set aside and written anew, with the
            // store properties it still shows. Properties lost with it could include the
            // encryption marker, without which the store would take plaintext: when they
            // cannot be read back and the store holds encrypted records, the store is
            // refused and the file left as it is, for someone to restore.
            Err(e) => {
                let properties = match salvage_properties(&bytes) {
                    Salvage::Properties(properties) => properties,
                    Salvage::Unknown if holds_envelopes(&layout.root)? => {
                        return Err(Error::corrupt(format!(
                            "{} is damaged ({e}) and its store properties cannot be read \
                             back, while the store holds encrypted records: it may have held \
                             the store's encryption marker, without which the store would take \
                             plaintext; it is left as it is: restore it from a backup, or move \
                             it aside to open the store without its properties",
                            layout.schema.display()
                        )));
                    }
                    Salvage::Unknown => BTreeMap::new(),
                };
                let problem = format!("not an agentmem schema file ({e})");
                let aside = Aside::WholeFile;
                findings.quarantine(None, &layout.root, &layout.schema, aside, problem)?;
                let rebuilt = SchemaFile {
                    properties,
                    ..SchemaFile::new()
                };
                rebuilt.write(layout)?;
                Some(rebuilt)
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

/// What a damaged schema file still tells of the store properties it held.
#[derive(Debug, PartialEq)]
enum Salvage {
    /// Its properties, read back (none when it shows a schema file that held none).
    Properties(BTreeMap<String, String>),
    /// Nothing certain: it may have held properties that are lost.
    Unknown,
}

/// Reads the store properties back from a damaged schema file: when it still parses as a JSON
/// object (invalid UTF-8 read as U+FFFD, as a byte flipped inside a string does not hide the
/// rest) whose `properties`, if any, are all strings. A name or value touched by invalid UTF-8
/// (U+FFFD) is not trusted, nor is a missing `properties` unless the object still shows the
/// schema file's own fields (`format`, `schema_version`) untouched.
fn salvage_properties(bytes: &[u8]) -> Salvage {
    const LOST: char = char::REPLACEMENT_CHARACTER;
    let text = String::from_utf8_lossy(bytes);
    let Ok(serde_json::Value::Object(fields)) = serde_json::from_str(&text) else {
        return Salvage::Unknown;
    };
    if fields.keys().any(|name| name.contains(LOST)) {
        return Salvage::Unknown;
    }
    let Some(properties) = fields.get("properties") else {
        let schema_file = fields.contains_key("format") && fields.contains_key("schema_version");
        return if schema_file {
            Salvage::Properties(BTreeMap::new())
        } else {
            Salvage::Unknown
        };
    };
    let Some(properties) = properties.as_object() else {
        return Salvage::Unknown;
    };
    let mut salvaged = BTreeMap::new();
    for (name, value) in properties {
        match value.as_str() {
            Some(value) if !name.contains(LOST) && !value.contains(LOST) => {
                salvaged.insert(name.clone(), value.to_owned());
            }
            _ => return Salvage::Unknown,
        }
    }
    Salvage::Properties(salvaged)
}

/// The prefix of every value `agentmem-crypt`'s encryption layer writes (its
/// `ENVELOPE_PREFIX` and metadata entry): a file holding it holds encrypted records.
const ENVELOPE_MARK: &[u8] = b"agentmem-enc:v1";

/// Whether any file under `dir` holds an encrypted record (read in chunks, never whole).
/// Read only when a damaged schema file's properties are lost, which is rare.
fn holds_envelopes(dir: &Path) -> Result<bool> {
    use std::io::Read as _;
    let entries = std::fs::read_dir(dir).map_err(|e| io_error(dir, "cannot list", e))?;
    for entry in entries {
        let path = entry.map_err(|e| io_error(dir, "cannot list", e))?.path();
        let kind =
            std::fs::symlink_metadata(&path).map_err(|e| io_error(&path, "cannot stat", e))?;
        if kind.is_dir() {
            if holds_envelopes(&path)? {
                return Ok(true);
            }
            continue;
        }
        if !kind.is_file() {
            continue;
        }
        let mut file = std::fs::File::open(&path).map_err(|e| io_error(&path, "cannot read", e))?;
        // A chunk starts with the end of the one before, so a mark across the cut is found.
        let keep = ENVELOPE_MARK.len() - 1;
        let mut window = vec![0u8; 64 * 1024 + keep];
        let mut filled = 0;
        loop {
            let read = file
                .read(&mut window[filled..])
                .map_err(|e| io_error(&path, "cannot read", e))?;
            if read == 0 {
                break;
            }
            filled += read;
            if window[..filled]
                .windows(ENVELOPE_MARK.len())
                .any(|w| w == ENVELOPE_MARK)
            {
                return Ok(true);
            }
            let tail = filled.saturating_sub(keep);
            window.copy_within(tail..filled, 0);
            filled -= tail;
        }
    }
    Ok(false)
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
