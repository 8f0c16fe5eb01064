//! Server faults: a second server instance, started by the test on a free port, is
//! killed in the middle of a run of batch appends and started again on the same data.
//! While it is down, operations fail with `Unavailable` (promptly, no hang); nothing
//! acknowledged is lost; no batch is half-written; and work resumes once it is back.
//!
//! - Redis: `redis-server` with `appendonly yes`, `appendfsync always` (so acknowledged means
//!   on disk), killed with SIGKILL. (crates/agentmem-redis/tests/fault.rs covers an empty
//!   restart; this one restarts on the same data and checks what remains.)
//! - PostgreSQL: Debian's `initdb`/`pg_ctl` (`PG_BIN`, default /usr/lib/postgresql/15/bin)
//!   into a temporary folder. `initdb` refuses to run as root, so when the test runs as root
//!   it runs them as the `postgres` user through `runuser` (the folder is chowned to it).
//!   The kill is `pg_ctl stop -m immediate`: every server process quits at once without a
//!   checkpoint, and the restart runs crash recovery.
//! - MongoDB: the shared test server on 27017 is used by other tests, so a separate SecantusDB
//!   (`SECANTUSD`, default the venv `.ci/mongo-servers.sh` makes under
//!   `$AGENTMEM_CI_CACHE`/`~/.cache/agentmem-ci`) runs with on-disk storage and
//!   `--sync-on-commit`, and is killed with SIGKILL (its whole process group).
//!
//! A server that cannot be started skips only through `agentmem_testkit::service_unavailable`.
mod common;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentmem_core::{AgentMemory, ErrorKind, SessionId, SessionStore};
use agentmem_reliability::{audit, tagged};
use common::{free_port, run_command};

/// Messages per batch: a half-applied batch would show as 1 or 2 of its 3 messages.
const BATCH: u64 = 3;
/// No single operation may take longer: a dead server must give a prompt error.
const HANG_GUARD: Duration = Duration::from_secs(60);
/// Kill-and-restart cycles per server.
const CYCLES: usize = 3;

