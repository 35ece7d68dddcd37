//! The reports of a fixed, hand-built run, checked by snapshot and by the parsers CI systems and renderers use.

use loadgate_report::*;
use loadgate_results::fixture::sample_run;
use loadgate_results::{outcome, RunResults};

fn run() -> RunResults {
    sample_run()
}

#[test]
fn junit_snapshot() {
    insta::assert_snapshot!("junit", junit(&run()).unwrap());
}

#[test]
fn markdown_snapshot() {
    insta::assert_snapshot!("markdown", markdown(&run(), None).unwrap());
}

#[test]
fn text_summary_snapshots() {
    let r = run();
    let all: String = r.scenarios.iter().map(text_summary).collect::<Vec<_>>().join("\n");
    insta::assert_snapshot!("text_summaries", all);
    insta::assert_snapshot!("summary_table", summary_table(&r, false));
}

#[test]
fn hgrm_snapshot() {
    let r = run();
    insta::assert_snapshot!("hgrm_put_constant_rate", hgrm(&r.scenarios[4].histograms.latency));
}

#[test]
fn colour_only_when_asked() {
    let r = run();
    let plain = summary_table(&r, false);
    assert!(!plain.contains('\x1b'), "{plain}");
    let coloured = summary_table(&r, true);
    assert!(coloured.contains("\x1b[1;31mFAIL 1/3\x1b[0m"), "{coloured}");
    for s in &r.scenarios {
        assert!(!text_summary(s).contains('\x1b'));
    }
    assert!(!markdown(&r, None).unwrap().contains('\x1b'));
}

fn attr<'a>(node: roxmltree::Node<'a, 'a>, name: &str) -> &'a str {
    node.attribute(name).unwrap_or_else(|| panic!("<{}> has no `{name}`", node.tag_name().name()))
}

#[test]
fn junit_parses_back_with_counts_that_add_up() {
    let r = run();
    let xml = junit(&r).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    let suites: Vec<_> = root.children().filter(|n| n.has_tag_name("testsuite")).collect();
    assert_eq!(suites.len(), 1);
    let suite = suites[0];
    assert_eq!(attr(suite, "name"), "tfb-plaintext");

    let cases: Vec<_> = suite.children().filter(|n| n.has_tag_name("testcase")).collect();
    let count = |tag: &str| cases.iter().filter(|c| c.children().any(|n| n.has_tag_name(tag))).count();
    let (failures, skipped) = (count("failure"), count("skipped"));
    assert_eq!(attr(suite, "tests").parse::<usize>().unwrap(), cases.len());
    assert_eq!(attr(suite, "failures").parse::<usize>().unwrap(), failures);
    // quick-junit (0.8) writes the skipped count as `skipped`, on the suite and on the root.
    assert_eq!(attr(suite, "skipped").parse::<usize>().unwrap(), skipped);
    assert_eq!(attr(root, "skipped").parse::<usize>().unwrap(), skipped);
    assert_eq!(attr(suite, "errors").parse::<usize>().unwrap(), 0);
    assert_eq!(attr(root, "tests").parse::<usize>().unwrap(), cases.len());
    assert_eq!(attr(root, "failures").parse::<usize>().unwrap(), failures);

    // 1 warmup SLO + 3 SLOs x 3 plaintext cells + 1 validity case + 5 put SLOs + 2 users SLOs.
    assert_eq!(cases.len(), 18);
    // p99 on 1024 connections, and the invalid 4096 cell.
    assert_eq!(failures, 2);
    // The warmup's SLO, the baseline SLO without a baseline, the per-request SLO.
    assert_eq!(skipped, 3);

    // Each instance's time once, on its first testcase: the testcases add up to the time the load ran.
    let total: f64 = cases.iter().map(|c| attr(*c, "time").parse::<f64>().unwrap()).sum();
    let ran: f64 = r.scenarios.iter().map(|s| s.duration).sum();
    assert!((total - ran).abs() < 0.01, "{total} vs {ran}");
    for c in &cases {
        assert!(!attr(*c, "name").is_empty());
        assert_eq!(attr(*c, "classname"), "tfb-plaintext");
        let time: f64 = attr(*c, "time").parse().unwrap();
        assert!(time >= 0.0);
        for f in c.children().filter(|n| n.has_tag_name("failure")) {
            assert!(!attr(f, "message").is_empty());
        }
        let out = c.children().find(|n| n.has_tag_name("system-out")).and_then(|n| n.text()).unwrap_or_default();
        assert!(out.contains("Requests/sec:"), "{out}");
    }
    let failing = cases.iter().find(|c| attr(**c, "name") == "plaintext[connections=1024]: p99 < 100ms").unwrap();
    let failure = failing.children().find(|n| n.has_tag_name("failure")).unwrap();
    assert_eq!(attr(failure, "message"), "p99 was 141.7ms, threshold < 100ms");
    assert!(cases.iter().any(|c| attr(*c, "name") == "plaintext[connections=4096]: valid measurement"));

    let props: Vec<(&str, &str)> = suite
        .children()
        .filter(|n| n.has_tag_name("properties"))
        .flat_map(|p| p.children().filter(|n| n.has_tag_name("property")))
        .map(|p| (attr(p, "name"), attr(p, "value")))
        .collect();
    for key in ["plan.hash", "loadgate.version", "machine", "sweep.plaintext.knee"] {
        assert!(props.iter().any(|(k, v)| *k == key && !v.is_empty()), "{key}: {props:?}");
    }
}

