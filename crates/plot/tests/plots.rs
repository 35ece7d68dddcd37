//! Every plot of realistic runs parsed as XML: well-formed, the series there (by their colours and legend
//! labels), axes labelled with units, the theme's stylesheet, the knee of a sweep and the verdicts of checks.

use loadgate_model::Slo;
use loadgate_plot::{figures, render, theme, FigureKind};
use loadgate_results::fixture::{exponential_histogram, sample_run};
use loadgate_results::gate::{judge, Baseline};
use loadgate_results::{LatencySummary, RunResults, ScenarioResult};

/// A parsed SVG: its texts and the colours its shapes are stroked or filled with.
struct Svg {
    texts: Vec<String>,
    strokes: Vec<String>,
    fills: Vec<String>,
    title: String,
    kind: String,
}

impl Svg {
    fn parse(text: &str) -> Svg {
        let doc = roxmltree::Document::parse(text).unwrap_or_else(|e| panic!("not well-formed XML: {e}\n{text}"));
        let root = doc.root_element();
        assert_eq!(root.tag_name().name(), "svg");
        assert_eq!(root.tag_name().namespace(), Some("http://www.w3.org/2000/svg"));
        assert_eq!(root.attribute("role"), Some("img"));
        let style = root.children().find(|n| n.has_tag_name("style")).expect("a stylesheet").text().unwrap_or("");
        assert!(style.contains("prefers-color-scheme: dark"), "{style}");
        let all: Vec<_> = root.descendants().collect();
        let texts =
            all.iter().filter(|n| n.has_tag_name("text")).map(|n| n.text().unwrap_or("").trim().to_owned()).collect();
        let attr =
            |name: &str| -> Vec<String> { all.iter().filter_map(|n| n.attribute(name)).map(str::to_owned).collect() };
        Svg {
            texts,
            strokes: attr("stroke"),
            fills: attr("fill"),
            title: root.children().find(|n| n.has_tag_name("title")).and_then(|n| n.text()).unwrap_or("").to_owned(),
            kind: root.attribute("data-plot").unwrap_or("").to_owned(),
        }
    }

    fn has_text(&self, needle: &str) -> bool {
        self.texts.iter().any(|t| t.contains(needle))
    }

    fn assert_text(&self, needle: &str) {
        assert!(self.has_text(needle), "no text with {needle:?} in {:?}", self.texts);
    }

    /// A polyline (a series) stroked in this colour.
    fn assert_series(&self, colour: theme::RGBColor) {
        let hex = format!("#{:02X}{:02X}{:02X}", colour.0, colour.1, colour.2);
        assert!(self.strokes.contains(&hex) || self.fills.contains(&hex), "no shape in {hex}");
    }
}

fn svg_of(r: &RunResults, kind: &str, subject: Option<&str>) -> Svg {
    let f = figures(r)
        .into_iter()
        .find(|f| f.kind.label() == kind && f.subject() == subject)
        .unwrap_or_else(|| panic!("no {kind} figure for {subject:?}"));
    let svg = Svg::parse(&render(r, &f).unwrap());
    assert_eq!(svg.kind, kind);
    svg
}

#[test]
fn every_figure_of_the_sample_run_is_well_formed_and_uniquely_named() {
    let r = sample_run();
    let figs = figures(&r);
    let files: Vec<&str> = figs.iter().map(|f| f.file.as_str()).collect();
    assert_eq!(
        files,
        [
            "timeline.svg",
            "spectrum-warmup.svg",
            "spectrum-plaintext-connections-256.svg",
            "spectrum-plaintext-connections-1024.svg",
            "spectrum-plaintext-connections-4096.svg",
            "spectrum-put-constant-rate.svg",
            "spectrum-browse-users.svg",
            "sweep-plaintext.svg",
        ]
    );
    for f in &figs {
        let svg = Svg::parse(&render(&r, f).unwrap());
        assert_eq!(svg.title, f.title);
    }
}

