//! `pipeline_reads: batch`: a pipelined batch is read whole, with one wake-up and one read, once all of it can
//! have arrived.
//!
//! In a closed HTTP/1.1 load pipelined in batches (`pipeline_mode: batch`), the next batch goes out only when
//! every response of the last one is in. A server that answers each pipelined request with a write of its own
//! (nginx does) makes a reader that reads as soon as anything arrives wake and read once per response, which is
//! most of the generator's CPU. With batched reads the socket reports itself readable only when the batch's
//! bytes can all be there (`SO_RCVLOWAT`: the responses outstanding times the shortest response seen on the
//! connection), and one read takes them.
//!
//! A response completes, as always, at the kernel's receive time of the bytes read with it. The kernel merges
//! the data that waits in a socket and keeps the newest stamp, so the responses of a batch read whole complete
//! at the arrival of its last bytes: when the batch completed, which is what wrk records for a pipelined batch.
//! Reading each response as it arrives (`pipeline_reads: each`, the default) is what gives each its own time.
//!
//! The mark is a lower bound, never a promise: responses of other lengths make the batch be read in parts (a
//! longer one reaches the mark early; each part's responses complete at that part's arrival), a response read in
//! part lowers the mark by what was read of it, and the first batch of a connection is read as it arrives (its
//! responses give the shortest length). Marks are set only while reads carry the kernel's timestamp (the first
//! reads of a run may not): a read held back without one would move its completion times. A batch that never
//! reaches its mark (a response shorter than any before) is read by force after twice the last batch's time,
//! between [`STALL_MIN`] and [`STALL_MAX`] (the pacer looks every 10 ms), and a batch is also read before its
//! requests time out and when the drain ends. A read by force that completes its batch is a batch that missed
//! its mark: those are counted (`load.batches_forced`), leave the time of the batches untouched, and a measurable
//! share of them is a warning (their connections wrote their next batch late). One that leaves responses
//! outstanding met a slow server: the batch goes on, read in parts.

use std::time::{Duration, Instant};

/// The shortest wait before a batch that has not reached its low-water mark is read by force.
pub(super) const STALL_MIN: Duration = Duration::from_millis(10);
/// The longest: a pause of the server does not make the next batch that misses its mark wait longer. (A batch
/// that takes longer than this is read in parts as it comes, each part's responses at that part's arrival.)
pub(super) const STALL_MAX: Duration = Duration::from_millis(200);

/// Where a slot's batch held back by a low-water mark stands with the pacer, which reads it by force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stall {
    /// No batch is held back.
    None,
    /// The batch is read by force at this time.
    At(Instant),
    /// The pacer read it by force; the slot has not looked yet.
    Forced,
}

/// One connection's batched-read state.
#[derive(Debug)]
pub(super) struct Batching {
    /// The shortest response on this connection so far (0: none yet).
    shortest: usize,
    /// The response being read: its bytes so far.
    bytes: usize,
    /// The socket's low-water mark now (1: the kernel's default).
    low_water: usize,
    /// The socket refused a mark: reads as responses arrive for the rest of the connection.
    off: bool,
    /// When the current batch went out, and how long the last one that reached its mark took.
    sent_at: Option<Instant>,
    took: Duration,
    /// The current batch was read by force (its time says nothing of the next batch's).
    forced: bool,
}

impl Batching {
    pub(super) fn new() -> Self {
        Batching { shortest: 0, bytes: 0, low_water: 1, off: false, sent_at: None, took: Duration::ZERO, forced: false }
    }

    /// A new connection: everything is learnt again.
    pub(super) fn reset(&mut self) {
        *self = Batching::new();
    }

    /// Whether the socket holds reads back now.
    #[inline]
    pub(super) fn holding(&self) -> bool {
        self.low_water > 1
    }

    /// A batch went out.
    pub(super) fn sent(&mut self, now: Instant) {
        self.sent_at = Some(now);
    }

    /// The parser used `n` more bytes of the response being read.
    #[inline]
    pub(super) fn bytes(&mut self, n: usize) {
        self.bytes += n;
    }

    /// A response completed.
    #[inline]
    pub(super) fn response(&mut self) {
        let len = std::mem::take(&mut self.bytes);
        if len > 0 && (self.shortest == 0 || len < self.shortest) {
            self.shortest = len;
        }
    }

    /// The read that completed the current batch was one by force: it never reached its mark.
    pub(super) fn forced(&mut self) {
        self.forced = true;
    }

    /// Every response of the batch is in.
    pub(super) fn done(&mut self, now: Instant) {
        if let Some(at) = self.sent_at.take() {
            if !std::mem::take(&mut self.forced) {
                self.took = now.saturating_duration_since(at);
            }
        }
    }

