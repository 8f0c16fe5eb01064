//! The schema version kept under the prefix, and forward migrations.
//!
//! `{prefix}:schema` holds the version of the layout the data was written in. Opening a
//! store writes [`SCHEMA_VERSION`] when the key is missing (a new store), runs the
//! migrations from the stored version up to the current one, and refuses data newer than
//! this build understands. Two processes opening an old store at once migrate it once:
//!
//! - A [`Step::Lua`] migration is one script that checks and bumps the version in the same
//!   atomic step.
//! - A [`Step::Client`] migration needs the client (rebuilding the search index needs
//!   agentmem-core's stemmer, which Lua lacks), so it runs in many steps under a lock:
//!   `{prefix}:migrating`, taken with `SET NX PX` and a token of its own, which every step
//!   checks and renews (a script of [`Migrator`]: nothing else writes). The others wait for
//!   the version to change or the lock to expire. A migration keeps its progress in
//!   `{prefix}:migration`, so when its process dies midway, the next opener (once the lock has
//!   expired) resumes it; its last step bumps the version, drops the progress and releases
//!   the lock.
//!
//! Every key involved lies in the store's slot (on a cluster, `{prefix}` is a hash tag), and
//! every script names the schema key first, so it all works on a single server and on a
//! cluster alike.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agentmem_core::{Error, Result};
use redis::{Cmd, FromRedisValue, Pipeline, Script, ScriptInvocation, Value};

use crate::conn::Conn;
use crate::error::from_redis;
use crate::keys::Keys;
use crate::store::timed_out;

/// The layout this build writes (documented in the crate README). Version 2 added memory-item
/// scopes and expiry; version 3 keeps the session search index in epochs, so that
/// compaction and saves retire the old postings in O(1); version 4 adds session labels and
/// expiry (and `P:ids`, every session id in id order); version 5 indexes stemmed terms
/// (agentmem-core's `index_terms`) rather than words.
pub const SCHEMA_VERSION: u32 = 5;

/// One forward migration, from version `from` to `from + 1`.
pub(crate) struct Migration {
    pub(crate) from: u32,
    pub(crate) step: Step,
}

/// How a migration rewrites the data.
pub(crate) enum Step {
    /// A Lua body that rewrites the data under the key root (`ARGV[1]`: the prefix, or
    /// `{prefix}` on a cluster). It runs wrapped by [`guarded`], which skips it unless the
    /// schema key (`KEYS[1]`) still holds `from` and bumps the version in the same script;
    /// so the body must not `return`.
    Lua(&'static str),
    /// A migration the client drives, in steps made by [`Migrator`] under the migration
    /// lock; the version is bumped after it returns. It must resume from the progress a
    /// predecessor that died midway recorded, and may be cut short anywhere.
    Client(ClientMigration),
}

/// The body of a [`Step::Client`] migration.
pub(crate) type ClientMigration =
    for<'a> fn(&'a mut Migrator) -> Pin<Box<dyn Future<Output = Fenced<()>> + Send + 'a>>;

/// Migrations of this build, oldest first.
pub(crate) const MIGRATIONS: &[Migration] = &[
    // 1 -> 2: memory items gain a scope and an expiry; the items of version 1 become global
    // and never expire (see the script for the entries it converts).
    Migration {
        from: 1,
        step: Step::Lua(include_str!("lua/migrate_1_2.lua")),
    },
    // 2 -> 3: the session index in epochs; version 2 data is epoch 0 as it stands (see the
    // script).
    Migration {
        from: 2,
        step: Step::Lua(include_str!("lua/migrate_2_3.lua")),
    },
    // 3 -> 4: session labels and expiry; every session id goes into `P:ids` (see the
    // script).
    Migration {
        from: 3,
        step: Step::Lua(include_str!("lua/migrate_3_4.lua")),
    },
    // 4 -> 5: stemmed index terms; every session's and memory item's index is rebuilt by
    // the client, which alone can stem (see `reindex.rs`).
    Migration {
        from: 4,
        step: Step::Client(crate::reindex::migrate_4_5),
    },
];

/// Wraps a migration body so it runs only when the stored version is still `from`, and
/// bumps the version with it. Returns 1 when it ran, 0 when someone else had migrated.
fn guarded(body: &str) -> String {
    format!(
        "if redis.call('GET', KEYS[1]) ~= ARGV[2] then return 0 end\n\
         {body}\n\
         redis.call('SET', KEYS[1], tonumber(ARGV[2]) + 1)\n\
         return 1"
    )
}