fn wait_for_port(port: u16, what: &str) -> bool {
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if started.elapsed() > Duration::from_secs(60) {
            eprintln!("{what} did not listen on port {port} within 60 s");
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}

/// What the writer saw.
#[derive(Debug, Default)]
struct Run {
    acked: Vec<String>,
    batches_tried: u64,
    unavailable: u64,
    acked_after_restart: u64,
}

/// Appends batches to `session` until told to stop, recording acknowledgements and
/// checking every failure is `Unavailable`.
async fn writer(
    store: Arc<dyn AgentMemory>, session: SessionId, run: Arc<Mutex<Run>>, stop: Arc<AtomicBool>,
    restarted: Arc<AtomicBool>,
) {
    let mut k = 0u64;
    while !stop.load(Ordering::SeqCst) {
        let batch: Vec<_> = (k * BATCH..(k + 1) * BATCH)
            .map(|i| tagged::message("f", i))
            .collect();
        let result = tokio::time::timeout(HANG_GUARD, store.append(&session, &batch))
            .await
            .expect("an append hung while the server was down");
        let failed = {
            let mut run = run.lock().unwrap();
            run.batches_tried += 1;
            match result {
                Ok(()) => {
                    run.acked.extend(batch.iter().map(|m| m.id.to_string()));
                    if restarted.load(Ordering::SeqCst) {
                        run.acked_after_restart += BATCH;
                    }
                    false
                }
                Err(e) => {
                    assert_eq!(
                        e.kind(),
                        ErrorKind::Unavailable,
                        "append during the fault: {e}"
                    );
                    run.unavailable += 1;
                    true
                }
            }
        };
        if failed {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        k += 1;
    }
}

/// Drives `CYCLES` faults: writes, `kill`, writes that fail, `restart`, writes that succeed;
/// then checks what the store holds.
async fn fault_run(
    backend: &str, store: Arc<dyn AgentMemory>, mut kill: impl FnMut(),
    mut restart: impl FnMut() -> bool,
) {
    let session: SessionId = "fault".parse().unwrap();
    let run = Arc::new(Mutex::new(Run::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let restarted = Arc::new(AtomicBool::new(false));
    let task = tokio::spawn(writer(
        store.clone(),
        session.clone(),
        run.clone(),
        stop.clone(),
        restarted.clone(),
    ));
    // Let some batches land (30 messages), then kill the server in the middle of the run.
    let wait_for_acks = |since: usize| {
        let run = run.clone();
        let task_done = || task.is_finished();
        let started = Instant::now();
        async move {
            while run.lock().unwrap().acked.len() < since + 30 {
                assert!(
                    started.elapsed() < HANG_GUARD,
                    "{backend}: work did not resume within {HANG_GUARD:?}"
                );
                assert!(!task_done(), "{backend}: the writer stopped");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    };
    wait_for_acks(0).await;
    let mut slowest_refusal = Duration::ZERO;
    for cycle in 0..CYCLES {
        kill();
        let (acked_at_kill, failures_at_kill) = {
            let run = run.lock().unwrap();
            (run.acked.len(), run.unavailable)
        };
        // Down: other operations fail promptly with Unavailable too.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let load = tokio::time::timeout(HANG_GUARD, store.load(&session, Some(5)))
            .await
            .expect("load hung while the server was down");
        let err = load.expect_err("load while the server is down");
        assert_eq!(err.kind(), ErrorKind::Unavailable, "{backend}: load: {err}");
        // A batch appended now (a transaction where the backend uses one) fails promptly.
        let batch: Vec<_> = (0..BATCH)
            .map(|i| tagged::message(&format!("down{cycle}"), i))
            .collect();
        let t = Instant::now();
        let r = tokio::time::timeout(HANG_GUARD, store.append(&session, &batch))
            .await
            .unwrap_or_else(|_| {
                panic!("{backend}: a batch append hung for {HANG_GUARD:?} with the server down")
            });
        let err = r.expect_err("a batch append with the server down");
        assert_eq!(
            err.kind(),
            ErrorKind::Unavailable,
            "{backend}: batch append: {err}"
        );
        slowest_refusal = slowest_refusal.max(t.elapsed());
        // The writer's append in flight when the server died fails too (after the driver's
        // own timeout).
        let started = Instant::now();
        while run.lock().unwrap().unavailable == failures_at_kill {
            assert!(
                started.elapsed() < HANG_GUARD,
                "{backend}: no append failed with the server down"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // At most the batch in flight at the kill may have been acknowledged since.
        let acked_down = run.lock().unwrap().acked.len() - acked_at_kill;
        assert!(
            acked_down as u64 <= BATCH,
            "{backend}: {acked_down} messages acknowledged with the server down"
        );
        assert!(restart(), "{backend}: the server did not come back");
        restarted.store(true, Ordering::SeqCst);
        let since = run.lock().unwrap().acked.len();
        wait_for_acks(since).await;
    }
    stop.store(true, Ordering::SeqCst);
    task.await.unwrap();

    let run = std::mem::take(&mut *run.lock().unwrap());
    let (all, _, _) = common::transcript(store.as_ref(), &session).await;
    let report = audit(&all, &run.acked).unwrap_or_else(|e| panic!("{backend}: {e}"));
    // No half-written batch: each batch's messages are all there or none is.
    let mut per_batch = std::collections::BTreeMap::<(String, u64), u64>::new();
    for m in &all {
        if let Some((writer, seq)) = tagged::decode(m).unwrap() {
            *per_batch.entry((writer, seq / BATCH)).or_default() += 1;
        }
    }
    for ((writer, k), n) in &per_batch {
        assert_eq!(
            *n, BATCH,
            "{backend}: batch {k} of {writer} is half-written ({n} of {BATCH})"
        );
    }
    println!(
        "server faults: {backend}: killed mid-run and restarted {CYCLES} times: {} batches tried, {} refused as unavailable while down, {} messages acknowledged ({} after a restart), {} checked, lost = 0, half-written batches = 0, batches stored whose acknowledgement the crash swallowed: {}; slowest refusal while down: {:?}",
        run.batches_tried,
        run.unavailable,
        run.acked.len(),
        run.acked_after_restart,
        report.checked,
        report.unacknowledged.len() as u64 / BATCH,
        slowest_refusal
    );
}

/// A server process the test started: killed with SIGKILL (no shutdown; its whole process
/// group when it leads one) by `kill` or when dropped.
struct ServerProcess {
    child: Option<Child>,
    group: bool,
}

impl ServerProcess {
    /// Spawns `command` with its output discarded; `group` makes it lead a process group.
    fn spawn(command: &mut Command, group: bool) -> std::io::Result<ServerProcess> {
        if group {
            command.process_group(0);
        }
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        Ok(ServerProcess {
            child: Some(child),
            group,
        })
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            if self.group {
                let _ = Command::new("kill")
                    .args(["-KILL", "--", &format!("-{}", c.id())])
                    .status();
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// [`fault_run`] on a `backend` server that `start` starts on `port` (and starts again on the
/// same data after each kill); the store is opened at `url`. Skips (as `service`, `what`)
/// when the server cannot be started.
async fn process_fault_run(
    backend: &str, service: &str, what: &str, port: u16, url: &str,
    start: impl Fn() -> std::io::Result<ServerProcess>,
) {
    let server = match start() {
        Ok(s) => s,
        Err(e) => {
            let _: Option<()> = agentmem_testkit::service_unavailable(service, what, &e);
            return;
        }
    };
    assert!(wait_for_port(port, service));
    let store = agentmem::open(url).await.unwrap();
    let server = Arc::new(Mutex::new(server));
    let killed = server.clone();
    fault_run(
        backend,
        store,
        move || killed.lock().unwrap().kill(),
        move || {
            *server.lock().unwrap() = start().unwrap();
            wait_for_port(port, service)
        },
    )
    .await;
}

// ---------------------------------------------------------------- Redis

/// Starts `redis-server` on `port` with its data in `dir`, appending every write to its AOF
/// with an fsync before acknowledging it.
fn redis_server(port: u16, dir: &Path) -> std::io::Result<ServerProcess> {
    let bin = std::env::var("REDIS_SERVER_BIN").unwrap_or_else(|_| "/usr/bin/redis-server".into());
    let mut command = Command::new(bin);
    command
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args([
            "--save",
            "",
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
        ])
        .arg("--dir")
        .arg(dir);
    ServerProcess::spawn(&mut command, false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_killed_mid_run_keeps_acknowledged_batches_whole() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let url = format!(
        "redis://127.0.0.1:{port}/?prefix=fault&connect_timeout_ms=500&response_timeout_ms=2000"
    );
    let data = dir.path().to_path_buf();
    process_fault_run("Redis", "redis-server", "", port, &url, move || {
        redis_server(port, &data)
    })
    .await;
}

// ---------------------------------------------------------------- PostgreSQL

struct Postgres {
    bin: PathBuf,
    data: PathBuf,
    socket_dir: PathBuf,
    port: u16,
    as_postgres: bool,
    running: bool,
}

impl Postgres {
    fn cmd(&self, program: &str) -> Command {
        let exe = self.bin.join(program);
        if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(exe);
            c
        } else {
            Command::new(exe)
        }
    }

    fn run(&self, program: &str, args: &[&str]) -> Result<(), String> {
        run_command(self.cmd(program).args(args))
    }

    /// `initdb` into `dir` (chowned to `postgres` when running as root).
    fn init(dir: &Path, port: u16) -> Result<Postgres, String> {
        let bin = PathBuf::from(
            std::env::var("PG_BIN").unwrap_or_else(|_| "/usr/lib/postgresql/15/bin".into()),
        );
        if !bin.join("initdb").exists() {
            return Err(format!("no initdb in {}", bin.display()));
        }
        let as_postgres = is_root();
        if as_postgres {
            let ok = Command::new("chown")
                .args(["-R", "postgres:"])
                .arg(dir)
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                return Err("cannot chown the data folder to postgres".into());
            }
        }
        let pg = Postgres {
            bin,
            data: dir.join("data"),
            socket_dir: dir.to_path_buf(),
            port,
            as_postgres,
            running: false,
        };
        let data = pg.data.to_string_lossy().into_owned();
        pg.run(
            "initdb",
            &[
                "-D",
                &data,
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
                "-E",
                "UTF8",
            ],
        )?;
        Ok(pg)
    }

    fn start(&mut self) -> Result<(), String> {
        let data = self.data.to_string_lossy().into_owned();
        let log = self
            .socket_dir
            .join("server.log")
            .to_string_lossy()
            .into_owned();
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=on -c synchronous_commit=on",
            self.port,
            self.socket_dir.display()
        );
        self.run(
            "pg_ctl",
            &[
                "-D", &data, "-o", &opts, "-l", &log, "-w", "-t", "60", "start",
            ],
        )?;
        self.running = true;
        Ok(())
    }

    /// An immediate stop: every server process quits without a checkpoint (a crash, as far
    /// as the data is concerned; the next start runs recovery).
    fn crash(&mut self) {
        let data = self.data.to_string_lossy().into_owned();
        let _ = self.run("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"]);
        self.running = false;
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if self.running {
            self.crash();
        }
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_killed_mid_run_keeps_acknowledged_batches_whole() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut pg = match Postgres::init(dir.path(), port).and_then(|mut pg| pg.start().map(|()| pg)) {
        Ok(pg) => pg,
        Err(e) => {
            let _: Option<()> = agentmem_testkit::service_unavailable("initdb/pg_ctl", "", &e);
            return;
        }
    };
    let url = format!(
        "postgres://postgres@127.0.0.1:{port}/postgres?schema=fault&connect_timeout=2&pool_timeout=5"
    );
    let store = agentmem::open(&url).await.unwrap();
    let pg_cell = Arc::new(Mutex::new(None::<Postgres>));
    // Moved in and out of a cell so both closures can reach it.
    let data = pg.data.clone();
    pg.running = true;
    *pg_cell.lock().unwrap() = Some(pg);
    let (c1, c2) = (pg_cell.clone(), pg_cell.clone());
    fault_run(
        "PostgreSQL",
        store,
        move || c1.lock().unwrap().as_mut().unwrap().crash(),
        move || {
            let mut guard = c2.lock().unwrap();
            let pg = guard.as_mut().unwrap();
            match pg.start() {
                Ok(()) => true,
                Err(e) => {
                    eprintln!("restart of {}: {e}", data.display());
                    false
                }
            }
        },
    )
    .await;
    drop(pg_cell);
}

// ---------------------------------------------------------------- MongoDB

fn secantusd() -> PathBuf {
    if let Ok(p) = std::env::var("SECANTUSD") {
        return PathBuf::from(p);
    }
    let cache = std::env::var("AGENTMEM_CI_CACHE").unwrap_or_else(|_| {
        format!(
            "{}/.cache/agentmem-ci",
            std::env::var("HOME").unwrap_or_else(|_| "/root".into())
        )
    });
    Path::new(&cache).join("secantus-venv/bin/secantusd-py")
}

/// Starts SecantusDB on `port` with on-disk storage in `storage`, syncing every commit, as
/// the leader of its own process group so the kill reaches any helper process it starts.
fn secantus(port: u16, storage: &Path) -> std::io::Result<ServerProcess> {
    let mut command = Command::new(secantusd());
    command
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .arg("--storage-path")
        .arg(storage)
        .args(["--sync-on-commit", "--log-level", "WARNING"]);
    ServerProcess::spawn(&mut command, true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mongodb_killed_mid_run_keeps_acknowledged_batches_whole() {
    let dir = tempfile::tempdir().unwrap();
    let storage = dir.path().join("data");
    let port = free_port();
    let url = format!(
        "mongodb://127.0.0.1:{port}/fault?directConnection=true&serverSelectionTimeoutMS=2000&connectTimeoutMS=2000"
    );
    let what = secantusd().display().to_string();
    process_fault_run("MongoDB", "SecantusDB", &what, port, &url, move || {
        secantus(port, &storage)
    })
    .await;
}
