//! HTTPS for the built-in server: a certificate made at start (rcgen) or read from PEM files, served with
//! rustls (`ring`), TLS 1.2 and 1.3, ALPN `http/1.1`, session resumption by tickets and by session id.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::ServerSessionMemoryCache;
use rustls::ServerConfig;

use crate::error::ServerError;

/// Sessions the server remembers for resumption by session id (tickets need no memory).
const SESSION_CACHE: usize = 16 * 1024;

/// Where the built-in server's certificate comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServeTls {
    /// A self-signed certificate for `localhost`, `127.0.0.1` and `::1`, made at start (`--tls`): clients
    /// need `-k` / `tls.insecure: true`, or the certificate (`loadgate run` makes one and trusts it).
    SelfSigned,
    /// PEM files of the certificate chain and its key (`--tls-cert FILE --tls-key FILE`).
    Files { cert: PathBuf, key: PathBuf },
}

/// A certificate and its key, PEM-encoded.
#[derive(Debug, Clone)]
pub struct SelfSigned {
    pub cert_pem: String,
    pub key_pem: String,
}

/// Makes a self-signed certificate for `names` (DNS names or IP addresses).
pub fn self_signed(names: &[&str]) -> Result<SelfSigned, ServerError> {
    let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    let made = rcgen::generate_simple_self_signed(names)
        .map_err(|e| ServerError::InvalidServer(format!("cannot make a self-signed certificate: {e}")))?;
    Ok(SelfSigned { cert_pem: made.cert.pem(), key_pem: made.signing_key.serialize_pem() })
}

/// The names a self-signed certificate of the built-in server holds.
pub const SELF_SIGNED_NAMES: &[&str] = &["localhost", "127.0.0.1", "::1"];

/// Writes a self-signed certificate for [`SELF_SIGNED_NAMES`] to `dir` (`builtin-cert.pem`, and
/// `builtin-key.pem` readable by its owner only) and returns the two paths and the certificate's PEM.
pub fn write_self_signed(dir: &Path) -> Result<(PathBuf, PathBuf, String), ServerError> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let made = self_signed(SELF_SIGNED_NAMES)?;
    let cert = dir.join("builtin-cert.pem");
    let key = dir.join("builtin-key.pem");
    let io = |p: &Path, e: std::io::Error| ServerError::Server(format!("cannot write {}: {e}", p.display()));
    std::fs::write(&cert, &made.cert_pem).map_err(|e| io(&cert, e))?;
    let _ = std::fs::remove_file(&key);
    let mut f =
        std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&key).map_err(|e| io(&key, e))?;
    f.write_all(made.key_pem.as_bytes()).map_err(|e| io(&key, e))?;
    Ok((cert, key, made.cert_pem))
}

/// The rustls server configuration for `tls`.
pub(crate) fn server_config(tls: &ServeTls) -> Result<Arc<ServerConfig>, ServerError> {
    let (cert_pem, key_pem) = match tls {
        ServeTls::SelfSigned => {
            let made = self_signed(SELF_SIGNED_NAMES)?;
            (made.cert_pem.into_bytes(), made.key_pem.into_bytes())
        }
        ServeTls::Files { cert, key } => {
            let read = |p: &Path| {
                std::fs::read(p).map_err(|e| ServerError::InvalidServer(format!("cannot read {}: {e}", p.display())))
            };
            (read(cert)?, read(key)?)
        }
    };
    let chain = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ServerError::InvalidServer(format!("the TLS certificate is not PEM: {e}")))?;
    if chain.is_empty() {
        return Err(ServerError::InvalidServer("the TLS certificate file holds no certificate".to_owned()));
    }
    let key = PrivateKeyDer::from_pem_slice(&key_pem)
        .map_err(|e| ServerError::InvalidServer(format!("the TLS key file holds no PEM private key: {e}")))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| ServerError::InvalidServer(format!("TLS cannot be set up: {e}")))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| ServerError::InvalidServer(format!("the TLS certificate and key cannot be used: {e}")))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    config.session_storage = ServerSessionMemoryCache::new(SESSION_CACHE);
    config.ticketer = rustls::crypto::ring::Ticketer::new()
        .map_err(|e| ServerError::InvalidServer(format!("TLS session tickets cannot be set up: {e}")))?;
    Ok(Arc::new(config))
}
