//! `agentmem doctor [--repair]`: schema version, counts, and torn or corrupt records.
//!
//! Every backend is checked by reading everything back (sessions, archives, memory items,
//! checkpoint threads, the knowledge graph):
//! what fails to read as `CorruptData` is reported. The file backend is checked more deeply,
//! through `FileStore::check`, *before* anything else touches a session (the backend repairs
//! a session on first access, so a check that loaded first would only ever see healthy files).
//! With `--repair`, the files of each damaged session (and a damaged memory log or graph log)
//! are copied to a backup folder first, then repaired.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentmem::file::{FileStore, RepairReport};
use agentmem::Backend;
use agentmem_core::{
    AgentMemory, CheckpointQuery, Error, ErrorKind, GraphQuery, Layered, MemoryFilter, Result,
    SessionId, SessionStore, StoreOptions,
};
use agentmem_formats::create_private_dir;
use serde::Serialize;

use super::{redact, store_error};
use crate::fsio::io_error;
use crate::output::{count, Output};

#[derive(Debug, Serialize, Default)]
struct Counts {
    sessions: u64,
    messages: u64,
    archives: u64,
    archived_messages: u64,
    memories: u64,
    /// Checkpoint threads, and their checkpoints (stores that keep checkpoints).
    threads: u64,
    checkpoints: u64,
    /// The knowledge graph's entities and relations (stores that keep one).
    entities: u64,
    relations: u64,
    /// Sessions left uncounted because reading them would have repaired them.
    unchecked_sessions: u64,
}

#[derive(Debug, Serialize)]
struct Problem {
    kind: String,
    session: Option<String>,
    path: Option<String>,
    detail: String,
    repaired: bool,
}

impl Problem {
    /// A record that cannot be read back (never repaired automatically).
    fn corrupt(session: Option<&SessionId>, e: &Error) -> Self {
        Problem {
            kind: "corrupt".into(),
            session: session.map(ToString::to_string),
            path: None,
            detail: crate::one_line(e),
            repaired: false,
        }
    }

    /// Something other than a session (a checkpoint thread, the graph), named by `what`, that
    /// cannot be read back.
    fn corrupt_at(what: String, e: &Error) -> Self {
        Problem {
            kind: "corrupt".into(),
            session: None,
            path: Some(what),
            detail: crate::one_line(e),
            repaired: false,
        }
    }

    /// What the file backend found (and maybe repaired).
    fn found(r: RepairReport) -> Self {
        Problem {
            kind: r.kind.as_str().to_string(),
            session: r.session.map(|s| s.to_string()),
            path: Some(r.path.display().to_string()),
            detail: r.detail,
            repaired: r.repaired,
        }
    }
}

#[derive(Debug, Serialize)]
struct DoctorReport {
    store: String,
    backend: &'static str,
    schema_version: u32,
    counts: Counts,
    problems: Vec<Problem>,
    backup: Option<String>,
    /// How far the vectors lag behind the texts, when the store URL names an embedder.
    #[serde(skip_serializing_if = "Option::is_none")]
    index: Option<super::recall::IndexStatus>,
}

/// Runs the checks on the store at `url`.
pub async fn run(
    url: &str, keys: &super::Keys, out: &mut Output, repair: bool, backup_dir: Option<PathBuf>,
) -> Result<()> {
    let backend = Backend::from_url(url)?;
    let mut report = if backend == Backend::File {
        // The backend parses its own options; the store-level ones (key, embedder) come off.
        let (file_url, _) = StoreOptions::split(url).map_err(|e| store_error(url, e))?;
        let store = FileStore::connect(&file_url)
            .await
            .map_err(|e| store_error(url, e))?;
        file_doctor(store, repair, backup_dir).await?
    } else {
        let store = super::open(url, keys).await?;
        generic_doctor(url, store).await?
    };
    report.index = super::recall::index_status(url, super::open(url, keys)).await?;
    print(out, &report)?;
    let open_problems = report.problems.iter().filter(|p| !p.repaired).count();
    if open_problems > 0 {
        let hint = if repair || backend != Backend::File {
            "they cannot be repaired automatically"
        } else {
            "run `agentmem doctor --repair` to repair them"
        };
        return Err(Error::corrupt(format!(
            "{open_problems} problems found in {}; {hint}",
            redact(url)
        )));
    }
    Ok(())
}

