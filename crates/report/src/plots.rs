//! What the reports say about the plots: the SVG files a run's directory holds (named by
//! [`loadgate_plot::figures`]) and, for readers without pictures, each instance's per-second timeline as a
//! compact table.

use loadgate_results::{format, RunResults, ScenarioResult, TimelinePoint};
use serde::Serialize;

/// Rows a timeline table shows at most per scenario instance; longer phases are grouped into rows of several
/// seconds.
pub const TIMELINE_MAX_ROWS: usize = 30;

/// A plot beside the report.
#[derive(Debug, Clone, Serialize)]
pub struct PlotLink {
    /// `Latency spectrum: plaintext[connections=256]`.
    pub title: String,
    /// `spectrum-plaintext-connections-256.svg`, relative to the report.
    pub file: String,
    /// `timeline`, `spectrum`, `checks` or `sweep`.
    pub kind: &'static str,
    /// The scenario instance or matrix scenario it shows; `None` for the timeline.
    pub subject: Option<String>,
}

/// The plots of a run, in the order the reports show them.
pub fn plot_links(r: &RunResults) -> Vec<PlotLink> {
    loadgate_plot::figures(r)
        .into_iter()
        .map(|f| PlotLink {
            kind: f.kind.label(),
            subject: f.subject().map(str::to_owned),
            title: f.title,
            file: f.file,
        })
        .collect()
}

/// One scenario instance's timeline as a table.
#[derive(Debug, Clone, Serialize)]
pub struct TimelineTable {
    /// The scenario instance.
    pub name: String,
    /// Seconds per row (1 unless the phase had more than [`TIMELINE_MAX_ROWS`] seconds).
    pub seconds_per_row: usize,
    /// Whether the instance had users (a `users` column).
    pub users: bool,
    pub rows: Vec<TimelineRow>,
}

/// One second of a phase, or a group of seconds.
#[derive(Debug, Clone, Serialize)]
pub struct TimelineRow {
    /// `3`, or `31-33` for a group: seconds since the phase started, at the rows' ends.
    pub t: String,
    /// Completed requests per second.
    pub throughput: String,
    /// The second's p50 (the worst second's in a group).
    pub p50: String,
    pub p99: String,
    pub max: String,
    /// Failed requests (summed over a group).
    pub errors: String,
    pub non_2xx: String,
    /// Connections open at the row's end.
    pub connections: String,
    /// Users active at the row's end.
    pub users: String,
}

fn row(points: &[TimelinePoint], since: f64) -> TimelineRow {
    let last = &points[points.len() - 1];
    let span = last.t - since;
    let completed: u64 = points.iter().map(|p| p.completed).sum();
    let worst = |f: fn(&TimelinePoint) -> u64| {
        points.iter().filter(|p| p.completed > 0).map(f).max().map_or_else(|| "-".to_owned(), format::latency)
    };
    let secs = |t: f64| {
        let text = format!("{t:.1}");
        text.strip_suffix(".0").map_or_else(|| text.clone(), str::to_owned)
    };
    // Named by its seconds; a drain's few milliseconds joined to the row do not make it another second.
    let n = points.len();
    let named = if n >= 2 && last.t - points[n - 2].t < TAIL_JOINS_BELOW_S { &points[..n - 1] } else { points };
    let (first, end) = (&named[0], &named[named.len() - 1]);
    let t = if named.len() == 1 { secs(end.t) } else { format!("{}-{}", secs(first.t), secs(end.t)) };
    TimelineRow {
        t,
        throughput: if span > 0.0 { format::rate(completed as f64 / span) } else { "-".to_owned() },
        p50: worst(|p| p.p50_us),
        p99: worst(|p| p.p99_us),
        max: worst(|p| p.max_us),
        errors: format::count(points.iter().map(|p| p.errors).sum()),
        non_2xx: format::count(points.iter().map(|p| p.non_2xx).sum()),
        connections: format::count(points.iter().map(|p| p.connections_open).max().unwrap_or(0)),
        users: last.users_active.map_or_else(|| "-".to_owned(), format::count),
    }
}

/// A last interval shorter than this (the drain after the phase's last full second) joins the row before it: a
/// few responses over a few milliseconds are not a rate to read.
const TAIL_JOINS_BELOW_S: f64 = 0.5;

fn table(s: &ScenarioResult) -> TimelineTable {
    let points = &s.timeline;
    let n = points.len();
    let tail = n >= 2 && points[n - 1].t - points[n - 2].t < TAIL_JOINS_BELOW_S;
    let rowed = if tail { n - 1 } else { n };
    let per_row = rowed.div_ceil(TIMELINE_MAX_ROWS).max(1);
    let mut since = 0.0;
    let mut start = 0;
    let mut rows = Vec::new();
    while start < rowed {
        let mut end = (start + per_row).min(rowed);
        if end == rowed && tail {
            end = n;
        }
        rows.push(row(&points[start..end], since));
        since = points[end - 1].t;
        start = end;
    }
    // A long phase's points cover several seconds each (the engine bounds its timeline): its first point's end.
    let seconds_per_point = points.first().map_or(1, |p| (p.t.round() as usize).max(1));
    TimelineTable {
        name: s.name.clone(),
        seconds_per_row: per_row * seconds_per_point,
        users: s.timeline.iter().any(|p| p.users_active.is_some()),
        rows,
    }
}

/// The per-second timeline of every instance that has one.
pub fn timeline_tables(r: &RunResults) -> Vec<TimelineTable> {
    r.scenarios.iter().filter(|s| !s.timeline.is_empty()).map(table).collect()
}
