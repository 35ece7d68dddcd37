//! External profiles end to end (issue 41, seed 002): the real binary runs third-party profilers beside each
//! measured phase through `profile: { command: ... }` (async-profiler's cpu, alloc and lock modes on a JVM, py-spy
//! on a Python server) and fetches a Go server's `/debug/pprof` (a target it started, both sides of an A/B run, and
//! a server it did not start), against the fixtures of `tests/fixtures/profile/` (a set CPU time per request in
//! named functions). The folded files are read by a flame-graph tool (inferno's `flamegraph::from_lines`, the
//! library behind `inferno-flamegraph`). A profiler that fails, writes garbage, does not exist, may not attach, or a
//! pprof endpoint that refuses connections is a note or a warning naming what went wrong, and the run goes on.
//!
//! The tools come from environment variables and each test skips, saying so, without its own: `LOADGATE_ASPROF`
//! (async-profiler's asprof), `LOADGATE_PYSPY` (py-spy), `LOADGATE_GO` (the go command that builds the Go
//! fixture); `.ci/run` installs them with `.ci/install-profilers` and runs this file with them set. No assertion is
//! on a duration; CPU figures are compared only as a sanity bound.

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

mod common;
use common::{loadgate, text};

/// A tool named by an environment variable, or `None` (with a line saying the test skips) when the variable is
/// unset or empty; a variable naming nothing is a failure, not a skip (`.ci/run` names every tool).
fn tool(var: &str, test: &str) -> Option<PathBuf> {
    match std::env::var_os(var).filter(|v| !v.is_empty()).map(PathBuf::from) {
        Some(p) => {
            assert!(p.is_file(), "{var}={} is not a file (bash .ci/install-profilers installs it)", p.display());
            Some(p)
        }
        None => {
            eprintln!("skipped {test}: {var} is not set (eval \"$(bash .ci/install-profilers)\" sets it)");
            None
        }
    }
}

fn fixtures() -> PathBuf {
    common::root().join("tests/fixtures/profile")
}

/// A port that was free a moment ago, for a target that loadgate starts (its base_url is written in the spec).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

fn write(dir: &Path, yaml: &str) -> String {
    let path = dir.join("spec.yaml");
    std::fs::write(&path, yaml).expect("write spec");
    path.display().to_string()
}

/// A finished run: its output, its results.json and its directory.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    dir: PathBuf,
    results: serde_json::Value,
}

impl Run {
    fn of(spec: &str, out: &Path, name: &str) -> Run {
        let o = loadgate(&["run", spec, "--out", &out.display().to_string()]);
        let (stdout, stderr) = (text(&o.stdout), text(&o.stderr));
        assert!(!stderr.contains("panicked") && !stdout.contains("panicked"), "{stdout}\n{stderr}");
        let dir = out.join(name);
        let results = std::fs::read_to_string(dir.join("results.json"))
            .unwrap_or_else(|e| panic!("results.json: {e}\n{stdout}\n{stderr}"));
        let results = serde_json::from_str(&results).expect("results.json is JSON");
        Run { code: o.status.code(), stdout, stderr, dir, results }
    }

    fn scenario(&self, name: &str) -> &serde_json::Value {
        self.results["scenarios"]
            .as_array()
            .and_then(|s| s.iter().find(|s| s["name"] == name))
            .unwrap_or_else(|| panic!("no scenario {name} in results.json"))
    }

    fn folded(&self, file: &str) -> String {
        std::fs::read_to_string(self.dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
    }

    /// Nothing a profiler wrote reached the terminal raw: no escape sequence, no NUL, no other control character.
    fn assert_printable(&self) {
        for (name, out) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
            let bad = out.chars().find(|c| c.is_control() && *c != '\n');
            assert!(bad.is_none(), "{name} has the control character {bad:?}:\n{out}");
        }
    }
}

