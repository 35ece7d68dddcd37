//! The `http_get` readiness probe of an `https://` target: one HTTP/1.1 GET over rustls that speaks TLS as the
//! load will. It uses the load's client configuration (its CA file or Mozilla's roots, its client certificate, or
//! no check with `insecure`), sends the load's server name in SNI and checks the certificate against it
//! (`tls.server_name`, or the URL's host), connects to the base URL's address and sends the base URL's host in
//! `Host`. A certificate the load would refuse fails the probe at once, with the words the load's reports use:
//! waiting longer cannot make it acceptable.
//!
//! It offers ALPN as the load does (`target.protocol`): `http/1.1` under `http1`, `h2` under `http2`, `h2` then
//! `http/1.1` under `auto`. When `h2` may be offered the attempt runs on tokio-rustls and speaks whichever the
//! server picked (HTTP/2 with the `h2` crate); under `http2` a server that picks no `h2` is not ready for the
//! load.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use loadgate_model::Protocol;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::error::Failed;
use crate::h2c_probe;

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

    /// The same client offering the ALPN protocols the load offers under `protocol`.
    pub(crate) fn offering(mut self, protocol: Protocol) -> Self {
        let alpn: &[&[u8]] = match protocol {
            Protocol::Http1 => &[b"http/1.1"],
            Protocol::Http2 => &[b"h2"],
            Protocol::Auto => &[b"h2", b"http/1.1"],
        };
        Arc::make_mut(&mut self.config).alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        self
    }

    /// What a failure of the connection means: a TLS error in the load's words (fatal when the certificate is
    /// refused), anything else as it is.
    fn failure(&self, what: &str, e: std::io::Error) -> Failed {
        match e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
            Some(t) => Failed { message: (self.explain)(t), fatal: matches!(t, rustls::Error::InvalidCertificate(_)) },
            None => Failed::retry(format!("{what} failed: {e}")),
        }
    }
}

/// One TLS handshake with the first of `addrs` that accepts, as the load's connections make it (the load's
/// client configuration, server name and ALPN under `protocol`), and nothing sent after it: whether the target
/// can be talked to over TLS at all. Any failure is said in the load's words (a certificate refused, an alert, a
/// server that answers the handshake with something that is not TLS).
pub fn handshake(tls: ProbeTls, addrs: &[SocketAddr], protocol: Protocol, timeout: Duration) -> Result<(), String> {
    let tls = tls.offering(protocol);
    let no_address = "no address to connect to".to_owned();
    let (mut tcp, addr) =
        connect_first(addrs, timeout, no_address, |addr, e| format!("TCP connect to {addr} failed: {e}"))?;
    let io = |e: std::io::Error| match e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
        Some(t) => match t {
            rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateHandshakeMessage { .. } => {
                format!("{}: does it speak TLS? An `http://` URL names a plain-text server", (tls.explain)(t))
            }
            _ => (tls.explain)(t),
        },
        None if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
            format!("no TLS handshake with {addr} within {timeout:?}: does it speak TLS?")
        }
        None => format!("the TLS handshake with {addr} failed: {e} (does it speak TLS?)"),
    };
    tcp.set_read_timeout(Some(timeout)).map_err(io)?;
    tcp.set_write_timeout(Some(timeout)).map_err(io)?;
    let mut conn = ClientConnection::new(tls.config.clone(), tls.server_name.clone()).map_err(|e| (tls.explain)(&e))?;
    while conn.is_handshaking() {
        match conn.complete_io(&mut tcp) {
            Ok((0, 0)) if conn.is_handshaking() => {
                return Err(format!("{addr} closed the connection during the TLS handshake: does it speak TLS?"))
            }
            Ok(_) => {}
            Err(e) => return Err(io(e)),
        }
    }
    Ok(())
}

