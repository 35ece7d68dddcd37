//! loadgate's plots: SVG drawn with plotters' SVG backend, as pure functions of a [`RunResults`] (no I/O, no
//! fonts: the SVG carries `<text>` and the browser lays it out).
//!
//! - [`figures`]`(results) -> Vec<Figure>`: which plots a run has and the file each goes to, in the order a
//!   report shows them: the [timeline](timeline()) of the whole run, then per scenario instance its latency
//!   [spectrum](spectrum()) and, when its SLOs were judged over repetitions or against an A/B baseline, its
//!   [checks](checks()) and, for a capacity search, the [curve of its steps](capacity()), then one
//!   [sweep](sweep()) per matrix scenario. Cheap: it renders nothing.
//! - [`render`]`(results, figure) -> Result<String, PlotError>` draws one of them.
//! - [`file_stem`]`(name)`: a scenario instance's name made safe as part of a file name, at most
//!   [`MAX_STEM_BYTES`] long.
//!
//! - [`compare_figures`]`(comparison)` and [`compare_plot`] draw `loadgate compare`'s plots: per metric, the
//!   sweep curves of every run (knees ringed) or grouped bars per instance.
//!
//! - [`flame_graph`]`(stacks, options)` and [`diff_flame_graph`]`(base, candidate, options)`: a server's profile
//!   (folded stacks) as a flame graph, and an A/B run's differential flame graph; see [`flame`].
//!
//! - [`trend`](trend())`(series)`: a metric over the runs a history keeps, levels between change points, each change
//!   point marked (regression or improvement) with its p-value.
//!
//! Every plot is drawn on one skeleton (the `chart` module: the SVG document, the caption and label areas, the
//! mesh's style). Every SVG reads in a light and a dark theme: see [`theme`]. Axes say their units; latencies are shown in
//! us, ms or s, whichever suits the largest value plotted.

mod capacity;
mod chart;
mod checks;
pub mod compare;
pub mod flame;
mod flame_tree;
mod shared;
mod spectrum;
mod sweep;
pub mod theme;
mod timeline;
pub mod trend;

pub use capacity::capacity;
pub use checks::checks;
pub use compare::{compare_figures, compare_plot, CompareFigure, CompareShape};
pub use flame::{diff_flame_graph, flame_graph, DiffColour, DiffOptions, FlameOptions};
pub use spectrum::spectrum;
pub use sweep::sweep;
pub use timeline::timeline;
pub use trend::{trend, trend_file};

pub use shared::{file_stem, PlotError, MAX_STEM_BYTES};

use loadgate_results::{RunResults, ScenarioResult, Sweep};

/// What a figure shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FigureKind {
    /// Throughput, p50/p99, errors and connections or users per second over the whole run.
    Timeline,
    /// The latency percentile spectrum of one scenario instance (by name).
    Spectrum { instance: String },
    /// The checks of one instance judged over repetitions or against an A/B baseline, with their intervals.
    Checks { instance: String },
    /// Throughput and p99 across the cells of one matrix scenario (by key), with the knee.
    Sweep { scenario: String },
    /// The steps of one instance's capacity search: p99 and achieved rate against the rate asked.
    Capacity { instance: String },
    /// A metric of one instance over the runs of its history, with this run last (a run judged against its
    /// history: `results.history`).
    Trend { instance: String, metric: String },
    /// The flame graph of one instance's profile on one side (`baseline` or `candidate` in an A/B run).
    Flame { instance: String, side: Option<String> },
    /// The differential flame graph of an A/B run's instance: the candidate's shape, coloured by the change.
    FlameDiff { instance: String },
}

impl FigureKind {
    /// `timeline`, `spectrum`, `checks`, `sweep` or `capacity`.
    pub fn label(&self) -> &'static str {
        match self {
            FigureKind::Timeline => "timeline",
            FigureKind::Spectrum { .. } => "spectrum",
            FigureKind::Checks { .. } => "checks",
            FigureKind::Sweep { .. } => "sweep",
            FigureKind::Capacity { .. } => "capacity",
            FigureKind::Flame { .. } => "flame",
            FigureKind::FlameDiff { .. } => "flame-diff",
            FigureKind::Trend { .. } => "trend",
        }
    }
}

/// One plot of a run: what it shows, the file it is written to and its title.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Figure {
    pub kind: FigureKind,
    /// `spectrum-plaintext-connections-256.svg`: safe on every file system, unique within the run.
    pub file: String,
    /// `Latency spectrum: plaintext[connections=256]`.
    pub title: String,
}

