//! TLS as libpq's `sslmode` describes it, against the TLS-only server at `POSTGRES_TLS_URL`
//! (its private CA at `POSTGRES_TLS_CA`) and PgBouncer at `PGBOUNCER_URL`, which offers no
//! TLS (both from `.ci/postgres-extra.sh`): what each mode accepts and refuses, that a
//! refusal never turns into a plaintext connection where the mode forbids one, host name
//! checks, client certificates, and SCRAM channel binding.

mod common;

use common::{other_ca, private_ca};

use agentmem_core::{AgentMemoryExt, ErrorKind, Message, SessionId};
use agentmem_postgres::PostgresStore;
use agentmem_testkit::TestStore;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use url::Url;

/// The TLS server's URL without its `ssl*` options, and its password (to check that no
/// error shows it).
fn tls_base() -> (String, String) {
    let url = common::tls_url_without_ssl_options();
    let password = url.password().unwrap_or_default().to_string();
    (url.to_string(), password)
}

/// Opens a store at `base` with `options` in a fresh schema, which is dropped when the store
/// is, through a connection made with the same URL (its TLS options and certificates); `Err`
/// is the connection's error.
async fn open(
    base: &str, options: &[(&str, &str)],
) -> Result<common::GuardedStore, agentmem_core::Error> {
    let schema = agentmem_testkit::unique_namespace(common::PREFIX);
    let mut all = vec![("schema", schema.as_str()), ("pool_size", "2")];
    all.extend_from_slice(options);
    let url = common::with_options(base, &all);
    let store = PostgresStore::connect(&url).await?;
    Ok(TestStore::new(store).with_namespace(common::dropping_schema(&url, &schema)))
}

/// Whether the store's pooled connection is encrypted, as the server sees it.
async fn server_sees_tls(store: &PostgresStore) -> bool {
    let client = store.pool().get().await.expect("a pooled connection");
    let rows = client
        .simple_query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
        .await
        .expect("pg_stat_ssl");
    rows.iter().any(|m| match m {
        tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0) == Some("t"),
        _ => false,
    })
}

/// Appends and reads back, so the connection is known to work.
async fn round_trip(store: &PostgresStore) {
    let session = SessionId::new("tls").expect("session id");
    store
        .append_one(&session, Message::user("over the wire"))
        .await
        .expect("append");
    let messages = store.messages(&session).await.expect("load");
    assert_eq!(messages.len(), 1);
}

/// Opens a store at `base` with `options`, which must connect (`why` says why it should), and
/// checks the connection with a round trip; with `over_tls`, the server must see it encrypted.
async fn assert_connects(base: &str, options: &[(&str, &str)], why: &str, over_tls: bool) {
    let store = open(base, options).await.expect(why);
    if over_tls {
        assert!(server_sees_tls(&store).await, "{why}: TLS first");
    }
    round_trip(&store).await;
}

/// Asserts a refusal is `Unavailable`, mentions `expected`, and shows no password.
fn assert_refused(err: &agentmem_core::Error, expected: &str, password: &str) {
    let shown = err.to_string();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{shown}");
    assert!(
        shown.contains(expected),
        "{shown} should mention {expected:?}"
    );
    if !password.is_empty() {
        assert!(!shown.contains(password), "{shown} shows the password");
        assert!(!format!("{err:?}").contains(password), "{err:?}");
    }
}

#[tokio::test]
async fn verify_full_with_the_private_ca_connects_over_tls() {
    let Some(ca) = private_ca() else { return };
    let (base, _) = tls_base();
    let store = match open(
        &base,
        &[("sslmode", "verify-full"), ("sslrootcert", ca.as_str())],
    )
    .await
    {
        Ok(store) => store,
        Err(e) => {
            return agentmem_testkit::service_unavailable("postgres-tls", &base, &e).unwrap_or(())
        }
    };
    assert!(server_sees_tls(&store).await);
    round_trip(&store).await;
}

#[tokio::test]
async fn scram_channel_binding_is_used_over_tls() {
    // The server authenticates `postgres` with SCRAM and offers SCRAM-SHA-256-PLUS over TLS;
    // `channel_binding=require` refuses to log in without binding to the certificate.
    let Some(ca) = private_ca() else { return };
    let (base, password) = tls_base();
    if password.is_empty() {
        return;
    }
    let options = [
        ("sslmode", "verify-full"),
        ("sslrootcert", ca.as_str()),
        ("channel_binding", "require"),
    ];
    let why = "SCRAM-SHA-256-PLUS with the tls-server-end-point binding";
    assert_connects(&base, &options, why, false).await;
}

