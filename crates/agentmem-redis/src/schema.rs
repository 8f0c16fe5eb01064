//! The schema version kept under the prefix, and forward migrations.
//!
//! `{prefix}:schema` holds the version of the layout the data was written in. Opening a
//! store writes [`SCHEMA_VERSION`] when the key is missing (a new store), runs the
//! migrations from the stored version up to the current one, each one a Lua script that
//! checks and bumps the version in the same atomic step (so two processes opening an old
//! store at once migrate it once), and refuses data newer than this build understands.

use agentmem_core::{Error, Result};
use redis::aio::ConnectionLike;
use redis::Script;

use crate::error::from_redis;
use crate::keys::Keys;

/// The layout this build writes (documented in the crate README). Version 2 added memory-item
/// scopes and expiry; version 3 keeps the session search index in epochs, so that
/// compaction and saves retire the old postings in O(1); version 4 adds session labels and
/// expiry (and `P:ids`, every session id in id order).
pub const SCHEMA_VERSION: u32 = 4;

/// One forward migration: a Lua body that rewrites the data under the key root (`ARGV[1]`:
/// the prefix, or `{prefix}` on a cluster)
/// from version `from` to `from + 1`. It runs wrapped by [`guarded`], which skips it unless
/// the schema key (`KEYS[1]`) still holds `from` and bumps the version in the same script;
/// so the body must not `return`.
pub(crate) struct Migration {
    pub(crate) from: u32,
    pub(crate) script: &'static str,
}

/// Migrations of this build, oldest first.
pub(crate) const MIGRATIONS: &[Migration] = &[
    // 1 -> 2: memory items gain a scope and an expiry; the items of version 1 become global
    // and never expire (see the script for the entries it converts).
    Migration {
        from: 1,
        script: include_str!("lua/migrate_1_2.lua"),
    },
    // 2 -> 3: the session index in epochs; version 2 data is epoch 0 as it stands (see the
    // script).
    Migration {
        from: 2,
        script: include_str!("lua/migrate_2_3.lua"),
    },
    // 3 -> 4: session labels and expiry; every session id goes into `P:ids` (see the
    // script).
    Migration {
        from: 3,
        script: include_str!("lua/migrate_3_4.lua"),
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

/// Brings the data under the prefix to version `target`, and returns it. Works on a single
/// server and on a cluster alike: every command and script names the schema key, which lies
/// in the store's slot.
pub(crate) async fn ensure<C: ConnectionLike + Send>(
    conn: &mut C, keys: &Keys, target: u32, migrations: &[Migration],
) -> Result<u32> {
    let key = keys.schema();
    // A new store: claim it for the current version (NX, so a concurrent opener of an older
    // build's data is never overwritten).
    let _claimed: Option<String> = redis::cmd("SET")
        .arg(&key)
        .arg(target)
        .arg("NX")
        .query_async(conn)
        .await
        .map_err(from_redis)?;
    loop {
        let stored: Option<String> = redis::cmd("GET")
            .arg(&key)
            .query_async(conn)
            .await
            .map_err(from_redis)?;
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
        tracing::info!(
            prefix = keys.prefix(),
            from = version,
            "migrating Redis schema"
        );
        let _ran: i64 = Script::new(&guarded(migration.script))
            .key(&key)
            .arg(keys.root())
            .arg(version)
            .invoke_async(conn)
            .await
            .map_err(from_redis)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentmem_core::ErrorKind;

    use redis::aio::ConnectionManager;

    async fn connect() -> Option<ConnectionManager> {
        let url = agentmem_testkit::env_url("REDIS_URL", "redis://127.0.0.1:6379");
        let client = redis::Client::open(url.as_str()).unwrap();
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_number_of_retries(1)
            .set_connection_timeout(Some(std::time::Duration::from_secs(2)));
        match ConnectionManager::new_with_config(client, config).await {
            Ok(conn) => Some(conn),
            Err(e) => agentmem_testkit::service_unavailable("redis", &url, &e),
        }
    }

    /// Two made-up layout changes, to exercise the runner as a real one would.
    const TEST_MIGRATIONS: &[Migration] = &[
        Migration {
            from: 1,
            script: "redis.call('RPUSH', ARGV[1] .. ':log', 'v1->v2')",
        },
        Migration {
            from: 2,
            script: "redis.call('RPUSH', ARGV[1] .. ':log', 'v2->v3')",
        },
    ];

    #[tokio::test]
    async fn migrates_forward_once_and_refuses_newer() {
        let Some(mut conn) = connect().await else {
            return;
        };
        let prefix = agentmem_testkit::unique_namespace("migrate");
        let keys = Keys::new(&prefix, false);
        // A store written by "version 1".
        assert_eq!(ensure(&mut conn, &keys, 1, &[]).await.unwrap(), 1);
        // Two openers of a "version 3" build race; each migration runs exactly once.
        let mut other = conn.clone();
        let (a, b) = tokio::join!(
            ensure(&mut conn, &keys, 3, TEST_MIGRATIONS),
            ensure(&mut other, &keys, 3, TEST_MIGRATIONS)
        );
        assert_eq!((a.unwrap(), b.unwrap()), (3, 3));
        let log: Vec<String> = redis::cmd("LRANGE")
            .arg(format!("{prefix}:log"))
            .arg(0)
            .arg(-1)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(log, ["v1->v2", "v2->v3"]);
        // An older build refuses the data; a gap in the migrations is reported.
        let err = ensure(&mut conn, &keys, 2, TEST_MIGRATIONS)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported);
        let gap = Keys::new(&agentmem_testkit::unique_namespace("migrate_gap"), false);
        ensure(&mut conn, &gap, 1, &[]).await.unwrap();
        let err = ensure(&mut conn, &gap, 2, &[]).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Backend);
        let _: () = redis::cmd("DEL")
            .arg(keys.schema())
            .arg(format!("{prefix}:log"))
            .arg(gap.schema())
            .query_async(&mut conn)
            .await
            .unwrap();
    }
}