/// The folded file as flamegraph.pl reads it (`frame;frame;... COUNT`, the count after the last space) and rendered
/// by inferno into an SVG whose frames are titled; returns the samples and the SVG's frame titles.
fn render(folded: &str) -> (u64, Vec<String>) {
    let mut total = 0;
    for line in folded.lines().filter(|l| !l.trim().is_empty()) {
        let (stack, count) = line.rsplit_once(' ').unwrap_or_else(|| panic!("not folded: {line:?}"));
        assert!(!stack.trim().is_empty(), "no frames: {line:?}");
        total += count.parse::<u64>().unwrap_or_else(|_| panic!("not a count: {line:?}"));
    }
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut inferno::flamegraph::Options::default(), folded.lines(), &mut svg)
        .expect("inferno renders the folded file");
    let svg = String::from_utf8(svg).expect("UTF-8 SVG");
    let options = roxmltree::ParsingOptions { allow_dtd: true, ..roxmltree::ParsingOptions::default() };
    let doc = roxmltree::Document::parse_with_options(&svg, options).expect("inferno's SVG is XML");
    let titles =
        doc.descendants().filter(|n| n.has_tag_name("title")).filter_map(|n| n.text().map(str::to_owned)).collect();
    (total, titles)
}

fn has_frame(titles: &[String], frame: &str) -> bool {
    titles.iter().any(|t| t.starts_with(frame))
}

/// A JVM fixture's classes, compiled once into `dir` (the source launcher would compile them at every start).
fn compile_jvm_fixture(dir: &Path) -> PathBuf {
    let classes = dir.join("classes");
    let javac = Command::new("javac").arg("-d").arg(&classes).arg(fixtures().join("jvm/Server.java")).output();
    // With async-profiler named, the JDK is there too (.ci/install-profilers installs both): no javac is a failure.
    match javac {
        Ok(o) if o.status.success() => classes,
        Ok(o) => panic!("javac failed: {}", text(&o.stderr)),
        Err(e) => panic!("javac could not run ({e}): LOADGATE_ASPROF is set, so the JDK must be installed"),
    }
}

/// Seed 002: a JVM server under a constant rate, with async-profiler's CPU, allocation and lock profiles through
/// `command:`, one scenario each.
#[test]
fn async_profiler_records_cpu_alloc_and_lock_profiles_of_a_jvm_under_a_constant_rate() {
    let Some(asprof) = tool("LOADGATE_ASPROF", "the async-profiler test") else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let classes = compile_jvm_fixture(dir.path());
    let port = free_port();
    let server = fixtures().join("jvm/run-server.sh");
    let asprof = asprof.display();
    // async-profiler's `-i` for cpu is what one count stands for: the profile's `interval`.
    let scenario = |name: &str, event: &str, interval: &str| {
        let (flag, key) = if interval.is_empty() {
            (String::new(), String::new())
        } else {
            (format!("-i {interval} "), format!(", interval: {interval}"))
        };
        format!(
            "  {name}:\n    request: {{ path: /v0/entity }}\n    \
             load: {{ open: {{ rate: 1000/s, connections: 8, duration: 2s }} }}\n    \
             profile: {{ command: {{ run: \"{asprof} -d {{seconds}} -e {event} {flag}-o collapsed -f {{out}} {{pid}}\", event: {event}{key} }} }}\n"
        )
    };
    let yaml = format!(
        "version: 1\nname: seed002\ntarget:\n  base_url: http://127.0.0.1:{port}\n  start:\n    \
         command: [sh, {server}, -listen, \"127.0.0.1:{port}\", -work, 100us, -slow, 50us, -lock, 100us, -threads, \"4\"]\n    \
         env: {{ SERVER_CLASSES: {classes} }}\n    ready: {{ http_get: /ready, status: 200, timeout: 60s }}\n\
         scenarios:\n{}{}{}",
        scenario("cpu", "cpu", "1ms"),
        scenario("alloc", "alloc", ""),
        scenario("lock", "lock", ""),
        server = server.display(),
        classes = classes.display(),
    );
    let spec = write(dir.path(), &yaml);
    let run = Run::of(&spec, &dir.path().join("out"), "seed002");
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    for (name, sample_type) in [("cpu", "cpu"), ("alloc", "alloc"), ("lock", "lock")] {
        let p = &run.scenario(name)["profile"];
        assert_eq!(p["source"], "command", "{p}");
        assert_eq!(p["sample_type"], sample_type, "{p}");
        assert!(p["samples"].as_u64().unwrap_or(0) > 0, "{name}: {p}");
        assert_eq!(p["folded_file"], format!("profile-{name}.folded"), "{p}");
        assert!(run.dir.join(format!("flame-{name}.svg")).is_file(), "flame-{name}.svg");
    }
    // CPU: the handler's named methods, each above the callee they share.
    let cpu = run.folded("profile-cpu.folded");
    let (samples, titles) = render(&cpu);
    assert!(samples > 0);
    for frame in ["Server.parseRequest", "Server.slowPath", "Server.renderResponse", "Server.lockedSection"] {
        assert!(has_frame(&titles, frame), "no {frame} in the CPU flame graph");
    }
    assert!(cpu.lines().any(|l| l.contains("Server.slowPath;Server.spin")), "slowPath calls spin:\n{cpu}");
    // Allocations: the 4 KiB buffer renderResponse makes for every request.
    let alloc = run.folded("profile-alloc.folded");
    let (_, titles) = render(&alloc);
    assert!(has_frame(&titles, "Server.renderResponse"), "no renderResponse in the allocation flame graph");
    assert!(alloc.lines().any(|l| l.contains("Server.renderResponse;byte[]")), "no byte[] site:\n{alloc}");
    // Locks: the shared ReentrantLock that lockedSection takes.
    let lock = run.folded("profile-lock.folded");
    let (_, titles) = render(&lock);
    assert!(has_frame(&titles, "Server.lockedSection"), "no lockedSection in the lock flame graph:\n{lock}");
    assert!(
        run.stdout.contains("(alloc from command)") && run.stdout.contains("(lock from command)"),
        "{}",
        run.stdout
    );
    let html = std::fs::read_to_string(run.dir.join("report.html")).expect("report.html");
    assert!(html.contains("flame-lock.svg"), "report.html has no lock flame graph");
}