#[test]
fn the_spectrum_of_an_open_load_has_latency_service_time_and_send_lag_on_the_nines_axis() {
    let r = sample_run();
    let svg = svg_of(&r, "spectrum", Some("put-constant-rate"));
    svg.assert_text("latency (ms)");
    svg.assert_text("percentile");
    for tick in ["0%", "90%", "99%", "99.9%"] {
        assert!(svg.texts.iter().any(|t| t == tick), "no tick {tick} in {:?}", svg.texts);
    }
    svg.assert_text("latency from intended send (max ");
    svg.assert_text("service time (max ");
    svg.assert_text("send lag (max ");
    svg.assert_series(theme::BLUE);
    svg.assert_series(theme::ORANGE);
    svg.assert_series(theme::GREEN);

    // A closed load has one curve: its service time is its latency.
    let closed = svg_of(&r, "spectrum", Some("plaintext[connections=256]"));
    closed.assert_text("latency (max ");
    assert!(!closed.has_text("send lag"), "{:?}", closed.texts);
}

#[test]
fn the_timeline_has_four_panels_with_units_and_shades_the_warmup() {
    let r = sample_run();
    let svg = svg_of(&r, "timeline", None);
    // The fixture's phases run at 100/s to 100k/s: the throughput axis is logarithmic, labelled in decades.
    svg.assert_text("throughput (requests/s, log)");
    for tick in ["1000", "10k", "100k"] {
        assert!(svg.texts.iter().any(|t| t == tick), "no tick {tick}: {:?}", svg.texts);
    }
    for label in ["latency (ms)", "errors (per second)", "connections, users", "seconds since the run started"] {
        svg.assert_text(label);
    }
    for series in
        ["completed/s", "target rate", "p50", "p99", "failed requests/s", "non-2xx responses/s", "users active"]
    {
        assert!(svg.texts.iter().any(|t| t == series), "no legend entry {series:?}");
    }
    svg.assert_text("warmup (not gated)");
    // The warmup band is drawn in every panel, in the amber of the palette, translucent.
    let amber = format!("#{:02X}{:02X}{:02X}", theme::AMBER.0, theme::AMBER.1, theme::AMBER.2);
    assert!(svg.fills.iter().filter(|f| **f == amber).count() >= 4, "{:?}", svg.fills);
    // Phases are named in the top panel where they have room.
    svg.assert_text("put-constant-rate");
    svg.assert_series(theme::PURPLE);
}

#[test]
fn the_sweep_marks_its_knee_with_both_axes_labelled() {
    let r = sample_run();
    let svg = svg_of(&r, "sweep", Some("plaintext"));
    svg.assert_text("throughput (requests/s)");
    svg.assert_text("p99 latency (ms");
    svg.assert_text("connections (one step per cell");
    for tick in ["256", "1024", "4096"] {
        assert!(svg.texts.iter().any(|t| t == tick), "no tick {tick}");
    }
    let knee = r.sweeps[0].knee.as_ref().expect("the fixture's sweep has a knee");
    svg.assert_text(&format!("knee (collapse): {}", knee.cell));
    svg.assert_series(theme::RED);
    svg.assert_series(theme::BLUE);
    svg.assert_series(theme::ORANGE);
}

#[test]
fn a_sweep_that_kept_scaling_says_so() {
    let mut r = sample_run();
    for (i, s) in r.scenarios.iter_mut().filter(|s| s.scenario == "plaintext").enumerate() {
        s.throughput = 1000.0 * (i + 1) as f64;
    }
    r.sweeps = loadgate_results::sweeps(&r);
    let svg = svg_of(&r, "sweep", Some("plaintext"));
    svg.assert_text("no knee: throughput kept scaling");
}

fn with_p99(mut s: ScenarioResult, mean_ms: f64, round: u32) -> ScenarioResult {
    s.histograms.latency = exponential_histogram(10_000, mean_ms * 900.0, mean_ms * 100.0 + f64::from(round));
    s.latency = LatencySummary::from_histogram(&s.histograms.latency);
    s.throughput = 1000.0 / mean_ms;
    s.started_at_offset = f64::from(round) * 10.0;
    s
}

