//! What the battery's test files share: running the helper, store URLs per backend, and
//! reading a session with all its archives.
#![allow(
    dead_code,
    reason = "shared by several test binaries, each using part of it"
)]

pub mod fuzz;

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use agentmem_core::{AgentMemory, Message, SessionId};
use agentmem_reliability::protocol::Event;

/// The helper binary, built by cargo for these tests.
pub const STRESS: &str = env!("CARGO_BIN_EXE_agentmem-stress");

/// A running helper process whose stdout events are collected as they arrive.
pub struct Running {
    child: std::process::Child,
    events: Arc<Mutex<Vec<Event>>>,
    stdout_reader: Option<JoinHandle<()>>,
    stderr_reader: Option<JoinHandle<String>>,
    label: String,
}

/// Starts `agentmem-stress <args>`.
pub fn spawn(args: &[&str]) -> Running {
    let mut child = Command::new(STRESS)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn agentmem-stress");
    let events = Arc::new(Mutex::new(Vec::new()));
    let stdout = child.stdout.take().expect("piped stdout");
    let sink = Arc::clone(&events);
    let stdout_reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            // A line cut by SIGKILL has no newline and parses as nothing: it is not an ack.
            if let Some(e) = Event::parse(&line) {
                sink.lock().unwrap().push(e);
            }
        }
    });
    let mut stderr = child.stderr.take().expect("piped stderr");
    let stderr_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    Running {
        child,
        events,
        stdout_reader: Some(stdout_reader),
        stderr_reader: Some(stderr_reader),
        label: args.join(" "),
    }
}

impl Running {
    /// Events reported so far.
    pub fn events_so_far(&self) -> Vec<Event> {
        self.events.lock().unwrap().clone()
    }

    /// Kills the process with SIGKILL and returns every event it reported before dying.
    pub fn kill(mut self) -> Vec<Event> {
        let _ = self.child.kill(); // SIGKILL on unix; an error means it already exited
        let _ = self.child.wait();
        self.finish().0
    }

    /// Waits for the process, which must succeed, and returns its events.
    pub fn wait_ok(mut self) -> Vec<Event> {
        let status = self.child.wait().expect("wait for agentmem-stress");
        let label = self.label.clone();
        let (events, stderr) = self.finish();
        assert!(
            status.success(),
            "agentmem-stress {label} failed ({status}): {stderr}"
        );
        assert_eq!(events.last(), Some(&Event::Done), "{label}: no `done`");
        events
    }

    fn finish(&mut self) -> (Vec<Event>, String) {
        if let Some(h) = self.stdout_reader.take() {
            let _ = h.join();
        }
        let stderr = self
            .stderr_reader
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        (self.events.lock().unwrap().clone(), stderr)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // A test that panics must not leave helpers running.
        if self.stdout_reader.is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The acknowledged message ids among `events`, in order.
pub fn acks(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Ack(id) => Some(id.clone()),
            _ => None,
        })
        .collect()
}

/// The acknowledged compactions among `events`: (archive id, summary id).
pub fn compactions(events: &[Event]) -> Vec<(String, Option<String>)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Compacted { archive, summary } => Some((archive.clone(), summary.clone())),
            _ => None,
        })
        .collect()
}

/// Every message of `session`'s archives (oldest first) followed by its current messages,
/// with the archives' ids.
pub async fn transcript(
    store: &dyn AgentMemory, session: &SessionId,
) -> (Vec<Message>, Vec<String>, Vec<Message>) {
    let mut all = Vec::new();
    let mut archive_ids = Vec::new();
    for info in store.list_archives(session).await.expect("list archives") {
        let archive = store
            .load_archive(session, &info.id)
            .await
            .expect("load archive");
        archive_ids.push(info.id.to_string());
        all.extend(archive.messages);
    }
    let current = store
        .load(session, None)
        .await
        .expect("load session")
        .map(|s| s.messages)
        .unwrap_or_default();
    all.extend(current.iter().cloned());
    (all, archive_ids, current)
}

/// `base` with `key=value` added to its query.
pub fn with_query(base: &str, key: &str, value: &str) -> String {
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}{key}={value}")
}

/// The Redis URL of a fresh key prefix on the test server.
pub fn redis_url(ns: &str) -> String {
    let base = agentmem_testkit::env_url("REDIS_URL", "redis://127.0.0.1:6379");
    with_query(&base, "prefix", ns)
}

