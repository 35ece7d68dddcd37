//! Opening a phase's keep-alive connections before it measures.
//!
//! Before a worker takes its start instant it runs its event loop once over a pacer task and one task per slot:
//! each slot asks the pacer for a permit, connects, and keeps the connection for the phase. The phase starts
//! measuring (on every worker at once) when every slot of every worker has tried, so the opening is measured
//! apart from the load, and a burst of connects never overflows the target's accept queue:
//!
//! - `auto` hands out 4 connects per millisecond per worker at first. A connect that takes 8 times the usual
//!   connect time (at least 5 ms) has stalled: its SYN was most likely dropped by a full accept queue, and the
//!   kernel would retry it only after 1 s, then 3 s, then 7 s. The slot abandons it and connects again at once,
//!   and the pacer halves its rate (once per stall window, down to 1 connect per 16 ms); after 256 connects in a
//!   row that did not stall it grows by half again, up to where it started.
//! - A fixed rate hands out the worker's share of it, retrying stalled connects in the same way without slowing.
//! - `unlimited` lets every slot connect at once and wait for the kernel, as wrk does.
//!
//! A slot gives up after a refused connect or once its attempts have taken the phase's timeout; the phase then
//! starts without that connection and the slot keeps trying during the load, as it always does.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::poll_fn;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use loadgate_measure::new_histogram;
use loadgate_plan::ConnectRate;

use crate::control::StopSignal;
use crate::rt::{Rt, Task};
use crate::transport::{self, ConnectError, TcpConn};

/// The pacer's period.
const TICK: Duration = Duration::from_millis(1);
/// The most ticks' worth of permits a late tick hands out at once.
const MAX_BURST: f64 = 4.0;
/// `auto`'s first (and highest) rate, per worker.
const AUTO_START_PER_MS: f64 = 4.0;
/// `auto`'s lowest rate, per worker: one connect per 16 ms.
const AUTO_MIN_PER_MS: f64 = 1.0 / 16.0;
/// Connects in a row without a stall after which `auto` raises its rate by half.
const AUTO_GROW_AFTER: u32 = 256;
/// A connect stalled when it took this many times the usual connect time...
const STALL_FACTOR: f64 = 8.0;
/// ...and at least this long.
const STALL_MIN: Duration = Duration::from_millis(5);
/// Before any connect succeeded (no usual time yet); below the kernel's first SYN retransmit (1 s).
const STALL_FIRST: Duration = Duration::from_millis(250);
/// The longest a connect may take before it counts as stalled: below the kernel's first SYN retransmit.
const STALL_MAX: Duration = Duration::from_millis(900);

/// What one worker's opening did.
#[derive(Debug, Default, Clone)]
pub(crate) struct OpeningCounts {
    /// Slots that tried to open a connection.
    pub slots: u64,
    pub opened: u64,
    pub refused: u64,
    pub timed_out: u64,
    pub address_unavailable: u64,
    pub other: u64,
    /// Connects abandoned as stalled (and tried again).
    pub slow: u64,
    /// Times `auto` halved its rate.
    pub backoffs: u64,
    /// The first failure, in words.
    pub first_error: Option<String>,
}

impl OpeningCounts {
    pub(crate) fn add(&mut self, o: &OpeningCounts) {
        self.slots += o.slots;
        self.opened += o.opened;
        self.refused += o.refused;
        self.timed_out += o.timed_out;
        self.address_unavailable += o.address_unavailable;
        self.other += o.other;
        self.slow += o.slow;
        self.backoffs += o.backoffs;
        if self.first_error.is_none() {
            self.first_error.clone_from(&o.first_error);
        }
    }

    fn failure(&mut self, e: &ConnectError) {
        match e {
            ConnectError::AddressUnavailable => self.address_unavailable += 1,
            ConnectError::TimedOut => self.timed_out += 1,
            ConnectError::Other(io) if io.raw_os_error() == Some(libc::ECONNREFUSED) => self.refused += 1,
            ConnectError::Other(_) | ConnectError::Tls(_) => self.other += 1,
        }
        if self.first_error.is_none() {
            self.first_error = Some(e.to_string());
        }
    }
}

/// The opening so far, over every worker: counters the phase's thread reads about once a second to report
/// progress. Touched once per connect while opening, before the load, never on the hot path.
#[derive(Debug, Default)]
pub(crate) struct LiveOpening {
    opened: AtomicU64,
    failed: AtomicU64,
}

impl LiveOpening {
    /// (opened, failed) so far.
    pub(crate) fn read(&self) -> (u64, u64) {
        (self.opened.load(Ordering::Relaxed), self.failed.load(Ordering::Relaxed))
    }
}

