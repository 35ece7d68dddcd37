//! Per-response measurements of a streamed response, defined as vLLM's serving benchmark defines them, over
//! timestamps the caller gives (nanoseconds on one monotonic clock; the worker's kernel receive stamps). Pure:
//! no clock, no socket.
//!
//! For one response ([`StreamTimer`], then [`StreamSample`]):
//! - **TTFB**: first byte of the body minus the start. **TTFT**: first event minus the start. The start is the
//!   request's *intended* send time (in an open load, the schedule's time, so a generator or connection stall
//!   shows: coordinated omission corrected; in a closed load it equals the send time), and `ttft_sent` is the
//!   same from the *actual* send time, beside it.
//! - **ITL**: each gap between consecutive events of the response ([`StreamTimer::event`] returns it to be
//!   recorded at once; nothing per event is kept).
//! - **E2E**: the last byte (the stream's end) minus the start; `e2e_sent` from the send.
//! - **TPOT** = (E2E - TTFT) / (tokens - 1), for responses of 2 tokens or more, with tokens from the stream's
//!   `usage.completion_tokens` ([`completion_tokens`], OpenAI's last data event with `stream_options.
//!   include_usage`) when the stream gave one, otherwise the number of events. The start cancels out.
//! - **events** per response.
//!
//! [`StreamHistograms`] keeps each in an HdrHistogram (microseconds, `loadgate_measure::new_histogram`; events as
//! a count), merged with `add`.
//!
//! # Read lag
//!
//! A read returns every byte waiting in the socket with one kernel receive stamp (the newest segment's), so the
//! events that arrive in one read share a timestamp and the gaps between them read as 0: the measured ITL is
//! only as good as the reads are prompt. Per round, [`ReadLag`] keeps each read's lag (the time of the read
//! minus the stamp it carried) and how many gaps fell inside one read; [`ReadLagRule`] makes the round invalid,
//! as a late send does, when the read lag's p99 passes `max(floor, share x ITL p50)` (defaults: 100 us, 10%):
//! the generator fell behind the stream by more than the gaps it measures can tolerate.

use hdrhistogram::Histogram;
use loadgate_measure::new_histogram;

fn us(ns: u64) -> u64 {
    ns.div_ceil(1_000)
}

/// One response's timestamps as they come. See the [module documentation](self).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamTimer {
    intended: u64,
    sent: u64,
    first_byte: Option<u64>,
    first_event: Option<u64>,
    last_event: Option<(u64, u64)>,
    events: u64,
    same_read_gaps: u64,
    tokens: Option<u64>,
}

impl StreamTimer {
    /// A response to a request intended for `intended_ns` and written at `sent_ns`.
    pub fn new(intended_ns: u64, sent_ns: u64) -> StreamTimer {
        StreamTimer {
            intended: intended_ns,
            sent: sent_ns,
            first_byte: None,
            first_event: None,
            last_event: None,
            events: 0,
            same_read_gaps: 0,
            tokens: None,
        }
    }

    /// Body bytes arrived at `at_ns` (only the first counts).
    pub fn body_bytes(&mut self, at_ns: u64) {
        self.first_byte.get_or_insert(at_ns);
    }

    /// An event completed in read number `read`, stamped `at_ns`; returns the gap since the previous event in
    /// nanoseconds (none for the first).
    pub fn event(&mut self, at_ns: u64, read: u64) -> Option<u64> {
        self.events += 1;
        self.first_byte.get_or_insert(at_ns);
        self.first_event.get_or_insert(at_ns);
        let gap = self.last_event.map(|(t, r)| {
            if r == read {
                self.same_read_gaps += 1;
            }
            at_ns.saturating_sub(t)
        });
        self.last_event = Some((at_ns, read));
        gap
    }

    /// The stream's own count of generated tokens (`usage.completion_tokens`).
    pub fn usage(&mut self, completion_tokens: u64) {
        self.tokens = Some(completion_tokens);
    }

