//! `SSL_CERT_FILE` names the trusted CAs when the URL gives no `sslrootcert`, as with
//! OpenSSL: against the TLS-only server at `POSTGRES_TLS_URL` (`.ci/postgres-extra.sh`),
//! whose private CA is at `POSTGRES_TLS_CA`. A test binary of its own, with one test, since
//! it changes the process's environment.

mod common;

use agentmem_core::ErrorKind;
use agentmem_postgres::PostgresStore;

#[tokio::test]
async fn ssl_cert_file_names_the_trusted_cas() {
    let Some(ca) = common::private_ca() else {
        return;
    };
    // The TLS server's URL with verify-full and no sslrootcert.
    let mut url = common::tls_url_without_ssl_options();
    url.query_pairs_mut()
        .append_pair("sslmode", "verify-full")
        .append_pair("pool_size", "1");
    let schema = agentmem_testkit::unique_namespace(common::PREFIX);
    url.query_pairs_mut().append_pair("schema", &schema);
    let url = url.to_string();

    // rustls-native-certs reads SSL_CERT_DIR too; only the file is under test.
    std::env::remove_var("SSL_CERT_DIR");
    std::env::set_var("SSL_CERT_FILE", &ca);
    let store = match PostgresStore::connect(&url).await {
        Ok(store) => store,
        Err(e) => {
            return agentmem_testkit::service_unavailable("postgres-tls", &url, &e).unwrap_or(())
        }
    };
    store.drop_schema().await.expect("drop test schema");

    // Another CA in SSL_CERT_FILE: the server's certificate is refused, and the message
    // says where the trusted CAs came from.
    let (_dir, other) = common::other_ca();
    std::env::set_var("SSL_CERT_FILE", &other);
    let err = PostgresStore::connect(&url)
        .await
        .expect_err("not signed by a CA in SSL_CERT_FILE");
    let shown = err.to_string();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{shown}");
    assert!(shown.contains("not signed by a trusted CA"), "{shown}");
    assert!(shown.contains("SSL_CERT_FILE"), "{shown}");
}
