//! The built-in reference server behind `loadgate serve`.
//!
//! Hand-written HTTP/1.1 over tokio, one single-threaded runtime per server thread, each thread with its own
//! `SO_REUSEPORT` listener on the same port so the kernel spreads connections across threads. Keep-alive is the
//! default for HTTP/1.1 (opt-in with `Connection: keep-alive` for HTTP/1.0), pipelined requests are answered in
//! order and every response parsed from one read is written with one write, `Connection: close` is honoured,
//! request bodies are read by `Content-Length` or `Transfer-Encoding: chunked`, and `Expect: 100-continue` is
//! answered.
//!
//! # Routes
//!
//! Every path not listed here gets the configured behaviour ([`ServerBehaviour`]): its kind, status, delay, body
//! size and chunking. The query string is ignored. The listed routes work whatever the kind:
//!
//! | route            | answer                                                                      |
//! |------------------|-----------------------------------------------------------------------------|
//! | `/ready`         | `200` with body `ready\n`, never delayed (readiness probes)                  |
//! | `/echo`          | the request body back, with the configured status, delay and chunking        |
//! | `/status/{code}` | the configured behaviour with status `code` (200-599)                        |
//! | `/delay/{ms}`    | the configured behaviour after `ms` milliseconds (at most one hour)           |
//! | `/bytes/{n}`     | the configured status with an `n`-byte body (at most 64 MiB)                  |
//! | `/chunked/{n}`   | the configured status with an `n`-byte body sent chunked (at most 64 MiB)     |
//!
//! # HTTPS
//!
//! With [`ServeConfig::tls`] (`loadgate serve --tls`, or `--tls-cert FILE --tls-key FILE`) every connection
//! speaks TLS 1.2 or 1.3 (rustls, ALPN `h2` and `http/1.1`, resumption by tickets and session ids) and the
//! listening line says `https://`. See the `tls` module.
//!
//! # HTTP/2
//!
//! A plain connection that starts with the HTTP/2 preface is served as h2c (prior knowledge), a TLS connection
//! whose client chose `h2` by ALPN as h2, with the `h2` crate: the same routes, one task per stream, at most
//! 256 concurrent streams per connection. See the `h2` module.
//!
//! A malformed request gets `400` (`413` for a body above 64 MiB, `431` for a head above 64 KiB) and the
//! connection is closed. Responses carry `Server: loadgate` and a `Date` header; `204` and `304` carry no body.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration as StdDuration, Instant, SystemTime, UNIX_EPOCH};

use loadgate_model::units::Duration;
use loadgate_model::BuiltinKind;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::watch;

mod behaviour;
mod burn;
mod error;
mod h2;
mod route;
mod timer;
pub mod tls;

pub use behaviour::{kind_name, ServerBehaviour, HELLO_WORLD, MAX_BODY};
use behaviour::{pattern, Behaviour};
pub use error::ServerError;
use route::{route, BodySource, Reply, Request};
use timer::precise_sleep_until;
pub use tls::ServeTls;

/// The prefix of the one line `loadgate serve` prints to stdout once it listens (`https://` with TLS).
pub const LISTENING_PREFIX: &str = "listening on http://";
/// The prefix of the listening line of a server speaking TLS.
pub const LISTENING_PREFIX_TLS: &str = "listening on https://";
/// How long a TLS handshake may take before the server drops the connection.
const TLS_HANDSHAKE_TIMEOUT: StdDuration = StdDuration::from_secs(10);
/// The largest request head (request line and headers) the server reads.
pub const MAX_HEAD: usize = 64 * 1024;
/// How long a graceful shutdown waits for connections that are busy answering.
const SHUTDOWN_GRACE: StdDuration = StdDuration::from_secs(2);
/// Bodies sent chunked are cut into chunks of at most this many bytes.
const CHUNK_SIZE: usize = 8 * 1024;
const MAX_HEADERS: usize = 64;

/// What `loadgate serve` runs: the behaviour, the address to listen on and the number of server threads.
#[derive(Debug, Clone, PartialEq)]
pub struct ServeConfig {
    pub server: ServerBehaviour,
    /// Usually `127.0.0.1:0`: an ephemeral loopback port, reported once bound.
    pub listen: SocketAddr,
    /// Server threads, each with its own runtime and listener; `0` means one per CPU the process may run on.
    pub threads: usize,
    /// Serve HTTPS with this certificate.
    pub tls: Option<ServeTls>,
}