/// py-spy on the Python fixture through `command:`; and py-spy run as another user, which ptrace refuses: the
/// profile says so with py-spy's own words, and the run goes on.
#[test]
fn py_spy_profiles_a_python_server_and_a_refused_attach_is_named() {
    let Some(pyspy) = tool("LOADGATE_PYSPY", "the py-spy test") else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let record = format!("{} record --format raw -r 200 -d {{seconds}} -o {{out}} -p {{pid}}", pyspy.display());
    // As root, py-spy is let down to `nobody` for the second scenario: it may not trace root's server.
    let refused = match (common::which("setpriv"), common::is_root()) {
        (Some(setpriv), true) => format!(
            "  refused:\n    request: {{ path: / }}\n    load: {{ open: {{ rate: 100/s, connections: 2, duration: 1s }} }}\n    \
             profile: {{ command: {{ run: \"{} --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all {record}\", event: cpu, interval: 5ms }} }}\n",
            setpriv.display()
        ),
        _ => {
            eprintln!("the refused-attach scenario is left out: it needs root and setpriv");
            String::new()
        }
    };
    let yaml = format!(
        "version: 1\nname: pyspy\ntarget:\n  base_url: http://127.0.0.1:{port}\n  start:\n    \
         command: [python3, {server}, -listen, \"127.0.0.1:{port}\", -work, 500us, -slow, 300us, -allow-ptrace-any]\n    \
         ready: {{ http_get: /ready, status: 200, timeout: 30s }}\n\
         scenarios:\n  main:\n    request: {{ path: / }}\n    \
         load: {{ open: {{ rate: 200/s, connections: 2, duration: 2s }} }}\n    \
         profile: {{ command: {{ run: \"{record}\", event: cpu, interval: 5ms }} }}\n{refused}",
        server = fixtures().join("python/server.py").display(),
    );
    let spec = write(dir.path(), &yaml);
    let run = Run::of(&spec, &dir.path().join("out"), "pyspy");
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let p = &run.scenario("main")["profile"];
    assert_eq!((&p["source"], &p["sample_type"]), (&"command".into(), &"cpu".into()), "{p}");
    assert_eq!(p["ns_per_sample"].as_f64(), Some(5e6), "{p}");
    let folded = run.folded("profile-main.folded");
    let (samples, titles) = render(&folded);
    assert!(samples > 0);
    // py-spy's frames are `name (file:line)`: spaces inside a frame, the count after the last one.
    for frame in ["parseRequest (server.py", "slowPath (server.py", "renderResponse (server.py"] {
        assert!(has_frame(&titles, frame), "no {frame} in py-spy's flame graph:\n{folded}");
    }
    if !refused.is_empty() {
        let notes = run.scenario("refused")["profile"]["notes"].to_string();
        assert!(notes.contains("setpriv` failed (exit status: 1); it said: "), "{notes}");
        assert!(notes.contains("Permission Denied"), "py-spy's own words: {notes}");
        assert!(run.stdout.contains("Permission Denied"), "{}", run.stdout);
    }
    run.assert_printable();
}

