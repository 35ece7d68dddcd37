//! End to end: response checks, values carried between the steps of a session, cookies and the verification before
//! the load (issue 30, `docs/design/checks.md` section 6), the real binary against httpbin (`common/httpbin.rs`).
//!
//! The specs are the repository's `specs/httpbin-flows.yaml` (one scenario at a time, some changed to fail on
//! purpose) and the design's examples 6 and 7. What the tests read from results.json is in [`read`], so that a
//! renamed field is fixed in one place. Each test skips, saying so, without a Python that has httpbin and gunicorn;
//! `.ci/run` installs them and sets `LOADGATE_HTTPBIN_PYTHON`, so there they always run. No assertion bounds a time
//! or a rate (`AGENTS.md`); counts come from results.json and from httpbin's access log, which holds exactly the
//! requests sent: a `base_url` target over plain HTTP is probed with a TCP connect only.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Output;

use serde_json::Value;
use serde_yaml::{Mapping, Value as Yaml};

mod common;
#[path = "common/httpbin.rs"]
mod httpbin;

use common::{root, text};
use httpbin::{Access, Httpbin};

/// What these tests read from results.json: the one place that names its fields.
mod read {
    use serde_json::Value;

    /// One check of one request over the phase.
    #[derive(Debug, Clone)]
    pub struct Check {
        pub request: String,
        pub check: String,
        pub expects: String,
        pub passed: u64,
        pub failed: u64,
        pub examples: Vec<Example>,
    }

    /// A response that failed a check.
    #[derive(Debug, Clone)]
    pub struct Example {
        pub status: u64,
        pub content_type: String,
        pub observed: String,
        pub body_start: String,
        pub body_len: u64,
    }

    /// A scenario's line in the verification before the load.
    #[derive(Debug, Clone)]
    pub struct Verified {
        pub scenario: String,
        pub requests: u64,
        pub passed: bool,
        pub message: String,
    }

    fn string(v: &Value) -> String {
        v.as_str().unwrap_or_default().to_owned()
    }

    fn count(v: &Value) -> u64 {
        v.as_u64().unwrap_or(0)
    }

