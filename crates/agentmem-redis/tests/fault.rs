//! A Redis server that dies mid-run: operations (knowledge-graph ones too) fail promptly with
//! `Unavailable`, and work again through the same store once the server is back on the same
//! port.
//!
//! Starts its own `redis-server` (`REDIS_SERVER_BIN`, default `/usr/bin/redis-server`) on a
//! free port, without persistence, and stops it in every case (a guard with `Drop`).
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agentmem_core::{
    AgentMemoryExt, Entity, ErrorKind, GraphQuery, GraphStore, Message, MessageQuery,
    ObservationAddition, Operation, SessionId, SessionStore,
};
use agentmem_redis::{RedisConfig, RedisStore};

/// A bound on every single operation of this test: the store promises a prompt error, so
/// reaching this means it hung (the test then fails instead of hanging CI).
const HANG_GUARD: Duration = Duration::from_secs(60);

/// A child `redis-server`, killed and reaped when dropped.
struct Server {
    child: Child,
}

impl Server {
    /// Starts a server on `port`, or `None` (skipping, unless services are required) when
    /// the binary cannot be run.
    fn start(port: u16) -> Option<Server> {
        Self::start_with(port, &[])
    }

    /// Starts a server on `port` with extra command-line arguments.
    fn start_with(port: u16, extra: &[&str]) -> Option<Server> {
        let bin =
            std::env::var("REDIS_SERVER_BIN").unwrap_or_else(|_| "/usr/bin/redis-server".into());
        let spawned = Command::new(&bin)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let child = match spawned {
            Ok(child) => child,
            Err(e) => return agentmem_testkit::service_unavailable("redis-server", &bin, &e),
        };
        let server = Server { child };
        // Ready when it accepts connections; give up (failing the test) after 20 s.
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "redis-server did not start listening on port {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(server)
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().expect("local address").port()
}

async fn guarded<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(HANG_GUARD, f)
        .await
        .unwrap_or_else(|_| panic!("{what} hung for {HANG_GUARD:?}"))
}

fn assert_unavailable<T: std::fmt::Debug>(op: Operation, result: agentmem_core::Result<T>) {
    let what = op.as_str();
    let err = result.expect_err(what);
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{what}: {err}");
    assert!(err.is_temporary());
    // Labelled by the store's layer stack, not by the backend.
    assert_eq!(err.operation(), Some(op), "{what}: {err}");
    assert_eq!(err.backend_name(), Some("redis"), "{what}: {err}");
    assert!(
        std::error::Error::source(&err).is_some(),
        "{what}: the cause is kept"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_death_gives_unavailable_and_recovery_follows_restart() {
    let port = free_port();
    let Some(mut server) = Server::start(port) else {
        return;
    };
    let config: RedisConfig = format!(
        "redis://127.0.0.1:{port}/?prefix=fault&connect_timeout_ms=500&response_timeout_ms=2000"
    )
    .parse()
    .unwrap();
    let store = guarded("connect", RedisStore::connect_with(config))
        .await
        .unwrap();
    let id: SessionId = "survivor".parse().unwrap();
    guarded(
        "append",
        store.append_one(&id, Message::user("before the crash")),
    )
    .await
    .unwrap();
    assert_eq!(guarded("load", store.messages(&id)).await.unwrap().len(), 1);

    server.stop();
    // Several kinds of operation, each failing on its own, none hanging.
    assert_unavailable(
        Operation::Append,
        guarded("append", store.append_one(&id, Message::user("lost"))).await,
    );
    assert_unavailable(
        Operation::Load,
        guarded("load", store.load(&id, Some(5))).await,
    );
    assert_unavailable(
        Operation::ListSessions,
        guarded("list", store.list_sessions()).await,
    );
    assert_unavailable(
        Operation::SearchMessages,
        guarded(
            "search",
            store.search_messages("crash", &MessageQuery::default()),
        )
        .await,
    );
    assert_unavailable(
        Operation::Compact,
        guarded("compact", store.compact(&id, &[])).await,
    );
    let addition = ObservationAddition {
        entity_name: "survivor".into(),
        contents: vec!["lost".into()],
    };
    assert_unavailable(
        Operation::AddObservations,
        guarded("add_observations", store.add_observations(&[addition])).await,
    );
    assert_unavailable(
        Operation::ReadGraph,
        guarded("read_graph", store.read_graph(&GraphQuery::All)).await,
    );

    // Back on the same port (empty: it keeps nothing on disk). The same store recovers.
    let Some(_server) = Server::start(port) else {
        return;
    };
    guarded(
        "append after restart",
        store.append_one(&id, Message::user("after the restart")),
    )
    .await
    .expect("the first operation after the restart succeeds");
    let messages = guarded("load after restart", store.messages(&id))
        .await
        .unwrap();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].content, "after the restart");
    assert_eq!(
        guarded("schema", store.schema_version()).await.unwrap(),
        agentmem_redis::SCHEMA_VERSION,
        "an emptied server is a new store"
    );
    let hits = guarded(
        "search after restart",
        store.search_messages("restart", &MessageQuery::default()),
    )
    .await
    .unwrap();
    assert_eq!(hits.len(), 1);
    let entity = Entity::new("survivor", "session").with_observations(["restarted"]);
    let created = guarded(
        "create_entities after restart",
        store.create_entities(&[entity]),
    )
    .await
    .unwrap();
    let graph = guarded(
        "read_graph after restart",
        store.read_graph(&GraphQuery::All),
    )
    .await
    .unwrap();
    assert_eq!(graph.entities, created);
}

#[tokio::test]
async fn connecting_to_a_closed_port_is_unavailable() {
    let port = free_port(); // bound and released: nothing listens there now
    let result = guarded(
        "connect",
        RedisStore::connect(&format!("redis://127.0.0.1:{port}/?connect_timeout_ms=500")),
    )
    .await;
    let err = result.expect_err("nothing listens");
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert_eq!(err.backend_name(), Some("redis"));
    assert_eq!(err.operation(), Some(Operation::Open));
}

#[tokio::test]
async fn refused_credentials_are_unavailable_and_never_echoed() {
    let port = free_port();
    let Some(_server) = Server::start_with(port, &["--requirepass", "s3cret-pw"]) else {
        return;
    };
    for url in [
        format!("redis://127.0.0.1:{port}/?connect_timeout_ms=500"),
        format!("redis://:wrong-pw@127.0.0.1:{port}/?connect_timeout_ms=500"),
    ] {
        let err = guarded("connect", RedisStore::connect(&url))
            .await
            .expect_err("bad credentials");
        assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
        assert!(!format!("{err} {err:?}").contains("wrong-pw"), "{err:?}");
    }
    let url = format!("redis://:s3cret-pw@127.0.0.1:{port}/?prefix=auth");
    let store = guarded("connect", RedisStore::connect(&url)).await.unwrap();
    assert!(!format!("{store:?}").contains("s3cret-pw"));
    let id: SessionId = "authed".parse().unwrap();
    guarded("append", store.append_one(&id, Message::user("in")))
        .await
        .unwrap();
}
