//! The `http_get` readiness probe of an `https://` target: one HTTP/1.1 GET over rustls that speaks TLS as the
//! load will. It uses the load's client configuration (its CA file or Mozilla's roots, its client certificate, or
//! no check with `insecure`), sends the load's server name in SNI and checks the certificate against it
//! (`tls.server_name`, or the URL's host), connects to the base URL's address and sends the base URL's host in
//! `Host`. A certificate the load would refuse fails the probe at once, with the words the load's reports use:
//! waiting longer cannot make it acceptable.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};

/// How a readiness probe speaks TLS: as the load does.
pub struct ProbeTls {
    config: Arc<ClientConfig>,
    server_name: ServerName<'static>,
    explain: Box<dyn Fn(&rustls::Error) -> String + Send + Sync>,
}

impl std::fmt::Debug for ProbeTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProbeTls").field("server_name", &self.server_name).finish_non_exhaustive()
    }
}

impl ProbeTls {
    /// The load's client configuration, the name it sends in SNI and checks the certificate against, and what
    /// a TLS failure means in the load's words (`explain`).
    pub fn new(
        config: ClientConfig,
        server_name: ServerName<'static>,
        explain: impl Fn(&rustls::Error) -> String + Send + Sync + 'static,
    ) -> Self {
        ProbeTls { config: Arc::new(config), server_name, explain: Box::new(explain) }
    }
}

/// Why a probe attempt failed, and whether another attempt could succeed.
#[derive(Debug)]
pub(crate) struct Failed {
    pub message: String,
    /// The server answered the handshake with a certificate the load refuses: retrying cannot help.
    pub fatal: bool,
}

impl Failed {
    pub(crate) fn retry(message: String) -> Failed {
        Failed { message, fatal: false }
    }
}

/// The most of a response read while looking for the end of its status line.
const STATUS_LINE_MAX: usize = 8 * 1024;

/// One attempt: connect to the first of `addrs` that accepts, handshake, `GET target` with `Host: host`, and
/// read the response's status code. Every socket operation waits at most `timeout`.
pub(crate) fn get_status(
    tls: &ProbeTls,
    addrs: &[SocketAddr],
    host: &str,
    target: &str,
    timeout: Duration,
) -> Result<u16, Failed> {
    let mut last = Failed::retry("no address to connect to".to_owned());
    for addr in addrs {
        match TcpStream::connect_timeout(addr, timeout) {
            Ok(tcp) => return exchange(tls, tcp, *addr, host, target, timeout),
            Err(e) => last = Failed::retry(format!("TCP connect to {addr} failed: {e}")),
        }
    }
    Err(last)
}

fn exchange(
    tls: &ProbeTls,
    tcp: TcpStream,
    addr: SocketAddr,
    host: &str,
    target: &str,
    timeout: Duration,
) -> Result<u16, Failed> {
    let failed = |e: std::io::Error| match e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
        Some(t) => Failed { message: (tls.explain)(t), fatal: matches!(t, rustls::Error::InvalidCertificate(_)) },
        None => Failed::retry(format!("HTTPS GET {target} at {addr} failed: {e}")),
    };
    tcp.set_read_timeout(Some(timeout)).map_err(failed)?;
    tcp.set_write_timeout(Some(timeout)).map_err(failed)?;
    let conn = ClientConnection::new(tls.config.clone(), tls.server_name.clone())
        .map_err(|e| Failed { message: (tls.explain)(&e), fatal: true })?;
    let mut stream = StreamOwned::new(conn, tcp);
    // Writing completes the handshake first.
    let request = format!(
        "GET {target} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: loadgate\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).map_err(failed)?;
    stream.flush().map_err(failed)?;
    let mut head = Vec::with_capacity(256);
    let mut chunk = [0u8; 1024];
    loop {
        if let Some(end) = head.windows(2).position(|w| w == b"\r\n") {
            return status_code(&head[..end]).ok_or_else(|| {
                Failed::retry(format!(
                    "HTTPS GET {target} at {addr} answered `{}`, not an HTTP/1.x status line",
                    String::from_utf8_lossy(&head[..end.min(80)])
                ))
            });
        }
        if head.len() > STATUS_LINE_MAX {
            return Err(Failed::retry(format!("HTTPS GET {target} at {addr}: no status line in {} bytes", head.len())));
        }
        match stream.read(&mut chunk) {
            Ok(0) => {
                return Err(Failed::retry(format!(
                    "HTTPS GET {target} at {addr}: the connection closed before a status line"
                )))
            }
            Ok(n) => head.extend_from_slice(&chunk[..n]),
            Err(e) => return Err(failed(e)),
        }
    }
}

/// The code of an HTTP/1.x status line: `HTTP/1.1 200 OK` -> 200.
fn status_code(line: &[u8]) -> Option<u16> {
    let line = std::str::from_utf8(line).ok()?;
    let mut parts = line.splitn(3, ' ');
    if !parts.next()?.starts_with("HTTP/1.") {
        return None;
    }
    let code = parts.next()?;
    if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    code.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::status_code;

    #[test]
    fn status_lines_read_well() {
        assert_eq!(status_code(b"HTTP/1.1 200 OK"), Some(200));
        assert_eq!(status_code(b"HTTP/1.0 503 Service Unavailable"), Some(503));
        assert_eq!(status_code(b"HTTP/1.1 204"), Some(204));
        for bad in [&b"HTTP/2 200"[..], b"SSH-2.0-OpenSSH", b"HTTP/1.1 20x OK", b"HTTP/1.1 2000 OK", b"", b"\xff\xfe"] {
            assert_eq!(status_code(bad), None, "{bad:?}");
        }
    }
}
