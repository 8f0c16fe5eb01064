//! TLS for PostgreSQL connections: rustls (ring provider) behind tokio-postgres'
//! `MakeTlsConnect`, with libpq's `sslmode` meanings (see [`SslMode`]), and the pool's
//! connector, which falls back to plaintext under `prefer` when the handshake fails.

use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use agentmem_core::{Error, Result};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::task::JoinHandle;
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};
use tokio_postgres::{Client, Connection, NoTls};

use crate::config::{PostgresConfig, SslMode};

/// The ALPN protocol PostgreSQL 17 defines (required with `sslnegotiation=direct`, ignored
/// by older servers).
const ALPN_POSTGRESQL: &[u8] = b"postgresql";

/// Makes the rustls connector `config` asks for; `None` for `sslmode=disable`. Reads the CA,
/// client certificate and key files now: a missing or unreadable one is `InvalidInput`
/// naming the file.
pub(crate) fn connector(config: &PostgresConfig) -> Result<Option<MakeRustlsConnect>> {
    let mode = config.ssl_mode();
    if mode == SslMode::Disable {
        return Ok(None);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let (verifier, trust): (Arc<dyn ServerCertVerifier>, String) =
        match (mode, config.ssl_root_cert()) {
            (SslMode::Prefer | SslMode::Require, None) => (
                Arc::new(LibpqVerifier {
                    roots: None,
                    provider: provider.clone(),
                }),
                "the server's certificate is not checked".to_string(),
            ),
            // verify-ca checks the chain but not the host name: over the platform's roots any
            // publicly trusted certificate would pass, so libpq allows those only with
            // verify-full (`sslrootcert=system`), and so do we.
            (SslMode::VerifyCa, None) => return Err(verify_ca_needs_a_root()),
            (_, root) => {
                let (roots, trust) = match root {
                    Some(path) => (
                        roots_from_file(path)?,
                        format!("trusting the CA file {}", path.display()),
                    ),
                    None => platform_roots()?,
                };
                let roots = Arc::new(roots);
                let verifier: Arc<dyn ServerCertVerifier> = if mode == SslMode::VerifyFull {
                    WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
                        .build()
                        .map_err(|e| {
                            Error::invalid_input(format!(
                                "cannot use the trusted CA certificates: {e}"
                            ))
                        })?
                } else {
                    Arc::new(LibpqVerifier {
                        roots: Some(roots),
                        provider: provider.clone(),
                    })
                };
                (verifier, trust)
            }
        };
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::backend(format!("cannot set up TLS: {e}")))?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut tls = match config.ssl_client_cert() {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            let chain = CertificateDer::pem_file_iter(cert)
                .and_then(|certs| certs.collect::<std::result::Result<Vec<_>, _>>())
                .map_err(|e| {
                    Error::invalid_input(format!("cannot read sslcert {}: {e}", cert.display()))
                })?;
            if chain.is_empty() {
                return Err(Error::invalid_input(format!(
                    "sslcert {} holds no PEM certificate",
                    cert.display()
                )));
            }
            let private = PrivateKeyDer::from_pem_file(key).map_err(|e| {
                Error::invalid_input(format!(
                    "cannot read sslkey {} (an unencrypted PEM private key): {e}",
                    key.display()
                ))
            })?;
            builder.with_client_auth_cert(chain, private).map_err(|e| {
                Error::invalid_input(format!(
                    "cannot use sslcert {} with sslkey {}: {e}",
                    cert.display(),
                    key.display()
                ))
            })?
        }
    };
    tls.alpn_protocols = vec![ALPN_POSTGRESQL.to_vec()];
    Ok(Some(MakeRustlsConnect {
        config: Arc::new(tls),
        context: Arc::new(TlsContext { mode, trust }),
    }))
}

/// The CA certificates in the PEM file at `path`.
/// Why `verify-ca` without `sslrootcert` is refused, and what to do instead.
fn verify_ca_needs_a_root() -> Error {
    Error::invalid_input(
        "sslmode=verify-ca needs sslrootcert=PATH: it checks the certificate chain but not the \
         host name, so trusting the platform's root certificates would accept any publicly \
         trusted certificate; name the CA file, or use sslmode=verify-full (as libpq does)",
    )
}

fn roots_from_file(path: &std::path::Path) -> Result<RootCertStore> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<std::result::Result<Vec<_>, _>>())
        .map_err(|e| {
            Error::invalid_input(format!("cannot read sslrootcert {}: {e}", path.display()))
        })?;
    let mut roots = RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err(Error::invalid_input(format!(
            "sslrootcert {} holds no usable PEM CA certificate",
            path.display()
        )));
    }
    Ok(roots)
}

