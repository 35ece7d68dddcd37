//! HTTP/2 for the built-in server: h2c with prior knowledge (a connection that starts with the HTTP/2 preface)
//! and h2 over TLS (ALPN `h2`), with the `h2` crate. Every stream is answered by the same routes as HTTP/1.1,
//! on a task of its own, so a delayed response holds back no other stream of its connection.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::watch;

use crate::behaviour::{pattern, Behaviour, MAX_BODY};
use crate::route::{route, BodySource, Request};
use crate::timer::precise_sleep_until;

/// The client connection preface of HTTP/2.
pub(crate) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Streams a client may have open at once on one connection.
const MAX_STREAMS: u32 = 256;

/// A stream whose first bytes were already read (to tell HTTP/2 from HTTP/1.1): they are read again first.
pub(crate) struct Prefixed<S> {
    head: Vec<u8>,
    pos: usize,
    inner: S,
}

impl<S> Prefixed<S> {
    pub(crate) fn new(head: Vec<u8>, inner: S) -> Self {
        Prefixed { head, pos: 0, inner }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Prefixed<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        if self.pos < self.head.len() {
            let n = buf.remaining().min(self.head.len() - self.pos);
            let pos = self.pos;
            buf.put_slice(&self.head[pos..pos + n]);
            self.pos += n;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Prefixed<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Serves one HTTP/2 connection until the client closes it or the server shuts down (a GOAWAY, then the
/// streams in progress finish).
pub(crate) async fn connection<S>(io: S, b: Arc<Behaviour>, mut shutdown: watch::Receiver<bool>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let handshake = ::h2::server::Builder::new().max_concurrent_streams(MAX_STREAMS).handshake::<_, Bytes>(io);
    let Ok(mut conn) = handshake.await else {
        return;
    };
    let mut closing = false;
    loop {
        tokio::select! {
            next = conn.accept() => match next {
                Some(Ok((request, respond))) => {
                    tokio::spawn(stream(request, respond, b.clone()));
                }
                _ => return,
            },
            _ = shutdown.changed(), if !closing => {
                closing = true;
                conn.graceful_shutdown();
            }
        }
    }
}

/// Answers one stream: reads its body, routes it as HTTP/1.1 would, sends the response.
async fn stream(
    request: http::Request<::h2::RecvStream>,
    mut respond: ::h2::server::SendResponse<Bytes>,
    b: Arc<Behaviour>,
) {
    let arrived = Instant::now();
    let (parts, mut body) = request.into_parts();
    let mut data = Vec::new();
    while let Some(chunk) = body.data().await {
        let Ok(chunk) = chunk else { return };
        let _ = body.flow_control().release_capacity(chunk.len());
        if data.len() + chunk.len() > MAX_BODY {
            let _ = respond.send_response(status_only(413), true);
            return;
        }
        data.extend_from_slice(&chunk);
    }
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let content_type = parts.headers.get(http::header::CONTENT_TYPE).map(|v| v.as_bytes());
    let req = Request {
        method: parts.method.as_str(),
        path,
        http10: false,
        keep_alive: true,
        content_type,
        body: std::borrow::Cow::Owned(data),
    };
    let reply = route(&b, &req);
    reply.work();
    if let Some(d) = reply.delay {
        precise_sleep_until(arrived + d).await;
    }
    let has_body = !matches!(reply.status, 204 | 304) && parts.method != http::Method::HEAD;
    let bytes = match reply.body {
        BodySource::Slice(s) => Bytes::copy_from_slice(s),
        BodySource::Generated(n) => Bytes::from(pattern(n)),
    };
    let mut head = http::Response::builder()
        .status(reply.status)
        .header(http::header::SERVER, "loadgate")
        .header(http::header::CONTENT_TYPE, reply.content_type);
    if has_body {
        head = head.header(http::header::CONTENT_LENGTH, bytes.len());
    }
    let Ok(head) = head.body(()) else { return };
    let Ok(mut send) = respond.send_response(head, !has_body || bytes.is_empty()) else { return };
    if has_body && !bytes.is_empty() {
        send_body(&mut send, bytes).await;
    }
}

/// Sends a body as the client's flow control allows.
async fn send_body(send: &mut ::h2::SendStream<Bytes>, mut bytes: Bytes) {
    while !bytes.is_empty() {
        send.reserve_capacity(bytes.len());
        let granted = match std::future::poll_fn(|cx| send.poll_capacity(cx)).await {
            Some(Ok(n)) if n > 0 => n,
            Some(Ok(_)) => continue,
            _ => return,
        };
        let chunk = bytes.split_to(granted.min(bytes.len()));
        if send.send_data(chunk, bytes.is_empty()).is_err() {
            return;
        }
    }
}

fn status_only(status: u16) -> http::Response<()> {
    let mut r = http::Response::new(());
    *r.status_mut() = http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::BAD_REQUEST);
    r
}
