//! `abort_on_fail`: checked once a second while a phase runs; a breach that can no longer be repaired stops
//! the phase (and the run after it).

use loadgate_engine::{Control, Tick};
use loadgate_plan::{Metric, Threshold};

/// Latency SLOs are judged over this many of the last seconds.
pub const ABORT_WINDOW_SECONDS: usize = 5;

/// The state of one phase's `abort_on_fail` checks.
#[derive(Debug)]
pub struct AbortWatch {
    window: Vec<hdrhistogram::Histogram<u64>>,
    completed: u64,
    failed: u64,
    errors: u64,
    non_2xx: u64,
}

impl Default for AbortWatch {
    fn default() -> Self {
        Self::new()
    }
}

impl AbortWatch {
    pub fn new() -> Self {
        AbortWatch { window: Vec::new(), completed: 0, failed: 0, errors: 0, non_2xx: 0 }
    }

    /// Takes one second's tick and says whether the phase goes on.
    pub fn check(&mut self, tick: &Tick<'_>) -> Control {
        self.window.push(tick.interval_latency.clone());
        if self.window.len() > ABORT_WINDOW_SECONDS {
            self.window.remove(0);
        }
        self.completed += tick.point.completed;
        self.errors += tick.point.errors;
        self.non_2xx += tick.point.non_2xx;
        self.failed += tick.point.errors + tick.point.non_2xx;
        for slo in &tick.phase.slos {
            let Some(abort) = slo.abort_on_fail else { continue };
            if !tick.phase.gate || tick.elapsed < abort.delay.as_std() || slo.request.is_some() {
                continue;
            }
            let observed = match (slo.metric, slo.threshold) {
                (Metric::Percentile(p), Threshold::Latency(_)) => {
                    self.window_latency(|h| loadgate_results::value_at_percentile(h, p))
                }
                (Metric::Max, Threshold::Latency(_)) => self.window_latency(|h| h.max()),
                (Metric::Mean, Threshold::Latency(_)) => self.window_latency(|h| h.mean() as u64),
                (Metric::ErrorRate, Threshold::Ratio(_)) => {
                    let attempts = self.completed + self.errors;
                    (attempts > 0).then(|| self.failed as f64 / attempts as f64)
                }
                (Metric::Errors, Threshold::Count(_)) => Some(self.errors as f64),
                (Metric::Non2xx, Threshold::Count(_)) => Some(self.non_2xx as f64),
                // Throughput and baselines are judged over the whole phase only.
                _ => None,
            };
            let Some(observed) = observed else { continue };
            let threshold = match slo.threshold {
                Threshold::Latency(d) => d.as_micros() as f64,
                Threshold::Ratio(p) => p.0,
                Threshold::Count(n) => n as f64,
                _ => continue,
            };
            if !slo.comparison.holds(observed, threshold) {
                let shown = match slo.threshold {
                    Threshold::Latency(_) => loadgate_results::format::latency(observed as u64),
                    Threshold::Ratio(_) => loadgate_results::format::ratio(observed),
                    _ => format!("{observed}"),
                };
                return Control::Abort(format!(
                    "{ABORT_PREFIX}: `{slo}` breached after {:.0}s (observed {shown} over the last {}s)",
                    tick.elapsed.as_secs_f64(),
                    self.window.len()
                ));
            }
        }
        Control::Continue
    }

    fn window_latency(&self, f: impl Fn(&hdrhistogram::Histogram<u64>) -> u64) -> Option<f64> {
        let mut merged = loadgate_results::new_histogram();
        for h in &self.window {
            let _ = merged.add(h);
        }
        (!merged.is_empty()).then(|| f(&merged) as f64)
    }
}

/// The start of the `aborted` text of a phase that an `abort_on_fail` SLO stopped.
pub const ABORT_PREFIX: &str = "abort_on_fail";

/// Whether a phase's `aborted` text says an `abort_on_fail` SLO stopped it.
pub fn aborted_by_slo(aborted: Option<&str>) -> bool {
    aborted.is_some_and(|a| a.starts_with(ABORT_PREFIX))
}
