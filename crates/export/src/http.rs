//! Just enough HTTP/1.1 for the exporter: a blocking `POST` over a `TcpStream` (plain http, one request per
//! connection, every step under a timeout) and the `/metrics` endpoint (a thread that answers `GET /metrics`).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Where a POST goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
    /// The path and query.
    pub path: String,
}

impl Endpoint {
    /// Reads `http://host[:port][/path][?query]`.
    pub fn parse(url: &str) -> Result<Endpoint, String> {
        loadgate_model::output::check_url(url)?;
        let parsed = ::url::Url::parse(url).map_err(|e| e.to_string())?;
        let host = parsed.host_str().unwrap_or_default().trim_matches(['[', ']']).to_owned();
        let port = parsed.port_or_known_default().unwrap_or(80);
        let mut path = parsed.path().to_owned();
        if let Some(q) = parsed.query() {
            path = format!("{path}?{q}");
        }
        Ok(Endpoint { host, port, path })
    }

    /// `host:port` for the `Host` header.
    fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// What came back from a POST.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    /// The start of the body, for an error message.
    pub body: String,
}

/// Sends `body` with `headers`; each connect, write and read waits at most `timeout`.
pub fn post(
    endpoint: &Endpoint,
    headers: &[(String, String)],
    body: &[u8],
    timeout: Duration,
) -> Result<Reply, String> {
    let addrs: Vec<SocketAddr> = (endpoint.host.as_str(), endpoint.port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {}: {e}", endpoint.host))?
        .collect();
    let mut last = format!("{} has no address", endpoint.host);
    let mut stream = None;
    for a in addrs {
        match TcpStream::connect_timeout(&a, timeout) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = format!("cannot connect to {a}: {e}"),
        }
    }
    let mut stream = stream.ok_or(last)?;
    stream.set_write_timeout(Some(timeout)).map_err(|e| e.to_string())?;
    stream.set_read_timeout(Some(timeout)).map_err(|e| e.to_string())?;
    let _ = stream.set_nodelay(true);
    let mut head = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: loadgate/{}\r\nContent-Length: {}\r\nConnection: close\r\n",
        endpoint.path,
        endpoint.authority(),
        env!("CARGO_PKG_VERSION"),
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body)).map_err(|e| format!("write: {e}"))?;
    let started = Instant::now();
    let mut reply = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                reply.extend_from_slice(&buf[..n]);
                if reply.len() > 64 * 1024 || complete(&reply) {
                    break;
                }
            }
            Err(e) => {
                if reply.is_empty() {
                    return Err(format!("read: {e}"));
                }
                break;
            }
        }
        if started.elapsed() > timeout {
            break;
        }
    }
    parse_reply(&reply)
}

/// The head is in and the body as long as `Content-Length` says (without one, the peer closes).
fn complete(reply: &[u8]) -> bool {
    let Some(end) = reply.windows(4).position(|w| w == b"\r\n\r\n") else { return false };
    let head = String::from_utf8_lossy(&reply[..end]).to_ascii_lowercase();
    let length =
        head.lines().find_map(|l| l.strip_prefix("content-length:").and_then(|v| v.trim().parse::<usize>().ok()));
    length.is_some_and(|n| reply.len() >= end + 4 + n)
}

fn parse_reply(reply: &[u8]) -> Result<Reply, String> {
    let text = String::from_utf8_lossy(reply);
    let status_line = text.lines().next().unwrap_or_default();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| format!("not an HTTP response: {:?}", status_line.chars().take(60).collect::<String>()))?;
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.trim().chars().take(200).collect()).unwrap_or_default();
    Ok(Reply { status, body })
}

/// The `/metrics` endpoint: a thread that answers `GET /metrics` with what `render` gives. Stops when dropped.
pub struct MetricsServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    served: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for MetricsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsServer").field("addr", &self.addr).finish()
    }
}

/// Renders the page a scrape gets.
pub type Render = Arc<dyn Fn() -> String + Send + Sync>;

impl MetricsServer {
    /// Listens on `listen` (`127.0.0.1:9464`; port 0 picks one).
    pub fn start(listen: &str, render: Render) -> std::io::Result<MetricsServer> {
        let listener = TcpListener::bind(listen)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let served = Arc::new(AtomicU64::new(0));
        let thread = {
            let (stop, served) = (Arc::clone(&stop), Arc::clone(&served));
            std::thread::Builder::new().name("loadgate-metrics".to_owned()).spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            if answer(stream, &render) {
                                served.fetch_add(1, Ordering::SeqCst);
                            }
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(20)),
                    }
                }
            })?
        };
        Ok(MetricsServer { addr, stop, served, thread: Some(thread) })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Scrapes answered so far.
    pub fn served(&self) -> u64 {
        self.served.load(Ordering::SeqCst)
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Answers one connection; true when it was a scrape of `/metrics`.
fn answer(mut stream: TcpStream, render: &Render) -> bool {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(5)));
    let mut request = Vec::new();
    let mut buf = [0u8; 2048];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 16 * 1024 {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return false,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    let line = String::from_utf8_lossy(&request).lines().next().unwrap_or_default().to_owned();
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
    let path = path.split('?').next().unwrap_or_default();
    let (status, content_type, body, scrape) = if method == "GET" && path == "/metrics" {
        ("200 OK", crate::text::CONTENT_TYPE, render(), true)
    } else {
        ("404 Not Found", "text/plain", "loadgate serves /metrics\n".to_owned(), false)
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body.as_bytes())).is_ok() && scrape
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_parse() {
        let e = Endpoint::parse("http://127.0.0.1:9090/api/v1/write?x=1").unwrap();
        assert_eq!((e.host.as_str(), e.port, e.path.as_str()), ("127.0.0.1", 9090, "/api/v1/write?x=1"));
        assert_eq!(Endpoint::parse("http://h/").unwrap().port, 80);
        assert!(Endpoint::parse("https://h/").is_err());
    }

    #[test]
    fn the_endpoint_serves_metrics_and_a_post_reads_the_reply() {
        let server = MetricsServer::start("127.0.0.1:0", Arc::new(|| "m 1\n".to_owned())).unwrap();
        let mut s = TcpStream::connect(server.addr()).unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        assert!(text.starts_with("HTTP/1.1 200") && text.ends_with("m 1\n"), "{text}");
        let e = Endpoint { host: "127.0.0.1".into(), port: server.addr().port(), path: "/other".into() };
        let reply = post(&e, &[], b"x", Duration::from_secs(5)).unwrap();
        assert_eq!(reply.status, 404);
        assert_eq!(server.served(), 1);
    }
}
