//! The per-second timeline of a whole run: four panels over the same time axis (seconds since the run
//! started): throughput (and the target rate of open loads), p50 and p99 latency, failed requests and non-2xx
//! responses per second, connections open and users active. Each phase is a segment of its own (lines never
//! join across a pause); phase boundaries are drawn in every panel, warmups (phases that are not gated) are
//! shaded, and the top panel names the phases where there is room. When phases' throughputs lie orders of
//! magnitude apart (a closed phase at 160,000/s before an open one at 2,000/s), the throughput panel takes a
//! logarithmic axis in whole decades, so that neither reads as a line on the floor.
//!
//! With repetitions, each repetition sits at its own time; in an A/B run the baseline's phases are named
//! `(A)` and the candidate's `(B)`.

use loadgate_results::{RunResults, ScenarioResult, TimelinePoint};
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::chart::{svg_document, theme_mesh};
use crate::shared::{axis_top, compact, time_unit, OrDraw, PlotError};
use crate::theme::{AMBER, BLUE, FG, FONT, GREEN, MUTED, ORANGE, PURPLE, RED, SLATE, TEAL};

const PLOT: &str = "the timeline";
const WIDTH: u32 = 960;
const PANEL_HEIGHT: u32 = 190;
/// Intervals shorter than this after a phase's first (its drain, after its last full second) are not drawn: a few
/// requests over a few milliseconds would read as a spike (the spectrum has them). The legend says how many were
/// left out. A phase's first interval is always drawn, however short (a sub-second phase has only that one).
const MIN_INTERVAL: f64 = 0.2;

/// One phase (or one repetition of it) on the run's clock.
struct Segment {
    name: String,
    /// Shorter names for a narrow band: the matrix cell (`connections=8`), its values (`8`).
    short: Vec<String>,
    start: f64,
    end: f64,
    gated: bool,
    /// `(seconds since the run started, seconds the interval covered, the point)`.
    points: Vec<(f64, f64, TimelinePoint)>,
    /// Intervals under [`MIN_INTERVAL`] after the first, not drawn.
    left_out: usize,
}

fn segments_of(s: &ScenarioResult, suffix: &str, out: &mut Vec<Segment>) {
    let name = format!("{}{suffix}", s.name);
    let reps = &s.repetitions;
    let spans: Vec<(f64, f64)> = if reps.len() > 1 {
        reps.iter().map(|r| (r.started_at_offset, r.duration)).collect()
    } else {
        vec![(s.started_at_offset, s.duration)]
    };
    // A merged timeline is the repetitions' timelines one after the other: split it at their durations.
    let mut bounds = Vec::with_capacity(spans.len());
    let mut cumulative = 0.0;
    for (_, d) in &spans {
        cumulative += d;
        bounds.push(cumulative);
    }
    let mut short = Vec::new();
    if !s.matrix.is_empty() {
        let cell: Vec<String> = s.matrix.iter().map(|(k, v)| format!("{k}={v}")).collect();
        short.push(format!("{}{suffix}", cell.join(",")));
        let values: Vec<&str> = s.matrix.iter().map(|(_, v)| v.as_str()).collect();
        short.push(values.join(","));
    }
    let mut segs: Vec<Segment> = spans
        .iter()
        .enumerate()
        .map(|(i, (start, d))| Segment {
            name: if spans.len() > 1 { format!("{name} #{}", i + 1) } else { name.clone() },
            short: short.clone(),
            start: *start,
            end: start + d,
            gated: s.gate,
            points: Vec::new(),
            left_out: 0,
        })
        .collect();
    let mut previous_t = 0.0;
    let mut previous_seg = 0;
    for p in &s.timeline {
        let i = bounds.iter().position(|b| p.t <= b + 1e-6).unwrap_or(bounds.len() - 1);
        let base = if i == 0 { 0.0 } else { bounds[i - 1] };
        if i != previous_seg {
            previous_t = base;
            previous_seg = i;
        }
        let dt = p.t - previous_t;
        previous_t = p.t;
        let seg = &mut segs[i];
        if dt < MIN_INTERVAL && !seg.points.is_empty() {
            seg.left_out += 1;
            continue;
        }
        seg.points.push((seg.start + (p.t - base), dt, p.clone()));
    }
    out.extend(segs);
}