/// The Postgres URL of a fresh schema on the test server.
pub fn postgres_url(ns: &str) -> String {
    let base = agentmem_testkit::env_url("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test");
    with_query(&base, "schema", ns)
}

/// The MongoDB URL of a fresh database on the test server (the database is the URL's path).
pub fn mongo_url(ns: &str) -> String {
    let base = agentmem_testkit::env_url(
        "MONGODB_URL",
        "mongodb://127.0.0.1:27017/?directConnection=true",
    );
    mongo_url_with_db(&base, ns)
}

/// `base` (a `mongodb://` URL) naming database `db`.
pub fn mongo_url_with_db(base: &str, db: &str) -> String {
    let (scheme, rest) = base.split_once("://").expect("a mongodb:// URL");
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let query = tail.split_once('?').map(|(_, q)| q);
    match query {
        Some(q) => format!("{scheme}://{authority}/{db}?{q}"),
        None => format!("{scheme}://{authority}/{db}"),
    }
}

/// Opens `url`, or skips (through `agentmem_testkit::service_unavailable`) when its server
/// cannot be reached and services are not required.
pub async fn open_or_skip(service: &str, url: &str) -> Option<Arc<dyn AgentMemory>> {
    match agentmem::open(url).await {
        Ok(store) => Some(store),
        Err(e) => agentmem_testkit::service_unavailable(service, url, &e),
    }
}

/// Removes a server store's namespace (Postgres schema, MongoDB database); a no-op elsewhere.
pub async fn drop_namespace(url: &str) {
    if url.starts_with("postgres") {
        if let Ok(store) = agentmem::postgres::PostgresStore::connect(url).await {
            let _ = store.drop_schema().await;
        }
    } else if url.starts_with("mongodb") {
        if let Ok(store) = agentmem::mongodb::MongoStore::connect(url).await {
            let _ = store.drop_database().await;
        }
    }
}

/// A port nothing listens on right now.
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().expect("local address").port()
}

/// A mount made by a test, unmounted when dropped (lazily if busy), so a failing test never
/// leaves it behind.
pub struct Mount {
    path: std::path::PathBuf,
}

impl Mount {
    /// Mounts a tmpfs of `size` (as `mount -o size=` reads it) on `path`; `Err` with the
    /// reason when mounting is not permitted here.
    pub fn tmpfs(path: &std::path::Path, size: &str) -> Result<Mount, String> {
        run_mount(
            &[
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ],
            path,
        )?;
        Ok(Mount {
            path: path.to_path_buf(),
        })
    }

    /// Makes `path` read-only by bind-mounting it on itself and remounting the bind
    /// read-only (root ignores permission bits, not a read-only mount).
    pub fn read_only_bind(path: &std::path::Path) -> Result<Mount, String> {
        let p = path.to_str().ok_or("non-UTF-8 path")?;
        run_mount(&["--bind", p], path)?;
        let mount = Mount {
            path: path.to_path_buf(),
        };
        run_mount(&["-o", "remount,ro,bind"], path)?;
        Ok(mount)
    }
}

fn run_mount(args: &[&str], path: &std::path::Path) -> Result<(), String> {
    run_command(Command::new("mount").args(args).arg(path))
}

/// Runs `command` to its end with nothing on its standard input; `Err` names the command and
/// says what it printed when it cannot run or fails.
pub fn run_command(command: &mut Command) -> Result<(), String> {
    let what = format!("{command:?}");
    let out = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {what}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{what} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr).trim_end()
        ))
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let ok = Command::new("umount")
            .arg(&self.path)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            let _ = Command::new("umount").arg("-l").arg(&self.path).status();
        }
    }
}

/// Prints a skip so that nobody can miss it; under `AGENTMEM_REQUIRE_SERVICES` (CI, which
/// runs as root where mounting works) a skip is a failure instead.
pub fn loud_skip(test: &str, why: &str) {
    if agentmem_testkit::services_required() {
        panic!("{test} cannot run here ({why}) and AGENTMEM_REQUIRE_SERVICES is set");
    }
    eprintln!("\n!!!!!!!! SKIPPED: {test}: {why} !!!!!!!!\n");
    println!("SKIPPED: {test}: {why}");
}