fn print(out: &mut Output, report: &DoctorReport) -> Result<()> {
    if out.json() {
        return out.json_value(report);
    }
    let c = &report.counts;
    out.line(format!("store:     {}", report.store))?;
    out.line(format!(
        "backend:   {} (schema version {})",
        report.backend, report.schema_version
    ))?;
    out.line(format!(
        "sessions:  {} ({}), archives: {} ({}), memory items: {}",
        c.sessions,
        count(c.messages, "message"),
        c.archives,
        count(c.archived_messages, "message"),
        c.memories
    ))?;
    out.line(format!(
        "threads:   {} ({})",
        c.threads,
        count(c.checkpoints, "checkpoint")
    ))?;
    out.line(format!(
        "graph:     {}, {}",
        count(c.entities, "entity"),
        count(c.relations, "relation")
    ))?;
    if c.unchecked_sessions > 0 {
        out.line(format!(
            "           {} damaged sessions not counted (reading them would repair them)",
            c.unchecked_sessions
        ))?;
    }
    if report.problems.is_empty() {
        out.line("problems:  none")?;
    } else {
        out.line(format!("problems:  {}", report.problems.len()))?;
        for p in &report.problems {
            out.line(format!(
                "  - {}{}: {}{}",
                p.kind,
                if p.repaired { ", repaired" } else { "" },
                p.path.as_deref().or(p.session.as_deref()).unwrap_or("-"),
                if p.detail.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", p.detail)
                }
            ))?;
        }
    }
    if let Some(b) = &report.backup {
        out.line(format!("backup:    {b}"))?;
    }
    if let Some(index) = &report.index {
        super::recall::print_index(out, index)?;
    }
    Ok(())
}

/// What a check has found so far: the counts, and the problems.
#[derive(Default)]
struct Tally {
    counts: Counts,
    problems: Vec<Problem>,
}