/// Connects to the first of `addrs` that accepts within `timeout`. When none does: `none` without an address,
/// else what `refused` makes of the last connect that failed.
fn connect_first<E>(
    addrs: &[SocketAddr],
    timeout: Duration,
    none: E,
    refused: impl Fn(&SocketAddr, std::io::Error) -> E,
) -> Result<(TcpStream, SocketAddr), E> {
    let mut last = none;
    for addr in addrs {
        match TcpStream::connect_timeout(addr, timeout) {
            Ok(tcp) => return Ok((tcp, *addr)),
            Err(e) => last = refused(addr, e),
        }
    }
    Err(last)
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
    let no_address = Failed::retry("no address to connect to".to_owned());
    let (tcp, addr) = connect_first(addrs, timeout, no_address, |addr, e| {
        Failed::retry(format!("TCP connect to {addr} failed: {e}"))
    })?;
    exchange(tls, tcp, addr, host, target, timeout)
}

fn exchange(
    tls: &ProbeTls,
    tcp: TcpStream,
    addr: SocketAddr,
    host: &str,
    target: &str,
    timeout: Duration,
) -> Result<u16, Failed> {
    let what = format!("HTTPS GET {target} at {addr}");
    let failed = |e: std::io::Error| tls.failure(&what, e);
    tcp.set_read_timeout(Some(timeout)).map_err(failed)?;
    tcp.set_write_timeout(Some(timeout)).map_err(failed)?;
    let conn = ClientConnection::new(tls.config.clone(), tls.server_name.clone())
        .map_err(|e| Failed { message: (tls.explain)(&e), fatal: true })?;
    let mut stream = StreamOwned::new(conn, tcp);
    // Writing completes the handshake first.
    request_status(&mut stream, host, target, &what, failed)
}

/// Sends `GET target` with `Host: host` on `stream` (plain TCP, or TLS over it) and reads the response's status
/// code: the exchange every HTTP/1.1 probe makes. `failed` words an I/O error of the exchange.
fn request_status(
    stream: &mut (impl Read + Write),
    host: &str,
    target: &str,
    what: &str,
    failed: impl Fn(std::io::Error) -> Failed,
) -> Result<u16, Failed> {
    let request = format!(
        "GET {target} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: loadgate\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).map_err(&failed)?;
    stream.flush().map_err(&failed)?;
    let mut head = Vec::with_capacity(256);
    let mut chunk = [0u8; 1024];
    loop {
        if let Some(code) = head_status(&head, what)? {
            return Ok(code);
        }
        match stream.read(&mut chunk) {
            Ok(0) => return Err(Failed::retry(format!("{what}: the connection closed before a status line"))),
            Ok(n) => head.extend_from_slice(&chunk[..n]),
            Err(e) => return Err(failed(e)),
        }
    }
}

/// One attempt over plain TCP (an `http://` target under HTTP/1.1): connect to the first of `addrs` that accepts,
/// `GET target` with `Host: host`, and read the response's status code, as [`get_status`] does over TLS: the
/// probes of every protocol are this crate's own, on one stack. Every socket operation waits at most `timeout`.
pub(crate) fn get_status_plain(
    addrs: &[SocketAddr],
    host: &str,
    target: &str,
    timeout: Duration,
) -> Result<u16, Failed> {
    let no_address = Failed::retry("no address to connect to".to_owned());
    let (mut tcp, addr) = connect_first(addrs, timeout, no_address, |addr, e| {
        Failed::retry(format!("GET {target} failed: TCP connect to {addr}: {e}"))
    })?;
    let what = format!("GET {target} at {addr}");
    let failed = |e: std::io::Error| Failed::retry(format!("{what} failed: {e}"));
    tcp.set_read_timeout(Some(timeout)).map_err(failed)?;
    tcp.set_write_timeout(Some(timeout)).map_err(failed)?;
    request_status(&mut tcp, host, target, &what, failed)
}

/// One attempt under `protocol` `http2` or `auto` (the client offers `h2`, see [`ProbeTls::offering`]): connect
/// to the first of `addrs` that accepts, handshake on tokio-rustls, and `GET target` in the protocol the server
/// picked by ALPN: HTTP/2 (`:authority` `host`) for `h2`; HTTP/1.1 (`Host: host`) otherwise, unless `protocol` is
/// `http2`. The whole attempt waits at most `timeout`.
pub(crate) fn get_status_alpn(
    tls: &ProbeTls,
    addrs: &[SocketAddr],
    host: &str,
    target: &str,
    timeout: Duration,
    protocol: Protocol,
) -> Result<u16, Failed> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| Failed::retry(format!("cannot start the probe's runtime: {e}")))?;
    rt.block_on(async {
        match tokio::time::timeout(timeout, exchange_alpn(tls, addrs, host, target, protocol)).await {
            Ok(result) => result,
            Err(_) => Err(Failed::retry(format!("HTTPS GET {target} got no answer within {timeout:?}"))),
        }
    })
}

