//! The checks of one scenario instance judged over repetitions (or against the baseline of an A/B run): a row
//! per check, each on its own axis in its own unit: the side of the limit that fails shaded, the limit, the
//! confidence interval coloured by its verdict (pass, fail, inconclusive), the estimate, and the repetitions it
//! was judged on (each repetition's value, or each round's candidate / baseline ratio in a paired A/B run).

use loadgate_results::{Repetition, ScenarioResult, StatisticalStatus, Verdict, VerdictStatistics};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::chart::{svg_document, theme_mesh};
use crate::shared::{compact, shorten, time_unit, OrDraw, PlotError, TimeUnit};
use crate::theme::{AMBER, FG, FONT, GREEN, MUTED, RED};

const PLOT: &str = "the checks";
const WIDTH: u32 = 900;
const ROW_HEIGHT: u32 = 130;
const LEGEND_HEIGHT: u32 = 50;

/// How a check's values read: a ratio, a latency in a unit, or a rate.
#[derive(Clone, Copy)]
enum Scale {
    Ratio,
    Latency(TimeUnit),
    Plain,
}

impl Scale {
    fn divisor(self) -> f64 {
        match self {
            Scale::Latency(u) => u.us,
            _ => 1.0,
        }
    }
}

/// One repetition's value of a metric, in the metric's unit (microseconds, requests/s).
fn measure(metric: &str, r: &Repetition) -> Option<f64> {
    match metric {
        "throughput" => Some(r.throughput),
        "max" => (r.latency.count > 0).then_some(r.latency.max_us as f64),
        "mean" => (r.latency.count > 0).then_some(r.latency.mean_us),
        m => {
            let p: f64 = m.strip_prefix('p')?.parse().ok()?;
            (!r.histograms.latency.is_empty() && (0.0..=100.0).contains(&p))
                .then(|| loadgate_results::value_at_percentile(&r.histograms.latency, p) as f64)
        }
    }
}

fn relative(st: &VerdictStatistics) -> bool {
    !st.method.starts_with("median")
}

/// The values the check was judged on: each repetition's, or each paired round's ratio.
fn dots(s: &ScenarioResult, v: &Verdict, st: &VerdictStatistics) -> Vec<f64> {
    if !relative(st) {
        return s.repetitions.iter().filter_map(|r| measure(&v.metric, r)).collect();
    }
    let Some(a) = &s.ab_baseline else { return Vec::new() };
    s.repetitions
        .iter()
        .filter_map(|b| {
            let a = a.repetitions.iter().find(|a| a.round == b.round)?;
            let (bv, av) = (measure(&v.metric, b)?, measure(&v.metric, a)?);
            (av > 0.0).then(|| bv / av)
        })
        .collect()
}

fn status_colour(status: StatisticalStatus) -> RGBColor {
    match status {
        StatisticalStatus::Pass => GREEN,
        StatisticalStatus::Fail => RED,
        StatisticalStatus::Inconclusive => AMBER,
    }
}

fn status_word(status: StatisticalStatus) -> &'static str {
    match status {
        StatisticalStatus::Pass => "PASS",
        StatisticalStatus::Fail => "FAIL",
        StatisticalStatus::Inconclusive => "INCONCLUSIVE",
    }
}

/// Whether a verdict's statistics are a history check's (a series, plotted as its trend, not an interval).
pub(crate) fn is_history(st: &VerdictStatistics) -> bool {
    st.method.starts_with("history")
}

