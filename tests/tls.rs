//! HTTPS end to end: the real binary against TLS servers on loopback (rustls, certificates made by rcgen, one
//! std thread per connection, port 0). Every server counts the requests it answered and the handshakes it
//! resumed, and the counts are compared with what loadgate reports.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{HandshakeKind, RootCertStore, ServerConfig, ServerConnection, StreamOwned};

use common::{loadgate, text};

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A CA and the certificates it signs, PEM-encoded.
struct Ca {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Ca {
    fn new(name: &str) -> Ca {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params.self_signed(&key).unwrap();
        Ca { pem: cert.pem(), issuer: Issuer::new(params, key) }
    }

    /// A certificate for `names` and its key.
    fn issue(&self, names: &[&str]) -> (String, String) {
        let key = KeyPair::generate().unwrap();
        let params = CertificateParams::new(names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>()).unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }
}

/// A TLS server that answers every request `200 ok`, counting requests, handshakes and resumed handshakes.
struct Server {
    addr: SocketAddr,
    requests: Arc<AtomicU64>,
    handshakes: Arc<AtomicU64>,
    resumed: Arc<AtomicU64>,
}

impl Server {
    /// Serves `cert_pem`/`key_pem`; with `client_ca`, a client certificate signed by it is required.
    fn start(cert_pem: &str, key_pem: &str, client_ca: Option<&str>) -> Server {
        let chain: Vec<CertificateDer<'static>> =
            CertificateDer::pem_slice_iter(cert_pem.as_bytes()).collect::<Result<_, _>>().unwrap();
        let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).unwrap();
        let builder = ServerConfig::builder_with_provider(provider()).with_safe_default_protocol_versions().unwrap();
        let builder = match client_ca {
            None => builder.with_no_client_auth(),
            Some(ca) => {
                let mut roots = RootCertStore::empty();
                for c in CertificateDer::pem_slice_iter(ca.as_bytes()) {
                    roots.add(c.unwrap()).unwrap();
                }
                let verifier =
                    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider()).build().unwrap();
                builder.with_client_cert_verifier(verifier)
            }
        };
        let mut config = builder.with_single_cert(chain, key).unwrap();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let config = Arc::new(config);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = Server { addr, requests: Arc::default(), handshakes: Arc::default(), resumed: Arc::default() };
        let (requests, handshakes, resumed) =
            (server.requests.clone(), server.handshakes.clone(), server.resumed.clone());
        std::thread::spawn(move || {
            for sock in listener.incoming() {
                let Ok(sock) = sock else { continue };
                let config = config.clone();
                let (requests, handshakes, resumed) = (requests.clone(), handshakes.clone(), resumed.clone());
                std::thread::spawn(move || {
                    let _ = sock.set_nodelay(true);
                    let Ok(conn) = ServerConnection::new(config) else { return };
                    let mut tls = StreamOwned::new(conn, sock);
                    while tls.conn.is_handshaking() {
                        if tls.conn.complete_io(&mut tls.sock).is_err() {
                            // The alert is on its way: close gently (as nginx does), so that the client reads it
                            // rather than a reset for the request it already sent.
                            let _ = tls.sock.shutdown(std::net::Shutdown::Write);
                            let _ = tls.sock.set_read_timeout(Some(std::time::Duration::from_secs(2)));
                            while matches!(tls.sock.read(&mut [0u8; 4096]), Ok(n) if n > 0) {}
                            return;
                        }
                    }
                    handshakes.fetch_add(1, Ordering::SeqCst);
                    if tls.conn.handshake_kind() == Some(HandshakeKind::Resumed) {
                        resumed.fetch_add(1, Ordering::SeqCst);
                    }
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 16 * 1024];
                    loop {
                        let n = match tls.read(&mut chunk) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => n,
                        };
                        buf.extend_from_slice(&chunk[..n]);
                        let mut out = Vec::new();
                        let mut close = false;
                        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                            buf.drain(..end + 4);
                            requests.fetch_add(1, Ordering::SeqCst);
                            close = head.contains("connection: close");
                            out.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n");
                            out.extend_from_slice(if close { b"Connection: close\r\n\r\nok" } else { b"\r\nok" });
                            if close {
                                break;
                            }
                        }
                        if tls.write_all(&out).is_err() || tls.flush().is_err() {
                            return;
                        }
                        if close {
                            tls.conn.send_close_notify();
                            let _ = tls.flush();
                            return;
                        }
                    }
                });
            }
        });
        server
    }

    fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }
}