impl Figure {
    /// The scenario instance (or matrix scenario) the figure belongs to; `None` for the timeline.
    pub fn subject(&self) -> Option<&str> {
        match &self.kind {
            FigureKind::Timeline => None,
            FigureKind::Spectrum { instance }
            | FigureKind::Checks { instance }
            | FigureKind::Capacity { instance }
            | FigureKind::Trend { instance, .. }
            | FigureKind::Flame { instance, .. }
            | FigureKind::FlameDiff { instance } => Some(instance),
            FigureKind::Sweep { scenario } => Some(scenario),
        }
    }
}

/// The sweeps of a run: as stored, or derived for results written before they were.
pub(crate) fn run_sweeps(r: &RunResults) -> Vec<Sweep> {
    if r.sweeps.is_empty() {
        loadgate_results::sweeps(r)
    } else {
        r.sweeps.clone()
    }
}

/// Whether an instance has checks judged over repetitions or against an A/B baseline (a history check's
/// statistics are the series', plotted as its trend).
fn has_checks(s: &ScenarioResult) -> bool {
    s.judged.verdicts.iter().any(|v| v.statistics.as_ref().is_some_and(|st| !checks::is_history(st)))
}

/// The plots a run has, in the order a report shows them, with unique file names.
pub fn figures(r: &RunResults) -> Vec<Figure> {
    let mut out = Vec::new();
    if r.scenarios.iter().any(|s| !s.timeline.is_empty()) {
        out.push(Figure {
            kind: FigureKind::Timeline,
            file: "timeline.svg".to_owned(),
            title: format!("Timeline: {}", r.spec.name),
        });
    }
    for s in &r.scenarios {
        if s.latency.count > 0 {
            out.push(Figure {
                kind: FigureKind::Spectrum { instance: s.name.clone() },
                file: format!("spectrum-{}.svg", file_stem(&s.name)),
                title: format!("Latency spectrum: {}", s.name),
            });
        }
        if has_checks(s) {
            let title = if s.ab_baseline.is_some() { "A/B comparison" } else { "Checks over repetitions" };
            out.push(Figure {
                kind: FigureKind::Checks { instance: s.name.clone() },
                file: format!("checks-{}.svg", file_stem(&s.name)),
                title: format!("{title}: {}", s.name),
            });
        }
        out.extend(flame_figures(s));
        if s.capacity.as_ref().is_some_and(|c| !c.steps.is_empty()) {
            out.push(Figure {
                kind: FigureKind::Capacity { instance: s.name.clone() },
                file: format!("capacity-{}.svg", file_stem(&s.name)),
                title: format!("Capacity search: {}", s.name),
            });
        }
    }
    for sw in run_sweeps(r) {
        out.push(Figure {
            file: format!("sweep-{}.svg", file_stem(&sw.scenario)),
            title: format!("Sweep: {}", sw.scenario),
            kind: FigureKind::Sweep { scenario: sw.scenario },
        });
    }
    for h in &r.history {
        out.push(Figure {
            kind: FigureKind::Trend { instance: h.instance.clone(), metric: h.metric.clone() },
            file: trend_file(h),
            title: format!("Trend: {} {}", h.instance, h.metric),
        });
    }
    // Instance names that differ only in punctuation share a stem: number the later ones.
    let mut seen: Vec<String> = Vec::new();
    for f in &mut out {
        if seen.contains(&f.file) {
            let stem = f.file.trim_end_matches(".svg").to_owned();
            let mut n = 2;
            while seen.contains(&format!("{stem}-{n}.svg")) {
                n += 1;
            }
            f.file = format!("{stem}-{n}.svg");
        }
        seen.push(f.file.clone());
    }
    out
}

/// Draws one figure of a run as an SVG document.
pub fn render(r: &RunResults, figure: &Figure) -> Result<String, PlotError> {
    let instance = |name: &str| {
        r.scenarios.iter().find(|s| s.name == name).ok_or_else(|| PlotError::Missing(format!("instance `{name}`")))
    };
    match &figure.kind {
        FigureKind::Timeline => timeline(r),
        FigureKind::Spectrum { instance: name } => spectrum(instance(name)?),
        FigureKind::Checks { instance: name } => checks(instance(name)?),
        FigureKind::Capacity { instance: name } => capacity(instance(name)?),
        FigureKind::Flame { instance: name, side } => flame_of(instance(name)?, side.as_deref()),
        FigureKind::FlameDiff { instance: name } => flame_diff_of(instance(name)?),
        FigureKind::Trend { instance: name, metric } => {
            let series = r
                .history
                .iter()
                .find(|h| &h.instance == name && &h.metric == metric)
                .ok_or_else(|| PlotError::Missing(format!("history of `{name}` {metric}")))?;
            trend(series)
        }
        FigureKind::Sweep { scenario } => {
            let sweeps = run_sweeps(r);
            let sw = sweeps
                .iter()
                .find(|s| &s.scenario == scenario)
                .ok_or_else(|| PlotError::Missing(format!("sweep `{scenario}`")))?;
            sweep(r, sw)
        }
    }
}

