//! The built-in server over real loopback sockets, spoken to byte by byte.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration as StdDuration, Instant};

use loadgate_model::units::Duration;
use loadgate_model::BuiltinKind;
use loadgate_server::{spawn_in_process, ServeConfig, ServerBehaviour, ServerHandle};

fn server(kind: BuiltinKind, f: impl FnOnce(&mut ServerBehaviour)) -> ServerHandle {
    let mut s = ServerBehaviour { kind, ..ServerBehaviour::default() };
    f(&mut s);
    let mut cfg = ServeConfig::new(s);
    cfg.threads = 1;
    spawn_in_process(&cfg).unwrap()
}

#[derive(Debug)]
struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// A minimal client: reads one response from `buf` + the stream, leaving what follows in `buf`.
struct Client {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(StdDuration::from_secs(30))).unwrap();
        Client { stream, buf: Vec::new() }
    }

    fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
    }

    fn fill(&mut self) -> usize {
        let mut tmp = [0u8; 65536];
        let n = self.stream.read(&mut tmp).unwrap();
        self.buf.extend_from_slice(&tmp[..n]);
        n
    }

    fn response(&mut self, head_request: bool) -> Resp {
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut r = httparse::Response::new(&mut headers);
            if let httparse::Status::Complete(head) = r.parse(&self.buf).unwrap() {
                let status = r.code.unwrap();
                let hs: Vec<(String, String)> = r
                    .headers
                    .iter()
                    .map(|h| (h.name.to_owned(), String::from_utf8_lossy(h.value).into_owned()))
                    .collect();
                let find = |n: &str| hs.iter().find(|(k, _)| k.eq_ignore_ascii_case(n)).map(|(_, v)| v.clone());
                let chunked = find("transfer-encoding").is_some_and(|v| v.contains("chunked"));
                let len: usize = find("content-length").map(|v| v.parse().unwrap()).unwrap_or(0);
                let no_body = head_request || status == 204 || status == 304 || (100..200).contains(&status);
                let body_and_used = if no_body {
                    Some((Vec::new(), head))
                } else if chunked {
                    decode_chunked(&self.buf[head..]).map(|(b, used)| (b, head + used))
                } else if self.buf.len() >= head + len {
                    Some((self.buf[head..head + len].to_vec(), head + len))
                } else {
                    None
                };
                if let Some((body, used)) = body_and_used {
                    self.buf.drain(..used);
                    return Resp { status, headers: hs, body };
                }
            }
            assert!(
                self.fill() > 0,
                "connection closed before a full response; have {:?}",
                String::from_utf8_lossy(&self.buf)
            );
        }
    }

    /// `true` when the server closes the connection (EOF) with nothing more to read.
    fn closed(&mut self) -> bool {
        self.buf.is_empty() && self.fill() == 0
    }
}

fn decode_chunked(data: &[u8]) -> Option<(Vec<u8>, usize)> {
    let mut body = Vec::new();
    let mut pos = 0;
    loop {
        let (idx, size) = match httparse::parse_chunk_size(&data[pos..]).unwrap() {
            httparse::Status::Complete(v) => v,
            httparse::Status::Partial => return None,
        };
        pos += idx;
        let size = size as usize;
        if size == 0 {
            return (data.len() >= pos + 2).then(|| (body, pos + 2));
        }
        if data.len() < pos + size + 2 {
            return None;
        }
        body.extend_from_slice(&data[pos..pos + size]);
        pos += size + 2;
    }
}

fn get(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n").into_bytes()
}

#[test]
fn plaintext_is_techempower_shaped() {
    let s = server(BuiltinKind::Plaintext, |_| {});
    let mut c = Client::connect(s.addr());
    c.send(&get("/plaintext"));
    let r = c.response(false);
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"Hello, World!");
    assert_eq!(r.header("content-type"), Some("text/plain"));
    assert_eq!(r.header("content-length"), Some("13"));
    assert_eq!(r.header("server"), Some("loadgate"));
    let date = r.header("date").unwrap();
    assert_eq!(date.len(), 29, "{date}");
    assert!(date.ends_with(" GMT"));
    assert_eq!(r.header("connection"), None);
    // Keep-alive: the same connection answers again.
    c.send(&get("/"));
    assert_eq!(c.response(false).body, b"Hello, World!");
}

