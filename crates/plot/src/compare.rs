//! `loadgate compare`'s plots, one per metric and group of cells: the sweep curves of every run on one chart
//! (a matrix scenario of two cells or more, one line per run, each run's knee ringed), or grouped bars (one
//! group per instance, one bar per run) for the instances outside a sweep.

use loadgate_results::compare::{CellMetric, ComparedCell, Comparison};
use loadgate_results::model::KneeKind;
use plotters::prelude::*;

use crate::chart::{svg_document, StepChart};
use crate::shared::{axis_top, file_stem, legend, shorten, time_unit, OrDraw, PlotError};
use crate::theme::{RGBColor, AMBER, BLUE, FONT, GREEN, ORANGE, PURPLE, RED, SLATE, TEAL};

const PLOT: &str = "the comparison";
const WIDTH: u32 = 900;

/// One colour per run, in order (runs beyond eight reuse them).
const RUN_COLOURS: [RGBColor; 8] = [BLUE, ORANGE, GREEN, PURPLE, TEAL, AMBER, SLATE, RED];

/// The colour of run `i`.
pub fn run_colour(i: usize) -> RGBColor {
    RUN_COLOURS[i % RUN_COLOURS.len()]
}

/// What one plot of a comparison shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompareShape {
    /// The cells of one matrix scenario as curves, one per run.
    Sweep { scenario: String },
    /// The instances outside a sweep as grouped bars.
    Bars,
}

/// One plot of a comparison: which metric, which cells, the file and the title.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompareFigure {
    /// Index into [`Comparison::metrics`].
    pub metric: usize,
    pub shape: CompareShape,
    /// `compare-p99-plaintext.svg`.
    pub file: String,
    /// `p99: plaintext`.
    pub title: String,
}

/// Whether a scenario's cells are drawn as a sweep (a matrix of two cells or more).
fn sweep_scenarios(c: &Comparison) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for cell in &c.cells {
        if cell.matrix.is_empty() || out.contains(&cell.scenario) {
            continue;
        }
        if c.cells.iter().filter(|x| x.scenario == cell.scenario).count() >= 2 {
            out.push(cell.scenario.clone());
        }
    }
    out
}

/// The plots of a comparison, per metric: a sweep chart per matrix scenario, then one bar chart of the other
/// instances. Cheap: it renders nothing.
pub fn compare_figures(c: &Comparison) -> Vec<CompareFigure> {
    let sweeps = sweep_scenarios(c);
    let others = c.cells.iter().any(|cell| !sweeps.contains(&cell.scenario));
    let mut out = Vec::new();
    for (m, metric) in c.metrics.iter().enumerate() {
        for s in &sweeps {
            out.push(CompareFigure {
                metric: m,
                shape: CompareShape::Sweep { scenario: s.clone() },
                file: format!("compare-{}-{}.svg", file_stem(metric), file_stem(s)),
                title: format!("{metric}: {s}"),
            });
        }
        if others {
            out.push(CompareFigure {
                metric: m,
                shape: CompareShape::Bars,
                file: format!("compare-{}.svg", file_stem(metric)),
                title: if sweeps.is_empty() { metric.clone() } else { format!("{metric}: other instances") },
            });
        }
    }
    out
}

/// How a metric's values are drawn: the factor they are divided by and the axis description.
fn scale(metric: &CellMetric, name: &str, max: f64) -> (f64, String) {
    match metric.kind.as_str() {
        "latency" => {
            let unit = time_unit(max);
            (unit.us, format!("{name} latency ({})", unit.name))
        }
        "rate" => (1.0, format!("{name} (requests/s)")),
        "ratio" => (0.01, format!("{name} (%)")),
        _ => (1.0, format!("{name} (count)")),
    }
}

/// A cell's label: the values of the variables that vary within its group, or its name.
fn cell_label(cell: &ComparedCell, group: &[&ComparedCell]) -> String {
    let varying: Vec<&(String, String)> = cell
        .matrix
        .iter()
        .filter(|(k, v)| group.iter().any(|g| g.matrix.iter().any(|(gk, gv)| gk == k && gv != v)))
        .collect();
    match varying.as_slice() {
        [] => cell.name.clone(),
        [(_, v)] => v.clone(),
        many => many.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", "),
    }
}