fn segments(r: &RunResults) -> Vec<Segment> {
    let mut out = Vec::new();
    for s in &r.scenarios {
        match &s.ab_baseline {
            Some(a) => {
                segments_of(a, " (A)", &mut out);
                segments_of(s, " (B)", &mut out);
            }
            None => segments_of(s, "", &mut out),
        }
    }
    out.sort_by(|a, b| a.start.total_cmp(&b.start));
    out
}

/// One series of a panel: its label, colour and how to read a value from a point (`None`: no value there).
type Series = (&'static str, RGBColor, fn(f64, &TimelinePoint) -> Option<f64>);

fn rate(v: u64, dt: f64) -> Option<f64> {
    (dt > 0.0).then(|| v as f64 / dt)
}

struct Panel {
    y_desc: String,
    series: Vec<Series>,
    /// Divides every value (a latency unit).
    scale: f64,
    /// A logarithmic axis (in whole decades): phases whose levels differ by orders of magnitude each read as a
    /// line of their own, none flat on the floor under another.
    log: bool,
}

/// How far apart phases' levels may be before a panel takes a logarithmic axis: beyond this ratio of the
/// highest phase's median to the lowest's, the lowest would be a line on the floor of a linear axis.
const LOG_AXIS_RATIO: f64 = 20.0;

/// Whether `series` on `segs` need a logarithmic axis: the medians of the phases' positive values (each phase
/// with one) lie further apart than [`LOG_AXIS_RATIO`].
fn needs_log_axis(segs: &[Segment], series: &[Series]) -> bool {
    let mut medians: Vec<f64> = Vec::new();
    for seg in segs {
        let mut values: Vec<f64> = series
            .iter()
            .flat_map(|(_, _, f)| seg.points.iter().filter_map(move |(_, dt, p)| f(*dt, p)))
            .filter(|v| *v > 0.0)
            .collect();
        if values.is_empty() {
            continue;
        }
        values.sort_by(f64::total_cmp);
        medians.push(values[values.len() / 2]);
    }
    let lowest = medians.iter().copied().fold(f64::INFINITY, f64::min);
    let highest = medians.iter().copied().fold(0.0, f64::max);
    lowest > 0.0 && highest / lowest > LOG_AXIS_RATIO
}

/// Draws the per-second timeline of a run.
pub fn timeline(r: &RunResults) -> Result<String, PlotError> {
    let segs = segments(r);
    let end = segs.iter().map(|s| s.end.max(s.points.last().map_or(0.0, |p| p.0))).fold(1.0f64, f64::max);
    let all = || segs.iter().flat_map(|s| s.points.iter());
    let max_p99 = all().filter(|p| p.2.completed > 0).map(|p| p.2.p99_us as f64).fold(0.0, f64::max);
    let unit = time_unit(max_p99);
    let open = all().any(|p| p.2.target_rate.is_some());
    let users = all().any(|p| p.2.users_active.is_some());

    // The target rate first, so that the achieved rate is drawn over it.
    let mut throughput: Vec<Series> = Vec::new();
    if open {
        throughput.push(("target rate", SLATE, |_, p| p.target_rate));
    }
    throughput.push(("completed/s", BLUE, |dt, p| rate(p.completed, dt)));
    let mut active: Vec<Series> = vec![("connections open", PURPLE, |_, p| Some(p.connections_open as f64))];
    if users {
        active.push(("users active", TEAL, |_, p| p.users_active.map(|u| u as f64)));
    }
    let log = needs_log_axis(&segs, &throughput);
    let panels = [
        Panel {
            y_desc: if log { "throughput (requests/s, log)".to_owned() } else { "throughput (requests/s)".to_owned() },
            series: throughput,
            scale: 1.0,
            log,
        },
        Panel {
            y_desc: format!("latency ({})", unit.name),
            series: vec![
                ("p50", GREEN, |_, p| (p.completed > 0).then_some(p.p50_us as f64)),
                ("p99", ORANGE, |_, p| (p.completed > 0).then_some(p.p99_us as f64)),
            ],
            scale: unit.us,
            log: false,
        },
        Panel {
            y_desc: "errors (per second)".to_owned(),
            series: vec![
                ("failed requests/s", RED, |dt, p| rate(p.errors, dt)),
                ("non-2xx responses/s", AMBER, |dt, p| rate(p.non_2xx, dt)),
            ],
            scale: 1.0,
            log: false,
        },
        Panel {
            y_desc: if users { "connections, users".to_owned() } else { "connections".to_owned() },
            series: active,
            scale: 1.0,
            log: false,
        },
    ];

    let title = format!("Timeline: {}", r.spec.name);
    let left_out: usize = segs.iter().map(|s| s.left_out).sum();
    let note = left_out_note(left_out);
    let description = format!(
        "Per-second throughput, p50 and p99 latency, errors and {} of {} phases over {:.1} seconds; warmups shaded{}.",
        if users { "connections and users" } else { "connections" },
        segs.len(),
        end,
        note.as_deref().map(|n| format!("; {n}")).unwrap_or_default()
    );
    let height = PANEL_HEIGHT * panels.len() as u32 + 110;
    svg_document((WIDTH, height), &title, &description, "timeline", PLOT, |root| {
        let root = root.titled(&crate::shared::shorten(&title, 90), (FONT, 20).into_font().color(&FG)).or_draw(PLOT)?;
        let (body, legend) = root.split_vertically(PANEL_HEIGHT * panels.len() as u32);
        let areas = body.split_evenly((panels.len(), 1));
        for (i, (panel, area)) in panels.iter().zip(areas.iter()).enumerate() {
            draw_panel(area, panel, &segs, end, i == 0, i + 1 == panels.len())?;
        }
        draw_legend(&legend, &panels, note.as_deref())?;
        Ok(())
    })
}

fn draw_panel(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    panel: &Panel,
    segs: &[Segment],
    end: f64,
    names: bool,
    last: bool,
) -> Result<(), PlotError> {
    let values = |s: &Series| {
        let f = s.2;
        segs.iter().flat_map(move |seg| seg.points.iter().filter_map(move |(_, dt, p)| f(*dt, p)))
    };
    let max = panel.series.iter().flat_map(values).fold(0.0f64, f64::max) / panel.scale;
    // A log axis spans whole decades, from the one below the smallest positive value; a zero sits on its floor.
    let (bottom, top) = if panel.log {
        let min = panel.series.iter().flat_map(values).filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min) / panel.scale;
        let low = if min.is_finite() { min.log10().floor() } else { 0.0 };
        (low, max.log10().ceil().max(low + 1.0))
    } else {
        (0.0, axis_top(max))
    };
    let y_of = |v: f64| if panel.log { v.max(10f64.powf(bottom)).log10() } else { v };
    let mut chart = ChartBuilder::on(area)
        .margin_left(12)
        .margin_right(24)
        .margin_top(if names { 4 } else { 8 })
        .margin_bottom(4)
        .x_label_area_size(if last { 44 } else { 24 })
        .y_label_area_size(78)
        .build_cartesian_2d(0f64..end, bottom..top)
        .or_draw(PLOT)?;
    let decades = (top - bottom).round() as usize;
    let y_label = |y: &f64| {
        if !panel.log {
            return compact(*y);
        }
        // Only the decades are labelled (1k, 10k, 100k).
        if (y - y.round()).abs() > 1e-9 {
            return String::new();
        }
        compact(10f64.powf(y.round()))
    };
    let x_label = |x: &f64| format!("{}s", compact(*x));
    let mut mesh = chart.configure_mesh();
    mesh.y_labels(if panel.log { decades + 1 } else { 4 })
        .x_labels(12)
        .y_label_formatter(&y_label)
        .x_label_formatter(&x_label)
        .y_desc(panel.y_desc.clone());
    theme_mesh(&mut mesh, 13, 14);
    if last {
        mesh.x_desc("seconds since the run started");
    }
    mesh.draw().or_draw(PLOT)?;

    // Warmups shaded, every phase's bounds marked.
    chart
        .draw_series(
            segs.iter()
                .filter(|s| !s.gated)
                .map(|s| Rectangle::new([(s.start, bottom), (s.end, top)], AMBER.mix(0.14).filled())),
        )
        .or_draw(PLOT)?;
    for s in segs {
        for x in [s.start, s.end] {
            chart.draw_series(LineSeries::new([(x, bottom), (x, top)], MUTED.mix(0.6))).or_draw(PLOT)?;
        }
    }
    if names {
        let px_per_s = f64::from(WIDTH - 120) / end.max(1e-9);
        for s in segs {
            let room = ((s.end - s.start) * px_per_s / 6.5).floor() as usize;
            let fits = std::iter::once(&s.name).chain(&s.short).find(|l| l.chars().count() <= room);
            let label = fits.cloned().or_else(|| (room >= 4).then(|| crate::shared::shorten(&s.name, room)));
            if let Some(label) = label {
                let text =
                    EmptyElement::at((s.start, top)) + Text::new(label, (4, 3), (FONT, 13).into_font().color(&MUTED));
                chart.draw_series(std::iter::once(text)).or_draw(PLOT)?;
            }
        }
    }

    for (_, colour, f) in &panel.series {
        for seg in segs {
            let pts: Vec<(f64, f64)> =
                seg.points.iter().filter_map(|(t, dt, p)| f(*dt, p).map(|v| (*t, y_of(v / panel.scale)))).collect();
            if pts.len() < 3 {
                chart.draw_series(pts.iter().map(|p| Circle::new(*p, 3, colour.filled()))).or_draw(PLOT)?;
                // A sub-second phase has one or two intervals: each drawn over the time it covered, not as a dot.
                for (t, dt, p) in &seg.points {
                    if let Some(v) = f(*dt, p) {
                        let v = y_of(v / panel.scale);
                        let span = [((t - dt).max(seg.start), v), (*t, v)];
                        chart.draw_series(LineSeries::new(span, colour.stroke_width(3))).or_draw(PLOT)?;
                    }
                }
            }
            chart.draw_series(LineSeries::new(pts, colour.stroke_width(2))).or_draw(PLOT)?;
        }
    }
    Ok(())
}

