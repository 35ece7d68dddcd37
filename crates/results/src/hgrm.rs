//! The `.hgrm` percentile spectrum: the "Detailed Percentile spectrum" that wrk2 prints and that HdrHistogram's
//! plotter reads.
//!
//! Values are in milliseconds (the histograms record microseconds), with as many decimals as the histogram has
//! significant digits. The rows step through percentiles the way HdrHistogram does with 5 ticks per half
//! distance: 10% steps up to 50%, 5% to 75%, 2.5% to 87.5%, and so on, halving the step each time the remaining
//! distance to 100% halves, so the tail is shown in ever finer detail. Each row shows the highest value
//! equivalent to the recorded one, the percentile reached, the count at or below it, and `1/(1-percentile)`;
//! the last row is the 100th percentile. The footer carries the mean, standard deviation, maximum, total count
//! and the histogram's bucket layout. An empty histogram prints the header and the footer with zeros.

use std::fmt::Write as _;

use hdrhistogram::Histogram;

/// Percentile rows per halving of the distance to 100%, as wrk2 prints.
const TICKS_PER_HALF_DISTANCE: f64 = 5.0;
/// Microseconds per printed unit (milliseconds).
const VALUE_SCALE: f64 = 1000.0;

/// The percentile spectrum of a histogram of microseconds, in milliseconds, in the `.hgrm` format.
pub fn hgrm(h: &Histogram<u64>) -> String {
    let decimals = usize::from(h.sigfig());
    let mut out = String::new();
    let _ = writeln!(out, "{:>12} {:>12} {:>12} {:>12}\n", "Value", "Percentile", "TotalCount", "1/(1-Percentile)");
    let mut row = |value: u64, percent: f64, count: u64| {
        let q = percent / 100.0;
        let _ = writeln!(
            out,
            "{:>12.decimals$} {:>12.6} {:>12} {:>12.2}",
            value as f64 / VALUE_SCALE,
            q,
            count,
            1.0 / (1.0 - q)
        );
    };

    let total = h.len();
    if total > 0 {
        let mut cumulative = 0u64;
        let mut level = 0.0f64;
        for step in h.iter_recorded() {
            cumulative += step.count_since_last_iteration();
            let value = step.value_iterated_to();
            if cumulative >= total {
                row(value, level.min(100.0), cumulative);
                row(value, 100.0, cumulative);
                break;
            }
            let reached = 100.0 * cumulative as f64 / total as f64;
            while level <= reached {
                row(value, level, cumulative);
                let halvings = (100.0 / (100.0 - level)).log2().floor();
                let next = level + 100.0 / (TICKS_PER_HALF_DISTANCE * (halvings + 1.0).exp2());
                if next <= level {
                    break;
                }
                level = next;
            }
        }
    }

    let (mean, stdev, max) = if total > 0 { (h.mean(), h.stdev(), h.max() as f64) } else { (0.0, 0.0, 0.0) };
    let _ = writeln!(out, "#[Mean    = {:>12.3}, StdDeviation   = {:>12.3}]", mean / VALUE_SCALE, stdev / VALUE_SCALE);
    let _ = writeln!(out, "#[Max     = {:>12.3}, Total count    = {:>12}]", max / VALUE_SCALE, total);
    let _ = writeln!(out, "#[Buckets = {:>12}, SubBuckets     = {:>12}]", h.buckets(), sub_buckets(h.sigfig()));
    out
}

/// The sub-bucket count of a histogram with this precision: the power of two that holds `2 * 10^sigfig`.
fn sub_buckets(sigfig: u8) -> u64 {
    let largest = 2.0 * 10f64.powi(i32::from(sigfig));
    1u64 << (largest.log2().ceil() as u32).min(63)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::new_histogram;

    #[test]
    fn spectrum_walks_to_the_hundredth_percentile() {
        let mut h = new_histogram();
        for v in 1..=10_000u64 {
            h.record(v * 10).unwrap();
        }
        let text = hgrm(&h);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0].split_whitespace().collect::<Vec<_>>(),
            ["Value", "Percentile", "TotalCount", "1/(1-Percentile)"]
        );
        assert_eq!(lines[1], "");
        // First row: the smallest value at percentile 0.
        let first: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(first, ["0.010", "0.000000", "1", "1.00"]);
        // The 50% row is 50 ms.
        assert!(lines.iter().any(|l| l.contains(" 0.500000 ") && l.trim_start().starts_with("50.")), "{text}");
        let spectrum: Vec<&str> =
            lines.iter().copied().filter(|l| !l.starts_with('#') && !l.is_empty()).skip(1).collect();
        let last: Vec<&str> = spectrum.last().unwrap().split_whitespace().collect();
        assert_eq!(&last[1..], ["1.000000", "10000", "inf"]);
        // Percentiles and counts never go down.
        let mut prev = (0.0f64, 0u64);
        for l in &spectrum {
            let cols: Vec<&str> = l.split_whitespace().collect();
            let p: f64 = cols[1].parse().unwrap();
            let c: u64 = cols[2].parse().unwrap();
            assert!(p >= prev.0 && c >= prev.1, "{l}");
            prev = (p, c);
        }
        assert!(text.contains("#[Buckets = "), "{text}");
        assert!(text.contains("SubBuckets     =         2048]"), "{text}");
        assert!(text.contains("Total count    =        10000]"), "{text}");
    }

    #[test]
    fn empty_histogram_prints_header_and_footer() {
        let text = hgrm(&new_histogram());
        assert_eq!(text.lines().count(), 5, "{text}");
    }
}
