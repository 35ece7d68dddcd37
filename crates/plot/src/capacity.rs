//! The curve of a capacity search: each step's p99 latency (left axis, logarithmic) against the rate it asked,
//! coloured by its verdict (held, failed, invalid) and numbered in run order; the rate each step achieved
//! (right axis) beside the rate asked; the capacity and the lowest rate that failed marked by lines, and the
//! scenario's `p99` limit, when it has one, across.

use loadgate_results::{format, Capacity, ScenarioResult, StepVerdict};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::chart::{chart_builder, svg_document, theme_mesh, theme_secondary, LabelAreas};
use crate::shared::{axis_top, compact, legend, time_unit, OrDraw, PlotError};
use crate::theme::{AMBER, BLUE, FONT, GREEN, ORANGE, RED, SLATE};

const PLOT: &str = "the capacity search";
const WIDTH: u32 = 900;

/// Draws the curve of one instance's capacity search.
pub fn capacity(s: &ScenarioResult) -> Result<String, PlotError> {
    let c: &Capacity =
        s.capacity.as_ref().ok_or_else(|| PlotError::Missing(format!("capacity search of `{}`", s.name)))?;
    if c.steps.is_empty() {
        return Err(PlotError::Missing(format!("steps of the capacity search of `{}`", s.name)));
    }
    let max_rate = c.steps.iter().map(|st| st.rate.max(st.achieved_rate)).fold(0.0, f64::max);
    let top_rate = axis_top(max_rate);
    let p99s: Vec<f64> = c.steps.iter().filter_map(|st| st.p99_us).map(|v| v.max(1) as f64).collect();
    let max_p99 = p99s.iter().copied().fold(1.0, f64::max);
    let min_p99 = p99s.iter().copied().fold(max_p99, f64::min);
    // The scenario's p99 limit (`p99 < 10ms`), which every step is held to.
    let limit = s
        .judged
        .verdicts
        .iter()
        .find(|v| v.metric == "p99" && v.metric_label() == "p99" && v.threshold_value > 0.0)
        .map(|v| (v.threshold_value, v.slo.clone()));
    let max_p99 = limit.as_ref().map_or(max_p99, |(t, _)| max_p99.max(*t));
    let min_p99 = limit.as_ref().map_or(min_p99, |(t, _)| min_p99.min(*t));
    let unit = time_unit(max_p99);
    // Room on either side of the values, on a log axis in the unit.
    let (lo, hi) = ((min_p99 / unit.us / 2.0).max(1e-3), max_p99 / unit.us * 2.0);

    let title = format!("Capacity search: {}", s.name);
    let description = format!(
        "p99 latency and achieved rate of each of the {} steps against the rate asked. Capacity {}",
        c.steps.len(),
        c.summary()
    );
    svg_document((WIDTH, 500), &title, &description, "capacity", PLOT, |root| {
        let mut chart = chart_builder(root, &title, LabelAreas::TWO_AXES)
            .build_cartesian_2d(0f64..top_rate, (lo..hi).log_scale())
            .or_draw(PLOT)?
            .set_secondary_coord(0f64..top_rate, 0f64..top_rate);
        let label = |v: &f64| compact(*v);
        let mut mesh = chart.configure_mesh();
        mesh.x_label_formatter(&label)
            .y_label_formatter(&label)
            .x_labels(10)
            .y_labels(8)
            .x_desc("rate asked (requests/s)")
            .y_desc(format!("p99 latency ({}, log scale)", unit.name));
        theme_mesh(&mut mesh, 14, 15).draw().or_draw(PLOT)?;
        let mut axes = chart.configure_secondary_axes();
        axes.y_desc("achieved rate (requests/s)").y_label_formatter(&label);
        theme_secondary(&mut axes).draw().or_draw(PLOT)?;

        // The rate asked, as the achieved rate would be if every step sent it in full.
        chart
            .draw_secondary_series(DashedLineSeries::new(
                [(0.0, 0.0), (top_rate, top_rate)],
                4,
                4,
                SLATE.stroke_width(1),
            ))
            .or_draw(PLOT)?
            .label("achieved = asked")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], SLATE.stroke_width(1)));
        chart
            .draw_secondary_series(
                c.steps.iter().map(|st| Circle::new((st.rate, st.achieved_rate), 5, BLUE.stroke_width(2))),
            )
            .or_draw(PLOT)?
            .label("achieved rate (right)")
            .legend(|(x, y)| Circle::new((x + 10, y), 5, BLUE.stroke_width(2)));

        if let Some((threshold, slo)) = &limit {
            let y = threshold / unit.us;
            chart
                .draw_series(DashedLineSeries::new([(0.0, y), (top_rate, y)], 8, 4, ORANGE.stroke_width(2)))
                .or_draw(PLOT)?
                .label(format!("{slo} (each step, left)"))
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], ORANGE.stroke_width(2)));
        }
        let marks = [(c.capacity, GREEN, "capacity"), (c.failed_at, RED, "failed at")];
        for (rate, colour, what) in marks.into_iter().filter_map(|(r, col, w)| r.map(|r| (r, col, w))) {
            chart
                .draw_series(DashedLineSeries::new([(rate, lo), (rate, hi)], 6, 4, colour.stroke_width(2)))
                .or_draw(PLOT)?;
            let note = format!("{what} {}", format::rate(rate));
            let (dx, anchor, dy) = if what == "capacity" { (-6, HPos::Right, 6) } else { (6, HPos::Left, 24) };
            let style = (FONT, 14).into_font().color(&colour).pos(Pos::new(anchor, VPos::Top));
            chart
                .draw_series(std::iter::once(EmptyElement::at((rate, hi)) + Text::new(note, (dx, dy), style)))
                .or_draw(PLOT)?;
        }

        for (verdict, colour, name) in [
            (StepVerdict::Pass, GREEN, "held"),
            (StepVerdict::Fail, RED, "failed"),
            (StepVerdict::Invalid, AMBER, "invalid"),
        ] {
            let points: Vec<(f64, f64, u32)> = c
                .steps
                .iter()
                .filter(|st| st.verdict == verdict)
                .filter_map(|st| st.p99_us.map(|p| (st.rate, (p.max(1) as f64 / unit.us).clamp(lo, hi), st.step)))
                .collect();
            if points.is_empty() {
                continue;
            }
            let style = (FONT, 12).into_font().color(&colour).pos(Pos::new(HPos::Left, VPos::Bottom));
            chart
                .draw_series(points.iter().map(|(x, y, n)| {
                    EmptyElement::at((*x, *y))
                        + Rectangle::new([(-5, -5), (5, 5)], colour.filled())
                        + Text::new(n.to_string(), (6, -6), style.clone())
                }))
                .or_draw(PLOT)?
                .label(format!("p99 of a step that {name} (left; numbered in run order)"))
                .legend(move |(x, y)| Rectangle::new([(x + 5, y - 5), (x + 15, y + 5)], colour.filled()));
        }
        legend(&mut chart, SeriesLabelPosition::LowerRight, PLOT)?;
        Ok(())
    })
}
