//! End-to-end tests of the real `loadgate` binary: validation messages, plans, the schema.

use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::{loadgate, root, text};

fn files(dir: &str, ext: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(root().join(dir)) else { return Vec::new() };
    let mut out: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .map(|p| format!("{dir}/{}", p.file_name().unwrap().to_string_lossy()))
        .collect();
    out.sort();
    out
}

#[test]
fn every_invalid_spec_exits_2_with_a_located_message() {
    let fixtures = files("tests/invalid", "yaml");
    assert!(fixtures.len() >= 30, "keep at least 30 invalid specs, found {}", fixtures.len());
    for file in fixtures {
        let name = Path::new(&file).file_stem().unwrap().to_string_lossy().into_owned();
        let out = if name == "unknown-set-variable" {
            loadgate(&["validate", &file, "--set", "conections=8"])
        } else {
            loadgate(&["validate", &file])
        };
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{file} should be invalid:\n{stderr}");
        assert!(!stderr.contains("panicked"), "{file} panicked:\n{stderr}");
        let located = regex_like_location(&stderr, &file);
        assert!(located, "{file}: every error names file:line:col:\n{stderr}");
        insta::assert_snapshot!(format!("invalid__{name}"), stderr);
    }
}

/// Every `-->` line names the file and a line:column.
fn regex_like_location(stderr: &str, file: &str) -> bool {
    let arrows: Vec<&str> = stderr.lines().filter(|l| l.trim_start().starts_with("-->")).collect();
    !arrows.is_empty()
        && arrows.iter().all(|l| {
            let rest = l.trim_start().trim_start_matches("-->").trim();
            let Some(loc) = rest.strip_prefix(file).and_then(|r| r.strip_prefix(':')) else { return false };
            let mut parts = loc.split(':');
            parts.next().is_some_and(|n| n.parse::<usize>().is_ok())
                && parts.next().is_some_and(|n| n.parse::<usize>().is_ok())
        })
}

#[test]
fn every_spec_and_example_validates() {
    let mut all = files("specs", "yaml");
    all.extend(files("examples", "yaml"));
    assert!(!all.is_empty());
    let mut args = vec!["validate"];
    args.extend(all.iter().map(String::as_str));
    let out = loadgate(&args);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
}

#[test]
fn every_spec_and_example_matches_the_json_schema_and_names_it() {
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("schemas/loadgate.schema.json")).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let mut all = files("specs", "yaml");
    all.extend(files("examples", "yaml"));
    for file in all {
        let source = std::fs::read_to_string(root().join(&file)).unwrap();
        let first = source.lines().next().unwrap_or_default();
        assert!(
            first.starts_with("# yaml-language-server: $schema=") && first.ends_with("schemas/loadgate.schema.json"),
            "{file} must start with the yaml-language-server modeline"
        );
        let json = loadgate_spec::yaml_to_json(&source).unwrap();
        let errors: Vec<String> =
            validator.iter_errors(&json).map(|e| format!("{} at {}", e, e.instance_path)).collect();
        assert!(errors.is_empty(), "{file} does not match the schema:\n{}", errors.join("\n"));
    }
}

#[test]
fn the_committed_schema_is_current() {
    let out = loadgate(&["schema"]);
    assert_eq!(out.status.code(), Some(0));
    let printed = text(&out.stdout);
    let path = root().join("schemas/loadgate.schema.json");
    if std::env::var_os("UPDATE_SCHEMAS").is_some() {
        std::fs::write(&path, &printed).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == printed,
        "schemas/loadgate.schema.json is stale: run `UPDATE_SCHEMAS=1 cargo test --test cli the_committed_schema_is_current`"
    );
}

