//! End-to-end runs of the real binary against real servers on loopback: the files a run leaves, what they
//! say, and the exit codes.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{command, root, text};

fn run(args: &[&str]) -> Output {
    common::loadgate(args)
}

/// Writes a spec into a fresh directory and returns (dir, spec path).
fn spec(yaml: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("spec.yaml");
    std::fs::write(&path, yaml).expect("write spec");
    (dir, path)
}

/// A spec whose target is a Python server (`script`, listening on `port`) that loadgate starts, followed by
/// `scenarios` (YAML indented under `scenarios:`).
fn python_target_spec(name: &str, port: u16, script: &str, scenarios: &str) -> (tempfile::TempDir, PathBuf) {
    spec(&format!(
        "version: 1\nname: {name}\ntarget:\n  base_url: http://127.0.0.1:{port}\n  start:\n    \
         command: [python3, -c, {script:?}]\n    ready: {{ tcp: true, timeout: 10s }}\nscenarios:{scenarios}"
    ))
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

fn results(dir: &Path, name: &str) -> serde_json::Value {
    let path = dir.join("out").join(name).join("results.json");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .expect("results.json parses")
}

fn pid_alive(pid: u64) -> bool {
    // A zombie is dead for our purposes.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s.rsplit(')').next().is_some_and(|r| !r.trim_start().starts_with('Z')))
        .unwrap_or(false)
}

const PASSING: &str = r#"
version: 1
name: e2e-pass
target: { builtin: plaintext }
scenarios:
  warmup:
    gate: false
    request: { path: / }
    load: { closed: { connections: 2, duration: 300ms } }
  sweep:
    request: { path: /plaintext }
    matrix: { connections: [2, 4] }
    load: { closed: { connections: "{{ connections }}", duration: 500ms } }
    slo: [p99 < 5s, error_rate < 1%, non_2xx == 0]
  counted:
    request: { path: /plaintext }
    load: { closed: { connections: 3, requests: 500 } }
    slo: [errors == 0]
  open:
    request: { path: / }
    load: { open: { rate: 200/s, connections: 4, duration: 1s } }
    slo: [p99 < 5s]
"#;

#[test]
fn a_passing_run_writes_reports_that_agree_with_each_other() {
    let (dir, path) = spec(PASSING);
    let out_dir = dir.path().join("out");
    let out = run(&["run", path.to_str().unwrap(), "--out", out_dir.to_str().unwrap()]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(!stdout.contains('\x1b') && !stderr.contains('\x1b'), "CI output carries no ANSI codes");

    let r = results(dir.path(), "e2e-pass");
    assert_eq!(r["schema_version"], 1);
    assert_eq!(r["outcome"]["status"], "passed");
    let scenarios = r["scenarios"].as_array().unwrap();
    let names: Vec<&str> = scenarios.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["warmup", "sweep[connections=2]", "sweep[connections=4]", "counted", "open"]);
    // The request-count phase sent exactly its quota.
    let counted = &scenarios[3];
    assert_eq!(counted["requests"]["completed"], 500);
    assert_eq!(counted["status"]["success"], 500);
    // The open load (200/s for 1 s) sent every request its schedule holds, the last millisecond's included.
    assert_eq!(scenarios[4]["requests"]["sent"], 200, "{}", scenarios[4]["requests"]);
    // Histograms are the standard compressed encoding.
    for s in scenarios {
        assert!(s["histograms"]["latency"].as_str().unwrap().starts_with("HISTFAAA"));
    }

    // results.json matches its schema.
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("schemas/results.schema.json")).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&r).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");

    // junit.xml: one testcase per gated (instance, SLO) plus the others, and no failure.
    let junit = std::fs::read_to_string(out_dir.join("e2e-pass/junit.xml")).unwrap();
    let doc = roxmltree::Document::parse(&junit).expect("junit parses");
    let cases: Vec<_> = doc.descendants().filter(|n| n.has_tag_name("testcase")).collect();
    let verdicts: usize = scenarios.iter().map(|s| s["verdicts"].as_array().unwrap().len()).sum();
    assert!(cases.len() >= verdicts, "{} testcases for {verdicts} verdicts", cases.len());
    assert!(cases.iter().all(|c| c.attribute("name").is_some() && c.attribute("time").is_some()));
    assert_eq!(doc.descendants().filter(|n| n.has_tag_name("failure")).count(), 0);
    assert!(junit.contains("sweep[connections=4]: p99 &lt; 5s") || junit.contains("sweep[connections=4]: p99 < 5s"));

    // report.md: real GFM tables, and the sweep.
    let md = std::fs::read_to_string(out_dir.join("e2e-pass/report.md")).unwrap();
    let tables = pulldown_cmark::Parser::new_ext(&md, pulldown_cmark::Options::ENABLE_TABLES)
        .filter(|e| matches!(e, pulldown_cmark::Event::Start(pulldown_cmark::Tag::Table(_))))
        .count();
    assert!(tables >= 2, "{md}");
    assert!(md.contains(r["spec"]["plan_hash"].as_str().unwrap()));

    // One spectrum per instance.
    assert!(out_dir.join("e2e-pass/sweep-connections-2.hgrm").exists());

    // `loadgate report` re-renders the same files from results.json without running anything.
    let again = dir.path().join("again");
    let re =
        run(&["report", out_dir.join("e2e-pass/results.json").to_str().unwrap(), "--out", again.to_str().unwrap()]);
    assert_eq!(re.status.code(), Some(0), "{}", text(&re.stderr));
    assert_eq!(std::fs::read_to_string(again.join("report.md")).unwrap(), md);
    assert_eq!(std::fs::read_to_string(again.join("junit.xml")).unwrap(), junit);
}