    /// Events so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// The stream ended at `end_ns` (its last byte).
    pub fn finish(&self, end_ns: u64) -> StreamSample {
        let end = end_ns.max(self.last_event.map_or(0, |(t, _)| t));
        let since = |start: u64, t: u64| t.saturating_sub(start);
        let tokens = self.tokens.unwrap_or(self.events);
        let ttft = self.first_event.map(|t| since(self.intended, t));
        let e2e = since(self.intended, end);
        let tpot = match (ttft, tokens) {
            (Some(ttft), n) if n > 1 => Some(e2e.saturating_sub(ttft) / (n - 1)),
            _ => None,
        };
        StreamSample {
            ttfb_ns: self.first_byte.map(|t| since(self.intended, t)),
            ttft_ns: ttft,
            ttft_sent_ns: self.first_event.map(|t| since(self.sent, t)),
            e2e_ns: e2e,
            e2e_sent_ns: since(self.sent, end),
            tpot_ns: tpot,
            events: self.events,
            tokens,
            tokens_from_usage: self.tokens.is_some(),
            same_read_gaps: self.same_read_gaps,
        }
    }
}

/// One response's measurements, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamSample {
    pub ttfb_ns: Option<u64>,
    pub ttft_ns: Option<u64>,
    pub ttft_sent_ns: Option<u64>,
    pub e2e_ns: u64,
    pub e2e_sent_ns: u64,
    pub tpot_ns: Option<u64>,
    pub events: u64,
    /// `usage.completion_tokens` when the stream gave it, else `events`.
    pub tokens: u64,
    pub tokens_from_usage: bool,
    /// Gaps between two events that completed in one read (their stamps are the same).
    pub same_read_gaps: u64,
}

/// The histograms of a worker's or a round's streamed responses (microseconds; `events` is a count).
#[derive(Debug, Clone)]
pub struct StreamHistograms {
    pub ttfb: Histogram<u64>,
    pub ttft: Histogram<u64>,
    pub ttft_sent: Histogram<u64>,
    pub itl: Histogram<u64>,
    pub tpot: Histogram<u64>,
    pub e2e: Histogram<u64>,
    pub events: Histogram<u64>,
    /// Responses recorded.
    pub responses: u64,
    /// Gaps recorded that fell inside one read.
    pub same_read_gaps: u64,
}

impl Default for StreamHistograms {
    fn default() -> Self {
        StreamHistograms {
            ttfb: new_histogram(),
            ttft: new_histogram(),
            ttft_sent: new_histogram(),
            itl: new_histogram(),
            tpot: new_histogram(),
            e2e: new_histogram(),
            events: new_histogram(),
            responses: 0,
            same_read_gaps: 0,
        }
    }
}

impl StreamHistograms {
    /// Records a gap between events (as [`StreamTimer::event`] returns it).
    pub fn record_gap(&mut self, gap_ns: u64) {
        self.itl.saturating_record(us(gap_ns));
    }

    /// Records a finished response.
    pub fn record(&mut self, s: &StreamSample) {
        let put = |h: &mut Histogram<u64>, v: Option<u64>| {
            if let Some(v) = v {
                h.saturating_record(us(v));
            }
        };
        put(&mut self.ttfb, s.ttfb_ns);
        put(&mut self.ttft, s.ttft_ns);
        put(&mut self.ttft_sent, s.ttft_sent_ns);
        put(&mut self.tpot, s.tpot_ns);
        put(&mut self.e2e, Some(s.e2e_ns));
        self.events.saturating_record(s.events);
        self.responses += 1;
        self.same_read_gaps += s.same_read_gaps;
    }

    /// Adds another set (a worker's, an interval's).
    pub fn add(&mut self, other: &StreamHistograms) -> Result<(), hdrhistogram::AdditionError> {
        self.ttfb.add(&other.ttfb)?;
        self.ttft.add(&other.ttft)?;
        self.ttft_sent.add(&other.ttft_sent)?;
        self.itl.add(&other.itl)?;
        self.tpot.add(&other.tpot)?;
        self.e2e.add(&other.e2e)?;
        self.events.add(&other.events)?;
        self.responses += other.responses;
        self.same_read_gaps += other.same_read_gaps;
        Ok(())
    }
}

/// A round's read lags. See the [module documentation](self).
#[derive(Debug, Clone)]
pub struct ReadLag {
    /// Read time minus the read's kernel stamp, microseconds.
    pub lag: Histogram<u64>,
}

impl Default for ReadLag {
    fn default() -> Self {
        ReadLag { lag: new_histogram() }
    }
}

impl ReadLag {
    /// A read at `read_ns` whose bytes carried the kernel stamp `stamp_ns`.
    pub fn record(&mut self, read_ns: u64, stamp_ns: u64) {
        self.lag.saturating_record(us(read_ns.saturating_sub(stamp_ns)));
    }

    pub fn add(&mut self, other: &ReadLag) -> Result<(), hdrhistogram::AdditionError> {
        self.lag.add(&other.lag)
    }
}