/// An A/B run of eight paired rounds: the candidate 30% slower, gated on `p99 < baseline * 1.1` and an absolute
/// limit, judged by the same code the runner uses.
fn ab_run() -> RunResults {
    let mut r = sample_run();
    let template = r.scenarios.iter().find(|s| s.name == "plaintext[connections=256]").unwrap().clone();
    let mut template = template;
    template.name = "orders".to_owned();
    template.scenario = "orders".to_owned();
    template.matrix.clear();
    let a: Vec<ScenarioResult> = (1..=8).map(|i| with_p99(template.clone(), 2.0 + 0.05 * f64::from(i), i)).collect();
    let b: Vec<ScenarioResult> = (1..=8).map(|i| with_p99(template.clone(), 2.6 + 0.07 * f64::from(i), i)).collect();
    let slos: Vec<Slo> =
        ["p99 < baseline * 1.1", "p99 < 100ms", "throughput >= 100/s"].iter().map(|t| Slo::parse(t).unwrap()).collect();
    let rounds: Vec<u32> = (1..=8).collect();
    let judged = judge(&slos, &b, &rounds, Baseline::Paired(&a), 0.9).unwrap();
    r.scenarios = vec![judged];
    r.sweeps = loadgate_results::sweeps(&r);
    r
}

#[test]
fn an_ab_run_plots_its_checks_with_intervals_and_the_baseline_spectrum() {
    let r = ab_run();
    let s = &r.scenarios[0];
    let relative = s.judged.verdicts[0].statistics.as_ref().expect("judged over rounds");
    assert!(relative.estimate > 1.1, "{relative:?}");
    let svg = svg_of(&r, "checks", Some("orders"));
    assert!(svg.title.starts_with("A/B comparison"), "{}", svg.title);
    svg.assert_text("p99 < baseline * 1.1  FAIL");
    svg.assert_text("p99 < 100ms  PASS");
    svg.assert_text("p99: candidate (B) / baseline (A)");
    svg.assert_text("p99 (ms)");
    svg.assert_text("throughput (requests/s)");
    svg.assert_text("limit 1.10x");
    svg.assert_series(theme::RED);
    svg.assert_series(theme::GREEN);
    // The eight paired rounds as dots (one ring each, on every row).
    let slate = format!("#{:02X}{:02X}{:02X}", theme::MUTED.0, theme::MUTED.1, theme::MUTED.2);
    assert!(svg.strokes.iter().filter(|s| **s == slate).count() >= 15, "{:?}", svg.strokes);

    let spectrum = svg_of(&r, "spectrum", Some("orders"));
    spectrum.assert_text("baseline (A) latency (max ");
    spectrum.assert_series(theme::SLATE);

    let timeline = svg_of(&r, "timeline", None);
    timeline.assert_text("orders (A) #1");
}

#[test]
fn an_empty_run_has_no_figures_and_a_run_without_timeline_has_no_timeline() {
    let mut r = sample_run();
    r.scenarios.clear();
    r.sweeps.clear();
    assert!(figures(&r).is_empty());
    let mut r = sample_run();
    for s in &mut r.scenarios {
        s.timeline.clear();
    }
    assert!(figures(&r).iter().all(|f| f.kind != FigureKind::Timeline));
}

#[test]
fn hostile_names_are_escaped_and_files_stay_short() {
    let mut r = sample_run();
    let long = format!("x<&\"'>[v={}]", "a".repeat(300));
    r.scenarios[0].name = long.clone();
    let figs = figures(&r);
    let f = figs.iter().find(|f| f.subject() == Some(long.as_str())).unwrap();
    assert!(f.file.len() < 240, "{}", f.file);
    let svg = Svg::parse(&render(&r, f).unwrap());
    assert!(svg.title.contains("x<&\"'>"), "{}", svg.title);
}