/// The platform's root certificates (or those of `SSL_CERT_FILE` / `SSL_CERT_DIR` when set),
/// with a description for error messages.
fn platform_roots() -> Result<(RootCertStore, String)> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(found.certs);
    let source = match std::env::var_os("SSL_CERT_FILE") {
        Some(file) => format!(
            "the CA certificates in SSL_CERT_FILE ({})",
            file.to_string_lossy()
        ),
        None => "the platform's root certificates".to_string(),
    };
    if added == 0 {
        let why = found
            .errors
            .first()
            .map(|e| format!(": {e}"))
            .unwrap_or_default();
        return Err(Error::invalid_input(format!(
            "no trusted CA certificates found in {source}{why}; give sslrootcert=PATH"
        )));
    }
    Ok((roots, format!("trusting {source}")))
}

/// What a connection was asked to check, for error messages.
#[derive(Debug)]
struct TlsContext {
    mode: SslMode,
    trust: String,
}

/// A TLS connection that could not be set up: the handshake failed (the server's
/// certificate was refused, …) or the host name cannot be checked. Never holds a password.
#[derive(Debug)]
pub(crate) struct TlsHandshakeError {
    context: Arc<TlsContext>,
    cause: io::Error,
}

impl fmt::Display for TlsHandshakeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unknown_issuer = self
            .cause
            .get_ref()
            .and_then(|e| e.downcast_ref::<rustls::Error>())
            .is_some_and(|e| {
                matches!(
                    e,
                    rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer)
                )
            });
        if unknown_issuer {
            f.write_str("the server's certificate is not signed by a trusted CA: ")?;
        }
        write!(
            f,
            "{} (sslmode={}; {})",
            self.cause, self.context.mode, self.context.trust
        )
    }
}

impl StdError for TlsHandshakeError {}

/// Makes a [`RustlsConnect`] per host; cheap to clone.
#[derive(Clone)]
pub(crate) struct MakeRustlsConnect {
    config: Arc<ClientConfig>,
    context: Arc<TlsContext>,
}

impl<S> MakeTlsConnect<S> for MakeRustlsConnect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type TlsConnect = RustlsConnect;
    type Error = TlsHandshakeError;

    fn make_tls_connect(
        &mut self, domain: &str,
    ) -> std::result::Result<RustlsConnect, Self::Error> {
        let name = match ServerName::try_from(domain) {
            Ok(name) => name.to_owned(),
            // Only verify-full compares the name; the others need one for the handshake
            // alone, and an IP address sends no SNI.
            Err(_) if self.context.mode != SslMode::VerifyFull => {
                ServerName::IpAddress(IpAddr::V4(Ipv4Addr::UNSPECIFIED).into())
            }
            Err(_) => {
                return Err(TlsHandshakeError {
                    context: self.context.clone(),
                    cause: io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!(
                            "host {:?} is neither a DNS name nor an IP address, so the \
                             certificate cannot be checked against it",
                            domain.chars().take(80).collect::<String>()
                        ),
                    ),
                })
            }
        };
        Ok(RustlsConnect {
            connector: tokio_rustls::TlsConnector::from(self.config.clone()),
            name,
            context: self.context.clone(),
        })
    }
}

/// The TLS handshake with one host.
pub(crate) struct RustlsConnect {
    connector: tokio_rustls::TlsConnector,
    name: ServerName<'static>,
    context: Arc<TlsContext>,
}

impl<S> TlsConnect<S> for RustlsConnect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type Error = TlsHandshakeError;
    type Future = Pin<
        Box<dyn Future<Output = std::result::Result<RustlsStream<S>, TlsHandshakeError>> + Send>,
    >;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            match self.connector.connect(self.name, stream).await {
                Ok(stream) => Ok(DriverStream(stream)),
                Err(cause) => Err(TlsHandshakeError {
                    context: self.context,
                    cause,
                }),
            }
        })
    }
}

/// A stream handed to the driver as its TLS stream: reads and writes go to `S` as they are,
/// and each kind of `S` gives its channel binding in its own [`TlsStream`] impl.
pub(crate) struct DriverStream<S>(pub(crate) S);

/// A TLS connection to PostgreSQL.
pub(crate) type RustlsStream<S> = DriverStream<tokio_rustls::client::TlsStream<S>>;

impl<S: AsyncRead + Unpin> AsyncRead for DriverStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for DriverStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> TlsStream for RustlsStream<S> {
    /// `tls-server-end-point` (RFC 5929), for SCRAM-SHA-256-PLUS.
    fn channel_binding(&self) -> ChannelBinding {
        let (_, connection) = self.0.get_ref();
        connection
            .peer_certificates()
            .and_then(|certs| certs.first())
            .and_then(|cert| tls_server_end_point(cert.as_ref()))
            .map(ChannelBinding::tls_server_end_point)
            .unwrap_or_else(ChannelBinding::none)
    }
}