#[test]
fn a_scenario_without_slos_still_shows_up() {
    let mut r = run();
    r.scenarios[1].judged.verdicts.clear();
    let xml = junit(&r).unwrap();
    assert!(xml.contains(r#"name="plaintext[connections=256]: ran""#), "{xml}");
}

#[test]
fn markdown_is_gfm_with_real_tables() {
    use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
    let r = run();
    let md = markdown(&r, None).unwrap();
    let parser = Parser::new_ext(&md, Options::ENABLE_TABLES);
    let mut tables = 0;
    let mut rows_in_table = Vec::new();
    let mut rows = 0;
    let mut headings = Vec::new();
    let mut in_heading = false;
    let mut heading = String::new();
    for event in parser {
        match event {
            Event::Start(Tag::Table(_)) => {
                tables += 1;
                rows = 0;
            }
            Event::Start(Tag::TableRow) => rows += 1,
            Event::End(TagEnd::Table) => rows_in_table.push(rows),
            Event::Start(Tag::Heading { .. }) => {
                in_heading = true;
                heading.clear();
            }
            Event::End(TagEnd::Heading(_)) => {
                in_heading = false;
                headings.push(heading.clone());
            }
            Event::Text(t) if in_heading => heading.push_str(&t),
            _ => {}
        }
    }
    // Scenarios, details, SLOs, one sweep, one users scenario's buckets, 6 per-second timelines, resources,
    // machine, pinning (no TLS table: the sample run's target speaks plain HTTP).
    assert_eq!(tables, 14, "{md}");
    // Body rows (the header row is in TableHead): 6 scenarios, 6 scenarios, 17 SLOs, 3 cells, 4 buckets,
    // the timelines (15 seconds, or 30 of the 30-second phases), 6 scenarios' resources.
    assert_eq!(&rows_in_table[..12], &[6, 6, 17, 3, 4, 15, 15, 15, 15, 30, 30, 6], "{md}");
    assert_eq!(headings[0], "⚠️ tfb-plaintext: invalid measurement");
    assert!(headings.iter().any(|h| h == "Sweep: plaintext"), "{headings:?}");
    assert!(headings.iter().any(|h| h == "Users: browse-users"), "{headings:?}");
    assert!(md.contains("sha256:4f1c2b9e7a30d5c8"));
}

#[test]
fn templates_can_be_overridden_and_errors_are_reported() {
    let r = run();
    let custom =
        "{{ report.name }} {{ results.spec.plan_hash }} {% for s in report.scenarios %}{{ s.p99 }};{% endfor %}";
    assert_eq!(
        markdown(&r, Some(custom)).unwrap(),
        "tfb-plaintext sha256:4f1c2b9e7a30d5c8 19.73ms;10.12ms;141.7ms;63.68ms;16.66ms;1.27s;"
    );
    let err = markdown(&r, Some("{% for %}")).unwrap_err().to_string();
    assert!(err.starts_with("Markdown template: syntax error"), "{err}");
    let err = markdown(&r, Some("{{ report.nope }}")).unwrap_err().to_string();
    assert!(err.contains("undefined"), "{err}");
}

#[test]
fn a_passing_run_reads_as_passed_everywhere() {
    let mut r = run();
    r.scenarios.retain(|s| s.validity.valid && s.judged.verdicts.iter().all(|v| v.passed));
    r.outcome = outcome(&r);
    assert_eq!(r.outcome.exit_code, 0);
    let md = markdown(&r, None).unwrap();
    assert!(md.starts_with("## ✅ tfb-plaintext: passed"), "{md}");
    assert!(!junit(&r).unwrap().contains("<failure"));
    assert!(summary_table(&r, false).contains("tfb-plaintext passed (exit 0)"));
}

#[test]
fn results_json_of_the_fixture_validates_against_the_committed_schema() {
    let schema_text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../schemas/results.schema.json")).unwrap();
    let schema: serde_json::Value = serde_json::from_str(&schema_text).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let json = loadgate_results::to_json(&run()).unwrap();
    let instance: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(validator.is_valid(&instance));
    let back = loadgate_results::from_json(&json).unwrap();
    assert_eq!(junit(&back).unwrap(), junit(&run()).unwrap(), "a report re-rendered from results.json is the same");
    assert_eq!(markdown(&back, None).unwrap(), markdown(&run(), None).unwrap());
}

#[test]
fn file_stems_are_safe() {
    assert_eq!(file_stem("plaintext[connections=256]"), "plaintext-connections-256");
    assert_eq!(file_stem("put-constant-rate"), "put-constant-rate");
    assert_eq!(file_stem("a/b c[path=/x?y=1]"), "a-b-c-path-x-y-1");
    assert_eq!(file_stem("../.."), "scenario");
    // A long matrix cell fits a file name (255 bytes) with room for a prefix and suffix, and two cells that
    // differ only at the end stay apart.
    let long = |v: &str| format!("scenario[path={}{v}]", "/segment".repeat(60));
    let (a, b) = (file_stem(&long("a")), file_stem(&long("b")));
    assert!(a.len() <= loadgate_plot::MAX_STEM_BYTES && b.len() <= loadgate_plot::MAX_STEM_BYTES, "{a}");
    assert_ne!(a, b);
    assert!(a.starts_with("scenario-path-segment-segment"), "{a}");
    assert_eq!(a, file_stem(&long("a")), "stable");
    let long = format!("sweep[body={}]", "b".repeat(500));
    assert!(file_stem(&long).len() <= 200, "{}", file_stem(&long));
}

/// Seed 000: wrk -t16 against a server that collapses past 31 connections. The cells are the fixture's
/// plaintext cell with the seed's throughput and mean latency.
fn seed_000_run() -> RunResults {
    let mut r = run();
    let template = r.scenarios[1].clone();
    r.scenarios.retain(|s| s.matrix.is_empty());
    for (i, (connections, throughput, mean_ms)) in
        [(8, 1468.84, 5.44), (16, 1327.12, 12.05), (31, 1342.77, 11.90), (32, 820.76, 38.91), (48, 422.99, 112.79)]
            .into_iter()
            .enumerate()
    {
        let mut s = template.clone();
        s.index = 1 + i;
        s.name = format!("sweep[connections={connections}]");
        s.scenario = "sweep".to_owned();
        s.matrix = vec![("connections".to_owned(), connections.to_string())];
        s.throughput = throughput;
        s.histograms.latency =
            loadgate_results::fixture::exponential_histogram(10_000, mean_ms * 900.0, mean_ms * 100.0);
        s.latency = loadgate_results::LatencySummary::from_histogram(&s.histograms.latency);
        r.scenarios.insert(1 + i, s);
    }
    r.sweeps = loadgate_results::sweeps(&r);
    r.outcome = outcome(&r);
    r
}

#[test]
fn seed_000_collapse_stands_out_in_every_report() {
    let r = seed_000_run();
    let expected = "throughput collapsed at connections=32: 821/s, down 39% from 1,343/s at connections=31";
    let md = markdown(&r, None).unwrap();
    assert!(md.contains(&format!("**Knee:** {expected}")), "{md}");
    assert!(md.contains(&format!("📉 **Knee.** Sweep sweep: {expected}")), "{md}");
    assert!(md.contains("| **32** | **821/s** |"), "{md}");
    assert_eq!(md.matches("· knee: collapse**").count(), 1, "{md}");

    let table = summary_table(&r, false);
    let knee_row = table.lines().find(|l| l.contains("<- knee")).unwrap();
    assert!(knee_row.starts_with("sweep[connections=32] "), "{table}");
    assert!(table.contains(&format!("Knee of sweep sweep: {expected}")), "{table}");

    let xml = junit(&r).unwrap();
    assert!(xml.contains(&format!("Knee of sweep sweep (this cell): {expected}")), "{xml}");
    assert!(
        xml.contains(r#"<property name="sweep.sweep.knee" value="throughput collapsed at connections=32"#),
        "{xml}"
    );

    // Reports of a results.json without `sweeps` (an older file) derive the same knee.
    let mut older = r.clone();
    older.sweeps.clear();
    assert_eq!(markdown(&older, None).unwrap(), md);
}

/// What a pull request's reviewer reads of an A/B run: the side-by-side table, the spread over rounds and a
/// verdict with its interval per check (FAIL, INCONCLUSIVE, PASS), in Markdown, JUnit and the terminal.
#[test]
fn ab_run_snapshots() {
    let r = loadgate_results::fixture::sample_ab_run();
    let statuses: Vec<_> =
        r.scenarios[0].judged.verdicts.iter().map(|v| v.statistics.as_ref().map(|s| s.status)).collect();
    use loadgate_results::StatisticalStatus::*;
    assert_eq!(statuses, [Some(Fail), Some(Inconclusive), None], "the fixture shows all three verdicts");
    insta::assert_snapshot!("ab_markdown", markdown(&r, None).unwrap());
    insta::assert_snapshot!("ab_junit", junit(&r).unwrap());
    let text = r.scenarios.iter().map(text_summary).collect::<Vec<_>>().join("\n");
    insta::assert_snapshot!("ab_text", text);
}

/// Parses report.html as XML (it has `<!DOCTYPE html>`, a DTD without declarations).
fn parse_html(text: &str) -> Result<roxmltree::Document<'_>, roxmltree::Error> {
    roxmltree::Document::parse_with_options(text, roxmltree::ParsingOptions { allow_dtd: true, ..Default::default() })
}

/// The HTML report of a run with every plot drawn, as the runner writes it.
fn page(r: &RunResults) -> String {
    let plots: Vec<(Figure, String)> = loadgate_plot::figures(r)
        .into_iter()
        .map(|f| {
            let svg = loadgate_plot::render(r, &f).unwrap();
            (f, svg)
        })
        .collect();
    html(r, &plots).unwrap()
}

#[test]
fn the_html_report_is_self_contained_well_formed_and_embeds_every_plot() {
    let r = run();
    let text = page(&r);
    // Nothing fetched: no script, stylesheet link, image source, import or URL other than the SVG namespace.
    for needle in ["<script", "<link", "src=", "@import", "url(", "href=\"http", "<iframe", "<object"] {
        assert!(!text.contains(needle), "{needle} in report.html");
    }
    let without_ns = text.replace("http://www.w3.org/2000/svg", "");
    assert!(!without_ns.contains("http://") && !without_ns.contains("https://"), "an absolute URL in report.html");

    let doc = parse_html(&text).unwrap_or_else(|e| panic!("report.html is not well-formed: {e}"));
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "html");
    let svgs: Vec<_> = root.descendants().filter(|n| n.has_tag_name("svg")).collect();
    let figures = loadgate_plot::figures(&r);
    assert_eq!(svgs.len(), figures.len());
    for f in &figures {
        let embedded =
            svgs.iter().any(|s| s.children().any(|c| c.has_tag_name("title") && c.text() == Some(f.title.as_str())));
        assert!(embedded, "{} is not inline", f.title);
        // And linked, for a reader who wants the file.
        assert!(text.contains(&format!("href=\"{}\"", f.file)), "{} not linked", f.file);
    }
    let cells = |tag: &str| root.descendants().filter(|n| n.has_tag_name(tag)).count();
    // Scenario table rows + SLO rows + sweep rows + resources rows, and more.
    assert!(cells("tr") >= 6 + 17 + 3 + 6, "{}", cells("tr"));
    let style = root.descendants().find(|n| n.has_tag_name("style")).and_then(|n| n.text()).unwrap();
    assert!(style.contains("prefers-color-scheme: dark") && style.contains("#theme-dark:checked"), "{style}");
    assert!(text.contains("invalid measurement"));
    let knee = &r.sweeps[0].knee.as_ref().unwrap().explanation;
    assert!(root.descendants().any(|n| n.text().is_some_and(|t| t.contains(knee.as_str()))), "the knee is explained");
}

#[test]
fn the_html_report_escapes_names_and_renders_without_plots() {
    let mut r = run();
    r.spec.name = "a<b>&\"c\"".to_owned();
    r.scenarios[0].name = "<script>alert(1)</script>".to_owned();
    let text = html(&r, &[]).unwrap();
    assert!(!text.contains("<script>"), "{text}");
    parse_html(&text).unwrap();
    let text = page(&r);
    assert!(!text.contains("<script>"));
    parse_html(&text).unwrap();
}

#[test]
fn markdown_links_every_plot_and_carries_the_timeline_table() {
    let r = run();
    let md = markdown(&r, None).unwrap();
    for f in loadgate_plot::figures(&r) {
        assert!(md.contains(&format!("]({})", f.file)), "{} not linked:\n{md}", f.file);
    }
    assert!(md.contains("### Per-second timeline"), "{md}");
    assert!(md.contains("| t (s) | requests/s | p50 | p99 | max | errors | non-2xx | connections | users |"), "{md}");
}

#[test]
fn a_long_phase_is_grouped_into_at_most_thirty_rows() {
    let mut r = run();
    let s = &mut r.scenarios[1];
    let point = s.timeline[0].clone();
    s.timeline = (1..=95)
        .map(|t| {
            let mut p = point.clone();
            p.t = f64::from(t);
            p.p99_us = if t == 50 { 900_000 } else { 1_000 };
            p
        })
        .collect();
    let tables = loadgate_report::plots::timeline_tables(&r);
    let t = tables.iter().find(|t| t.name == r.scenarios[1].name).unwrap();
    assert_eq!(t.seconds_per_row, 4);
    assert_eq!(t.rows.len(), 24);
    assert_eq!(t.rows[0].t, "1-4");
    // The stall stays visible: a group shows its worst second.
    assert!(t.rows.iter().any(|row| row.p99 == "900.0ms"), "{:?}", t.rows);
}

/// A capacity search: the capacity, why the search stopped and the curve of every step, in the terminal, the
/// Markdown, JUnit and the HTML report.
#[test]
fn capacity_run_snapshots() {
    let r = loadgate_results::fixture::sample_capacity_run();
    assert_eq!(r.outcome.status, loadgate_results::OutcomeStatus::Passed, "{:?}", r.outcome);
    let text = r.scenarios.iter().map(text_summary).collect::<Vec<_>>().join("\n");
    insta::assert_snapshot!("capacity_text", text);
    insta::assert_snapshot!("capacity_summary_table", summary_table(&r, false));
    insta::assert_snapshot!("capacity_markdown", markdown(&r, None).unwrap());
    insta::assert_snapshot!("capacity_junit", junit(&r).unwrap());
    let step = &r.scenarios[0].capacity.as_ref().unwrap().steps[3];
    assert_eq!(
        capacity_step_line(step),
        format!(
            "step 4 (step up) 4,000/s: achieved 2,702/s, p50 4.20ms, p99 61.00ms, 3 errors: FAIL: {}",
            step.reasons.join("; ")
        )
    );
    let html = page(&r);
    let doc = parse_html(&html).unwrap_or_else(|e| panic!("{e}\n{html}"));
    let section = doc.descendants().find(|n| n.attribute("id") == Some("capacity")).expect("a capacity section");
    assert_eq!(section.text(), Some("Capacity"));
    let rows = doc.descendants().filter(|n| n.has_tag_name("tr") && n.attribute("class") == Some("knee-row")).count();
    assert_eq!(rows, 4, "the steps that failed stand out");
    let plot = doc.descendants().find(|n| n.has_tag_name("svg") && n.attribute("data-plot") == Some("capacity"));
    assert!(plot.is_some(), "the capacity plot is inline");
}

/// An HTTPS scenario's connect time and TLS handshake figures reach the terminal summary, the Markdown (the
/// details table and a TLS table) and report.html, with an unchecked certificate said loudly in each.
#[test]
fn tls_figures_reach_every_report() {
    let mut r = run();
    let s = &mut r.scenarios[1];
    let mut tls = loadgate_results::TlsStats {
        handshakes: 256,
        resumed: 0,
        handshake_time: s.connect_time.clone(),
        insecure: true,
        ..Default::default()
    };
    tls.versions.insert("TLSv1_3".to_owned(), 256);
    s.tls = Some(tls);
    let name = s.name.clone();

    let text = text_summary(&r.scenarios[1]);
    let line = text.lines().find(|l| l.trim_start().starts_with("TLS:")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("256 handshakes (0 resumed; TLSv1_3 256)"), "{line}");
    assert!(line.contains("INSECURE"), "{line}");
    assert!(text.contains("Connect time: p50"), "{text}");

    let md = markdown(&r, None).unwrap();
    assert!(md.contains("| scenario | TLS handshake p50 / p99 / max | TLS |"), "{md}");
    let rows: Vec<&str> = md.lines().filter(|l| l.contains("256 handshakes")).collect();
    assert_eq!(rows.len(), 1, "one HTTPS instance, one row: {md}");
    assert_eq!(rows[0], format!("| {name} | 44us / 49us / 49us | 256 handshakes (0 resumed; TLSv1_3 256); INSECURE: certificates not checked |"));

    let page = html(&r, &[]).unwrap();
    let doc = parse_html(&page).unwrap();
    let dd = doc
        .descendants()
        .filter(|n| n.has_tag_name("dt") && n.text() == Some("TLS"))
        .filter_map(|dt| dt.next_sibling_element())
        .map(|dd| dd.text().unwrap_or_default().to_owned())
        .collect::<Vec<_>>();
    assert_eq!(dd.len(), 1, "one HTTPS instance: {dd:?}");
    assert!(dd[0].contains("256 handshakes") && dd[0].contains("INSECURE"), "{dd:?}");
    let connects = doc.descendants().filter(|n| n.has_tag_name("dt") && n.text() == Some("connect time")).count();
    assert_eq!(connects, r.scenarios.iter().filter(|s| s.connect_time.count > 0).count());
}

/// An HTTP/2 run's `http2` block (connections, streams asked and granted, GOAWAYs, RST_STREAMs by code, resent)
/// reaches the terminal summary, the Markdown (an HTTP/2 table) and report.html.
#[test]
fn http2_figures_reach_every_report() {
    let r = loadgate_results::fixture::sample_http2_run();
    let text = r.scenarios.iter().map(text_summary).collect::<Vec<_>>().join("\n");
    let lines: Vec<&str> = text.lines().filter(|l| l.trim_start().starts_with("HTTP/2:")).collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[1].contains("128 streams asked, 100 granted (capped by the server)"), "{}", lines[1]);
    assert!(lines[1].contains("RST_STREAM cancel 2, refused_stream 1,250; 1,262 resent"), "{}", lines[1]);
    insta::assert_snapshot!("http2_text", text);

    let md = markdown(&r, None).unwrap();
    assert!(md.contains("| scenario | HTTP/2 |"), "{md}");
    let table: String = md
        .lines()
        .skip_while(|l| !l.contains("<summary>HTTP/2"))
        .take_while(|l| !l.starts_with("</details>"))
        .collect::<Vec<_>>()
        .join("\n");
    insta::assert_snapshot!("http2_markdown_table", table);

    let page = html(&r, &[]).unwrap();
    let doc = parse_html(&page).unwrap();
    let dd: Vec<String> = doc
        .descendants()
        .filter(|n| n.has_tag_name("dt") && n.text() == Some("HTTP/2"))
        .filter_map(|dt| dt.next_sibling_element())
        .map(|dd| dd.text().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(dd.len(), 3, "three HTTP/2 instances: {dd:?}");
    assert!(dd[2].contains("no server SETTINGS"), "{dd:?}");

    let plain = markdown(&sample_run(), None).unwrap();
    assert!(!plain.contains("HTTP/2"), "an HTTP/1.1 run shows no HTTP/2 table");
}

/// The testcases of a JUnit document: (name, the tag of its non-success child or `""`, that child's `type`, its
/// `message`).
fn junit_cases(xml: &str) -> Vec<(String, String, String, String)> {
    let doc = roxmltree::Document::parse(xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
    doc.descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .map(|c| {
            let outcome = c.children().find(|n| ["failure", "error", "skipped"].iter().any(|t| n.has_tag_name(*t)));
            let get = |a: &str| outcome.and_then(|o| o.attribute(a)).unwrap_or_default().to_owned();
            let tag = outcome.map(|o| o.tag_name().name().to_owned()).unwrap_or_default();
            (attr(c, "name").to_owned(), tag, get("type"), get("message"))
        })
        .collect()
}

/// An interrupted run (Ctrl-C: it never finished, exit 3) is red in JUnit, on GitHub and in the Markdown, even
/// when every SLO of the phases that ran held.
#[test]
fn an_interrupted_run_is_an_error_in_junit_an_annotation_and_an_incomplete_headline() {
    let mut r = run();
    r.scenarios.retain(|s| s.validity.valid && s.judged.verdicts.iter().all(|v| v.passed));
    let last = r.scenarios.pop().unwrap();
    r.scenarios.last_mut().unwrap().aborted = Some("interrupted (Ctrl-C)".to_owned());
    r.not_run.push(loadgate_results::NotRun {
        index: last.index,
        name: last.name.clone(),
        scenario: last.scenario.clone(),
        gate: true,
        reason: "the run was interrupted (Ctrl-C)".to_owned(),
    });
    r.finished_at = None;
    r.outcome = outcome(&r);
    assert_eq!(r.outcome.status, loadgate_results::OutcomeStatus::Incomplete, "{:?}", r.outcome);
    assert_eq!(r.outcome.exit_code, 3);

    let xml = junit(&r).unwrap();
    let cases = junit_cases(&xml);
    let run_case = cases.iter().find(|c| c.0 == "tfb-plaintext: run").unwrap_or_else(|| panic!("{xml}"));
    assert_eq!((run_case.1.as_str(), run_case.2.as_str()), ("error", "incomplete"), "{xml}");
    assert!(run_case.3.contains("did not finish") && run_case.3.contains("interrupted (Ctrl-C)"), "{}", run_case.3);
    assert_eq!(cases.iter().filter(|c| c.1 == "error").count(), 1, "{xml}");
    let not_run = cases.iter().find(|c| c.0 == format!("{}: not run", last.name)).unwrap();
    assert_eq!(not_run.1, "skipped");
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let suite = doc.descendants().find(|n| n.has_tag_name("testsuite")).unwrap();
    assert_eq!(attr(suite, "errors"), "1");
    assert_eq!(attr(doc.root_element(), "errors"), "1");

    let lines = github_annotations(&r);
    let errors: Vec<&String> = lines.iter().filter(|l| l.starts_with("::error ")).collect();
    assert_eq!(errors.len(), 1, "{lines:?}");
    assert!(
        errors[0].contains("title=loadgate tfb-plaintext%3A the run did not finish (interrupted)::"),
        "{}",
        errors[0]
    );
    assert!(errors[0].contains("interrupted (Ctrl-C)"), "{}", errors[0]);

    let md = markdown(&r, None).unwrap();
    let mut lines = md.lines();
    assert_eq!(lines.next(), Some("## ⚠️ tfb-plaintext: incomplete"));
    assert_eq!(lines.nth(1).unwrap_or_default(), "The run is incomplete: it did not finish (interrupted), so the results cover only the phases that ran; 1 scenario instance was not run.");
}

/// A run that could not be carried out keeps its error testcase, typed `run`.
#[test]
fn a_run_that_could_not_be_carried_out_is_a_run_error() {
    let mut r = run();
    r.outcome = loadgate_results::Outcome::run_failed(vec!["the target never became ready".to_owned()]);
    let cases = junit_cases(&junit(&r).unwrap());
    let run_case = cases.iter().find(|c| c.0 == "tfb-plaintext: run").unwrap();
    assert_eq!((run_case.1.as_str(), run_case.2.as_str()), ("error", "run"));
    assert_eq!(run_case.3, "the target never became ready");
    assert!(github_annotations(&r)
        .iter()
        .any(|l| l.contains("the run could not be carried out::the target never became ready")));
}

/// The A/B fixture with its FAIL check passing: one INCONCLUSIVE check, the others held; `on_inconclusive` set
/// by the flag (`by_flag`) or by the spec.
fn inconclusive_run(on_inconclusive: &str, by_flag: bool) -> RunResults {
    let mut r = loadgate_results::fixture::sample_ab_run();
    let v = &mut r.scenarios[0].judged.verdicts[0];
    v.passed = true;
    v.statistics.as_mut().unwrap().status = loadgate_results::StatisticalStatus::Pass;
    r.gating.as_mut().unwrap().on_inconclusive = on_inconclusive.to_owned();
    r.spec.source = Some(loadgate_results::SpecSource {
        text: "version: 1\n".to_owned(),
        secret_vars: vec![],
        repeat: None,
        on_inconclusive: by_flag.then(|| on_inconclusive.to_owned()),
        pacing: None,
        connect_rate: None,
        files: vec![],
    });
    r.outcome = outcome(&r);
    r
}

/// The Markdown headline (the line after the title).
fn md_headline(md: &str) -> (&str, &str) {
    let mut lines = md.lines();
    (lines.next().unwrap_or_default(), lines.nth(1).unwrap_or_default())
}

/// `--on-inconclusive fail` makes an INCONCLUSIVE check a failure in JUnit, an error annotation and the
/// headline, as it does the exit code; `pass` keeps it skipped and says it was counted as a pass.
#[test]
fn on_inconclusive_fail_or_pass_reaches_junit_annotations_and_the_headline() {
    let r = inconclusive_run("fail", true);
    assert_eq!(r.outcome.exit_code, 1, "{:?}", r.outcome);
    let xml = junit(&r).unwrap();
    let cases = junit_cases(&xml);
    let case = cases.iter().find(|c| c.0 == "api: p50 <= baseline * 1.05").unwrap();
    assert_eq!((case.1.as_str(), case.2.as_str()), ("failure", "inconclusive"), "{xml}");
    assert!(case.3.starts_with("INCONCLUSIVE ("), "{}", case.3);
    assert!(case.3.ends_with("counted as a failure by --on-inconclusive fail"), "{}", case.3);
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let suite = doc.descendants().find(|n| n.has_tag_name("testsuite")).unwrap();
    assert_eq!(attr(suite, "failures"), "1", "{xml}");
    let lines = github_annotations(&r);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("::error "), "{}", lines[0]);
    // The title's comma is escaped, as a workflow command's property must be.
    assert!(lines[0].contains("is INCONCLUSIVE%2C counted as a failure by --on-inconclusive fail::"), "{}", lines[0]);
    let md = markdown(&r, None).unwrap();
    assert_eq!(
        md_headline(&md),
        (
            "## ❌ pr-ab: SLO failed",
            "1 of 3 gated SLOs was INCONCLUSIVE, counted as a failure by --on-inconclusive fail; none failed outright."
        )
    );
    assert!(
        md.contains("| **INCONCLUSIVE (") && md.contains("), counted as a failure by --on-inconclusive fail** |"),
        "{md}"
    );

    // Set in the spec, it is named as the spec's setting.
    let r = inconclusive_run("fail", false);
    assert!(md_headline(&markdown(&r, None).unwrap())
        .1
        .contains("counted as a failure by gating.on_inconclusive: fail"));

    let r = inconclusive_run("pass", true);
    assert_eq!(r.outcome.exit_code, 0, "{:?}", r.outcome);
    let xml = junit(&r).unwrap();
    let case = junit_cases(&xml).into_iter().find(|c| c.0 == "api: p50 <= baseline * 1.05").unwrap();
    assert_eq!(case.1, "skipped", "{xml}");
    assert!(case.3.ends_with("counted as a pass by --on-inconclusive pass"), "{}", case.3);
    assert!(!xml.contains("<failure"), "{xml}");
    let lines = github_annotations(&r);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("::warning ") && lines[0].contains("counted as a pass by --on-inconclusive pass"));
    let md = markdown(&r, None).unwrap();
    assert_eq!(
        md_headline(&md),
        (
            "## ✅ pr-ab: passed",
            "1 of 3 gated SLOs was INCONCLUSIVE, counted as passing by --on-inconclusive pass; the other 2 held."
        )
    );

    // The default: its own exit code, a skipped testcase and a warning, unchanged.
    let r = inconclusive_run("inconclusive", false);
    assert_eq!(r.outcome.exit_code, 5);
    let case = junit_cases(&junit(&r).unwrap()).into_iter().find(|c| c.0 == "api: p50 <= baseline * 1.05").unwrap();
    assert_eq!(case.1, "skipped");
    assert!(!case.3.contains("counted"), "{}", case.3);
    assert!(github_annotations(&r)[0].starts_with("::warning "));
    assert_eq!(md_headline(&markdown(&r, None).unwrap()).0, "## ❔ pr-ab: inconclusive");
}