#[test]
fn a_capacity_search_plots_its_steps_against_the_rate_asked_with_the_capacity_marked() {
    let r = loadgate_results::fixture::sample_capacity_run();
    let figs = figures(&r);
    let f =
        figs.iter().find(|f| f.kind == FigureKind::Capacity { instance: "get".to_owned() }).expect("a capacity plot");
    assert_eq!((f.file.as_str(), f.title.as_str()), ("capacity-get.svg", "Capacity search: get"));
    let svg = svg_of(&r, "capacity", Some("get"));
    svg.assert_text("rate asked (requests/s)");
    svg.assert_text("p99 latency (ms, log scale)");
    svg.assert_text("achieved rate (requests/s)");
    svg.assert_text("capacity 2,375/s");
    svg.assert_text("failed at 2,438/s");
    svg.assert_text("p99 < 10ms (each step, left)");
    svg.assert_text("p99 of a step that held (left; numbered in run order)");
    svg.assert_text("p99 of a step that failed (left; numbered in run order)");
    assert!(!svg.has_text("invalid"), "no step was invalid: {:?}", svg.texts);
    // Every step is numbered beside its point.
    for n in 1..=10 {
        assert!(svg.texts.iter().any(|t| t == &n.to_string()), "step {n}: {:?}", svg.texts);
    }
    for colour in [theme::GREEN, theme::RED, theme::BLUE, theme::ORANGE] {
        svg.assert_series(colour);
    }
    assert!(svg.title.starts_with("Capacity search: get"), "{}", svg.title);

    // Results without a search have no capacity plot; one without steps cannot be drawn.
    assert!(figures(&sample_run()).iter().all(|f| f.kind.label() != "capacity"));
    let mut empty = r.clone();
    if let Some(c) = &mut empty.scenarios[0].capacity {
        c.steps.clear();
    }
    assert!(figures(&empty).iter().all(|f| f.kind.label() != "capacity"));
    assert!(loadgate_plot::capacity(&empty.scenarios[0]).is_err());
}

/// The `<path>`/`<polyline>` points stroked in `hex`, as `(x, y)` pairs.
fn stroked_points(svg: &str, hex: &str) -> usize {
    let doc = roxmltree::Document::parse(svg).unwrap();
    doc.descendants()
        .filter(|n| n.attribute("stroke") == Some(hex))
        .filter_map(|n| n.attribute("points"))
        .map(|p| p.split_whitespace().count())
        .sum()
}

#[test]
fn sub_second_phases_show_their_rate_and_latency_and_a_left_out_drain_is_said() {
    // Issue 34: phases of 150 ms each have one interval, shorter than the 0.2 s under which a drain is not drawn;
    // it is their only one, so it is drawn (over its time), and the latency panel is not empty.
    let mut r = sample_run();
    for (i, s) in r.scenarios.iter_mut().enumerate() {
        s.repetitions.clear();
        s.ab_baseline = None;
        s.started_at_offset = i as f64 * 0.2;
        s.duration = 0.15;
        let mut p = s.timeline.first().cloned().expect("a timeline point");
        p.t = 0.15;
        p.completed = 300;
        p.p50_us = 900;
        p.p99_us = 4_000;
        s.timeline = vec![p];
    }
    let f = figures(&r).into_iter().find(|f| f.kind.label() == "timeline").unwrap();
    let text = render(&r, &f).unwrap();
    let hex = |c: theme::RGBColor| format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2);
    for colour in [theme::BLUE, theme::GREEN, theme::ORANGE] {
        assert!(stroked_points(&text, &hex(colour)) >= 2 * r.scenarios.len(), "a span per phase in {}", hex(colour));
    }
    let svg = Svg::parse(&text);
    assert!(!svg.has_text("not drawn"), "nothing left out: {:?}", svg.texts);

    // A second, 50 ms interval after a full second is a drain: left out, and the legend says so.
    let s = &mut r.scenarios[0];
    s.duration = 1.05;
    let mut first = s.timeline[0].clone();
    first.t = 1.0;
    let mut drain = first.clone();
    drain.t = 1.05;
    s.timeline = vec![first, drain];
    let svg = Svg::parse(&render(&r, &f).unwrap());
    svg.assert_text("1 interval under 0.2 s after a phase's last full second (its drain) not drawn");
}