/// Draws one plot of a comparison as an SVG document.
pub fn compare_plot(c: &Comparison, figure: &CompareFigure) -> Result<String, PlotError> {
    let name = c.metrics.get(figure.metric).ok_or_else(|| PlotError::Missing(format!("metric {}", figure.metric)))?;
    let sweeps = sweep_scenarios(c);
    let group: Vec<&ComparedCell> = c
        .cells
        .iter()
        .filter(|cell| match &figure.shape {
            CompareShape::Sweep { scenario } => &cell.scenario == scenario,
            CompareShape::Bars => !sweeps.contains(&cell.scenario),
        })
        .collect();
    let metrics: Vec<&CellMetric> = group.iter().filter_map(|cell| cell.metrics.get(figure.metric)).collect();
    if group.is_empty() || metrics.len() != group.len() {
        return Err(PlotError::Missing(format!("cells of `{}`", figure.title)));
    }
    let labels: Vec<String> = group.iter().map(|cell| cell_label(cell, &group)).collect();
    let max = metrics.iter().flat_map(|m| m.values.iter().flatten()).map(|v| v.value).fold(0.0, f64::max);
    let (per_unit, y_desc) = scale(metrics[0], name, max);
    let n = group.len();
    let runs = c.runs.len();
    let value = |cell: usize, run: usize| -> Option<f64> {
        metrics[cell].values.get(run).and_then(Option::as_ref).map(|v| v.value / per_unit)
    };
    let run_names: Vec<String> = c.runs.iter().map(|r| shorten(&r.label, 28)).collect();
    let x_desc = match &figure.shape {
        CompareShape::Sweep { scenario } => {
            let vars: Vec<&str> = group[0]
                .matrix
                .iter()
                .filter(|(k, v)| group.iter().any(|g| g.matrix.iter().any(|(gk, gv)| gk == k && gv != v)))
                .map(|(k, _)| k.as_str())
                .collect();
            format!(
                "{} ({scenario}, one step per cell)",
                if vars.is_empty() { "cell".to_owned() } else { vars.join(", ") }
            )
        }
        CompareShape::Bars => "scenario instance".to_owned(),
    };
    let title = format!("Compare {}", figure.title);
    let description = format!(
        "{name} of {n} scenario instance{} in {runs} runs ({}){}",
        if n == 1 { "" } else { "s" },
        c.runs.iter().map(|r| r.label.as_str()).collect::<Vec<_>>().join(", "),
        match figure.shape {
            CompareShape::Sweep { .. } => ": one curve per run, each run's knee ringed",
            CompareShape::Bars => ": one bar per run",
        }
    );
    let step_px = f64::from(WIDTH - 180) / n as f64;
    let label_chars = ((step_px / 7.5).floor() as usize).clamp(3, 24);
    let top = axis_top(max / per_unit);

    // The legend goes where it hides no point and no knee: lower right unless the data are there.
    let knee_cells: Vec<(usize, usize)> = match &figure.shape {
        CompareShape::Sweep { scenario } => c
            .knees
            .iter()
            .filter(|k| &k.scenario == scenario)
            .filter_map(|k| group.iter().position(|g| g.name == k.name).map(|cell| (cell, k.run)))
            .collect(),
        CompareShape::Bars => Vec::new(),
    };
    let marks = match &figure.shape {
        CompareShape::Sweep { .. } => sweep_marks(n, runs, top, &value, &knee_cells),
        CompareShape::Bars => bar_marks(n, runs, top, &value),
    };
    let longest = run_names.iter().map(|r| r.chars().count()).max().unwrap_or(0) as f64;
    let corner = free_corner(&marks, (longest * 8.0 + 50.0) / 720.0, (runs as f64 * 20.0 + 16.0) / 350.0);
    svg_document((WIDTH, 500), &title, &description, "compare", PLOT, |root| {
        let skeleton = StepChart {
            title: &title,
            labels: &labels,
            label_chars,
            min_step_px: 26.0,
            top,
            x_desc: &x_desc,
            y_desc: &y_desc,
        };
        let mut chart = skeleton.draw(root, WIDTH, PLOT)?;
        match &figure.shape {
            CompareShape::Sweep { scenario } => {
                for (run, run_name) in run_names.iter().enumerate() {
                    let colour = run_colour(run);
                    // A cell the run lacks breaks its line.
                    let mut segments: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
                    for cell in 0..n {
                        match value(cell, run) {
                            Some(v) => segments.last_mut().map_or((), |s| s.push((cell as f64, v))),
                            None => segments.push(Vec::new()),
                        }
                    }
                    let points: Vec<(f64, f64)> = segments.iter().flatten().copied().collect();
                    chart
                        .draw_series(points.iter().map(|p| Circle::new(*p, 4, colour.filled())))
                        .or_draw(PLOT)?
                        .label(run_name.clone())
                        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(3)));
                    for segment in segments.iter().filter(|s| s.len() >= 2) {
                        chart
                            .draw_series(LineSeries::new(segment.iter().copied(), colour.stroke_width(2)))
                            .or_draw(PLOT)?;
                    }
                    for knee in c.knees.iter().filter(|k| k.run == run && &k.scenario == scenario) {
                        let Some(cell) = group.iter().position(|g| g.name == knee.name) else { continue };
                        let Some(v) = value(cell, run) else { continue };
                        let word = match knee.kind {
                            KneeKind::Saturation => "knee",
                            KneeKind::Collapse => "collapse",
                        };
                        let style = (FONT, 13).into_font().color(&colour);
                        chart
                            .draw_series(std::iter::once(
                                EmptyElement::at((cell as f64, v))
                                    + Circle::new((0, 0), 10, colour.stroke_width(2))
                                    + Text::new(word, (12, -22), style),
                            ))
                            .or_draw(PLOT)?;
                    }
                }
            }
            CompareShape::Bars => {
                let width = 0.8 / runs as f64;
                for (run, run_name) in run_names.iter().enumerate() {
                    let colour = run_colour(run);
                    let bars: Vec<Rectangle<(f64, f64)>> = (0..n)
                        .filter_map(|cell| {
                            let v = value(cell, run)?;
                            let x0 = cell as f64 - 0.4 + run as f64 * width;
                            Some(Rectangle::new([(x0 + width * 0.05, 0.0), (x0 + width * 0.95, v)], colour.filled()))
                        })
                        .collect();
                    chart
                        .draw_series(bars)
                        .or_draw(PLOT)?
                        .label(run_name.clone())
                        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], colour.filled()));
                }
            }
        }
        legend(&mut chart, corner, PLOT)?;
        Ok(())
    })
}