/// When a round's reads were too late for its gaps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReadLagRule {
    /// The read lag p99 always allowed, microseconds.
    pub floor_us: u64,
    /// The share of the ITL's median the read lag p99 may reach.
    pub share_of_gap: f64,
}

impl Default for ReadLagRule {
    fn default() -> Self {
        ReadLagRule { floor_us: 100, share_of_gap: 0.1 }
    }
}

/// What [`ReadLagRule::judge`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadLagVerdict {
    /// No read with a stamp: nothing to judge (a socket without receive stamps: reads were never deferred).
    NoData,
    Valid {
        p99_us: u64,
        limit_us: u64,
    },
    /// The generator fell behind: the round is invalid as a measurement.
    Invalid {
        p99_us: u64,
        limit_us: u64,
    },
}

impl ReadLagRule {
    /// Judges a round from its read lags and its ITL histogram.
    pub fn judge(&self, lag: &ReadLag, itl: &Histogram<u64>) -> ReadLagVerdict {
        if lag.lag.is_empty() {
            return ReadLagVerdict::NoData;
        }
        let p99 = lag.lag.value_at_quantile(0.99);
        let median_gap = if itl.is_empty() { 0 } else { itl.value_at_quantile(0.5) };
        let limit = self.floor_us.max((median_gap as f64 * self.share_of_gap) as u64);
        if p99 > limit {
            ReadLagVerdict::Invalid { p99_us: p99, limit_us: limit }
        } else {
            ReadLagVerdict::Valid { p99_us: p99, limit_us: limit }
        }
    }
}

/// `usage.completion_tokens` from an OpenAI-style event's JSON data, when it has a `usage` object with one: the
/// key found after `"usage"`, not inside a string (an escaped quote before it), and a run of digits as its
/// value. A scan, not a parse: the worker calls it on the last data event only.
pub fn completion_tokens(data: &[u8]) -> Option<u64> {
    let usage = find_key(data, b"\"usage\"")?;
    let rest = &data[usage..];
    let at = find_key(rest, b"\"completion_tokens\"")?;
    let mut v = rest[at..].iter().skip_while(|b| b.is_ascii_whitespace());
    if v.next() != Some(&b':') {
        return None;
    }
    let mut digits = v.skip_while(|b| b.is_ascii_whitespace()).take_while(|b| b.is_ascii_digit()).peekable();
    digits.peek()?;
    digits.try_fold(0u64, |n, d| n.checked_mul(10)?.checked_add(u64::from(d - b'0')))
}

