//! Live export (issue 33) through the real binary: Prometheus remote write into a real Prometheus (Debian's,
//! started here with the remote-write receiver and native histograms on a free port, its data in a temporary
//! directory), the same series scraped from `--metrics-listen` by that Prometheus, OTLP/HTTP into a receiver in
//! this file that decodes the protobuf, an endpoint that is down or never answers, and the Grafana dashboard.
//! Each live series is compared with the run's results.json: request counts exactly, the p99 within the
//! histogram's precision (2.2% buckets). The Prometheus tests find it through `LOADGATE_PROMETHEUS` or the PATH
//! and skip, saying so, without it (`.ci/run` installs it).

mod common;

use std::io::{BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{loadgate, read_request, root, text};
use serde_json::Value;

const SPEC: &str = "version: 1\nname: export\ntarget: { builtin: plaintext }\n\
scenarios:\n  get:\n    request: { path: / }\n    load: { closed: { connections: 2, duration: 2s } }\n";

/// A spec of a fixed number of requests: two runs count the same.
const COUNTED: &str = "version: 1\nname: counted\ntarget: { builtin: plaintext }\n\
scenarios:\n  get:\n    request: { path: / }\n    load: { closed: { connections: 2, requests: 3000 } }\n";

fn write_spec(dir: &Path, text: &str) -> String {
    let path = dir.join("spec.yaml");
    std::fs::write(&path, text).expect("write the spec");
    path.to_str().expect("utf-8").to_owned()
}

fn results(out: &Path, name: &str) -> Value {
    let text = std::fs::read_to_string(out.join(name).join("results.json")).expect("results.json");
    serde_json::from_str(&text).expect("json")
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// Polls `f` until it gives a value, for at most `bound` (a bound on a wait, not a timing assertion).
fn poll<T>(bound: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let until = Instant::now() + bound;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() > until {
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A GET on loopback; the body.
fn get(port: u16, target: &str) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").ok()?;
    let mut reply = Vec::new();
    s.read_to_end(&mut reply).ok()?;
    let reply = text(&reply);
    let (head, body) = reply.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| {
        if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
            dechunk(body)
        } else {
            body.to_owned()
        }
    })
}

fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A real Prometheus on a free port, its data in a temporary directory; stopped when dropped.
struct Prometheus {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn prometheus_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("LOADGATE_PROMETHEUS") {
        return Some(PathBuf::from(p));
    }
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("prometheus"))
        .find(|p| p.is_file())
}

impl Prometheus {
    /// Starts Prometheus with `scrape` as its scrape configs (YAML list items, or empty); `None` (the test
    /// skips) when it is not installed.
    fn start(scrape: &str) -> Option<Prometheus> {
        let Some(bin) = prometheus_binary() else {
            eprintln!("skipped: no `prometheus` on the PATH and LOADGATE_PROMETHEUS unset (.ci/run installs it)");
            return None;
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let config = dir.path().join("prometheus.yml");
        let scrape =
            if scrape.is_empty() { "scrape_configs: []\n".to_owned() } else { format!("scrape_configs:\n{scrape}") };
        std::fs::write(&config, format!("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n{scrape}"))
            .expect("config");
        let port = free_port();
        let child = Command::new(bin)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--web.enable-remote-write-receiver")
            .arg("--enable-feature=native-histograms")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("prometheus.log")).expect("log"))
            .spawn()
            .expect("start prometheus");
        let p = Prometheus { child, port, _dir: dir };
        let ready = poll(Duration::from_secs(120), || get(port, "/-/ready"));
        assert!(ready.is_some(), "Prometheus did not become ready on port {port}");
        Some(p)
    }

    /// An instant query's single value (`None` while it has no result).
    fn value(&self, query: &str) -> Option<f64> {
        let body = get(self.port, &format!("/api/v1/query?query={}", percent_encode(query)))?;
        let v: Value = serde_json::from_str(&body).ok()?;
        let result = v["data"]["result"].as_array()?;
        if result.len() != 1 {
            return None;
        }
        result[0]["value"][1].as_str()?.parse().ok()
    }

    /// Polls a query until it equals `want` (or the bound passes): the value last seen.
    fn wait_for(&self, query: &str, want: f64) -> Option<f64> {
        let mut last = None;
        let _ = poll(Duration::from_secs(60), || {
            last = self.value(query);
            (last == Some(want)).then_some(())
        });
        last
    }
}