#[tokio::test]
async fn require_encrypts_without_checking_the_certificate() {
    let Some(_) = private_ca() else { return };
    let (base, _) = tls_base();
    // As libpq without a root certificate: encrypted, the certificate not checked.
    let why = "require connects to a TLS server";
    assert_connects(&base, &[("sslmode", "require")], why, true).await;
}

#[tokio::test]
async fn require_never_falls_back_to_plaintext() {
    let base = common::pgbouncer_url();
    // The server refuses TLS: it answers an SSLRequest with 'N'.
    let address = Url::parse(&base).expect("PGBOUNCER_URL is a URL");
    let host = address.host_str().unwrap_or("127.0.0.1").to_string();
    let port = address.port().unwrap_or(5432);
    let mut socket = match tokio::net::TcpStream::connect((host.as_str(), port)).await {
        Ok(socket) => socket,
        Err(e) => {
            return agentmem_testkit::service_unavailable("pgbouncer", &base, &e).unwrap_or(())
        }
    };
    let mut request = 8i32.to_be_bytes().to_vec();
    request.extend(80_877_103i32.to_be_bytes());
    socket.write_all(&request).await.expect("SSLRequest");
    let mut answer = [0u8];
    socket.read_exact(&mut answer).await.expect("answer");
    assert_eq!(&answer, b"N", "this server offers no TLS");

    // verify-ca names its CA (without one it is refused before connecting: see tls.rs).
    let (_dir, ca) = other_ca();
    for options in [
        &[("sslmode", "require")][..],
        &[("sslmode", "verify-ca"), ("sslrootcert", ca.as_str())],
        &[("sslmode", "verify-full")],
    ] {
        let err = open(&base, options)
            .await
            .expect_err("no plaintext connection under a mode that requires TLS");
        assert_refused(&err, "does not accept TLS", "");
    }
    // The same server with `prefer` (and `disable`) connects in plaintext.
    for mode in ["prefer", "disable"] {
        assert_connects(&base, &[("sslmode", mode)], "plaintext is allowed", false).await;
    }
}

#[tokio::test]
async fn a_certificate_from_another_ca_is_refused() {
    let Some(_) = private_ca() else { return };
    let (base, password) = tls_base();
    let (_dir, other) = other_ca();
    // require with a root certificate checks the chain, as libpq does.
    for mode in ["verify-full", "verify-ca", "require"] {
        let err = open(&base, &[("sslmode", mode), ("sslrootcert", other.as_str())])
            .await
            .expect_err("the server's certificate is not from the trusted CA");
        assert_refused(&err, "invalid peer certificate", &password);
        assert_refused(&err, &format!("sslmode={mode}"), &password);
        assert_refused(&err, other.as_str(), &password);
    }
}

#[tokio::test]
async fn verify_full_checks_the_host_name() {
    // The certificate names localhost and 127.0.0.1. `hostaddr` connects to 127.0.0.1 while
    // `host` is the name checked against the certificate.
    let Some(ca) = private_ca() else { return };
    let (base, password) = tls_base();
    let named = |host: &str| {
        let mut url = Url::parse(&base).expect("URL");
        url.set_host(Some(host)).expect("host");
        url.to_string()
    };
    let checked = |mode| {
        [
            ("sslrootcert", ca.as_str()),
            ("hostaddr", "127.0.0.1"),
            ("sslmode", mode),
        ]
    };
    let err = open(&named("not-in-the-cert.invalid"), &checked("verify-full"))
        .await
        .expect_err("the certificate is not for that name");
    assert_refused(&err, "not valid for name", &password);
    assert_refused(&err, "not-in-the-cert.invalid", &password);

    // The same name under verify-ca: the chain is checked, the name is not.
    let why = "verify-ca ignores the name";
    assert_connects(
        &named("not-in-the-cert.invalid"),
        &checked("verify-ca"),
        why,
        false,
    )
    .await;

    // A name the certificate has, at the same address.
    let why = "localhost is in the certificate";
    assert_connects(&named("localhost"), &checked("verify-full"), why, false).await;
}