impl ServeConfig {
    /// A server with the given behaviour on an ephemeral loopback port, one thread per allowed CPU.
    pub fn new(server: ServerBehaviour) -> Self {
        ServeConfig { server, listen: SocketAddr::from(([127, 0, 0, 1], 0)), threads: 0, tls: None }
    }

    /// The arguments after `loadgate serve` that describe this configuration, in the form
    /// [`ServeConfig::from_args`] reads: `--kind plaintext --listen 127.0.0.1:0 --status 200 --threads 1
    /// [--delay 20ms] [--body-size N] [--chunked]`.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = vec![
            "--kind".to_owned(),
            kind_name(self.server.kind).to_owned(),
            "--listen".to_owned(),
            self.listen.to_string(),
            "--status".to_owned(),
            self.server.status.to_string(),
            "--threads".to_owned(),
            self.threads.to_string(),
        ];
        for (flag, value) in [("--work", self.server.work), ("--slow-path", self.server.slow_path)] {
            if let Some(d) = value {
                args.push(flag.to_owned());
                args.push(d.to_string());
            }
        }
        if let Some(d) = self.server.delay {
            args.push("--delay".to_owned());
            args.push(d.to_string());
        }
        if let Some(n) = self.server.body_size {
            args.push("--body-size".to_owned());
            args.push(n.to_string());
        }
        if self.server.chunked {
            args.push("--chunked".to_owned());
        }
        match &self.tls {
            None => {}
            Some(ServeTls::SelfSigned) => args.push("--tls".to_owned()),
            Some(ServeTls::Files { cert, key }) => {
                args.push("--tls-cert".to_owned());
                args.push(cert.display().to_string());
                args.push("--tls-key".to_owned());
                args.push(key.display().to_string());
            }
        }
        args
    }

    /// Parses the arguments of `loadgate serve` (a leading `serve` is skipped). Defaults: `--kind plaintext`,
    /// `--listen 127.0.0.1:0`, `--status 200`, `--threads 0`.
    pub fn from_args<S: AsRef<str>>(args: &[S]) -> Result<Self, ServerError> {
        let mut cfg = ServeConfig::new(ServerBehaviour::default());
        let mut it = args.iter().map(AsRef::as_ref).peekable();
        if it.peek() == Some(&"serve") {
            it.next();
        }
        while let Some(arg) = it.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v.to_owned())),
                _ => (arg, None),
            };
            if flag == "--chunked" {
                cfg.server.chunked = true;
                continue;
            }
            if flag == "--tls" {
                if cfg.tls.is_none() {
                    cfg.tls = Some(ServeTls::SelfSigned);
                }
                continue;
            }
            let mut value = || -> Result<String, ServerError> {
                match &inline {
                    Some(v) => Ok(v.clone()),
                    None => it
                        .next()
                        .map(str::to_owned)
                        .ok_or_else(|| ServerError::InvalidArgs(format!("`{flag}` needs a value"))),
                }
            };
            match flag {
                "--kind" => {
                    let v = value()?;
                    cfg.server.kind = parse_kind(&v).ok_or_else(|| {
                        ServerError::InvalidArgs(format!("unknown kind `{v}`; use plaintext, echo, delay or cpu"))
                    })?;
                }
                "--listen" => {
                    let v = value()?;
                    cfg.listen = v.parse().map_err(|_| {
                        ServerError::InvalidArgs(format!("`{v}` is not a socket address such as `127.0.0.1:0`"))
                    })?;
                }
                "--status" => {
                    let v = value()?;
                    cfg.server.status =
                        v.parse().map_err(|_| ServerError::InvalidArgs(format!("`{v}` is not an HTTP status code")))?;
                }
                "--threads" => {
                    let v = value()?;
                    cfg.threads =
                        v.parse().map_err(|_| ServerError::InvalidArgs(format!("`{v}` is not a thread count")))?;
                }
                "--work" | "--slow-path" => {
                    let v = value()?;
                    let d: Duration = v.parse().map_err(|e: loadgate_model::units::UnitError| {
                        ServerError::InvalidArgs(format!("`{v}` is not {}", e.expected))
                    })?;
                    if flag == "--work" {
                        cfg.server.work = Some(d);
                    } else {
                        cfg.server.slow_path = Some(d);
                    }
                }
                "--delay" => {
                    let v = value()?;
                    let d: Duration = v.parse().map_err(|e: loadgate_model::units::UnitError| {
                        ServerError::InvalidArgs(format!("`{v}` is not {}", e.expected))
                    })?;
                    cfg.server.delay = Some(d);
                }
                "--body-size" => {
                    let v = value()?;
                    let n: loadgate_model::units::ByteSize =
                        v.parse().map_err(|e: loadgate_model::units::UnitError| {
                            ServerError::InvalidArgs(format!("`{v}` is not {}", e.expected))
                        })?;
                    cfg.server.body_size = Some(n.0);
                }
                "--tls-cert" | "--tls-key" => {
                    let v = std::path::PathBuf::from(value()?);
                    let (mut cert, mut key) = match cfg.tls.take() {
                        Some(ServeTls::Files { cert, key }) => (Some(cert), Some(key)),
                        _ => (None, None),
                    };
                    if flag == "--tls-cert" {
                        cert = Some(v);
                    } else {
                        key = Some(v);
                    }
                    cfg.tls = Some(ServeTls::Files { cert: cert.unwrap_or_default(), key: key.unwrap_or_default() });
                }
                other => return Err(ServerError::InvalidArgs(format!("unknown argument `{other}`"))),
            }
        }
        if let Some(ServeTls::Files { cert, key }) = &cfg.tls {
            if cert.as_os_str().is_empty() || key.as_os_str().is_empty() {
                return Err(ServerError::InvalidArgs("`--tls-cert` and `--tls-key` go together".to_owned()));
            }
        }
        Ok(cfg)
    }
}

