//! The sweep curve of a matrix scenario: throughput (left axis) and p99 latency (right axis) for each cell, in
//! run order, one step per cell, the axis labelled with the cells' values; the knee (see
//! `loadgate_results::knee`) marked by a line, a ring round its point and its explanation.

use loadgate_results::{format, KneeKind, RunResults, ScenarioResult, Sweep};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::chart::{chart_builder, svg_document, theme_mesh, theme_secondary, LabelAreas};
use crate::shared::{axis_top, compact, legend, shorten, time_unit, OrDraw, PlotError};
use crate::theme::{BLUE, FONT, MUTED, ORANGE, RED};

const PLOT: &str = "the sweep";
const WIDTH: u32 = 900;

/// The variables that differ across the cells, in the sweep's order.
fn varying<'a>(sweep: &'a Sweep, cells: &[&ScenarioResult]) -> Vec<&'a str> {
    let value = |c: &ScenarioResult, v: &str| c.matrix.iter().find(|(k, _)| k == v).map(|(_, x)| x.clone());
    sweep
        .variables
        .iter()
        .filter(|v| cells.first().is_some_and(|first| cells.iter().any(|c| value(c, v) != value(first, v))))
        .map(String::as_str)
        .collect()
}

/// A cell's label on the axis: the value of the one varying variable, or `name=value` pairs.
fn cell_label(c: &ScenarioResult, vars: &[&str]) -> String {
    let values: Vec<String> = vars
        .iter()
        .filter_map(|v| c.matrix.iter().find(|(k, _)| k == v))
        .map(|(k, x)| if vars.len() == 1 { x.clone() } else { format!("{k}={x}") })
        .collect();
    if values.is_empty() {
        c.name.clone()
    } else {
        values.join(", ")
    }
}

