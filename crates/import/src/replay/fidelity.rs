//! How faithful a replay is. For now, the schedule's own summary (what the log asks for after the speed): its
//! duration, requests, mean and peak rate per second, distinct clients, and the inter-arrival gaps as an
//! HdrHistogram (microseconds, 1 us .. 1 h, 3 significant digits). What was sent is compared with it once the
//! engine replays (a later session).

use std::collections::BTreeSet;
use std::time::Duration;

use hdrhistogram::Histogram;

use super::record::ClientKey;
use super::schedule::ReplayRequest;

/// The schedule's summary.
#[derive(Debug, Clone)]
pub struct ScheduleSummary {
    /// Requests scheduled.
    pub requests: u64,
    /// From the first request to the last.
    pub duration: Duration,
    /// Requests per second over the duration (all of them when the duration is zero: `None`).
    pub mean_rate: Option<f64>,
    /// The most requests in one second of the schedule (seconds counted from the first request).
    pub peak_per_second: u64,
    /// Distinct clients.
    pub clients: u64,
    /// Gaps between consecutive requests, microseconds (a gap of zero is recorded as zero).
    pub gaps: Histogram<u64>,
}

/// Summarizes a schedule (its requests in `at` order).
pub fn summarize(requests: &[ReplayRequest]) -> ScheduleSummary {
    let mut gaps = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).expect("static histogram bounds are valid");
    let mut clients: BTreeSet<&ClientKey> = BTreeSet::new();
    let mut peak = 0u64;
    let mut second = None;
    let mut in_second = 0u64;
    for (i, r) in requests.iter().enumerate() {
        clients.insert(&r.client);
        if i > 0 {
            let gap = r.at.saturating_sub(requests[i - 1].at).as_micros();
            gaps.saturating_record(u64::try_from(gap).unwrap_or(u64::MAX));
        }
        let s = r.at.as_secs();
        if second == Some(s) {
            in_second += 1;
        } else {
            second = Some(s);
            in_second = 1;
        }
        peak = peak.max(in_second);
    }
    let duration = match (requests.first(), requests.last()) {
        (Some(a), Some(b)) => b.at.saturating_sub(a.at),
        _ => Duration::ZERO,
    };
    let n = requests.len() as u64;
    ScheduleSummary {
        requests: n,
        duration,
        mean_rate: (!duration.is_zero()).then(|| n as f64 / duration.as_secs_f64()),
        peak_per_second: peak,
        clients: clients.len() as u64,
        gaps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64, client: u64) -> ReplayRequest {
        ReplayRequest {
            at: Duration::from_millis(ms),
            line: ms,
            method: "GET".into(),
            path: "/".into(),
            query: vec![],
            headers: vec![],
            body: None,
            client: ClientKey::Connection(client),
            logged_status: None,
        }
    }

    #[test]
    fn a_schedule_summary_gives_its_rates_clients_and_gap_percentiles() {
        // A burst of 5 requests in the first 4 ms, then one a second later.
        let reqs: Vec<_> = [0, 1, 2, 3, 4, 2000].iter().enumerate().map(|(i, &ms)| at(ms, i as u64 % 2)).collect();
        let s = summarize(&reqs);
        assert_eq!(s.requests, 6);
        assert_eq!(s.duration, Duration::from_secs(2));
        assert_eq!(s.mean_rate, Some(3.0));
        assert_eq!(s.peak_per_second, 5);
        assert_eq!(s.clients, 2);
        assert_eq!(s.gaps.len(), 5);
        assert_eq!(s.gaps.value_at_quantile(0.5), 1000);
        assert!(s.gaps.equivalent(s.gaps.max(), 1_996_000));
    }

    #[test]
    fn an_empty_or_single_request_schedule_has_no_rate() {
        assert_eq!(summarize(&[]).mean_rate, None);
        let one = summarize(&[at(5, 1)]);
        assert_eq!((one.requests, one.peak_per_second, one.gaps.len(), one.mean_rate), (1, 1, 0, None));
    }
}