/// The `tls-server-end-point` channel binding of the DER certificate `cert`: its hash with
/// the hash function of its signature algorithm, SHA-256 for MD5 and SHA-1 (RFC 5929 4.1),
/// as PostgreSQL computes it. `None` for an algorithm PostgreSQL cannot bind to either
/// (RSASSA-PSS, Ed25519, …): SCRAM then runs without channel binding.
fn tls_server_end_point(cert: &[u8]) -> Option<Vec<u8>> {
    // Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm AlgorithmIdentifier, … }
    let (certificate, _) = der(cert, 0x30)?;
    let (_, rest) = der_any(certificate)?;
    let (algorithm, _) = der(rest, 0x30)?;
    let (oid, _) = der(algorithm, 0x06)?;
    const RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01];
    const ECDSA_SHA1: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x01];
    const ECDSA_SHA2: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03];
    let digest = match oid {
        // md5WithRSA, sha1WithRSA, sha256WithRSA; ecdsa-with-SHA1, ecdsa-with-SHA256
        [rest @ .., 4 | 5 | 11] if rest == RSA => &ring::digest::SHA256,
        o if o == ECDSA_SHA1 => &ring::digest::SHA256,
        [rest @ .., 2] if rest == ECDSA_SHA2 => &ring::digest::SHA256,
        [rest @ .., 12] if rest == RSA => &ring::digest::SHA384,
        [rest @ .., 3] if rest == ECDSA_SHA2 => &ring::digest::SHA384,
        [rest @ .., 13] if rest == RSA => &ring::digest::SHA512,
        [rest @ .., 4] if rest == ECDSA_SHA2 => &ring::digest::SHA512,
        _ => return None,
    };
    Some(ring::digest::digest(digest, cert).as_ref().to_vec())
}

/// The contents of the DER element with tag `tag` at the start of `input`, and what follows.
fn der(input: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    if *input.first()? != tag {
        return None;
    }
    let header = header_len(input)?;
    let (whole, rest) = der_any(input)?;
    Some((&whole[header..], rest))
}

/// The DER element at the start of `input` (whole) and what follows.
fn der_any(input: &[u8]) -> Option<(&[u8], &[u8])> {
    let header = header_len(input)?;
    let length = content_len(input)?;
    let end = header.checked_add(length)?;
    (end <= input.len()).then(|| input.split_at(end))
}

/// How many bytes the tag and length of the element at the start of `input` take.
fn header_len(input: &[u8]) -> Option<usize> {
    let first = *input.get(1)?;
    Some(if first < 0x80 {
        2
    } else {
        2 + usize::from(first & 0x7f)
    })
}

/// The content length of the element at the start of `input` (definite lengths of up to 4
/// bytes, as in any certificate).
fn content_len(input: &[u8]) -> Option<usize> {
    let first = *input.get(1)?;
    if first < 0x80 {
        return Some(usize::from(first));
    }
    let count = usize::from(first & 0x7f);
    if count == 0 || count > 4 {
        return None;
    }
    input
        .get(2..2 + count)?
        .iter()
        .try_fold(0usize, |n, b| Some((n << 8) | usize::from(*b)))
}