#[test]
fn plans_of_every_spec() {
    for file in files("specs", "yaml") {
        let name = Path::new(&file).file_stem().unwrap().to_string_lossy().into_owned();
        let out = loadgate(&["plan", &file]);
        assert_eq!(out.status.code(), Some(0), "{file}: {}", text(&out.stderr));
        insta::assert_snapshot!(format!("plan__{name}"), text(&out.stdout));

        // The JSON plan: the same hash twice, exact splits.
        let a: serde_json::Value = serde_json::from_slice(&loadgate(&["plan", "--json", &file]).stdout).unwrap();
        let b: serde_json::Value = serde_json::from_slice(&loadgate(&["plan", "--json", &file]).stdout).unwrap();
        assert_eq!(a["hash"], b["hash"], "{file}: the plan hash must be stable");
        assert_eq!(a, b);
        for phase in a["phases"].as_array().unwrap() {
            let workers = phase["workers"].as_array().unwrap();
            let total_conns = phase["load"]["connections"]["connections"].as_u64().unwrap();
            let sum: u64 = workers.iter().map(|w| w["connections"].as_u64().unwrap()).sum();
            assert_eq!(sum, total_conns, "{file} {}: connections split exactly", phase["name"]);
            if let Some(requests) = phase["load"]["stop"]["requests"].as_u64() {
                let sum: u64 = workers.iter().map(|w| w["requests"].as_u64().unwrap()).sum();
                assert_eq!(sum, requests, "{file} {}: requests split exactly", phase["name"]);
            }
            let share_sum: u64 = workers.iter().map(|w| w["share"]["numerator"].as_u64().unwrap()).sum();
            let denominators: Vec<u64> = workers.iter().map(|w| w["share"]["denominator"].as_u64().unwrap()).collect();
            assert!(denominators.iter().all(|d| *d == share_sum), "{file}: rate shares sum to exactly 1");
        }
    }
}

#[test]
fn variables_follow_their_precedence() {
    // The spec default, then LOADGATE_VAR_<NAME>, then --set.
    let plan = |extra_env: Option<(&str, &str)>, set: Option<&str>| -> serde_json::Value {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_loadgate"));
        cmd.current_dir(root()).env_clear().args(["plan", "--json", "specs/quickstart.yaml"]);
        if let Some((k, v)) = extra_env {
            cmd.env(k, v);
        }
        if let Some(s) = set {
            cmd.args(["--set", s]);
        }
        serde_json::from_slice(&cmd.output().unwrap().stdout).unwrap()
    };
    let default = plan(None, None);
    assert_eq!(default["vars"]["connections"]["value"], "16");
    assert_eq!(default["vars"]["connections"]["source"], "default");
    let env = plan(Some(("LOADGATE_VAR_connections", "32")), None);
    assert_eq!(env["vars"]["connections"]["value"], "32");
    assert_eq!(env["vars"]["connections"]["source"], "environment");
    let set = plan(Some(("LOADGATE_VAR_connections", "32")), Some("connections=64"));
    assert_eq!(set["vars"]["connections"]["value"], "64");
    assert_eq!(set["vars"]["connections"]["source"], "command_line");
    assert_eq!(set["phases"][1]["load"]["connections"]["connections"], 64);
    // The same values give the same hash whatever their source.
    let via_set = plan(None, Some("connections=32"));
    assert_eq!(via_set["hash"], env["hash"]);
    assert_ne!(via_set["hash"], default["hash"]);
}

