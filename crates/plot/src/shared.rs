//! What every plot shares: the error and its shorthand, the legend in the theme, latency units, axis numbers,
//! shortened labels and file names. A leaf: it names no plot.

use crate::theme;

/// Why a plot could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// plotters refused to draw (a range it cannot map).
    #[error("cannot draw {plot}: {message}")]
    Draw { plot: &'static str, message: String },
    /// The figure names a scenario instance or sweep the results do not have.
    #[error("the results have no {0}")]
    Missing(String),
}

impl PlotError {
    pub(crate) fn draw(plot: &'static str) -> impl Fn(String) -> PlotError {
        move |message| PlotError::Draw { plot, message }
    }
}

/// Shorthand for plotters' results inside a plot: any error becomes its text.
pub(crate) trait OrDraw<T> {
    fn or_draw(self, plot: &'static str) -> Result<T, PlotError>;
}

impl<T, E: std::fmt::Display> OrDraw<T> for Result<T, E> {
    fn or_draw(self, plot: &'static str) -> Result<T, PlotError> {
        self.map_err(|e| PlotError::draw(plot)(e.to_string()))
    }
}

/// The legend of a plot in the theme (its background, border and font), at `position`.
pub(crate) fn legend<'a, DB, CT>(
    chart: &mut plotters::chart::ChartContext<'a, DB, CT>,
    position: plotters::chart::SeriesLabelPosition,
    plot: &'static str,
) -> Result<(), PlotError>
where
    DB: plotters::prelude::DrawingBackend + 'a,
    CT: plotters::coord::CoordTranslate,
{
    use plotters::prelude::*;
    chart
        .configure_series_labels()
        .position(position)
        .background_style(theme::BG.mix(0.9))
        .border_style(theme::GRID)
        .label_font((theme::FONT, 14).into_font().color(&theme::FG))
        .draw()
        .or_draw(plot)
}

/// The longest [`file_stem`]: with a prefix such as `spectrum-`, an extension and the `.NAME.tmp` of an atomic
/// write, a file name stays well under the 255 bytes file systems allow.
pub const MAX_STEM_BYTES: usize = 200;

/// A file name for a scenario instance, safe on every file system: `plaintext[connections=256]` becomes
/// `plaintext-connections-256`. Distinct instance names of one spec stay distinct unless they differ only in
/// punctuation. A name longer than [`MAX_STEM_BYTES`] keeps its beginning and ends with a hash of the whole
/// name, so long matrix cells stay distinct and stable from run to run.
pub fn file_stem(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let trimmed = out.trim_matches(['-', '.']);
    if trimmed.is_empty() {
        return "scenario".to_owned();
    }
    if trimmed.len() <= MAX_STEM_BYTES {
        return trimmed.to_owned();
    }
    // FNV-1a: stable across versions and platforms, unlike std's hasher.
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    // ASCII only by now, so any byte index is a char boundary.
    let head = trimmed[..MAX_STEM_BYTES - 17].trim_end_matches(['-', '.']);
    format!("{head}-{hash:016x}")
}

/// A unit for latencies: its name and microseconds per unit.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TimeUnit {
    pub name: &'static str,
    pub us: f64,
}

/// The unit that suits latencies up to `max_us`: us below 1 ms, s from 10 s, ms between.
pub(crate) fn time_unit(max_us: f64) -> TimeUnit {
    if max_us >= 10_000_000.0 {
        TimeUnit { name: "s", us: 1_000_000.0 }
    } else if max_us >= 1_000.0 {
        TimeUnit { name: "ms", us: 1_000.0 }
    } else {
        TimeUnit { name: "us", us: 1.0 }
    }
}

/// A number for an axis label: `0`, `2.5`, `950`, `12k`, `1.2M`.
pub(crate) fn compact(v: f64) -> String {
    let a = v.abs();
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            s
        }
    };
    if a >= 1e6 {
        format!("{}M", trim(format!("{:.1}", v / 1e6)))
    } else if a >= 1e4 {
        format!("{}k", trim(format!("{:.1}", v / 1e3)))
    } else if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        trim(format!("{v:.2}"))
    } else {
        trim(format!("{v:.3}"))
    }
}

/// The top of a value axis: the largest value plus headroom, never zero.
pub(crate) fn axis_top(max: f64) -> f64 {
    if max.is_finite() && max > 0.0 {
        max * 1.12
    } else {
        1.0
    }
}

/// Shortens text to about `max_chars` characters, with an ellipsis.
pub(crate) fn shorten(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max_chars.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_stems_are_safe_and_fit_a_file_name() {
        assert_eq!(file_stem("plaintext[connections=256]"), "plaintext-connections-256");
        assert_eq!(file_stem("a/b c[path=/x?y=1]"), "a-b-c-path-x-y-1");
        assert_eq!(file_stem("../.."), "scenario");
        let long_a = format!("sweep[body={}, connections=1]", "x".repeat(400));
        let long_b = format!("sweep[body={}, connections=2]", "x".repeat(400));
        let (a, b) = (file_stem(&long_a), file_stem(&long_b));
        assert!(a.len() <= MAX_STEM_BYTES && b.len() <= MAX_STEM_BYTES, "{a}");
        assert_ne!(a, b);
        assert_eq!(a, file_stem(&long_a), "stable");
        assert!(format!(".spectrum-{a}.svg.tmp").len() < 255);
        // Multi-byte names are sanitized before they are cut.
        let wide = "é".repeat(300) + "z";
        assert!(file_stem(&wide).len() <= MAX_STEM_BYTES);
    }

    #[test]
    fn compact_numbers() {
        assert_eq!(compact(0.0), "0");
        assert_eq!(compact(2.5), "2.5");
        assert_eq!(compact(950.0), "950");
        assert_eq!(compact(12_000.0), "12k");
        assert_eq!(compact(1_250_000.0), "1.2M");
        assert_eq!(compact(0.125), "0.125");
    }
}
