//! HTTPS: rustls (with the `ring` provider) driven over the worker's own non-blocking sockets.
//!
//! A TLS connection is a `TcpConn` (the transport's plain TCP stream) plus a `rustls::ClientConnection`,
//! allocated once per connection when it is opened, never per request. Ciphertext moves with `read_tls`/`write_tls` through the socket's own reads and
//! writes, so a read still carries the kernel's receive timestamp of its last bytes: a response's completion
//! time is the arrival of its last ciphertext, whenever it is decrypted. Plaintext the connection already
//! decrypted is always handed out before the socket is read again, so the timestamp given with it is that of
//! the read that completed its records.
//!
//! The handshake runs on the event loop after the TCP connect, within the request timeout, and is measured on
//! its own (`tls_handshake` beside `connect_time`). Each worker has its own copy of the client configuration,
//! and with it its own session cache: a new connection resumes a session an earlier one of the same worker
//! saved (TLS 1.3 tickets, TLS 1.2 tickets or session ids), as browsers do, unless resumption is off. The
//! cache is a rustls in-memory store behind a mutex that only its worker's thread ever takes, and only when a
//! connection is opened or the server sends a ticket, never per request.

use std::future::poll_fn;
use std::io::{self, Read as _, Write as _};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use loadgate_measure::TlsErrorKind;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::Resumption;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    AlertDescription, CertificateError, ClientConfig, ClientConnection, DigitallySignedStruct, HandshakeKind,
    RootCertStore, SignatureScheme,
};

use crate::rt::{Deadline, Rt, TaskId};
use crate::transport::{Connecting, Read, Stream, TcpConn, TlsFailure};

/// Sessions a worker's cache keeps (rustls keeps up to 8 TLS 1.3 tickets per server within them).
const SESSIONS_PER_WORKER: usize = 256;

/// How to speak TLS to the target, as the spec says (`target.tls`): file contents, not paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsSettings {
    /// The name sent in SNI and checked against the certificate: the URL's host or `tls.server_name`.
    pub server_name: String,
    /// PEM certificates to trust instead of Mozilla's roots (`tls.ca`).
    pub ca_pem: Option<Vec<u8>>,
    /// Accept any certificate (`tls.insecure`, `-k`): handshake signatures are still checked.
    pub insecure: bool,
    /// PEM certificate chain and private key for mTLS.
    pub client_cert_pem: Option<Vec<u8>>,
    pub client_key_pem: Option<Vec<u8>>,
    /// Resume sessions on new connections (on by default).
    pub resume: bool,
}

/// Why a TLS client cannot be set up from its settings.
#[derive(Debug, thiserror::Error)]
pub enum TlsConfigError {
    #[error("`{0}` is not a name or an IP address a TLS certificate can be checked against")]
    ServerName(String),
    #[error("the CA file holds no PEM certificate")]
    NoCaCertificate,
    #[error("the CA file cannot be read as PEM certificates: {0}")]
    CaPem(String),
    #[error("a CA certificate is not usable: {0}")]
    CaCertificate(String),
    #[error("the client certificate file holds no PEM certificate")]
    NoClientCertificate,
    #[error("the client certificate file cannot be read as PEM: {0}")]
    ClientCertPem(String),
    #[error("the client key file holds no PEM private key: {0}")]
    ClientKeyPem(String),
    #[error("`client_cert` and `client_key` go together: give both or neither")]
    ClientAuthIncomplete,
    #[error("the client certificate and key cannot be used: {0}")]
    ClientAuth(String),
    #[error("TLS cannot be set up: {0}")]
    Rustls(String),
}

/// A TLS client ready to open connections: the configuration every worker copies, and the server name.
#[derive(Clone)]
pub struct TlsClient {
    config: Arc<ClientConfig>,
    server_name: ServerName<'static>,
    resume: bool,
    insecure: bool,
}