#[test]
fn import_turns_a_seed_command_line_into_a_spec_that_validates() {
    let out =
        loadgate(&["import", "taskset -c 16-31 wrk -t16 -c1000 -d5m --timeout 10s http://localhost:8080/api/orders"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("imported.yaml");
    std::fs::write(&path, &out.stdout).unwrap();
    let v = loadgate(&["plan", "--json", path.to_str().unwrap()]);
    assert_eq!(v.status.code(), Some(0), "{}", text(&v.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&v.stdout).unwrap();
    assert_eq!(plan["phases"][0]["load"]["connections"]["connections"], 1000);
    assert_eq!(plan["hardware"]["generator_cpus"], "16-31");
    assert_eq!(plan["hardware"]["workers"].as_array().unwrap().len(), 16);
    let bad = loadgate(&["import", "wrk -c lots http://h/"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("`-c`"), "{}", text(&bad.stderr));
}

#[test]
fn import_log_and_har_write_specs_that_validate_and_run_without_their_secrets() {
    let data = common::root().join("crates/import/tests/data/replay");
    let dir = tempfile::tempdir().unwrap();
    let nginx = "$remote_addr - $remote_user [$time_local] \"$request\" $status $body_bytes_sent \"$http_referer\" \
                 \"$http_user_agent\" $request_time $msec $connection";
    let log = data.join("nginx-timed.log");
    let out = loadgate(&["import", "log", log.to_str().unwrap(), "--nginx-format", nginx]);
    let (yaml, notes) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{notes}");
    // The log's access tokens are references to the environment, in the spec and in the notes alike.
    for logged in ["tok1", "tok7", "tok13"] {
        assert!(!yaml.contains(logged) && !notes.contains(logged), "{logged}:\n{yaml}\n{notes}");
    }
    assert!(yaml.contains("{{ env.LOADGATE_ACCESS_TOKEN }}") && yaml.contains("ramp:"), "{yaml}");
    assert!(notes.contains("40 requests skipped: method not GET or HEAD"), "{notes}");
    let har = data.join("shop.har");
    let out = loadgate(&["import", "har", har.to_str().unwrap()]);
    let yaml = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(yaml.contains("base_url: \"https://shop.example\""), "{yaml}");
    // Run against the built-in server, the secrets given as the notes say: none reaches a file or a printout.
    let canaries =
        [("LOADGATE_ACCESS_TOKEN", "canaryQUERYlog41"), ("LOADGATE_AUTHORIZATION", "Bearer canaryAUTHhar44")];
    let runnable = yaml.replace("base_url: \"https://shop.example\"", "builtin: plaintext");
    let spec = dir.path().join("shop.yaml");
    std::fs::write(&spec, runnable).unwrap();
    let out_dir = dir.path().join("out");
    let mut cmd = common::command(&["run", spec.to_str().unwrap(), "-v", "--out", out_dir.to_str().unwrap()]);
    for (k, v) in canaries {
        cmd.env(k, v);
    }
    let out = cmd.env("LOADGATE_COOKIE", "session=canaryCOOKIE45").output().unwrap();
    let printed = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{printed}");
    let files = common::files_under(&out_dir);
    assert!(files.iter().any(|f| f.ends_with("results.json")), "{files:?}");
    for canary in ["canaryQUERYlog41", "canaryAUTHhar44", "canaryCOOKIE45"] {
        assert!(!printed.contains(canary), "{canary} was printed");
        for file in &files {
            let content = String::from_utf8_lossy(&std::fs::read(file).unwrap()).into_owned();
            assert!(!content.contains(canary), "{canary} reached {}", file.display());
        }
    }
    // Bad input: a file that is not there, an unknown option; each a located message, exit 2.
    let missing = loadgate(&["import", "log", "/nonexistent/access.log"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).contains("cannot read /nonexistent/access.log"), "{}", text(&missing.stderr));
    let unknown = loadgate(&["import", "log", log.to_str().unwrap(), "--speed", "2x"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(text(&unknown.stderr).contains("unknown option `--speed`"), "{}", text(&unknown.stderr));
}

/// Runs `loadgate validate FILE` in `dir` under a 256 MiB address-space limit (issue 16's bound, on virtual
/// memory, which is stricter than resident) and a 20 s CPU-time limit, so a blow-up fails the test instead of the
/// machine. There is no wall-clock assertion: a loaded CI machine is slow, not wrong; the CPU limit only stops a
/// hang.
fn validate_bounded(dir: &Path, file: &str) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 262144 && ulimit -t 20 && exec \"$0\" validate \"$1\"")
        .arg(env!("CARGO_BIN_EXE_loadgate"))
        .arg(file)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("NO_COLOR", "1")
        .output()
        .expect("run loadgate")
}

/// A valid spec around one scenario body (indented under `main:`), with `top` added at the top level.
fn spec_with(top: &str, scenario: &str) -> String {
    format!(
        "version: 1\nname: hostile\n{top}target: {{ builtin: plaintext }}\nscenarios:\n  main:\n{scenario}    load: {{ closed: {{ connections: 8, duration: 1s }} }}\n"
    )
}

/// Every reproducer of issue 16 (and the worst cases around them) is refused with exit 2, within bounded memory
/// and CPU. The inputs are generated here, not committed.
#[test]
fn hostile_specs_are_refused_within_bounded_memory_and_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let mut bomb = String::from("a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
    for (prev, name) in "abcdefgh".chars().zip("bcdefghi".chars()) {
        bomb.push_str(&format!("{name}: &{name} [{}]\n", vec![format!("*{prev}"); 9].join(",")));
    }
    let padded_bomb = format!("{bomb}pad: [{}]\n", vec!["0"; 60_000].join(","));
    let request = |path: &str| format!("    request: {{ path: \"{path}\" }}\n");
    let cases: Vec<(&str, String, &str)> = vec![
        ("flow-nesting-100k.yaml", format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)), "nests too deeply"),
        ("map-nesting-40k.yaml", format!("{}1{}", "{a: ".repeat(40_000), "}".repeat(40_000)), "nests too deeply"),
        ("block-nesting.yaml", (0..600).map(|i| format!("{}- \n", "  ".repeat(i))).collect(), "nests too deeply"),
        ("alias-bomb-padded.yaml", padded_bomb, "alias bomb"),
        ("flat-1mib.yaml", format!("[{}]", vec!["b"; (1 << 19) - 2].join(",")), "more than 100000 values"),
        ("over-1mib.yaml", format!("description: \"{}\"\n", "x".repeat(1 << 20)), "a spec may be"),
        (
            "dev-zero-in-slo.yaml",
            spec_with("", &format!("{}    slo: [\"p99 < {{{{ pick_line('/dev/zero') }}}}\"]\n", request("/"))),
            "per-request generators only work in a request",
        ),
        (
            "dev-zero-in-path.yaml",
            spec_with("", &request("/{{ pick_line('/dev/zero') }}")),
            "outside the spec's directory",
        ),
        ("shadow.yaml", spec_with("", &request("/{{ pick_line('/etc/shadow') }}")), "outside the spec's directory"),
        ("escape.yaml", spec_with("", &request("/{{ pick_csv('../x.csv', 'id') }}")), "outside the spec's directory"),
        ("symlink.yaml", spec_with("", &request("/{{ pick_line('link.txt') }}")), "outside the spec's directory"),
        ("huge-data.yaml", spec_with("", &request("/{{ pick_line('huge.txt') }}")), "more than the 16 MiB"),
        (
            "nested-range.yaml",
            spec_with(
                "description: \"{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}\"\n",
                &request("/"),
            ),
            "more than 100000 instructions",
        ),
        (
            "string-times-1e8-in-matrix.yaml",
            spec_with(
                "",
                &format!("{}    matrix: {{ big: [\"{{{{ 'x' * 100000000 }}}}\"] }}\n", request("/{{ big }}")),
            ),
            "longer than 1 MiB",
        ),
        (
            "doubling-concat.yaml",
            spec_with("description: \"{{ ('x' * 1000000) ~ ('x' * 1000000) ~ ('x' * 1000000) }}\"\n", &request("/")),
            "longer than 1 MiB",
        ),
        (
            "folded-constants.yaml",
            spec_with("description: \"{{ [1] * 10**12 == [1] * 10**12 }}\"\n", &request("/")),
            "longer than 1 MiB",
        ),
        (
            "long-name.yaml",
            spec_with("", &request("/")).replace("name: hostile", &format!("name: {}", "a".repeat(200_000))),
            "characters long",
        ),
        ("number-too-large.yaml", spec_with("seed: 99999999999999999999999\n", &request("/")), "too large"),
    ];
    std::fs::write(dir.path().join("huge.txt"), "").unwrap();
    std::fs::File::options().write(true).open(dir.path().join("huge.txt")).unwrap().set_len(17 << 20).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", dir.path().join("link.txt")).unwrap();
    for (file, content, expected) in cases {
        std::fs::write(dir.path().join(file), content).unwrap();
        let out = validate_bounded(dir.path(), file);
        let stderr = text(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{file} must be refused with 2:\n{}",
            stderr.chars().take(2000).collect::<String>()
        );
        assert!(
            stderr.contains(expected),
            "{file} must say `{expected}`:\n{}",
            stderr.chars().take(2000).collect::<String>()
        );
        assert!(!stderr.contains("panicked"), "{file} panicked:\n{stderr}");
    }
}

/// The largest spec a matrix allows (10,000 cells) still validates within the same bounds.
#[test]
fn the_largest_matrix_validates_within_bounded_memory_and_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let values = (1..=100).map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
    let content = spec_with(
        "",
        &format!(
            "    request: {{ path: \"/{{{{ a }}}}/{{{{ b }}}}\", headers: {{ X-A: \"{{{{ a }}}}\" }}, body: \"{{{{ a }}}} and {{{{ b }}}}\" }}\n    matrix: {{ a: [{values}], b: [{values}] }}\n"
        ),
    );
    std::fs::write(dir.path().join("matrix.yaml"), content).unwrap();
    let out = validate_bounded(dir.path(), "matrix.yaml");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("10000 phases"), "{}", text(&out.stdout));
}

