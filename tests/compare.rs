//! `loadgate compare` through the real binary, on seed 003's study: three builds of a server (the built-in
//! delay server, each build faster than the one before) x four connection counts, compared with the deltas of
//! every build over the others, checked against the numbers in each results.json.

mod common;

use std::path::{Path, PathBuf};

use common::{loadgate, text};

/// A build of the server: the built-in delay server with this delay per request, swept over connections.
fn spec(dir: &Path, build: &str, delay_ms: f64) -> PathBuf {
    let path = dir.join(format!("{build}.yaml"));
    std::fs::write(
        &path,
        format!(
            "version: 1\nname: zio-plaintext\ntarget: {{ builtin: {{ kind: delay, delay: {delay_ms}ms }} }}\n\
             scenarios:\n  plaintext:\n    request: {{ path: / }}\n    matrix: {{ connections: [1, 2, 4, 8] }}\n    \
             load: {{ closed: {{ connections: \"{{{{ connections }}}}\", duration: 300ms }} }}\n    slo: [error_rate < 1%]\n"
        ),
    )
    .expect("write the spec");
    path
}

/// Runs a build and gives its results.json.
fn run(dir: &Path, build: &str, delay_ms: f64, extra: &[&str]) -> PathBuf {
    let spec = spec(dir, build, delay_ms);
    let out = dir.join(format!("out-{build}"));
    let mut args = vec!["run", spec.to_str().expect("utf-8"), "--out", out.to_str().expect("utf-8"), "-q"];
    args.extend_from_slice(extra);
    let done = loadgate(&args);
    assert_eq!(done.status.code(), Some(0), "{build}: {}", text(&done.stderr));
    out.join("zio-plaintext/results.json")
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json")
}

/// The throughput of each instance in a results.json.
fn throughputs(results: &Path) -> Vec<(String, f64)> {
    json(results)["scenarios"]
        .as_array()
        .expect("scenarios")
        .iter()
        .map(|s| (s["name"].as_str().expect("name").to_owned(), s["throughput"].as_f64().expect("throughput")))
        .collect()
}

#[test]
fn three_builds_by_four_connection_counts_make_seed_003s_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    let builds = [("baseline", 4.0), ("perf-pass-1", 3.0), ("domain-split", 2.0)];
    let files: Vec<PathBuf> = builds.iter().map(|(b, d)| run(dir.path(), b, *d, &[])).collect();
    let out = dir.path().join("compare");
    let mut args: Vec<String> = vec!["compare".into()];
    args.extend(files.iter().map(|f| f.display().to_string()));
    for (b, _) in &builds {
        args.extend(["--label".into(), (*b).into()]);
    }
    args.extend(["--against".into(), "previous".into(), "--out".into(), out.display().to_string()]);
    args.extend(["--format".into(), "markdown".into()]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let done = loadgate(&refs);
    assert_eq!(done.status.code(), Some(0), "{}", text(&done.stderr));
    let md = text(&done.stdout);

    // The table: one row per cell, the three builds' values, then each build over the others.
    let header = "| Instance | baseline | perf-pass-1 | domain-split | perf-pass-1 vs baseline | domain-split vs baseline | domain-split vs perf-pass-1 |";
    assert!(md.contains(header), "{md}");
    let values: Vec<Vec<(String, f64)>> = files.iter().map(|f| throughputs(f)).collect();
    let compared = json(&out.join("compare.json"));
    let cells = compared["cells"].as_array().expect("cells");
    assert_eq!(cells.len(), 4, "four connection counts");
    for (i, cell) in cells.iter().enumerate() {
        let name = cell["name"].as_str().expect("name");
        assert_eq!(name, format!("plaintext[connections={}]", [1, 2, 4, 8][i]));
        let tp = cell["metrics"][0].clone();
        assert_eq!(tp["metric"], "throughput");
        let v: Vec<f64> =
            values.iter().map(|run| run.iter().find(|(n, _)| n == name).expect("cell in run").1).collect();
        // compare.json's changes are the ratios of the results' own numbers.
        let expected = [v[1] / v[0] - 1.0, v[2] / v[0] - 1.0, v[2] / v[1] - 1.0];
        for (k, e) in expected.iter().enumerate() {
            let got = tp["changes"][k]["relative"].as_f64().expect("a change");
            assert!((got - e).abs() < 1e-9, "{name} column {k}: {got} vs {e}");
        }
        // And the Markdown row shows them to two decimals, with every build's value.
        let row = md.lines().find(|l| l.starts_with(&format!("| {} |", name.replace('|', "\\|")))).expect("a row");
        for e in expected {
            assert!(row.contains(&format!("{:+.2}%", e * 100.0)), "{row} lacks {e}");
        }
        // Each build has a shorter delay per request than the one before it, but on a loaded machine a build's
        // run can still be the slower one: the test checks the table against the results, never the speeds.
    }
    // The files, each read by what reads it: Markdown, JSON, SVG (XML), HTML.
    for f in
        ["compare.md", "compare.html", "compare.json", "compare-throughput-plaintext.svg", "compare-p99-plaintext.svg"]
    {
        assert!(out.join(f).is_file(), "{f} written");
    }
    // A matrix scenario is drawn as one curve per build, its knee marked where a build has one.
    let svg = std::fs::read_to_string(out.join("compare-throughput-plaintext.svg")).expect("the sweep plot");
    let doc = roxmltree::Document::parse(&svg).expect("well-formed SVG");
    let texts: Vec<&str> = doc.descendants().filter_map(|n| n.text()).collect();
    for (b, _) in &builds {
        assert!(texts.iter().any(|t| t.contains(b)), "the legend names {b}");
    }
    assert!(texts.iter().any(|t| t.contains("throughput (requests/s)")), "the axis says its unit");
    assert!(texts.iter().any(|t| t.contains("connections")), "the x axis names the swept variable");
    screenshot(&out.join("compare.html"), dir.path());
}

