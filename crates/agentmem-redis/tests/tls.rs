//! Redis over TLS (`rediss://`, cargo feature `tls`) against a TLS-only server with a
//! certificate from a private CA: `REDIS_TLS_URL` (default `rediss://127.0.0.1:6380/`; the
//! `.ci/redis-extra.sh` server, whose URL names its CA with `tls_ca`), each test under a key
//! prefix of its own.
//!
//! The whole conformance suite runs over TLS; a server certificate from another CA, or one
//! that does not name the host, is refused; `tls_ca` errors are the caller's; and without
//! `tls_ca` the CA bundle `SSL_CERT_FILE` names is what is trusted.
//!
//! Client certificates (`tls_cert`, `tls_key`) against a server that requires one:
//! `REDIS_TLS_CLIENT_AUTH_URL` (no default: the URL must name the client's files; the
//! `.ci/redis-extra.sh` server on 127.0.0.1:6381).
#![cfg(feature = "tls")]
use std::path::{Path, PathBuf};

use agentmem_core::{
    AgentMemoryExt, ErrorKind, Layered, Message, MessageQuery, SessionId, SessionStore,
};
use agentmem_redis::{RedisConfig, RedisStore};
use agentmem_testkit::{ServerNamespace, TestStore};

mod common;

async fn tls_store() -> Option<TestStore> {
    common::conformance_store(ServerNamespace::redis_tls("conf_tls"), "redis (TLS)").await
}

/// The conformance suite over `rediss://`.
mod conformance {
    agentmem_testkit::conformance_tests!(super::tls_store);
}

async fn tls_cluster_store() -> Option<TestStore> {
    let namespace = ServerNamespace::redis_tls_cluster("conf_tls_cluster");
    let opened = RedisStore::connect(namespace.url()).await;
    // A `rediss+cluster://` URL opens a cluster store.
    let opened = opened.inspect(|store| assert!(store.is_cluster()));
    namespace.test_store("redis cluster (TLS)", opened)
}

/// The conformance suite on a Redis Cluster over TLS (`rediss+cluster://`:
/// `REDIS_TLS_CLUSTER_URL`, default `rediss+cluster://127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103/`).
mod conformance_cluster {
    agentmem_testkit::conformance_tests!(super::tls_cluster_store);
}

/// A CA certificate no test server's certificate comes from.
fn other_ca() -> PathBuf {
    agentmem_testkit::servers::other_ca_file()
}

/// `url` (any agentmem Redis URL, a cluster's too) with its `tls_ca` option removed, or
/// replaced by `ca`.
fn with_ca(url: &str, ca: Option<&Path>) -> String {
    with_file_option(url, "tls_ca", ca)
}

/// `url` with its file option `option` removed, or replaced by `path`.
fn with_file_option(url: &str, option: &str, path: Option<&Path>) -> String {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let prefix = format!("{option}=");
    let mut pairs: Vec<String> = query
        .split('&')
        .filter(|pair| !pair.is_empty() && !pair.starts_with(&prefix))
        .map(str::to_string)
        .collect();
    if let Some(path) = path {
        let path = path.display().to_string();
        let encoded: String = url::form_urlencoded::byte_serialize(path.as_bytes()).collect();
        pairs.push(format!("{prefix}{encoded}"));
    }
    if pairs.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", pairs.join("&"))
    }
}

/// The CA of the test server: the URL's `tls_ca`, else `REDIS_TLS_CA`, else `SSL_CERT_FILE`.
fn server_ca(url: &str) -> Option<PathBuf> {
    let parsed = url::Url::parse(url).ok()?;
    parsed
        .query_pairs()
        .find(|(k, _)| k == "tls_ca")
        .map(|(_, v)| PathBuf::from(v.as_ref()))
        .or_else(|| std::env::var_os("REDIS_TLS_CA").map(PathBuf::from))
        .or_else(|| std::env::var_os("SSL_CERT_FILE").map(PathBuf::from))
}

/// The test server's URL and CA, once it answers (else the test is skipped, or fails when
/// services are required).
async fn reachable() -> Option<(String, PathBuf)> {
    let url = agentmem_testkit::servers::redis_tls_url();
    let prefix = agentmem_testkit::unique_namespace("tls_probe");
    let config = match RedisConfig::new(&url) {
        Ok(config) => config.with_prefix(&prefix).unwrap(),
        Err(e) => return agentmem_testkit::service_unavailable("redis (TLS)", &url, &e),
    };
    let ca = server_ca(&url);
    match (RedisStore::connect_with(config).await, ca) {
        (Ok(store), Some(ca)) => {
            // Opening wrote the schema key; leave nothing behind.
            let guard = agentmem_testkit::NamespaceGuard::new().redis_store_prefix(&url, &prefix);
            drop(store);
            drop(guard);
            Some((url, ca))
        }
        (Ok(_), None) => agentmem_testkit::service_unavailable(
            "redis (TLS)",
            &url,
            &"the server's CA is unknown: set REDIS_TLS_CA or tls_ca in REDIS_TLS_URL",
        ),
        (Err(e), _) => agentmem_testkit::service_unavailable("redis (TLS)", &url, &e),
    }
}