fn completed(r: &Value) -> f64 {
    r["scenarios"][0]["requests"]["completed"].as_u64().expect("completed") as f64
}

fn p99_seconds(r: &Value) -> f64 {
    r["scenarios"][0]["latency"]["percentiles"]["p99"].as_u64().expect("p99") as f64 / 1e6
}

fn export_report(out: &Path, name: &str) -> Value {
    let text = std::fs::read_to_string(out.join(name).join("export.json")).expect("export.json");
    serde_json::from_str(&text).expect("json")
}

fn close_to(got: f64, want: f64, what: &str) {
    // One native bucket is 2.2% wide; HdrHistogram's own precision is 0.1%.
    assert!((got - want).abs() <= 0.05 * want, "{what}: {got} from Prometheus, {want} in results.json");
}

#[test]
fn remote_write_series_in_prometheus_match_results() {
    let Some(prom) = Prometheus::start("") else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = write_spec(dir.path(), SPEC);
    let out = dir.path().join("out");
    let url = format!("prometheus=http://127.0.0.1:{}/api/v1/write", prom.port);
    let done = loadgate(&["run", &spec, "--out", out.to_str().expect("utf-8"), "--output", &url, "-q"]);
    assert_eq!(done.status.code(), Some(0), "{}", text(&done.stderr));
    let r = results(&out, "export");
    let n = completed(&r);
    assert!(n > 0.0);
    let sel = "{spec=\"export\",scenario=\"get\"}";
    assert_eq!(prom.wait_for(&format!("loadgate_requests_total{sel}"), n), Some(n), "requests");
    assert_eq!(prom.wait_for(&format!("histogram_count(loadgate_latency_seconds{sel})"), n), Some(n), "latencies");
    let p99 = prom.value(&format!("histogram_quantile(0.99, loadgate_latency_seconds{sel})")).expect("p99");
    close_to(p99, p99_seconds(&r), "p99");
    assert_eq!(prom.value(&format!("loadgate_phase_active{sel}")), Some(0.0));
    assert!(prom.value(&format!("loadgate_connections{sel}")).is_some());
    // Every label is one the issue names: no URL, nothing per request.
    let body = get(prom.port, "/api/v1/labels").expect("labels");
    let labels: Value = serde_json::from_str(&body).expect("json");
    let mut names: Vec<&str> = labels["data"].as_array().expect("labels").iter().filter_map(Value::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, ["__name__", "run_id", "scenario", "spec"], "{names:?}");
    let report = export_report(&out, "export");
    assert_eq!(report["outputs"][0]["dropped"], 0, "{report}");
    assert_eq!(report["outputs"][0]["failed"], 0, "{report}");
}