/// The Go fixture, built once per test process with `$LOADGATE_GO` into cargo's scratch directory for tests.
fn go_fixture(test: &str) -> Option<PathBuf> {
    static BUILT: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    let go = tool("LOADGATE_GO", test)?;
    BUILT
        .get_or_init(|| {
            let bin = Path::new(env!("CARGO_TARGET_TMPDIR")).join("profile-go-fixture");
            let o = Command::new(&go)
                .args(["build", "-o"])
                .arg(&bin)
                .arg(".")
                .current_dir(fixtures().join("go"))
                .env("GOTOOLCHAIN", "local")
                .env("CGO_ENABLED", "0")
                .output()
                .expect("run go build");
            assert!(o.status.success(), "go build failed: {}", text(&o.stderr));
            Some(bin)
        })
        .clone()
}

/// CPU microseconds per request that a side's profile and its target's CPU time say.
fn cpu_per_request(side: &serde_json::Value) -> (f64, f64) {
    let p = &side["profile"];
    let profiled = p["samples"].as_f64().unwrap_or(0.0) * p["ns_per_sample"].as_f64().unwrap_or(0.0)
        / p["requests"].as_f64().unwrap_or(1.0).max(1.0)
        / 1e3;
    let (mut ns, mut requests) = (0.0, 0.0);
    for r in side["repetitions"].as_array().into_iter().flatten() {
        ns += r["target_cpu"]["cpu_ns"].as_f64().unwrap_or(0.0);
        requests += r["target_cpu"]["requests"].as_f64().unwrap_or(0.0);
    }
    (profiled, ns / requests.max(1.0) / 1e3)
}

