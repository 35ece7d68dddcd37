//! The `http_get` readiness probe of a plain `http://` target under `target.protocol: http2`: one GET over h2c
//! with prior knowledge (the connection starts with the HTTP/2 preface, as the load's connections do), with the
//! `h2` crate on a current-thread tokio runtime of the attempt's own. A server that answers the preface with
//! anything but HTTP/2 is not ready for the load, and the probe says what failed.

use std::net::SocketAddr;
use std::time::Duration;

use crate::error::Failed;

/// One attempt: connect to the first of `addrs` that accepts, send the preface and `GET target` with
/// `:authority` `host`, and return the response's status. The whole attempt waits at most `timeout`.
pub(crate) fn get_status(addrs: &[SocketAddr], host: &str, target: &str, timeout: Duration) -> Result<u16, Failed> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| Failed::retry(format!("cannot start the probe's runtime: {e}")))?;
    let uri = format!("http://{host}{target}");
    rt.block_on(async {
        match tokio::time::timeout(timeout, exchange(addrs, &uri)).await {
            Ok(result) => result,
            Err(_) => Err(Failed::retry(format!("h2c GET {uri} got no answer within {timeout:?}"))),
        }
    })
}

async fn exchange(addrs: &[SocketAddr], uri: &str) -> Result<u16, Failed> {
    let mut last = Failed::retry("no address to connect to".to_owned());
    let mut tcp = None;
    for addr in addrs {
        match tokio::net::TcpStream::connect(addr).await {
            Ok(t) => {
                tcp = Some(t);
                break;
            }
            Err(e) => last = Failed::retry(format!("TCP connect to {addr} failed: {e}")),
        }
    }
    let Some(tcp) = tcp else {
        return Err(last);
    };
    request(tcp, uri, "h2c").await
}

/// `GET uri` over an HTTP/2 connection on `io` (h2c over TCP, or h2 over TLS after ALPN chose it); `name` says
/// which in a failure. Returns the response's status.
pub(crate) async fn request<T>(io: T, uri: &str, name: &str) -> Result<u16, Failed>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let failed = |what: &str, e: h2::Error| Failed::retry(format!("{name} GET {uri} failed ({what}): {e}"));
    let (client, connection) = h2::client::handshake(io).await.map_err(|e| failed("handshake", e))?;
    // The connection is driven beside the request; it ends when the runtime is dropped after the attempt.
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let mut client = client.ready().await.map_err(|e| failed("connection", e))?;
    let request = http::Request::get(uri)
        .body(())
        .map_err(|e| Failed::retry(format!("the probe URL `{uri}` is not a valid request: {e}")))?;
    let (response, _) = client.send_request(request, true).map_err(|e| failed("send", e))?;
    let response = response.await.map_err(|e| failed("response", e))?;
    Ok(response.status().as_u16())
}

/// Whether the server at the first of `addrs` that accepts speaks h2c with prior knowledge, as the load's
/// connections will: it answers the HTTP/2 preface and an empty SETTINGS frame with a SETTINGS frame. Nothing
/// else is sent (no request reaches the server).
pub fn speaks_h2c(addrs: &[SocketAddr], timeout: Duration) -> Result<(), String> {
    use std::io::{Read, Write};
    let mut last = "no address to connect to".to_owned();
    for addr in addrs {
        let mut tcp = match std::net::TcpStream::connect_timeout(addr, timeout) {
            Ok(tcp) => tcp,
            Err(e) => {
                last = format!("TCP connect to {addr} failed: {e}");
                continue;
            }
        };
        let failed = |e: std::io::Error| format!("h2c with {addr} failed: {e}");
        tcp.set_read_timeout(Some(timeout)).map_err(failed)?;
        tcp.set_write_timeout(Some(timeout)).map_err(failed)?;
        tcp.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00").map_err(failed)?;
        let mut head = [0u8; 9];
        let mut got = 0;
        while got < head.len() {
            match tcp.read(&mut head[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if got == 0 => {
                    return Err(format!(
                        "{addr} did not answer the HTTP/2 preface ({e}): `target.protocol: http2` over `http://` \
                         speaks h2c with prior knowledge, which it does not seem to speak"
                    ))
                }
                Err(_) => break,
            }
        }
        if got == head.len() && head[3] == 0x4 {
            return Ok(());
        }
        let shown = String::from_utf8_lossy(&head[..got]).escape_debug().to_string();
        return Err(format!(
            "{addr} answered the HTTP/2 preface with `{shown}`, not an HTTP/2 SETTINGS frame: it does not speak h2c \
             (`target.protocol: http2` over `http://`); use `http1`, or `https://` for HTTP/2 over TLS"
        ));
    }
    Err(last)
}