#[test]
fn a_failing_slo_exits_1_and_the_junit_names_observed_and_threshold() {
    let (dir, path) = spec(
        r#"
version: 1
name: e2e-fail
target: { builtin: { kind: delay, delay: 20ms } }
scenarios:
  slow:
    request: { path: / }
    load: { closed: { connections: 2, duration: 600ms } }
    slo: [p50 < 1ms]
"#,
    );
    let out = run(&["run", path.to_str().unwrap(), "--out", dir.path().join("out").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let r = results(dir.path(), "e2e-fail");
    // The server waits 20ms: the median cannot be below it.
    let p50 = r["scenarios"][0]["latency"]["percentiles"]["p50"].as_u64().unwrap();
    assert!(p50 >= 20_000, "p50 {p50}us");
    let junit = std::fs::read_to_string(dir.path().join("out/e2e-fail/junit.xml")).unwrap();
    let doc = roxmltree::Document::parse(&junit).unwrap();
    let failure = doc.descendants().find(|n| n.has_tag_name("failure")).expect("a failure");
    let message = failure.attribute("message").unwrap_or_default();
    assert!(message.contains("p50 was") && message.contains("threshold < 1ms"), "{message}");
}

#[test]
fn an_invalid_spec_exits_2_and_runs_nothing() {
    let (dir, path) = spec("version: 1\nname: bad\ntarget: { builtin: plaintext }\nscenarios: { a: { request: { path: / }, load: { closed: { connections: 0, duration: 1s } } } }\n");
    let out = run(&["run", path.to_str().unwrap(), "--out", dir.path().join("out").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("spec.yaml:4:"), "{}", text(&out.stderr));
    assert!(!dir.path().join("out").exists());
}

#[test]
fn a_target_that_refuses_connections_exits_3() {
    let port = free_port();
    let out = run(&[
        "run",
        "--url",
        &format!("http://127.0.0.1:{port}/"),
        "-c",
        "2",
        "-d",
        "1s",
        "--out",
        "/tmp/loadgate-e2e-refused",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("does not accept connections"), "{}", text(&out.stderr));
}

/// A target whose command exits before it is ready: exit 3, every instance named as not run with the reason,
/// and a JUnit error for the run, so that no JUnit reader shows an empty green suite; nothing says "interrupted".
#[test]
fn a_target_that_cannot_start_is_a_junit_error_and_every_instance_is_not_run() {
    let port = free_port();
    let (dir, path) = spec(&format!(
        "version: 1\nname: e2e-nostart\ntarget:\n  base_url: http://127.0.0.1:{port}\n  start: {{ command: [\"false\"] }}\n\
         scenarios:\n  a:\n    request: {{ path: / }}\n    load: {{ closed: {{ connections: 1, duration: 1s }} }}\n    \
         slo: [\"p99 < 1s\"]\n  b:\n    request: {{ path: / }}\n    load: {{ closed: {{ connections: 1, duration: 1s }} }}\n"
    ));
    let out = run(&["run", path.to_str().unwrap(), "--out", dir.path().join("out").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3), "{}{}", text(&out.stdout), text(&out.stderr));
    let r = results(dir.path(), "e2e-nostart");
    let reasons = r["outcome"]["reasons"].to_string();
    assert!(reasons.contains("could not be started") && !reasons.contains("interrupted"), "{reasons}");
    let not_run: Vec<&str> = r["not_run"].as_array().unwrap().iter().map(|n| n["name"].as_str().unwrap()).collect();
    assert_eq!(not_run, ["a", "b"]);
    let junit = std::fs::read_to_string(dir.path().join("out/e2e-nostart/junit.xml")).unwrap();
    let doc = roxmltree::Document::parse(&junit).unwrap();
    let cases: Vec<roxmltree::Node<'_, '_>> = doc.descendants().filter(|n| n.has_tag_name("testcase")).collect();
    let names: Vec<&str> = cases.iter().map(|c| c.attribute("name").unwrap()).collect();
    assert_eq!(names, ["e2e-nostart: run", "a: not run", "b: not run"], "{junit}");
    let error = cases[0].children().find(|n| n.has_tag_name("error")).expect("the run is an error");
    assert!(error.attribute("message").unwrap().contains("could not be started"), "{junit}");
}

#[test]
fn a_rate_the_connections_cannot_carry_is_a_valid_result_with_achieved_vs_target() {
    // One connection to a server that takes 50ms per request cannot carry 500 requests/s: the plan's limit,
    // a result about the target at the rate achieved (exit 0, no SLO), not an invalid measurement.
    let (dir, path) = spec(
        r#"
version: 1
name: e2e-rate
target: { builtin: { kind: delay, delay: 50ms } }
scenarios:
  unreachable:
    request: { path: / }
    timeout: 5s
    load: { open: { rate: 500/s, connections: 1, duration: 1s } }
"#,
    );
    let out = run(&["run", path.to_str().unwrap(), "--out", dir.path().join("out").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let r = results(dir.path(), "e2e-rate");
    let s = &r["scenarios"][0];
    assert_eq!(s["validity"]["valid"], true);
    assert!(s["validity"]["warnings"].as_array().unwrap().iter().any(|p| p["kind"] == "rate_not_reached"));
    assert_eq!(s["limited_by"]["cause"], "plan", "{:#}", s["limited_by"]);
    assert!(s["load"]["achieved_rate"].as_f64().unwrap() < s["load"]["target_rate"].as_f64().unwrap() * 0.99);
    // Latency counts from the intended send time: requests queued behind the slow server show it.
    let p99 = s["latency"]["percentiles"]["p99"].as_u64().unwrap();
    assert!(p99 >= 400_000, "corrected p99 {p99}us");
}

#[test]
fn a_target_that_dies_mid_run_exits_3_and_keeps_what_was_measured() {
    // A Python server that answers for about a second, then dies.
    let port = free_port();
    let script = format!(
        "import http.server, threading, os\n\
         class H(http.server.BaseHTTPRequestHandler):\n\
         \x20   protocol_version = 'HTTP/1.1'\n\
         \x20   def do_GET(self):\n\
         \x20       self.send_response(200); self.send_header('Content-Length', '2'); self.end_headers(); self.wfile.write(b'ok')\n\
         \x20   def log_message(self, *a): pass\n\
         threading.Timer(1.5, lambda: os._exit(3)).start()\n\
         http.server.ThreadingHTTPServer(('127.0.0.1', {port}), H).serve_forever()\n"
    );
    let (dir, path) = python_target_spec(
        "e2e-dies",
        port,
        &script,
        r#"
  first:
    request: { path: / }
    load: { closed: { connections: 2, duration: 500ms } }
  second:
    request: { path: / }
    load: { closed: { connections: 2, duration: 5s } }
  never:
    request: { path: / }
    load: { closed: { connections: 2, duration: 1s } }
"#,
    );
    let out = run(&["run", path.to_str().unwrap(), "--out", dir.path().join("out").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let r = results(dir.path(), "e2e-dies");
    assert_eq!(r["outcome"]["status"], "run_failed");
    assert!(r["target"]["exited"]["status"].as_str().unwrap().contains('3'), "{}", r["target"]);
    let names: Vec<&str> = r["scenarios"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["first", "second"], "the finished phase is kept, the cut one is marked");
    assert!(r["scenarios"][0]["requests"]["completed"].as_u64().unwrap() > 0);
    assert!(r["scenarios"][1]["aborted"].is_string());
    assert!(dir.path().join("out/e2e-dies/junit.xml").exists());
}

#[test]
fn ctrl_c_stops_the_run_keeps_the_reports_and_leaves_no_target_behind() {
    let (dir, path) = spec(
        r#"
version: 1
name: e2e-interrupt
target: { builtin: plaintext }
scenarios:
  long:
    request: { path: / }
    load: { closed: { connections: 2, duration: 30s } }
"#,
    );
    let mut child = command(&["run", path.to_str().unwrap(), "--out", dir.path().join("out").to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the target is up and load is flowing, then interrupt.
    std::thread::sleep(Duration::from_millis(1500));
    send_signal(child.id(), SIGINT);
    let started = Instant::now();
    let status = child.wait().unwrap();
    assert!(started.elapsed() < Duration::from_secs(25), "Ctrl-C ends the run well before the phase would");
    assert_eq!(status.code(), Some(3));
    let r = results(dir.path(), "e2e-interrupt");
    assert_eq!(r["outcome"]["status"], "incomplete");
    assert!(r["scenarios"][0]["aborted"].as_str().unwrap().contains("interrupted"));
    let pid = r["target"]["pid"].as_u64().unwrap();
    assert!(!pid_alive(pid), "the built-in target {pid} is still running");
}

const SIGINT: i32 = 2;

fn send_signal(pid: u32, sig: i32) {
    let status = Command::new("kill").arg(format!("-{sig}")).arg(pid.to_string()).status().unwrap();
    assert!(status.success());
}

#[test]
fn every_spec_in_specs_runs_at_its_smallest_scale_against_the_builtin_target() {
    let mut specs: Vec<PathBuf> = std::fs::read_dir(root().join("specs"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        // It needs httpbin (its checks fail against the built-in server, so its verification exits 3):
        // tests/checks.rs runs it against httpbin.
        .filter(|p| !p.ends_with("httpbin-flows.yaml"))
        // It starts the JVM fixture with async-profiler beside it: tests/profile_external.rs runs that setup.
        .filter(|p| !p.ends_with("profile-seed002.yaml"))
        .collect();
    specs.sort();
    assert!(specs.len() >= 7);
    for spec in specs {
        let dir = tempfile::tempdir().unwrap();
        let out = run(&[
            "-q",
            "run",
            spec.to_str().unwrap(),
            "--set",
            "scale=0.02",
            "--out",
            dir.path().join("out").to_str().unwrap(),
        ]);
        let code = out.status.code();
        // The smallest scale still measures: SLOs may fail and a tiny phase may be invalid on a busy machine,
        // or be inconclusive, but the spec is valid (not 2) and the run is carried out (not 3).
        assert!(
            matches!(code, Some(0 | 1 | 4 | 5)),
            "{}: exit {code:?}\n{}\n{}",
            spec.display(),
            text(&out.stdout),
            text(&out.stderr)
        );
        let plan: serde_json::Value =
            serde_json::from_slice(&run(&["plan", "--json", spec.to_str().unwrap(), "--set", "scale=0.02"]).stdout)
                .unwrap();
        let name = plan["name"].as_str().unwrap();
        let r = results(dir.path(), name);
        assert_eq!(r["scenarios"].as_array().unwrap().len(), plan["phases"].as_array().unwrap().len(), "{name}");
        assert!(r["finished_at"].is_string(), "{name} finished");
        assert_eq!(r["target"]["kind"], "builtin", "{name} runs against the built-in target by default");
        for file in ["junit.xml", "report.md", "report.html", "timeline.svg"] {
            assert!(dir.path().join("out").join(name).join(file).exists(), "{name}/{file}");
        }
    }
}

#[test]
fn abort_on_fail_stops_the_run_early_and_the_reports_say_so() {
    let (dir, path) = spec(
        r#"
version: 1
name: e2e-abort
target: { builtin: { kind: delay, delay: 30ms } }
scenarios:
  slow:
    request: { path: / }
    load: { closed: { connections: 2, duration: 60s } }
    slo:
      - { expr: "p99 < 1ms", abort_on_fail: { delay: 1s } }
  after:
    request: { path: / }
    load: { closed: { connections: 2, duration: 1s } }
"#,
    );
    let started = Instant::now();
    let out = run(&["run", path.to_str().unwrap(), "--out", dir.path().join("out").to_str().unwrap()]);
    assert!(started.elapsed() < Duration::from_secs(50), "the 60s phase was cut short");
    assert_eq!(out.status.code(), Some(1), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let r = results(dir.path(), "e2e-abort");
    let scenarios = r["scenarios"].as_array().unwrap();
    assert_eq!(scenarios.len(), 1, "the run stops after the breach");
    assert!(scenarios[0]["aborted"].as_str().unwrap().contains("abort_on_fail"), "{}", scenarios[0]["aborted"]);
    assert_eq!(r["outcome"]["status"], "slo_failed");
    let md = std::fs::read_to_string(dir.path().join("out/e2e-abort/report.md")).unwrap();
    assert!(md.contains("abort_on_fail"), "the Markdown says why the run stopped:\n{md}");
    // The scenario the run never reached is listed as not run, with the reason, in all three reports.
    let not_run = r["not_run"].as_array().expect("not_run");
    assert_eq!(not_run.len(), 1, "{not_run:?}");
    assert_eq!(not_run[0]["name"], "after");
    let reason = not_run[0]["reason"].as_str().unwrap();
    assert!(reason.contains("slow breached an abort_on_fail SLO"), "{reason}");
    assert!(md.contains("| after |") && md.contains("not run: the run stopped after slow"), "{md}");
    let junit = std::fs::read_to_string(dir.path().join("out/e2e-abort/junit.xml")).unwrap();
    let doc = roxmltree::Document::parse(&junit).unwrap();
    let case = doc
        .descendants()
        .find(|n| n.has_tag_name("testcase") && n.attribute("name") == Some("after: not run"))
        .unwrap_or_else(|| panic!("a testcase for the scenario not run:\n{junit}"));
    let skipped = case.children().find(|c| c.has_tag_name("skipped")).expect("skipped");
    assert!(skipped.attribute("message").unwrap().contains("abort_on_fail"), "{junit}");
}

#[test]
fn a_sweep_against_a_server_that_collapses_names_the_knee() {
    // A server that answers at once while at most 4 connections are open, and takes 200ms per request beyond:
    // 8 connections then get 40 requests/s and 16 get 80, far below what even a loaded machine serves at 4.
    let port = free_port();
    let script = format!(
        "import http.server, threading, time\n\
         lock = threading.Lock(); active = [0]\n\
         class H(http.server.BaseHTTPRequestHandler):\n\
         \x20   protocol_version = 'HTTP/1.1'\n\
         \x20   def setup(self):\n\
         \x20       super().setup()\n\
         \x20       with lock: active[0] += 1\n\
         \x20   def finish(self):\n\
         \x20       super().finish()\n\
         \x20       with lock: active[0] -= 1\n\
         \x20   def do_GET(self):\n\
         \x20       if active[0] > 4: time.sleep(0.2)\n\
         \x20       self.send_response(200); self.send_header('Content-Length', '2'); self.end_headers(); self.wfile.write(b'ok')\n\
         \x20   def log_message(self, *a): pass\n\
         http.server.ThreadingHTTPServer(('127.0.0.1', {port}), H).serve_forever()\n"
    );
    let (dir, path) = python_target_spec(
        "e2e-knee",
        port,
        &script,
        r#"
  sweep:
    request: { path: / }
    matrix: { connections: [1, 2, 4, 8, 16] }
    load: { closed: { connections: "{{ connections }}", duration: 1s } }
"#,
    );
    let out = run(&["run", path.to_str().unwrap(), "--out", dir.path().join("out").to_str().unwrap()]);
    assert!(matches!(out.status.code(), Some(0 | 4)), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let r = results(dir.path(), "e2e-knee");
    let knee = &r["sweeps"][0]["knee"];
    assert_eq!(knee["name"], "sweep[connections=8]", "{}", r["sweeps"]);
    assert_eq!(knee["kind"], "collapse");
    let md = std::fs::read_to_string(dir.path().join("out/e2e-knee/report.md")).unwrap();
    assert!(md.contains("Knee") && md.contains("connections=8"), "{md}");
    // The sweep's plot marks the knee, and report.html shows it inline.
    let svg = std::fs::read_to_string(dir.path().join("out/e2e-knee/sweep-sweep.svg")).expect("sweep-sweep.svg");
    let texts = svg_texts(&svg);
    assert!(texts.iter().any(|t| t.contains("knee (collapse): connections=8")), "{texts:?}");
    assert!(texts.iter().any(|t| t == "throughput (requests/s)"), "{texts:?}");
    let html = std::fs::read_to_string(dir.path().join("out/e2e-knee/report.html")).unwrap();
    assert!(html.contains("knee (collapse): connections=8"));
}

/// The texts of an SVG, which must be well-formed XML with an `<svg>` root.
fn svg_texts(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("not well-formed: {e}"));
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    doc.descendants().filter(|n| n.has_tag_name("text")).map(|n| n.text().unwrap_or("").trim().to_owned()).collect()
}

#[test]
fn the_quickstart_leaves_report_html_and_its_plots_and_report_draws_them_again() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let out = run(&["-q", "run", "specs/quickstart.yaml", "--set", "scale=0.3", "--out", out_dir.to_str().unwrap()]);
    assert!(matches!(out.status.code(), Some(0 | 1 | 4)), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let run_dir = out_dir.join("quickstart");
    let files = ["timeline.svg", "spectrum-warmup.svg", "spectrum-closed.svg", "spectrum-open.svg"];
    for file in files {
        let svg = std::fs::read_to_string(run_dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let texts = svg_texts(&svg);
        assert!(
            texts.iter().any(|t| t.starts_with("latency (") || t == "throughput (requests/s)"),
            "{file}: {texts:?}"
        );
    }
    // The open load's spectrum has service time and send lag beside latency.
    let open = svg_texts(&std::fs::read_to_string(run_dir.join("spectrum-open.svg")).unwrap());
    for series in ["latency from intended send", "service time", "send lag"] {
        assert!(open.iter().any(|t| t.starts_with(series)), "{series}: {open:?}");
    }
    let timeline = svg_texts(&std::fs::read_to_string(run_dir.join("timeline.svg")).unwrap());
    for label in ["warmup", "closed", "open", "target rate", "seconds since the run started"] {
        assert!(timeline.iter().any(|t| t == label), "{label}: {timeline:?}");
    }

    let html = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    let options = roxmltree::ParsingOptions { allow_dtd: true, ..Default::default() };
    let doc = roxmltree::Document::parse_with_options(&html, options).expect("report.html is well-formed");
    assert_eq!(doc.descendants().filter(|n| n.has_tag_name("svg")).count(), files.len());
    assert!(!html.contains("<script") && !html.contains("<link"), "self-contained");
    let md = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
    for file in files {
        assert!(md.contains(&format!("]({file})")), "report.md links {file}");
    }
    assert!(md.contains("### Per-second timeline"));

    // `loadgate report` draws them again from results.json alone.
    let again = dir.path().join("again");
    let out = run(&["report", run_dir.join("results.json").to_str().unwrap(), "--out", again.to_str().unwrap()]);
    assert!(matches!(out.status.code(), Some(0 | 1 | 4)), "{}\n{}", text(&out.stdout), text(&out.stderr));
    for file in files.iter().chain(&["report.html"]) {
        assert!(again.join(file).exists(), "{file} re-rendered");
    }
    assert_eq!(
        std::fs::read_to_string(again.join("timeline.svg")).unwrap(),
        std::fs::read_to_string(run_dir.join("timeline.svg")).unwrap()
    );
}

#[test]
fn a_seeded_put_mix_sends_the_same_keys_in_two_runs_and_gates_each_request() {
    let mix = |port: u16| {
        format!(
            r#"
version: 1
name: e2e-mix
seed: 7
hardware: {{ generator: {{ threads: 2 }}, on_mismatch: warn }}
target: {{ base_url: http://127.0.0.1:{port} }}
scenarios:
  kv-mix:
    requests:
      put: {{ weight: 1, method: PUT, path: /v0/entity, query: {{ id: "{{{{ seq() }}}}" }}, body: "{{{{ random_string(16) }}}}" }}
      get: {{ weight: 9, path: /v0/entity, query: {{ id: "{{{{ random_int(1, 100) }}}}" }} }}
    load: {{ closed: {{ connections: 4, requests: 1000 }} }}
    slo: ["p99{{request=put}} < 10s", "p99{{request=get}} < 10s", "errors{{request=put}} == 0"]
"#
        )
    };
    let mut runs = Vec::new();
    for _ in 0..2 {
        let (port, seen) = common::recording_server();
        let (dir, path) = spec(&mix(port));
        let out = run(&["run", path.to_str().unwrap(), "--out", dir.path().join("out").to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}\n{}", text(&out.stdout), text(&out.stderr));
        let r = results(dir.path(), "e2e-mix");
        let s = &r["scenarios"][0];
        let by: Vec<(&str, u64)> = s["by_request"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| (b["name"].as_str().unwrap(), b["requests"]["completed"].as_u64().unwrap()))
            .collect();
        let mut seen = seen.lock().unwrap().clone();
        let puts = seen.iter().filter(|l| l.starts_with("PUT ")).count() as u64;
        assert_eq!(by, [("put", puts), ("get", 1000 - puts)], "per request, as the server counted");
        assert!((30..=200).contains(&puts), "{puts} PUTs for weight 1 of 10");
        for v in s["verdicts"].as_array().unwrap() {
            assert!(v["passed"] == true && v["observed"].is_number(), "evaluated from the breakdown: {v}");
        }
        // Sequence keys, never one twice (each worker takes every second value; their PUT counts differ).
        let mut keys: Vec<u64> = seen
            .iter()
            .filter(|l| l.starts_with("PUT "))
            .map(|l| l.split("id=").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap())
            .collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len() as u64, puts, "no key repeats");
        assert!(keys.iter().all(|&k| k < 2 * puts), "{keys:?}");
        seen.sort();
        runs.push(seen);
    }
    assert_eq!(runs[0].len(), 1000);
    assert!(runs[0] == runs[1], "the same seed sends the same keys, values and mix");
}

#[test]
fn a_session_runs_each_users_steps_and_gates_one_of_them() {
    let yaml = r#"
version: 1
name: e2e-session
hardware: { generator: { threads: 2 }, on_mismatch: warn }
target: { builtin: plaintext }
scenarios:
  checkout:
    session:
      - { name: home, path: / }
      - { think: 50ms }
      - { name: cart, method: POST, path: /cart, body: "{{ random_string(32) }}" }
      - { think: 50ms }
      - { name: pay, method: POST, path: /pay }
    load: { users: { ramp: 30, over: 500ms } }
    slo: ["p95{request=pay} < 10s", "errors{request=cart} == 0"]
"#;
    let (dir, path) = spec(yaml);
    let out = run(&["run", path.to_str().unwrap(), "--out", dir.path().join("out").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let r = results(dir.path(), "e2e-session");
    let s = &r["scenarios"][0];
    let by: Vec<(&str, u64, u64)> = s["by_request"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["name"].as_str().unwrap(),
                b["requests"]["sent"].as_u64().unwrap(),
                b["requests"]["completed"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(by, [("home", 30, 30), ("cart", 30, 30), ("pay", 30, 30)]);
    assert_eq!(s["requests"]["completed"], 90);
    assert_eq!(s["load"]["users_started"], 30);
    assert_eq!(s["load"]["users_finished"], 30);
    let verdicts = s["verdicts"].as_array().unwrap();
    assert_eq!(verdicts.len(), 2, "{verdicts:?}");
    for v in verdicts {
        assert!(v["passed"] == true && v["observed"].is_number(), "evaluated from the step's breakdown: {v}");
    }
}

/// A Python server that writes its pid to `server.pid` and answers every GET with 200.
const PID_WRITING_SERVER: &str = r#"
import http.server, os, sys
open("server.pid", "w").write(str(os.getpid()))
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"ok")
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"#;

/// Starts a run whose target is a wrapper (`sh -c "python3 server.py & wait"`), waits until the server runs
/// and load flows, applies `kill` to loadgate, and returns the exit status and the server's pid.
fn wrapped_target_after(kill: impl FnOnce(u32)) -> (std::process::ExitStatus, u64) {
    let port = free_port();
    let (dir, path) = spec(&format!(
        "version: 1\nname: e2e-wrapper\ntarget:\n  base_url: http://127.0.0.1:{port}\n  start:\n    \
         command: [sh, -c, \"python3 server.py {port} & wait\"]\n    cwd: .\n    ready: {{ tcp: true, timeout: 20s }}\n\
         scenarios:\n  long:\n    request: {{ path: / }}\n    load: {{ closed: {{ connections: 2, duration: 60s }} }}\n"
    ));
    std::fs::write(dir.path().join("server.py"), PID_WRITING_SERVER).unwrap();
    let mut child = command(&["run", path.to_str().unwrap(), "--out", dir.path().join("out").to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid_file = dir.path().join("server.pid");
    let deadline = Instant::now() + Duration::from_secs(60);
    let server_pid = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file).ok().and_then(|t| t.trim().parse::<u64>().ok()) {
            break pid;
        }
        assert!(Instant::now() < deadline, "the wrapped server never started");
        std::thread::sleep(Duration::from_millis(50));
    };
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the wrapped server never listened");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    kill(child.id());
    let status = child.wait().unwrap();
    // The watchdog sends SIGTERM to the group as soon as loadgate is gone.
    let deadline = Instant::now() + Duration::from_secs(60);
    while pid_alive(server_pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    (status, server_pid)
}

#[test]
fn a_wrapped_target_dies_with_loadgate_killed_by_sigkill() {
    let (status, server) = wrapped_target_after(|pid| send_signal(pid, 9));
    assert_eq!(status.signal(), Some(9));
    assert!(!pid_alive(server), "the server {server} started by the wrapper outlived loadgate");
}

#[test]
fn a_second_ctrl_c_exits_130_and_leaves_no_target_behind() {
    let (status, server) = wrapped_target_after(|pid| {
        send_signal(pid, SIGINT);
        std::thread::sleep(Duration::from_millis(20));
        send_signal(pid, SIGINT);
    });
    // The first Ctrl-C may have finished the run before the second arrived (exit 3); usually the second ends it.
    assert!(matches!(status.code(), Some(130) | Some(3)), "{status:?}");
    assert!(!pid_alive(server), "the server {server} started by the wrapper outlived loadgate");
}

#[test]
fn a_run_owns_its_directory_and_moves_an_earlier_runs_files_aside() {
    let (dir, path) = spec(
        "version: 1\nname: e2e-own\ntarget: { builtin: plaintext }\nscenarios:\n  main:\n    request: { path: / }\n    load: { closed: { connections: 1, requests: 20 } }\n",
    );
    let run_dir = dir.path().join("out").join("e2e-own");
    std::fs::create_dir_all(&run_dir).unwrap();
    std::fs::write(run_dir.join("stale[connections=9].hgrm"), "from an earlier run").unwrap();
    let out = run(&["run", path.to_str().unwrap(), "--out", dir.path().join("out").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        !run_dir.join("stale[connections=9].hgrm").exists(),
        "an earlier run's file is left beside the new reports"
    );
    assert!(run_dir.join("main.hgrm").is_file());
    let previous = dir.path().join("out").join("e2e-own.previous");
    assert!(previous.join("stale[connections=9].hgrm").is_file(), "the earlier files are moved aside, not lost");
    assert!(text(&out.stderr).contains("e2e-own.previous"), "the run says where they went:\n{}", text(&out.stderr));
}

#[test]
fn an_output_directory_under_a_file_is_invalid_input() {
    let (dir, path) = spec(PASSING);
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let out = run(&["run", path.to_str().unwrap(), "--out", file.join("out").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("output directory"), "{}", text(&out.stderr));
}

#[test]
fn secrets_never_reach_an_artifact_or_a_printout() {
    const CANARIES: [&str; 4] = ["canaryENVtoken81", "canarySECRETvar72", "canaryHEADERx63", "canaryFLAG54"];
    let (dir, path) = spec(
        r#"
version: 1
name: e2e-secrets
vars:
  token: ""
secrets:
  headers: [X-Internal]
target: { builtin: plaintext }
scenarios:
  main:
    request:
      path: "/plaintext?t={{ token }}"
      headers:
        Authorization: "Bearer {{ env.LG_CANARY }}"
        X-Internal: canaryHEADERx63
    load: { closed: { connections: 1, requests: 20 } }
    slo: [errors == 0]
"#,
    );
    let with_env = |args: &[&str]| {
        let out = command(args).env("LG_CANARY", CANARIES[0]).output().unwrap();
        format!("{}{}", text(&out.stdout), text(&out.stderr))
    };
    let spec_path = path.to_str().unwrap();
    let out_dir = dir.path().join("out");
    let secret = format!("token={}", CANARIES[1]);
    let mut printed = String::new();
    printed += &with_env(&["run", spec_path, "-v", "--secret", &secret, "--out", out_dir.to_str().unwrap()]);
    printed += &with_env(&["plan", spec_path, "--json", "--secret", &secret]);
    printed += &with_env(&["plan", spec_path, "--secret", &secret]);
    printed += &with_env(&["validate", spec_path, "--secret", &secret]);
    printed +=
        &with_env(&["run", "--url", "http://127.0.0.1:9/", "-H", "Authorization: Bearer canaryFLAG54", "--print-spec"]);
    for canary in CANARIES {
        assert!(!printed.contains(canary), "{canary} was printed:\n{printed}");
    }
    assert!(printed.contains("***"), "the printouts show where a secret was:\n{printed}");
    let files = common::files_under(&out_dir);
    assert!(files.iter().any(|f| f.ends_with("results.json")), "{files:?}");
    for file in files {
        let content = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
        for canary in CANARIES {
            assert!(!content.contains(canary), "{canary} reached {}", file.display());
        }
    }
    let r = results(dir.path(), "e2e-secrets");
    assert_eq!(r["spec"]["vars"]["token"], "***");
    assert_eq!(r["outcome"]["status"], "passed");
}

/// An A/B spec: the built-in delay server at `a` as the target (the baseline) and at `b` as the candidate.
fn ab_spec(name: &str, a: &str, b: &str, repeat: u32) -> (tempfile::TempDir, PathBuf) {
    spec(&format!(
        r#"
version: 1
name: {name}
target: {{ builtin: {{ kind: delay, delay: {a} }} }}
candidate: {{ builtin: {{ kind: delay, delay: {b} }} }}
gating: {{ repeat: {repeat} }}
scenarios:
  main:
    request: {{ path: / }}
    load: {{ closed: {{ connections: 2, duration: 400ms }} }}
    slo: ["p50 <= baseline * 1.10", errors == 0]
"#
    ))
}

#[test]
fn ab_with_a_slower_candidate_fails_with_the_interval_and_both_sides() {
    let (dir, path) = ab_spec("e2e-ab-slower", "4ms", "8ms", 6);
    let out = run(&["run", path.to_str().unwrap(), "--out", dir.path().join("out").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}{}", text(&out.stdout), text(&out.stderr));
    let r = results(dir.path(), "e2e-ab-slower");
    let s = &r["scenarios"][0];
    assert_eq!(s["repetitions"].as_array().unwrap().len(), 6);
    assert_eq!(s["ab_baseline"]["repetitions"].as_array().unwrap().len(), 6, "the baseline side is kept");
    let v = &s["verdicts"][0]["statistics"];
    assert_eq!(v["status"], "fail", "{v}");
    assert!(v["method"].as_str().unwrap().contains("paired"), "{v}");
    assert!(v["lower"].as_f64().unwrap() > 1.10, "the whole interval is above the limit: {v}");
    let md = std::fs::read_to_string(dir.path().join("out/e2e-ab-slower/report.md")).unwrap();
    assert!(md.contains("A/B comparison") && md.contains("B / A"), "{md}");
    assert_eq!(r["gating"]["order"], "abba");
}

/// `gating: { detect, budget }`: the plan is shown after the pilot, before the rounds it plans; a budget too
/// small for any verdict ends INCONCLUSIVE for `budget` (a value of its own in results.json), never past it.
#[test]
fn a_budgeted_ab_run_shows_its_plan_up_front_and_ends_inconclusive_for_budget() {
    let (dir, path) = spec(
        r#"
version: 1
name: e2e-budget
target: { builtin: { kind: delay, delay: 2ms } }
candidate: { builtin: { kind: delay, delay: 2ms } }
gating: { detect: 10%, budget: 4s, repeat: 3 }
scenarios:
  main:
    request: { path: / }
    load: { closed: { connections: 2, duration: 400ms } }
    slo: ["p99 <= baseline * 1.05"]
"#,
    );
    let out = run(&["run", path.to_str().unwrap(), "--out", dir.path().join("out").to_str().unwrap()]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(5), "{stdout}{stderr}");
    let all = format!("{stdout}{stderr}");
    let plan_at = all.find("main plan: to tell 10% on p99 here needs about").unwrap_or_else(|| panic!("{all}"));
    assert!(all[plan_at..].contains("the budget (4 s) allows "), "{all}");
    let pilot_end = all.find("main round 3").unwrap_or_else(|| panic!("{all}"));
    assert!(pilot_end < plan_at, "the plan follows the pilot: {all}");
    if let Some(fourth) = all.find("main round 4") {
        assert!(plan_at < fourth, "the plan comes before the rounds it plans: {all}");
    }
    let r = results(dir.path(), "e2e-budget");
    let s = &r["scenarios"][0];
    // 4 s of load on two sides: at most five rounds of 400 ms (fewer when the pilot's rounds measured longer
    // than planned), every round the plan allowed.
    let rounds = s["repetitions"].as_array().unwrap().len();
    assert!((3..=5).contains(&rounds), "{s}");
    assert_eq!(s["power_plan"]["rounds_allowed"], rounds, "{s}");
    let v = &s["verdicts"][0]["statistics"];
    assert_eq!(v["status"], "inconclusive", "{v}");
    assert_eq!(v["cause"], "budget", "{v}");
    assert_eq!(v["reason"], "budget", "{v}");
    assert_eq!(v["detect"], 0.1, "{v}");
    // The change this run could tell, in the asked sense: 1.05 x (1 + the interval's half-width) - 1.
    if let (Some(m), Some(t)) = (v["smallest_detectable"].as_f64(), v["tellable"].as_f64()) {
        assert!((t - (1.05 * (1.0 + m) - 1.0)).abs() < 1e-9, "{v}");
    }
    assert_eq!(r["gating"]["budget_seconds"], 4.0);
    assert_eq!(r["gating"]["detect"], 0.1);
    let md = std::fs::read_to_string(dir.path().join("out/e2e-budget/report.md")).unwrap();
    assert!(md.contains("the plan for main: to tell 10% on p99"), "{md}");
    assert!(md.contains("(asked: 10.0%)") || md.contains("budget"), "{md}");
}

#[test]
fn a_planned_gate_is_refused_with_shards_before_any_load() {
    let (dir, path) = spec(
        r#"
version: 1
name: e2e-budget-shards
target: { base_url: "http://127.0.0.1:9" }
candidate: { base_url: "http://127.0.0.1:9" }
gating: { detect: 10%, budget: 1m }
scenarios:
  main:
    request: { path: / }
    load: { closed: { connections: 2, duration: 1s } }
    slo: ["p99 <= baseline * 1.05"]
"#,
    );
    let p = path.to_str().unwrap();
    let out_dir = dir.path().join("out");
    let o = out_dir.to_str().unwrap();
    for args in [
        vec!["run", p, "--shards", "2", "--out", o],
        vec!["run", p, "--shard", "1/2", "--out", o],
        vec!["k8s", p, "--shards", "2", "--image", "registry/loadgate:1"],
    ] {
        let done = run(&args);
        let stderr = text(&done.stderr);
        assert_eq!(done.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("`gating.detect` plans the rounds from what one generator measures"), "{stderr}");
    }
    assert!(!out_dir.join("e2e-budget-shards").exists(), "nothing was run");
}

#[test]
fn ab_with_equal_sides_never_fails() {
    let (dir, path) = ab_spec("e2e-ab-equal", "4ms", "4ms", 6);
    let out = run(&["run", path.to_str().unwrap(), "--out", dir.path().join("out").to_str().unwrap()]);
    assert!(matches!(out.status.code(), Some(0) | Some(5)), "{}{}", text(&out.stdout), text(&out.stderr));
    let r = results(dir.path(), "e2e-ab-equal");
    assert_ne!(r["scenarios"][0]["verdicts"][0]["statistics"]["status"], "fail");
}

#[test]
fn too_few_repetitions_are_inconclusive_exit_5_and_a_skipped_junit_case() {
    let (dir, path) = spec(
        "version: 1\nname: e2e-inconclusive\ntarget: { builtin: plaintext }\nscenarios:\n  main:\n    request: { path: / }\n    load: { closed: { connections: 1, requests: 200 } }\n    slo: [p99 < 10s]\n",
    );
    let out = run(&["run", path.to_str().unwrap(), "--repeat", "2", "--out", dir.path().join("out").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(5), "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stdout).contains("INCONCLUSIVE"), "{}", text(&out.stdout));
    let r = results(dir.path(), "e2e-inconclusive");
    assert_eq!(r["outcome"]["status"], "inconclusive");
    assert_eq!(r["scenarios"][0]["repetitions"].as_array().unwrap().len(), 2);
    let junit = std::fs::read_to_string(dir.path().join("out/e2e-inconclusive/junit.xml")).unwrap();
    let doc = roxmltree::Document::parse(&junit).unwrap();
    let case = doc.descendants().find(|n| n.has_tag_name("testcase")).unwrap();
    let skipped = case.children().find(|n| n.has_tag_name("skipped")).expect("INCONCLUSIVE is a skipped testcase");
    let message = skipped.attribute("message").unwrap();
    assert!(message.contains("INCONCLUSIVE"));
    // Two repetitions cannot make a 90% interval (the default confidence): the verdict says so, and that the widest interval it has
    // (from the lower to the higher repetition) clears the limit, rather than that an interval straddles it.
    let all = format!("{message}\n{}", text(&out.stdout));
    assert!(all.contains("2 repetitions are too few for a 90% interval"), "{all}");
    assert!(all.contains("clears the limit") && !all.contains("straddles"), "{all}");
    // The same run with `--on-inconclusive pass` exits 0.
    let out = run(&[
        "run",
        path.to_str().unwrap(),
        "--repeat",
        "2",
        "--on-inconclusive",
        "pass",
        "--out",
        dir.path().join("out2").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn a_saved_baseline_gates_a_later_run_over_repetitions() {
    let (dir, path) = spec(
        "version: 1\nname: e2e-baseline\ntarget: { builtin: { kind: delay, delay: 3ms } }\nscenarios:\n  main:\n    request: { path: / }\n    load: { closed: { connections: 2, duration: 300ms } }\n    slo: [\"p50 <= baseline * 1.5\"]\n",
    );
    let baseline = dir.path().join("baseline.json");
    let out_dir = dir.path().join("out");
    let first = run(&[
        "run",
        path.to_str().unwrap(),
        "--repeat",
        "5",
        "--save-baseline",
        baseline.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(baseline.is_file(), "{}", text(&first.stderr));
    let b: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&baseline).unwrap()).unwrap();
    assert_eq!(b["scenarios"][0]["repetitions"].as_array().unwrap().len(), 5, "the baseline keeps every repetition");
    let second = run(&[
        "run",
        path.to_str().unwrap(),
        "--repeat",
        "5",
        "--baseline",
        baseline.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(matches!(second.status.code(), Some(0) | Some(5)), "{}{}", text(&second.stdout), text(&second.stderr));
    let r = results(dir.path(), "e2e-baseline");
    let st = &r["scenarios"][0]["verdicts"][0]["statistics"];
    assert!(st["method"].as_str().unwrap().contains("Mann-Whitney"), "unpaired against a stored baseline: {st}");
    assert_ne!(st["status"], "fail");
}

#[test]
fn data_files_outside_the_spec_need_the_flag_the_error_names() {
    let outside = tempfile::tempdir().unwrap();
    let keys = outside.path().join("keys.txt");
    std::fs::write(&keys, "a\nb\n").unwrap();
    let (_dir, path) = spec(&format!(
        "version: 1\nname: e2e-data\ntarget: {{ builtin: plaintext }}\nscenarios:\n  main:\n    request: {{ path: \"/{{{{ pick_line('{}') }}}}\" }}\n    load: {{ closed: {{ connections: 1, requests: 1 }} }}\n",
        keys.display()
    ));
    let refused = run(&["validate", path.to_str().unwrap()]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(text(&refused.stderr).contains("--allow-data-outside-spec-dir"), "{}", text(&refused.stderr));
    let allowed = run(&["validate", path.to_str().unwrap(), "--allow-data-outside-spec-dir"]);
    assert_eq!(allowed.status.code(), Some(0), "{}", text(&allowed.stderr));
    let too_small =
        run(&["validate", path.to_str().unwrap(), "--allow-data-outside-spec-dir", "--max-data-file-bytes", "1"]);
    assert_eq!(too_small.status.code(), Some(2), "{}", text(&too_small.stderr));
}

/// Issue 11's first "done when": a 5-repetition run of the quickstart shows the spread per metric and a verdict
/// with its interval per check in the terminal, in report.md and in junit.xml, and results.json keeps every
/// repetition and validates against its schema. The verdicts themselves depend on the machine (PASS here, but a
/// loaded runner may make a check INCONCLUSIVE), so only their shape is asserted.
#[test]
fn five_repetitions_of_the_quickstart_show_spread_and_intervals_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let out = run(&[
        "run",
        "specs/quickstart.yaml",
        "--repeat",
        "5",
        "--set",
        "scale=0.1",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    // 4 too: on a loaded machine the 0.3 s open phase may fall short of its rate, which invalidates the run
    // without changing how its checks are shown.
    assert!(matches!(out.status.code(), Some(0 | 1 | 4 | 5)), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("median of 5 repetitions, order-statistic interval"), "{stdout}");
    assert!(stdout.contains("p99 was ") && stdout.contains(" ["), "the terminal shows the interval:\n{stdout}");

    let r = results(dir.path(), "quickstart");
    for s in r["scenarios"].as_array().unwrap().iter().filter(|s| s["name"] != "warmup") {
        assert_eq!(s["repetitions"].as_array().unwrap().len(), 5, "{}", s["name"]);
        let p99 = s["verdicts"].as_array().unwrap().iter().find(|v| v["slo"] == "p99 < 50ms").expect("a p99 check");
        let st = &p99["statistics"];
        assert!(matches!(st["status"].as_str(), Some("pass" | "fail" | "inconclusive")), "{st}");
        assert!(st["lower"].as_f64().unwrap() <= st["estimate"].as_f64().unwrap(), "{st}");
        assert!(st["estimate"].as_f64().unwrap() <= st["upper"].as_f64().unwrap(), "{st}");
        assert_eq!(st["repetitions"], 5);
    }
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("schemas/results.schema.json")).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&r).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");

    let md = std::fs::read_to_string(out_dir.join("quickstart/report.md")).unwrap();
    assert!(md.contains("### Spread over repetitions"), "{md}");
    assert!(md.contains("| metric | median | min | max | CV |"), "{md}");
    assert!(md.contains("median of 5 repetitions, order-statistic interval"), "{md}");

    let junit = std::fs::read_to_string(out_dir.join("quickstart/junit.xml")).unwrap();
    let doc = roxmltree::Document::parse(&junit).unwrap();
    let case = doc
        .descendants()
        .find(|n| n.has_tag_name("testcase") && n.attribute("name") == Some("closed: p99 < 50ms"))
        .expect("a testcase per check");
    let body: String = case.descendants().filter_map(|n| n.text()).collect();
    assert!(body.contains("median of 5 repetitions"), "the testcase carries the check's statistics:\n{junit}");
}

/// Starts `loadgate serve` with `args` and returns it with its base URL; kill it when done.
fn serve(args: &[&str]) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut child = command(&[&["serve"], args].concat())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start loadgate serve");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).expect("listening line");
    let url = line.trim().strip_prefix("listening on ").unwrap_or_else(|| panic!("{line}")).to_owned();
    (child, url)
}

#[test]
fn a_url_last_runs_like_wrk_and_prints_the_latency_distribution_and_json_on_stdout() {
    let (mut server, url) = serve(&["--kind", "plaintext"]);
    let dir = tempfile::tempdir().unwrap();
    let out = command(&["run", "-c", "2", "-d", "500ms", "--latency", "--json", &format!("{url}/x")])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    // stdout is results.json and nothing else; the summaries went to stderr.
    let r: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert!(r["scenarios"][0]["requests"]["completed"].as_u64().unwrap() > 0);
    assert!(stderr.contains(&format!("URL {url}/x (a one-scenario run")), "it says it took a URL:\n{stderr}");
    // One phase, and no pacing named: only open loads are paced.
    assert!(stderr.contains("(1 phase, plan ") && !stderr.contains("pacing"), "{stderr}");
    // wrk's block: four rows, each a percentile and a time with its unit.
    let block: Vec<&str> = stderr.lines().skip_while(|l| *l != "  Latency Distribution").take(5).collect();
    assert_eq!(block.len(), 5, "{stderr}");
    for (line, p) in block[1..].iter().zip(["50%", "75%", "90%", "99%"]) {
        assert!(line.trim_start().starts_with(p), "{line}");
        assert!(line.ends_with("us") || line.ends_with("ms") || line.ends_with("s "), "{line}");
    }
    // --json keeps the reports on disk as well.
    assert!(dir.path().join("loadgate-out").is_dir());

    // A rate: wrk2's output, with -U its uncorrected spectrum; `--out -` leaves no files.
    let out = command(&["run", "-R", "200", "-c", "2", "-d", "1s", "--latency", "-U", "--out", "-", &url])
        .current_dir(dir.path())
        .env("LOADGATE_OUT", "unused")
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(matches!(out.status.code(), Some(0 | 4)), "{stdout}\n{stderr}");
    let r: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(r["scenarios"][0]["load"]["model"], "constant", "{}", r["scenarios"][0]["load"]);
    // An open load: the opening line names how it is paced.
    assert!(stderr.contains("(1 phase, pacing default, plan "), "{stderr}");
    for heading in [
        "  Latency Distribution (HdrHistogram - Recorded Latency)",
        "  Latency Distribution (HdrHistogram - Uncorrected Latency (measured without taking delayed starts into account))",
        "  Detailed Percentile spectrum:",
        "     Value   Percentile   TotalCount 1/(1-Percentile)",
        "#[Mean    =",
        "100.000%",
    ] {
        assert!(stderr.contains(heading), "no `{heading}` in\n{stderr}");
    }
    assert!(stderr.contains("no files were kept (--out -)"), "{stderr}");
    assert!(!dir.path().join("unused").exists() && !dir.path().join("-").exists(), "--out - writes no directory");
    let _ = server.kill();
    let _ = server.wait();
}

#[test]
fn a_failed_slo_on_github_actions_is_an_error_annotation() {
    let (dir, path) = spec(
        "version: 1\nname: e2e-annotate\ntarget: { builtin: plaintext }\nscenarios:\n  main:\n    request: { path: / }\n    load: { closed: { connections: 1, duration: 300ms } }\n    slo: [\"p50 < 1us\", \"errors == 0\"]\n",
    );
    let out_dir = dir.path().join("out");
    let args = ["run", path.to_str().unwrap(), "--out", out_dir.to_str().unwrap()];
    let out = command(&args).env("GITHUB_ACTIONS", "true").output().unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let errors: Vec<&str> = stdout.lines().filter(|l| l.starts_with("::error ")).collect();
    assert_eq!(errors.len(), 1, "one failed SLO, one annotation:\n{stdout}");
    let file = path.display().to_string();
    assert!(
        errors[0].starts_with(&format!(
            "::error file={file},title=loadgate e2e-annotate%3A main%3A SLO p50 < 1us failed::p50 was "
        )),
        "{}",
        errors[0]
    );
    // Off when asked, and off outside GitHub Actions.
    let out = command(&args).env("GITHUB_ACTIONS", "true").env("LOADGATE_ANNOTATIONS", "never").output().unwrap();
    assert!(!text(&out.stdout).contains("::error"), "{}", text(&out.stdout));
    let out = command(&args).output().unwrap();
    assert!(!text(&out.stdout).contains("::error"));
}

#[test]
fn users_at_once_are_counted_at_their_peak_not_sampled() {
    let (dir, path) = spec(
        "version: 1\nname: e2e-users\ntarget: { builtin: { kind: delay, delay: 300ms } }\nscenarios:\n  burst:\n    request: { path: / }\n    load: { users: { at_once: 350 } }\n",
    );
    let out = run(&["run", path.to_str().unwrap(), "--out", dir.path().join("out").to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert!(matches!(out.status.code(), Some(0 | 4)), "{stdout}\n{}", text(&out.stderr));
    let r = results(dir.path(), "e2e-users");
    let s = &r["scenarios"][0];
    assert_eq!(s["load"]["users_started"], 350, "{}", s["load"]);
    assert_eq!(s["load"]["users_peak_active"], 350, "all 350 users were active at once: {}", s["load"]);
    let md = std::fs::read_to_string(dir.path().join("out/e2e-users/report.md")).unwrap();
    assert!(md.contains("350 active at peak"), "{md}");
}

#[test]
fn a_server_that_closes_every_connection_at_once_shows_failed_connections() {
    let port = free_port();
    let script = format!(
        "import socket\ns = socket.socket()\ns.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\ns.bind(('127.0.0.1', {port}))\ns.listen(128)\nwhile True:\n    c, _ = s.accept()\n    c.close()\n"
    );
    let (dir, path) = python_target_spec(
        "e2e-closing",
        port,
        &script,
        "\n  main:\n    request: { path: / }\n    load: { closed: { connections: 2, duration: 1s } }\n",
    );
    let out = run(&["run", path.to_str().unwrap(), "--out", dir.path().join("out").to_str().unwrap()]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.code() != Some(0) || stdout.contains("failed"), "{stdout}\n{stderr}");
    let r = results(dir.path(), "e2e-closing");
    let c = &r["scenarios"][0]["connections"];
    assert!(c["failed"].as_u64().unwrap() > 0, "connections closed before any answer are failed: {c}");
    assert_eq!(r["scenarios"][0]["requests"]["completed"], 0);
    assert!(stdout.contains(" failed, ") && !stdout.contains(", 0 failed, "), "the terminal shows them:\n{stdout}");
}

#[test]
fn pick_csv_sends_quoted_fields_whole() {
    let (port, seen) = common::recording_server();
    let (dir, path) = spec(&format!(
        "version: 1\nname: e2e-csv\ntarget: {{ base_url: \"http://127.0.0.1:{port}\" }}\nscenarios:\n  main:\n    request: {{ method: POST, path: /u, body: \"{{{{ pick_csv('users.csv', 'city') }}}}\" }}\n    load: {{ closed: {{ connections: 1, requests: 60 }} }}\n"
    ));
    std::fs::write(
        dir.path().join("users.csv"),
        "id,name,city\n1,\"Smith, John\",Oslo\n2,Ann,\"Bergen, Norway\"\n3,\"Lee\",\"two\nlines\"\n",
    )
    .unwrap();
    let out = run(&["run", path.to_str().unwrap(), "--out", dir.path().join("out").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let bodies: Vec<String> =
        seen.lock().unwrap().iter().map(|l| l.strip_prefix("POST /u ").unwrap_or(l).to_owned()).collect();
    assert_eq!(bodies.len(), 60);
    for b in &bodies {
        assert!(["Oslo", "Bergen, Norway", "two\nlines"].contains(&b.as_str()), "{b:?}");
    }
    assert!(bodies.iter().any(|b| b == "Bergen, Norway"), "the quoted field with a comma is sent whole");
}

#[test]
fn terminal_report_and_results_show_the_same_resources_and_junit_times_add_up() {
    let (dir, path) = spec(
        "version: 1\nname: e2e-resources\ntarget: { builtin: plaintext }\nscenarios:\n  first:\n    request: { path: / }\n    load: { closed: { connections: 2, duration: 2500ms } }\n    slo: [p99 < 10s, errors == 0, error_rate < 50%]\n    cooldown: 1500ms\n  second:\n    request: { path: / }\n    load: { closed: { connections: 2, duration: 2500ms } }\n",
    );
    let out_dir = dir.path().join("out");
    let out = run(&["run", path.to_str().unwrap(), "--out", out_dir.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", text(&out.stderr));
    let r = results(dir.path(), "e2e-resources");
    let md = std::fs::read_to_string(out_dir.join("e2e-resources/report.md")).unwrap();
    let pct = |v: &serde_json::Value| format!("{:.0}%", v.as_f64().unwrap() * 100.0);
    for s in r["scenarios"].as_array().unwrap() {
        let name = s["name"].as_str().unwrap();
        let res = &s["resources"];
        assert!(res["samples"].as_u64().unwrap() >= 1, "{name}: {res}");
        let (mean, peak) = (pct(&res["target_cpu_mean"]), pct(&res["target_cpu_peak"]));
        let terminal = format!("target CPU {mean} mean, {peak} peak");
        let summary = stdout.split(&format!("{name}: ")).nth(1).unwrap_or_else(|| panic!("{stdout}"));
        let line = summary.lines().find(|l| l.trim_start().starts_with("Resources:")).expect("a resources line");
        assert!(line.contains(&terminal), "{name}: terminal `{line}` vs results.json {res}");
        let row = md.lines().find(|l| l.starts_with(&format!("| {name} |")) && l.contains(&mean) && l.contains(&peak));
        assert!(row.is_some(), "{name}: report.md shows {mean} mean and {peak} peak:\n{md}");
    }
    // JUnit: an instance's time once, on its first testcase; the testcases add up to the time the load ran.
    let junit = std::fs::read_to_string(out_dir.join("e2e-resources/junit.xml")).unwrap();
    let doc = roxmltree::Document::parse(&junit).unwrap();
    let times: Vec<(String, f64)> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .map(|n| (n.attribute("name").unwrap().to_owned(), n.attribute("time").unwrap().parse().unwrap()))
        .collect();
    let first: Vec<&(String, f64)> = times.iter().filter(|(n, _)| n.starts_with("first: ")).collect();
    assert_eq!(first.len(), 3);
    assert!(first[0].1 > 2.0 && first[1].1 == 0.0 && first[2].1 == 0.0, "{first:?}");
    let total: f64 = times.iter().map(|(_, t)| t).sum();
    let ran: f64 = r["scenarios"].as_array().unwrap().iter().map(|s| s["duration"].as_f64().unwrap()).sum();
    assert!((total - ran).abs() < 0.01, "testcases add up to {total}s, the load ran {ran}s");
}

/// `--pin-within-affinity` (what `loadgate k8s` puts in a pod's args): the spec's pinned CPUs are mapped onto
/// the CPUs this process may use, whatever their ids, and results.json records the mapping; fewer allowed CPUs
/// than pinned is refused with exit 3.
#[test]
fn pinning_within_affinity_maps_the_specs_cpus_onto_the_allowed_ones() {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let allowed = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap().trim().to_owned();
    let first: u32 = allowed.split([',', '-']).next().unwrap().parse().unwrap();
    // CPU 4000 exists on no machine this runs on: without the flag, `on_mismatch: fail` refuses it.
    let (dir, path) = spec(
        "version: 1\nname: in-pod\nhardware: { generator: { cpus: \"4000\" }, on_mismatch: fail }\ntarget: { builtin: plaintext }\nscenarios:\n  s:\n    request: { path: /plaintext }\n    load: { closed: { connections: 1, requests: 50 } }\n",
    );
    let out_dir = dir.path().join("out");
    let (p, o) = (path.to_str().unwrap(), out_dir.to_str().unwrap());
    let out = run(&["run", p, "--out", o, "--quiet"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));

    let out = run(&["run", p, "--out", o, "--quiet", "--pin-within-affinity"]);
    assert!(matches!(out.status.code(), Some(0 | 4)), "{}", text(&out.stderr));
    let r = results(dir.path(), "in-pod");
    let pinning = &r["pinning"];
    assert_eq!(pinning["generator_requested"], "4000");
    assert_eq!(pinning["generator_applied"], first.to_string());
    assert_eq!(pinning["workers"], serde_json::json!([first]));
    assert_eq!(pinning["cpu_map"], serde_json::json!([{ "spec": 4000, "cpu": first }]));
    assert!(pinning["warnings"][0].as_str().unwrap().contains(&format!("4000->{first}")), "{pinning}");

    // The environment variable does the same; more CPUs pinned than allowed is refused.
    std::fs::write(&path, std::fs::read_to_string(&path).unwrap().replace("\"4000\"", "\"0-4095\"")).unwrap();
    let out = command(&["run", p, "--out", o, "--quiet"]).env("LOADGATE_PIN_WITHIN_AFFINITY", "1").output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--pin-within-affinity: the spec pins 4096 CPUs 0-4095"),
        "{}",
        text(&out.stderr)
    );

    // A server loadgate does not start is never pinned: its CPUs are not mapped and take none of the process's.
    use std::io::BufRead as _;
    let mut server = command(&["serve", "--kind", "plaintext"]).stdout(Stdio::piped()).spawn().expect("serve");
    let mut line = String::new();
    std::io::BufReader::new(server.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_owned();
    std::fs::write(
        &path,
        format!("version: 1\nname: in-pod\nhardware: {{ generator: {{ cpus: \"4000\" }}, target: {{ cpus: \"0-4095\" }}, on_mismatch: fail }}\ntarget: {{ base_url: \"{url}\" }}\nscenarios:\n  s:\n    request: {{ path: /plaintext }}\n    load: {{ closed: {{ connections: 1, requests: 50 }} }}\n"),
    )
    .unwrap();
    let out = run(&["run", p, "--out", o, "--quiet", "--pin-within-affinity"]);
    let _ = server.kill();
    let _ = server.wait();
    assert!(matches!(out.status.code(), Some(0 | 4)), "{}", text(&out.stderr));
    let pinning = &results(dir.path(), "in-pod")["pinning"];
    assert_eq!(pinning["cpu_map"], serde_json::json!([{ "spec": 4000, "cpu": first }]));
    assert_eq!(pinning["target_requested"], "0-4095");
}

#[test]
fn an_interrupted_run_is_a_junit_error_and_an_error_annotation_on_github_actions() {
    let (dir, path) = spec(
        r#"
version: 1
name: e2e-interrupted
target: { builtin: plaintext }
scenarios:
  first:
    request: { path: / }
    load: { closed: { connections: 2, duration: 30s } }
    slo: [p99 < 10s]
  second:
    request: { path: / }
    load: { closed: { connections: 2, duration: 300ms } }
    slo: [p99 < 10s]
"#,
    );
    let out_dir = dir.path().join("out");
    let child = command(&["run", path.to_str().unwrap(), "--out", out_dir.to_str().unwrap()])
        .env("GITHUB_ACTIONS", "true")
        .env_remove("LOADGATE_ANNOTATIONS")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the target is up and load is flowing, then interrupt the first scenario.
    std::thread::sleep(Duration::from_millis(1500));
    send_signal(child.id(), SIGINT);
    let out = child.wait_with_output().unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}{}", text(&out.stderr));
    let run_dir = out_dir.join("e2e-interrupted");

    let junit = std::fs::read_to_string(run_dir.join("junit.xml")).unwrap();
    let doc = roxmltree::Document::parse(&junit).unwrap();
    let suite = doc.descendants().find(|n| n.has_tag_name("testsuite")).unwrap();
    assert_eq!(suite.attribute("errors"), Some("1"), "{junit}");
    let case = |name: &str| {
        doc.descendants()
            .find(|n| n.has_tag_name("testcase") && n.attribute("name") == Some(name))
            .unwrap_or_else(|| panic!("no testcase {name}:\n{junit}"))
    };
    let error = case("e2e-interrupted: run").children().find(|n| n.has_tag_name("error")).expect("an error testcase");
    assert_eq!(error.attribute("type"), Some("incomplete"));
    assert!(error.attribute("message").unwrap().contains("interrupted"), "{junit}");
    assert!(case("second: not run").children().any(|n| n.has_tag_name("skipped")), "{junit}");

    let errors: Vec<&str> = stdout.lines().filter(|l| l.starts_with("::error ")).collect();
    assert_eq!(errors.len(), 1, "{stdout}");
    assert!(
        errors[0].contains("title=loadgate e2e-interrupted%3A the run did not finish (interrupted)::"),
        "{}",
        errors[0]
    );

    let md = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
    assert!(md.starts_with("## ⚠️ e2e-interrupted: incomplete\n\nThe run is incomplete:"), "{md}");
}

/// A server that accepts and closes every connection, started by loadgate on `port`.
fn closing_server_script(port: u16) -> String {
    format!(
        "import socket\ns = socket.socket()\ns.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\ns.bind(('127.0.0.1', {port}))\ns.listen(128)\nwhile True:\n    c, _ = s.accept()\n    c.close()\n"
    )
}

/// A candidate that completes nothing fails a relative throughput gate (it used to pass as "not evaluated": a
/// ratio needs values above zero), in every report.
#[test]
fn an_ab_candidate_that_completes_nothing_fails_the_relative_gate() {
    let port = free_port();
    let script = closing_server_script(port);
    let (dir, path) = spec(&format!(
        "version: 1\nname: e2e-dead-candidate\ntarget: {{ builtin: plaintext }}\ncandidate:\n  base_url: http://127.0.0.1:{port}\n  start:\n    command: [python3, -c, {script:?}]\n    ready: {{ tcp: true, timeout: 10s }}\ngating: {{ repeat: 5 }}\nscenarios:\n  api:\n    request: {{ path: / }}\n    load: {{ closed: {{ connections: 2, duration: 200ms }} }}\n    slo: [\"throughput >= baseline * 0.9\"]\n"
    ));
    let out = run(&["run", path.to_str().unwrap(), "--out", dir.path().join("out").to_str().unwrap()]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("completed no request"), "{stdout}");
    let r = results(dir.path(), "e2e-dead-candidate");
    let v = &r["scenarios"][0]["verdicts"][0];
    assert_eq!(v["passed"], false, "{v}");
    assert!(!v["note"].as_str().unwrap().contains("not evaluated"), "{v}");
    let md = std::fs::read_to_string(dir.path().join("out/e2e-dead-candidate/report.md")).unwrap();
    assert!(!md.contains("All 0 gated SLOs held"), "{md}");
    let junit = std::fs::read_to_string(dir.path().join("out/e2e-dead-candidate/junit.xml")).unwrap();
    assert!(junit.contains("<failure"), "{junit}");
}

/// The secrets that reached files through other routes: a started target's own logs (its command line, the
/// request lines it prints), a query string (percent-encoded), report.html (HTML-escaped, `/` as `&#x2f;`) and
/// the terminal's "starting the target" line.
#[test]
fn secrets_stay_out_of_target_logs_encoded_queries_and_escaped_html() {
    const SECRET: &str = "Zq9/Xy+PwK&L";
    let port = free_port();
    let (dir, path) = spec(&format!(
        r#"
version: 1
name: e2e-secrets-routes
vars:
  token: ""
description: "top {{{{ token }}}}"
target:
  base_url: http://127.0.0.1:{port}
  start:
    command: [sh, -c, "echo 'started with {{{{ token }}}}' >&2; exec python3 -m http.server {port} --bind 127.0.0.1"]
    ready: {{ tcp: true, timeout: 10s }}
scenarios:
  main:
    description: "scenario {{{{ token }}}}"
    request:
      path: /
      query: {{ k: "{{{{ token }}}}" }}
    load: {{ closed: {{ connections: 1, requests: 5 }} }}
"#
    ));
    let out_dir = dir.path().join("out");
    let secret = format!("token={SECRET}");
    let out = run(&["run", path.to_str().unwrap(), "-v", "--secret", &secret, "--out", out_dir.to_str().unwrap()]);
    let printed = format!("{}{}", text(&out.stdout), text(&out.stderr));
    let encoded = "Zq9%2FXy%2BPwK%26L";
    let html = "Zq9&#x2f;Xy+PwK&amp;L";
    for form in [SECRET, encoded, html] {
        assert!(!printed.contains(form), "{form} was printed:\n{printed}");
    }
    let files = common::files_under(&out_dir);
    assert!(files.iter().any(|f| f.to_string_lossy().ends_with(".stderr.log")), "{files:?}");
    for file in files {
        let content = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
        for form in [SECRET, encoded, html] {
            assert!(!content.contains(form), "{form} reached {}:\n{content}", file.display());
        }
    }
    let log = std::fs::read_to_string(out_dir.join("e2e-secrets-routes/target.stderr.log")).unwrap();
    assert!(log.contains("started with ***"), "the log is kept, the secret replaced:\n{log}");
}

#[test]
fn on_inconclusive_fail_is_a_junit_failure_and_pass_an_honest_headline() {
    let (dir, path) = spec(
        "version: 1\nname: e2e-counted\ntarget: { builtin: plaintext }\nscenarios:\n  main:\n    request: { path: / }\n    load: { closed: { connections: 1, requests: 200 } }\n    slo: [p99 < 10s]\n",
    );
    // Two repetitions are too few for an interval: the check is INCONCLUSIVE whatever the numbers.
    let run_with = |policy: &str| {
        let out_dir = dir.path().join(policy);
        let out = command(&[
            "run",
            path.to_str().unwrap(),
            "--repeat",
            "2",
            "--on-inconclusive",
            policy,
            "--out",
            out_dir.to_str().unwrap(),
        ])
        .env("GITHUB_ACTIONS", "true")
        .env_remove("LOADGATE_ANNOTATIONS")
        .output()
        .unwrap();
        let read = |file: &str| std::fs::read_to_string(out_dir.join("e2e-counted").join(file)).unwrap();
        (out, read("junit.xml"), read("report.md"))
    };

    let (out, junit, md) = run_with("fail");
    assert_eq!(out.status.code(), Some(1), "{}{}", text(&out.stdout), text(&out.stderr));
    let doc = roxmltree::Document::parse(&junit).unwrap();
    let suite = doc.descendants().find(|n| n.has_tag_name("testsuite")).unwrap();
    assert_eq!(suite.attribute("failures"), Some("1"), "{junit}");
    let failure = doc.descendants().find(|n| n.has_tag_name("failure")).unwrap();
    assert_eq!(failure.attribute("type"), Some("inconclusive"));
    assert!(
        failure.attribute("message").unwrap().contains("counted as a failure by --on-inconclusive fail"),
        "{junit}"
    );
    assert!(
        text(&out.stdout).lines().any(|l| l.starts_with("::error ") && l.contains("INCONCLUSIVE")),
        "{}",
        text(&out.stdout)
    );
    assert!(md.contains("1 of 1 gated SLO was INCONCLUSIVE, counted as a failure by --on-inconclusive fail"), "{md}");

    let (out, junit, md) = run_with("pass");
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(!junit.contains("<failure"), "{junit}");
    assert!(junit.contains("counted as a pass by --on-inconclusive pass"), "{junit}");
    assert!(!md.contains("All 1 gated") && !md.contains("All 0"), "{md}");
    assert!(md.contains("1 of 1 gated SLO was INCONCLUSIVE, counted as passing by --on-inconclusive pass."), "{md}");
}

/// `--pipeline-reads batch` reads each pipelined batch whole: the run says so in its load line and results.json,
/// `--print-spec` carries it, and it needs `--pipeline` and a closed load.
#[test]
fn pipeline_reads_batch_from_the_command_line() {
    use std::io::BufRead as _;
    let mut server = command(&["serve", "--kind", "plaintext"]).stdout(Stdio::piped()).spawn().expect("serve");
    let mut line = String::new();
    std::io::BufReader::new(server.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url = format!("{}/plaintext", line.trim().rsplit(' ').next().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let flags = ["-c", "4", "-n", "2000", "--pipeline", "16", "--pipeline-reads", "batch"];
    let printed = run(&[&["run", "--url", url.as_str()][..], &flags[..], &["--print-spec"]].concat());
    assert!(text(&printed.stdout).contains("pipeline_reads: \"batch\""), "{}", text(&printed.stdout));
    let out =
        run(&[&["run", "--url", url.as_str()][..], &flags[..], &["--out", out_dir.to_str().unwrap(), "-v"]].concat());
    let _ = server.kill();
    let _ = server.wait();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("adhoc/results.json")).unwrap()).unwrap();
    let s = &r["scenarios"][0];
    assert_eq!(s["requests"]["completed"], 2000, "{s:#}");
    assert_eq!(s["load"]["pipeline"], 16);
    assert_eq!(s["load"]["pipeline_reads"], "batch", "{:#}", s["load"]);
    let md = std::fs::read_to_string(out_dir.join("adhoc/report.md")).unwrap();
    assert!(md.contains("pipeline 16 (batches read whole)"), "{md}");

    let out = run(&["run", "--url", "http://127.0.0.1:9/", "--pipeline-reads", "batch", "--print-spec"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("--pipeline"), "{}", text(&out.stderr));
    let out =
        run(&["run", "--url", "http://127.0.0.1:9/", "-R", "100", "--pipeline", "4", "--pipeline-reads", "batch"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("--pipeline-reads"), "{}", text(&out.stderr));
}