/// The kind `--kind` names (`plaintext`, `echo`, `delay`, `cpu`).
pub fn parse_kind(s: &str) -> Option<BuiltinKind> {
    match s {
        "plaintext" => Some(BuiltinKind::Plaintext),
        "echo" => Some(BuiltinKind::Echo),
        "delay" => Some(BuiltinKind::Delay),
        "cpu" => Some(BuiltinKind::Cpu),
        _ => None,
    }
}

/// The exact line (without newline) `loadgate serve` prints once bound: `listening on http://127.0.0.1:PORT`
/// (`https://` when it speaks TLS).
pub fn listening_line(addr: SocketAddr, tls: bool) -> String {
    format!("{}{addr}", if tls { LISTENING_PREFIX_TLS } else { LISTENING_PREFIX })
}

/// Reads the address back from a [`listening_line`].
pub fn parse_listening_line(line: &str) -> Option<SocketAddr> {
    let line = line.trim();
    line.strip_prefix(LISTENING_PREFIX)
        .or_else(|| line.strip_prefix(LISTENING_PREFIX_TLS))?
        .trim_end_matches('/')
        .parse()
        .ok()
}

/// Runs the server until the process receives SIGTERM or SIGINT, then shuts down gracefully (stops accepting,
/// lets responses in progress finish for up to two seconds) and returns. `on_bound` is called once with the
/// bound address, after the signal handlers are installed and the listeners accept connections; `loadgate
/// serve` prints [`listening_line`] from it.
pub fn serve(cfg: &ServeConfig, on_bound: impl FnOnce(SocketAddr)) -> Result<(), ServerError> {
    use tokio::signal::unix::{signal, SignalKind};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ServerError::Server(format!("cannot create the signal runtime: {e}")))?;
    let (mut term, mut int) = {
        let _guard = rt.enter();
        let term =
            signal(SignalKind::terminate()).map_err(|e| ServerError::Server(format!("cannot handle SIGTERM: {e}")))?;
        let int =
            signal(SignalKind::interrupt()).map_err(|e| ServerError::Server(format!("cannot handle SIGINT: {e}")))?;
        (term, int)
    };
    let handle = spawn_in_process(cfg)?;
    on_bound(handle.addr());
    rt.block_on(async {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    });
    handle.shutdown();
    Ok(())
}