/// The connections a worker opened (per slot; `None` where it could not) and what it took.
pub(crate) struct Opened {
    pub conns: Vec<Option<TcpConn>>,
    pub counts: OpeningCounts,
    pub connect_time: Histogram<u64>,
}

/// Hands out connects: `per_ms` permits a millisecond, in the order slots asked.
#[derive(Debug)]
pub(crate) struct Pacer {
    /// Connects per millisecond now (infinite: unlimited).
    per_ms: f64,
    max_per_ms: f64,
    /// Halve on a stall (`auto`).
    adaptive: bool,
    /// Stalled connects are abandoned and tried again (all but `unlimited`).
    retry_stalls: bool,
    credit: f64,
    /// The usual connect time (an exponential moving average), once a connect succeeded.
    usual: Option<Duration>,
    /// Connects begun before this did not see the current rate: their stalls do not halve it again.
    backed_off_at: Option<Instant>,
    clean_run: u32,
    backoffs: u64,
}

impl Pacer {
    /// The pacer of one worker that carries `share` of the phase's connects.
    pub(crate) fn new(rate: ConnectRate, share: f64) -> Self {
        let (per_ms, adaptive, retry_stalls) = match rate {
            ConnectRate::Auto => (AUTO_START_PER_MS, true, true),
            ConnectRate::Rate(r) => ((r.per_sec() * share / 1000.0).max(1e-6), false, true),
            ConnectRate::Unlimited => (f64::INFINITY, false, false),
        };
        Pacer {
            per_ms,
            max_per_ms: per_ms,
            adaptive,
            retry_stalls,
            credit: 0.0,
            usual: None,
            backed_off_at: None,
            clean_run: 0,
            backoffs: 0,
        }
    }

    /// A tick, `elapsed` after the one before: how many of `waiting` slots may connect now. The permits follow
    /// the time that passed, so a tick that comes late (a loaded machine) does not slow the pace.
    pub(crate) fn grants(&mut self, waiting: usize, elapsed: Duration) -> usize {
        if self.per_ms.is_infinite() {
            return waiting;
        }
        // Unused permits do not pile up beyond MAX_BURST ticks' worth (at least one connect).
        let ms = elapsed.as_secs_f64() * 1000.0;
        self.credit = (self.credit + self.per_ms * ms).min((self.per_ms * MAX_BURST).max(1.0));
        let n = (self.credit.floor() as usize).min(waiting);
        self.credit -= n as f64;
        n
    }

    /// How long a connect may take before it counts as stalled (`None`: never, it waits for the kernel).
    pub(crate) fn stall_after(&self) -> Option<Duration> {
        if !self.retry_stalls {
            return None;
        }
        Some(match self.usual {
            None => STALL_FIRST,
            Some(u) => u.mul_f64(STALL_FACTOR).clamp(STALL_MIN, STALL_MAX),
        })
    }

    /// A connect begun at `began` succeeded after `took`.
    pub(crate) fn connected(&mut self, took: Duration) {
        self.usual = Some(match self.usual {
            None => took,
            Some(u) => u.mul_f64(0.875) + took.mul_f64(0.125),
        });
        if self.adaptive {
            self.clean_run += 1;
            if self.clean_run >= AUTO_GROW_AFTER {
                self.clean_run = 0;
                self.per_ms = (self.per_ms * 1.5).min(self.max_per_ms);
            }
        }
    }

    /// A connect begun at `began` stalled at `now`. Returns whether the rate was halved.
    pub(crate) fn stalled(&mut self, began: Instant, now: Instant) -> bool {
        self.clean_run = 0;
        if !self.adaptive || self.backed_off_at.is_some_and(|at| began < at) {
            return false;
        }
        self.per_ms = (self.per_ms / 2.0).max(AUTO_MIN_PER_MS);
        self.credit = self.credit.min(0.0);
        self.backed_off_at = Some(now);
        self.backoffs += 1;
        true
    }

    #[cfg(test)]
    fn per_ms(&self) -> f64 {
        self.per_ms
    }
}

/// What one worker's opening needs of its configuration: where to connect, how many slots, how long a slot
/// may try, when to stop, and the counters the phase's thread reads.
pub(crate) struct Plan<'a> {
    pub addr: SocketAddr,
    pub slots: usize,
    /// The phase's request timeout: how long a slot's attempts may take in all.
    pub timeout: Duration,
    pub stop: &'a StopSignal,
    pub live: &'a LiveOpening,
    /// How fast connections open, and this worker's share of that rate.
    pub rate: ConnectRate,
    pub share: f64,
}