/// A passing run that evaluated no SLO says so, and is not a green check when its SLOs could not be evaluated.
#[test]
fn a_run_that_evaluated_no_slo_says_so() {
    let mut r = run();
    r.scenarios.retain(|s| s.validity.valid && s.judged.verdicts.iter().all(|v| v.passed));
    r.sweeps.clear();
    let mut none = r.clone();
    for s in &mut none.scenarios {
        s.judged.verdicts.clear();
    }
    none.outcome = outcome(&none);
    assert_eq!(none.outcome.exit_code, 0);
    let md = markdown(&none, None).unwrap();
    let (title, headline) = md_headline(&md);
    assert_eq!(title, "## ✅ tfb-plaintext: passed");
    assert_eq!(
        headline,
        format!("No SLO was evaluated: the run has no gated SLO ({} scenario instances ran).", none.scenarios.len())
    );

    let mut unevaluated = r.clone();
    for s in &mut unevaluated.scenarios {
        for v in &mut s.judged.verdicts {
            v.passed = true;
            v.statistics = None;
            v.note = Some("not evaluated: no baseline".to_owned());
        }
    }
    unevaluated.outcome = outcome(&unevaluated);
    let md = markdown(&unevaluated, None).unwrap();
    let (title, headline) = md_headline(&md);
    assert_eq!(title, "## ⚠️ tfb-plaintext: passed");
    assert!(
        headline.starts_with("No SLO was evaluated: all ") && headline.contains("gated SLOs could not be"),
        "{headline}"
    );
    assert!(!md.contains("All 0"), "{md}");

    // Some evaluated, some not: the count held is the count evaluated, and the rest are named.
    let mut some = r.clone();
    let first = some.scenarios.iter_mut().find(|s| s.gate && s.judged.verdicts.len() > 1).unwrap();
    first.judged.verdicts[0].note = Some("not evaluated: no baseline".to_owned());
    some.outcome = outcome(&some);
    let md = markdown(&some, None).unwrap();
    let (_, headline) = md_headline(&md);
    let gated = || some.scenarios.iter().filter(|s| s.gate).flat_map(|s| &s.judged.verdicts);
    let (evaluated, not) = (gated().filter(|v| v.evaluated()).count(), gated().filter(|v| !v.evaluated()).count());
    assert!(not >= 1 && evaluated >= 1);
    assert!(headline.starts_with(&format!("All {evaluated} gated SLOs held across ")), "{headline}");
    assert!(headline.ends_with(&format!("; {not} more were not evaluated (see the notes).")), "{headline}");
}