/// One legend for all panels, below them: a swatch and a label per series, and the warmup shading.
/// What the legend says of the intervals left out, if any.
fn left_out_note(n: usize) -> Option<String> {
    (n > 0).then(|| {
        format!(
            "{n} interval{} under {MIN_INTERVAL} s after a phase's last full second (its drain) not drawn",
            if n == 1 { "" } else { "s" }
        )
    })
}

fn draw_legend(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    panels: &[Panel],
    note: Option<&str>,
) -> Result<(), PlotError> {
    let style = (FONT, 14).into_font().color(&FG);
    let mut x = 90i32;
    let y = 24i32;
    let mut seen: Vec<(&str, RGBColor)> = Vec::new();
    for (label, colour, _) in panels.iter().flat_map(|p| &p.series) {
        if seen.iter().any(|(l, _)| l == label) {
            continue;
        }
        seen.push((label, *colour));
    }
    let mut y = y;
    let place = |x: &mut i32, y: &mut i32, chars: usize| {
        let width = 28 + 8 * chars as i32 + 24;
        if *x + width > WIDTH as i32 - 16 {
            *x = 90;
            *y += 26;
        }
        width
    };
    for (label, colour) in seen {
        let width = place(&mut x, &mut y, label.len());
        area.draw(&PathElement::new(vec![(x, y), (x + 22, y)], colour.stroke_width(3))).or_draw(PLOT)?;
        area.draw(&Text::new(label.to_owned(), (x + 28, y - 8), style.clone())).or_draw(PLOT)?;
        x += width;
    }
    place(&mut x, &mut y, 18);
    area.draw(&Rectangle::new([(x, y - 8), (x + 22, y + 8)], AMBER.mix(0.14).filled())).or_draw(PLOT)?;
    area.draw(&Text::new("warmup (not gated)".to_owned(), (x + 28, y - 8), style.clone())).or_draw(PLOT)?;
    if let Some(note) = note {
        area.draw(&Text::new(note.to_owned(), (90, y + 18), style)).or_draw(PLOT)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(start: f64, per_second: &[u64]) -> Segment {
        Segment {
            name: format!("phase at {start}"),
            short: Vec::new(),
            start,
            end: start + per_second.len() as f64,
            gated: true,
            points: per_second
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    (start + i as f64 + 1.0, 1.0, TimelinePoint { completed: *n, ..TimelinePoint::default() })
                })
                .collect(),
            left_out: 0,
        }
    }

    #[test]
    fn phases_orders_of_magnitude_apart_take_a_log_axis_and_close_ones_do_not() {
        let completed: Vec<Series> = vec![("completed/s", BLUE, |dt, p| rate(p.completed, dt))];
        let apart = [segment(0.0, &[160_000, 158_000, 161_000]), segment(3.0, &[2_000, 2_000, 1_990])];
        assert!(needs_log_axis(&apart, &completed));
        let close = [segment(0.0, &[30_000, 31_000]), segment(2.0, &[2_000, 2_100])];
        assert!(!needs_log_axis(&close, &completed), "15x: both read on a linear axis");
        assert!(!needs_log_axis(&[segment(0.0, &[0, 5, 160_000])], &completed), "one phase: never");
    }
}
