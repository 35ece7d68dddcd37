//! End-to-end runs of the real binary against purpose-built servers on loopback that hit a limit on purpose:
//! a server that collapses beyond a number of concurrent requests (a sweep SLO fails and names the knee), a
//! server whose latency makes a rate unreachable with the spec's connections (a valid, plan-limited result),
//! and a rate no single generator worker can send, each request carrying a fresh random body (an invalid,
//! generator-limited one).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::Output;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

mod common;
use common::text;

fn run(args: &[&str]) -> Output {
    common::loadgate(args)
}

/// Runs a spec from a fresh directory; returns the directory, the output and the parsed results.json.
fn run_spec(yaml: &str, name: &str) -> (tempfile::TempDir, Output, serde_json::Value) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("spec.yaml");
    std::fs::write(&path, yaml).expect("write spec");
    let out_dir = dir.path().join("out");
    let out = run(&["run", path.to_str().unwrap(), "--out", out_dir.to_str().unwrap()]);
    let results = out_dir.join(name).join("results.json");
    let results = std::fs::read_to_string(&results)
        .unwrap_or_else(|e| panic!("{}: {e}\n{}\n{}", results.display(), text(&out.stdout), text(&out.stderr)));
    (dir, out, serde_json::from_str(&results).expect("results.json parses"))
}