#[test]
fn every_spec_and_example_parses_with_a_second_independent_yaml_parser() {
    // loadgate reads YAML with yaml-rust2; serde_yaml (libyaml's rules, as PyYAML and ruamel) must read every
    // file too, so that editors, linters and other tools can.
    let mut all = files("specs", "yaml");
    all.extend(files("examples", "yaml"));
    all.extend(files("examples", "yml"));
    assert!(all.len() >= 10, "{all:?}");
    for file in all {
        let text = std::fs::read_to_string(root().join(&file)).unwrap();
        let parsed: Result<serde_yaml::Value, _> = serde_yaml::from_str(&text);
        assert!(parsed.is_ok(), "{file} is not portable YAML: {:?}", parsed.err());
    }
}

#[test]
fn completions_are_printed_for_every_shell() {
    for (shell, marker) in [
        ("bash", "complete -F _loadgate"),
        ("zsh", "#compdef loadgate"),
        ("fish", "complete -c loadgate"),
        ("powershell", "Register-ArgumentCompleter"),
        ("elvish", "edit:completion:arg-completer[loadgate]"),
    ] {
        let out = loadgate(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}: {}", text(&out.stderr));
        let script = text(&out.stdout);
        assert!(script.contains(marker), "{shell}: no `{marker}` in\n{script}");
        // The script knows the commands and the run flags.
        for word in ["validate", "completions", "latency", "u_latency", "json"] {
            assert!(script.contains(word), "{shell}: no `{word}`");
        }
    }
    let bash = text(&loadgate(&["completions", "bash"]).stdout);
    let checked = Command::new("bash").arg("-n").stdin(std::process::Stdio::piped()).spawn().and_then(|mut c| {
        use std::io::Write;
        c.stdin.take().unwrap().write_all(bash.as_bytes())?;
        c.wait()
    });
    if let Ok(status) = checked {
        assert!(status.success(), "bash -n refuses the bash completion script");
    }
    let out = loadgate(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2), "an unknown shell is invalid input");
}