/// The error chain of connecting to `url`, which must fail in the TLS handshake (`Unavailable`).
async fn refused(url: &str) -> String {
    let config = RedisConfig::new(url)
        .unwrap()
        .with_prefix(&agentmem_testkit::unique_namespace("tls_refused"))
        .unwrap()
        .with_connect_timeout(std::time::Duration::from_secs(2));
    let err = RedisStore::connect_with(config)
        .await
        .expect_err("the TLS connection must be refused");
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(err.to_string().contains("TLS handshake"), "{err}");
    agentmem_testkit::error_chain(&err)
}

/// A client that trusts another CA refuses the server: nothing is sent in clear, nothing falls
/// back.
#[tokio::test]
async fn a_server_certificate_from_another_ca_is_refused() {
    let Some((url, _)) = reachable().await else {
        return;
    };
    let why = refused(&with_ca(&url, Some(&other_ca()))).await;
    assert!(why.contains("UnknownIssuer"), "{why}");
}

/// The certificate names localhost and 127.0.0.1; the same server reached as 127.0.0.2 (where
/// `.ci/redis-extra.sh` also listens) is refused.
#[tokio::test]
async fn a_certificate_for_another_host_name_is_refused() {
    let Some((url, _)) = reachable().await else {
        return;
    };
    let mut other_host = url::Url::parse(&url).unwrap();
    if other_host.host_str() != Some("127.0.0.1") {
        eprintln!("SKIPPED: REDIS_TLS_URL is not the local test server on 127.0.0.1");
        return;
    }
    other_host.set_host(Some("127.0.0.2")).unwrap();
    let why = refused(other_host.as_str()).await;
    assert!(why.contains("not valid for name"), "{why}");
}

/// A cluster over TLS checks every node's certificate too: trusting another CA, the client
/// cannot connect.
#[tokio::test]
async fn a_tls_cluster_refuses_certificates_from_another_ca() {
    let url = agentmem_testkit::servers::redis_tls_cluster_url();
    let (config, guard) = common::config_under_fresh_prefix(&url, "tls_cluster_probe");
    if let Err(e) = RedisStore::connect_with(config).await {
        let skipped: Option<()> =
            agentmem_testkit::service_unavailable("redis cluster (TLS)", &url, &e);
        return skipped.unwrap_or_default();
    }
    drop(guard);
    let why = refused(&with_ca(&url, Some(&other_ca()))).await;
    assert!(why.contains("UnknownIssuer"), "{why}");
}

/// `tls_ca`, `tls_cert` or `tls_key` naming no file, or a file without what it should hold
/// (a certificate, a private key), is the caller's mistake, named in the error.
#[tokio::test]
async fn unusable_tls_files_are_invalid_input() {
    let dir = tempfile::tempdir().unwrap();
    let not_pem = dir.path().join("not.pem");
    std::fs::write(&not_pem, "this is no certificate").unwrap();
    let missing = dir.path().join("missing.pem");
    let key = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/other-client.key");
    let client = |cert: &Path, key: &Path| {
        let url = with_file_option("rediss://127.0.0.1:6381/", "tls_cert", Some(cert));
        with_file_option(&url, "tls_key", Some(key))
    };
    for (url, why) in [
        (
            with_ca("rediss://127.0.0.1:6380/", Some(&missing)),
            "cannot read the Redis tls_ca file",
        ),
        (
            with_ca("rediss://127.0.0.1:6380/", Some(&not_pem)),
            "no PEM certificate",
        ),
        (
            client(&missing, &key),
            "cannot read the Redis tls_cert file",
        ),
        (client(&key, &key), "tls_cert file"),
        (
            client(&other_ca(), &missing),
            "cannot read the Redis tls_key file",
        ),
        (client(&other_ca(), &not_pem), "holds no PEM private key"),
    ] {
        let err = RedisStore::connect(&url).await.expect_err(why);
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{url}: {err}");
        assert!(err.to_string().contains(why), "{url}: {err}");
        assert_eq!(err.backend_name(), Some("redis"));
    }
    let config = RedisConfig::new("redis://127.0.0.1:6379/").unwrap();
    let err = config.with_tls_ca(other_ca()).expect_err("not TLS");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
}

/// A store connected with `config`, in which the session `id` holds the user message `text`.
async fn connect_and_append(
    config: RedisConfig, id: &SessionId, text: &str,
) -> Layered<RedisStore> {
    let store = RedisStore::connect_with(config).await.unwrap();
    store.append_one(id, Message::user(text)).await.unwrap();
    store
}

/// The builder's `with_tls_ca` works as the URL option does.
#[tokio::test]
async fn with_tls_ca_trusts_the_private_ca() {
    let Some((url, ca)) = reachable().await else {
        return;
    };
    let namespace_url = with_ca(&url, None);
    let prefix = agentmem_testkit::unique_namespace("tls_builder");
    let _guard = agentmem_testkit::NamespaceGuard::new().redis_store_prefix(&url, &prefix);
    let config = RedisConfig::new(&namespace_url)
        .unwrap()
        .with_prefix(&prefix)
        .unwrap()
        .with_tls_ca(&ca)
        .unwrap();
    assert_eq!(config.tls_ca(), Some(ca.as_path()));
    let id: SessionId = "over tls".parse().unwrap();
    let store = connect_and_append(config, &id, "encrypted all the way").await;
    let hits = store
        .search_messages("encrypted", &MessageQuery::default())
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(
        store.load(&id, None).await.unwrap().unwrap().messages.len(),
        1
    );
}

