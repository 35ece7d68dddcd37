//! User injection (Gatling's open model): the response-time distribution Gatling prints beside the
//! percentiles, and the users active at peak.
//!
//! [`response_time_buckets`] sorts the requests of a scenario instance the way Gatling does: those that got a
//! 2xx response by latency (`t < 800 ms`, `800 ms <= t < 1200 ms`, `t >= 1200 ms`, read from the latency
//! histogram to its 3 significant digits) and the `failed` ones (requests that failed without a complete
//! response, plus non-2xx responses). The latency histogram holds every complete response, non-2xx included,
//! and does not tell them apart: the non-2xx responses are taken out of the three time buckets in proportion
//! to their sizes (exact when there are none, the usual case). The four counts add up to `total`.
//!
//! The buckets are computed when a report is rendered, not stored in `results.json`: they are a pure function
//! of the latency histogram and the counts that are stored there. Reports show them for `load.model ==
//! "users"` instances; the function works for any instance.

use crate::model::{ResponseTimeBuckets, ScenarioResult};

/// The upper bound of Gatling's first bucket, in microseconds (`t < 800 ms`).
pub const BUCKET_LOW_US: u64 = 800_000;
/// The upper bound of Gatling's second bucket, in microseconds (`800 ms <= t < 1200 ms`).
pub const BUCKET_HIGH_US: u64 = 1_200_000;

/// Gatling's response-time distribution of a scenario instance: see the [module documentation](self).
pub fn response_time_buckets(s: &ScenarioResult) -> ResponseTimeBuckets {
    let h = &s.histograms.latency;
    let mut raw = [0u64; 3];
    for v in h.iter_recorded() {
        let value = h.lowest_equivalent(v.value_iterated_to());
        let bucket = if value < BUCKET_LOW_US {
            0
        } else if value < BUCKET_HIGH_US {
            1
        } else {
            2
        };
        raw[bucket] += v.count_at_value();
    }
    let recorded: u64 = raw.iter().sum();
    let non_2xx = s.status.non_2xx();
    let ok = apportion(raw, recorded.saturating_sub(non_2xx));
    let failed = s.errors.total() + non_2xx;
    ResponseTimeBuckets {
        below_800ms: ok[0],
        from_800ms_to_1200ms: ok[1],
        at_least_1200ms: ok[2],
        failed,
        total: ok.iter().sum::<u64>() + failed,
    }
}

/// Scales `counts` down to add up to `target` (at most their sum), by largest remainder.
fn apportion(counts: [u64; 3], target: u64) -> [u64; 3] {
    let sum: u64 = counts.iter().sum();
    if sum == 0 || target >= sum {
        return counts;
    }
    let mut out = [0u64; 3];
    let mut remainders = [(0u128, 0usize); 3];
    for (i, &c) in counts.iter().enumerate() {
        let scaled = u128::from(c) * u128::from(target);
        out[i] = (scaled / u128::from(sum)) as u64;
        remainders[i] = (scaled % u128::from(sum), i);
    }
    let mut left = target - out.iter().sum::<u64>();
    remainders.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for (_, i) in remainders {
        if left == 0 {
            break;
        }
        out[i] += 1;
        left -= 1;
    }
    out
}

/// The most users active at once (`None` outside user injection): the engine's exact count, or for results of
/// an older loadgate the highest per-second value of the timeline.
pub fn peak_users_active(s: &ScenarioResult) -> Option<u64> {
    s.load.users_peak_active.or_else(|| s.timeline.iter().filter_map(|p| p.users_active).max())
}

impl ResponseTimeBuckets {
    /// The four buckets as Gatling labels them, with their counts: `("t < 800 ms", 5,412)`, ...
    pub fn rows(&self) -> [(&'static str, u64); 4] {
        [
            ("t < 800 ms", self.below_800ms),
            ("800 ms <= t < 1200 ms", self.from_800ms_to_1200ms),
            ("t >= 1200 ms", self.at_least_1200ms),
            ("failed", self.failed),
        ]
    }

    /// `count / total` (0 when there were no requests).
    pub fn share(&self, count: u64) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            count as f64 / self.total as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::sample_run;
    use crate::model::new_histogram;

    fn with_latencies(latencies_ms: &[(u64, u64)], non_2xx: u64, errors: u64) -> ScenarioResult {
        let mut s = sample_run().scenarios[1].clone();
        let mut h = new_histogram();
        for &(ms, n) in latencies_ms {
            h.record_n(ms * 1000, n).unwrap();
        }
        s.histograms.latency = h;
        s.status.server_error = non_2xx;
        s.errors = Default::default();
        s.errors.timeout = errors;
        s
    }

    #[test]
    fn buckets_split_at_800_and_1200_ms_and_add_up() {
        let s = with_latencies(&[(5, 700), (799, 100), (801, 50), (1_199, 30), (1_300, 15), (20_000, 5)], 0, 0);
        let b = response_time_buckets(&s);
        assert_eq!(
            b,
            ResponseTimeBuckets {
                below_800ms: 800,
                from_800ms_to_1200ms: 80,
                at_least_1200ms: 20,
                failed: 0,
                total: 900
            }
        );
        assert_eq!(b.rows()[1], ("800 ms <= t < 1200 ms", 80));
        assert!((b.share(b.below_800ms) - 800.0 / 900.0).abs() < 1e-12);
    }

    #[test]
    fn failures_are_errors_and_non_2xx_and_are_not_counted_twice() {
        // 1,000 complete responses of which 100 were 5xx, and 20 timeouts.
        let s = with_latencies(&[(100, 900), (1_000, 50), (2_000, 50)], 100, 20);
        let b = response_time_buckets(&s);
        assert_eq!(b.failed, 120);
        assert_eq!(b.below_800ms + b.from_800ms_to_1200ms + b.at_least_1200ms, 900);
        assert_eq!(b.total, 1_020);
        assert_eq!((b.below_800ms, b.from_800ms_to_1200ms, b.at_least_1200ms), (810, 45, 45));
    }

    #[test]
    fn nothing_measured_is_all_zero() {
        let s = with_latencies(&[], 0, 0);
        assert_eq!(response_time_buckets(&s), ResponseTimeBuckets::default());
        assert_eq!(ResponseTimeBuckets::default().share(0), 0.0);
        let failed_only = with_latencies(&[], 0, 7);
        assert_eq!(response_time_buckets(&failed_only).failed, 7);
        assert_eq!(response_time_buckets(&failed_only).total, 7);
    }

    #[test]
    fn apportion_keeps_the_total() {
        assert_eq!(apportion([1, 1, 1], 2), [1, 1, 0]);
        assert_eq!(apportion([5, 3, 2], 10), [5, 3, 2]);
        assert_eq!(apportion([5, 3, 2], 0), [0, 0, 0]);
        assert_eq!(apportion([7, 0, 3], 5).iter().sum::<u64>(), 5);
    }
}