impl std::fmt::Debug for TlsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsClient")
            .field("server_name", &self.server_name)
            .field("resume", &self.resume)
            .field("insecure", &self.insecure)
            .finish_non_exhaustive()
    }
}

impl PartialEq for TlsClient {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.config, &other.config) && self.server_name == other.server_name
    }
}

impl Eq for TlsClient {}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

impl TlsClient {
    /// Builds the client: TLS 1.2 and 1.3, ALPN `http/1.1`, the trust the settings ask for.
    pub fn new(settings: &TlsSettings) -> Result<TlsClient, TlsConfigError> {
        let server_name = ServerName::try_from(settings.server_name.trim_start_matches('[').trim_end_matches(']'))
            .map_err(|_| TlsConfigError::ServerName(settings.server_name.clone()))?
            .to_owned();
        let provider = provider();
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(|e| TlsConfigError::Rustls(e.to_string()))?;
        let builder = if settings.insecure {
            builder.dangerous().with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate { provider }))
        } else {
            builder.with_root_certificates(roots(settings.ca_pem.as_deref())?)
        };
        let mut config = match (&settings.client_cert_pem, &settings.client_key_pem) {
            (None, None) => builder.with_no_client_auth(),
            (Some(cert), Some(key)) => {
                let chain = CertificateDer::pem_slice_iter(cert)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| TlsConfigError::ClientCertPem(e.to_string()))?;
                if chain.is_empty() {
                    return Err(TlsConfigError::NoClientCertificate);
                }
                let key =
                    PrivateKeyDer::from_pem_slice(key).map_err(|e| TlsConfigError::ClientKeyPem(e.to_string()))?;
                builder.with_client_auth_cert(chain, key).map_err(|e| TlsConfigError::ClientAuth(e.to_string()))?
            }
            _ => return Err(TlsConfigError::ClientAuthIncomplete),
        };
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        config.resumption =
            if settings.resume { Resumption::in_memory_sessions(SESSIONS_PER_WORKER) } else { Resumption::disabled() };
        Ok(TlsClient { config: Arc::new(config), server_name, resume: settings.resume, insecure: settings.insecure })
    }

    /// The rustls configuration (for a readiness probe that speaks TLS as the load will).
    pub fn rustls_config(&self) -> ClientConfig {
        (*self.config).clone()
    }

    /// The same client offering the ALPN protocols of `protocol`: `http/1.1`, `h2`, or both (`h2` first).
    pub fn for_protocol(&self, protocol: loadgate_model::Protocol) -> TlsClient {
        let alpn: &[&[u8]] = match protocol {
            loadgate_model::Protocol::Http1 => &[b"http/1.1"],
            loadgate_model::Protocol::Http2 => &[b"h2"],
            loadgate_model::Protocol::Auto => &[b"h2", b"http/1.1"],
        };
        let mut config = (*self.config).clone();
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        TlsClient { config: Arc::new(config), ..self.clone() }
    }

    /// Whether certificates go unchecked.
    pub fn insecure(&self) -> bool {
        self.insecure
    }

    /// The name sent in SNI and checked against the certificate: the URL's host or `tls.server_name`.
    pub fn server_name(&self) -> ServerName<'static> {
        self.server_name.clone()
    }

    /// What a TLS failure with this client's server means and what to do about it, in the words the load's
    /// reports use (for a readiness probe that fails as the load would).
    pub fn explain(&self, e: &rustls::Error) -> String {
        classify(e, &self.server_name.to_str()).message
    }

    /// A worker's own copy: the same settings with a session cache of its own.
    pub(crate) fn for_worker(&self) -> WorkerTls {
        let mut config = (*self.config).clone();
        if self.resume {
            config.resumption = Resumption::in_memory_sessions(SESSIONS_PER_WORKER);
        }
        WorkerTls { config: Arc::new(config), server_name: self.server_name.clone() }
    }
}