/// A running in-process server. Dropping it shuts it down and joins its threads.
#[derive(Debug)]
pub struct ServerHandle {
    addr: SocketAddr,
    tls: bool,
    shutdown: watch::Sender<bool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl ServerHandle {
    /// The bound address (the real port when the configuration asked for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR` (`https://ADDR` with TLS), without a trailing slash.
    pub fn base_url(&self) -> String {
        format!("{}://{}", if self.tls { "https" } else { "http" }, self.addr)
    }

    /// The number of server threads.
    pub fn threads(&self) -> usize {
        self.threads.len()
    }

    /// Stops accepting, lets responses in progress finish (for at most two seconds) and joins the threads.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        let _ = self.shutdown.send(true);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Starts the server on background threads of this process and returns once it accepts connections.
pub fn spawn_in_process(cfg: &ServeConfig) -> Result<ServerHandle, ServerError> {
    let behaviour = Arc::new(Behaviour::new(&cfg.server)?);
    let acceptor = cfg.tls.as_ref().map(tls::server_config).transpose()?.map(tokio_rustls::TlsAcceptor::from);
    let threads =
        if cfg.threads == 0 { std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) } else { cfg.threads };
    let listeners = bind_listeners(cfg.listen, threads)?;
    let addr = listeners[0].local_addr().map_err(|source| ServerError::Bind { addr: cfg.listen, source })?;
    let (tx, rx) = watch::channel(false);
    let mut handle = ServerHandle { addr, tls: acceptor.is_some(), shutdown: tx, threads: Vec::new() };
    for (i, listener) in listeners.into_iter().enumerate() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ServerError::Server(format!("cannot create a runtime: {e}")))?;
        let behaviour = behaviour.clone();
        let rx = rx.clone();
        let acceptor = acceptor.clone();
        let thread = std::thread::Builder::new()
            .name(format!("loadgate-serve-{i}"))
            .spawn(move || rt.block_on(accept_loop(listener, behaviour, acceptor, rx)))
            .map_err(|e| ServerError::Server(format!("cannot start a server thread: {e}")))?;
        handle.threads.push(thread);
    }
    Ok(handle)
}

fn bind_one(addr: SocketAddr) -> std::io::Result<std::net::TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(true)?;
    socket.bind(&addr.into())?;
    socket.listen(4096)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

/// One listener per thread on the same port (`SO_REUSEPORT`); where a second bind fails, the first listener is
/// shared instead.
fn bind_listeners(addr: SocketAddr, n: usize) -> Result<Vec<std::net::TcpListener>, ServerError> {
    let first = bind_one(addr).map_err(|source| ServerError::Bind { addr, source })?;
    let bound = first.local_addr().map_err(|source| ServerError::Bind { addr, source })?;
    let mut out = Vec::with_capacity(n);
    for _ in 1..n.max(1) {
        let l = match bind_one(bound) {
            Ok(l) => l,
            Err(_) => first.try_clone().map_err(|source| ServerError::Bind { addr, source })?,
        };
        out.push(l);
    }
    out.insert(0, first);
    Ok(out)
}

async fn accept_loop(
    listener: std::net::TcpListener,
    behaviour: Arc<Behaviour>,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    mut shutdown: watch::Receiver<bool>,
) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("loadgate serve: cannot register the listener: {e}");
            return;
        }
    };
    let mut conns = tokio::task::JoinSet::new();
    while !*shutdown.borrow() {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    match &acceptor {
                        None => {
                            conns.spawn(connection(stream, behaviour.clone(), shutdown.clone()));
                        }
                        Some(acceptor) => {
                            let accept = acceptor.accept(stream);
                            let (behaviour, shutdown) = (behaviour.clone(), shutdown.clone());
                            conns.spawn(async move {
                                // A client that fails its handshake (or never finishes it) is dropped.
                                if let Ok(Ok(stream)) = tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, accept).await {
                                    if stream.get_ref().1.alpn_protocol() == Some(b"h2") {
                                        h2::connection(stream, behaviour, shutdown).await;
                                    } else {
                                        connection(stream, behaviour, shutdown).await;
                                    }
                                }
                            });
                        }
                    }
                }
                // Out of file descriptors or a connection reset before accept: back off briefly.
                Err(_) => tokio::time::sleep(StdDuration::from_millis(5)).await,
            },
            _ = shutdown.changed() => break,
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    drop(listener);
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, async { while conns.join_next().await.is_some() {} }).await;
}