/// How long the migration lock lasts unless renewed (every step renews it): far longer than
/// one step may take (`deadline`, the longest one exchange may), so only a migrator that
/// died or stalled loses it.
fn lock_ttl(deadline: Duration) -> Duration {
    (deadline * 3).max(Duration::from_secs(30))
}

/// How often an opener waiting for another process's migration looks again.
const LOCK_POLL: Duration = Duration::from_millis(100);

/// How [`ensure`] talks to the server.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// The longest one exchange may take.
    pub(crate) deadline: Duration,
    /// Tests: how many fenced scripts a client-driven migration runs before it stops as if
    /// its process had died (the lock stays taken).
    #[cfg(test)]
    pub(crate) crash_after: Option<usize>,
}

impl Limits {
    /// Limits of exchanges of at most `deadline`.
    pub(crate) fn new(deadline: Duration) -> Self {
        Limits {
            deadline,
            #[cfg(test)]
            crash_after: None,
        }
    }
}

/// Runs one exchange with the server under `deadline`, mapping errors.
async fn exchange<T>(
    deadline: Duration, exchange: impl Future<Output = redis::RedisResult<T>>,
) -> Result<T> {
    tokio::time::timeout(deadline, exchange)
        .await
        .map_err(|_| timed_out(deadline))?
        .map_err(from_redis)
}

/// Brings the data under the prefix to version `target`, and returns it. Every exchange is
/// bounded by `limits.deadline`; waiting for another process's client-driven migration is
/// not (it lasts as long as that migration makes progress).
pub(crate) async fn ensure(
    conn: &Conn, keys: &Keys, target: u32, migrations: &[Migration], limits: Limits,
) -> Result<u32> {
    let mut conn = conn.clone();
    let key = keys.schema();
    let deadline = limits.deadline;
    // A new store: claim it for the current version (NX, so a concurrent opener of an older
    // build's data is never overwritten).
    let mut claim = redis::cmd("SET");
    claim.arg(&key).arg(target).arg("NX");
    let _claimed: Option<String> = exchange(deadline, claim.query_async(&mut conn)).await?;
    let mut waiting = false;
    loop {
        let stored: Option<String> =
            exchange(deadline, redis::cmd("GET").arg(&key).query_async(&mut conn)).await?;
        let stored = stored.unwrap_or_default();
        let version: u32 = stored.parse().map_err(|_| {
            Error::corrupt(format!(
                "the schema version under key prefix `{}` is {stored:?}, not a number",
                keys.prefix()
            ))
        })?;
        if version == target {
            return Ok(version);
        }
        if version > target {
            return Err(Error::unsupported(format!(
                "the data under key prefix `{}` has schema version {version}, newer than the {target} this build of agentmem-redis understands; upgrade agentmem",
                keys.prefix()
            )));
        }
        let migration = migrations
            .iter()
            .find(|m| m.from == version)
            .ok_or_else(|| {
                Error::backend(format!(
                    "no migration from schema version {version} of key prefix `{}`",
                    keys.prefix()
                ))
            })?;
        match migration.step {
            Step::Lua(body) => {
                tracing::info!(
                    prefix = keys.prefix(),
                    from = version,
                    "migrating Redis schema"
                );
                let script = Script::new(&guarded(body));
                let mut inv = script.prepare_invoke();
                inv.key(&key).arg(keys.root()).arg(version);
                let _ran: i64 = exchange(deadline, inv.invoke_async(&mut conn)).await?;
            }
            Step::Client(body) => {
                let ttl = lock_ttl(deadline);
                let token = lock_token();
                let mut take = redis::cmd("SET");
                take.arg(keys.migration_lock())
                    .arg(&token)
                    .arg("NX")
                    .arg("PX")
                    .arg(millis(ttl));
                let taken: Option<String> = exchange(deadline, take.query_async(&mut conn)).await?;
                if taken.is_none() {
                    if !waiting {
                        waiting = true;
                        tracing::info!(
                            prefix = keys.prefix(),
                            from = version,
                            "waiting for another process to migrate the Redis schema"
                        );
                    }
                    tokio::time::sleep(LOCK_POLL).await;
                    continue;
                }
                tracing::info!(
                    prefix = keys.prefix(),
                    from = version,
                    "migrating Redis schema"
                );
                let mut migrator = Migrator {
                    conn: conn.clone(),
                    keys: keys.clone(),
                    token,
                    from: version,
                    ttl,
                    deadline,
                    progress: HashMap::new(),
                    #[cfg(test)]
                    crash_after: limits.crash_after,
                };
                match migrator.complete(body).await {
                    Ok(()) => {}
                    // Another process took over (this one stalled past the lock's time to
                    // live): look at the version again.
                    Err(Stop::Lost) => {
                        tracing::warn!(
                            prefix = keys.prefix(),
                            from = version,
                            "lost the Redis schema migration lock; another process took over"
                        );
                    }
                    Err(Stop::Failed(e)) => {
                        // The progress stays; the next opener resumes at once.
                        let _ = migrator.progress_step(&["release"]).await;
                        return Err(e);
                    }
                    #[cfg(test)]
                    Err(Stop::Crashed) => {
                        return Err(Error::unavailable("the migrator stopped as if it had died"))
                    }
                }
            }
        }
    }
}