/// The CA certificates to trust: those of the file, or Mozilla's roots.
fn roots(ca_pem: Option<&[u8]>) -> Result<RootCertStore, TlsConfigError> {
    let mut store = RootCertStore::empty();
    match ca_pem {
        None => store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        Some(pem) => {
            let certs = CertificateDer::pem_slice_iter(pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| TlsConfigError::CaPem(e.to_string()))?;
            if certs.is_empty() {
                return Err(TlsConfigError::NoCaCertificate);
            }
            for cert in certs {
                store.add(cert).map_err(|e| TlsConfigError::CaCertificate(e.to_string()))?;
            }
        }
    }
    Ok(store)
}

/// `insecure: true`: any certificate chain is accepted; the handshake's signatures are still verified, so the
/// connection is encrypted to whoever holds the key of the certificate shown.
#[derive(Debug)]
struct AcceptAnyCertificate {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

/// A worker's TLS client: its own configuration (and session cache) and the server name.
pub(crate) struct WorkerTls {
    config: Arc<ClientConfig>,
    server_name: ServerName<'static>,
}

/// The handshake's own failures (the type is the transport's: [`Stream::take_tls_failure`] returns it).
impl TlsFailure {
    fn timeout(after: Duration) -> Self {
        TlsFailure {
            kind: TlsErrorKind::HandshakeTimeout,
            message: format!("TLS handshake timed out: no handshake within {after:?} of the TCP connect"),
        }
    }

    fn io(e: &io::Error) -> Self {
        TlsFailure { kind: TlsErrorKind::Other, message: format!("TLS handshake failed: {e}") }
    }
}

/// Classifies a rustls error and says what it means and what to do, for the server `server`.
pub(crate) fn classify(e: &rustls::Error, server: &str) -> TlsFailure {
    use rustls::Error as E;
    let (kind, message) = match e {
        E::InvalidCertificate(CertificateError::UnknownIssuer) => (
            TlsErrorKind::UnknownCa,
            format!(
                "the certificate of {server} is not signed by a trusted CA (unknown issuer): give its CA with \
                 `tls.ca`, or set `tls.insecure: true` (`-k`) for a self-signed test server"
            ),
        ),
        E::InvalidCertificate(CertificateError::NotValidForName) => (
            TlsErrorKind::NameMismatch,
            format!(
                "the certificate is not valid for the name `{server}`: set `tls.server_name` to a name it holds, \
                 or use that name in the URL"
            ),
        ),
        E::InvalidCertificate(CertificateError::NotValidForNameContext { presented, .. }) => (
            TlsErrorKind::NameMismatch,
            format!(
                "the certificate is not valid for the name `{server}` (it names {}): set `tls.server_name` to a \
                 name it holds, or use that name in the URL",
                if presented.is_empty() { "nothing".to_owned() } else { presented.join(", ") }
            ),
        ),
        E::InvalidCertificate(CertificateError::Expired | CertificateError::ExpiredContext { .. }) => {
            (TlsErrorKind::Certificate, format!("the certificate of {server} has expired"))
        }
        E::InvalidCertificate(CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. }) => {
            (TlsErrorKind::Certificate, format!("the certificate of {server} is not valid yet"))
        }
        E::InvalidCertificate(CertificateError::Other(other)) if format!("{other:?}").contains("CaUsedAsEndEntity") => {
            (
                TlsErrorKind::UnknownCa,
                format!(
                    "{server} shows a self-signed certificate (a CA certificate used as its own): pass `-k` \
                 (`tls.insecure: true`) or give the certificate with `tls.ca`"
                ),
            )
        }
        E::InvalidCertificate(other) => {
            (TlsErrorKind::Certificate, format!("the certificate of {server} is not acceptable: {other}"))
        }
        E::AlertReceived(alert) => (TlsErrorKind::Alert, alert_message(*alert, server)),
        other => (TlsErrorKind::Other, format!("TLS with {server} failed: {other}")),
    };
    TlsFailure { kind, message }
}