/// Set in the child process [`ssl_cert_file_names_the_trusted_cas`] starts.
const CHILD: &str = "AGENTMEM_REDIS_TLS_CHILD_URL";

/// Without `tls_ca`, the roots come from the bundle `SSL_CERT_FILE` names (as OpenSSL and
/// rustls-native-certs read it): the server's CA there is trusted, another CA there is not.
/// Each case runs in a child process (this test binary, this test only), because the
/// environment is the process's.
#[tokio::test]
async fn ssl_cert_file_names_the_trusted_cas() {
    if let Ok(url) = std::env::var(CHILD) {
        let (config, _guard) = common::config_under_fresh_prefix(&url, "tls_env");
        let config = config.with_connect_timeout(std::time::Duration::from_secs(2));
        match RedisStore::connect_with(config).await {
            Ok(store) => {
                let id: SessionId = "env".parse().unwrap();
                store.append_one(&id, Message::user("hi")).await.unwrap();
                println!("CHILD-RESULT ok");
            }
            Err(e) => println!(
                "CHILD-RESULT {:?}: {}",
                e.kind(),
                agentmem_testkit::error_chain(&e)
            ),
        }
        return;
    }
    let Some((url, ca)) = reachable().await else {
        return;
    };
    let without_ca = with_ca(&url, None);
    for (bundle, expected) in [
        (ca, "CHILD-RESULT ok"),
        (other_ca(), "CHILD-RESULT Unavailable"),
    ] {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "ssl_cert_file_names_the_trusted_cas",
                "--nocapture",
            ])
            .env(CHILD, &without_ca)
            .env("SSL_CERT_FILE", &bundle)
            .env_remove("SSL_CERT_DIR")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}");
        assert!(
            stdout.contains(expected),
            "SSL_CERT_FILE={}: {stdout}",
            bundle.display()
        );
    }
}

/// The server that requires a client certificate (`REDIS_TLS_CLIENT_AUTH_URL`, naming the
/// client's files), once it answers with them (else the test is skipped, or fails when
/// services are required).
async fn client_auth_reachable() -> Option<String> {
    const SERVER: &str = "redis (TLS, client certificate required)";
    let Ok(url) = std::env::var("REDIS_TLS_CLIENT_AUTH_URL") else {
        return agentmem_testkit::service_unavailable(
            SERVER,
            "REDIS_TLS_CLIENT_AUTH_URL",
            &"REDIS_TLS_CLIENT_AUTH_URL is not set (.ci/redis-extra.sh prints it)",
        );
    };
    let (config, guard) = common::config_under_fresh_prefix(&url, "tls_client_probe");
    match RedisStore::connect_with(config).await {
        Ok(store) => {
            assert!(RedisConfig::new(&url).unwrap().tls_client_cert().is_some());
            drop(store);
            drop(guard);
            Some(url)
        }
        Err(e) => agentmem_testkit::service_unavailable(SERVER, &url, &e),
    }
}

/// `url` without its client certificate and key.
fn without_client_cert(url: &str) -> String {
    with_file_option(&with_file_option(url, "tls_cert", None), "tls_key", None)
}

/// With its client certificate, a store on a server that requires one works end to end.
#[tokio::test]
async fn a_client_certificate_opens_a_server_that_requires_one() {
    let Some(url) = client_auth_reachable().await else {
        return;
    };
    let (config, _guard) = common::config_under_fresh_prefix(&url, "tls_client");
    let id: SessionId = "mutual tls".parse().unwrap();
    let store = connect_and_append(config, &id, "both sides showed a certificate").await;
    let session = store.load(&id, None).await.unwrap().unwrap();
    assert_eq!(session.messages.len(), 1);
    assert_eq!(
        session.messages[0].content,
        "both sides showed a certificate"
    );
}

/// Without a client certificate, or with a key that is not the certificate's, the server
/// (or the client, before it sends anything) refuses the connection.
#[tokio::test]
async fn a_missing_or_mismatched_client_certificate_is_refused() {
    let Some(url) = client_auth_reachable().await else {
        return;
    };
    let why = refused(&without_client_cert(&url)).await;
    assert!(why.contains("CertificateRequired"), "{why}");
    let other_key = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/other-client.key");
    let mismatched = with_file_option(&url, "tls_key", Some(&other_key));
    let err = RedisStore::connect(&mismatched)
        .await
        .expect_err("a key that is not the certificate's is refused");
    // rustls checks the pair when the client's TLS settings are built, before connecting.
    let why = agentmem_testkit::error_chain(&err);
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{why}");
    assert!(why.contains("KeyMismatch"), "{why}");
}