async fn connection<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    mut stream: S,
    b: Arc<Behaviour>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
    let mut out: Vec<u8> = Vec::with_capacity(16 * 1024);
    let mut read_at = Instant::now();
    let mut continue_sent = false;
    // Until the first bytes tell: a connection that starts with the HTTP/2 preface is h2c.
    let mut first = true;
    loop {
        if first && !buf.is_empty() {
            if buf.starts_with(h2::PREFACE) {
                return h2::connection(h2::Prefixed::new(buf, stream), b, shutdown).await;
            }
            first = buf.len() < h2::PREFACE.len() && h2::PREFACE.starts_with(&buf);
        }
        if first && !buf.is_empty() {
            // A preface in part: read on before parsing.
            tokio::select! {
                r = stream.read_buf(&mut buf) => match r {
                    Ok(0) | Err(_) => return,
                    Ok(_) => read_at = Instant::now(),
                },
                _ = shutdown.changed() => return,
            }
            continue;
        }
        let mut start = 0;
        let mut close = false;
        while start < buf.len() {
            match parse_request(&buf[start..]) {
                Parsed::Complete(req, used) => {
                    start += used;
                    continue_sent = false;
                    let reply = route(&b, &req);
                    reply.work();
                    if let Some(d) = reply.delay {
                        let until = read_at + d;
                        if until > Instant::now() {
                            if !out.is_empty() {
                                if stream.write_all(&out).await.is_err() {
                                    return;
                                }
                                out.clear();
                            }
                            precise_sleep_until(until).await;
                        }
                    }
                    write_response(&mut out, &req, &reply);
                    if !req.keep_alive {
                        close = true;
                        break;
                    }
                }
                Parsed::Partial { expect_continue } => {
                    if expect_continue && !continue_sent {
                        out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
                        continue_sent = true;
                    }
                    break;
                }
                Parsed::Error(status) => {
                    write_error(&mut out, status);
                    close = true;
                    break;
                }
            }
        }
        if !out.is_empty() {
            if stream.write_all(&out).await.is_err() {
                return;
            }
            out.clear();
        }
        if close {
            let _ = stream.shutdown().await;
            return;
        }
        if start > 0 {
            buf.drain(..start);
        }
        if buf.capacity() - buf.len() < 4096 {
            buf.reserve(16 * 1024);
        }
        tokio::select! {
            r = stream.read_buf(&mut buf) => match r {
                Ok(0) | Err(_) => return,
                Ok(_) => read_at = Instant::now(),
            },
            _ = shutdown.changed() => return,
        }
    }
}

enum Parsed<'a> {
    Complete(Request<'a>, usize),
    Partial {
        expect_continue: bool,
    },
    /// A malformed request: answer this status and close.
    Error(u16),
}

fn parse_request(data: &[u8]) -> Parsed<'_> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let head_len = match req.parse(data) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => {
            return if data.len() > MAX_HEAD { Parsed::Error(431) } else { Parsed::Partial { expect_continue: false } }
        }
        Err(httparse::Error::TooManyHeaders) => return Parsed::Error(431),
        Err(_) => return Parsed::Error(400),
    };
    let http10 = req.version == Some(0);
    let mut content_length: Option<usize> = None;
    let mut chunked = false;
    let mut conn_close = false;
    let mut conn_keep_alive = false;
    let mut expect_continue = false;
    let mut content_type = None;
    for h in req.headers.iter() {
        let name = h.name;
        if name.eq_ignore_ascii_case("content-length") {
            let Some(n) = std::str::from_utf8(h.value).ok().and_then(|v| v.trim().parse::<usize>().ok()) else {
                return Parsed::Error(400);
            };
            if content_length.is_some_and(|c| c != n) {
                return Parsed::Error(400);
            }
            content_length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            let last = h.value.rsplit(|c| *c == b',').next().unwrap_or(b"");
            if trim_ascii(last).eq_ignore_ascii_case(b"chunked") {
                chunked = true;
            } else {
                return Parsed::Error(400);
            }
        } else if name.eq_ignore_ascii_case("connection") {
            for token in h.value.split(|c| *c == b',') {
                let t = trim_ascii(token);
                if t.eq_ignore_ascii_case(b"close") {
                    conn_close = true;
                } else if t.eq_ignore_ascii_case(b"keep-alive") {
                    conn_keep_alive = true;
                }
            }
        } else if name.eq_ignore_ascii_case("expect") {
            expect_continue = trim_ascii(h.value).eq_ignore_ascii_case(b"100-continue");
        } else if name.eq_ignore_ascii_case("content-type") {
            content_type = Some(h.value);
        }
    }
    let keep_alive = if http10 { conn_keep_alive && !conn_close } else { !conn_close };
    let rest = &data[head_len..];
    let (body, body_len) = if chunked {
        match decode_chunked(rest) {
            Chunked::Complete(body, used) => (std::borrow::Cow::Owned(body), used),
            Chunked::Partial => return Parsed::Partial { expect_continue },
            Chunked::TooLarge => return Parsed::Error(413),
            Chunked::Invalid => return Parsed::Error(400),
        }
    } else {
        let n = content_length.unwrap_or(0);
        if n > MAX_BODY {
            return Parsed::Error(413);
        }
        if rest.len() < n {
            return Parsed::Partial { expect_continue };
        }
        (std::borrow::Cow::Borrowed(&rest[..n]), n)
    };
    Parsed::Complete(
        Request {
            method: req.method.unwrap_or("GET"),
            path: req.path.unwrap_or("/"),
            http10,
            keep_alive,
            content_type,
            body,
        },
        head_len + body_len,
    )
}