/// The flame graphs of an instance whose profile's stacks are at hand (a run's, not results read back): one per
/// side, and the differential one of an A/B run.
fn flame_figures(s: &loadgate_results::ScenarioResult) -> Vec<Figure> {
    let has = |p: Option<&loadgate_results::ScenarioProfile>| p.is_some_and(|p| p.stacks.is_some());
    let base = s.ab_baseline.as_deref().and_then(|b| b.profile.as_ref());
    let mut out = Vec::new();
    let ab = s.ab_baseline.is_some();
    if ab && has(base) {
        out.push(Figure {
            kind: FigureKind::Flame { instance: s.name.clone(), side: Some("baseline".into()) },
            file: format!("flame-{}-baseline.svg", file_stem(&s.name)),
            title: format!("Profile, baseline (A): {}", s.name),
        });
    }
    if has(s.profile.as_ref()) {
        let side = ab.then(|| "candidate".to_owned());
        let suffix = side.as_deref().map(|s| format!("-{s}")).unwrap_or_default();
        out.push(Figure {
            kind: FigureKind::Flame { instance: s.name.clone(), side },
            file: format!("flame-{}{suffix}.svg", file_stem(&s.name)),
            title: format!("Profile{}: {}", if ab { ", candidate (B)" } else { "" }, s.name),
        });
        if ab && has(base) {
            out.push(Figure {
                kind: FigureKind::FlameDiff { instance: s.name.clone() },
                file: format!("flame-diff-{}.svg", file_stem(&s.name)),
                title: format!("Profile, B against A: {}", s.name),
            });
        }
    }
    out
}

fn profile_of<'a>(
    s: &'a loadgate_results::ScenarioResult,
    side: Option<&str>,
) -> Result<&'a loadgate_results::ScenarioProfile, PlotError> {
    let p = match side {
        Some("baseline") => s.ab_baseline.as_deref().and_then(|b| b.profile.as_ref()),
        _ => s.profile.as_ref(),
    };
    p.filter(|p| p.stacks.is_some()).ok_or_else(|| PlotError::Missing(format!("the profile of `{}`", s.name)))
}

fn owned_stacks(p: &loadgate_results::ScenarioProfile) -> Vec<(Vec<String>, u64)> {
    p.stacks.as_ref().map_or_else(Vec::new, |st| {
        st.iter().map(|(frames, n)| (frames.into_iter().map(str::to_owned).collect(), n)).collect()
    })
}

fn per_request(p: &loadgate_results::ScenarioProfile) -> Option<f64> {
    p.ns_per_sample.filter(|_| p.requests > 0).map(|ns| ns / 1_000.0 / p.requests as f64)
}

fn flame_options(
    s: &loadgate_results::ScenarioResult,
    p: &loadgate_results::ScenarioProfile,
    side: Option<&str>,
) -> FlameOptions {
    let what = if p.sample_type == "cpu" { "CPU".to_owned() } else { p.sample_type.clone() };
    FlameOptions {
        title: format!("{} profile: {}", what, s.name),
        subtitle: match side {
            Some(side) => format!("{what}, {side}"),
            None => what,
        },
        us_per_sample_per_request: per_request(p),
        ..FlameOptions::default()
    }
}

fn flame_of(s: &loadgate_results::ScenarioResult, side: Option<&str>) -> Result<String, PlotError> {
    let p = profile_of(s, side)?;
    flame_graph(&owned_stacks(p), &flame_options(s, p, side))
}

fn flame_diff_of(s: &loadgate_results::ScenarioResult) -> Result<String, PlotError> {
    let (base, cand) = (profile_of(s, Some("baseline"))?, profile_of(s, Some("candidate"))?);
    let mut flame = flame_options(s, cand, Some("candidate against baseline"));
    flame.title = format!("Differential profile: {}", s.name);
    let options = DiffOptions { flame, base_us_per_sample_per_request: per_request(base), ..DiffOptions::default() };
    diff_flame_graph(&owned_stacks(base), &owned_stacks(cand), &options)
}
