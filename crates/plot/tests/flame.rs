//! Flame graphs parsed as XML: frames merged and as wide as their samples, tooltips on every frame, hostile
//! names escaped, output bounded for deep and wide profiles, a graph that says there were no samples, and the
//! differential graph's colours. With `LOADGATE_CHROMIUM` naming a Chromium, one screenshot of each kind is
//! taken into the test's temporary directory to look at (never compared pixel by pixel).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use loadgate_plot::{diff_flame_graph, flame_graph, DiffColour, DiffOptions, FlameOptions};

type Stacks = Vec<(Vec<String>, u64)>;

fn stacks(lines: &[(&str, u64)]) -> Stacks {
    lines.iter().map(|(s, n)| (s.split(';').map(str::to_owned).collect(), *n)).collect()
}

/// A frame as drawn: its tooltip, rectangle and label.
#[derive(Debug, Clone)]
struct Frame {
    tip: String,
    x: f64,
    y: f64,
    width: f64,
    fill: String,
    label: Option<String>,
}

impl Frame {
    fn name(&self) -> &str {
        self.tip.split('\n').next().unwrap_or("")
    }
}

struct Drawn {
    frames: Vec<Frame>,
    texts: Vec<String>,
    rects: usize,
}

impl Drawn {
    fn parse(svg: &str) -> Drawn {
        let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("not well-formed XML: {e}\n{svg}"));
        let root = doc.root_element();
        assert_eq!(root.tag_name().namespace(), Some("http://www.w3.org/2000/svg"));
        assert_eq!(root.attribute("data-plot"), Some("flame"));
        assert_eq!(root.attribute("role"), Some("img"));
        let num = |n: roxmltree::Node<'_, '_>, a: &str| -> f64 { n.attribute(a).unwrap().parse().unwrap() };
        let mut frames = Vec::new();
        for g in root.descendants().filter(|n| n.attribute("class") == Some("lg-frame")) {
            let title = g.children().find(|n| n.has_tag_name("title")).expect("every frame has a tooltip");
            let rect = g.children().find(|n| n.has_tag_name("rect")).expect("every frame has a rectangle");
            frames.push(Frame {
                tip: title.text().unwrap_or("").to_owned(),
                x: num(rect, "x"),
                y: num(rect, "y"),
                width: num(rect, "width"),
                fill: rect.attribute("fill").unwrap().to_owned(),
                label: g.children().find(|n| n.has_tag_name("text")).map(|t| t.text().unwrap_or("").to_owned()),
            });
        }
        let texts = root.descendants().filter(|n| n.has_tag_name("text")).map(|n| n.text().unwrap_or("").to_owned());
        Drawn { frames, texts: texts.collect(), rects: root.descendants().filter(|n| n.has_tag_name("rect")).count() }
    }

    fn frame(&self, name: &str) -> &Frame {
        self.frames.iter().find(|f| f.name() == name).unwrap_or_else(|| panic!("no frame {name}"))
    }

    fn has_text(&self, needle: &str) -> bool {
        self.texts.iter().any(|t| t.contains(needle))
    }
}

#[test]
fn only_a_graph_that_asks_for_zoom_has_a_script() {
    let input = stacks(&[("main;a", 3), ("main;b", 1)]);
    let scripts = |svg: &str| {
        let doc = roxmltree::Document::parse(svg).unwrap();
        let found: Vec<String> =
            doc.descendants().filter(|n| n.has_tag_name("script")).map(|n| n.text().unwrap_or("").to_owned()).collect();
        found
    };
    assert!(scripts(&flame_graph(&input, &FlameOptions::default()).unwrap()).is_empty());
    let zoom = FlameOptions { zoom: true, ..FlameOptions::default() };
    let svg = flame_graph(&input, &zoom).unwrap();
    let found = scripts(&svg);
    assert_eq!(found.len(), 1);
    assert!(found[0].contains("var pad = 10, width = 1180.00, charWidth = 7"), "{}", found[0]);
    assert!(Drawn::parse(&svg).has_text("Click a frame to zoom"));
    assert!(scripts(&flame_graph(&[], &zoom).unwrap()).is_empty(), "nothing to zoom into");
}

fn rgb(fill: &str) -> (u8, u8, u8) {
    let p: Vec<u8> =
        fill.trim_start_matches("rgb(").trim_end_matches(')').split(',').map(|v| v.parse().unwrap()).collect();
    (p[0], p[1], p[2])
}