impl Tally {
    /// What a read gave, or `None` when it failed as `CorruptData`: then `problem` made of the
    /// error joins the problems, and the check goes on. Any other error stops the check.
    fn readable<T>(
        &mut self, read: Result<T>, problem: impl FnOnce(&Error) -> Problem,
    ) -> Result<Option<T>> {
        match read {
            Ok(value) => Ok(Some(value)),
            Err(e) if e.kind() == ErrorKind::CorruptData => {
                self.problems.push(problem(&e));
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Adds what a check of the file store found (repaired or not) to the problems.
    fn found(&mut self, reports: Vec<RepairReport>) {
        self.problems
            .extend(reports.into_iter().map(Problem::found));
    }

    /// Adds one session's counts; a `CorruptData` read becomes a problem.
    async fn session(&mut self, store: &dyn AgentMemory, id: &SessionId) -> Result<()> {
        let corrupt = |e: &Error| Problem::corrupt(Some(id), e);
        let Some(Some(s)) = self.readable(store.load(id, None).await, corrupt)? else {
            return Ok(());
        };
        self.counts.sessions += 1;
        self.counts.messages += s.messages.len() as u64;
        let Some(archives) = self.readable(store.list_archives(id).await, corrupt)? else {
            return Ok(());
        };
        for info in archives {
            if let Some(a) = self.readable(store.load_archive(id, &info.id).await, corrupt)? {
                self.counts.archives += 1;
                self.counts.archived_messages += a.messages.len() as u64;
            }
        }
        Ok(())
    }

    async fn memories(&mut self, store: &dyn AgentMemory) -> Result<()> {
        let read = store.list_memories(&MemoryFilter::default()).await;
        if let Some(items) = self.readable(read, |e| Problem::corrupt(None, e))? {
            self.counts.memories = items.len() as u64;
        }
        Ok(())
    }

    /// Counts the checkpoint threads and their checkpoints, each read back whole; a thread
    /// that cannot be read (`CorruptData`) becomes a problem.
    async fn checkpoints(&mut self, store: &dyn AgentMemory) -> Result<()> {
        if !store.capabilities().checkpoints {
            return Ok(());
        }
        for info in store.list_threads().await? {
            let query = CheckpointQuery::thread(info.thread.clone());
            let what = format!("thread {:?}", info.thread.as_str());
            let read = store.list_checkpoints(&query).await;
            if let Some(tuples) = self.readable(read, |e| Problem::corrupt_at(what, e))? {
                self.counts.threads += 1;
                self.counts.checkpoints += tuples.len() as u64;
            }
        }
        Ok(())
    }

    /// Counts the knowledge graph's entities and relations, read back whole; a graph that
    /// cannot be read (`CorruptData`) becomes a problem.
    async fn graph(&mut self, store: &dyn AgentMemory) -> Result<()> {
        if !store.capabilities().graph {
            return Ok(());
        }
        let read = store.read_graph(&GraphQuery::All).await;
        let what = "knowledge graph".to_string();
        if let Some(graph) = self.readable(read, |e| Problem::corrupt_at(what, e))? {
            self.counts.entities = graph.entities.len() as u64;
            self.counts.relations = graph.relations.len() as u64;
        }
        Ok(())
    }
}

async fn generic_doctor(url: &str, store: Arc<dyn AgentMemory>) -> Result<DoctorReport> {
    let mut tally = Tally::default();
    for info in store.list_sessions().await? {
        tally.session(store.as_ref(), &info.id).await?;
    }
    tally.memories(store.as_ref()).await?;
    tally.checkpoints(store.as_ref()).await?;
    tally.graph(store.as_ref()).await?;
    Ok(DoctorReport {
        store: redact(url),
        backend: store.backend().name,
        schema_version: store.schema_version().await?,
        counts: tally.counts,
        problems: tally.problems,
        backup: None,
        index: None,
    })
}

/// The entries of folder `dir`; none when it does not exist.
fn entries_of(dir: &Path) -> Result<Vec<std::fs::DirEntry>> {
    match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .collect::<std::io::Result<Vec<_>>>()
            .map_err(|e| io_error(dir, "list", e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(io_error(dir, "list", e)),
    }
}

/// The session folders under `<root>/agents`, without touching them through the backend.
fn session_folders(root: &Path) -> Result<Vec<SessionId>> {
    let mut ids = Vec::new();
    for entry in entries_of(&root.join("agents"))? {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            if let Some(id) = entry
                .file_name()
                .to_str()
                .and_then(|n| SessionId::new(n).ok())
            {
                ids.push(id);
            }
        }
    }
    ids.sort();
    Ok(ids)
}

/// What a read-only look at `memories.jsonl` finds: a torn last line, or a bad line inside.
fn check_memory_log(path: &Path) -> Result<Option<Problem>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error(path, "read", e)),
    };
    let problem = |kind: &str, detail: String| Problem {
        kind: kind.into(),
        session: None,
        path: Some(path.display().to_string()),
        detail,
        repaired: false,
    };
    let lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    let count = lines.len();
    for (i, line) in lines.iter().enumerate() {
        let last = i + 1 == count;
        if last {
            if !line.is_empty() {
                return Ok(Some(problem(
                    "torn tail",
                    format!("line {} has no newline (cut off)", i + 1),
                )));
            }
            continue;
        }
        if serde_json::from_slice::<serde_json::Value>(line).is_err() {
            // As the file backend decides: a whole line is never a crash artefact, except a
            // last one of NUL bytes (a hole the file system zero-filled).
            let zero_filled_tail = i + 2 == count && line.iter().all(|&b| b == 0);
            return Ok(Some(if zero_filled_tail {
                problem("torn tail", format!("line {} is zero-filled", i + 1))
            } else {
                problem("corrupt", format!("line {} is not valid JSON", i + 1))
            }));
        }
    }
    Ok(None)
}

