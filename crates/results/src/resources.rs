//! What the generator and the target consumed during a phase: the generator's worker CPU (from the engine's
//! per-worker rusage) and the target's CPU and memory (from the once-a-second samples of its process tree).

use crate::model::{RunResults, ScenarioResult};

/// Resource use during one scenario instance.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PhaseResources {
    /// The busiest generator worker's CPU use, as a fraction of one CPU.
    pub generator_peak: Option<f64>,
    /// The target's average and peak CPU use (fractions of one CPU, summed over its process tree) over the
    /// samples taken during the phase.
    pub target_cpu_mean: Option<f64>,
    pub target_cpu_peak: Option<f64>,
    /// The target tree's largest resident set during the phase.
    pub target_rss_peak: Option<u64>,
    /// How many target samples fell in the phase.
    pub samples: usize,
}

/// The resources `s` used: target samples taken between the phase's start and end (one second of slack at the
/// end, since a sample covers the second before it).
pub fn phase_resources(results: &RunResults, s: &ScenarioResult) -> PhaseResources {
    let start = s.started_at_offset;
    let end = start + s.duration + 1.0;
    let samples: Vec<_> = results.target.samples.iter().filter(|x| x.t > start && x.t <= end).collect();
    let generator_peak =
        s.workers.iter().map(|w| w.utilization).fold(None, |m: Option<f64>, u| Some(m.map_or(u, |m| m.max(u))));
    if samples.is_empty() {
        return PhaseResources { generator_peak, ..PhaseResources::default() };
    }
    let n = samples.len() as f64;
    PhaseResources {
        generator_peak,
        target_cpu_mean: Some(samples.iter().map(|x| x.cpu).sum::<f64>() / n),
        target_cpu_peak: samples.iter().map(|x| x.cpu).fold(None, |m: Option<f64>, c| Some(m.map_or(c, |m| m.max(c)))),
        target_rss_peak: samples.iter().map(|x| x.rss_bytes).max(),
        samples: samples.len(),
    }
}

impl PhaseResources {
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
    use crate::model::{ResourceSample, WorkerStats};

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
        assert_eq!(p.samples, 3);
        assert_eq!(p.generator_peak, Some(0.9));
        assert!((p.target_cpu_mean.unwrap() - 0.6).abs() < 1e-9);
        assert_eq!(p.target_cpu_peak, Some(0.8));
        assert_eq!(p.target_rss_peak, Some(300));
        assert!(p.line().unwrap().contains("target CPU 60% mean, 80% peak"));
    }
}