#[test]
fn the_metrics_endpoint_scraped_by_prometheus_matches_results() {
    let listen = free_port();
    let scrape = format!(
        "  - job_name: loadgate\n    scrape_interval: 1s\n    static_configs:\n      - targets: ['127.0.0.1:{listen}']\n"
    );
    let Some(prom) = Prometheus::start(&scrape) else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = write_spec(dir.path(), &SPEC.replace("duration: 2s", "duration: 3s"));
    let out = dir.path().join("out");
    let addr = format!("127.0.0.1:{listen}");
    // The endpoint waits at the end until the final values were scraped (bounded).
    let args = [
        "run",
        &spec,
        "--out",
        out.to_str().expect("utf-8"),
        "--metrics-listen",
        &addr,
        "--metrics-linger",
        "60s",
        "-q",
    ];
    let done = loadgate(&args);
    assert_eq!(done.status.code(), Some(0), "{}", text(&done.stderr));
    let r = results(&out, "export");
    let n = completed(&r);
    let sel = "{job=\"loadgate\",spec=\"export\",scenario=\"get\"}";
    assert_eq!(prom.wait_for(&format!("loadgate_requests_total{sel}"), n), Some(n), "requests");
    assert_eq!(prom.wait_for(&format!("loadgate_latency_seconds_count{sel}"), n), Some(n), "latencies");
    let p99 = prom
        .value(&format!("histogram_quantile(0.99, sum by (le) (loadgate_latency_seconds_bucket{sel}))"))
        .expect("p99");
    close_to(p99, p99_seconds(&r), "p99");
    let report = export_report(&out, "export");
    assert!(report["scrapes"].as_u64().expect("scrapes") >= 1, "{report}");
}

/// The OTLP requests a receiver got, decoded.
type Received = Arc<Mutex<Vec<loadgate_export::otlp::ExportMetricsServiceRequest>>>;

/// An OTLP/HTTP receiver that decodes every POST with prost and answers 200.
fn otlp_receiver() -> (u16, Received) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let got: Received = Arc::default();
    let seen = Arc::clone(&got);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let mut out = stream.try_clone().expect("clone");
            let mut r = BufReader::new(stream);
            if let Some((line, body)) = read_request(&mut r) {
                assert!(line.starts_with("POST /v1/metrics "), "{line}");
                let request: loadgate_export::otlp::ExportMetricsServiceRequest =
                    prost::Message::decode(body.as_slice()).expect("an OTLP protobuf");
                seen.lock().expect("lock").push(request);
                let _ = out.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
            }
        }
    });
    (port, got)
}

#[test]
fn otlp_requests_decode_and_count_as_results() {
    let (port, got) = otlp_receiver();
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = write_spec(dir.path(), SPEC);
    let out = dir.path().join("out");
    let url = format!("otlp=http://127.0.0.1:{port}/v1/metrics");
    let done = loadgate(&["run", &spec, "--out", out.to_str().expect("utf-8"), "--output", &url, "-q"]);
    assert_eq!(done.status.code(), Some(0), "{}", text(&done.stderr));
    let n = completed(&results(&out, "export")) as u64;
    let got = got.lock().expect("lock");
    assert!(got.len() >= 2, "a push per second and the final one: {}", got.len());
    let last = got.last().expect("a request");
    let metrics = &last.resource_metrics[0].scope_metrics[0].metrics;
    let find = |name: &str| metrics.iter().find(|m| m.name == name).unwrap_or_else(|| panic!("{name}"));
    let requests = find("loadgate_requests").sum.as_ref().expect("a sum");
    assert!(requests.is_monotonic && requests.aggregation_temporality == 2);
    assert_eq!(requests.data_points[0].as_int, Some(n as i64));
    let attrs: Vec<&str> = requests.data_points[0].attributes.iter().map(|a| a.key.as_str()).collect();
    assert_eq!(attrs, ["run_id", "scenario", "spec"]);
    let latency = find("loadgate_latency_seconds").exponential_histogram.as_ref().expect("exponential");
    let point = &latency.data_points[0];
    assert_eq!(point.count, n);
    let buckets = point.positive.as_ref().expect("buckets");
    assert_eq!(buckets.bucket_counts.iter().sum::<u64>() + point.zero_count, n);
    // Cumulative: each request's count is at least the one before.
    let counts: Vec<i64> = got
        .iter()
        .filter_map(|r| {
            let m = r.resource_metrics[0].scope_metrics[0].metrics.iter().find(|m| m.name == "loadgate_requests")?;
            m.sum.as_ref()?.data_points.first()?.as_int
        })
        .collect();
    assert!(counts.windows(2).all(|w| w[0] <= w[1]), "{counts:?}");
}