/// A duration in whole milliseconds, as `PX` and `PEXPIRE` take it.
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A token no other opener holds: this process, the time, and a counter.
fn lock_token() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{}-{nanos}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Why a step of a client-driven migration stopped short.
pub(crate) enum Stop {
    /// The migrator no longer holds the lock, or the data is no longer at the version it
    /// migrates from: it must change nothing more.
    Lost,
    /// The migration failed (the server, or the data).
    Failed(Error),
    /// Tests: the migrator stopped as if its process had died (see [`Limits`]).
    #[cfg(test)]
    Crashed,
}

impl From<Error> for Stop {
    fn from(e: Error) -> Self {
        Stop::Failed(e)
    }
}

/// The result of a step of a client-driven migration.
pub(crate) type Fenced<T> = std::result::Result<T, Stop>;

/// A script of a client-driven migration: `lua/migrate_head.lua` (the lock check), then the
/// parts given (shared heads, then the migration's own file).
macro_rules! migration_script {
    ($($part:expr),+) => {
        redis::Script::new(concat!(include_str!("lua/migrate_head.lua"), $(include_str!($part)),+))
    };
}
pub(crate) use migration_script;

/// The holder of the migration lock, through which a [`Step::Client`] migration reads and
/// writes: reads are plain commands, writes are scripts fenced by the lock's token.
pub(crate) struct Migrator {
    conn: Conn,
    keys: Keys,
    token: String,
    from: u32,
    ttl: Duration,
    deadline: Duration,
    /// The progress recorded so far (`{prefix}:migration`, read when the migration starts).
    progress: HashMap<String, String>,
    #[cfg(test)]
    crash_after: Option<usize>,
}

impl Migrator {
    /// The key names of the store.
    pub(crate) fn keys(&self) -> &Keys {
        &self.keys
    }

    /// A progress field as it was when the migration started (`None`: not recorded).
    pub(crate) fn progress(&self, field: &str) -> Option<&str> {
        self.progress.get(field).map(String::as_str)
    }

    /// Runs one command (a read) under the deadline.
    pub(crate) async fn query<T: FromRedisValue>(&mut self, cmd: &Cmd) -> Result<T> {
        exchange(self.deadline, cmd.query_async(&mut self.conn)).await
    }

    /// Runs one pipeline (reads) under the deadline.
    pub(crate) async fn query_pipe<T: FromRedisValue>(&mut self, pipe: &Pipeline) -> Result<T> {
        exchange(self.deadline, pipe.query_async(&mut self.conn)).await
    }

