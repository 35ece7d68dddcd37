//! `load: { replay: ... }` through the real binary: a log written here (nginx `log_format` with `$msec`, JSON lines,
//! a HAR) replayed against a recording server on a free loopback port. What the server received is compared with
//! the log (the exact multiset of requests, their headers and bodies, the span at the speed), the fidelity report
//! in results.json is checked, and the secrets the log holds are sent but never written.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use common::{command, files_under, text};

/// One request as the recording server saw it: when (since the server started), the request line, the headers
/// and the body.
#[derive(Debug, Clone)]
struct Seen {
    at: f64,
    line: String,
    headers: Vec<String>,
    body: Vec<u8>,
}

/// A server that answers 200 to everything and records every request with its arrival time.
fn recorder() -> (u16, Arc<Mutex<Vec<Seen>>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let t0 = Instant::now();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let log = log.clone();
            std::thread::spawn(move || {
                let mut out = stream.try_clone().expect("clone");
                let mut r = BufReader::new(stream);
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let at = t0.elapsed().as_secs_f64();
                    let mut headers = Vec::new();
                    let mut length = 0;
                    loop {
                        let mut h = String::new();
                        if r.read_line(&mut h).unwrap_or(0) == 0 {
                            return;
                        }
                        if h == "\r\n" {
                            break;
                        }
                        let h = h.trim_end().to_owned();
                        if let Some((k, v)) = h.split_once(':') {
                            if k.eq_ignore_ascii_case("content-length") {
                                length = v.trim().parse().unwrap_or(0);
                            }
                        }
                        headers.push(h);
                    }
                    let mut body = vec![0; length];
                    if r.read_exact(&mut body).is_err() {
                        return;
                    }
                    log.lock().unwrap().push(Seen { at, line: line.trim_end().to_owned(), headers, body });
                    if out.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").is_err() {
                        return;
                    }
                }
            });
        }
    });
    (port, seen)
}

const CANARY_QUERY: &str = "canaryREPLAYquery17";
const CANARY_AUTH: &str = "canaryREPLAYauth29";

/// An nginx log in `$msec` format: `n` requests over about `span_ms`, a burst of 40 within one millisecond in
/// the middle, each `GET /item/<i % 37>?page=<i % 3>&access_token=<canary>`, its start `$msec - $request_time`.
fn nginx_log(n: usize, span_ms: f64) -> (String, Vec<String>) {
    let base = 1_764_324_000.0_f64;
    let mut lines = String::new();
    let mut targets = Vec::new();
    for i in 0..n {
        let start = if (n / 2..n / 2 + 40).contains(&i) {
            base + span_ms / 2000.0 + (i - n / 2) as f64 * 0.000_02
        } else {
            base + i as f64 * span_ms / 1000.0 / n as f64
        };
        let request_time = 0.001 * (i % 5) as f64;
        let target = format!("/item/{}?page={}&access_token={CANARY_QUERY}", i % 37, i % 3);
        lines.push_str(&format!(
            "10.1.0.{} [{:.3}] \"GET {target} HTTP/1.1\" 200 {:.3} \"curl/8\"\n",
            i % 9,
            start + request_time,
            request_time
        ));
        targets.push(format!("GET {target} HTTP/1.1"));
    }
    (lines, targets)
}

const NGINX_FORMAT: &str = r#"$remote_addr [$msec] "$request" $status $request_time "$http_user_agent""#;

fn spec(dir: &Path, name: &str, port: u16, replay: &str) -> std::path::PathBuf {
    spec_with(dir, name, port, replay, "")
}

/// [`spec`] with more keys of the scenario (`extra`: lines indented by four spaces).
fn spec_with(dir: &Path, name: &str, port: u16, replay: &str, extra: &str) -> std::path::PathBuf {
    let path = dir.join("spec.yaml");
    let yaml = format!(
        "version: 1\nname: {name}\ntarget: {{ base_url: \"http://127.0.0.1:{port}\" }}\nverify: off\nscenarios:\n  \
         replay:\n{extra}    load:\n      replay:\n{replay}"
    );
    std::fs::write(&path, yaml).expect("write spec");
    path
}