struct State<'a> {
    rt: &'a Rt,
    cfg: Plan<'a>,
    pacer: RefCell<Pacer>,
    /// Slots waiting for a permit, in the order they asked.
    waiting: RefCell<VecDeque<(usize, Waker)>>,
    granted: RefCell<Vec<bool>>,
    conns: RefCell<Vec<Option<TcpConn>>>,
    counts: RefCell<OpeningCounts>,
    connect_time: RefCell<Histogram<u64>>,
    tried: Cell<usize>,
}

/// Opens the worker's `cfg.slots` connections on `rt`, paced by `cfg.rate` (this worker carries `cfg.share` of
/// it). Slot `i` runs as task `first + i`, as in the phase, so its connection is registered under its own task
/// (the tasks before `first` but the pacer, task 0, are another lane's: they end at once here).
pub(crate) fn open_all(rt: &Rt, cfg: Plan<'_>, first: crate::rt::TaskId) -> Opened {
    let slots = cfg.slots;
    let state = Rc::new(State {
        rt,
        pacer: RefCell::new(Pacer::new(cfg.rate, cfg.share)),
        cfg,
        waiting: RefCell::new(VecDeque::with_capacity(slots)),
        granted: RefCell::new(vec![false; slots]),
        conns: RefCell::new((0..slots).map(|_| None).collect()),
        counts: RefCell::new(OpeningCounts { slots: slots as u64, ..OpeningCounts::default() }),
        connect_time: RefCell::new(new_histogram()),
        tried: Cell::new(0),
    });
    let first = usize::try_from(first).unwrap_or(1).max(1);
    let mut tasks: Vec<Task<'_>> = Vec::with_capacity(slots + first);
    tasks.push(Box::pin(pace(state.clone())));
    for _ in 1..first {
        tasks.push(Box::pin(std::future::ready(())));
    }
    for slot in 0..slots {
        tasks.push(Box::pin(open_slot(state.clone(), slot)));
    }
    rt.run(tasks);
    rt.clear_timers();
    let mut counts = state.counts.take();
    counts.backoffs = state.pacer.borrow().backoffs;
    Opened { conns: state.conns.take(), counts, connect_time: state.connect_time.replace(new_histogram()) }
}

impl State<'_> {
    /// A tick: lets the next slots in line connect.
    fn grant(&self, elapsed: Duration) {
        let mut waiting = self.waiting.borrow_mut();
        let n = self.pacer.borrow_mut().grants(waiting.len(), elapsed);
        let mut granted = self.granted.borrow_mut();
        for (slot, waker) in waiting.drain(..n) {
            if let Some(g) = granted.get_mut(slot) {
                *g = true;
            }
            waker.wake();
        }
    }
}

/// The pacer task: every millisecond, lets the next slots in line connect; ends when every slot has tried (or
/// the phase is stopped).
async fn pace(s: Rc<State<'_>>) {
    let mut next = Instant::now();
    let mut last = next;
    loop {
        if s.tried.get() >= s.cfg.slots || s.cfg.stop.is_stopped() {
            return;
        }
        let now = Instant::now();
        s.grant(now.saturating_duration_since(last));
        last = now;
        next += TICK;
        let now = Instant::now();
        if next <= now {
            next = now + TICK;
        }
        s.rt.sleep_until(next).await;
    }
}

/// Waits for the pacer's permit.
async fn permit(s: &State<'_>, slot: usize) {
    let mut queued = false;
    poll_fn(|cx| {
        let mut granted = s.granted.borrow_mut();
        if granted.get(slot).copied().unwrap_or(true) {
            if let Some(g) = granted.get_mut(slot) {
                *g = false;
            }
            return Poll::Ready(());
        }
        if !queued {
            queued = true;
            s.waiting.borrow_mut().push_back((slot, cx.waker().clone()));
        }
        Poll::Pending
    })
    .await;
}