/// A receiver that answers 200 to every POST and keeps each request's head (request line and headers).
fn head_recorder() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let got = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&got);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let mut out = stream.try_clone().expect("clone");
            let mut r = BufReader::new(stream);
            let mut head = String::new();
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if std::io::BufRead::read_line(&mut r, &mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                head.push_str(&line);
            }
            let mut body = vec![0; length];
            if r.read_exact(&mut body).is_ok() && !head.is_empty() {
                seen.lock().expect("lock").push(head);
                let _ = out.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
            }
        }
    });
    (port, got)
}

/// Every file under `dir`, read as text.
fn all_files(dir: &Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            text.push_str(&all_files(&path));
        } else {
            text.push_str(&String::from_utf8_lossy(&std::fs::read(&path).expect("read")));
        }
    }
    text
}

#[test]
fn the_spec_outputs_send_with_their_headers_and_the_command_line_replaces_them() {
    let (port, heads) = head_recorder();
    let dir = tempfile::tempdir().expect("tempdir");
    let token = "tok-5e6f7a8b9c";
    let yaml = r#"version: 1
name: outputs
target: { builtin: plaintext }
outputs:
  - type: otlp
    url: http://127.0.0.1:RECEIVER_PORT/v1/metrics
    headers:
      X-Scope-OrgID: perf
      Authorization: "Bearer {{ env.LG_EXPORT_TOKEN }}"
scenarios:
  get:
    request: { path: / }
    load: { closed: { connections: 2, requests: 500 } }
"#;
    let spec = write_spec(dir.path(), &yaml.replace("RECEIVER_PORT", &port.to_string()));
    let out = dir.path().join("out");
    let run = |args: &[&str]| common::command(args).env("LG_EXPORT_TOKEN", token).output().expect("run");
    let done = run(&["run", &spec, "--out", out.to_str().expect("utf-8"), "-q"]);
    assert_eq!(done.status.code(), Some(0), "{}", text(&done.stderr));
    {
        let heads = heads.lock().expect("lock");
        assert!(!heads.is_empty(), "the spec's output got nothing");
        for head in heads.iter() {
            assert!(head.starts_with("POST /v1/metrics "), "{head}");
            assert!(head.contains("X-Scope-OrgID: perf\r\n"), "{head}");
            assert!(head.contains(&format!("Authorization: Bearer {token}\r\n")), "{head}");
        }
    }
    // The token reaches the endpoint and nothing written.
    let written = all_files(&out) + &text(&done.stdout) + &text(&done.stderr);
    assert!(!written.contains(token), "the output's token was written");
    assert_eq!(export_report(&out, "outputs")["outputs"][0]["url"], format!("http://127.0.0.1:{port}/v1/metrics"));

    // `--output none`: the spec's outputs are off.
    heads.lock().expect("lock").clear();
    let none = dir.path().join("none");
    let done = run(&["run", &spec, "--out", none.to_str().expect("utf-8"), "--output", "none", "-q"]);
    assert_eq!(done.status.code(), Some(0), "{}", text(&done.stderr));
    assert!(heads.lock().expect("lock").is_empty(), "--output none still sent");
    assert!(!none.join("outputs/export.json").exists());

    // `--output` replaces them, with `--output-header`.
    let (other, other_heads) = head_recorder();
    let cli = dir.path().join("cli");
    let url = format!("otlp=http://127.0.0.1:{other}/v1/metrics");
    let args = [
        "run",
        &spec,
        "--out",
        cli.to_str().expect("utf-8"),
        "--output",
        &url,
        "--output-header",
        "X-Scope-OrgID: cli",
        "-q",
    ];
    let done = run(&args);
    assert_eq!(done.status.code(), Some(0), "{}", text(&done.stderr));
    assert!(heads.lock().expect("lock").is_empty(), "the spec's output was sent to besides --output");
    let other_heads = other_heads.lock().expect("lock");
    assert!(
        !other_heads.is_empty() && other_heads.iter().all(|h| h.contains("X-Scope-OrgID: cli\r\n")),
        "{other_heads:?}"
    );
}