#[test]
fn a_real_client_agrees() {
    let s = server(BuiltinKind::Plaintext, |_| {});
    let addr = s.addr();
    let body = std::thread::spawn(move || {
        let client = reqwest::blocking::Client::builder().no_proxy().build().unwrap();
        let r = client.get(format!("http://{addr}/plaintext")).send().unwrap();
        assert_eq!(r.status().as_u16(), 200);
        let chunked = client.get(format!("http://{addr}/chunked/100000")).send().unwrap();
        let echoed = client.post(format!("http://{addr}/echo")).body("ping").send().unwrap();
        (r.text().unwrap(), chunked.bytes().unwrap().len(), echoed.text().unwrap())
    })
    .join()
    .unwrap();
    assert_eq!(body, ("Hello, World!".to_owned(), 100_000, "ping".to_owned()));
}

#[test]
fn echo_reads_length_and_chunked_bodies() {
    let s = server(BuiltinKind::Echo, |_| {});
    let mut c = Client::connect(s.addr());
    c.send(b"POST /anything HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"a\": true}");
    let r = c.response(false);
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"{\"a\": true}");
    assert_eq!(r.header("content-type"), Some("application/json"));
    // Chunked request body, sent in pieces across writes.
    c.send(b"PUT /k HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel");
    std::thread::sleep(StdDuration::from_millis(50));
    c.send(b"lo\r\n6\r\n world\r\n0\r\n\r\n");
    assert_eq!(c.response(false).body, b"hello world");
    // A GET without a body echoes nothing.
    c.send(&get("/"));
    let r = c.response(false);
    assert_eq!(r.body, b"");
    assert_eq!(r.header("content-length"), Some("0"));
}

#[test]
fn expect_continue_is_answered() {
    let s = server(BuiltinKind::Echo, |_| {});
    let mut c = Client::connect(s.addr());
    c.send(b"POST / HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n");
    let interim = c.response(false);
    assert_eq!(interim.status, 100);
    c.send(b"data");
    let r = c.response(false);
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"data");
}

#[test]
fn delay_waits_at_least_the_delay() {
    let s = server(BuiltinKind::Delay, |s| s.delay = Some(Duration::from_millis(60)));
    let mut c = Client::connect(s.addr());
    for _ in 0..3 {
        let t = Instant::now();
        c.send(&get("/"));
        let r = c.response(false);
        assert!(t.elapsed() >= StdDuration::from_millis(60), "{:?}", t.elapsed());
        assert_eq!(r.body, b"Hello, World!");
    }
    // The readiness route is never delayed, and /delay/{ms} works on any kind.
    let p = server(BuiltinKind::Plaintext, |_| {});
    let mut c = Client::connect(p.addr());
    let t = Instant::now();
    c.send(&get("/delay/80"));
    assert_eq!(c.response(false).status, 200);
    assert!(t.elapsed() >= StdDuration::from_millis(80));
    c.send(&get("/ready"));
    assert_eq!(c.response(false).body, b"ready\n");
}

#[test]
fn configured_and_routed_statuses() {
    let s = server(BuiltinKind::Plaintext, |s| s.status = 503);
    let mut c = Client::connect(s.addr());
    c.send(&get("/"));
    let r = c.response(false);
    assert_eq!(r.status, 503);
    assert_eq!(r.body, b"Hello, World!");
    c.send(&get("/status/404"));
    assert_eq!(c.response(false).status, 404);
    c.send(&get("/status/204"));
    let r = c.response(false);
    assert_eq!(r.status, 204);
    assert_eq!(r.header("content-length"), None);
    c.send(&get("/ready"));
    assert_eq!(c.response(false).status, 200);
    c.send(&get("/status/abc"));
    assert_eq!(c.response(false).status, 400);
}

#[test]
fn body_sizes() {
    let s = server(BuiltinKind::Plaintext, |s| s.body_size = Some(100_000));
    let mut c = Client::connect(s.addr());
    c.send(&get("/"));
    let r = c.response(false);
    assert_eq!(r.body.len(), 100_000);
    assert!(r.body.starts_with(b"Hello, World! Hello"));
    c.send(&get("/bytes/7"));
    assert_eq!(c.response(false).body, b"Hello, ");
    c.send(&get("/bytes/0"));
    assert_eq!(c.response(false).body, b"");
    c.send(&get("/bytes/999999999999"));
    assert_eq!(c.response(false).status, 400);
}