/// Draws the checks of one scenario instance judged over repetitions.
pub fn checks(s: &ScenarioResult) -> Result<String, PlotError> {
    let rows: Vec<(&Verdict, &VerdictStatistics)> = s
        .judged
        .verdicts
        .iter()
        .filter_map(|v| v.statistics.as_ref().filter(|st| !is_history(st)).map(|st| (v, st)))
        .collect();
    if rows.is_empty() {
        return Err(PlotError::Missing(format!("checks over repetitions for `{}`", s.name)));
    }
    let ab = s.ab_baseline.is_some();
    let title = format!("{}: {}", if ab { "A/B comparison" } else { "Checks over repetitions" }, s.name);
    let description = rows
        .iter()
        .map(|(v, st)| format!("{}: {} ({})", v.slo, status_word(st.status), v.observed_text))
        .collect::<Vec<_>>()
        .join("; ");
    let height = 50 + ROW_HEIGHT * rows.len() as u32 + LEGEND_HEIGHT;
    svg_document((WIDTH, height), &title, &description, "checks", PLOT, |root| {
        let root = root.titled(&shorten(&title, 90), (FONT, 20).into_font().color(&FG)).or_draw(PLOT)?;
        let (body, legend) = root.split_vertically(ROW_HEIGHT * rows.len() as u32);
        for ((v, st), area) in rows.iter().zip(body.split_evenly((rows.len(), 1)).iter()) {
            draw_row(area, s, v, st, ab)?;
        }
        draw_legend(&legend)?;
        Ok(())
    })
}

fn draw_row(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    s: &ScenarioResult,
    v: &Verdict,
    st: &VerdictStatistics,
    ab: bool,
) -> Result<(), PlotError> {
    let values = dots(s, v, st);
    let scale = if relative(st) {
        Scale::Ratio
    } else if v.metric == "throughput" {
        Scale::Plain
    } else {
        let max = values.iter().copied().chain([st.upper, st.limit, st.estimate]).fold(0.0, f64::max);
        Scale::Latency(time_unit(max))
    };
    let d = scale.divisor();
    let (estimate, lower, upper, limit) = (st.estimate / d, st.lower / d, st.upper / d, st.limit / d);
    let dots: Vec<f64> = values.iter().map(|x| x / d).collect();
    let finite = |x: &f64| x.is_finite();
    let lo = [lower, estimate, limit].iter().chain(&dots).copied().filter(finite).fold(f64::INFINITY, f64::min);
    let hi = [upper, estimate, limit].iter().chain(&dots).copied().filter(finite).fold(f64::NEG_INFINITY, f64::max);
    let (lo, hi) = if lo.is_finite() && hi.is_finite() { (lo, hi) } else { (0.0, 1.0) };
    let pad = if hi > lo { (hi - lo) * 0.12 } else { hi.abs().max(1.0) * 0.1 };
    let (x0, x1) = (lo - pad, hi + pad);
    let x0 = if matches!(scale, Scale::Ratio) || lo - pad > 0.0 || lo < 0.0 { x0 } else { 0.0 };

    let caption = format!(
        "{}  {}  {} · {:.0}% interval, {}",
        v.slo,
        status_word(st.status),
        v.observed_text,
        st.confidence * 100.0,
        st.method
    );
    let mut chart = ChartBuilder::on(area)
        .margin_left(20)
        .margin_right(30)
        .margin_top(8)
        .caption(shorten(&caption, 110), (FONT, 14).into_font().color(&FG))
        .x_label_area_size(40)
        .build_cartesian_2d(x0..x1, 0f64..1f64)
        .or_draw(PLOT)?;
    let x_label = |x: &f64| match scale {
        Scale::Ratio => format!("{x:.2}x"),
        _ => compact(*x),
    };
    let x_desc = match scale {
        Scale::Ratio if ab => format!("{}: candidate (B) / baseline (A)", v.metric),
        Scale::Ratio => format!("{}: this run / the stored baseline", v.metric),
        Scale::Latency(u) => format!("{} ({})", v.metric, u.name),
        Scale::Plain => "throughput (requests/s)".to_owned(),
    };
    let mut mesh = chart.configure_mesh();
    mesh.disable_y_mesh().disable_y_axis().x_labels(8).x_label_formatter(&x_label).x_desc(x_desc);
    theme_mesh(&mut mesh, 13, 13).draw().or_draw(PLOT)?;

    // The side of the limit that fails the SLO.
    let fails_above = v.comparison.starts_with('<');
    let (b0, b1) = if fails_above { (limit, x1) } else { (x0, limit) };
    if b1 > b0 {
        chart
            .draw_series(std::iter::once(Rectangle::new([(b0, 0.0), (b1, 1.0)], RED.mix(0.08).filled())))
            .or_draw(PLOT)?;
    }
    chart.draw_series(LineSeries::new([(limit, 0.0), (limit, 1.0)], FG.stroke_width(2))).or_draw(PLOT)?;
    let limit_text = match scale {
        Scale::Ratio => format!("limit {limit:.2}x"),
        Scale::Latency(u) => format!("limit {}{}", compact(limit), u.name),
        Scale::Plain => format!("limit {}/s", compact(limit)),
    };
    let anchor = if fails_above { HPos::Right } else { HPos::Left };
    let dx = if fails_above { -6 } else { 6 };
    chart
        .draw_series(std::iter::once(
            EmptyElement::at((limit, 1.0))
                + Text::new(limit_text, (dx, 4), (FONT, 13).into_font().color(&FG).pos(Pos::new(anchor, VPos::Top))),
        ))
        .or_draw(PLOT)?;

    let colour = status_colour(st.status);
    if lower.is_finite() && upper.is_finite() {
        chart.draw_series(LineSeries::new([(lower, 0.55), (upper, 0.55)], colour.stroke_width(6))).or_draw(PLOT)?;
        for x in [lower, upper] {
            chart.draw_series(LineSeries::new([(x, 0.42), (x, 0.68)], colour.stroke_width(2))).or_draw(PLOT)?;
        }
    }
    if estimate.is_finite() {
        chart.draw_series(std::iter::once(Circle::new((estimate, 0.55), 6, FG.filled()))).or_draw(PLOT)?;
    }
    chart
        .draw_series(dots.iter().filter(|x| x.is_finite()).map(|x| Circle::new((*x, 0.22), 4, MUTED.stroke_width(2))))
        .or_draw(PLOT)?;
    Ok(())
}