/// A web server's profile, as a sampler would fold it: an event loop, a handler with its callees, C++ and Java
/// names, and the hot spot under `slow_path`.
fn server_profile(slow_work: u64) -> Stacks {
    let mut lines: Vec<(String, u64)> = vec![
        ("main;event_loop;epoll_wait".into(), 400),
        ("main;event_loop;handle_request;parse_request;httparse::parse_headers".into(), 900),
        ("main;event_loop;handle_request;parse_request".into(), 150),
        ("main;event_loop;handle_request;route;slow_path;checksum;sha256_block".into(), slow_work),
        ("main;event_loop;handle_request;route;slow_path".into(), 200),
        ("main;event_loop;handle_request;route;fast_path".into(), 700),
        (
            "main;event_loop;handle_request;render;json::serialize<std::map<std::string, int>>;\
             std::vector<char>::push_back"
                .into(),
            800,
        ),
        ("main;event_loop;handle_request;render;com.example.Dao.lambda$find$0".into(), 300),
        ("main;event_loop;handle_request;write_response;__libc_sendmsg".into(), 1200),
        ("main;event_loop;accept4".into(), 90),
        ("main;gc_thread;mark_sweep".into(), 120),
    ];
    for i in 0..200 {
        lines.push((format!("main;event_loop;handle_request;route;fast_path;helper_{i}"), 1 + i % 3));
    }
    lines.into_iter().map(|(s, n)| (s.split(';').map(str::to_owned).collect(), n)).collect()
}

#[test]
fn frames_merge_along_the_path_and_are_as_wide_as_their_samples() {
    let input = stacks(&[("main;a;x", 30), ("main;a;y", 10), ("main;b", 55), ("main", 5), ("main;a;x", 0)]);
    let options = FlameOptions { subtitle: "CPU, candidate".into(), ..FlameOptions::default() };
    let d = Drawn::parse(&flame_graph(&input, &options).unwrap());
    let w = |n: &str| d.frame(n).width;
    let plot_width = 1180.0;
    assert!((w("all") - plot_width).abs() < 0.01);
    assert!((w("main") - plot_width).abs() < 0.01);
    // Children fill their parent but for its own samples: 5 of main's 100 are its own.
    assert!((w("a") + w("b") - w("main") * 0.95).abs() < 0.02, "{} + {} vs {}", w("a"), w("b"), w("main"));
    assert!((w("x") + w("y") - w("a")).abs() < 0.02);
    assert!((w("x") / w("y") - 3.0).abs() < 0.001);
    // Root at the bottom; children start at their parent's left edge, in the order of their names.
    assert!(d.frame("all").y > d.frame("main").y && d.frame("main").y > d.frame("a").y);
    assert!((d.frame("a").x - d.frame("main").x).abs() < 0.01);
    assert!((d.frame("x").x - d.frame("a").x).abs() < 0.01 && d.frame("y").x > d.frame("x").x);
    assert!((d.frame("b").x - (d.frame("a").x + w("a"))).abs() < 0.02);
    assert_eq!(d.frames.len(), 6, "x under a merged across its two lines, the zero-sample line drawn nowhere");
    assert!(d.has_text("CPU, candidate, 100 samples"), "{:?}", d.texts);
    let a = &d.frame("a").tip;
    assert!(a.contains("40 samples, 40.0% (self 0%)"), "{a}");
    assert!(!a.contains("us/request"), "no conversion, no CPU per request: {a}");
    assert_eq!(flame_graph(&input, &options).unwrap(), flame_graph(&input, &options).unwrap(), "no randomness");
}

#[test]
fn tooltips_give_cpu_per_request_with_a_conversion() {
    let input = stacks(&[("main;handler", 75), ("main", 25)]);
    let options = FlameOptions { us_per_sample_per_request: Some(0.5), ..FlameOptions::default() };
    let d = Drawn::parse(&flame_graph(&input, &options).unwrap());
    let tip = &d.frame("handler").tip;
    assert!(tip.contains("75 samples, 75.0% (self 75.0%), 37.50 us/request (self 37.50)"), "{tip}");
    assert!(d.has_text("100 samples, 50.00 us CPU/request"), "{:?}", d.texts);
    let bad = FlameOptions { us_per_sample_per_request: Some(f64::INFINITY), ..FlameOptions::default() };
    assert!(flame_graph(&input, &bad).is_err());
}