/// The offset just after `key` where it stands as a key (not preceded by a backslash).
fn find_key(data: &[u8], key: &[u8]) -> Option<usize> {
    memchr::memmem::find_iter(data, key).find(|&i| i == 0 || data[i - 1] != b'\\').map(|i| i + key.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn ttft_counts_from_the_intended_time_and_beside_it_from_the_send() {
        // Intended at 0, sent 3 ms late, first event at 10 ms, then 4 more 5 ms apart, the end at 31 ms.
        let mut t = StreamTimer::new(0, 3 * MS);
        t.body_bytes(9 * MS);
        let mut gaps = Vec::new();
        for (i, at) in [10, 15, 20, 25, 30].iter().enumerate() {
            gaps.extend(t.event(at * MS, i as u64));
        }
        assert_eq!(gaps, [5 * MS; 4]);
        let s = t.finish(31 * MS);
        assert_eq!(s.ttfb_ns, Some(9 * MS));
        assert_eq!(s.ttft_ns, Some(10 * MS));
        assert_eq!(s.ttft_sent_ns, Some(7 * MS));
        assert_eq!((s.e2e_ns, s.e2e_sent_ns), (31 * MS, 28 * MS));
        // TPOT = (31 - 10) / (5 - 1) ms.
        assert_eq!(s.tpot_ns, Some(21 * MS / 4));
        assert_eq!((s.events, s.tokens, s.tokens_from_usage), (5, 5, false));
    }

    #[test]
    fn tpot_takes_the_tokens_from_usage_when_the_stream_gives_them() {
        let mut t = StreamTimer::new(0, 0);
        t.event(10 * MS, 0);
        t.event(20 * MS, 1);
        t.usage(11);
        let s = t.finish(20 * MS);
        assert_eq!(s.tpot_ns, Some(MS));
        assert!(s.tokens_from_usage);
    }

    #[test]
    fn a_single_token_has_no_tpot_and_a_stream_without_events_no_ttft() {
        let mut t = StreamTimer::new(0, 0);
        t.event(MS, 0);
        assert_eq!(t.finish(2 * MS).tpot_ns, None);
        let s = StreamTimer::new(0, 0).finish(5 * MS);
        assert_eq!((s.ttft_ns, s.tpot_ns, s.events, s.e2e_ns), (None, None, 0, 5 * MS));
    }

    #[test]
    fn events_of_one_read_share_a_stamp_and_are_counted() {
        let mut t = StreamTimer::new(0, 0);
        assert_eq!(t.event(5 * MS, 7), None);
        assert_eq!(t.event(5 * MS, 7), Some(0));
        assert_eq!(t.event(9 * MS, 8), Some(4 * MS));
        assert_eq!(t.finish(9 * MS).same_read_gaps, 1);
    }

    #[test]
    fn histograms_record_microseconds_and_merge() {
        let mut h = StreamHistograms::default();
        let mut t = StreamTimer::new(0, 0);
        t.event(MS, 0);
        h.record_gap(t.event(3 * MS, 1).unwrap());
        h.record_gap(0);
        h.record(&t.finish(3 * MS));
        let mut total = StreamHistograms::default();
        total.add(&h).unwrap();
        total.add(&h).unwrap();
        assert_eq!(total.responses, 2);
        assert_eq!(total.itl.len(), 4);
        assert_eq!(total.itl.max(), 2000);
        assert_eq!(total.ttft.value_at_quantile(0.5), 1000);
        assert_eq!(total.events.max(), 2);
    }

    #[test]
    fn a_round_whose_reads_lag_past_a_tenth_of_the_gap_is_invalid() {
        let rule = ReadLagRule::default();
        let mut itl = new_histogram();
        for _ in 0..100 {
            itl.record(5_000).unwrap();
        }
        let mut lag = ReadLag::default();
        assert_eq!(rule.judge(&lag, &itl), ReadLagVerdict::NoData);
        for i in 0..100 {
            lag.record(i * 1_000 + 20_000, i * 1_000);
        }
        assert!(matches!(rule.judge(&lag, &itl), ReadLagVerdict::Valid { p99_us: 20, limit_us: 500 }));
        for i in 0..10 {
            lag.record(i + 2 * MS, i);
        }
        assert!(matches!(rule.judge(&lag, &itl), ReadLagVerdict::Invalid { limit_us: 500, .. }));
        // Short gaps: the floor holds.
        let mut short = new_histogram();
        short.record(50).unwrap();
        let mut small = ReadLag::default();
        small.record(90_000, 0);
        assert!(matches!(rule.judge(&small, &short), ReadLagVerdict::Valid { limit_us: 100, .. }));
    }

    #[test]
    fn completion_tokens_are_read_from_the_usage_object() {
        let last = br#"{"id":"x","choices":[],"usage":{"prompt_tokens":9,"completion_tokens": 12,"total_tokens":21}}"#;
        assert_eq!(completion_tokens(last), Some(12));
        assert_eq!(completion_tokens(br#"{"choices":[{"delta":{"content":"hi"}}]}"#), None);
        // Inside a string the quotes are escaped: not a key.
        let fake = br#"{"choices":[{"delta":{"content":"\"usage\":{\"completion_tokens\":5}"}}]}"#;
        assert_eq!(completion_tokens(fake), None);
        assert_eq!(completion_tokens(br#"{"usage":{"completion_tokens":null}}"#), None);
        assert_eq!(completion_tokens(br#"{"usage":{"completion_tokens":99999999999999999999999}}"#), None);
    }

    proptest! {
        #[test]
        fn any_timestamps_never_panic_and_tpot_is_within_e2e(intended in any::<u64>(), sent in any::<u64>(), times in proptest::collection::vec(any::<u64>(), 0..20), end in any::<u64>(), tokens in proptest::option::of(any::<u64>())) {
            let mut t = StreamTimer::new(intended, sent);
            let mut h = StreamHistograms::default();
            for (i, at) in times.iter().enumerate() {
                if let Some(g) = t.event(*at, i as u64 / 3) {
                    h.record_gap(g);
                }
            }
            if let Some(n) = tokens {
                t.usage(n);
            }
            let s = t.finish(end);
            h.record(&s);
            if let Some(tpot) = s.tpot_ns {
                prop_assert!(tpot <= s.e2e_ns);
            }
        }

        #[test]
        fn random_bytes_never_panic_the_usage_scan(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = completion_tokens(&bytes);
        }
    }
}