/// pprof on both sides of an A/B run of Go servers loadgate starts (the candidate's extra CPU in `main.slowPath`'s
/// callee), each side fetched from its own base_url; the Go server's own CPU samples against loadgate's
/// `target_cpu_per_request`.
#[test]
fn pprof_profiles_both_sides_of_an_ab_run_of_go_servers() {
    let Some(bin) = go_fixture("the pprof A/B test") else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = (free_port(), free_port());
    let side = |key: &str, port: u16, slow: &str| {
        format!(
            "{key}:\n  base_url: http://127.0.0.1:{port}\n  start:\n    \
             command: [{}, -listen, \"127.0.0.1:{port}\", -work, 100us, -slow, {slow}]\n    \
             ready: {{ http_get: /ready, status: 200, timeout: 30s }}\n",
            bin.display()
        )
    };
    let yaml = format!(
        "version: 1\nname: go-ab\n{}{}gating: {{ repeat: 4 }}\nprofile:\n  pprof: {{ url: /debug/pprof/profile }}\n\
         scenarios:\n  main:\n    request: {{ path: / }}\n    \
         load: {{ open: {{ rate: 1000/s, connections: 4, duration: 1s }} }}\n    \
         slo:\n      - target_cpu_per_request <= baseline * 1.05\n",
        side("target", a, "0s"),
        side("candidate", b, "200us"),
    );
    let spec = write(dir.path(), &yaml);
    let run = Run::of(&spec, &dir.path().join("out"), "go-ab");
    // 200 us more CPU per request: never a pass (four rounds may be too few to tell at 90%).
    assert!(matches!(run.code, Some(1 | 5)), "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("target_cpu_per_request"), "{}", run.stdout);
    let s = run.scenario("main");
    for (side, file) in [(&s["ab_baseline"], "profile-main-baseline.folded"), (s, "profile-main-candidate.folded")] {
        let p = &side["profile"];
        assert_eq!((&p["source"], &p["sample_type"]), (&"pprof".into(), &"cpu".into()), "{p}");
        // Counts are samples of Go's 100 Hz profiler, not nanoseconds.
        assert_eq!(p["ns_per_sample"].as_f64(), Some(1e7), "{p}");
        let samples = p["samples"].as_u64().unwrap_or(0);
        assert!(samples > 0 && samples < 100_000, "{p}");
        let (total, _) = render(&run.folded(file));
        assert_eq!(total, samples, "{file}");
        // Go's profiler cannot see more CPU than the process used (schedstat); it may see much less (see README).
        let (profiled, measured) = cpu_per_request(side);
        eprintln!("{file}: pprof {profiled:.1} us/request of CPU, target_cpu_per_request {measured:.1} us");
        assert!(measured > 0.0 && profiled <= measured * 1.5 + 20.0, "{profiled} vs {measured}");
    }
    // The candidate's side is the candidate's server: its slow path is there.
    let candidate = run.folded("profile-main-candidate.folded");
    assert!(candidate.contains("main.slowPath;main.spin"), "{candidate}");
    let named = s["profile"]["differential"]["named"].as_array().cloned().unwrap_or_default();
    if let Some(first) = named.first() {
        assert_eq!(first["name"], "main.slowPath", "{named:?}");
    }
}

/// A Go server the test started itself on port 0 (loadgate knows only its URL): pprof still profiles it.
struct GoServer(Child, String);

impl GoServer {
    fn start(bin: &Path) -> GoServer {
        let mut child = Command::new(bin)
            .args(["-listen", "127.0.0.1:0", "-work", "300us"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the Go fixture");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("its first line");
        let url = line.trim().strip_prefix("listening on ").unwrap_or_else(|| panic!("{line:?}")).to_owned();
        GoServer(child, url)
    }
}

impl Drop for GoServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn pprof_profiles_a_server_loadgate_did_not_start() {
    let Some(bin) = go_fixture("the pprof URL-target test") else { return };
    let server = GoServer::start(&bin);
    let dir = tempfile::tempdir().expect("tempdir");
    let url = &server.1;
    let yaml = format!(
        "version: 1\nname: go-url\ntarget: {{ base_url: \"{url}\" }}\n\
         profile:\n  pprof: {{ url: \"{url}/debug/pprof/profile\" }}\n\
         scenarios:\n  main:\n    request: {{ path: / }}\n    \
         load: {{ open: {{ rate: 1000/s, connections: 4, duration: 2s }} }}\n"
    );
    let spec = write(dir.path(), &yaml);
    let run = Run::of(&spec, &dir.path().join("out"), "go-url");
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let p = &run.scenario("main")["profile"];
    assert_eq!((&p["source"], &p["sample_type"]), (&"pprof".into(), &"cpu".into()), "{p}");
    assert!(p["samples"].as_u64().unwrap_or(0) > 0, "{p}");
    let (_, titles) = render(&run.folded("profile-main.folded"));
    assert!(
        has_frame(&titles, "main.parseRequest") || has_frame(&titles, "main.renderResponse"),
        "no handler frame in the flame graph: {titles:?}"
    );
    assert!(run.stdout.contains("(cpu from pprof)"), "{}", run.stdout);
}

/// What goes wrong with an external source is said, located and printable, and the run completes: a profiler that
/// fails (its standard error, colours escaped), one that writes binary garbage (the line that is not folded), one
/// that does not exist (a warning), a pprof endpoint that refuses connections.
#[test]
fn a_failing_profiler_or_endpoint_is_named_and_the_run_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let closed = free_port();
    let scenario = |name: &str, profile: &str| {
        format!(
            "  {name}:\n    request: {{ path: / }}\n    \
             load: {{ open: {{ rate: 200/s, connections: 2, duration: 1s }} }}\n    profile: {profile}\n"
        )
    };
    // YAML single quotes: a doubled quote is one quote; the command line's double quotes group one word.
    let fails = r#"{ command: 'sh -c "printf ''\033[31mError:\033[0m '' >&2; echo cannot attach to process $0 >&2; exit 3" {pid} {out}' }"#;
    let garbage = r#"{ command: 'sh -c "printf ''\000\001\033[2J\377 garbage'' > $1" {pid} {out}' }"#;
    // 200 KB on its standard error, more than a pipe holds, before it writes its stacks: read while it runs, it
    // finishes (a pipe read only at the end held it until it was killed).
    let chatty = r#"{ command: 'sh -c "head -c 200000 /dev/zero | tr ''\000'' x >&2; echo ''main;chatty 3'' > $1" {pid} {out}' }"#;
    // Exits at once, leaving a child that holds its standard error open for 30 s: the round does not wait for it.
    let lingers = r#"{ command: 'sh -c "(sleep 30 &); echo ''main;lingers 2'' > $1" {pid} {out}' }"#;
    // Not told `{seconds}`: it runs until interrupted, and is, when its phase ends.
    let untimed = r#"{ command: 'sh -c "echo ''main;untimed 4'' > $1; trap ''exit 0'' INT; while :; do sleep 0.1; done" {pid} {out}' }"#;
    let yaml = format!(
        "version: 1\nname: profile-failures\ntarget: {{ builtin: {{ kind: cpu, work: 20us }} }}\nscenarios:\n{}{}{}{}{}{}{}",
        scenario("fails", fails),
        scenario("garbage", garbage),
        scenario("chatty", chatty),
        scenario("lingers", lingers),
        scenario("untimed", untimed),
        scenario("missing", "{ command: \"/nonexistent/profiler -p {pid} -o {out}\" }"),
        scenario("refused", &format!("{{ pprof: {{ url: \"http://127.0.0.1:{closed}/debug/pprof/profile\" }} }}")),
    );
    let spec = write(dir.path(), &yaml);
    let run = Run::of(&spec, &dir.path().join("out"), "profile-failures");
    // No SLO failed: the run passes, unprofiled where the profile could not be taken.
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    run.assert_printable();
    let notes = |name: &str| run.scenario(name)["profile"]["notes"].to_string();
    let n = notes("fails");
    assert!(
        n.contains(
            r"the profiler `sh` failed (exit status: 3); it said: \\u{1b}[31mError:\\u{1b}[0m cannot attach to process"
        ),
        "{n}"
    );
    let n = notes("garbage");
    assert!(n.contains("the profiler `sh` wrote what is not folded stacks: line 1: no count"), "{n}");
    assert!(n.contains(r"\\u{0}\\u{1}\\u{1b}[2J"), "the garbage is shown escaped: {n}");
    assert!(
        run.stderr.contains(
            "warning: the profiler `/nonexistent/profiler` of missing is not there (no such executable file); the run \
             goes on without it"
        ),
        "{}",
        run.stderr
    );
    assert!(run.scenario("missing")["profile"].is_null(), "no profile was taken");
    let n = notes("refused");
    assert!(
        n.contains(&format!("the pprof endpoint http://127.0.0.1:{closed}/debug/pprof/profile could not be reached")),
        "{n}"
    );
    for name in ["fails", "garbage", "refused"] {
        let p = &run.scenario(name)["profile"];
        assert_eq!(p["samples"], 0, "{p}");
        assert_eq!(p["sample_type"], "cpu", "a failed round keeps its profile's event: {p}");
    }
    assert!(run.stdout.contains("it said: \\u{1b}[31mError:"), "{}", run.stdout);
    for (name, samples) in [("chatty", 3), ("lingers", 2), ("untimed", 4)] {
        let p = &run.scenario(name)["profile"];
        assert_eq!(p["samples"], samples, "{name}: {p}");
        assert!(p["notes"].is_null() || p["notes"] == serde_json::json!([]), "{name}: {p}");
    }
}
