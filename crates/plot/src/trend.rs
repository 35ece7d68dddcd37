//! The trend of one metric over the runs a history keeps: one point per run (oldest left), the level of each
//! segment between change points as a dashed line, and each change point as a vertical line (red: a regression,
//! green: an improvement, in the metric's direction) with its change and p-value; the run being judged is ringed.

use loadgate_results::history::{p_clause, HistorySeries};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::chart::{svg_document, StepChart};
use crate::shared::{axis_top, legend, time_unit, OrDraw, PlotError};
use crate::theme::{BLUE, FONT, GREEN, MUTED, ORANGE, RED, SLATE};

const PLOT: &str = "the trend";
const WIDTH: u32 = 900;

/// The file a series' trend plot is written to: `trend-api-get-p99.svg` (spec, instance, metric).
pub fn trend_file(s: &HistorySeries) -> String {
    format!(
        "trend-{}-{}-{}.svg",
        crate::shared::file_stem(&s.spec),
        crate::shared::file_stem(&s.instance),
        crate::shared::file_stem(&s.metric)
    )
}

/// Draws the trend of a series.
pub fn trend(s: &HistorySeries) -> Result<String, PlotError> {
    let n = s.points.len();
    if n == 0 {
        return Err(PlotError::Missing(format!("runs of {} {}", s.instance, s.metric)));
    }
    let max = s.points.iter().map(|p| p.value).fold(0.0, f64::max);
    let (per_unit, y_desc) = match s.kind.as_str() {
        "latency" => {
            let unit = time_unit(max);
            (unit.us, format!("{} latency ({})", s.metric, unit.name))
        }
        "rate" => (1.0, format!("{} (requests/s)", s.metric)),
        "ratio" => (0.01, format!("{} (%)", s.metric)),
        _ => (1.0, format!("{} (count)", s.metric)),
    };
    let values: Vec<(f64, f64)> = s.points.iter().enumerate().map(|(i, p)| (i as f64, p.value / per_unit)).collect();
    let labels: Vec<String> = s.points.iter().map(|p| p.short_name()).collect();
    let title = format!("Trend: {} {}", s.instance, s.metric);
    let regressions = s.change_points.iter().filter(|c| c.regression).count();
    let description = format!(
        "{} of {} over {n} runs{}{}: {} change point{} ({regressions} regression{}, {} improvement{}); {} is better",
        s.metric,
        s.instance,
        s.on_branch(),
        s.machine.as_ref().map_or_else(String::new, |m| format!(", machine {m}")),
        s.change_points.len(),
        if s.change_points.len() == 1 { "" } else { "s" },
        if regressions == 1 { "" } else { "s" },
        s.change_points.len() - regressions,
        if s.change_points.len() - regressions == 1 { "" } else { "s" },
        if s.higher_is_better { "higher" } else { "lower" },
    );
    let top = axis_top(max / per_unit);

    svg_document((WIDTH, 460), &title, &description, "trend", PLOT, |root| {
        let skeleton = StepChart {
            title: &title,
            labels: &labels,
            label_chars: 10,
            min_step_px: 60.0,
            top,
            x_desc: "run (oldest left; label, commit or the end of its id)",
            y_desc: &y_desc,
        };
        let mut chart = skeleton.draw(root, WIDTH, PLOT)?;

        // The level of each segment.
        let mut bounds: Vec<usize> = vec![0];
        bounds.extend(s.change_points.iter().map(|c| c.index).filter(|&i| i > 0 && i < n));
        bounds.push(n);
        for pair in bounds.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            if b <= a {
                continue;
            }
            let mean = values[a..b].iter().map(|p| p.1).sum::<f64>() / (b - a) as f64;
            chart
                .draw_series(DashedLineSeries::new(
                    [(a as f64 - 0.4, mean), (b as f64 - 0.6, mean)],
                    6,
                    4,
                    SLATE.stroke_width(2),
                ))
                .or_draw(PLOT)?;
        }
        chart
            .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
            .or_draw(PLOT)?
            .label("level between change points")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], SLATE.stroke_width(2)));

        chart
            .draw_series(LineSeries::new(values.iter().copied(), BLUE.stroke_width(2)))
            .or_draw(PLOT)?
            .label(format!("{} per run", s.metric))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE.stroke_width(3)));
        chart.draw_series(values.iter().map(|p| Circle::new(*p, 3, BLUE.filled()))).or_draw(PLOT)?;

        for (k, c) in s.change_points.iter().enumerate() {
            let colour = if c.regression { RED } else { GREEN };
            let x = c.index as f64 - 0.5;
            chart
                .draw_series(DashedLineSeries::new([(x, 0.0), (x, top)], 5, 4, colour.stroke_width(2)))
                .or_draw(PLOT)?;
            let note = format!(
                "{:+.1}% {} {}",
                c.relative_change * 100.0,
                p_clause(c.p_value),
                if c.regression { "regression" } else { "improvement" }
            );
            let (dx, anchor) = if c.index > n / 2 { (-6, HPos::Right) } else { (6, HPos::Left) };
            let style = (FONT, 13).into_font().color(&colour).pos(Pos::new(anchor, VPos::Top));
            // Successive notes step down so neighbouring change points stay readable.
            let dy = 6 + 16 * (k % 4) as i32;
            chart
                .draw_series(std::iter::once(EmptyElement::at((x, top)) + Text::new(note, (dx, dy), style)))
                .or_draw(PLOT)?;
        }
        if let Some((i, p)) = s.points.iter().enumerate().rev().find(|(_, p)| p.current) {
            chart
                .draw_series(std::iter::once(Circle::new((i as f64, p.value / per_unit), 9, ORANGE.stroke_width(2))))
                .or_draw(PLOT)?
                .label("this run")
                .legend(|(x, y)| Circle::new((x + 10, y), 5, ORANGE.stroke_width(2)));
        }
        if s.change_points.is_empty() {
            root.draw(&Text::new("no change point".to_owned(), (86, 44), (FONT, 14).into_font().color(&MUTED)))
                .or_draw(PLOT)?;
        }
        legend(&mut chart, SeriesLabelPosition::LowerLeft, PLOT)?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series() -> HistorySeries {
        loadgate_results::fixture::history_series()
    }

    #[test]
    fn the_trend_marks_its_change_point_and_the_current_run() {
        let svg = trend(&series()).expect("draws");
        let doc = roxmltree::Document::parse(&svg).expect("well-formed XML");
        let texts: Vec<&str> = doc.descendants().filter_map(|n| n.text()).collect();
        assert!(texts.iter().any(|t| t.contains("+5.0% p = ") && t.contains("regression")), "{texts:?}");
        assert!(texts.iter().any(|t| t.contains("this run")));
        assert!(texts.iter().any(|t| t.contains("p99 latency (ms)")), "axis says its unit");
        let desc = doc.descendants().find(|n| n.has_tag_name("desc")).and_then(|n| n.text()).unwrap_or("");
        assert!(desc.contains("1 change point (1 regression"), "{desc}");
        assert_eq!(trend_file(&series()), "trend-api-get-p99.svg");
    }
}