/// Lines set aside earlier in the session's `quarantine/` (see the file backend): a problem
/// each file, until a person has looked at them and removed them.
fn quarantined_files(id: &SessionId, session_dir: &Path) -> Result<Vec<Problem>> {
    let mut found = Vec::new();
    for entry in entries_of(&session_dir.join("quarantine"))? {
        let path = entry.path();
        found.push(Problem {
            kind: "quarantined lines".into(),
            session: Some(id.to_string()),
            path: Some(path.display().to_string()),
            detail: "log lines that did not parse, set aside: look at them, then remove the file"
                .into(),
            repaired: false,
        });
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(found)
}

/// Copies the file or folder `from` to `to` (which must not exist), for a backup. Symbolic
/// links are not followed, and not copied: a backup of the store holds the store's own files,
/// never what a link planted in it points to. Copies are created exclusively, owner-only.
fn copy_recursive(from: &Path, to: &Path) -> Result<()> {
    let meta = std::fs::symlink_metadata(from).map_err(|e| io_error(from, "back up", e))?;
    if meta.file_type().is_symlink() {
        return Ok(());
    }
    if meta.is_dir() {
        create_private_dir(to)?;
        let entries = std::fs::read_dir(from).map_err(|e| io_error(from, "list", e))?;
        for entry in entries {
            let entry = entry.map_err(|e| io_error(from, "list", e))?;
            copy_recursive(&entry.path(), &to.join(entry.file_name()))?;
        }
        return Ok(());
    }
    let mut source = std::fs::File::open(from).map_err(|e| io_error(from, "back up", e))?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut copy = options.open(to).map_err(|e| io_error(to, "create", e))?;
    std::io::copy(&mut source, &mut copy)
        .and_then(|_| copy.sync_all())
        .map(|_| ())
        .map_err(|e| io_error(from, "back up", e))
}

/// The file store's graph log: counted when clean; with `repair`, backed up to `backup/graph`
/// and repaired; else reported (reading it would repair it). `true` when the backup was used.
async fn file_graph_doctor(
    store: &Layered<FileStore>, repair: bool, backup: &Path, tally: &mut Tally,
) -> Result<bool> {
    let found = store.check_graph(false).await?;
    if found.is_empty() {
        tally.graph(store).await?;
        return Ok(false);
    }
    if !repair {
        tally.found(found);
        return Ok(false);
    }
    create_private_dir(backup)?;
    copy_recursive(&store.root().join("graph"), &backup.join("graph"))?;
    tally.found(store.check_graph(true).await?);
    tally.graph(store).await?;
    Ok(true)
}

async fn file_doctor(
    store: Layered<FileStore>, repair: bool, backup_dir: Option<PathBuf>,
) -> Result<DoctorReport> {
    let root = store.root().to_path_buf();
    let backup = backup_dir.unwrap_or_else(|| {
        root.join("backups").join(format!(
            "doctor-{}",
            chrono::Utc::now().format("%Y%m%dT%H%M%S%.6fZ")
        ))
    });
    let mut backup_used = false;
    // Opening already emptied the trash of interrupted deletions: report it.
    let mut tally = Tally::default();
    tally.found(store.repairs());

    for id in session_folders(&root)? {
        let session_dir = root.join("agents").join(id.as_str());
        tally.problems.extend(quarantined_files(&id, &session_dir)?);
        let findings = match store.check(&id, false).await {
            Ok(f) => f,
            // A whole line that does not parse: with --repair it is set aside (after a backup).
            Err(e) if e.kind() == ErrorKind::CorruptData && repair => {
                copy_recursive(&session_dir, &backup.join("agents").join(id.as_str()))?;
                backup_used = true;
                let checked = store.check(&id, true).await;
                match tally.readable(checked, |e| Problem::corrupt(Some(&id), e))? {
                    Some(fixed) => {
                        tally.found(fixed);
                        tally.session(&store, &id).await?;
                    }
                    None => tally.counts.unchecked_sessions += 1,
                }
                continue;
            }
            Err(e) if e.kind() == ErrorKind::CorruptData => {
                tally.problems.push(Problem::corrupt(Some(&id), &e));
                tally.counts.unchecked_sessions += 1;
                continue;
            }
            Err(e) => return Err(e),
        };
        if findings.is_empty() {
            tally.session(&store, &id).await?;
            continue;
        }
        if !repair {
            tally.found(findings);
            tally.counts.unchecked_sessions += 1;
            continue;
        }
        copy_recursive(
            &root.join("agents").join(id.as_str()),
            &backup.join("agents").join(id.as_str()),
        )?;
        backup_used = true;
        let fixed = store.check(&id, true).await?;
        tally.found(fixed);
        tally.session(&store, &id).await?;
    }

    let log = root.join("memories.jsonl");
    match check_memory_log(&log)? {
        None => tally.memories(&store).await?,
        Some(mut problem) => {
            let torn = problem.kind == "torn tail";
            if repair && torn {
                create_private_dir(&backup)?;
                copy_recursive(&log, &backup.join("memories.jsonl"))?;
                backup_used = true;
                // The backend truncates a torn tail on its first read of the log.
                tally.memories(&store).await?;
                problem.repaired = check_memory_log(&log)?.is_none();
            }
            tally.problems.push(problem);
        }
    }
    tally.checkpoints(&store).await?;
    backup_used |= file_graph_doctor(&store, repair, &backup, &mut tally).await?;

    Ok(DoctorReport {
        // `file://` alone means the default home: show where that is.
        store: format!("file://{}", root.display()),
        backend: store.backend().name,
        schema_version: store.schema_version().await?,
        counts: tally.counts,
        problems: tally.problems,
        backup: backup_used.then(|| backup.display().to_string()),
        index: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn backups_do_not_follow_symbolic_links() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret.txt");
        std::fs::write(&secret, "outside the store").unwrap();
        let store = dir.path().join("agents/s");
        std::fs::create_dir_all(&store).unwrap();
        std::fs::write(store.join("session.jsonl"), "{}\n").unwrap();
        std::os::unix::fs::symlink(&secret, store.join("MEMORY.md")).unwrap();
        let backup = dir.path().join("backup");
        copy_recursive(&store, &backup).unwrap();
        assert_eq!(
            std::fs::read_to_string(backup.join("session.jsonl")).unwrap(),
            "{}\n"
        );
        assert!(std::fs::symlink_metadata(backup.join("MEMORY.md")).is_err());
        // The backup's files are new: an existing one is not overwritten through a link.
        assert!(copy_recursive(&store, &backup).is_err());
    }

    #[test]
    fn memory_log_checks() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.jsonl");
        assert!(check_memory_log(&p).unwrap().is_none());
        std::fs::write(&p, "{\"a\":1}\n{\"b\":2}\n").unwrap();
        assert!(check_memory_log(&p).unwrap().is_none());
        std::fs::write(&p, "{\"a\":1}\n{\"b\":").unwrap();
        assert_eq!(check_memory_log(&p).unwrap().unwrap().kind, "torn tail");
        std::fs::write(&p, "{\"a\":1}\n\0\0\0\n").unwrap();
        assert_eq!(check_memory_log(&p).unwrap().unwrap().kind, "torn tail");
        // A whole last line that does not parse is reported, not taken for a crash.
        std::fs::write(&p, "{\"a\":1}\n{\"b\":\n").unwrap();
        assert_eq!(check_memory_log(&p).unwrap().unwrap().kind, "corrupt");
        std::fs::write(&p, "{\"a\":1}\nxx\n{\"b\":2}\n").unwrap();
        assert_eq!(check_memory_log(&p).unwrap().unwrap().kind, "corrupt");
    }
}