#[test]
fn local_shards_each_export_their_series_labelled_by_shard() {
    let (port, got) = otlp_receiver();
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = write_spec(dir.path(), COUNTED);
    let out = dir.path().join("out");
    let url = format!("otlp=http://127.0.0.1:{port}/v1/metrics");
    let done =
        loadgate(&["run", &spec, "--shards", "2", "--out", out.to_str().expect("utf-8"), "--output", &url, "-q"]);
    assert_eq!(done.status.code(), Some(0), "{}", text(&done.stderr));
    let merged = completed(&results(&out, "counted")) as i64;
    // Each shard's last push of `loadgate_requests`, by its `shard` label: together the merged count.
    let mut last = std::collections::BTreeMap::new();
    for request in got.lock().expect("lock").iter() {
        for m in &request.resource_metrics[0].scope_metrics[0].metrics {
            let Some(sum) = m.sum.as_ref().filter(|_| m.name == "loadgate_requests") else { continue };
            for point in &sum.data_points {
                let shard = point.attributes.iter().find(|a| a.key == "shard").map(|a| format!("{:?}", a.value));
                last.insert(shard.expect("a shard label"), point.as_int.expect("an int"));
            }
        }
    }
    assert_eq!(last.len(), 2, "{last:?}");
    assert_eq!(last.values().sum::<i64>(), merged, "{last:?}");
    let done = loadgate(&["run", &spec, "--shards", "2", "--metrics-listen", "127.0.0.1:0"]);
    assert_eq!(done.status.code(), Some(2), "{}", text(&done.stderr));
    assert!(text(&done.stderr).contains("--metrics-listen serves one process's series"), "{}", text(&done.stderr));
}

/// A server that accepts connections and never answers.
fn silent_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming() {
            held.push(s);
        }
    });
    port
}

#[test]
fn an_endpoint_down_or_silent_changes_no_count_and_is_reported() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = write_spec(dir.path(), COUNTED);
    let plain = dir.path().join("plain");
    let done = loadgate(&["run", &spec, "--out", plain.to_str().expect("utf-8"), "-q"]);
    assert_eq!(done.status.code(), Some(0), "{}", text(&done.stderr));
    let exported = dir.path().join("exported");
    let down = format!("prometheus=http://127.0.0.1:{}/api/v1/write", free_port());
    let silent = format!("otlp=http://127.0.0.1:{}/v1/metrics", silent_server());
    let done =
        loadgate(&["run", &spec, "--out", exported.to_str().expect("utf-8"), "--output", &down, "--output", &silent]);
    assert_eq!(done.status.code(), Some(0), "{}", text(&done.stderr));
    let (a, b) = (results(&plain, "counted"), results(&exported, "counted"));
    for what in ["requests", "status", "errors"] {
        assert_eq!(a["scenarios"][0][what], b["scenarios"][0][what], "{what}");
    }
    assert_eq!(completed(&b), 3000.0);
    let report = export_report(&exported, "counted");
    for o in report["outputs"].as_array().expect("outputs") {
        let lost = o["dropped"].as_u64().unwrap_or(0) + o["failed"].as_u64().unwrap_or(0);
        assert!(lost > 0 && o["sent"] == 0, "{o}");
    }
    let stderr = text(&done.stderr) + &text(&done.stdout);
    assert!(stderr.contains("payloads not delivered"), "{stderr}");
    assert!(!std::fs::read_to_string(exported.join("counted/results.json")).expect("results").contains("v1/write"));
}