#[test]
fn labels_are_cut_to_fit_their_frames() {
    let long = format!("very_long_function_name_{}", "x".repeat(300));
    let input = stacks(&[(&format!("main;{long}"), 50), ("main;tiny", 1), ("main;other", 49)]);
    let d = Drawn::parse(&flame_graph(&input, &FlameOptions { min_share: 0.0, ..FlameOptions::default() }).unwrap());
    let f = d.frame(&long);
    let label = f.label.as_deref().expect("a wide frame has a label");
    assert!(label.ends_with('…') && label.chars().count() as f64 * 7.0 <= f.width, "{label}");
    assert!(d.frame("tiny").label.is_none(), "a frame too narrow for three characters has none");
    assert!(d.frame("main").label.as_deref() == Some("main"));
}

#[test]
fn hostile_names_are_escaped_in_tooltips_and_labels() {
    let names = [
        "std::vector<std::pair<int, &'static str>>::push_back",
        "com.example.Dao.lambda$find$0\"quoted\"",
        "</title></g></svg><script>alert(1)</script>",
        "a & b <![CDATA[ ]]> c",
        "control\u{1}\u{0}chars\u{FFFF}",
    ];
    let input: Stacks = names.iter().map(|n| (vec!["main".to_owned(), (*n).to_owned()], 10)).collect();
    let svg = flame_graph(&input, &FlameOptions { title: "<b>&title</b>".into(), ..FlameOptions::default() }).unwrap();
    let d = Drawn::parse(&svg);
    for name in &names[..4] {
        let f = d.frame(name);
        assert!(f.tip.contains("10 samples"), "{}", f.tip);
        let label = f.label.as_deref().expect("a label");
        assert!(name.starts_with(label.trim_end_matches('…')), "{label} of {name}");
    }
    d.frame("control  chars\u{FFFD}");
    assert!(d.has_text("<b>&title</b>"));
    // In a differential graph too, drawn or listed as only in the baseline.
    let cand: Stacks = input[..2].to_vec();
    let d = Drawn::parse(&diff_flame_graph(&input, &cand, &DiffOptions::default()).unwrap());
    d.frame(names[0]);
    assert!(d.has_text(&format!("main > {}", names[2])), "{:?}", d.texts);
    assert!(d.has_text("main > a & b <![CDATA[ ]]> c"), "{:?}", d.texts);
}

#[test]
fn a_deep_stack_stays_bounded() {
    let frames: Vec<String> = (0..500).map(|i| format!("recurse_{i}")).collect();
    let input = vec![(frames, 1000)];
    let svg = flame_graph(&input, &FlameOptions::default()).unwrap();
    let d = Drawn::parse(&svg);
    assert_eq!(d.frames.len(), 257, "the root and 256 levels");
    assert!(d.has_text("244 frames deeper than 256 levels"), "{:?}", d.texts.last());
    assert!(svg.len() < 200_000, "{} bytes", svg.len());
    let deeper = FlameOptions { max_depth: 1000, ..FlameOptions::default() };
    assert_eq!(Drawn::parse(&flame_graph(&input, &deeper).unwrap()).frames.len(), 501);
}

#[test]
fn a_wide_table_stays_bounded() {
    let input: Stacks = (0..100_000u64)
        .map(|i| (vec!["main".into(), format!("handler_{}", i % 400), format!("leaf_{i}")], 1 + i % 7))
        .collect();
    let svg = flame_graph(&input, &FlameOptions::default()).unwrap();
    let d = Drawn::parse(&svg);
    // Leaves have at most 7 of 400,000 samples (under 0.1%); the handlers have 0.25% each.
    assert_eq!(d.frames.len(), 402);
    assert!(d.has_text("100,000 frames under 0.1% of the samples"), "{:?}", d.texts.last());
    assert!(svg.len() < 300_000, "{} bytes", svg.len());
    // With every frame wide enough, the budget bounds it.
    let all = FlameOptions { min_share: 0.0, max_frames: 1000, ..FlameOptions::default() };
    let svg = flame_graph(&input, &all).unwrap();
    let d = Drawn::parse(&svg);
    assert_eq!(d.frames.len(), 1000);
    assert_eq!(d.rects, 1002, "the frames, the page and the panel");
    assert!(d.has_text("99,402 frames beyond the 1,000 widest drawn"), "{:?}", d.texts.last());
    assert!(svg.len() < 1_000_000, "{} bytes", svg.len());
}