/// Runs a spec; returns the results' scenario and everything printed.
fn run(dir: &Path, spec: &Path) -> (serde_json::Value, String) {
    let out_dir = dir.join("out");
    let out = command(&["run", spec.to_str().unwrap(), "--out", out_dir.to_str().unwrap()]).output().expect("run");
    let printed = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{printed}");
    let results = files_under(&out_dir).into_iter().find(|p| p.ends_with("results.json")).expect("results.json");
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(results).unwrap()).unwrap();
    (doc["scenarios"][0].clone(), printed)
}

/// No file written under `dir` but the log itself, nor `printed`, holds a canary.
fn no_canary(dir: &Path, printed: &str, canaries: &[&str]) {
    for canary in canaries {
        assert!(!printed.contains(canary), "{canary} was printed");
        for file in files_under(dir).into_iter().filter(|f| !f.ends_with("access.log") && !f.ends_with("session.har")) {
            let content = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
            assert!(!content.contains(canary), "{canary} reached {}", file.display());
        }
    }
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[test]
fn an_nginx_log_is_replayed_request_for_request_with_its_fidelity_and_no_secret_written() {
    let (port, seen) = recorder();
    let dir = tempfile::tempdir().unwrap();
    let (log, targets) = nginx_log(600, 1200.0);
    std::fs::write(dir.path().join("access.log"), log).unwrap();
    let spec = spec_with(
        dir.path(),
        "replay-nginx",
        port,
        &format!("        file: access.log\n        format: {{ nginx: '{NGINX_FORMAT}' }}\n"),
        "    slo: [schedule_error_p99 < 30s, schedule_error_max < 60s]\n",
    );
    // The plan shows the replay without its secrets.
    let plan = command(&["plan", spec.to_str().unwrap()]).output().unwrap();
    let plan_text = text(&plan.stdout);
    assert_eq!(plan.status.code(), Some(0), "{plan_text}{}", text(&plan.stderr));
    assert!(plan_text.contains("replay of access.log (nginx log_format), as logged: 600 requests over"), "{plan_text}");
    assert!(plan_text.contains("at most 40 in 10 ms"), "{plan_text}");
    let (scenario, printed) = run(dir.path(), &spec);
    let got: Vec<String> = seen.lock().unwrap().iter().map(|s| s.line.clone()).collect();
    // The exact multiset, the secret sent as logged.
    assert_eq!(sorted(got), sorted(targets));
    let f = &scenario["replay"];
    assert_eq!(f["scheduled"], 600, "{f}");
    assert_eq!(f["sent"], 600, "{f}");
    assert_eq!(f["requests"]["equal"], true, "{f}");
    assert_eq!(f["requests"]["distinct"], 111, "{f}");
    assert_eq!(f["windows"]["logged_peak"], 40, "{f}");
    assert!(f["schedule_error"]["max_us"].as_u64().is_some(), "{f}");
    assert!(f["schedule_error"]["p99_us"].as_u64().unwrap() <= f["schedule_error"]["max_us"].as_u64().unwrap());
    assert_eq!(f["statuses"][0]["logged"], "2xx", "{f}");
    assert_eq!(f["statuses"][0]["count"], 600, "{f}");
    assert!(printed.contains("Replay"), "{printed}");
    // The schedule error is gated like any latency: measured from the send lag, judged PASS.
    let verdicts = scenario["verdicts"].as_array().unwrap();
    assert_eq!(verdicts.len(), 2, "{verdicts:?}");
    assert!(verdicts.iter().all(|v| v["passed"] == true && v["observed"].is_number()), "{verdicts:?}");
    no_canary(dir.path(), &format!("{printed}{plan_text}"), &[CANARY_QUERY]);
}

#[test]
fn at_3x_the_log_is_sent_in_a_third_of_its_time() {
    let (port, seen) = recorder();
    let dir = tempfile::tempdir().unwrap();
    let (log, targets) = nginx_log(300, 3000.0);
    std::fs::write(dir.path().join("access.log"), log).unwrap();
    let spec = spec(
        dir.path(),
        "replay-3x",
        port,
        &format!("        file: access.log\n        format: {{ nginx: '{NGINX_FORMAT}' }}\n        speed: 3x\n"),
    );
    let (scenario, _) = run(dir.path(), &spec);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(sorted(seen.iter().map(|s| s.line.clone()).collect()), sorted(targets));
    // The log spans 3 s (less one request's gap); at 3x the phase sends it over about 1 s.
    let first = seen.iter().map(|s| s.at).fold(f64::INFINITY, f64::min);
    let last = seen.iter().map(|s| s.at).fold(0.0, f64::max);
    assert!((0.9..1.5).contains(&(last - first)), "sent over {}s", last - first);
    assert!(scenario["duration"].as_f64().unwrap() < 2.0, "{}", scenario["duration"]);
    assert_eq!(scenario["replay"]["speed"], 3.0);
    assert_eq!(scenario["replay"]["requests"]["equal"], true);
}

#[test]
fn a_har_is_replayed_with_its_headers_and_post_body_and_its_credentials_never_written() {
    let (port, seen) = recorder();
    let dir = tempfile::tempdir().unwrap();
    let entry = |ms: u32, method: &str, url: &str, body: Option<&str>| {
        let post = body.map_or(String::new(), |b| {
            format!(r#","postData":{{"mimeType":"application/json","text":{}}}"#, serde_json::to_string(b).unwrap())
        });
        format!(
            r#"{{"startedDateTime":"2026-11-28T10:00:00.{ms:03}Z","time":5,"request":{{"method":"{method}","url":"{url}","httpVersion":"HTTP/1.1","headers":[{{"name":"Authorization","value":"Bearer {CANARY_AUTH}"}},{{"name":"X-Trace","value":"t-{ms}"}},{{"name":"Connection","value":"keep-alive"}}],"queryString":[],"cookies":[],"headersSize":-1,"bodySize":0{post}}},"response":{{"status":200,"statusText":"OK","httpVersion":"HTTP/1.1","headers":[],"cookies":[],"content":{{"size":0,"mimeType":"text/plain"}},"redirectURL":"","headersSize":-1,"bodySize":0}},"cache":{{}},"timings":{{"send":0,"wait":4,"receive":1}}}}"#
        )
    };
    let origin = "https://shop.example";
    let entries = [
        entry(0, "GET", &format!("{origin}/cart?access_token={CANARY_QUERY}"), None),
        entry(50, "POST", &format!("{origin}/cart/items"), Some(r#"{"sku":"A-1","qty":2}"#)),
        entry(120, "GET", "https://cdn.example/app.js", None),
        entry(200, "DELETE", &format!("{origin}/cart/items/1"), None),
    ];
    let har = format!(
        r#"{{"log":{{"version":"1.2","creator":{{"name":"t","version":"1"}},"entries":[{}]}}}}"#,
        entries.join(",")
    );
    std::fs::write(dir.path().join("session.har"), har).unwrap();
    let spec = spec(
        dir.path(),
        "replay-har",
        port,
        "        file: session.har\n        format: har\n        methods: [GET, POST]\n",
    );
    let (scenario, printed) = run(dir.path(), &spec);
    let seen = seen.lock().unwrap().clone();
    let lines: Vec<&str> = seen.iter().map(|s| s.line.as_str()).collect();
    assert_eq!(
        sorted(lines.iter().map(|s| s.to_string()).collect()),
        vec![format!("GET /cart?access_token={CANARY_QUERY} HTTP/1.1"), "POST /cart/items HTTP/1.1".to_owned()]
    );
    let post = seen.iter().find(|s| s.line.starts_with("POST")).unwrap();
    assert_eq!(post.body, br#"{"sku":"A-1","qty":2}"#);
    assert!(post.headers.contains(&format!("Authorization: Bearer {CANARY_AUTH}")), "{:?}", post.headers);
    assert!(post.headers.contains(&"X-Trace: t-50".to_owned()), "{:?}", post.headers);
    assert!(post.headers.contains(&"Host: shop.example".to_owned()), "{:?}", post.headers);
    assert!(!post.headers.iter().any(|h| h.starts_with("Connection")), "{:?}", post.headers);
    let f = &scenario["replay"];
    let skips = f["skips"].as_array().unwrap();
    let skipped = |why: &str| skips.iter().find(|s| s["reason"] == why).map(|s| s["count"].as_u64().unwrap());
    assert_eq!(skipped("other origin"), Some(1), "{f}");
    assert_eq!(skipped("method filter"), Some(1), "{f}");
    assert_eq!(f["requests"]["equal"], true, "{f}");
    no_canary(dir.path(), &printed, &[CANARY_QUERY, CANARY_AUTH]);
}

#[test]
fn json_lines_are_replayed_through_their_field_mapping_a_path_filter_and_a_host_rewrite() {
    let (port, seen) = recorder();
    let dir = tempfile::tempdir().unwrap();
    let mut log = String::new();
    for i in 0..50 {
        log.push_str(&format!(
            "{{\"ts\":\"2026-11-28T10:00:00.{:03}Z\",\"req\":{{\"verb\":\"GET\",\"uri\":\"/j/{i}\"}},\"code\":200}}\n",
            i * 10
        ));
    }
    log.push_str("not json at all\n");
    std::fs::write(dir.path().join("access.log"), log).unwrap();
    let spec = spec(
        dir.path(),
        "replay-json",
        port,
        "        file: access.log\n        format: { json: { time: ts, method: req.verb, path: req.uri, status: code } }\n        \
         max_bad_lines: 5%\n        paths: \"^/j/[0-3]\"\n        host: staging.internal\n",
    );
    let (scenario, _) = run(dir.path(), &spec);
    let seen = seen.lock().unwrap().clone();
    // /j/0 .. /j/3 and /j/10 .. /j/39: 34 of the 50.
    assert_eq!(seen.len(), 34, "{seen:?}");
    assert!(seen.iter().all(|s| s.headers.contains(&"Host: staging.internal".to_owned())), "{seen:?}");
    let skips = scenario["replay"]["skips"].as_array().unwrap().clone();
    assert_eq!(skips, vec![serde_json::json!({ "reason": "path filter", "count": 16 })]);
    let f = &scenario["replay"];
    assert_eq!((f["lines"].as_u64(), f["bad_lines"].as_u64()), (Some(51), Some(1)), "{f}");
    assert!(f["first_bad"][0].as_str().unwrap().starts_with("line 51: not JSON"), "{f}");
}

#[test]
fn connections_new_opens_a_connection_per_request() {
    let (port, seen) = recorder();
    let dir = tempfile::tempdir().unwrap();
    let (log, targets) = nginx_log(120, 600.0);
    std::fs::write(dir.path().join("access.log"), log).unwrap();
    let spec = spec(
        dir.path(),
        "replay-new",
        port,
        &format!(
            "        file: access.log\n        format: {{ nginx: '{NGINX_FORMAT}' }}\n        connections: new\n        \
             max_connections: 16\n"
        ),
    );
    let (scenario, _) = run(dir.path(), &spec);
    assert_eq!(sorted(seen.lock().unwrap().iter().map(|s| s.line.clone()).collect()), sorted(targets));
    assert_eq!(scenario["connections"]["opened"], 120, "{}", scenario["connections"]);
    assert!(seen.lock().unwrap().iter().all(|s| s.headers.contains(&"Connection: close".to_owned())));
    assert_eq!(scenario["replay"]["requests"]["equal"], true);
}

#[test]
fn shards_split_the_log_without_overlap_and_their_fidelity_adds_up() {
    let (port, seen) = recorder();
    let dir = tempfile::tempdir().unwrap();
    let (log, targets) = nginx_log(200, 600.0);
    std::fs::write(dir.path().join("access.log"), log).unwrap();
    let spec = spec(
        dir.path(),
        "replay-shards",
        port,
        &format!("        file: access.log\n        format: {{ nginx: '{NGINX_FORMAT}' }}\n"),
    );
    let out_dir = dir.path().join("out");
    let out = command(&["run", spec.to_str().unwrap(), "--shards", "2", "--out", out_dir.to_str().unwrap()])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(sorted(seen.lock().unwrap().iter().map(|s| s.line.clone()).collect()), sorted(targets));
    let results = files_under(&out_dir)
        .into_iter()
        .find(|p| p.ends_with("replay-shards/results.json"))
        .expect("the merged results.json");
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(results).unwrap()).unwrap();
    let f = &doc["scenarios"][0]["replay"];
    assert_eq!(
        (f["scheduled"].as_u64(), f["sent"].as_u64(), f["lines"].as_u64()),
        (Some(200), Some(200), Some(200)),
        "{f}"
    );
    assert_eq!(f["requests"]["equal"], true, "{f}");
}

/// A HAR that headless Chromium recorded (Playwright's `record_har_path` with the system Chromium:
/// tests/fixtures/har/record.py) of a page of the built-in server and its fetches, replayed against the recording
/// server: every request with its method, path and query, its headers (the browser's own, the page's `X-Trace`, its
/// cookie and bearer token) and its POST body; the credentials are sent but never written. Runs where
/// `LOADGATE_PLAYWRIGHT_PYTHON` names a Python that imports Playwright (.ci/run installs it); skips elsewhere.
#[test]
fn a_har_recorded_by_headless_chromium_replays_with_its_headers_and_bodies_and_no_credential_written() {
    let Some(python) = std::env::var_os("LOADGATE_PLAYWRIGHT_PYTHON") else {
        eprintln!("skipped: LOADGATE_PLAYWRIGHT_PYTHON is not set (a Python with Playwright records the HAR)");
        return;
    };
    let chromium = std::env::var("LOADGATE_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    let dir = tempfile::tempdir().unwrap();
    let har = dir.path().join("session.har");
    // The origin Chromium records against: the built-in server, on a free port.
    let mut origin = command(&["serve", "--kind", "plaintext"]).stdout(std::process::Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(origin.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_owned();
    let recorded = std::process::Command::new(&python)
        .arg(common::root().join("tests/fixtures/har/record.py"))
        .args([url.as_str(), har.to_str().unwrap(), chromium.as_str()])
        .output()
        .expect("python");
    let _ = origin.kill();
    let _ = origin.wait();
    assert!(recorded.status.success(), "record.py: {}", text(&recorded.stderr));
    let har_text = std::fs::read_to_string(&har).unwrap();
    assert!(har_text.contains("\"Playwright\""), "a HAR of Playwright's");

    let (port, seen) = recorder();
    let spec = spec(
        dir.path(),
        "chromium-har",
        port,
        "        file: session.har\n        format: har\n        methods: as_logged\n",
    );
    let (scenario, printed) = run(dir.path(), &spec);
    let seen = seen.lock().unwrap().clone();
    let lines = sorted(seen.iter().map(|s| s.line.clone()).collect());
    assert_eq!(
        lines,
        [
            "DELETE /api/items/42 HTTP/1.1",
            "GET /api/items?page=2&access_token=har-canary-token HTTP/1.1",
            "GET /index.html HTTP/1.1",
            "POST /api/orders HTTP/1.1",
        ],
        "{printed}"
    );
    let post = seen.iter().find(|s| s.line.starts_with("POST")).unwrap();
    assert_eq!(post.body, br#"{"item":42,"qty":3}"#);
    let has = |s: &Seen, header: &str| s.headers.iter().any(|h| h.eq_ignore_ascii_case(header));
    assert!(has(post, "Authorization: Bearer har-canary-bearer"), "{:?}", post.headers);
    assert!(has(post, "X-Trace: abc") && has(post, "Content-Type: application/json"), "{:?}", post.headers);
    assert!(has(post, "Cookie: session=har-canary-cookie"), "{:?}", post.headers);
    assert!(post.headers.iter().any(|h| h.to_ascii_lowercase().starts_with("user-agent:") && h.contains("Chrome")));
    assert_eq!(scenario["requests"]["completed"], 4, "{printed}");
    no_canary(dir.path(), &printed, &["har-canary-cookie", "har-canary-bearer", "har-canary-token"]);
}