#[test]
fn the_dashboard_has_what_grafana_imports() {
    let text = std::fs::read_to_string(root().join("dashboards/loadgate.json")).expect("dashboards/loadgate.json");
    let d: Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    assert!(d["schemaVersion"].as_u64().is_some_and(|v| v >= 30), "schemaVersion");
    assert!(d["title"].as_str().is_some_and(|t| !t.is_empty()));
    assert!(d["uid"].as_str().is_some_and(|t| !t.is_empty()));
    // Imported with a data source chosen at import time.
    let inputs = d["__inputs"].as_array().expect("__inputs");
    assert!(inputs.iter().any(|i| i["type"] == "datasource" && i["pluginId"] == "prometheus"), "{inputs:?}");
    let input = format!("${{{}}}", inputs[0]["name"].as_str().expect("name"));
    let vars = d["templating"]["list"].as_array().expect("templating.list");
    let var_names: Vec<&str> = vars.iter().filter_map(|v| v["name"].as_str()).collect();
    for v in ["spec", "scenario", "run_id"] {
        assert!(var_names.contains(&v), "variable {v}: {var_names:?}");
    }
    let panels = d["panels"].as_array().expect("panels");
    let exprs: Vec<String> = panels
        .iter()
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t["expr"].as_str().map(str::to_owned))
        .collect();
    for metric in
        ["loadgate_requests_total", "loadgate_errors_total", "loadgate_connections", "loadgate_send_lag_seconds"]
    {
        assert!(exprs.iter().any(|e| e.contains(metric)), "a panel over {metric}");
    }
    assert!(exprs.iter().any(|e| e.contains("histogram_quantile(0.99, sum(rate(loadgate_latency_seconds")));
    for p in panels {
        assert!(p["gridPos"]["w"].as_u64().is_some() && p["type"].as_str().is_some(), "{p}");
        if p["type"] != "row" {
            assert!(p["datasource"]["uid"] == input.as_str(), "{p}");
        }
    }
    let annotations = d["annotations"]["list"].as_array().expect("annotations");
    assert!(annotations.iter().any(|a| a["expr"].as_str().is_some_and(|e| e.contains("loadgate_phase_active"))));
    // Every metric the dashboard reads is one loadgate exports.
    let known = loadgate_export::series::METRICS.map(|m| m.name);
    for e in &exprs {
        for word in e.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|w| w.starts_with("loadgate_")) {
            let base = word.trim_end_matches("_bucket").trim_end_matches("_count").trim_end_matches("_sum");
            assert!(known.contains(&word) || known.contains(&base), "{word} in {e}");
        }
    }
}

#[test]
fn a_duet_rounds_series_are_each_sides_own() {
    let Some(prom) = Prometheus::start("") else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = write_spec(
        dir.path(),
        "version: 1\nname: duet\ntarget: { builtin: plaintext }\ncandidate: { builtin: plaintext }\n\
         gating: { repeat: 2, order: duet }\nscenarios:\n  get:\n    request: { path: / }\n    \
         load: { open: { rate: 300/s, connections: 4, duration: 1500ms } }\n    slo: [p99 <= baseline * 2]\n",
    );
    let out = dir.path().join("out");
    let url = format!("prometheus=http://127.0.0.1:{}/api/v1/write", prom.port);
    let done = loadgate(&["run", &spec, "--out", out.to_str().expect("utf-8"), "--output", &url, "-q"]);
    assert!(matches!(done.status.code(), Some(0) | Some(5)), "{}", text(&done.stderr));
    let r = results(&out, "duet");
    let s = &r["scenarios"][0];
    // The solo rounds are exported too (repetition 0): each side's series sum its solo round and its two rounds.
    for (side, result) in [("A", &s["ab_baseline"]), ("B", s)] {
        let rounds: f64 = result["repetitions"]
            .as_array()
            .expect("repetitions")
            .iter()
            .map(|x| x["requests"]["completed"].as_f64().expect("completed"))
            .sum();
        let query = format!("sum(loadgate_requests_total{{spec=\"duet\",side=\"{side}\",repetition!=\"0\"}})");
        assert_eq!(prom.wait_for(&query, rounds), Some(rounds), "side {side}");
    }
}