#[tokio::test]
async fn prefer_connects_with_and_without_tls() {
    let Some(_) = private_ca() else { return };
    let (base, _) = tls_base();
    let prefer = [("sslmode", "prefer")];
    let why = "prefer connects to a TLS-only server";
    assert_connects(&base, &prefer, why, true).await;
    let why = "prefer connects to a server without TLS";
    assert_connects(&common::pgbouncer_url(), &prefer, why, false).await;
}

#[tokio::test]
async fn prefer_falls_back_to_plaintext_when_the_handshake_fails() {
    // As libpq: with a root certificate the chain is checked; when that fails, prefer tries
    // plaintext, which this TLS-only server then refuses itself.
    let Some(_) = private_ca() else { return };
    let (base, password) = tls_base();
    let (_dir, other) = other_ca();
    let err = open(
        &base,
        &[("sslmode", "prefer"), ("sslrootcert", other.as_str())],
    )
    .await
    .expect_err("TLS refused, then plaintext refused by the server");
    let shown = err.to_string();
    assert!(shown.contains("no encryption"), "{shown}");
    assert!(password.is_empty() || !shown.contains(&password), "{shown}");
}

#[tokio::test]
async fn client_certificates_log_in() {
    // `agentmem_cert` logs in with `cert` authentication: the certificate's CN is the user.
    let Some(ca) = private_ca() else { return };
    let (Some(cert), Some(key)) = (
        std::env::var_os("POSTGRES_TLS_CLIENT_CERT"),
        std::env::var_os("POSTGRES_TLS_CLIENT_KEY"),
    ) else {
        return agentmem_testkit::service_unavailable(
            "postgres-tls",
            &common::tls_url(),
            &"POSTGRES_TLS_CLIENT_CERT / POSTGRES_TLS_CLIENT_KEY are not set",
        )
        .unwrap_or(());
    };
    let mut url = Url::parse(&tls_base().0).expect("URL");
    url.set_username("agentmem_cert").expect("user");
    url.set_password(None).expect("no password");
    let base = url.to_string();
    let (cert, key) = (cert.to_string_lossy(), key.to_string_lossy());
    let verified = [("sslmode", "verify-full"), ("sslrootcert", ca.as_str())];

    let mut options = verified.to_vec();
    options.extend([("sslcert", cert.as_ref()), ("sslkey", key.as_ref())]);
    let store = open(&base, &options)
        .await
        .expect("the client certificate logs in");
    let client = store.pool().get().await.expect("a pooled connection");
    let user = client
        .simple_query("SELECT current_user")
        .await
        .expect("current_user");
    assert!(user.iter().any(|m| matches!(
        m,
        tokio_postgres::SimpleQueryMessage::Row(row) if row.get(0) == Some("agentmem_cert")
    )));
    drop(client);
    round_trip(&store).await;

    let err = open(&base, &verified)
        .await
        .expect_err("no certificate, no login");
    assert!(err.to_string().contains("certificate"), "{err}");
}

#[tokio::test]
async fn unreadable_certificate_files_are_invalid_input() {
    // Read before any connection is made: no server needed.
    let dir = tempfile::tempdir().expect("temporary folder");
    let missing = dir.path().join("missing.pem");
    let not_pem = dir.path().join("not.pem");
    std::fs::write(&not_pem, "not a certificate").expect("write");
    let (missing, not_pem) = (missing.to_string_lossy(), not_pem.to_string_lossy());
    let base = "postgres://u:hunter2@127.0.0.1:1/x";
    let cases: [&[(&str, &str)]; 4] = [
        &[
            ("sslmode", "verify-full"),
            ("sslrootcert", missing.as_ref()),
        ],
        &[("sslmode", "verify-ca"), ("sslrootcert", not_pem.as_ref())],
        &[("sslcert", missing.as_ref()), ("sslkey", not_pem.as_ref())],
        &[("sslcert", not_pem.as_ref()), ("sslkey", not_pem.as_ref())],
    ];
    for options in cases {
        let err = PostgresStore::connect(&common::with_options(base, options))
            .await
            .expect_err("a bad certificate file");
        let shown = err.to_string();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{shown}");
        let named = options
            .iter()
            .any(|(k, v)| k.starts_with("ssl") && shown.contains(v));
        assert!(named, "{shown} names the file");
        assert!(!shown.contains("hunter2"), "{shown}");
    }
}