fn trim_ascii(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|c| !c.is_ascii_whitespace()).unwrap_or(s.len());
    let end = s.iter().rposition(|c| !c.is_ascii_whitespace()).map_or(start, |e| e + 1);
    &s[start..end.max(start)]
}

enum Chunked {
    Complete(Vec<u8>, usize),
    Partial,
    TooLarge,
    Invalid,
}

/// Decodes a chunked body (with trailers) from the start of `data`.
fn decode_chunked(data: &[u8]) -> Chunked {
    let mut body = Vec::new();
    let mut pos = 0;
    loop {
        let (idx, size) = match httparse::parse_chunk_size(&data[pos..]) {
            Ok(httparse::Status::Complete(v)) => v,
            Ok(httparse::Status::Partial) => return Chunked::Partial,
            Err(_) => return Chunked::Invalid,
        };
        pos += idx;
        if size == 0 {
            let mut trailers = [httparse::EMPTY_HEADER; MAX_HEADERS];
            return match httparse::parse_headers(&data[pos..], &mut trailers) {
                Ok(httparse::Status::Complete((n, _))) => Chunked::Complete(body, pos + n),
                Ok(httparse::Status::Partial) => Chunked::Partial,
                Err(_) => Chunked::Invalid,
            };
        }
        let Some(size) = usize::try_from(size).ok().filter(|s| body.len().saturating_add(*s) <= MAX_BODY) else {
            return Chunked::TooLarge;
        };
        if data.len() - pos < size + 2 {
            return Chunked::Partial;
        }
        body.extend_from_slice(&data[pos..pos + size]);
        pos += size;
        if &data[pos..pos + 2] != b"\r\n" {
            return Chunked::Invalid;
        }
        pos += 2;
    }
}

fn write_response(out: &mut Vec<u8>, req: &Request<'_>, reply: &Reply<'_>) {
    let has_body = !matches!(reply.status, 204 | 304);
    let send_body = has_body && req.method != "HEAD";
    let len = match reply.body {
        BodySource::Slice(s) => s.len(),
        BodySource::Generated(n) => n,
    };
    out.extend_from_slice(if req.http10 { b"HTTP/1.0 " } else { b"HTTP/1.1 " });
    push_u64(out, u64::from(reply.status));
    out.push(b' ');
    out.extend_from_slice(reason(reply.status).as_bytes());
    out.extend_from_slice(b"\r\nServer: loadgate\r\nDate: ");
    push_date(out);
    if has_body {
        out.extend_from_slice(b"\r\nContent-Type: ");
        out.extend_from_slice(reply.content_type);
        // HTTP/1.0 clients cannot read chunked bodies.
        if reply.chunked && !req.http10 {
            out.extend_from_slice(b"\r\nTransfer-Encoding: chunked");
        } else {
            out.extend_from_slice(b"\r\nContent-Length: ");
            push_u64(out, len as u64);
        }
    }
    if !req.keep_alive {
        out.extend_from_slice(b"\r\nConnection: close");
    } else if req.http10 {
        out.extend_from_slice(b"\r\nConnection: keep-alive");
    }
    out.extend_from_slice(b"\r\n\r\n");
    if !send_body {
        return;
    }
    let generated;
    let body: &[u8] = match reply.body {
        BodySource::Slice(s) => s,
        BodySource::Generated(n) => {
            generated = pattern(n);
            &generated
        }
    };
    if reply.chunked && !req.http10 {
        for chunk in body.chunks(CHUNK_SIZE) {
            push_hex(out, chunk.len());
            out.extend_from_slice(b"\r\n");
            out.extend_from_slice(chunk);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"0\r\n\r\n");
    } else {
        out.extend_from_slice(body);
    }
}