/// A spec against `url` with `tls` (a YAML flow mapping, or empty) and `load`, in a fresh directory holding
/// `files`.
fn spec(url: &str, tls: &str, load: &str, slo: &str, files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    for (name, content) in files {
        std::fs::write(dir.path().join(name), content).unwrap();
    }
    let tls = if tls.is_empty() { String::new() } else { format!("\n  tls: {tls}") };
    let yaml = format!(
        "version: 1\nname: tls-e2e\ntarget:\n  base_url: {url}{tls}\nscenarios:\n  main:\n    request: {{ path: / }}\n    \
         timeout: 5s\n    load: {load}\n{slo}"
    );
    let path = dir.path().join("spec.yaml");
    std::fs::write(&path, yaml).unwrap();
    (dir, path)
}

fn run_spec(dir: &Path, spec: &Path) -> (Output, serde_json::Value) {
    let out = dir.join("out");
    let output = loadgate(&["run", spec.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let results = out.join("tls-e2e").join("results.json");
    let json = std::fs::read_to_string(&results)
        .unwrap_or_else(|e| panic!("{}: {e}\n{}\n{}", results.display(), text(&output.stdout), text(&output.stderr)));
    (output, serde_json::from_str(&json).unwrap())
}

fn scenario(results: &serde_json::Value) -> &serde_json::Value {
    &results["scenarios"][0]
}

fn tls_of(results: &serde_json::Value) -> &serde_json::Value {
    &scenario(results)["tls"]
}

const CLOSED_200: &str = "{ closed: { connections: 4, requests: 200 } }";

#[test]
fn a_self_signed_server_with_insecure_counts_as_the_server_does_and_says_insecure() {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let server = Server::start(&made.cert.pem(), &made.signing_key.serialize_pem(), None);
    let url = format!("https://127.0.0.1:{}", server.addr.port());
    let (dir, path) = spec(&url, "{ insecure: true }", CLOSED_200, "", &[]);
    let (output, results) = run_spec(dir.path(), &path);
    let all = format!("{}{}", text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{all}");
    let s = scenario(&results);
    assert_eq!(s["requests"]["completed"], 200, "{all}");
    assert_eq!(server.requests(), 200);
    let tls = tls_of(&results);
    assert_eq!(tls["insecure"], true);
    assert_eq!(tls["handshakes"], s["connections"]["opened"]);
    // The server saw one handshake more: the probe's, before the load (a target given by URL is probed too).
    assert_eq!(tls["handshakes"].as_u64().map(|h| h + 1), Some(server.handshakes.load(Ordering::SeqCst)));
    assert!(tls["handshake_time"]["count"].as_u64().unwrap() >= 4);
    assert!(s["connect_time"]["count"].as_u64().unwrap() >= 4);
    assert!(s["histograms"]["tls_handshake"].as_str().unwrap().starts_with("HISTFAAA"));
    assert!(all.contains("INSECURE"), "{all}");
    assert!(all.contains("TLS:"), "{all}");
    let md = std::fs::read_to_string(dir.path().join("out/tls-e2e/report.md")).unwrap();
    assert!(md.contains("INSECURE") && md.contains("TLS handshake"), "{md}");
}

#[test]
fn a_ca_file_and_server_name_verify_the_server() {
    let ca = Ca::new("loadgate test CA");
    let (cert, key) = ca.issue(&["localhost"]);
    let server = Server::start(&cert, &key, None);
    let url = format!("https://127.0.0.1:{}", server.addr.port());
    let (dir, path) = spec(&url, "{ ca: ca.pem, server_name: localhost }", CLOSED_200, "", &[("ca.pem", &ca.pem)]);
    let (output, results) = run_spec(dir.path(), &path);
    assert_eq!(output.status.code(), Some(0), "{}{}", text(&output.stdout), text(&output.stderr));
    assert_eq!(scenario(&results)["requests"]["completed"], 200);
    assert_eq!(server.requests(), 200);
    assert_eq!(tls_of(&results)["insecure"], false);
    assert_eq!(tls_of(&results)["versions"]["TLSv1_3"], tls_of(&results)["handshakes"]);
}

/// Runs a spec that cannot be carried out: exit 3, its stderr.
fn run_refused(dir: &Path, spec: &Path) -> String {
    let out = dir.join("out");
    let output = loadgate(&["run", spec.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let all = format!("{}{}", text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(3), "{all}");
    text(&output.stderr)
}

#[test]
fn a_wrong_name_is_found_before_the_load_and_the_run_could_not_be_carried_out() {
    let ca = Ca::new("loadgate test CA");
    let (cert, key) = ca.issue(&["localhost"]);
    let server = Server::start(&cert, &key, None);
    let url = format!("https://127.0.0.1:{}", server.addr.port());
    let load = "{ closed: { connections: 2, duration: 300ms } }";
    let (dir, path) = spec(&url, "{ ca: ca.pem, server_name: wrong.example }", load, "", &[("ca.pem", &ca.pem)]);
    // No connection can be made: not a measurement of anything (exit 3, not 4), said before the load, with the fix.
    let err = run_refused(dir.path(), &path);
    assert!(err.contains("cannot be talked to"), "{err}");
    assert!(err.contains("not valid for the name `wrong.example`") && err.contains("tls.server_name"), "{err}");
    assert!(!err.contains("INVALID MEASUREMENT") && !err.contains("generator"), "{err}");
    assert_eq!(server.requests(), 0);
}

#[test]
fn an_unknown_ca_is_found_before_the_load() {
    let ca = Ca::new("nobody trusts me");
    let (cert, key) = ca.issue(&["127.0.0.1"]);
    let server = Server::start(&cert, &key, None);
    let url = format!("https://127.0.0.1:{}", server.addr.port());
    let load = "{ closed: { connections: 2, duration: 300ms } }";
    let (dir, path) = spec(&url, "", load, "", &[]);
    let err = run_refused(dir.path(), &path);
    assert!(err.contains("unknown issuer") && err.contains("tls.ca"), "{err}");
    assert_eq!(server.requests(), 0);
}

#[test]
fn a_self_signed_ca_certificate_is_named_in_words_with_its_fix() {
    // A certificate made as `openssl req -x509` makes it: a CA certificate serving as the server's own.
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let cert = params.self_signed(&key).unwrap();
    let server = Server::start(&cert.pem(), &key.serialize_pem(), None);
    let url = format!("https://127.0.0.1:{}/", server.addr.port());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = loadgate(&["run", "-c", "1", "-d", "300ms", &url, "--out", out.to_str().unwrap()]);
    let err = text(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{err}");
    assert!(
        err.contains("a self-signed certificate") && err.contains("pass `-k`") && err.contains("`tls.ca`"),
        "{err}"
    );
    assert!(!err.contains("CaUsedAsEndEntity") && !err.contains("OtherError"), "{err}");
    assert_eq!(err.matches("pass `-k`").count(), 1, "the cause and the fix once on stderr: {err}");
    assert_eq!(server.requests(), 0);
}

#[test]
fn https_to_a_plain_http_server_is_named_before_the_load() {
    // `https://` to a server that speaks plain HTTP: the handshake is answered with something that is not TLS.
    let (port, _seen) = common::recording_server();
    let output = loadgate(&["run", "-c", "1", "-d", "300ms", &format!("https://127.0.0.1:{port}/"), "--out", "-"]);
    let err = text(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{err}");
    assert!(err.contains("does it speak TLS?"), "{err}");
}

#[test]
fn mtls_passes_with_a_client_certificate_and_fails_clearly_without() {
    let server_ca = Ca::new("server CA");
    let client_ca = Ca::new("client CA");
    let (cert, key) = server_ca.issue(&["127.0.0.1"]);
    let (client_cert, client_key) = client_ca.issue(&["loadgate-client"]);
    let server = Server::start(&cert, &key, Some(&client_ca.pem));
    let url = format!("https://127.0.0.1:{}", server.addr.port());
    let files = [("ca.pem", server_ca.pem.as_str()), ("client.pem", &client_cert), ("client.key", &client_key)];

    let (dir, path) =
        spec(&url, "{ ca: ca.pem, client_cert: client.pem, client_key: client.key }", CLOSED_200, "", &files);
    let (output, results) = run_spec(dir.path(), &path);
    assert_eq!(output.status.code(), Some(0), "{}{}", text(&output.stdout), text(&output.stderr));
    assert_eq!(scenario(&results)["requests"]["completed"], 200);
    assert_eq!(server.requests(), 200);

    let load = "{ closed: { connections: 2, duration: 300ms } }";
    let slo = "    slo: [\"error_rate < 1%\"]\n";
    let (dir, path) = spec(&url, "{ ca: ca.pem }", load, slo, &files);
    let (output, results) = run_spec(dir.path(), &path);
    let all = format!("{}{}", text(&output.stdout), text(&output.stderr));
    // Refused by the server: the run could not be carried out (exit 3), with the cause and its fix.
    assert_eq!(output.status.code(), Some(3), "{all}");
    assert!(all.contains("could not be talked to over TLS"), "{all}");
    let tls = tls_of(&results);
    assert!(tls["errors"]["alert"].as_u64().unwrap() > 0, "{tls}");
    let first = tls["first_error"].as_str().unwrap();
    assert!(first.contains("certificate_required") && first.contains("tls.client_cert"), "{first}");
    assert_eq!(server.requests(), 200, "no request without a client certificate reached the server");
}

#[test]
fn keep_alive_off_resumes_sessions_unless_told_not_to() {
    let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).unwrap();
    let (cert, key) = (made.cert.pem(), made.signing_key.serialize_pem());
    let load = "{ closed: { connections: 2, requests: 100, keep_alive: false } }";
    for resume in [true, false] {
        let server = Server::start(&cert, &key, None);
        let url = format!("https://127.0.0.1:{}", server.addr.port());
        let (dir, path) = spec(&url, &format!("{{ insecure: true, resume: {resume} }}"), load, "", &[]);
        let (output, results) = run_spec(dir.path(), &path);
        assert_eq!(output.status.code(), Some(0), "{}{}", text(&output.stdout), text(&output.stderr));
        assert_eq!(scenario(&results)["requests"]["completed"], 100);
        assert_eq!(server.requests(), 100);
        let tls = tls_of(&results);
        assert_eq!(tls["handshakes"], 100);
        let resumed = server.resumed.load(Ordering::SeqCst);
        assert_eq!(tls["resumed"].as_u64(), Some(resumed), "loadgate and the server agree");
        if resume {
            // Only the first connections of each worker lack a session to resume.
            assert!(resumed >= 90, "{resumed} of 100 handshakes resumed");
        } else {
            assert_eq!(resumed, 0);
        }
    }
}

#[test]
fn an_open_loop_runs_over_tls_with_the_server_counting_the_same() {
    let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).unwrap();
    let server = Server::start(&made.cert.pem(), &made.signing_key.serialize_pem(), None);
    let url = format!("https://127.0.0.1:{}", server.addr.port());
    let load = "{ open: { rate: 200/s, duration: 1s, connections: 4 } }";
    let (dir, path) = spec(&url, "{ insecure: true }", load, "", &[]);
    let (output, results) = run_spec(dir.path(), &path);
    assert_eq!(output.status.code(), Some(0), "{}{}", text(&output.stdout), text(&output.stderr));
    let completed = scenario(&results)["requests"]["completed"].as_u64().unwrap();
    assert!(completed >= 190, "{completed}");
    assert_eq!(server.requests(), completed);
}

#[test]
fn a_url_run_takes_https_and_insecure_as_wrk_and_curl_do() {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let server = Server::start(&made.cert.pem(), &made.signing_key.serialize_pem(), None);
    let url = format!("https://127.0.0.1:{}/", server.addr.port());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = loadgate(&["run", "-k", "-c", "2", "-n", "50", &url, "--out", out.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}{}", text(&output.stdout), text(&output.stderr));
    assert_eq!(server.requests(), 50);

    // Without -k the self-signed certificate is refused before the load (the run could not be carried out), and
    // the message says what to do.
    let output = loadgate(&["run", "-c", "1", "-d", "300ms", &url, "--out", out.to_str().unwrap()]);
    let all = format!("{}{}", text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(3), "{all}");
    assert!(all.contains("unknown issuer") && all.contains("-k"), "{all}");
}

#[test]
fn the_builtin_server_serves_https_and_the_run_trusts_its_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spec.yaml");
    std::fs::write(
        &path,
        "version: 1\nname: tls-e2e\ntarget:\n  builtin: { kind: plaintext, tls: true }\n  tls: { resume: false }\n\
         scenarios:\n  main:\n    request: { path: / }\n    load: { closed: { connections: 2, requests: 40, keep_alive: false } }\n",
    )
    .unwrap();
    let (output, results) = run_spec(dir.path(), &path);
    assert_eq!(output.status.code(), Some(0), "{}{}", text(&output.stdout), text(&output.stderr));
    assert_eq!(scenario(&results)["requests"]["completed"], 40);
    let tls = tls_of(&results);
    assert_eq!(tls["handshakes"], 40);
    assert_eq!(tls["resumed"], 0, "resume: false forces full handshakes");
    assert_eq!(tls["insecure"], false, "loadgate trusts the certificate it made, nothing more");
    assert!(results["target"]["base_url"].as_str().unwrap().starts_with("https://"));
}

/// A spec whose target loadgate starts: `loadgate serve` over HTTPS with `cert.pem`/`key.pem` on a free port,
/// probed ready with an HTTPS GET (`/status/204` answered 204), with the spec's `tls` (a YAML flow mapping).
fn started_spec(tls: &str, files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    for (name, content) in files {
        std::fs::write(dir.path().join(name), content).unwrap();
    }
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let exe = env!("CARGO_BIN_EXE_loadgate");
    let yaml = format!(
        "version: 1\nname: tls-e2e\ntarget:\n  base_url: https://127.0.0.1:{port}\n  tls: {tls}\n  start:\n    \
         command: [{exe:?}, serve, --listen, \"127.0.0.1:{port}\", --tls-cert, cert.pem, --tls-key, key.pem]\n    \
         cwd: .\n    ready: {{ http_get: /status/204, status: 204, timeout: 60s }}\nscenarios:\n  main:\n    \
         request: {{ path: / }}\n    load: {{ closed: {{ connections: 2, requests: 50 }} }}\n"
    );
    let path = dir.path().join("spec.yaml");
    std::fs::write(&path, yaml).unwrap();
    (dir, path)
}

#[test]
fn a_started_targets_readiness_probe_speaks_tls_with_the_specs_ca_server_name_and_insecure() {
    // The certificate names `localhost` only, and the URL says 127.0.0.1: the probe must send and check
    // `tls.server_name`, and trust the CA of `tls.ca`, as the load does.
    let ca = Ca::new("loadgate test CA");
    let (cert, key) = ca.issue(&["localhost"]);
    let files = [("ca.pem", ca.pem.as_str()), ("cert.pem", cert.as_str()), ("key.pem", key.as_str())];
    let (dir, path) = started_spec("{ ca: ca.pem, server_name: localhost }", &files);
    let (output, results) = run_spec(dir.path(), &path);
    let all = format!("{}{}", text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{all}");
    assert_eq!(scenario(&results)["requests"]["completed"], 50, "{all}");
    assert_eq!(tls_of(&results)["insecure"], false);

    // Without `server_name` the certificate does not name the URL's host: the probe reached a server whose
    // certificate the load would refuse, and says so at once in the load's words instead of waiting out its
    // 60 s timeout. The run could not be carried out (exit 3).
    let (dir, path) = started_spec("{ ca: ca.pem }", &files);
    let output = loadgate(&["run", path.to_str().unwrap(), "--out", dir.path().join("out").to_str().unwrap()]);
    let all = format!("{}{}", text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(3), "{all}");
    assert!(all.contains("readiness probe cannot succeed"), "{all}");
    assert!(all.contains("not valid for the name `127.0.0.1`") && all.contains("tls.server_name"), "{all}");
    assert!(!all.contains("did not become ready within"), "a refused certificate is not waited on: {all}");

    // An unknown CA is refused the same way...
    let stranger = Ca::new("nobody trusts me");
    let (cert, key) = stranger.issue(&["localhost"]);
    let files = [("ca.pem", ca.pem.as_str()), ("cert.pem", cert.as_str()), ("key.pem", key.as_str())];
    let (dir, path) = started_spec("{ ca: ca.pem, server_name: localhost }", &files);
    let output = loadgate(&["run", path.to_str().unwrap(), "--out", dir.path().join("out").to_str().unwrap()]);
    let all = format!("{}{}", text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(3), "{all}");
    assert!(all.contains("not signed by a trusted CA"), "{all}");

    // ... and `insecure: true` accepts that certificate, its unknown CA and its other name, in the probe too.
    let (dir, path) = started_spec("{ insecure: true }", &files);
    let (output, results) = run_spec(dir.path(), &path);
    let all = format!("{}{}", text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{all}");
    assert_eq!(scenario(&results)["requests"]["completed"], 50, "{all}");
    assert_eq!(tls_of(&results)["insecure"], true);
    assert!(all.contains("INSECURE"), "{all}");
}

/// A wrk, ab or h2load command line with an https URL imports to a spec that runs (with the certificate check the
/// import's note asks for on a self-signed server: those tools check none).
#[test]
fn an_https_url_imported_from_wrk_ab_or_h2load_runs() {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let server = Server::start(&made.cert.pem(), &made.signing_key.serialize_pem(), None);
    let url = format!("https://127.0.0.1:{}/", server.addr.port());
    let lines =
        [format!("wrk -t1 -c2 -d1s {url}"), format!("ab -c 2 -n 40 {url}"), format!("h2load --h1 -c 2 -n 40 {url}")];
    let mut answered = 0;
    for line in lines {
        let output = loadgate(&["import", &line]);
        let yaml = text(&output.stdout);
        let notes = text(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{line}: {yaml}{notes}");
        assert!(notes.contains("does not check the server's certificate"), "{line}: {notes}");
        assert!(yaml.contains(&format!("base_url: \"https://127.0.0.1:{}\"", server.addr.port())), "{yaml}");
        let yaml = yaml.replacen("\n  base_url:", "\n  tls: { insecure: true }\n  base_url:", 1);
        let dir = tempfile::tempdir().unwrap();
        let spec = dir.path().join("imported.yaml");
        std::fs::write(&spec, &yaml).unwrap();
        let out = dir.path().join("out");
        let output = loadgate(&["run", spec.to_str().unwrap(), "--out", out.to_str().unwrap()]);
        let all = format!("{}{}", text(&output.stdout), text(&output.stderr));
        assert_eq!(output.status.code(), Some(0), "{line}:\n{yaml}\n{all}");
        let results = std::fs::read_dir(&out).unwrap().next().unwrap().unwrap().path().join("results.json");
        let results: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(results).unwrap()).unwrap();
        let completed = results["scenarios"][0]["requests"]["completed"].as_u64().unwrap();
        assert!(completed > 0, "{line}: {all}");
        answered += completed;
        assert_eq!(server.requests(), answered, "{line}: the server counts what loadgate reports");
    }
}