#[test]
fn chunked_responses() {
    let s = server(BuiltinKind::Plaintext, |s| s.chunked = true);
    let mut c = Client::connect(s.addr());
    c.send(&get("/"));
    let r = c.response(false);
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    assert_eq!(r.header("content-length"), None);
    assert_eq!(r.body, b"Hello, World!");
    let p = server(BuiltinKind::Plaintext, |_| {});
    let mut c = Client::connect(p.addr());
    c.send(&get("/chunked/20000"));
    let r = c.response(false);
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    assert_eq!(r.body.len(), 20_000);
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let s = server(BuiltinKind::Plaintext, |_| {});
    let mut c = Client::connect(s.addr());
    let mut batch = get("/delay/40");
    for n in 1..=16 {
        batch.extend(get(&format!("/bytes/{n}")));
    }
    batch.extend(get("/status/418"));
    c.send(&batch);
    let first = c.response(false);
    assert_eq!(first.body, b"Hello, World!");
    for n in 1..=16 {
        let r = c.response(false);
        assert_eq!(r.body.len(), n, "response {n} out of order");
    }
    assert_eq!(c.response(false).status, 418);
    // A pipeline split mid-request across writes.
    let two = [get("/bytes/3"), get("/bytes/4")].concat();
    c.send(&two[..25]);
    std::thread::sleep(StdDuration::from_millis(30));
    c.send(&two[25..]);
    assert_eq!(c.response(false).body.len(), 3);
    assert_eq!(c.response(false).body.len(), 4);
}

#[test]
fn connection_close_is_honoured() {
    let s = server(BuiltinKind::Plaintext, |_| {});
    let mut c = Client::connect(s.addr());
    // Pipelined after a close: the second request is never answered.
    c.send(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = c.response(false);
    assert_eq!(r.header("connection"), Some("close"));
    assert_eq!(r.body, b"Hello, World!");
    assert!(c.closed());
    // HTTP/1.0 closes unless asked to keep alive.
    let mut c = Client::connect(s.addr());
    c.send(b"GET / HTTP/1.0\r\n\r\n");
    assert_eq!(c.response(false).body, b"Hello, World!");
    assert!(c.closed());
    let mut c = Client::connect(s.addr());
    c.send(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    let r = c.response(false);
    assert_eq!(r.header("connection"), Some("keep-alive"));
    c.send(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    assert_eq!(c.response(false).status, 200);
}

#[test]
fn head_and_malformed_requests() {
    let s = server(BuiltinKind::Plaintext, |_| {});
    let mut c = Client::connect(s.addr());
    c.send(b"HEAD / HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = c.response(true);
    assert_eq!(r.header("content-length"), Some("13"));
    c.send(&get("/"));
    assert_eq!(c.response(false).body, b"Hello, World!");
    c.send(b"NOT HTTP AT ALL\r\n\r\n");
    let r = c.response(false);
    assert_eq!(r.status, 400);
    assert!(c.closed());
    let mut c = Client::connect(s.addr());
    c.send(b"POST / HTTP/1.1\r\nContent-Length: 999999999999\r\n\r\n");
    assert_eq!(c.response(false).status, 413);
    assert!(c.closed());
}

#[test]
fn several_threads_serve_many_connections() {
    let mut cfg = ServeConfig::new(ServerBehaviour {
        kind: BuiltinKind::Plaintext,
        delay: None,
        status: 200,
        body_size: None,
        chunked: false,
        work: None,
        slow_path: None,
    });
    cfg.threads = 2;
    let s = spawn_in_process(&cfg).unwrap();
    assert_eq!(s.threads(), 2);
    let addr = s.addr();
    let handles: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                for _ in 0..200 {
                    c.send(&get("/"));
                    assert_eq!(c.response(false).body, b"Hello, World!");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    // Shutdown stops accepting.
    s.shutdown();
    assert!(TcpStream::connect(addr).is_err());
}