    /// The result of the scenario instance `name` (no matrix in these specs: the scenario key).
    pub fn scenario<'a>(r: &'a Value, name: &str) -> &'a Value {
        r["scenarios"]
            .as_array()
            .and_then(|all| all.iter().find(|s| s["name"] == name))
            .unwrap_or_else(|| panic!("no scenario `{name}` in results.json: {:#}", r["scenarios"]))
    }

    /// Every check of every request of the scenario, in the plan's order.
    pub fn checks(s: &Value) -> Vec<Check> {
        s["checks"]
            .as_array()
            .unwrap_or_else(|| panic!("the scenario has no `checks` list: {:#}", s["checks"]))
            .iter()
            .map(|c| Check {
                request: string(&c["request"]),
                check: string(&c["check"]),
                expects: string(&c["expects"]),
                passed: count(&c["passed"]),
                failed: count(&c["failed"]),
                examples: c["examples"]
                    .as_array()
                    .map(|all| {
                        all.iter()
                            .map(|e| Example {
                                status: count(&e["status"]),
                                content_type: string(&e["content_type"]),
                                observed: string(&e["observed"]),
                                body_start: string(&e["body_start"]),
                                body_len: count(&e["body_len"]),
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            })
            .collect()
    }

    /// The check `check` of the request `request`.
    pub fn check(s: &Value, request: &str, check: &str) -> Check {
        let all = checks(s);
        all.iter()
            .find(|c| c.request == request && c.check == check)
            .cloned()
            .unwrap_or_else(|| panic!("no check `{request}/{check}` among {all:#?}"))
    }

    /// `checked`: responses whose checks ran, those that failed one, and the non-2xx a `status` check accepted.
    pub fn checked(s: &Value) -> (u64, u64, u64) {
        let c = &s["checked"];
        (count(&c["responses"]), count(&c["failed"]), count(&c["accepted_non_2xx"]))
    }

    /// The breakdown of one named request (a mix entry or a session step).
    pub fn request<'a>(s: &'a Value, name: &str) -> &'a Value {
        s["by_request"]
            .as_array()
            .and_then(|all| all.iter().find(|b| b["name"] == name))
            .unwrap_or_else(|| panic!("no request `{name}` in by_request: {:#}", s["by_request"]))
    }

    pub fn sent(b: &Value) -> u64 {
        count(&b["requests"]["sent"])
    }

    pub fn completed(b: &Value) -> u64 {
        count(&b["requests"]["completed"])
    }

    /// Responses with a 2xx status.
    pub fn success(b: &Value) -> u64 {
        count(&b["status"]["success"])
    }

    /// Steps not sent because a value they use was not captured (or would break the request).
    pub fn missing_value(b: &Value) -> u64 {
        count(&b["errors"]["missing_value"])
    }

    /// Failed requests of every kind (transport errors and values missing).
    pub fn errors(b: &Value) -> u64 {
        ["connect", "read", "write", "timeout", "protocol", "missing_value"]
            .iter()
            .map(|k| count(&b["errors"][k]))
            .sum()
    }

    /// The verdict of an SLO, as the spec wrote it: (passed, observed).
    pub fn verdict(s: &Value, slo: &str) -> (bool, Option<f64>) {
        let v = s["verdicts"]
            .as_array()
            .and_then(|all| all.iter().find(|v| v["slo"] == slo))
            .unwrap_or_else(|| panic!("no verdict `{slo}`: {:#}", s["verdicts"]));
        (v["passed"] == true, v["observed"].as_f64())
    }

    /// The verification before the load, one line per scenario verified (empty when none ran).
    pub fn verification(r: &Value) -> Vec<Verified> {
        r["verification"]
            .as_array()
            .map(|all| {
                all.iter()
                    .map(|v| Verified {
                        scenario: string(&v["name"]),
                        requests: count(&v["sent"]),
                        // No failure message: every check held.
                        passed: v["message"].is_null(),
                        message: string(&v["message"]),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The run's outcome: (exit code, reasons joined by newlines).
    pub fn outcome(r: &Value) -> (i64, String) {
        let reasons = r["outcome"]["reasons"].as_array().map(|all| all.iter().map(string).collect::<Vec<_>>());
        (r["outcome"]["exit_code"].as_i64().unwrap_or(-1), reasons.unwrap_or_default().join("\n"))
    }

    /// The names of the scenario instances that did not run.
    pub fn not_run(r: &Value) -> Vec<String> {
        r["not_run"].as_array().map(|all| all.iter().map(|n| string(&n["name"])).collect()).unwrap_or_default()
    }
}

/// A spec written into a fresh directory; [`Spec::run`] runs it.
struct Spec {
    dir: tempfile::TempDir,
    path: PathBuf,
    name: String,
}

impl Spec {
    fn new(yaml: &Yaml) -> Spec {
        let name = yaml["name"].as_str().expect("the spec has a name").to_owned();
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(format!("{name}.yaml"));
        std::fs::write(&path, serde_yaml::to_string(yaml).expect("the spec serializes")).expect("write the spec");
        Spec { dir, path, name }
    }

    fn text(yaml: &str) -> Spec {
        Spec::new(&serde_yaml::from_str(yaml).expect("the test's spec is YAML"))
    }

    fn out(&self) -> PathBuf {
        self.dir.path().join("out").join(&self.name)
    }

    /// Runs it against httpbin (`--set url=`); the run keeps the directory.
    fn run(self, httpbin: &Httpbin) -> Run {
        let out_dir = self.dir.path().join("out");
        let output = common::loadgate(&[
            "run",
            self.path.to_str().expect("utf-8"),
            "--set",
            &format!("url={}", httpbin.url()),
            "--out",
            out_dir.to_str().expect("utf-8"),
        ]);
        let path = self.out().join("results.json");
        let results = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_else(|| panic!("no results.json at {}:\n{}", path.display(), all_output(&output)));
        let text = std::fs::read_to_string(&self.path).unwrap_or_default();
        Run { output, results, text, spec: self }
    }
}

/// A finished run: the process's output, its results.json and its output directory.
struct Run {
    output: Output,
    results: Value,
    /// The spec as written, for assertion messages.
    text: String,
    spec: Spec,
}

impl Run {
    /// Asserts the exit code, showing the spec and everything loadgate printed when it differs.
    fn exits(&self, code: i32) -> &Run {
        assert_eq!(
            self.output.status.code(),
            Some(code),
            "the spec:\n{}\nloadgate said:\n{}",
            self.text,
            all_output(&self.output)
        );
        self
    }

    fn stderr(&self) -> String {
        text(&self.output.stderr)
    }

    /// A file of the run's output directory (`junit.xml`, `report.md`).
    fn file(&self, name: &str) -> String {
        let path = self.spec.out().join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }
}

fn all_output(out: &Output) -> String {
    format!("{}{}", text(&out.stdout), text(&out.stderr))
}

/// The repository's `specs/httpbin-flows.yaml` with `scenario` only, `edit`ed (it gets the whole spec).
fn flows(scenario: &str, edit: impl FnOnce(&mut Mapping)) -> Spec {
    let source = std::fs::read_to_string(root().join("specs/httpbin-flows.yaml")).expect("specs/httpbin-flows.yaml");
    let mut spec: Yaml = serde_yaml::from_str(&source).expect("specs/httpbin-flows.yaml is YAML");
    let map = spec.as_mapping_mut().expect("a mapping");
    let scenarios = map.get_mut("scenarios").and_then(Yaml::as_mapping_mut).expect("scenarios");
    let keep = scenarios.get(scenario).cloned().unwrap_or_else(|| panic!("no scenario `{scenario}` in the spec"));
    scenarios.clear();
    scenarios.insert(scenario.into(), keep);
    edit(map);
    Spec::new(&spec)
}

/// The mapping of scenario `name` in a spec being edited.
fn scenario_of<'a>(spec: &'a mut Mapping, name: &str) -> &'a mut Mapping {
    spec.get_mut("scenarios")
        .and_then(Yaml::as_mapping_mut)
        .and_then(|s| s.get_mut(name))
        .and_then(Yaml::as_mapping_mut)
        .unwrap_or_else(|| panic!("no scenario `{name}`"))
}

/// The `i`-th step of a scenario's session.
fn step_of<'a>(spec: &'a mut Mapping, scenario: &str, i: usize) -> &'a mut Mapping {
    scenario_of(spec, scenario)
        .get_mut("session")
        .and_then(Yaml::as_sequence_mut)
        .and_then(|steps| steps.get_mut(i))
        .and_then(Yaml::as_mapping_mut)
        .unwrap_or_else(|| panic!("no step {i} in `{scenario}`"))
}

/// How many requests of the log have this method and a path that `path` accepts.
fn count(log: &[Access], method: &str, path: impl Fn(&str) -> bool) -> usize {
    log.iter().filter(|a| a.method == method && path(&a.path)).count()
}

/// Requests of the log by (method, path, status), for an assertion's message.
fn summary(log: &[Access]) -> BTreeMap<(String, String, u16), usize> {
    let mut all = BTreeMap::new();
    for a in log {
        *all.entry((a.method.clone(), a.path.clone(), a.status)).or_insert(0) += 1;
    }
    all
}

#[test]
fn token_flows_into_authorization() {
    let Some(httpbin) = Httpbin::start() else { return };
    let run = flows("login", |_| {}).run(&httpbin);
    run.exits(0);
    let s = read::scenario(&run.results, "login");
    let me = read::request(s, "me");
    assert_eq!(read::success(me), 20, "{me:#}");
    let checks = read::checks(s);
    for (request, check) in
        [("login", "status"), ("me", "status"), ("me", "json:$.authenticated"), ("me", "same-token")]
    {
        assert!(checks.iter().any(|c| c.request == request && c.check == check), "no {request}/{check}: {checks:#?}");
    }
    for c in &checks {
        assert_eq!((c.passed, c.failed), (20, 0), "{c:#?}");
    }
    for slo in ["checks == 100%", "check_failures{check=same-token} == 0"] {
        assert!(read::verdict(s, slo).0, "{slo}: {:#}", s["verdicts"]);
    }
    // 20 users and the verification's one session: every token was accepted.
    let log = httpbin.requests_at_least(42);
    assert_eq!(count(&log, "POST", |p| p == "/anything"), 21, "{:#?}", summary(&log));
    let bearer: Vec<&Access> = log.iter().filter(|a| a.path == "/bearer").collect();
    assert_eq!(bearer.len(), 21, "{:#?}", summary(&log));
    assert!(bearer.iter().all(|a| a.method == "GET" && a.status == 200), "{bearer:#?}");
    let verified = read::verification(&run.results);
    assert!(verified.iter().any(|v| v.scenario == "login" && v.passed), "{verified:#?}");
}

#[test]
fn missing_token_is_not_sent() {
    let Some(httpbin) = Httpbin::start() else { return };
    let spec = flows("login", |spec| {
        spec.insert("verify".into(), false.into());
        let capture = step_of(spec, "login", 0).get_mut("capture").and_then(Yaml::as_mapping_mut).expect("capture");
        capture.insert("token".into(), serde_yaml::from_str("{ json: $.json.tok }").unwrap());
    });
    let run = spec.run(&httpbin);
    run.exits(1);
    let s = read::scenario(&run.results, "login");
    assert!(!read::verdict(s, "checks == 100%").0, "{:#}", s["verdicts"]);
    let captured = read::check(s, "login", "capture:token");
    assert_eq!(captured.failed, 20, "{captured:#?}");
    let me = read::request(s, "me");
    assert_eq!((read::sent(me), read::missing_value(me)), (0, 20), "{me:#}");
    assert!(
        captured.examples.iter().any(|e| e.observed.contains("$.json.tok") && e.observed.contains("not found")),
        "the example names the selector: {captured:#?}"
    );
    assert!(read::verification(&run.results).is_empty(), "verify: false verifies nothing");
    // The 20 logins reached httpbin; no request went out without its token.
    let log = httpbin.requests_at_least(20);
    assert_eq!(count(&log, "POST", |p| p == "/anything"), 20, "{:#?}", summary(&log));
    assert_eq!(count(&log, "GET", |p| p == "/bearer"), 0, "{:#?}", summary(&log));
}

#[test]
fn cookie_jar_is_per_user() {
    let Some(httpbin) = Httpbin::start() else { return };
    let run = flows("cookies", |_| {}).run(&httpbin);
    run.exits(0);
    let s = read::scenario(&run.results, "cookies");
    let set = read::check(s, "set", "status");
    assert_eq!((set.passed, set.failed), (50, 0), "{set:#?}");
    // Each user read back the `sid` it was given, not another user's (they wait between the steps together).
    let read_back = read::check(s, "read", "json:$.cookies.sid");
    assert_eq!((read_back.passed, read_back.failed), (50, 0), "{read_back:#?}");
    assert!(read::verdict(s, "check_failures == 0").0, "{:#}", s["verdicts"]);
    // 50 users and the verification's session, whose `seq()` starts at 0 too.
    let log = httpbin.requests_at_least(102);
    let mut sids: Vec<String> = log
        .iter()
        .filter(|a| a.method == "GET" && a.status == 302)
        .filter_map(|a| a.path.strip_prefix("/cookies/set?sid=").map(str::to_owned))
        .collect();
    sids.sort_by_key(|s| s.trim_start_matches('u').parse::<u64>().unwrap_or(u64::MAX));
    let mut expected: Vec<String> = (0..50).map(|i| format!("u{i}")).collect();
    expected.insert(0, "u0".to_owned());
    assert_eq!(sids, expected, "{:#?}", summary(&log));
    assert_eq!(log.iter().filter(|a| a.path == "/cookies" && a.status == 200).count(), 51, "{:#?}", summary(&log));
}

#[test]
fn cookies_off() {
    let Some(httpbin) = Httpbin::start() else { return };
    let spec = flows("cookies", |spec| {
        spec.insert("verify".into(), false.into());
        scenario_of(spec, "cookies").insert("cookies".into(), false.into());
    });
    let run = spec.run(&httpbin);
    run.exits(1);
    let s = read::scenario(&run.results, "cookies");
    let read_back = read::check(s, "read", "json:$.cookies.sid");
    assert_eq!((read_back.passed, read_back.failed), (0, 50), "{read_back:#?}");
    assert!(
        read_back.examples.iter().any(|e| e.observed.contains("$.cookies.sid") && e.observed.contains("not found")),
        "{read_back:#?}"
    );
    assert!(!read::verdict(s, "check_failures == 0").0, "{:#}", s["verdicts"]);
    let log = httpbin.requests_at_least(100);
    assert_eq!(count(&log, "GET", |p| p == "/cookies"), 50, "{:#?}", summary(&log));
}

#[test]
fn header_id_into_path_closed() {
    let Some(httpbin) = Httpbin::start() else { return };
    let run = flows("items", |_| {}).run(&httpbin);
    run.exits(0);
    let s = read::scenario(&run.results, "items");
    for name in ["create", "fetch"] {
        let b = read::request(s, name);
        assert_eq!((read::completed(b), read::errors(b)), (200, 0), "{name}: {b:#}");
    }
    for c in read::checks(s) {
        assert_eq!((c.passed, c.failed), (200, 0), "{c:#?}");
    }
    // 200 sessions on 4 connections and the verification's one, whose `seq(start=1000)` starts at 1000 too.
    let log = httpbin.requests_at_least(402);
    let mut ids: Vec<u64> = log
        .iter()
        .filter(|a| a.method == "GET" && a.status == 200)
        .filter_map(|a| a.path.strip_prefix("/anything/")?.parse().ok())
        .collect();
    ids.sort_unstable();
    let mut expected: Vec<u64> = (1000..1200).collect();
    expected.insert(0, 1000);
    assert_eq!(ids, expected, "{:#?}", summary(&log));
    assert_eq!(count(&log, "GET", |p| p.starts_with("/response-headers?Location=/anything/")), 201);
}

/// The design's example 6: `bad` fails its check on every response, `ok` passes on every one; no verification.
const FORMATS: &str = r#"
version: 1
name: httpbin-formats
vars: { url: "" }
target: { base_url: "{{ url }}" }
verify: off
scenarios:
  formats:
    requests:
      ok:  { path: /json, check: [{ json: $.slideshow.author, equals: Yours Truly }] }
      bad: { path: /xml,  check: [{ header: Content-Type, matches: '^application/json', name: json-type }] }
    load: { closed: { connections: 2, requests: 100 } }
    slo: ["check_failures{check=json-type} == 0", "checks{request=ok} == 100%", "error_rate <= 100%"]
"#;

/// Runs example 6 (with `failed_checks` when given) and checks what both modes share; returns the run and the
/// completed (ok, bad) responses.
fn formats(httpbin: &Httpbin, failed_checks: Option<&str>) -> (Run, u64, u64) {
    let mut spec: Yaml = serde_yaml::from_str(FORMATS).unwrap();
    if let Some(mode) = failed_checks {
        scenario_of(spec.as_mapping_mut().unwrap(), "formats").insert("failed_checks".into(), mode.into());
    }
    let run = Spec::new(&spec).run(httpbin);
    run.exits(1);
    let s = read::scenario(&run.results, "formats");
    let (ok, bad) = (read::completed(read::request(s, "ok")), read::completed(read::request(s, "bad")));
    assert_eq!(ok + bad, 100, "{:#}", s["by_request"]);
    assert!(ok > 0 && bad > 0, "both entries ran: ok {ok}, bad {bad}");
    let json_type = read::check(s, "bad", "json-type");
    assert_eq!((json_type.passed, json_type.failed), (0, bad), "{json_type:#?}");
    assert_eq!(json_type.examples.len(), 3, "{json_type:#?}");
    for e in &json_type.examples {
        assert_eq!((e.status, e.content_type.as_str()), (200, "application/xml"), "{e:#?}");
        assert!(e.body_start.starts_with("<?xml"), "{e:#?}");
        assert!(e.observed.contains("application/xml"), "{e:#?}");
        assert!(e.body_len > 0, "{e:#?}");
    }
    assert!(json_type.expects.contains("^application/json"), "{json_type:#?}");
    let author = read::check(s, "ok", "json:$.slideshow.author");
    assert_eq!((author.passed, author.failed), (ok, 0), "{author:#?}");
    assert!(author.examples.is_empty(), "{author:#?}");
    assert_eq!(read::checked(s), (100, bad, 0), "{:#}", s["checked"]);
    assert!(!read::verdict(s, "check_failures{check=json-type} == 0").0, "{:#}", s["verdicts"]);
    assert!(read::verdict(s, "checks{request=ok} == 100%").0, "{:#}", s["verdicts"]);
    let log = httpbin.requests_at_least(100);
    assert_eq!(count(&log, "GET", |p| p == "/xml") as u64, bad, "{:#?}", summary(&log));
    assert_eq!(log.len(), 100, "no verification: {:#?}", summary(&log));
    (run, ok, bad)
}

#[test]
fn failed_checks_are_counted_and_gated() {
    let Some(httpbin) = Httpbin::start() else { return };
    let (run, _, bad) = formats(&httpbin, None);
    let s = read::scenario(&run.results, "formats");
    // Under `failed_checks: errors` (the default) a response that failed a check is a failed response.
    let error_rate = read::verdict(s, "error_rate <= 100%").1.expect("error_rate measured");
    assert!((error_rate - bad as f64 / 100.0).abs() < 1e-9, "error_rate {error_rate}, bad {bad} of 100");

    let junit = run.file("junit.xml");
    let doc = roxmltree::Document::parse(&junit).expect("junit parses");
    let case = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .find(|n| n.attribute("name").is_some_and(|name| name.contains("check_failures{check=json-type} == 0")))
        .unwrap_or_else(|| panic!("no testcase for the check SLO:\n{junit}"));
    let failure = case.children().find(|n| n.has_tag_name("failure")).unwrap_or_else(|| panic!("it fails:\n{junit}"));
    let said = format!("{} {}", failure.attribute("message").unwrap_or_default(), failure.text().unwrap_or_default());
    assert!(said.contains("application/xml"), "the failure quotes the example: {said}");

    let md = run.file("report.md");
    assert!(md.contains("Checks"), "{md}");
    assert!(
        md.lines().any(|l| l.starts_with('|')
            && l.contains("bad")
            && l.contains("json-type")
            && l.contains(&bad.to_string())),
        "report.md has the failing check's row:\n{md}"
    );
}

#[test]
fn separate_leaves_error_rate() {
    let Some(httpbin) = Httpbin::start() else { return };
    let (run, _, _) = formats(&httpbin, Some("separate"));
    let s = read::scenario(&run.results, "formats");
    // Every response was a 200 and completed: under `separate` failed checks are not errors.
    let error_rate = read::verdict(s, "error_rate <= 100%").1.expect("error_rate measured");
    assert_eq!(error_rate, 0.0, "{:#}", s["verdicts"]);
}

/// The design's example 7: a check that cannot hold on /html, found by the verification before any load.
const PAGE: &str = r#"
version: 1
name: httpbin-verify
vars: { url: "" }
target: { base_url: "{{ url }}" }
scenarios:
  page:
    request: { path: /html, check: [{ header: Content-Type, matches: '^application/json' }] }
    load: { closed: { connections: 4, duration: 10s } }
"#;

#[test]
fn verification_fails_before_load() {
    let Some(httpbin) = Httpbin::start() else { return };
    let run = Spec::text(PAGE).run(&httpbin);
    run.exits(3);
    let said = "GET /html returned 200 text/html; charset=utf-8";
    let body = "body starts: <!DOCTYPE html>";
    let stderr = run.stderr();
    assert!(stderr.contains("verification failed"), "{stderr}");
    assert!(stderr.contains(said) && stderr.contains(body), "{stderr}");
    let (code, reasons) = read::outcome(&run.results);
    assert_eq!(code, 3);
    assert!(reasons.contains(said) && reasons.contains(body), "{reasons}");
    assert_eq!(read::not_run(&run.results), ["page"]);
    let verified = read::verification(&run.results);
    assert!(
        verified.iter().any(|v| v.scenario == "page" && !v.passed && v.requests == 1 && v.message.contains(said)),
        "{verified:#?}"
    );
    // One request reached httpbin: the verification's; no load followed.
    let log = httpbin.requests_at_least(1);
    assert_eq!(
        log,
        [Access { method: "GET".into(), path: "/html".into(), status: 200 }],
        "the verification's request only"
    );

    let junit = run.file("junit.xml");
    let doc = roxmltree::Document::parse(&junit).expect("junit parses");
    let case = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .find(|n| n.attribute("name") == Some("httpbin-verify: run"))
        .unwrap_or_else(|| panic!("no run testcase:\n{junit}"));
    let error = case.children().find(|n| n.has_tag_name("error")).unwrap_or_else(|| panic!("an error:\n{junit}"));
    assert!(error.attribute("message").unwrap_or_default().contains(said), "{junit}");
}