#[test]
fn no_samples_give_a_graph_that_says_so() {
    for input in [Vec::new(), stacks(&[("main;a", 0)])] {
        let d = Drawn::parse(&flame_graph(&input, &FlameOptions::default()).unwrap());
        assert!(d.frames.is_empty());
        assert!(d.has_text("No samples: nothing to draw"), "{:?}", d.texts);
        assert!(d.has_text("0 samples"));
    }
    let d = Drawn::parse(&diff_flame_graph(&[], &[], &DiffOptions::default()).unwrap());
    assert!(d.has_text("No samples in the candidate"), "{:?}", d.texts);
    let base_only = stacks(&[("main;a", 5)]);
    let d = Drawn::parse(&diff_flame_graph(&base_only, &[], &DiffOptions::default()).unwrap());
    assert!(d.has_text("0 samples against 5 in the baseline"), "{:?}", d.texts);
}

fn per_request(base_us: f64, cand_us: f64) -> DiffOptions {
    DiffOptions {
        flame: FlameOptions {
            title: "CPU profile: plaintext".into(),
            subtitle: "CPU, candidate against baseline".into(),
            us_per_sample_per_request: Some(cand_us),
            ..FlameOptions::default()
        },
        base_us_per_sample_per_request: Some(base_us),
        colour: DiffColour::Own,
    }
}

#[test]
fn the_differential_graph_is_red_where_cost_grew_and_blue_where_it_shrank() {
    let base = stacks(&[("main;handler;slow_path;work", 100), ("main;handler;fast", 100), ("main;old_helper", 20)]);
    let cand = stacks(&[("main;handler;slow_path;work", 150), ("main;handler;fast", 60), ("main;new_helper", 10)]);
    let d = Drawn::parse(&diff_flame_graph(&base, &cand, &per_request(0.1, 0.1)).unwrap());
    let (r, g, b) = rgb(&d.frame("work").fill);
    assert!(r == 255 && g < 100 && b < 100, "work grew most: full red, {:?}", (r, g, b));
    let (r, g, b) = rgb(&d.frame("fast").fill);
    assert!(b > 250 && r < 150, "fast shrank: blue, {:?}", (r, g, b));
    let (r, g, b) = rgb(&d.frame("slow_path").fill);
    assert!(r >= 248 && g >= 248 && b >= 248, "slow_path's own cost did not change: {:?}", (r, g, b));
    let (r, g, b) = rgb(&d.frame("new_helper").fill);
    assert!(r > g && g == b, "new frames grew from nothing: {:?}", (r, g, b));
    let tip = &d.frame("work").tip;
    assert!(tip.contains("candidate: 150 samples") && tip.contains("baseline: 100 samples"), "{tip}");
    assert!(tip.contains("change: +5.000 total, +5.000 self (us/request)"), "{tip}");
    assert!(d.frame("new_helper").tip.contains("baseline: not there"));
    assert!(d.frames.iter().all(|f| f.name() != "old_helper"), "frames only in the baseline are not drawn");
    assert!(d.has_text("Only in the baseline (1 frame, not drawn):"), "{:?}", d.texts);
    assert!(d.has_text("main > old_helper: 2.000 us/request, 20 samples"), "{:?}", d.texts);
    // By inclusive cost, slow_path grew with its callee.
    let total = DiffOptions { colour: DiffColour::Total, ..per_request(0.1, 0.1) };
    let d = Drawn::parse(&diff_flame_graph(&base, &cand, &total).unwrap());
    assert_eq!(rgb(&d.frame("slow_path").fill), rgb(&d.frame("work").fill));
}