fn alert_message(alert: AlertDescription, server: &str) -> String {
    let hint = match alert {
        AlertDescription::CertificateRequired => {
            ": it requires a client certificate; give one with `tls.client_cert` and `tls.client_key`"
        }
        AlertDescription::BadCertificate
        | AlertDescription::UnknownCA
        | AlertDescription::CertificateUnknown
        | AlertDescription::UnsupportedCertificate
        | AlertDescription::CertificateExpired
        | AlertDescription::AccessDenied => ": it did not accept the client certificate (`tls.client_cert`)",
        AlertDescription::HandshakeFailure => {
            ": no protocol version, cipher suite or certificate it accepts (it may require a client certificate)"
        }
        AlertDescription::ProtocolVersion => ": it speaks neither TLS 1.2 nor TLS 1.3",
        AlertDescription::NoApplicationProtocol => ": it does not speak HTTP/1.1 (ALPN `http/1.1`)",
        AlertDescription::UnrecognisedName => ": it does not know the name sent in SNI (`tls.server_name`)",
        _ => "",
    };
    format!("{server} sent the TLS alert `{}`{hint}", alert_name(alert))
}

fn alert_name(alert: AlertDescription) -> String {
    // `CertificateRequired` -> `certificate_required`, the RFC's spelling.
    let debug = format!("{alert:?}");
    let mut out = String::with_capacity(debug.len() + 4);
    for (i, c) in debug.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// What a finished handshake negotiated.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Handshake {
    pub resumed: bool,
    /// `TLSv1_3`, `TLSv1_2`.
    pub version: Option<rustls::ProtocolVersion>,
}

/// A TLS connection over a registered non-blocking TCP connection.
pub(crate) struct TlsConn {
    tcp: TcpConn,
    tls: ClientConnection,
    /// The receive timestamp of the socket read that brought the ciphertext last decrypted.
    arrived: Option<Instant>,
    /// The TLS error that broke the connection, once (for the error counts).
    failure: Option<TlsFailure>,
    server: String,
}

impl TlsConn {
    /// The server chose HTTP/2 by ALPN.
    pub(crate) fn is_h2(&self) -> bool {
        self.tls.alpn_protocol() == Some(b"h2")
    }
}

/// The socket as rustls sees it: `io::Read`/`io::Write` that say `WouldBlock` when the event loop must wait,
/// keeping the receive timestamp of the last read.
struct Sock<'a> {
    tcp: &'a mut TcpConn,
    rt: &'a Rt,
    arrived: Option<Instant>,
}

impl io::Read for Sock<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.tcp.try_read(self.rt, buf)? {
            None => Err(io::ErrorKind::WouldBlock.into()),
            Some(r) => {
                self.arrived = r.arrived;
                Ok(r.len)
            }
        }
    }
}

