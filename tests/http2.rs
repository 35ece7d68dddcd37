//! HTTP/2 end to end: the real binary against the built-in server (h2c with prior knowledge, h2 over TLS by
//! ALPN) and against a purpose-built `h2` server on loopback (port 0) that counts what it answered, sends a GOAWAY
//! after a number of requests per connection and resets the streams of `/rst`.

mod common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use common::{loadgate, text};

/// A spec with `target` (YAML lines under `target:`), `path` and `load`, in a fresh directory.
fn spec(target: &str, path: &str, load: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "version: 1\nname: h2-e2e\ntarget:\n{target}\nscenarios:\n  main:\n    request: {{ path: {path} }}\n    \
         timeout: 5s\n    load: {load}\n"
    );
    let file = dir.path().join("spec.yaml");
    std::fs::write(&file, yaml).unwrap();
    (dir, file)
}

fn run_spec(dir: &Path, spec: &Path) -> (Output, serde_json::Value, String) {
    let out = dir.join("out");
    let output = loadgate(&["run", spec.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let all = format!("{}{}", text(&output.stdout), text(&output.stderr));
    let results = out.join("h2-e2e").join("results.json");
    let json = std::fs::read_to_string(&results).unwrap_or_else(|e| panic!("{}: {e}\n{all}", results.display()));
    (output, serde_json::from_str(&json).unwrap(), all)
}

fn scenario(results: &serde_json::Value) -> &serde_json::Value {
    &results["scenarios"][0]
}

#[test]
fn h2c_to_the_builtin_server_counts_every_stream_on_few_connections() {
    let (dir, path) = spec(
        "  builtin: plaintext\n  protocol: http2",
        "/",
        "{ closed: { connections: 2, requests: 400, streams: 8 } }",
    );
    let (output, results, all) = run_spec(dir.path(), &path);
    assert_eq!(output.status.code(), Some(0), "{all}");
    let s = scenario(&results);
    assert_eq!(s["requests"]["completed"], 400, "{all}");
    assert_eq!(s["errors"]["read"], 0, "{all}");
    assert_eq!(s["status"]["success"], 400, "{all}");
    assert_eq!(s["connections"]["opened"], 2, "{all}");
    let h2 = &s["http2"];
    assert_eq!(h2["connections"], 2, "{h2}");
    assert_eq!(h2["streams_asked"], 8, "{h2}");
    assert_eq!(h2["streams_granted"], 8, "{h2}");
    assert_eq!(s["histograms"]["latency"].as_str().map(|h| h.starts_with("HISTFAAA")), Some(true));
}

#[test]
fn h2_over_tls_is_chosen_by_alpn_with_auto() {
    let (dir, path) = spec(
        "  builtin: { kind: plaintext, tls: true }\n  protocol: auto",
        "/",
        "{ closed: { connections: 2, requests: 200, streams: 4 } }",
    );
    let (output, results, all) = run_spec(dir.path(), &path);
    assert_eq!(output.status.code(), Some(0), "{all}");
    let s = scenario(&results);
    assert_eq!(s["requests"]["completed"], 200, "{all}");
    assert_eq!(s["http2"]["connections"], 2, "{all}");
    assert_eq!(s["tls"]["handshakes"], 2, "{all}");
}

#[test]
fn http1_stays_the_default_over_tls_and_plain() {
    let (dir, path) =
        spec("  builtin: { kind: plaintext, tls: true }", "/", "{ closed: { connections: 2, requests: 50 } }");
    let (output, results, all) = run_spec(dir.path(), &path);
    assert_eq!(output.status.code(), Some(0), "{all}");
    assert_eq!(scenario(&results)["requests"]["completed"], 50, "{all}");
    assert!(scenario(&results).get("http2").is_none(), "{all}");
}

#[test]
fn an_open_load_over_h2c_measures_from_the_intended_time_and_loses_nothing() {
    let (dir, path) = spec(
        "  builtin: plaintext\n  protocol: http2",
        "/",
        "{ open: { rate: 400/s, duration: 1s, connections: 2, streams: 4 } }",
    );
    let (output, results, all) = run_spec(dir.path(), &path);
    let s = scenario(&results);
    assert_eq!(s["errors"]["read"], 0, "{all}");
    // No bound on how much of the rate went out: a loaded machine may hold it back (the run then says who did).
    assert!(s["requests"]["completed"].as_u64().unwrap() > 0, "{all}");
    assert_eq!(s["requests"]["completed"], s["requests"]["sent"], "{all}");
    assert!(s["send_lag"]["count"].as_u64().unwrap() > 0, "{all}");
    assert_eq!(s["http2"]["connections"], 2, "{all}");
    assert!(output.status.code().is_some());
}

#[test]
fn the_cli_flags_speak_http2() {
    let server = H2Server::start(0);
    let url = format!("http://{}/", server.addr);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output =
        loadgate(&["run", "--http2", "--streams", "4", "-c", "2", "-n", "100", &url, "--out", out.to_str().unwrap()]);
    let all = format!("{}{}", text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{all}");
    assert_eq!(server.answered(), 100, "{all}");
    let printed = loadgate(&["run", "--protocol", "auto", "--streams", "8", "-c", "2", &url, "--print-spec"]);
    let yaml = text(&printed.stdout);
    assert!(yaml.contains("protocol: \"auto\"") && yaml.contains("streams: 8"), "{yaml}");
}

#[test]
fn a_goaway_mid_run_sends_the_rest_on_new_connections_and_counts_equal_the_servers() {
    // The server ends every connection with a GOAWAY after 30 requests.
    let server = H2Server::start(30);
    let (dir, path) = spec(
        &format!("  base_url: http://{}\n  protocol: http2", server.addr),
        "/",
        "{ closed: { connections: 2, requests: 300, streams: 4 } }",
    );
    let (output, results, all) = run_spec(dir.path(), &path);
    assert_eq!(output.status.code(), Some(0), "{all}");
    let s = scenario(&results);
    assert_eq!(s["requests"]["completed"], 300, "{all}");
    assert_eq!(server.answered(), 300, "{all}");
    assert_eq!(s["errors"]["read"], 0, "{all}");
    assert!(s["http2"]["goaways"].as_u64().unwrap() >= 9, "{all}");
    assert!(s["connections"]["opened"].as_u64().unwrap() >= 10, "{all}");
}

#[test]
fn a_reset_stream_fails_its_request_and_is_counted_by_code() {
    let server = H2Server::start(0);
    let (dir, path) = spec(
        &format!("  base_url: http://{}\n  protocol: http2", server.addr),
        "/rst",
        "{ closed: { connections: 1, requests: 20, streams: 2 } }",
    );
    let (_output, results, all) = run_spec(dir.path(), &path);
    let s = scenario(&results);
    assert_eq!(s["errors"]["read"], 20, "{all}");
    assert_eq!(s["requests"]["completed"], 0, "{all}");
    assert_eq!(s["http2"]["rst_streams"]["cancel"], 20, "{all}");
}

/// An h2c server (the `h2` crate on a tokio runtime of its own): answers `200 ok`, resets `/rst` with CANCEL,
/// and with `goaway_after > 0` sends a GOAWAY once a connection has answered that many requests.
struct H2Server {
    addr: SocketAddr,
    answered: Arc<AtomicU64>,
}

impl H2Server {
    fn start(goaway_after: u64) -> H2Server {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        std_listener.set_nonblocking(true).unwrap();
        let addr = std_listener.local_addr().unwrap();
        let answered = Arc::new(AtomicU64::new(0));
        let counter = answered.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(std_listener).unwrap();
                loop {
                    let Ok((sock, _)) = listener.accept().await else { continue };
                    let counter = counter.clone();
                    tokio::spawn(async move {
                        let Ok(mut conn) = h2::server::handshake(sock).await else { return };
                        let mut on_this = 0u64;
                        while let Some(Ok((req, mut respond))) = conn.accept().await {
                            if req.uri().path() == "/rst" {
                                respond.send_reset(h2::Reason::CANCEL);
                                continue;
                            }
                            let response = http::Response::builder().status(200).body(()).unwrap();
                            if let Ok(mut send) = respond.send_response(response, false) {
                                let _ = send.send_data(bytes::Bytes::from_static(b"ok"), true);
                                counter.fetch_add(1, Ordering::SeqCst);
                            }
                            on_this += 1;
                            if goaway_after > 0 && on_this == goaway_after {
                                conn.graceful_shutdown();
                            }
                        }
                    });
                }
            });
        });
        H2Server { addr, answered }
    }

    fn answered(&self) -> u64 {
        self.answered.load(Ordering::SeqCst)
    }
}

/// A `users` load runs over HTTP/2 (the driver is shared), one stream at a time per user: every user's request
/// completes on a connection of its own, and the terminal summary shows the `HTTP/2:` line.
#[test]
fn a_users_load_runs_over_h2c_one_stream_per_user() {
    let (dir, path) = spec("  builtin: plaintext\n  protocol: http2", "/", "{ users: { at_once: 20 } }");
    let (output, results, all) = run_spec(dir.path(), &path);
    // 20 users at once can keep a loaded machine's generator busy for the run's instant: invalid (4) is allowed.
    assert!(matches!(output.status.code(), Some(0 | 4)), "{all}");
    let s = scenario(&results);
    assert_eq!(s["requests"]["completed"], 20, "{all}");
    assert_eq!(s["status"]["success"], 20, "{all}");
    let h2 = &s["http2"];
    assert_eq!(h2["connections"], 20, "{h2}");
    assert_eq!(h2["streams_asked"], 1, "{h2}");
    assert!(all.contains("HTTP/2: 20 connections, 1 stream asked"), "{all}");
}