#[test]
fn per_request_cost_discounts_a_side_that_served_more_requests() {
    // The candidate served twice the requests with twice the samples in every frame: no frame costs more per
    // request, so nothing is coloured.
    let base = stacks(&[("main;a", 100), ("main;b", 300)]);
    let cand = stacks(&[("main;a", 200), ("main;b", 600)]);
    let d = Drawn::parse(&diff_flame_graph(&base, &cand, &per_request(0.2, 0.1)).unwrap());
    for f in &d.frames {
        assert_eq!(rgb(&f.fill), (248, 248, 248), "{}", f.tip);
    }
    // Without the conversion, shares are compared: unchanged too. By raw samples it would all be red.
    let shares = DiffOptions { base_us_per_sample_per_request: None, ..per_request(0.2, 0.1) };
    let d = Drawn::parse(&diff_flame_graph(&base, &cand, &shares).unwrap());
    assert!(d.frames.iter().all(|f| rgb(&f.fill) == (248, 248, 248)));
    assert!(d.frame("a").tip.contains("change: +0.00 pp total"), "{}", d.frame("a").tip);
}

#[test]
fn an_a_a_pair_stays_pale() {
    let base = server_profile(500);
    let mut cand = server_profile(500);
    for (i, (_, n)) in cand.iter_mut().enumerate() {
        *n += (i % 3) as u64; // a few samples of noise
    }
    let d = Drawn::parse(&diff_flame_graph(&base, &cand, &DiffOptions::default()).unwrap());
    for f in &d.frames {
        let (r, g, b) = rgb(&f.fill);
        assert!(r.min(g).min(b) > 200, "{} is {:?}", f.tip, (r, g, b));
    }
}

/// Runs Chromium on an SVG with a time limit, for a screenshot.
fn screenshot(chromium: &Path, svg: &Path, png: &Path) -> Result<(), String> {
    let mut child = Command::new(chromium)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1200,800"])
        .arg(format!("--screenshot={}", png.display()))
        .arg(svg)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(90) {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            return if status.success() { Ok(()) } else { Err(format!("chromium exited with {status}")) };
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    Err("chromium took over 90 s".into())
}

#[test]
fn screenshots_of_each_kind_for_a_person_to_look_at() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("flame-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    // The candidate: sha256_block grew, fast_path shrank, and the baseline's cache_lookup is gone.
    let mut base = server_profile(600);
    base.push((["main", "event_loop", "handle_request", "cache_lookup"].map(str::to_owned).to_vec(), 250));
    let mut cand = server_profile(2100);
    for (frames, n) in &mut cand {
        if frames.last().is_some_and(|f| f == "fast_path") {
            *n /= 3;
        }
    }
    let options = FlameOptions {
        title: "CPU profile: plaintext".into(),
        subtitle: "CPU, candidate".into(),
        us_per_sample_per_request: Some(0.05),
        ..FlameOptions::default()
    };
    let mut files: HashMap<&str, String> = HashMap::new();
    files.insert("flame", flame_graph(&cand, &options).unwrap());
    files.insert("diff", diff_flame_graph(&base, &cand, &per_request(0.05, 0.05)).unwrap());
    for (kind, svg) in &files {
        Drawn::parse(svg);
        std::fs::write(dir.join(format!("{kind}.svg")), svg).unwrap();
    }
    let Some(chromium) = std::env::var_os("LOADGATE_CHROMIUM") else {
        eprintln!("LOADGATE_CHROMIUM not set: no screenshots; the SVGs are in {}", dir.display());
        return;
    };
    // Zoom, inline in a page beside a second graph, as report.html would embed them: the page clicks
    // `slow_path` of the first graph once both are there; the second must stay as it is.
    let zoomed = FlameOptions { zoom: true, ..options.clone() };
    let page = format!(
        "<!DOCTYPE html><html><body style=\"margin:0\">{}{}<script>\
         var f = [].slice.call(document.querySelectorAll('svg')[0].querySelectorAll('g.lg-frame'))\
         .filter(function (g) {{ return g.querySelector('title').textContent.indexOf('slow_path\\n') === 0; }})[0];\
         f.dispatchEvent(new MouseEvent('click', {{bubbles: true}}));</script></body></html>",
        flame_graph(&cand, &zoomed).unwrap(),
        flame_graph(&cand, &zoomed).unwrap()
    );
    std::fs::write(dir.join("zoom.html"), page).unwrap();
    for file in ["flame.svg", "diff.svg", "zoom.html"] {
        let png = dir.join(file.replace(".svg", ".png").replace(".html", ".png"));
        screenshot(Path::new(&chromium), &dir.join(file), &png).unwrap();
        assert!(std::fs::metadata(&png).map(|m| m.len() > 0).unwrap_or(false));
        eprintln!("screenshot: {}", png.display());
    }
}