fn write_error(out: &mut Vec<u8>, status: u16) {
    let body = reason(status);
    out.extend_from_slice(b"HTTP/1.1 ");
    push_u64(out, u64::from(status));
    out.push(b' ');
    out.extend_from_slice(body.as_bytes());
    out.extend_from_slice(b"\r\nServer: loadgate\r\nDate: ");
    push_date(out);
    out.extend_from_slice(b"\r\nContent-Type: text/plain\r\nContent-Length: ");
    push_u64(out, body.len() as u64 + 1);
    out.extend_from_slice(b"\r\nConnection: close\r\n\r\n");
    out.extend_from_slice(body.as_bytes());
    out.push(b'\n');
}

fn push_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&tmp[i..]);
}

fn push_hex(out: &mut Vec<u8>, mut v: usize) {
    let mut tmp = [0u8; 16];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b"0123456789abcdef"[v % 16];
        v /= 16;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&tmp[i..]);
}

/// The reason phrase of a status code.
pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Content Too Large",
        418 => "I'm a teapot",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

thread_local! {
    static DATE: std::cell::Cell<(u64, [u8; 29])> = const { std::cell::Cell::new((u64::MAX, [0; 29])) };
}

/// Appends the current time as an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), formatted once a second per
/// thread.
fn push_date(out: &mut Vec<u8>) {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    DATE.with(|cell| {
        let (cached, mut text) = cell.get();
        if cached != secs {
            text = http_date(secs);
            cell.set((secs, text));
        }
        out.extend_from_slice(&text);
    });
}

/// Formats seconds since the Unix epoch as an IMF-fixdate.
pub fn http_date_string(secs: u64) -> String {
    String::from_utf8_lossy(&http_date(secs)).into_owned()
}