async fn exchange_alpn(
    tls: &ProbeTls,
    addrs: &[SocketAddr],
    host: &str,
    target: &str,
    protocol: Protocol,
) -> Result<u16, Failed> {
    let mut last = Failed::retry("no address to connect to".to_owned());
    let mut tcp = None;
    for addr in addrs {
        match tokio::net::TcpStream::connect(addr).await {
            Ok(t) => {
                tcp = Some((t, *addr));
                break;
            }
            Err(e) => last = Failed::retry(format!("TCP connect to {addr} failed: {e}")),
        }
    }
    let Some((tcp, addr)) = tcp else {
        return Err(last);
    };
    let what = format!("HTTPS GET {target} at {addr}");
    let connector = tokio_rustls::TlsConnector::from(tls.config.clone());
    let mut stream =
        connector.connect(tls.server_name.clone(), tcp).await.map_err(|e| tls.failure(&format!("{what} (TLS)"), e))?;
    match stream.get_ref().1.alpn_protocol() {
        Some(b"h2") => h2c_probe::request(stream, &format!("https://{host}{target}"), "h2").await,
        picked if protocol == Protocol::Http2 => Err(Failed::retry(format!(
            "{what}: the server did not choose HTTP/2 by ALPN (it chose {}), and `target.protocol: http2` speaks \
             only h2",
            picked.map_or_else(|| "no protocol".to_owned(), |p| format!("`{}`", String::from_utf8_lossy(p)))
        ))),
        _ => {
            let request = format!(
                "GET {target} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: loadgate\r\nAccept: */*\r\nConnection: close\r\n\r\n"
            );
            stream.write_all(request.as_bytes()).await.map_err(|e| tls.failure(&what, e))?;
            stream.flush().await.map_err(|e| tls.failure(&what, e))?;
            let mut head = Vec::with_capacity(256);
            let mut chunk = [0u8; 1024];
            loop {
                if let Some(code) = head_status(&head, &what)? {
                    return Ok(code);
                }
                match stream.read(&mut chunk).await {
                    Ok(0) => return Err(Failed::retry(format!("{what}: the connection closed before a status line"))),
                    Ok(n) => head.extend_from_slice(&chunk[..n]),
                    Err(e) => return Err(tls.failure(&what, e)),
                }
            }
        }
    }
}

/// The status of the HTTP/1.x response whose first bytes are `head`, once its status line is complete.
fn head_status(head: &[u8], what: &str) -> Result<Option<u16>, Failed> {
    if let Some(end) = head.windows(2).position(|w| w == b"\r\n") {
        return status_code(&head[..end]).map(Some).ok_or_else(|| {
            Failed::retry(format!(
                "{what} answered `{}`, not an HTTP/1.x status line",
                String::from_utf8_lossy(&head[..end.min(80)])
            ))
        });
    }
    if head.len() > STATUS_LINE_MAX {
        return Err(Failed::retry(format!("{what}: no status line in {} bytes", head.len())));
    }
    Ok(None)
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
