//! How faithfully a replay load (`load: { replay: ... }`) sent its log: the schedule error, the rate per 10 ms
//! window, the multiset of requests, the skips and the statuses, against what the log says. Plain data the engine
//! fills; nothing here judges.

use serde::{Deserialize, Serialize};

use schemars::JsonSchema;

/// A replay's fidelity.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReplayFidelity {
    /// The file as the spec names it.
    pub file: String,
    /// Its format.
    pub format: String,
    /// How much faster than logged.
    pub speed: f64,
    /// Lines (HAR: entries) read.
    pub lines: u64,
    /// Lines that could not be read (within the allowed share), and the first of them (`line N: what`).
    pub bad_lines: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub first_bad: Vec<String>,
    /// Logged requests not replayed, by reason (window, methods, filters, HAR origin, ...).
    pub skips: Vec<ReplaySkip>,
    /// Requests the schedule holds after the filters (this run's share of them, with shards).
    pub scheduled: u64,
    /// Requests sent.
    pub sent: u64,
    /// When each request left against when the log says it started (after the speed), in microseconds, over the
    /// requests completed: the open loop's send lag.
    pub schedule_error: ScheduleError,
    /// Requests sent per 10 ms window against the log's.
    pub windows: WindowFidelity,
    /// The multiset of (method, path, query) sent against the log's after the filters.
    pub requests: MultisetFidelity,
    /// Responses by (logged status, status seen), status classes (`2xx`; `-` when the log has none, `error` when
    /// no response came).
    pub statuses: Vec<StatusPair>,
}

/// A skip reason and its count.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReplaySkip {
    pub reason: String,
    pub count: u64,
}

/// The schedule error's percentiles.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScheduleError {
    pub p50_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
}

/// Requests per window sent against the log's (with shards, merged from the shards' own: the largest difference and
/// the peaks are bounds, the sums of the shards').
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WindowFidelity {
    /// The windows' width in milliseconds (10).
    pub window_ms: u64,
    /// Windows compared (from the phase start to the log's last request).
    pub windows: u64,
    /// The largest |sent - logged| of one window.
    pub max_abs_difference: u64,
    /// Windows whose counts differ.
    pub differing: u64,
    /// The log's busiest window.
    pub logged_peak: u64,
    /// The busiest window sent.
    pub sent_peak: u64,
}

/// The multiset of requests sent against the log's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MultisetFidelity {
    /// Every logged request was sent as often as logged.
    pub equal: bool,
    /// Distinct (method, path, query) in the log (with shards: in the largest shard's share).
    pub distinct: u64,
    /// Logged requests never sent.
    pub missing: u64,
    /// Requests sent more often than logged.
    pub extra: u64,
}

/// Responses of one (logged, seen) pair of status classes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StatusPair {
    pub logged: String,
    pub seen: String,
    pub count: u64,
}

impl ScheduleError {
    /// The schedule error of a send-lag summary's percentiles (`p50`, `p99`, by name) and max.
    pub fn of(percentiles: &std::collections::BTreeMap<String, u64>, max_us: u64) -> Self {
        let p = |k: &str| percentiles.get(k).copied().unwrap_or(0);
        ScheduleError { p50_us: p("p50"), p99_us: p("p99"), max_us }
    }
}

impl ReplayFidelity {
    /// Adds another part's fidelity: a shard's of the same replay (`at_once`: each sent its share of the log), or
    /// another repetition's (each sent the whole log). Counts add; the schedule error is the caller's to recompute
    /// from the merged send lag. With shards, the window figures are bounds (the shards' windows are not kept):
    /// the largest difference of the sums is at most the sum of the largest differences.
    pub fn add(&mut self, o: &ReplayFidelity, at_once: bool) {
        self.scheduled += o.scheduled;
        self.sent += o.sent;
        let m = &mut self.requests;
        m.missing += o.requests.missing;
        m.extra += o.requests.extra;
        m.distinct = m.distinct.max(o.requests.distinct);
        m.equal = m.missing == 0 && m.extra == 0;
        let w = &mut self.windows;
        if at_once {
            w.max_abs_difference += o.windows.max_abs_difference;
            w.differing = w.differing.max(o.windows.differing);
            w.windows = w.windows.max(o.windows.windows);
            w.logged_peak += o.windows.logged_peak;
            w.sent_peak += o.windows.sent_peak;
        } else {
            w.max_abs_difference = w.max_abs_difference.max(o.windows.max_abs_difference);
            w.differing += o.windows.differing;
            w.windows += o.windows.windows;
            w.logged_peak = w.logged_peak.max(o.windows.logged_peak);
            w.sent_peak = w.sent_peak.max(o.windows.sent_peak);
        }
        for p in &o.statuses {
            match self.statuses.iter_mut().find(|q| q.logged == p.logged && q.seen == p.seen) {
                Some(q) => q.count += p.count,
                None => self.statuses.push(p.clone()),
            }
        }
        // Every shard reads the whole file: its lines and skips are the file's, once. Repetitions read it again.
        if !at_once {
            self.lines += o.lines;
            self.bad_lines += o.bad_lines;
            for s in &o.skips {
                match self.skips.iter_mut().find(|k| k.reason == s.reason) {
                    Some(k) => k.count += s.count,
                    None => self.skips.push(s.clone()),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(scheduled: u64, sent: u64) -> ReplayFidelity {
        ReplayFidelity {
            lines: 10,
            scheduled,
            sent,
            skips: vec![ReplaySkip { reason: "path filter".into(), count: 2 }],
            windows: WindowFidelity {
                window_ms: 10,
                windows: 5,
                max_abs_difference: 1,
                differing: 2,
                ..Default::default()
            },
            requests: MultisetFidelity { equal: sent == scheduled, distinct: 3, missing: scheduled - sent, extra: 0 },
            statuses: vec![StatusPair { logged: "2xx".into(), seen: "2xx".into(), count: sent }],
            ..ReplayFidelity::default()
        }
    }

    #[test]
    fn shards_add_their_shares_and_repetitions_their_whole_logs() {
        let mut shards = part(4, 4);
        shards.add(&part(4, 3), true);
        assert_eq!((shards.scheduled, shards.sent, shards.lines, shards.skips[0].count), (8, 7, 10, 2));
        assert_eq!(shards.requests, MultisetFidelity { equal: false, distinct: 3, missing: 1, extra: 0 });
        assert_eq!((shards.windows.max_abs_difference, shards.windows.windows), (2, 5));
        assert_eq!(shards.statuses[0].count, 7);
        let mut reps = part(8, 8);
        reps.add(&part(8, 8), false);
        assert_eq!((reps.scheduled, reps.lines, reps.skips[0].count, reps.windows.max_abs_difference), (16, 20, 4, 1));
        assert!(reps.requests.equal);
    }
}