/// The certificate check of the modes below `verify-full` (which uses rustls' own verifier):
///
/// - without `roots` (`prefer` and `require` without `sslrootcert`, as libpq): any certificate
///   is accepted: the connection is encrypted but the server is not authenticated;
/// - with `roots` (`verify-ca`, and `prefer` / `require` with `sslrootcert`): the certificate
///   must chain to a trusted CA and be valid now, for any host name.
///
/// The handshake signatures are checked either way.
#[derive(Debug)]
struct LibpqVerifier {
    roots: Option<Arc<RootCertStore>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for LibpqVerifier {
    fn verify_server_cert(
        &self, end_entity: &CertificateDer<'_>, intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>, _ocsp_response: &[u8], now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        if let Some(roots) = &self.roots {
            let cert = ParsedCertificate::try_from(end_entity)?;
            rustls::client::verify_server_cert_signed_by_trust_anchor(
                &cert,
                roots,
                intermediates,
                now,
                self.provider.signature_verification_algorithms.all,
            )?;
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self, message: &[u8], cert: &CertificateDer<'_>, dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self, message: &[u8], cert: &CertificateDer<'_>, dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// Whether `e` is a failed TLS handshake (rather than, say, a refused connection or a
/// failed login).
pub(crate) fn is_handshake_failure(e: &tokio_postgres::Error) -> bool {
    e.source().is_some_and(|s| s.is::<TlsHandshakeError>())
}

/// How the pool opens connections: with TLS as the `sslmode` says, falling back to
/// plaintext under `prefer` when the TLS handshake fails (libpq does the same; a server
/// that refuses TLS outright gets plaintext from the driver itself).
pub(crate) struct Connector {
    tls: Option<MakeRustlsConnect>,
    mode: SslMode,
}

impl Connector {
    /// The connector for `config` (reads its certificate files now).
    pub(crate) fn new(config: &PostgresConfig) -> Result<Self> {
        Ok(Connector {
            tls: connector(config)?,
            mode: config.ssl_mode(),
        })
    }
}

impl deadpool_postgres::Connect for Connector {
    fn connect(
        &self, pg_config: &tokio_postgres::Config,
    ) -> Pin<
        Box<
            dyn Future<
                    Output = std::result::Result<(Client, JoinHandle<()>), tokio_postgres::Error>,
                > + Send
                + '_,
        >,
    > {
        let mut config = pg_config.clone();
        config.ssl_mode(self.mode.driver_mode());
        Box::pin(async move {
            let Some(tls) = &self.tls else {
                return Ok(spawn(config.connect(NoTls).await?));
            };
            match config.connect(tls.clone()).await {
                Ok(connected) => Ok(spawn(connected)),
                Err(e) if self.mode == SslMode::Prefer && is_handshake_failure(&e) => {
                    let reason = e.source().map(ToString::to_string).unwrap_or_default();
                    tracing::warn!(
                        error = %reason,
                        "agentmem-postgres: the TLS handshake failed under sslmode=prefer; \
                         connecting without TLS"
                    );
                    config.ssl_mode(tokio_postgres::config::SslMode::Disable);
                    Ok(spawn(config.connect(NoTls).await?))
                }
                Err(e) => Err(e),
            }
        })
    }
}

/// Runs the connection's I/O in a task of its own, as deadpool's own connector does.
fn spawn<S, T>((client, connection): (Client, Connection<S, T>)) -> (Client, JoinHandle<()>)
where
    Connection<S, T>:
        Future<Output = std::result::Result<(), tokio_postgres::Error>> + Send + 'static,
{
    let task = tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!(error = %e, "agentmem-postgres: connection closed with an error");
        }
    });
    (client, task)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_ca_without_a_root_certificate_is_refused() {
        let config = |query: &str| -> PostgresConfig {
            format!("postgres://u@db.example/x?{query}")
                .parse()
                .unwrap()
        };
        let Err(err) = connector(&config("sslmode=verify-ca")) else {
            panic!("verify-ca without sslrootcert was accepted");
        };
        assert_eq!(err.kind(), agentmem_core::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("needs sslrootcert"), "{err}");
        // The modes that stay allowed without a root: no chain check, or a host-name check.
        for mode in ["prefer", "require"] {
            assert!(
                connector(&config(&format!("sslmode={mode}"))).is_ok(),
                "{mode}"
            );
        }
    }

    #[test]
    fn der_lengths_short_and_long() {
        // SEQUENCE of 3 bytes, then a trailing byte.
        let short = [0x30, 0x03, 1, 2, 3, 9];
        assert_eq!(der(&short, 0x30), Some((&short[2..5], &short[5..])));
        assert_eq!(der(&short, 0x06), None);
        let mut long = vec![0x30, 0x82, 0x01, 0x00];
        long.extend(std::iter::repeat_n(7u8, 256));
        let (content, rest) = der(&long, 0x30).unwrap();
        assert_eq!(content.len(), 256);
        assert!(rest.is_empty());
        // Truncated: the length runs past the input.
        assert_eq!(der(&long[..100], 0x30), None);
    }

    #[test]
    fn channel_binding_hash_follows_the_signature_algorithm() {
        // A minimal certificate-shaped DER: SEQUENCE { SEQUENCE {}, SEQUENCE { OID }, BIT STRING }
        let cert = |oid: &[u8]| {
            let mut alg = vec![0x06, oid.len() as u8];
            alg.extend_from_slice(oid);
            let mut body = vec![0x30, 0x00, 0x30, alg.len() as u8];
            body.extend(alg);
            body.extend([0x03, 0x01, 0x00]);
            let mut der = vec![0x30, body.len() as u8];
            der.extend(body);
            der
        };
        let sha256_rsa = cert(&[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 11]);
        assert_eq!(tls_server_end_point(&sha256_rsa).unwrap().len(), 32);
        let sha1_rsa = cert(&[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 5]);
        assert_eq!(tls_server_end_point(&sha1_rsa).unwrap().len(), 32);
        let sha384_ecdsa = cert(&[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 3]);
        assert_eq!(tls_server_end_point(&sha384_ecdsa).unwrap().len(), 48);
        let sha512_rsa = cert(&[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 13]);
        assert_eq!(tls_server_end_point(&sha512_rsa).unwrap().len(), 64);
        let ed25519 = cert(&[0x2b, 0x65, 0x70]);
        assert_eq!(tls_server_end_point(&ed25519), None);
        assert_eq!(tls_server_end_point(b"not DER"), None);
    }
}