#[test]
fn repetitions_judge_each_change_with_an_interval_and_a_word() {
    let dir = tempfile::tempdir().expect("tempdir");
    // 20 ms against 1 ms per request: a loaded machine's scheduling delays (a few ms) cannot turn the order.
    let slow = run(dir.path(), "slow", 20.0, &["--repeat", "8"]);
    let fast = run(dir.path(), "fast", 1.0, &["--repeat", "8"]);
    let done = loadgate(&[
        "compare",
        slow.to_str().expect("utf-8"),
        fast.to_str().expect("utf-8"),
        "--metric",
        "throughput,p50",
        "--format",
        "json",
    ]);
    assert_eq!(done.status.code(), Some(0), "{}", text(&done.stderr));
    let c: serde_json::Value = serde_json::from_str(&text(&done.stdout)).expect("json");
    let (mut faster, mut judged) = (0, 0);
    for cell in c["cells"].as_array().expect("cells") {
        for m in cell["metrics"].as_array().expect("metrics") {
            let ch = &m["changes"][0];
            // Every change over repetitions has its estimate inside its interval, and a word.
            let est = &ch["estimate"];
            let (lo, r, hi) = (est["lower"].as_f64(), est["ratio"].as_f64(), est["upper"].as_f64());
            assert!(lo <= r && r <= hi && lo.is_some(), "{}: {est}", cell["name"]);
            judged += 1;
            // A 20 ms delay against 1 ms is never judged slower; a round a loaded machine stalls can make a cell
            // "can't tell" (that is the interval's honesty), not the other way.
            assert_ne!(ch["word"], "slower", "{}: {m}", cell["name"]);
            if ch["word"] == "faster" {
                faster += 1;
            }
        }
    }
    assert!(faster * 2 >= judged, "most of the {judged} changes are judged faster, {faster} were: {c}");
    // The same files the other way round: slower, and --fail-on-regression makes that exit 1.
    let done = loadgate(&[
        "compare",
        fast.to_str().expect("utf-8"),
        slow.to_str().expect("utf-8"),
        "--metric",
        "throughput",
        "--fail-on-regression",
    ]);
    assert_eq!(done.status.code(), Some(1), "{}", text(&done.stderr));
    assert!(text(&done.stdout).contains("slower"), "{}", text(&done.stdout));
    assert!(text(&done.stderr).contains("regression"), "{}", text(&done.stderr));
}