/// The corner of the data area for a legend box `w` x `h` (fractions of the area) that covers the least of
/// `marks` (`(x, y, weight)`, fractions of the area from its lower left corner): lower right when it is free (or
/// no corner is), else the freest of the others.
fn free_corner(marks: &[(f64, f64, f64)], w: f64, h: f64) -> SeriesLabelPosition {
    let corners = [
        (SeriesLabelPosition::LowerRight, (1.0 - w, 1.0), (0.0, h)),
        (SeriesLabelPosition::UpperLeft, (0.0, w), (1.0 - h, 1.0)),
        (SeriesLabelPosition::UpperRight, (1.0 - w, 1.0), (1.0 - h, 1.0)),
        (SeriesLabelPosition::LowerLeft, (0.0, w), (0.0, h)),
    ];
    let covered = |(x0, x1): (f64, f64), (y0, y1): (f64, f64)| -> f64 {
        marks.iter().filter(|(x, y, _)| (x0..=x1).contains(x) && (y0..=y1).contains(y)).map(|m| m.2).sum()
    };
    let mut best = (SeriesLabelPosition::LowerRight, f64::INFINITY);
    for (corner, xs, ys) in corners {
        let c = covered(xs, ys);
        if c < best.1 {
            best = (corner, c);
        }
    }
    best.0
}

/// What a bar plot draws, as fractions of its data area for [`free_corner`]: each bar, sampled up its height.
fn bar_marks(n: usize, runs: usize, top: f64, value: &dyn Fn(usize, usize) -> Option<f64>) -> Vec<(f64, f64, f64)> {
    let width = 0.8 / runs.max(1) as f64;
    let mut marks = Vec::new();
    for cell in 0..n {
        for run in 0..runs {
            let Some(v) = value(cell, run) else { continue };
            let x = (cell as f64 - 0.4 + (run as f64 + 0.5) * width + 0.5) / n.max(1) as f64;
            for k in 0..=8 {
                marks.push((x, if top > 0.0 { v / top * f64::from(k) / 8.0 } else { 0.0 }, 1.0));
            }
        }
    }
    marks
}