/// Draws the sweep curve of one matrix scenario.
pub fn sweep(r: &RunResults, sweep: &Sweep) -> Result<String, PlotError> {
    let cells: Vec<&ScenarioResult> =
        sweep.cells.iter().filter_map(|name| r.scenarios.iter().find(|s| &s.name == name)).collect();
    if cells.is_empty() {
        return Err(PlotError::Missing(format!("cells of the sweep `{}`", sweep.scenario)));
    }
    let vars = varying(sweep, &cells);
    let labels: Vec<String> = cells.iter().map(|c| cell_label(c, &vars)).collect();
    let n = cells.len();
    let throughput: Vec<(f64, f64)> = cells.iter().enumerate().map(|(i, c)| (i as f64, c.throughput)).collect();
    let p99: Vec<(f64, f64)> = cells
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.latency.percentile(99.0).filter(|_| c.latency.count > 0).map(|v| (i as f64, v as f64)))
        .collect();
    let max_p99 = p99.iter().map(|p| p.1).fold(0.0, f64::max);
    let unit = time_unit(max_p99);
    let max_tp = throughput.iter().map(|p| p.1).fold(0.0, f64::max);
    let knee = sweep.knee.as_ref().and_then(|k| cells.iter().position(|c| c.name == k.name).map(|i| (i, k)));

    let title = format!("Sweep: {}", sweep.scenario);
    let axis = if vars.is_empty() { "cell".to_owned() } else { vars.join(", ") };
    let description = match &knee {
        Some((_, k)) => format!("Throughput and p99 latency across {n} cells of {axis}. Knee: {}", k.explanation),
        None => format!("Throughput and p99 latency across {n} cells of {axis}; no knee: throughput kept scaling."),
    };
    // Labels of at most this many characters fit one step each; longer ones are shortened.
    let step_px = f64::from(WIDTH - 180) / n as f64;
    let label_chars = ((step_px / 7.5).floor() as usize).clamp(3, 24);
    let label_every = if step_px < 26.0 { (26.0 / step_px).ceil() as usize } else { 1 };

    svg_document((WIDTH, 500), &title, &description, "sweep", PLOT, |root| {
        let mut chart = chart_builder(root, &title, LabelAreas::TWO_AXES)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..axis_top(max_tp))
            .or_draw(PLOT)?
            .set_secondary_coord(-0.5f64..(n as f64 - 0.5), 0f64..axis_top(max_p99 / unit.us));
        let x_label = |x: &f64| {
            let i = x.round();
            if (x - i).abs() > 1e-9 || i < 0.0 || i as usize >= n {
                return String::new();
            }
            let i = i as usize;
            let shown = i % label_every == 0 || knee.is_some_and(|(k, _)| k == i);
            if shown {
                shorten(&labels[i], label_chars)
            } else {
                String::new()
            }
        };
        let y_label = |y: &f64| compact(*y);
        let mut mesh = chart.configure_mesh();
        mesh.x_labels(n.min(200))
            .x_label_formatter(&x_label)
            .y_label_formatter(&y_label)
            .y_labels(8)
            .disable_x_mesh()
            .x_desc(format!("{axis} (one step per cell, in run order)"))
            .y_desc("throughput (requests/s)");
        theme_mesh(&mut mesh, 14, 15).draw().or_draw(PLOT)?;
        let mut axes = chart.configure_secondary_axes();
        axes.y_desc(format!("p99 latency ({})", unit.name)).y_label_formatter(&y_label);
        theme_secondary(&mut axes).draw().or_draw(PLOT)?;

        if let Some((i, k)) = knee {
            let x = i as f64;
            let top = axis_top(max_tp);
            chart
                .draw_series(DashedLineSeries::new([(x, 0.0), (x, top)], 6, 4, RED.stroke_width(2)))
                .or_draw(PLOT)?
                .label(format!(
                    "knee ({}): {}",
                    match k.kind {
                        KneeKind::Collapse => "collapse",
                        KneeKind::Saturation => "saturation",
                    },
                    shorten(&k.cell, 40)
                ))
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED.stroke_width(3)));
            chart
                .draw_series(std::iter::once(Circle::new((x, cells[i].throughput), 10, RED.stroke_width(2))))
                .or_draw(PLOT)?;
            let note = format!("{} at {}", format::rate(k.throughput), shorten(&k.cell, 32));
            // The note goes on the side of the line with more room.
            let (dx, anchor) = if i + 1 > n / 2 { (-8, HPos::Right) } else { (8, HPos::Left) };
            let style = (FONT, 14).into_font().color(&RED).pos(Pos::new(anchor, VPos::Top));
            chart
                .draw_series(std::iter::once(EmptyElement::at((x, top)) + Text::new(note, (dx, 6), style)))
                .or_draw(PLOT)?;
        }

        chart
            .draw_series(LineSeries::new(throughput.iter().copied(), BLUE.stroke_width(2)))
            .or_draw(PLOT)?
            .label("throughput (requests/s, left)")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE.stroke_width(3)));
        chart.draw_series(throughput.iter().map(|p| Circle::new(*p, 4, BLUE.filled()))).or_draw(PLOT)?;
        let scaled: Vec<(f64, f64)> = p99.iter().map(|(x, y)| (*x, y / unit.us)).collect();
        chart
            .draw_secondary_series(LineSeries::new(scaled.iter().copied(), ORANGE.stroke_width(2)))
            .or_draw(PLOT)?
            .label(format!("p99 latency ({}, right)", unit.name))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], ORANGE.stroke_width(3)));
        chart
            .draw_secondary_series(
                scaled.iter().map(|p| EmptyElement::at(*p) + Rectangle::new([(-4, -4), (4, 4)], ORANGE.filled())),
            )
            .or_draw(PLOT)?;
        legend(&mut chart, SeriesLabelPosition::LowerRight, PLOT)?;
        if knee.is_none() {
            let numeric = vars.len() == 1
                && cells.iter().all(|c| {
                    c.matrix.iter().any(|(k, v)| k == vars[0] && v.starts_with(|ch: char| ch.is_ascii_digit()))
                });
            let note = if vars.len() != 1 {
                "no knee looked for: more than one variable varies"
            } else if !numeric {
                "no knee looked for: the values are not numbers"
            } else {
                "no knee: throughput kept scaling"
            };
            root.draw(&Text::new(note.to_owned(), (86, 44), (FONT, 14).into_font().color(&MUTED))).or_draw(PLOT)?;
        }
        Ok(())
    })
}