/// What a Markdown document renders to, read by a GFM parser: the text of every table cell (code spans
/// included, as written), every raw HTML block or inline HTML, every link's destination, every paragraph's (and
/// list item's) text.
#[derive(Debug, Default)]
struct Rendered {
    cells: Vec<String>,
    html: Vec<String>,
    links: Vec<String>,
    paragraphs: Vec<String>,
    emphasis: Vec<String>,
}

fn rendered(md: &str) -> Rendered {
    use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
    let mut out = Rendered::default();
    let (mut cell, mut paragraph, mut emphasis) = (None::<String>, None::<String>, None::<String>);
    for event in Parser::new_ext(md, Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH) {
        match event {
            Event::Start(Tag::TableCell) => cell = Some(String::new()),
            Event::End(TagEnd::TableCell) => out.cells.extend(cell.take()),
            // A tight list's item has no paragraph of its own: its text is one too.
            Event::Start(Tag::Paragraph | Tag::Item) => paragraph = Some(String::new()),
            Event::End(TagEnd::Paragraph | TagEnd::Item) => out.paragraphs.extend(paragraph.take()),
            Event::Start(Tag::Emphasis) => emphasis = Some(String::new()),
            Event::End(TagEnd::Emphasis) => out.emphasis.extend(emphasis.take()),
            Event::Start(Tag::Link { dest_url, .. }) => out.links.push(dest_url.to_string()),
            Event::Html(h) | Event::InlineHtml(h) => out.html.push(h.to_string()),
            Event::Text(t) | Event::Code(t) => {
                for s in [&mut cell, &mut paragraph, &mut emphasis].into_iter().flatten() {
                    s.push_str(&t);
                }
            }
            Event::SoftBreak => {
                for s in [&mut cell, &mut paragraph, &mut emphasis].into_iter().flatten() {
                    s.push(' ');
                }
            }
            _ => {}
        }
    }
    out
}