impl io::Write for Sock<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.tcp.try_write(self.rt, buf)? {
            None => Err(io::ErrorKind::WouldBlock.into()),
            Some(n) => Ok(n),
        }
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match self.tcp.try_write_vectored(self.rt, bufs)? {
            None => Err(io::ErrorKind::WouldBlock.into()),
            Some(n) => Ok(n),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn would_block(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock
}

/// Runs the TLS handshake over a connected socket of the task being polled, within `timeout`.
pub(crate) async fn handshake(
    rt: &Rt,
    tcp: TcpConn,
    client: &WorkerTls,
    timeout: Duration,
) -> Result<(TlsConn, Handshake), TlsFailure> {
    let tls = ClientConnection::new(client.config.clone(), client.server_name.clone())
        .map_err(|e| classify(&e, &client.server_name.to_str()))?;
    let mut conn = TlsConn { tcp, tls, arrived: None, failure: None, server: client.server_name.to_str().into_owned() };
    let task: TaskId = rt.current();
    rt.connect_started();
    let _connecting = Connecting(rt);
    let mut deadline = Deadline::after(timeout);
    poll_fn(|_cx| {
        loop {
            let mut progress = false;
            match conn.flush(rt) {
                Ok(_) => {}
                Err(e) => return Poll::Ready(Err(conn.failure.take().unwrap_or_else(|| TlsFailure::io(&e)))),
            }
            if !conn.tls.is_handshaking() {
                return Poll::Ready(Ok(()));
            }
            let mut sock = Sock { tcp: &mut conn.tcp, rt, arrived: None };
            match conn.tls.read_tls(&mut sock) {
                Ok(0) => {
                    return Poll::Ready(Err(TlsFailure {
                        kind: TlsErrorKind::Other,
                        message: format!("{} closed the connection during the TLS handshake", conn.server),
                    }))
                }
                Ok(_) => {
                    progress = true;
                    if let Err(e) = conn.tls.process_new_packets() {
                        // Send the alert rustls queued, if the socket takes it.
                        let _ = conn.flush(rt);
                        return Poll::Ready(Err(classify(&e, &conn.server)));
                    }
                }
                Err(e) if would_block(&e) => {}
                Err(e) => return Poll::Ready(Err(TlsFailure::io(&e))),
            }
            if !progress {
                break;
            }
        }
        if deadline.passed(rt, task) {
            Poll::Ready(Err(TlsFailure::timeout(timeout)))
        } else {
            Poll::Pending
        }
    })
    .await?;
    let info = Handshake {
        resumed: conn.tls.handshake_kind() == Some(HandshakeKind::Resumed),
        version: conn.tls.protocol_version(),
    };
    Ok((conn, info))
}

impl TlsConn {
    /// Writes queued ciphertext; `Ok(true)` when none is left.
    fn flush(&mut self, rt: &Rt) -> io::Result<bool> {
        while self.tls.wants_write() {
            let mut sock = Sock { tcp: &mut self.tcp, rt, arrived: None };
            match self.tls.write_tls(&mut sock) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(_) => {}
                Err(e) if would_block(&e) => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// A TLS error broke the connection: keep it for the counts, and give the reader an I/O error.
    fn broken(&mut self, e: &rustls::Error, rt: &Rt) -> io::Error {
        let failure = classify(e, &self.server);
        let err = io::Error::other(failure.message.clone());
        self.failure = Some(failure);
        let _ = self.flush(rt);
        err
    }

    /// Hands out decrypted plaintext, if any: `Ok(None)` when there is none yet.
    fn plaintext(&mut self, buf: &mut [u8]) -> io::Result<Option<Read>> {
        match self.tls.reader().read(buf) {
            Ok(len) => Ok(Some(Read { len, arrived: self.arrived })),
            Err(e) if would_block(&e) => Ok(None),
            // The server closed without close_notify: for HTTP/1.1 framing an end of stream like any other.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(Some(Read { len: 0, arrived: None })),
            Err(e) => Err(e),
        }
    }
}

impl Stream for TlsConn {
    fn try_write(&mut self, rt: &Rt, buf: &[u8]) -> io::Result<Option<usize>> {
        // Never encrypt more while ciphertext waits for the socket: the socket's room is the back-pressure.
        if !self.flush(rt)? {
            return Ok(None);
        }
        let n = self.tls.writer().write(buf)?;
        if n == 0 {
            return Ok(None);
        }
        self.flush(rt)?;
        Ok(Some(n))
    }

    fn try_flush(&mut self, rt: &Rt) -> io::Result<()> {
        self.flush(rt).map(|_| ())
    }

    fn try_read(&mut self, rt: &Rt, buf: &mut [u8]) -> io::Result<Option<Read>> {
        if let Some(r) = self.plaintext(buf)? {
            return Ok(Some(r));
        }
        loop {
            let mut sock = Sock { tcp: &mut self.tcp, rt, arrived: None };
            let got = self.tls.read_tls(&mut sock);
            let arrived = sock.arrived;
            match got {
                Ok(0) => {}
                Ok(_) => self.arrived = arrived,
                Err(e) if would_block(&e) => return Ok(None),
                Err(e) => return Err(e),
            }
            let eof = matches!(got, Ok(0));
            let state = match self.tls.process_new_packets() {
                Ok(state) => state,
                Err(e) => return Err(self.broken(&e, rt)),
            };
            if state.plaintext_bytes_to_read() > 0 || eof || state.peer_has_closed() {
                return match self.plaintext(buf)? {
                    Some(r) => Ok(Some(r)),
                    None => Ok(Some(Read { len: 0, arrived: None })),
                };
            }
            // A session ticket or a key update: answer what needs answering, and read on.
            if self.tls.wants_write() {
                self.flush(rt)?;
            }
        }
    }

    fn take_tls_failure(&mut self) -> Option<TlsFailure> {
        self.failure.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificate_errors_are_classified_with_a_fix() {
        let unknown = classify(&rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer), "example.test");
        assert_eq!(unknown.kind, TlsErrorKind::UnknownCa);
        assert!(unknown.message.contains("tls.ca"), "{}", unknown.message);
        assert!(unknown.message.contains("insecure"), "{}", unknown.message);

        let name = classify(&rustls::Error::InvalidCertificate(CertificateError::NotValidForName), "wrong.test");
        assert_eq!(name.kind, TlsErrorKind::NameMismatch);
        assert!(name.message.contains("`wrong.test`") && name.message.contains("tls.server_name"), "{}", name.message);

        let expired = classify(&rustls::Error::InvalidCertificate(CertificateError::Expired), "e.test");
        assert_eq!(expired.kind, TlsErrorKind::Certificate);
        assert!(expired.message.contains("expired"));
    }

    #[test]
    fn alerts_are_classified_and_named_as_the_rfc_does() {
        let required = classify(&rustls::Error::AlertReceived(AlertDescription::CertificateRequired), "mtls.test");
        assert_eq!(required.kind, TlsErrorKind::Alert);
        assert!(required.message.contains("`certificate_required`"), "{}", required.message);
        assert!(required.message.contains("tls.client_cert"), "{}", required.message);

        let failure = classify(&rustls::Error::AlertReceived(AlertDescription::HandshakeFailure), "h.test");
        assert_eq!(failure.kind, TlsErrorKind::Alert);
        assert!(failure.message.contains("`handshake_failure`"), "{}", failure.message);

        let other = classify(&rustls::Error::DecryptError, "d.test");
        assert_eq!(other.kind, TlsErrorKind::Other);
        assert_eq!(TlsFailure::timeout(Duration::from_secs(2)).kind, TlsErrorKind::HandshakeTimeout);
    }

    #[test]
    fn settings_that_cannot_work_are_refused() {
        let base = TlsSettings { server_name: "localhost".into(), resume: true, ..TlsSettings::default() };
        assert!(TlsClient::new(&base).is_ok());
        assert!(TlsClient::new(&TlsSettings { server_name: "127.0.0.1".into(), ..base.clone() }).is_ok());
        assert!(TlsClient::new(&TlsSettings { server_name: "[::1]".into(), ..base.clone() }).is_ok());
        assert!(matches!(
            TlsClient::new(&TlsSettings { server_name: "bad name".into(), ..base.clone() }),
            Err(TlsConfigError::ServerName(_))
        ));
        assert!(matches!(
            TlsClient::new(&TlsSettings { ca_pem: Some(b"not pem".to_vec()), ..base.clone() }),
            Err(TlsConfigError::NoCaCertificate)
        ));
        assert!(matches!(
            TlsClient::new(&TlsSettings { client_cert_pem: Some(Vec::new()), ..base }),
            Err(TlsConfigError::ClientAuthIncomplete)
        ));
    }
}