/// An HTTP/1.1 keep-alive server, a thread per connection, that answers every request after `delay(in_service)`,
/// where `in_service` counts the requests being served at once (this one included). Returns its port.
fn server(delay: impl Fn(usize) -> Duration + Send + Sync + 'static) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let delay = Arc::new(delay);
    let in_service = Arc::new(AtomicUsize::new(0));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let (delay, in_service) = (Arc::clone(&delay), Arc::clone(&in_service));
            std::thread::spawn(move || {
                let _ = stream.set_nodelay(true);
                let Ok(mut out) = stream.try_clone() else { return };
                let mut r = BufReader::new(stream);
                loop {
                    let mut length = 0usize;
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    loop {
                        let mut h = String::new();
                        if r.read_line(&mut h).unwrap_or(0) == 0 {
                            return;
                        }
                        if h == "\r\n" {
                            break;
                        }
                        if let Some((k, v)) = h.split_once(':') {
                            if k.eq_ignore_ascii_case("content-length") {
                                length = v.trim().parse().unwrap_or(0);
                            }
                        }
                    }
                    let mut body = vec![0; length];
                    if r.read_exact(&mut body).is_err() {
                        return;
                    }
                    let now = in_service.fetch_add(1, Ordering::SeqCst) + 1;
                    std::thread::sleep(delay(now));
                    in_service.fetch_sub(1, Ordering::SeqCst);
                    if out.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

#[test]
fn a_server_that_collapses_beyond_four_concurrent_requests_fails_the_sweep_slo_and_names_the_knee() {
    // Up to 4 requests at once: 1 ms each. Beyond: every request waits 10 ms per request in service, a
    // thread pool thrashing as seed 000's did at 32 connections.
    let port = server(|n| if n <= 4 { Duration::from_millis(1) } else { Duration::from_millis(10 * n as u64) });
    let yaml = format!(
        r#"
version: 1
name: e2e-collapse
target: {{ base_url: "http://127.0.0.1:{port}" }}
scenarios:
  sweep:
    request: {{ path: /api/orders }}
    matrix: {{ connections: [1, 2, 4, 8, 16] }}
    load: {{ closed: {{ connections: "{{{{ connections }}}}", duration: 1s }} }}
    slo: [error_rate < 1%]
    sweep:
      slo:
        - collapse == none
        - throughput_drop <= 10%
        - knee >= 1
        - p99@largest <= 1000 * p99@smallest
"#
    );
    let (dir, out, r) = run_spec(&yaml, "e2e-collapse");
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{}", text(&out.stderr));
    let sweep = &r["sweeps"][0];
    assert_eq!(sweep["over"], "connections");
    assert_eq!(sweep["knee"]["kind"], "collapse", "{sweep:#}");
    assert_eq!(sweep["knee"]["cell"], "connections=8", "{sweep:#}");
    let v = sweep["verdicts"].as_array().expect("sweep verdicts");
    assert_eq!(v.len(), 4);
    assert_eq!((v[0]["slo"].as_str(), v[0]["passed"].as_bool()), (Some("collapse == none"), Some(false)), "{v:#?}");
    assert_eq!(v[0]["observed_text"], "connections=8 (collapse)");
    assert!(v[0]["note"].as_str().unwrap().starts_with("throughput collapsed at connections=8"), "{v:#?}");
    assert_eq!(v[1]["passed"], false, "{v:#?}");
    assert_eq!(v[2]["passed"], true, "{v:#?}");
    assert_eq!(v[3]["passed"], true, "{v:#?}");
    // Every cell's own SLO held: the sweep SLO alone fails the run.
    assert!(r["scenarios"].as_array().unwrap().iter().all(|s| s["verdicts"][0]["passed"] == true));
    assert_eq!(r["outcome"]["status"], "slo_failed");
    assert!(r["outcome"]["reasons"][0].as_str().unwrap().starts_with("sweep sweep: collapse was connections=8"));

    // The terminal, the JUnit and the Markdown say it too.
    assert!(stdout.contains("Sweep sweep over connections:"), "{stdout}");
    assert!(stdout.contains("FAIL  collapse was connections=8 (collapse), threshold == none"), "{stdout}");
    let junit = std::fs::read_to_string(dir.path().join("out/e2e-collapse/junit.xml")).unwrap();
    assert!(junit.contains(r#"testcase name="sweep sweep over connections: collapse == none""#), "{junit}");
    assert!(junit.contains(r#"type="slo""#), "{junit}");
    // The sweep's testcase takes no time of its own: the cells' testcases carry the time the load ran.
    let doc = roxmltree::Document::parse(&junit).unwrap();
    let sweep_case = doc
        .descendants()
        .find(|n| {
            n.has_tag_name("testcase") && n.attribute("name") == Some("sweep sweep over connections: collapse == none")
        })
        .unwrap_or_else(|| panic!("the sweep SLO's testcase:\n{junit}"));
    assert_eq!(sweep_case.attribute("time").map(|t| t.parse::<f64>().unwrap()), Some(0.0), "{junit}");
    let md = std::fs::read_to_string(dir.path().join("out/e2e-collapse/report.md")).unwrap();
    assert!(md.contains("| sweep sweep over connections | `collapse == none` | connections=8 (collapse) |"), "{md}");
}

#[test]
fn a_rate_the_connections_cannot_carry_is_a_valid_plan_limited_result_that_names_the_connections_needed() {
    // 200 ms per request on 2 connections carries 10 requests/s; the spec asks 100/s. The requests are long
    // beside the scheduling delays of a busy machine, so the service time stays steady (the plan's limit, not a
    // target slowing down) and the connections stay busy between answers.
    let port = server(|_| Duration::from_millis(200));
    let yaml = format!(
        r#"
version: 1
name: e2e-plan-limited
target: {{ base_url: "http://127.0.0.1:{port}" }}
scenarios:
  entity:
    request: {{ path: /v0/entity }}
    load: {{ open: {{ rate: 100/s, duration: 3s, connections: 2 }} }}
    slo: [error_rate < 1%, "connect_p99 < 10s", "p98 < 1h"]
"#
    );
    let (_dir, out, r) = run_spec(&yaml, "e2e-plan-limited");
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "a plan-limited result is valid:\n{stdout}\n{}", text(&out.stderr));
    let s = &r["scenarios"][0];
    assert_eq!(s["validity"]["valid"], true, "{:#}", s["validity"]);
    let limited = &s["limited_by"];
    assert_eq!(limited["cause"], "plan", "{limited:#}");
    let needed = limited["connections_needed"].as_u64().expect("connections needed");
    // Little's law on what was measured: the rate asked x the mean service time, at least 100/s x 200 ms.
    let service_s = s["service_time"]["mean_us"].as_f64().unwrap() / 1e6;
    let rate = limited["target_rate"].as_f64().unwrap();
    assert_eq!(needed, (rate * service_s).ceil() as u64, "{limited:#}\n{:#}", s["service_time"]);
    assert!(needed >= 20, "100/s x at least 200 ms is at least 20 connections: {limited:#}");
    let message = limited["message"].as_str().unwrap();
    assert!(message.starts_with("the plan's connections limited the rate: sent "), "{message}");
    assert!(message.contains(&format!("needs at least {needed} connections")), "{message}");
    assert!(s["validity"]["warnings"].as_array().unwrap().iter().any(|w| w["kind"] == "rate_not_reached"));
    // 2 connections of at least 200 ms each: 10/s, and the two requests still in flight at the end.
    assert!(s["limited_by"]["achieved_rate"].as_f64().unwrap() < 20.0, "{limited:#}");
    // Connect times are summarised and gate like latencies; any percentile can be asked.
    assert_eq!(s["connect_time"]["count"], 2, "{:#}", s["connect_time"]);
    assert_eq!(s["verdicts"][1]["metric"], "connect_p99");
    assert_eq!(s["verdicts"][2]["metric"], "p98");
    assert!(stdout.contains("the plan's connections limited the rate"), "{stdout}");
    assert!(stdout.contains("Connect time: p50 "), "{stdout}");
}

#[test]
fn a_rate_one_generator_worker_cannot_send_is_generator_limited_and_invalid() {
    // One worker must write a fresh 64 KiB random body for every request: tens of microseconds of its CPU per
    // request (milliseconds in a debug build), so a million requests a second is out of its reach on any machine. The built-in target only
    // reads the body and answers, several times cheaper per request than making it, so it keeps up with
    // whatever the worker sends and answers promptly: the 256 connections stay mostly free (rate x service time
    // is a few of them). On a busy machine the worker may be descheduled and show less than a saturated CPU,
    // but it still fell short with free connections, which is the generator's limit too; neither way can read
    // as the plan's or the target's.
    let yaml = r#"
version: 1
name: e2e-generator-limited
hardware: { generator: { threads: 1 }, on_mismatch: warn }
target: { builtin: plaintext }
scenarios:
  flood:
    request: { method: POST, path: /, body: "{{ random_string(65536) }}" }
    load: { open: { rate: 1000000/s, duration: 2s, connections: 256 } }
"#;
    let (_dir, out, r) = run_spec(yaml, "e2e-generator-limited");
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "{stdout}\n{}", text(&out.stderr));
    let s = &r["scenarios"][0];
    assert_eq!(s["validity"]["valid"], false);
    assert_eq!(s["limited_by"]["cause"], "generator", "{:#}", s["limited_by"]);
    assert!(s["requests"]["completed"].as_u64().unwrap() > 0, "{:#}", s["requests"]);
    assert_eq!(
        s["status"]["success"], s["requests"]["completed"],
        "every body was read and answered: {:#}",
        s["status"]
    );
    let problem = s["validity"]["problems"].as_array().unwrap().iter().find(|p| p["kind"] == "rate_not_reached");
    let problem = problem.expect("rate_not_reached stays a problem");
    assert!(problem["message"].as_str().unwrap().starts_with("the generator limited the rate: sent "), "{problem:#}");
    assert!(stdout.contains("the generator limited the rate"), "{stdout}");
}