    /// An invocation of `script` (made by [`migration_script!`]) with the arguments of
    /// `lua/migrate_head.lua`; the caller adds the script's own.
    pub(crate) fn invocation<'s>(&self, script: &'s Script) -> ScriptInvocation<'s> {
        let mut inv = self.keys.invoke(script);
        inv.arg(&self.token).arg(self.from).arg(millis(self.ttl));
        inv
    }

    /// Runs a fenced script: its status and the rest of its reply, or [`Stop::Lost`] when it
    /// found the lock taken by another or the version changed.
    pub(crate) async fn run(&mut self, inv: &ScriptInvocation<'_>) -> Fenced<(String, Vec<Value>)> {
        #[cfg(test)]
        if let Some(left) = self.crash_after {
            if left == 0 {
                return Err(Stop::Crashed);
            }
            self.crash_after = Some(left - 1);
        }
        let reply: Vec<Value> = exchange(self.deadline, inv.invoke_async(&mut self.conn)).await?;
        let mut reply = reply.into_iter();
        let status: String = reply
            .next()
            .map(redis::from_redis_value)
            .transpose()
            .ok()
            .flatten()
            .ok_or_else(|| Error::corrupt("unexpected reply from a migration script"))?;
        if status == "lost" {
            return Err(Stop::Lost);
        }
        Ok((status, reply.collect()))
    }

    /// Records progress: `field` is `value` (read by [`progress`](Self::progress) when a
    /// migration cut short starts again).
    pub(crate) async fn set_progress(&mut self, field: &str, value: &str) -> Fenced<()> {
        self.progress_step(&["set", field, value]).await
    }

    /// Runs `lua/migrate_progress.lua` with `args`.
    async fn progress_step(&mut self, args: &[&str]) -> Fenced<()> {
        let script = migration_script!("lua/migrate_progress.lua");
        let mut inv = self.invocation(&script);
        inv.arg(args);
        self.run(&inv).await.map(|_| ())
    }

    /// Runs `body` from the recorded progress, then bumps the version.
    async fn complete(&mut self, body: ClientMigration) -> Fenced<()> {
        let script = migration_script!("lua/migrate_progress.lua");
        let mut inv = self.invocation(&script);
        inv.arg("start");
        let (_, fields) = self.run(&inv).await?;
        let fields: Vec<String> = fields
            .into_iter()
            .map(redis::from_redis_value)
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| Error::corrupt(format!("unreadable migration progress: {e}")))?;
        self.progress = fields
            .chunks_exact(2)
            .map(|pair| (pair[0].clone(), pair[1].clone()))
            .collect();
        body(self).await?;
        self.progress_step(&["done"]).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentmem_core::ErrorKind;

    use redis::aio::ConnectionManager;

    async fn connect() -> Option<Conn> {
        let url = agentmem_testkit::env_url("REDIS_URL", "redis://127.0.0.1:6379");
        let client = redis::Client::open(url.as_str()).unwrap();
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_number_of_retries(1)
            .set_connection_timeout(Some(std::time::Duration::from_secs(2)));
        match ConnectionManager::new_with_config(client, config).await {
            Ok(conn) => Some(Conn::Single(conn)),
            Err(e) => agentmem_testkit::service_unavailable("redis", &url, &e),
        }
    }

    fn limits() -> Limits {
        Limits::new(Duration::from_secs(10))
    }

    /// A fenced script that logs `ARGV[5]` and records it as progress field `step`.
    fn log_step() -> Script {
        Script::new(concat!(
            include_str!("lua/migrate_head.lua"),
            "redis.call('RPUSH', ARGV[1] .. ':log', ARGV[5])\n",
            "redis.call('HSET', MIGRATION_PROGRESS, 'step', ARGV[5])\n",
            "return {'ok'}"
        ))
    }

    /// A made-up client-driven migration of two steps, each logged; the first is skipped
    /// when a predecessor recorded it.
    fn two_steps(m: &mut Migrator) -> Pin<Box<dyn Future<Output = Fenced<()>> + Send + '_>> {
        Box::pin(async move {
            let script = log_step();
            if m.progress("step").is_none() {
                let mut inv = m.invocation(&script);
                inv.arg("v3->v4 first");
                m.run(&inv).await?;
            }
            let mut inv = m.invocation(&script);
            inv.arg("v3->v4 second");
            m.run(&inv).await?;
            Ok(())
        })
    }

    /// A made-up client-driven migration that fails after its first step.
    fn failing(m: &mut Migrator) -> Pin<Box<dyn Future<Output = Fenced<()>> + Send + '_>> {
        Box::pin(async move {
            let script = log_step();
            let mut inv = m.invocation(&script);
            inv.arg("v3->v4 first");
            m.run(&inv).await?;
            Err(Stop::Failed(Error::backend("made-up failure")))
        })
    }

    /// Made-up layout changes, to exercise the runner as real ones would.
    const TEST_MIGRATIONS: &[Migration] = &[
        Migration {
            from: 1,
            step: Step::Lua("redis.call('RPUSH', ARGV[1] .. ':log', 'v1->v2')"),
        },
        Migration {
            from: 2,
            step: Step::Lua("redis.call('RPUSH', ARGV[1] .. ':log', 'v2->v3')"),
        },
        Migration {
            from: 3,
            step: Step::Client(two_steps),
        },
    ];

    async fn log(conn: &mut Conn, prefix: &str) -> Vec<String> {
        redis::cmd("LRANGE")
            .arg(format!("{prefix}:log"))
            .arg(0)
            .arg(-1)
            .query_async(conn)
            .await
            .unwrap()
    }

    /// Whether `key` exists.
    async fn exists(conn: &mut Conn, key: &str) -> bool {
        redis::cmd("EXISTS")
            .arg(key)
            .query_async(conn)
            .await
            .unwrap()
    }

    async fn delete(conn: &mut Conn, prefix: &str) {
        let _: () = redis::cmd("DEL")
            .arg(format!("{prefix}:schema"))
            .arg(format!("{prefix}:log"))
            .arg(format!("{prefix}:migrating"))
            .arg(format!("{prefix}:migration"))
            .query_async(conn)
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn migrates_forward_once_and_refuses_newer() {
        let Some(mut conn) = connect().await else {
            return;
        };
        let prefix = agentmem_testkit::unique_namespace("migrate");
        let keys = Keys::new(&prefix, false);
        // A store written by "version 1".
        assert_eq!(ensure(&conn, &keys, 1, &[], limits()).await.unwrap(), 1);
        // Two openers of a "version 4" build race; each migration runs exactly once.
        let (a, b) = tokio::join!(
            ensure(&conn, &keys, 4, TEST_MIGRATIONS, limits()),
            ensure(&conn, &keys, 4, TEST_MIGRATIONS, limits())
        );
        assert_eq!((a.unwrap(), b.unwrap()), (4, 4));
        assert_eq!(
            log(&mut conn, &prefix).await,
            ["v1->v2", "v2->v3", "v3->v4 first", "v3->v4 second"]
        );
        // The lock and the progress are gone with the migration.
        assert!(!exists(&mut conn, &keys.migration_lock()).await);
        assert!(!exists(&mut conn, &format!("{prefix}:migration")).await);
        // An older build refuses the data; a gap in the migrations is reported.
        let err = ensure(&conn, &keys, 2, TEST_MIGRATIONS, limits())
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported);
        let gap = Keys::new(&agentmem_testkit::unique_namespace("migrate_gap"), false);
        ensure(&conn, &gap, 1, &[], limits()).await.unwrap();
        let err = ensure(&conn, &gap, 2, &[], limits()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Backend);
        delete(&mut conn, &prefix).await;
        delete(&mut conn, gap.prefix()).await;
    }

    /// How a test cuts a client-driven migration short, after its first step.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Cut {
        /// Its process dies: the lock stays taken until it expires, and the opener waiting
        /// for it then takes over.
        Crash,
        /// It fails: it releases the lock at once, and the next opener resumes without
        /// waiting.
        Failure,
    }

    /// A client-driven migration cut short keeps its progress, and the version stays; the
    /// next opener resumes it from the recorded progress (see [`Cut`] for when).
    #[tokio::test]
    async fn a_migration_cut_short_is_resumed_by_the_next_opener() {
        let Some(mut conn) = connect().await else {
            return;
        };
        let failing: &[Migration] = &[Migration {
            from: 3,
            step: Step::Client(failing),
        }];
        for cut in [Cut::Crash, Cut::Failure] {
            let prefix = agentmem_testkit::unique_namespace("migrate_cut");
            let keys = Keys::new(&prefix, false);
            ensure(&conn, &keys, 3, &[], limits()).await.unwrap();
            let (migrations, stop, kind) = match cut {
                // Dies after its `start` and first step.
                Cut::Crash => (
                    TEST_MIGRATIONS,
                    Limits {
                        crash_after: Some(2),
                        ..limits()
                    },
                    ErrorKind::Unavailable,
                ),
                Cut::Failure => (failing, limits(), ErrorKind::Backend),
            };
            let err = ensure(&conn, &keys, 4, migrations, stop).await.unwrap_err();
            assert_eq!(err.kind(), kind, "{cut:?}");
            assert_eq!(
                exists(&mut conn, &keys.migration_lock()).await,
                cut == Cut::Crash,
                "{cut:?}: the lock"
            );
            assert_eq!(
                ensure(&conn, &keys, 3, &[], limits()).await.unwrap(),
                3,
                "{cut:?}: not migrated yet"
            );
            let step: Option<String> = redis::cmd("HGET")
                .arg(format!("{prefix}:migration"))
                .arg("step")
                .query_async(&mut conn)
                .await
                .unwrap();
            assert_eq!(step.as_deref(), Some("v3->v4 first"), "{cut:?}");
            if cut == Cut::Crash {
                // The dead process's lock runs out (soon, rather than after its full time to
                // live).
                let _: () = redis::cmd("PEXPIRE")
                    .arg(keys.migration_lock())
                    .arg(50)
                    .query_async(&mut conn)
                    .await
                    .unwrap();
            }
            assert_eq!(
                ensure(&conn, &keys, 4, TEST_MIGRATIONS, limits())
                    .await
                    .unwrap(),
                4,
                "{cut:?}"
            );
            assert_eq!(
                log(&mut conn, &prefix).await,
                ["v3->v4 first", "v3->v4 second"],
                "{cut:?}"
            );
            delete(&mut conn, &prefix).await;
        }
    }
}