    /// The socket refused a mark: reads follow the responses for the rest of the connection.
    pub(super) fn refused(&mut self) {
        self.off = true;
    }

    /// The low-water mark the socket needs for `outstanding` responses, when it is not the one it has: what they
    /// come to at the shortest length seen, less what was read of the one in progress (kept between batches,
    /// which are usually alike); the default while reads carry no kernel timestamp (`stamped`).
    pub(super) fn low_water_for(&self, outstanding: usize, stamped: bool) -> Option<usize> {
        let want = if self.off || self.shortest == 0 || !stamped {
            1
        } else if outstanding == 0 {
            return None;
        } else {
            (outstanding - 1)
                .saturating_mul(self.shortest)
                .saturating_add(self.shortest.saturating_sub(self.bytes).max(1))
        };
        (want != self.low_water).then_some(want)
    }

    /// The socket now has this low-water mark.
    pub(super) fn set_low_water(&mut self, bytes: usize) {
        self.low_water = bytes;
    }

    /// How long after now a batch that has not reached its mark is read by force.
    pub(super) fn stall_bound(&self) -> Duration {
        (self.took * 2).clamp(STALL_MIN, STALL_MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(b: &mut Batching, lens: &[usize], now: Instant, took: Duration) {
        b.sent(now);
        for &len in lens {
            b.bytes(len);
            b.response();
        }
        b.done(now + took);
    }

    #[test]
    fn the_mark_is_the_outstanding_responses_at_the_shortest_length() {
        let now = Instant::now();
        let mut b = Batching::new();
        assert_eq!(b.low_water_for(16, true), None, "the default until a response is in");
        batch(&mut b, &[150, 160, 150], now, Duration::from_millis(3));
        assert_eq!(b.low_water_for(16, true), Some(2400));
        b.set_low_water(2400);
        assert!(b.holding());
        assert_eq!(b.low_water_for(16, true), None, "set once for batches alike");
        assert_eq!(b.low_water_for(0, true), None, "kept between batches");
        assert_eq!(b.low_water_for(5, true), Some(750), "the rest of a batch read in part");
        // A shorter response lowers it.
        batch(&mut b, &[100], now, Duration::from_millis(3));
        assert_eq!(b.low_water_for(16, true), Some(1600));
        assert_eq!(b.stall_bound(), STALL_MIN);
    }

    #[test]
    fn a_refused_mark_goes_back_to_the_default_and_a_new_connection_learns_again() {
        let now = Instant::now();
        let mut b = Batching::new();
        batch(&mut b, &[150, 150], now, Duration::ZERO);
        b.set_low_water(300);
        b.refused();
        assert_eq!(b.low_water_for(2, true), Some(1));
        b.set_low_water(1);
        assert!(!b.holding());
        assert_eq!(b.low_water_for(2, true), None);
        b.reset();
        assert_eq!(b.low_water_for(2, true), None);
        batch(&mut b, &[150, 150], now, Duration::ZERO);
        assert_eq!(b.low_water_for(2, true), Some(300));
    }

    #[test]
    fn a_slow_batch_waits_longer_before_it_is_read_by_force_up_to_a_bound() {
        let now = Instant::now();
        let mut b = Batching::new();
        batch(&mut b, &[100; 4], now, Duration::from_millis(20));
        assert_eq!(b.stall_bound(), Duration::from_millis(40));
        batch(&mut b, &[100; 4], now, Duration::from_millis(900));
        assert_eq!(b.stall_bound(), STALL_MAX, "a pause of the server does not make the next wait longer");
        // A batch read by force: its time is the wait, not the server's.
        batch(&mut b, &[100; 4], now, Duration::from_millis(3));
        assert_eq!(b.stall_bound(), STALL_MIN);
        b.sent(now);
        b.forced();
        b.done(now + Duration::from_millis(150));
        assert_eq!(b.stall_bound(), STALL_MIN, "a forced batch does not count");
    }

    #[test]
    fn a_response_read_in_part_lowers_the_mark_and_unstamped_reads_are_never_held() {
        let now = Instant::now();
        let mut b = Batching::new();
        batch(&mut b, &[78, 78], now, Duration::ZERO);
        // 65 bytes (a head) of the first of 4 responses read: 13 more complete it, 3 x 78 the others.
        b.bytes(65);
        assert_eq!(b.low_water_for(4, true), Some(3 * 78 + 13));
        // More read of it than the shortest response: one byte more may end it.
        b.bytes(100);
        assert_eq!(b.low_water_for(4, true), Some(3 * 78 + 1));
        b.response();
        b.set_low_water(300);
        assert_eq!(b.low_water_for(4, false), Some(1), "a read without a timestamp is never held back");
    }
}
