//! What the generator and the target consumed during a phase: the generator's worker CPU (from the engine's
//! per-worker rusage) and the target's CPU and memory (from the once-a-second samples of its process tree).
//!
//! A phase's figures are computed once, when it ends, from the samples taken while it ran (a sample covers the
//! second before it; none taken after the phase ended counts), and stored with the phase
//! ([`ScenarioResult::resources`]): the terminal, report.md and results.json show the same numbers.

use crate::model::{ResourceSample, RunResults, ScenarioResult, WorkerStats};

/// The record is the model's (`results.json` embeds it); its figures are computed here.
pub use crate::model::PhaseResources;

/// The resources `s` used: the figures stored with it, or (results written before they were stored) the ones
/// computed from the run's target samples taken during the phase.
pub fn phase_resources(results: &RunResults, s: &ScenarioResult) -> PhaseResources {
    match &s.resources {
        Some(r) => r.clone(),
        None => PhaseResources::over(
            &results.target.samples,
            s.started_at_offset,
            s.started_at_offset + s.duration,
            &s.workers,
        ),
    }
}

impl PhaseResources {
    /// The figures of a phase that ran from `start` to `end` (seconds from the run's start): the target samples
    /// taken in `(start, end]`, and the busiest of `workers`.
    pub fn over(samples: &[ResourceSample], start: f64, end: f64, workers: &[WorkerStats]) -> PhaseResources {
        let samples: Vec<_> = samples.iter().filter(|x| x.t > start && x.t <= end).collect();
        let generator_peak = workers.iter().map(|w| w.utilization).reduce(f64::max);
        if samples.is_empty() {
            return PhaseResources { generator_peak, ..PhaseResources::default() };
        }
        let n = samples.len() as f64;
        PhaseResources {
            generator_peak,
            target_cpu_mean: Some(samples.iter().map(|x| x.cpu).sum::<f64>() / n),
            target_cpu_peak: samples.iter().map(|x| x.cpu).reduce(f64::max),
            target_rss_peak: samples.iter().map(|x| x.rss_bytes).max(),
            samples: samples.len(),
        }
    }

    /// The figures of several runs of one instance (repetitions): peaks are the highest, the mean is over all
    /// their samples.
    pub fn combine<'a>(parts: impl IntoIterator<Item = &'a PhaseResources>) -> Option<PhaseResources> {
        let parts: Vec<&PhaseResources> = parts.into_iter().collect();
        if parts.is_empty() {
            return None;
        }
        let max = |f: &dyn Fn(&PhaseResources) -> Option<f64>| parts.iter().filter_map(|p| f(p)).reduce(f64::max);
        let samples: usize = parts.iter().map(|p| p.samples).sum();
        let weighted: f64 = parts.iter().filter_map(|p| p.target_cpu_mean.map(|m| m * p.samples as f64)).sum();
        Some(PhaseResources {
            generator_peak: max(&|p| p.generator_peak),
            target_cpu_mean: (samples > 0).then(|| weighted / samples as f64),
            target_cpu_peak: max(&|p| p.target_cpu_peak),
            target_rss_peak: parts.iter().filter_map(|p| p.target_rss_peak).max(),
            samples,
        })
    }

    /// One line for the terminal: `generator CPU 96% (busiest worker); target CPU 71% mean, 88% peak, RSS 12.0MiB`.
    pub fn line(&self) -> Option<String> {
        let pct = |f: f64| format!("{:.0}%", f * 100.0);
        let mut parts = Vec::new();
        if let Some(g) = self.generator_peak {
            parts.push(format!("generator CPU {} (busiest worker)", pct(g)));
        }
        if let (Some(m), Some(p)) = (self.target_cpu_mean, self.target_cpu_peak) {
            let mut t = format!("target CPU {} mean, {} peak", pct(m), pct(p));
            if let Some(r) = self.target_rss_peak {
                t.push_str(&format!(", RSS {}", crate::format::bytes(r)));
            }
            parts.push(t);
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_inside_the_phase_only() {
        let mut r = crate::fixture::sample_run();
        let mut s = r.scenarios[0].clone();
        s.started_at_offset = 10.0;
        s.duration = 2.0;
        s.workers = vec![
            WorkerStats { utilization: 0.5, ..WorkerStats::default() },
            WorkerStats { utilization: 0.9, ..WorkerStats::default() },
        ];
        r.target.samples = vec![
            ResourceSample { t: 9.0, cpu: 5.0, rss_bytes: 999 },
            ResourceSample { t: 11.0, cpu: 0.4, rss_bytes: 100 },
            ResourceSample { t: 12.0, cpu: 0.8, rss_bytes: 300 },
            ResourceSample { t: 13.0, cpu: 0.6, rss_bytes: 200 },
            ResourceSample { t: 14.5, cpu: 5.0, rss_bytes: 999 },
        ];
        let p = phase_resources(&r, &s);
        // 13.0 was taken after the phase ended (at 12.0): it does not count.
        assert_eq!(p.samples, 2);
        assert_eq!(p.generator_peak, Some(0.9));
        assert!((p.target_cpu_mean.unwrap() - 0.6).abs() < 1e-9);
        assert_eq!(p.target_cpu_peak, Some(0.8));
        assert_eq!(p.target_rss_peak, Some(300));
        assert!(p.line().unwrap().contains("target CPU 60% mean, 80% peak"));
        // Stored figures win over the samples.
        s.resources = Some(PhaseResources { samples: 9, ..PhaseResources::default() });
        assert_eq!(phase_resources(&r, &s).samples, 9);
        let both = PhaseResources::combine([
            &p,
            &PhaseResources {
                samples: 2,
                target_cpu_mean: Some(0.0),
                target_cpu_peak: Some(0.1),
                ..PhaseResources::default()
            },
        ])
        .unwrap();
        assert_eq!(both.samples, 4);
        assert!((both.target_cpu_mean.unwrap() - 0.3).abs() < 1e-9);
        assert_eq!(both.target_cpu_peak, Some(0.8));
    }
}
