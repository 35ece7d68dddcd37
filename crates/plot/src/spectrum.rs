//! The latency percentile spectrum of one scenario instance, on the axis of HdrHistogram's plotter: x is
//! `1/(1-p)` on a log scale, so each decade is one more nine (0%, 90%, 99%, 99.9%, ...) and the tail gets the
//! room it deserves. Open loads show the service time and the send lag beside the latency (measured from the
//! intended send time); an A/B instance shows the baseline's latency beside the candidate's.

use hdrhistogram::Histogram;
use loadgate_results::{format, ScenarioResult};
use plotters::prelude::*;

use crate::chart::{chart_builder, svg_document, theme_mesh, LabelAreas};
use crate::shared::{axis_top, compact, legend, time_unit, OrDraw, PlotError};
use crate::theme::{BLUE, GREEN, ORANGE, SLATE};

const PLOT: &str = "the latency spectrum";
/// Points per halving of the distance to 100%: fine enough for a smooth tail.
const TICKS_PER_HALF_DISTANCE: u32 = 10;
/// The most nines the axis shows (99.99999%).
const MAX_DECADES: u32 = 7;

/// One curve: its label, colour and points `(log10(1/(1-p)), microseconds)`.
struct Curve {
    label: String,
    colour: RGBColor,
    points: Vec<(f64, f64)>,
}

/// The spectrum of a histogram of microseconds: one point per percentile step, 100% left out (it is at
/// infinity on this axis; the legend gives the maximum instead).
fn points(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    if h.is_empty() {
        return Vec::new();
    }
    h.iter_quantiles(TICKS_PER_HALF_DISTANCE)
        .filter(|v| v.quantile_iterated_to() < 1.0)
        .map(|v| ((1.0 / (1.0 - v.quantile_iterated_to())).log10(), h.highest_equivalent(v.value_iterated_to()) as f64))
        .filter(|(x, _)| x.is_finite() && *x <= f64::from(MAX_DECADES))
        .collect()
}

/// The label of a decade on the axis: 0 -> `0%`, 1 -> `90%`, 3 -> `99.9%`.
pub(crate) fn nines(decade: u32) -> String {
    match decade {
        0 => "0%".to_owned(),
        1 => "90%".to_owned(),
        d => format!("99{}{}%", if d > 2 { "." } else { "" }, "9".repeat(d as usize - 2)),
    }
}

fn curve(label: String, colour: RGBColor, h: &Histogram<u64>) -> Option<Curve> {
    let points = points(h);
    (!points.is_empty()).then(|| Curve { label: format!("{label} (max {})", format::latency(h.max())), colour, points })
}

/// Draws the latency spectrum of one scenario instance.
pub fn spectrum(s: &ScenarioResult) -> Result<String, PlotError> {
    let open = s.load.model != "closed";
    let mut curves = Vec::new();
    let latency_label = if open { "latency from intended send" } else { "latency" };
    // In an A/B instance the instance's own curves are the candidate's: each says so, as the baseline's does.
    let side = if s.ab_baseline.is_some() { "candidate (B) " } else { "" };
    curves.extend(curve(format!("{side}{latency_label}"), BLUE, &s.histograms.latency));
    if open {
        curves.extend(curve(format!("{side}service time"), ORANGE, &s.histograms.service_time));
        curves.extend(curve(format!("{side}send lag"), GREEN, &s.histograms.send_lag));
    }
    if let Some(a) = &s.ab_baseline {
        curves.extend(curve("baseline (A) latency".to_owned(), SLATE, &a.histograms.latency));
    }

    let max_x = curves.iter().flat_map(|c| c.points.iter().map(|p| p.0)).fold(0.0f64, f64::max);
    let decades = (max_x.ceil() as u32).clamp(2, MAX_DECADES);
    let max_us = curves.iter().flat_map(|c| c.points.iter().map(|p| p.1)).fold(0.0f64, f64::max);
    let unit = time_unit(max_us);
    let title = format!("Latency spectrum: {}", s.name);
    let description = format!(
        "{} of {} requests by percentile: p50 {}, p99 {}, p99.9 {}, max {}",
        latency_label,
        format::count(s.latency.count),
        s.latency.percentile(50.0).map_or_else(|| "-".to_owned(), format::latency),
        s.latency.percentile(99.0).map_or_else(|| "-".to_owned(), format::latency),
        s.latency.percentile(99.9).map_or_else(|| "-".to_owned(), format::latency),
        format::latency(s.latency.max_us),
    );

    svg_document((880, 460), &title, &description, "spectrum", PLOT, |root| {
        let mut chart = chart_builder(root, &title, LabelAreas { x: 46, y: 64, right: None })
            .build_cartesian_2d(0f64..f64::from(decades), 0f64..axis_top(max_us / unit.us))
            .or_draw(PLOT)?;
        let x_label = |x: &f64| {
            if (x - x.round()).abs() < 1e-9 && *x >= 0.0 {
                nines(x.round() as u32)
            } else {
                String::new()
            }
        };
        let y_label = |y: &f64| compact(*y);
        let mut mesh = chart.configure_mesh();
        mesh.x_labels(decades as usize + 1)
            .x_label_formatter(&x_label)
            .y_label_formatter(&y_label)
            .y_labels(8)
            .x_desc("percentile (log scale of 1/(1-p): one decade per nine)")
            .y_desc(format!("latency ({})", unit.name));
        theme_mesh(&mut mesh, 14, 15).draw().or_draw(PLOT)?;
        for c in &curves {
            let colour = c.colour;
            chart
                .draw_series(LineSeries::new(c.points.iter().map(|(x, y)| (*x, y / unit.us)), colour.stroke_width(2)))
                .or_draw(PLOT)?
                .label(c.label.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(3)));
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft, PLOT)?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decades_are_labelled_as_nines() {
        assert_eq!(nines(0), "0%");
        assert_eq!(nines(1), "90%");
        assert_eq!(nines(2), "99%");
        assert_eq!(nines(3), "99.9%");
        assert_eq!(nines(5), "99.999%");
    }
}