fn draw_legend(area: &DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), PlotError> {
    let style = (FONT, 13).into_font().color(&FG);
    let y = 22;
    let mut x = 24;
    area.draw(&Circle::new((x + 6, y), 6, FG.filled())).or_draw(PLOT)?;
    area.draw(&Text::new("estimate".to_owned(), (x + 18, y - 7), style.clone())).or_draw(PLOT)?;
    x += 100;
    for (colour, label) in [(GREEN, "interval: pass"), (RED, "fail"), (AMBER, "inconclusive")] {
        area.draw(&PathElement::new(vec![(x, y), (x + 22, y)], colour.stroke_width(6))).or_draw(PLOT)?;
        area.draw(&Text::new(label.to_owned(), (x + 28, y - 7), style.clone())).or_draw(PLOT)?;
        x += 40 + 8 * label.len() as i32;
    }
    area.draw(&PathElement::new(vec![(x + 4, y - 9), (x + 4, y + 9)], FG.stroke_width(2))).or_draw(PLOT)?;
    area.draw(&Text::new("limit".to_owned(), (x + 12, y - 7), style.clone())).or_draw(PLOT)?;
    x += 64;
    area.draw(&Rectangle::new([(x, y - 9), (x + 22, y + 9)], RED.mix(0.08).filled())).or_draw(PLOT)?;
    area.draw(&Text::new("fails the SLO".to_owned(), (x + 28, y - 7), style.clone())).or_draw(PLOT)?;
    x += 140;
    area.draw(&Circle::new((x + 6, y), 4, MUTED.stroke_width(2))).or_draw(PLOT)?;
    area.draw(&Text::new("repetitions".to_owned(), (x + 18, y - 7), style)).or_draw(PLOT)?;
    Ok(())
}