fn http_date(secs: u64) -> [u8; 29] {
    use chrono::Datelike;
    const DAYS: [&[u8; 3]; 7] = [b"Mon", b"Tue", b"Wed", b"Thu", b"Fri", b"Sat", b"Sun"];
    const MONTHS: [&[u8; 3]; 12] =
        [b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec"];
    let rem = secs % 86_400;
    let (h, m, s) = (rem / 3600, (rem / 60) % 60, rem % 60);
    // The calendar date through chrono (a date past chrono's range, some 262,000 years on, shows as the epoch's).
    let date =
        i64::try_from(secs).ok().and_then(|t| chrono::DateTime::from_timestamp(t, 0)).unwrap_or_default().date_naive();
    let (year, month, d) = (u64::try_from(date.year()).unwrap_or(0), u64::from(date.month()), u64::from(date.day()));
    let weekday = date.weekday().num_days_from_monday() as usize;
    let mut t = [0u8; 29];
    let two = |v: u64| [b'0' + (v / 10 % 10) as u8, b'0' + (v % 10) as u8];
    t[..3].copy_from_slice(DAYS[weekday % 7]);
    t[3..5].copy_from_slice(b", ");
    t[5..7].copy_from_slice(&two(d));
    t[7] = b' ';
    t[8..11].copy_from_slice(MONTHS[(month - 1) as usize % 12]);
    t[11] = b' ';
    t[12..14].copy_from_slice(&two(year / 100));
    t[14..16].copy_from_slice(&two(year % 100));
    t[16] = b' ';
    t[17..19].copy_from_slice(&two(h));
    t[19] = b':';
    t[20..22].copy_from_slice(&two(m));
    t[22] = b':';
    t[23..25].copy_from_slice(&two(s));
    t[25..29].copy_from_slice(b" GMT");
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_dates() {
        assert_eq!(http_date_string(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(http_date_string(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(http_date_string(951_782_400), "Tue, 29 Feb 2000 00:00:00 GMT");
        assert_eq!(http_date_string(1_700_000_000), "Tue, 14 Nov 2023 22:13:20 GMT");
    }

    #[test]
    fn args_round_trip() {
        let cfg = ServeConfig {
            server: ServerBehaviour {
                kind: BuiltinKind::Delay,
                delay: Some(Duration::from_millis(20)),
                status: 503,
                body_size: Some(100),
                chunked: true,
                work: None,
                slow_path: None,
            },
            listen: "127.0.0.1:0".parse().unwrap(),
            threads: 2,
            tls: Some(ServeTls::Files { cert: "c.pem".into(), key: "k.pem".into() }),
        };
        assert_eq!(ServeConfig::from_args(&cfg.to_args()).unwrap(), cfg);
        assert_eq!(ServeConfig::from_args(&["--tls"]).unwrap().tls, Some(ServeTls::SelfSigned));
        assert!(ServeConfig::from_args(&["--tls-cert", "c.pem"]).unwrap_err().to_string().contains("go together"));
        let mut with_verb = vec!["serve".to_owned()];
        with_verb.extend(cfg.to_args());
        assert_eq!(ServeConfig::from_args(&with_verb).unwrap(), cfg);
        assert!(ServeConfig::from_args(&["--kind", "nope"]).unwrap_err().to_string().contains("unknown kind `nope`"));
        assert!(ServeConfig::from_args(&["--status"]).unwrap_err().to_string().contains("needs a value"));
        assert_eq!(ServeConfig::from_args(&["--delay=5ms"]).unwrap().server.delay, Some(Duration::from_millis(5)));
    }

    #[test]
    fn listening_line_round_trip() {
        let addr: SocketAddr = "127.0.0.1:4567".parse().unwrap();
        assert_eq!(listening_line(addr, false), "listening on http://127.0.0.1:4567");
        assert_eq!(listening_line(addr, true), "listening on https://127.0.0.1:4567");
        assert_eq!(parse_listening_line("listening on https://127.0.0.1:4567"), Some(addr));
        assert_eq!(parse_listening_line("listening on http://127.0.0.1:4567\n"), Some(addr));
        assert_eq!(parse_listening_line("something else"), None);
    }

    #[test]
    fn chunked_decoding() {
        match decode_chunked(b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-T: 1\r\n\r\nNEXT") {
            Chunked::Complete(body, used) => {
                assert_eq!(body, b"hello world");
                assert_eq!(used, 40);
            }
            _ => panic!("expected a complete body"),
        }
        assert!(matches!(decode_chunked(b"5\r\nhel"), Chunked::Partial));
        assert!(matches!(decode_chunked(b"5\r\nhelloXX0\r\n\r\n"), Chunked::Invalid));
        assert!(matches!(decode_chunked(b"zz\r\n"), Chunked::Invalid));
        assert!(matches!(decode_chunked(b"ffffffff\r\n"), Chunked::TooLarge));
    }

    #[test]
    fn invalid_configs() {
        let mut s = ServerBehaviour { kind: BuiltinKind::Delay, ..ServerBehaviour::default() };
        assert!(Behaviour::new(&s).unwrap_err().to_string().contains("needs a delay"));
        s.kind = BuiltinKind::Plaintext;
        s.delay = Some(Duration::from_millis(20));
        assert!(Behaviour::new(&s).unwrap_err().to_string().contains("a delay applies to the `delay` kind only"));
        s.kind = BuiltinKind::Echo;
        assert!(Behaviour::new(&s).unwrap_err().to_string().contains("this server is `echo`"));
        s.delay = None;
        s.body_size = Some(10);
        assert!(Behaviour::new(&s).unwrap_err().to_string().contains("`echo` sends the request's body back"));
        s.body_size = None;
        s.kind = BuiltinKind::Plaintext;
        s.status = 99;
        assert!(Behaviour::new(&s).unwrap_err().to_string().contains("status 99"));
    }
}