/// Names, matrix values and descriptions show as written in report.md, whatever they hold: no tag, comment,
/// entity, code span, emphasis or link of theirs reaches the page, no `|` splits a table cell, and inside the
/// `<summary>` of an HTML block they are HTML-escaped.
#[test]
fn markdown_shows_names_as_written_and_adds_no_markup_of_theirs() {
    let mut r = run();
    let name = r#"odd[v=/<x>&"y",z | <!-- hide --> `tick` ``two`` *star* _em_ a_b [l](http://e.example) &amp; \]"#;
    let slo = "p99{request=a|b`c} < 100ms";
    let description = "<b>bold</b> & `code` <!-- gone";
    let old = r.scenarios[1].name.clone();
    r.scenarios[1].name = name.to_owned();
    r.scenarios[1].matrix = vec![("connections".to_owned(), r#"/<x>&"y",z"#.to_owned())];
    r.scenarios[1].judged.verdicts[0].slo = slo.to_owned();
    r.scenarios[1].aborted = Some("stopped by <b>an SLO</b>".to_owned());
    r.spec.description = Some(description.to_owned());
    for sweep in &mut r.sweeps {
        for c in &mut sweep.cells {
            if *c == old {
                *c = name.to_owned();
            }
        }
    }
    r.outcome = outcome(&r);
    let md = markdown(&r, None).unwrap();
    let page = rendered(&md);

    // No HTML of the input: the only HTML is the template's own <details> blocks.
    for h in &page.html {
        let h = h.trim();
        assert!(h.starts_with("<details><summary>") || h == "</details>", "HTML from the input: {h:?}\n{md}");
        assert!(!h.contains("<x>") && !h.contains("<!--") && !h.contains("<b>"), "{h}");
    }
    // Inside the timeline's <summary> the name is HTML-escaped, so a browser shows it as written.
    let summary = page.html.iter().find(|h| h.contains("odd[v=")).unwrap_or_else(|| panic!("{md}"));
    assert!(summary.contains(r#"odd[v=/&lt;x&gt;&amp;&quot;y&quot;,z | &lt;!-- hide --&gt; `tick`"#), "{summary}");
    // In every table the name is one cell, exactly as written: scenarios, details, SLOs, resources.
    let as_written = page.cells.iter().filter(|c| c.as_str() == name).count();
    assert!(as_written >= 4, "{as_written} cells hold the name:\n{:#?}\n{md}", page.cells);
    assert!(page.cells.iter().any(|c| c == r#"/<x>&"y",z"#), "the matrix value in the sweep table:\n{md}");
    assert!(page.cells.iter().any(|c| c == slo), "the SLO as one code span:\n{:?}", page.cells);
    // Every table row still has its columns: the odd name's row has as many cells as the header.
    let header = md.lines().find(|l| l.starts_with("| scenario | requests/s |")).unwrap();
    let columns = header.matches(" | ").count() + 1;
    let row = md.lines().find(|l| l.starts_with("| odd[v=")).unwrap();
    let cells_in_row = rendered(&format!("{header}\n| :--- |{}\n{row}\n", " ---: |".repeat(columns - 1))).cells;
    assert_eq!(cells_in_row.len(), 2 * columns, "{row}");
    // No link but the plots'.
    assert!(page.links.iter().all(|l| l.ends_with(".svg")), "{:?}", page.links);
    // The description: one emphasis, its text as written.
    assert!(page.emphasis.iter().any(|e| e == description), "{:?}\n{md}", page.emphasis);
    // The warnings keep their own markup (the name in bold) around the escaped name and reason.
    assert!(
        page.paragraphs
            .iter()
            .chain(page.cells.iter())
            .any(|p| p.contains(&format!("{name} was stopped early: stopped by <b>an SLO</b>"))),
        "{md}"
    );
}

#[test]
fn checks_reach_every_report() {
    let r = loadgate_results::fixture::sample_checks_run();
    let text: String = r.scenarios.iter().map(text_summary).collect::<Vec<_>>().join("\n");
    assert!(text.contains("Checks: 99.75% of 40,000 evaluations held"), "{text}");
    assert!(
        text.contains(
            "bad/json-type 100 failed: 200 application/xml, Content-Type was \"application/xml\"; body starts <?xml"
        ),
        "{text}"
    );
    insta::assert_snapshot!("checks_text", text);
    let md = markdown(&r, None).unwrap();
    let table: String = md
        .lines()
        .skip_while(|l| !l.starts_with("### Checks: formats"))
        .take_while(|l| !l.starts_with("### Checks: login"))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(table.contains("| request | check | expects | passed | failed | first failure |"), "{md}");
    insta::assert_snapshot!("checks_markdown_table", table);
    assert!(md.contains("checks\\_failed\\_ungated") || md.contains("no SLO gates checks"), "{md}");
    let xml = junit(&r).unwrap();
    insta::assert_snapshot!("checks_junit", xml);
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let failing = doc
        .descendants()
        .find(|n| {
            n.has_tag_name("testcase") && n.attribute("name") == Some("formats: check_failures{check=json-type} == 0")
        })
        .unwrap();
    let failure = failing.children().find(|n| n.has_tag_name("failure")).unwrap();
    let text = failure.text().unwrap_or_default();
    assert!(text.contains("bad/json-type: 100 of 10,000 failed") && text.contains("application/xml"), "{text}");
    let first = doc.descendants().find(|n| n.has_tag_name("testcase")).unwrap();
    let out = first.children().find(|n| n.has_tag_name("system-out")).and_then(|n| n.text()).unwrap_or_default();
    assert!(out.contains("ok/json:$.slideshow.author: 10,000 passed, 0 failed"), "{out}");
    let page = html(&r, &[]).unwrap();
    parse_html(&page).unwrap();
    assert!(page.contains("<details><summary>200 application&#x2f;xml"), "{page}");
    assert_eq!(verified_line(&r.verification[0]), "verified formats: 2 requests, every check held");
}