#[test]
fn the_man_page_is_roff_generated_from_the_command_line() {
    let out = loadgate(&["man"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let page = text(&out.stdout);
    assert!(page.starts_with(".ie"), "roff:\n{}", &page[..page.len().min(300)]);
    assert!(page.contains(".TH loadgate 1"), "{page}");
    for word in ["validate", "completions", "man", "Exit codes"] {
        assert!(page.contains(word), "the page mentions `{word}`");
    }
    let dir = tempfile::tempdir().unwrap();
    let out = loadgate(&["man", "--dir", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for page in ["loadgate.1", "loadgate-run.1", "loadgate-serve.1", "loadgate-completions.1"] {
        let body = std::fs::read_to_string(dir.path().join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(body.contains(".TH"), "{page}");
    }
    let run = std::fs::read_to_string(dir.path().join("loadgate-run.1")).unwrap();
    assert!(run.contains("u_latency") && run.contains("annotations"), "run's page lists its flags");
    // Every page loadgate.1 names is written.
    let main = std::fs::read_to_string(dir.path().join("loadgate.1")).unwrap();
    for named in main.split("loadgate\\-").skip(1).filter_map(|rest| rest.split_once("(1)")).map(|(n, _)| n) {
        assert!(dir.path().join(format!("loadgate-{named}.1")).exists(), "loadgate.1 names loadgate-{named}(1)");
    }
    assert!(!main.contains("loadgate\\-help(1)"), "{main}");
    if Command::new("man").arg("--version").output().is_ok_and(|o| o.status.success()) {
        let rendered = Command::new("man").args(["-l", "-P", "cat"]).arg(dir.path().join("loadgate-run.1")).output();
        if let Ok(o) = rendered {
            assert!(text(&o.stdout).contains("SPEC"), "man renders the page:\n{}", text(&o.stderr));
        }
    }
}

/// `--print-spec` prints the equivalent spec: the run options that change the plan (`--pacing`,
/// `--connect-rate`) are in it, so the printed spec plans as the flags do.
#[test]
fn print_spec_carries_pacing_and_connect_rate() {
    let out = loadgate(&[
        "run",
        "-c",
        "4",
        "-d",
        "2s",
        "-R",
        "2000",
        "--pacing",
        "precise",
        "--connect-rate",
        "100/s",
        "--print-spec",
        "http://127.0.0.1:9/",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let yaml = text(&out.stdout);
    assert!(yaml.contains(r#"pacing: "precise""#) && yaml.contains(r#"connect_rate: "100/s""#), "{yaml}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("printed.yaml");
    std::fs::write(&path, &yaml).unwrap();
    let plan = loadgate(&["plan", "--json", path.to_str().unwrap()]);
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    assert_eq!(plan["hardware"]["workers"][0]["pacing"], "precise", "{plan:#}");
}

#[test]
fn run_takes_a_url_as_its_last_argument_as_wrk_does() {
    // --print-spec runs nothing: the positional URL was taken as a URL, not a file.
    let out = loadgate(&["run", "-c", "10", "-d", "2s", "--print-spec", "http://127.0.0.1:9/x"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let yaml = text(&out.stdout);
    assert!(yaml.contains("connections: 10") && yaml.contains("/x"), "{yaml}");
    // Both a URL and a spec, two URLs, a URL twice, flags without a URL, a host without its scheme: all refused.
    for (args, says) in [
        (vec!["run", "specs/quickstart.yaml", "http://127.0.0.1:9/"], "not both"),
        (vec!["run", "http://127.0.0.1:9/", "http://127.0.0.1:8/"], "one URL"),
        (vec!["run", "--url", "http://127.0.0.1:9/", "http://127.0.0.1:9/"], "give the URL once"),
        (vec!["run", "-c", "10", "specs/quickstart.yaml"], "-c describes a run without a spec and needs a URL"),
        (vec!["run", "127.0.0.1:8080"], "`http://127.0.0.1:8080`"),
    ] {
        let out = loadgate(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn serve_refuses_flags_for_kinds_they_do_not_apply_to() {
    let out = loadgate(&["serve", "--kind", "plaintext", "--delay", "20ms"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("a delay applies to the `delay` kind only"), "{}", text(&out.stderr));
    let out = loadgate(&["serve", "--kind", "echo", "--body-size", "10"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("`echo` sends the request's body back"), "{}", text(&out.stderr));
}

#[test]
fn cpu_lists_with_strides_are_accepted_by_specs_and_import_alike() {
    let out = loadgate(&["import", "taskset -c 0-6:2 wrk -c 8 -d 1s http://127.0.0.1:8080/"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let yaml = text(&out.stdout);
    assert!(yaml.contains("cpus: \"0,2,4,6\""), "{yaml}");
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("strides.yaml");
    std::fs::write(
        &spec,
        "version: 1\nname: strides\nhardware: { generator: { cpus: \"0-6:2\" }, on_mismatch: warn }\ntarget: { builtin: plaintext }\nscenarios:\n  main:\n    request: { path: / }\n    load: { closed: { connections: 1, duration: 1s } }\n",
    )
    .unwrap();
    let out = loadgate(&["validate", spec.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for bad in ["0-6:0", "3:2"] {
        std::fs::write(&spec, format!("version: 1\nname: strides\nhardware: {{ generator: {{ cpus: \"{bad}\" }} }}\ntarget: {{ builtin: plaintext }}\nscenarios:\n  main:\n    request: {{ path: / }}\n    load: {{ closed: {{ connections: 1, duration: 1s }} }}\n")).unwrap();
        assert_eq!(loadgate(&["validate", spec.to_str().unwrap()]).status.code(), Some(2), "{bad}");
        let out = loadgate(&["import", &format!("taskset -c {bad} wrk -c 8 -d 1s http://127.0.0.1:8080/")]);
        assert_eq!(out.status.code(), Some(2), "{bad}: import refuses it too");
    }
}

/// `streams` over HTTP/1.1, or with `keep_alive: false`, has no effect: `validate` says so with a located
/// warning (the spec stays valid), as it does for h2load's `-m` carried over without `--http2`.
#[test]
fn streams_without_http2_or_keep_alive_is_a_located_warning() {
    let dir = tempfile::tempdir().unwrap();
    let validate = |name: &str, protocol: &str, load: &str| {
        let yaml = format!(
            "version: 1\nname: s\ntarget:\n  base_url: http://127.0.0.1:9{protocol}\nscenarios:\n  main:\n    request: {{ path: / }}\n    load: {{ {load} }}\n"
        );
        let path = dir.path().join(format!("{name}.yaml"));
        std::fs::write(&path, yaml).unwrap();
        loadgate(&["validate", path.to_str().unwrap()])
    };
    let h2 = "\n  protocol: http2";
    for (name, protocol, load, says) in [
        (
            "http1",
            "",
            "closed: { connections: 2, duration: 1s, streams: 4 }",
            "`streams: 4` has no effect over HTTP/1.1",
        ),
        (
            "one-request",
            h2,
            "closed: { connections: 2, requests: 10, keep_alive: false, streams: 4 }",
            "`streams: 4` has no effect with `keep_alive: false`",
        ),
    ] {
        let out = validate(name, protocol, load);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert!(stderr.contains(&format!("warning: {says}")), "{stderr}");
        let line = if protocol.is_empty() { 8 } else { 9 };
        assert!(stderr.contains(&format!("{name}.yaml:{line}:")) && stderr.contains('^'), "located:\n{stderr}");
        assert!(stderr.contains("at: scenarios.main.load.closed.streams"), "{stderr}");
    }
    // With HTTP/2 and keep-alive, no warning.
    let out = validate("h2", h2, "closed: { connections: 2, duration: 1s, streams: 4 }");
    assert!(!text(&out.stderr).contains("warning"), "{}", text(&out.stderr));
}

#[test]
fn a_plan_carries_checks_captures_and_verification() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("checks.yaml");
    std::fs::write(
        &file,
        r#"version: 1
name: checks
target: { builtin: plaintext }
verify: { scenarios: all, requests: 2 }
scenarios:
  single:
    request:
      path: /json
      check:
        - status: [200, 2xx]
        - { header: Content-Type, matches: '^application/json' }
        - { body_contains: Hello }
        - { body_matches: 'Hel+o' }
        - { body_equals: "Hello, World!" }
        - { body_size: { max: 64KiB } }
        - { json: "$.items[0].id", equals: 1, name: first-id }
    load: { closed: { connections: 2, requests: 10 } }
    slo: ["check_failures{check=first-id} == 0"]
  flow:
    session:
      - name: login
        path: /login
        capture:
          token: { json: $.token }
          id: { header: Location, regex: '(\d+)$' }
          csrf: { regex: 'csrf=(\w+)' }
          sid: { cookie: session }
      - name: me
        path: "/items/{{ id }}"
        headers: { Authorization: "Bearer {{ token }}" }
        check: [{ json: $.token, equals: "{{ token }}" }]
    load: { closed: { connections: 2, requests: 10 } }
"#,
    )
    .unwrap();
    let path = file.to_string_lossy().into_owned();
    let out = loadgate(&["validate", &path]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = loadgate(&["plan", "--json", &path]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["verify"]["scenarios"], "all", "{:#}", plan["verify"]);
    assert_eq!(plan["verify"]["requests"], 2);
    let single = &plan["phases"][0];
    let subjects: Vec<&str> = single["request"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["kind"]["subject"].as_str().unwrap())
        .collect();
    assert_eq!(
        subjects,
        ["status", "header", "body_contains", "body_matches", "body_equals", "body_size", "json"],
        "{:#}",
        single["request"]["checks"]
    );
    assert_eq!(single["request"]["checks"][6]["name"], "first-id");
    assert_eq!(single["checks"]["verify"], true);
    let flow = &plan["phases"][1];
    assert_eq!(flow["checks"]["cookies"], true, "{:#}", flow["checks"]);
    let vars: Vec<&str> =
        flow["checks"]["variables"].as_array().unwrap().iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(vars, ["token", "id", "csrf", "sid"]);
    let login = &flow["session"][0]["request"];
    let from: Vec<&str> =
        login["captures"].as_array().unwrap().iter().map(|c| c["source"]["from"].as_str().unwrap()).collect();
    assert_eq!(from, ["json", "header", "regex", "cookie"], "{login:#}");
    let me = &flow["session"][1]["request"];
    assert_eq!(me["checks"][0]["name"], "json:$.token");
    let shown = me.to_string();
    assert!(shown.contains("\"var\""), "the path holds a variable's slot: {me:#}");
}