/// One slot: connect when the pacer lets it, retrying a stalled connect, until it has a connection or gives up.
async fn open_slot(s: Rc<State<'_>>, slot: usize) {
    let timeout = s.cfg.timeout;
    let mut first: Option<Instant> = None;
    loop {
        permit(&s, slot).await;
        if s.cfg.stop.is_stopped() {
            break;
        }
        let began = Instant::now();
        let first = *first.get_or_insert(began);
        let left = timeout.saturating_sub(began.saturating_duration_since(first));
        let stall = s.pacer.borrow().stall_after().filter(|&d| d < left);
        match transport::connect(s.rt, s.cfg.addr, stall.unwrap_or(left)).await {
            Ok(conn) => {
                let took = began.elapsed();
                s.pacer.borrow_mut().connected(took);
                s.connect_time.borrow_mut().saturating_record(u64::try_from(took.as_micros()).unwrap_or(u64::MAX));
                s.counts.borrow_mut().opened += 1;
                s.cfg.live.opened.fetch_add(1, Ordering::Relaxed);
                if let Some(c) = s.conns.borrow_mut().get_mut(slot) {
                    *c = Some(conn);
                }
                break;
            }
            Err(ConnectError::TimedOut) if stall.is_some() => {
                s.counts.borrow_mut().slow += 1;
                s.pacer.borrow_mut().stalled(began, Instant::now());
            }
            Err(e) => {
                s.counts.borrow_mut().failure(&e);
                s.cfg.live.failed.fetch_add(1, Ordering::Relaxed);
                break;
            }
        }
    }
    s.tried.set(s.tried.get() + 1);
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadgate_model::units::Rate;

    #[test]
    fn auto_hands_out_four_connects_a_millisecond() {
        let ms = Duration::from_millis(1);
        let mut p = Pacer::new(ConnectRate::Auto, 1.0);
        assert_eq!(p.grants(100, ms), 4);
        assert_eq!(p.grants(100, ms), 4);
        // A tick 3 ms late hands out what the 3 ms were worth...
        assert_eq!(p.grants(100, 3 * ms), 12);
        // ...but never more than four ticks' worth: unused permits do not pile up.
        assert_eq!(p.grants(1, 10 * ms), 1);
        assert_eq!(p.grants(100, 10 * ms), 16);
    }

    #[test]
    fn a_fixed_rate_is_shared_between_workers() {
        // 1,000/s over two workers: one connect every 2 ms each.
        let mut p = Pacer::new(ConnectRate::Rate(Rate::from_per_sec(1000)), 0.5);
        let granted: usize = (0..10).map(|_| p.grants(100, Duration::from_millis(1))).sum();
        assert_eq!(granted, 5);
        // Stalls are retried, never slowed.
        let now = Instant::now();
        assert!(!p.stalled(now, now));
        assert_eq!(p.stall_after(), Some(STALL_FIRST));
    }

    #[test]
    fn unlimited_lets_everyone_connect_and_waits_for_the_kernel() {
        let mut p = Pacer::new(ConnectRate::Unlimited, 1.0);
        assert_eq!(p.grants(16_384, Duration::ZERO), 16_384);
        assert_eq!(p.stall_after(), None);
    }

    #[test]
    fn auto_halves_once_per_stall_window_and_grows_back() {
        let mut p = Pacer::new(ConnectRate::Auto, 1.0);
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_millis(10);
        assert!(p.stalled(t0, t1));
        assert_eq!(p.per_ms(), 2.0);
        // A connect begun before the halving stalls too: it did not see the new rate.
        assert!(!p.stalled(t0 + Duration::from_millis(1), t1 + Duration::from_millis(1)));
        assert_eq!(p.per_ms(), 2.0);
        // One begun after it halves again.
        assert!(p.stalled(t1 + Duration::from_millis(2), t1 + Duration::from_millis(20)));
        assert_eq!(p.per_ms(), 1.0);
        // Never below one connect per 16 ms.
        for i in 0..20 {
            let t = t1 + Duration::from_millis(100 * (i + 1));
            p.stalled(t, t + Duration::from_millis(50));
        }
        assert_eq!(p.per_ms(), AUTO_MIN_PER_MS);
        // 256 clean connects grow it by half.
        for _ in 0..AUTO_GROW_AFTER {
            p.connected(Duration::from_micros(50));
        }
        assert_eq!(p.per_ms(), AUTO_MIN_PER_MS * 1.5);
    }

    #[test]
    fn a_stall_is_eight_times_the_usual_connect_within_bounds() {
        let mut p = Pacer::new(ConnectRate::Auto, 1.0);
        assert_eq!(p.stall_after(), Some(STALL_FIRST));
        p.connected(Duration::from_micros(100));
        assert_eq!(p.stall_after(), Some(STALL_MIN));
        let mut p = Pacer::new(ConnectRate::Auto, 1.0);
        p.connected(Duration::from_millis(20));
        assert_eq!(p.stall_after(), Some(Duration::from_millis(160)));
        let mut p = Pacer::new(ConnectRate::Auto, 1.0);
        p.connected(Duration::from_millis(500));
        assert_eq!(p.stall_after(), Some(STALL_MAX));
    }
}