#[test]
fn runs_of_different_plans_are_compared_with_a_warning_that_names_the_difference() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = run(dir.path(), "a", 2.0, &[]);
    let b = run(dir.path(), "b", 3.0, &[]);
    let done = loadgate(&["compare", a.to_str().expect("utf-8"), b.to_str().expect("utf-8")]);
    assert_eq!(done.status.code(), Some(0), "{}", text(&done.stderr));
    // The terminal shows each warning once: in the text, under the runs it is about (issue 45).
    let all = format!("{}{}", text(&done.stdout), text(&done.stderr));
    assert!(all.contains("warning:") && all.contains("another plan"), "{all}");
    assert_eq!(all.matches("another plan").count(), 1, "{all}");
    // A format that is not the terminal's text says it on stderr too; its own text carries it once.
    let done = loadgate(&["compare", a.to_str().expect("utf-8"), b.to_str().expect("utf-8"), "--format", "markdown"]);
    assert!(text(&done.stderr).contains("another plan"), "{}", text(&done.stderr));
    let md = text(&done.stdout);
    assert_eq!(md.matches("another plan").count(), 1, "{md}");
    // The machine names its system once (`Linux 6.x ... x86_64`, not `Linux Linux ...`).
    assert!(!md.contains("Linux Linux"), "{md}");
}

#[test]
fn bad_input_is_refused_with_the_file_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let garbage = dir.path().join("garbage.json");
    std::fs::write(&garbage, b"\x00\x01 not json").expect("write");
    let done = loadgate(&["compare", garbage.to_str().expect("utf-8"), garbage.to_str().expect("utf-8")]);
    assert_eq!(done.status.code(), Some(2));
    assert!(text(&done.stderr).contains("garbage.json"), "{}", text(&done.stderr));
    let done = loadgate(&["compare", garbage.to_str().expect("utf-8")]);
    assert_eq!(done.status.code(), Some(2), "one file is not a comparison");
    let a = run(dir.path(), "a", 1.0, &[]);
    let done = loadgate(&["compare", a.to_str().expect("utf-8"), a.to_str().expect("utf-8"), "--metric", "p99x"]);
    assert_eq!(done.status.code(), Some(2));
    assert!(text(&done.stderr).contains("`p99x` is not a metric"), "{}", text(&done.stderr));
}

/// Looks at the page in headless Chromium (`LOADGATE_CHROMIUM`, or `chromium` on the PATH): it renders to a
/// screenshot of some size. Skips, saying so, without a browser.
fn screenshot(page: &Path, dir: &Path) {
    let browser = std::env::var_os("LOADGATE_CHROMIUM").map(PathBuf::from).or_else(|| {
        ["chromium", "chromium-browser", "google-chrome"].iter().find_map(|name| {
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
                .map(|p| p.join(name))
                .find(|p| p.is_file())
        })
    });
    let Some(browser) = browser else {
        eprintln!("SKIPPED: no Chromium (set LOADGATE_CHROMIUM): compare.html was not looked at in a browser");
        return;
    };
    let png = dir.join("compare.png");
    let profile = tempfile::tempdir().expect("tempdir");
    let done = std::process::Command::new(&browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--window-size=1100,2400",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium");
    assert!(done.status.success(), "chromium: {}", text(&done.stderr));
    let bytes = std::fs::read(&png).expect("a screenshot");
    assert!(bytes.starts_with(b"\x89PNG"), "a PNG");
    // A blank page compresses to a few kilobytes; tables and three plots do not.
    assert!(bytes.len() > 30_000, "the screenshot shows the page ({} bytes)", bytes.len());
    if let Some(keep) = std::env::var_os("LOADGATE_KEEP_SCREENSHOTS") {
        let _ = std::fs::copy(&png, Path::new(&keep).join("compare.png"));
    }
}