/// What a sweep plot draws, as fractions of its data area for [`free_corner`]: each run's points, its lines
/// (sampled), and its knee rings with their word (weighted most: a legend must never hide a knee).
fn sweep_marks(
    n: usize,
    runs: usize,
    top: f64,
    value: &dyn Fn(usize, usize) -> Option<f64>,
    knees: &[(usize, usize)],
) -> Vec<(f64, f64, f64)> {
    let fx = |x: f64| (x + 0.5) / n.max(1) as f64;
    let fy = |y: f64| if top > 0.0 { y / top } else { 0.0 };
    let mut marks = Vec::new();
    for run in 0..runs {
        for cell in 0..n {
            let Some(v) = value(cell, run) else { continue };
            marks.push((fx(cell as f64), fy(v), 2.0));
            if let Some(next) = (cell + 1 < n).then(|| value(cell + 1, run)).flatten() {
                for k in 1..8 {
                    let t = f64::from(k) / 8.0;
                    marks.push((fx(cell as f64 + t), fy(v + (next - v) * t), 1.0));
                }
            }
        }
    }
    // A ring of 10 px and its word above and to the right, in a plot area of about 720 x 350 px.
    for &(cell, run) in knees {
        let Some(v) = value(cell, run) else { continue };
        let (x, y) = (fx(cell as f64), fy(v));
        for (dx, dy) in [(0.0, 0.0), (-14.0, 0.0), (14.0, 0.0), (0.0, -14.0), (0.0, 14.0), (40.0, 28.0), (70.0, 28.0)] {
            marks.push((x + dx / 720.0, y + dy / 350.0, 50.0));
        }
    }
    marks
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadgate_results::compare::{compare, CompareOptions};
    use loadgate_results::fixture::sample_run;

    #[test]
    fn the_legend_takes_a_corner_that_hides_no_knee() {
        // Lower right is kept while it is free.
        assert_eq!(free_corner(&[(0.1, 0.1, 1.0)], 0.3, 0.2), SeriesLabelPosition::LowerRight);
        // A knee ring in the last cell near the floor (seed 000's collapse at 64 connections) moves it.
        let value = |cell: usize, run: usize| -> Option<f64> {
            Some(match run {
                0 => 10.0 * (cell as f64 + 1.0),
                _ => [20.0, 45.0, 70.0, 90.0, 8.0][cell],
            })
        };
        let marks = sweep_marks(5, 2, 100.0, &value, &[(4, 1)]);
        let corner = free_corner(&marks, 0.3, 0.2);
        assert_ne!(corner, SeriesLabelPosition::LowerRight);
        assert_eq!(corner, SeriesLabelPosition::UpperLeft);
        // Bars rise from the floor: the legend goes above them.
        let bars = bar_marks(2, 2, 100.0, &|_, _| Some(90.0));
        assert_eq!(free_corner(&bars, 0.3, 0.05), SeriesLabelPosition::UpperLeft);
    }

    fn comparison() -> Comparison {
        let a = sample_run();
        let mut b = sample_run();
        for s in &mut b.scenarios {
            s.throughput *= 1.1;
        }
        compare(&[a, b], &CompareOptions { labels: vec!["before".into(), "after".into()], ..Default::default() })
            .expect("compares")
    }

    #[test]
    fn every_figure_draws_a_well_formed_svg_with_a_series_per_run() {
        let c = comparison();
        let figures = compare_figures(&c);
        assert!(!figures.is_empty());
        for f in &figures {
            let svg = compare_plot(&c, f).expect("draws");
            let doc = roxmltree::Document::parse(&svg).expect("well-formed XML");
            let text: Vec<&str> = doc.descendants().filter_map(|n| n.text()).collect();
            assert!(text.iter().any(|t| t.contains("before")), "{}: legend names the first run", f.file);
            assert!(text.iter().any(|t| t.contains("after")), "{}: legend names the second run", f.file);
            let desc = doc.descendants().find(|n| n.has_tag_name("desc")).and_then(|n| n.text()).unwrap_or("");
            assert!(desc.contains("2 runs"), "{desc}");
        }
        let files: Vec<&str> = figures.iter().map(|f| f.file.as_str()).collect();
        let mut unique = files.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(files.len(), unique.len(), "file names are unique: {files:?}");
    }
}
